#!/usr/bin/env bash
# The floods of large bodies and batches on the free routes, each against a
# fresh svc serve (dev mode, its defaults): for each, svc's peak resident
# memory and the /livez latency meanwhile (svcbench flood --addrs: every
# client connects from its own loopback address, Linux only).
#   mcp-batch  6 clients, a batch of 14,000 tools/call (1.8 MB)   POST /mcp
#   route      192 clients, 2 MiB bodies                          POST /api/route
#   mcp        192 clients, 2 MiB tools/call                      POST /mcp
#   a2a        192 clients, 1 MiB message/send                    POST /a2a
# BASELINE=<git revision> measures that revision the same way first.
# Env: DUR (10), CLIENTS (192).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-10}
CLIENTS=${CLIENTS:-192}
TMP=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
go build -o "$TMP/svc" ./cmd/svc
go build -o "$TMP/svcbench" ./cmd/svcbench
if [ -n "${BASELINE:-}" ]; then
  git worktree add --detach "$TMP/baseline" "$BASELINE" >/dev/null 2>&1
  (cd "$TMP/baseline" && go build -o "$TMP/svc-base" ./cmd/svc)
  git worktree remove --force "$TMP/baseline"
fi
measure() { # name binary kind clients size
  local name=$1 bin=$2 kind=$3 clients=$4 size=$5
  mkdir -p "$TMP/run-$name-$kind"
  "$bin" serve --addr 127.0.0.1:0 --db "$TMP/run-$name-$kind/svc.db" --log-level warn 2>"$TMP/run-$name-$kind/err" &
  pid=$!
  local url=
  for _ in $(seq 1 100); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$TMP/run-$name-$kind/err" 2>/dev/null | head -1 | sed 's/listening on //') && [ -n "$url" ] && break
    sleep 0.1
  done
  printf '%s ' "$name"
  "$TMP/svcbench" flood --url "$url" --pid "$pid" --kind "$kind" --clients "$clients" --size "$size" \
    --duration "${DUR}s" --addrs --probe /livez --probe-every 50ms
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
run() { # name binary
  measure "$1" "$2" mcp-batch 6 0
  measure "$1" "$2" route "$CLIENTS" $((2 << 20))
  measure "$1" "$2" mcp "$CLIENTS" $((2 << 20))
  measure "$1" "$2" a2a "$CLIENTS" $((1 << 20))
}
if [ -n "${BASELINE:-}" ]; then run baseline "$TMP/svc-base"; fi
run svc "$TMP/svc"
