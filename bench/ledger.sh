#!/usr/bin/env bash
# Measures the ledger's readers on a large ledger: svc ledger (CSV, streamed)
# over a month and over a year, and the admin dashboard over a month, on a
# SQLite store of ROWS settled payments spread over a year (svcbench
# ledger-gen), with their wall time and peak resident memory. With
# BASELINE=<git revision>, svc built from it is measured in the same run on
# the same file.
#
#   ROWS=10000000 BASELINE=9dd39e5 bench/ledger.sh
#
# The file of 10 million rows takes ~6 GiB in the temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-10000000}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/svc" ./cmd/svc
go build -o "$work/svcbench" ./cmd/svcbench
db="$work/ledger.db"
"$work/svcbench" ledger-gen --db "$db" --rows "$ROWS" --days 365 --end 2026-11-01
ls -l "$db" | awk '{printf "database: %.0f MiB\n", $5/1048576}'

bins=(svc)
if [ -n "${BASELINE:-}" ]; then
  git worktree add -q --detach "$work/base" "$BASELINE"
  (cd "$work/base" && go build -o "$work/svc-base" ./cmd/svc)
  git worktree remove --force "$work/base"
  bins+=(svc-base)
fi

measure() { # name, command...: wall seconds and peak RSS
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { echo "$name: failed: $(tail -3 "$work/err")"; return; }
  read -r secs kb <"$work/t"
  printf '%-34s %8.2f s %8.0f MiB\n' "$name" "$secs" "$((kb / 1024))"
}

for b in "${bins[@]}"; do
  measure "$b ledger, 30 days (csv)" "$work/$b" ledger --db "$db" --from 2026-10-02 --to 2026-11-01
  # A baseline that loads the period whole needs ~1.5 KB a row: the year
  # only with BASELINE_YEAR=1.
  if [ "$b" = svc ] || [ -n "${BASELINE_YEAR:-}" ]; then
    measure "$b ledger, 365 days (csv)" "$work/$b" ledger --db "$db" --from 2025-11-01 --to 2026-11-01
  fi
done

# The dashboard over a month, through the admin listener of svc serve.
for b in "${bins[@]}"; do
  "$work/$b" serve --addr 127.0.0.1:0 --admin-addr 127.0.0.1:0 --db "$db" --log-level warn >"$work/serve.log" 2>&1 &
  pid=$!
  admin=""
  for _ in $(seq 100); do
    admin=$(grep -oE 'admin: +http://127.0.0.1:[0-9]+' "$work/serve.log" | grep -oE 'http://.*' | head -1 || true)
    [ -n "$admin" ] && break
    sleep 0.1
  done
  t=$(curl -s -o /dev/null -w '%{time_total}' "$admin/?from=2026-10-02&to=2026-11-01")
  rss=$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$pid/status")
  printf '%-34s %8.2f s %8s MiB (server peak)\n' "$b dashboard, 30 days" "$t" "$rss"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
