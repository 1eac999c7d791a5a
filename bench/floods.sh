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
# PIN=1 runs svc on CPU 0 and the load generator on CPU 1 (taskset), and
# probes /livez also from a process of its own (curl, every 40 ms): the
# generator's in-process probe waits behind the generator's own saturated
# core, so on a two-core machine it measures the generator, not svc.
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
  local srvcpu="" gencpu=""
  if [ -n "${PIN:-}" ]; then srvcpu="taskset -c 0"; gencpu="taskset -c 1"; fi
  $srvcpu "$bin" serve --addr 127.0.0.1:0 --db "$TMP/run-$name-$kind/svc.db" --log-level warn 2>"$TMP/run-$name-$kind/err" &
  pid=$!
  local url=
  for _ in $(seq 1 100); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$TMP/run-$name-$kind/err" 2>/dev/null | head -1 | sed 's/listening on //') && [ -n "$url" ] && break
    sleep 0.1
  done
  printf '%s ' "$name"
  $gencpu "$TMP/svcbench" flood --url "$url" --pid "$pid" --kind "$kind" --clients "$clients" --size "$size" \
    --duration "${DUR}s" --addrs --probe /livez --probe-every 50ms &
  local gen=$!
  if [ -n "${PIN:-}" ]; then
    sleep 1
    local probes="$TMP/run-$name-$kind/probe"
    : >"$probes"
    while kill -0 "$gen" 2>/dev/null; do
      curl -s -o /dev/null -m 5 -w '%{time_total}\n' "$url/livez" >>"$probes" || true
      sleep 0.04
    done
    sort -n "$probes" | awk -v kind="$kind" '{a[NR]=$1} END {if (NR) printf "%s: separate /livez probe n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms\n", kind, NR, a[int(NR*0.5)+1]*1000, a[int(NR*0.99)+1]*1000, a[NR]*1000}'
  fi
  wait "$gen"
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
