#!/usr/bin/env bash
# Unpaid flood: 64 clients post valid 2 MiB ohlcv-state inputs (each one is
# validated before its 402) to svc in dev mode for DUR seconds; prints svc's
# peak resident memory and /health latency meanwhile (svcbench flood).
# The unpaid-request rate limit is off (--unpaid-rate -1): the clients share
# one address, and what is measured is the global bound on the bodies held.
# BASELINE=<git revision> measures that revision the same way first.
# Env: DUR (20), CLIENTS (64).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-20}
CLIENTS=${CLIENTS:-64}
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
measure() { # name binary extra-flags...
  local name=$1 bin=$2; shift 2
  mkdir -p "$TMP/run-$name"
  "$bin" serve --addr 127.0.0.1:0 --db "$TMP/run-$name/svc.db" --log-level warn "$@" 2>"$TMP/run-$name/err" &
  pid=$!
  local url=
  for _ in $(seq 1 100); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$TMP/run-$name/err" 2>/dev/null | head -1 | sed 's/listening on //') && [ -n "$url" ] && break
    sleep 0.1
  done
  printf '%s ' "$name"
  "$TMP/svcbench" flood --url "$url" --pid "$pid" --clients "$CLIENTS" --duration "${DUR}s"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
if [ -n "${BASELINE:-}" ]; then measure baseline "$TMP/svc-base"; fi
measure svc "$TMP/svc" --unpaid-rate -1
