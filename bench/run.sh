#!/usr/bin/env bash
# Reproduces the reference-server figures of BENCHMARKS.md.
#
# Loads, from a second process on loopback, in the same run:
#   bare   a bare net/http handler (cmd/svcbench bare: reads the body,
#          answers a fixed small JSON), sent the same POST as the 402 runs;
#          measured once with GET / too                                  POST /
#   free   svc's free route                                              GET /health
#   402    svc answering a valid unpaid call with 402                    POST /api/risk-levels
#   same   the bytes of that 402 (header and body) replayed by a plain
#          net/http handler with no processing (cmd/svcbench replay,
#          header set field by field): what an answer of that size costs
#          through net/http                                              POST /
#   paid   svc paid calls, local verification (dev mode), every payment
#          step journaled (SQLite)                                       POST /api/risk-levels + PAYMENT-SIGNATURE
#   paid-base  the same paid calls against svc built from BASELINE (a git
#          revision, e.g. BASELINE=origin/main~1), measured in the same run,
#          alternating with paid, when BASELINE is set
#   paid-nojournal  the same paid calls against a measurement-only build of
#          HEAD whose engine keeps its journal in memory (nothing durable),
#          alternating with paid, when NOJOURNAL=1: the ceiling of any
#          durable journal
# bare and 402 are measured ROUNDS times, alternating, and the best run of
# each is compared (robust to other load on the machine).
#
# The load generator is wrk when installed (Debian: apt-get install wrk),
# else cmd/svcbench's Go load generator (LOADER=go forces it). Paid calls
# use payments signed before the clock starts (svcbench sign), one per
# request.
#
# svc runs in dev mode (local facilitator, SQLite store, simulated terminal),
# with access logs off (--log-level warn; LOGLEVEL=info measures the default,
# one buffered access-log line per request, written to a pipe) and the free-route rate limit
# raised out of the way (--rate 1e9: the limiter still runs on every free
# request).
#
# The official @x402/express middleware (bench/express: versions pinned in
# its package.json and package-lock.json, installed with npm ci into the
# git-ignored bench/express/node_modules) answers 402s on the same route
# (bench/express/express-402.mjs; its facilitator is `svcbench facilitator`)
# and is measured in every round too, when node and npm are installed.
# EXPRESS=0 leaves it out.
#
# Bounded in time: (4*ROUNDS + 3) * DUR plus the build and the signing,
# about 3 minutes with the defaults (ROUNDS * DUR less without express).
# Env: DUR (10, seconds), CONC (16), ROUNDS (3), LOADER (wrk|go), EXPRESS (1|0),
# LOGLEVEL (warn|info), BASELINE (a git revision to compare the paid row with),
# NOJOURNAL (1: add the paid-nojournal row), PAYMENTS (payments signed per paid
# run, 15000 per second of DUR; a run that uses them up is reported as 0).
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-10}
CONC=${CONC:-16}
ROUNDS=${ROUNDS:-3}
LOADER=${LOADER:-}
LOGLEVEL=${LOGLEVEL:-warn}
PAYMENTS=${PAYMENTS:-$((DUR * 15000))}
if [ -z "$LOADER" ]; then
  if command -v wrk >/dev/null; then LOADER=wrk; else LOADER=go; fi
fi
TMP=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

echo "== build" >&2
go build -o "$TMP/svc" ./cmd/svc
go build -o "$TMP/svcbench" ./cmd/svcbench
if [ -n "${BASELINE:-}" ]; then
  git worktree add --detach "$TMP/baseline" "$BASELINE" >/dev/null 2>&1
  (cd "$TMP/baseline" && go build -o "$TMP/svc-base" ./cmd/svc)
  git worktree remove --force "$TMP/baseline"
fi
if [ -n "${NOJOURNAL:-}" ]; then
  # A measurement-only build of HEAD whose payment engine keeps its journal
  # in memory (nothing durable): the ceiling a journal that cost nothing
  # would reach. Never shipped.
  git worktree add --detach "$TMP/nojournal" HEAD >/dev/null 2>&1
  (cd "$TMP/nojournal" &&
    sed -i 's|Journal: *st,|Journal: engine.NewMemoryJournal(),|' cmd/svc/serve.go &&
    grep -q 'Journal: engine.NewMemoryJournal()' cmd/svc/serve.go &&
    go build -o "$TMP/svc-nojournal" ./cmd/svc)
  git worktree remove --force "$TMP/nojournal"
fi

wait_url() { # file → URL printed as "listening on http://..."
  for _ in $(seq 1 300); do
    if grep -qo 'listening on http://[0-9.:]*' "$1" 2>/dev/null; then
      grep -o 'listening on http://[0-9.:]*' "$1" | head -1 | sed 's/listening on //'
      return 0
    fi
    sleep 0.1
  done
  echo "server did not start: $(cat "$1")" >&2
  return 1
}

timeout 900 "$TMP/svcbench" bare >"$TMP/bare.out" 2>&1 &
pids+=($!)
# svc's log goes to a pipe (as under a process supervisor); its first 64 KiB
# (the banner) are kept.
# The unpaid-request limit of the paid routes is off (--unpaid-rate -1): the
# load comes from one address.
(cd "$TMP" && exec timeout 900 ./svc serve --addr 127.0.0.1:0 --db "$TMP/svc.db" --log-level "$LOGLEVEL" --rate 1e9 --burst 1000000000 --unpaid-rate -1) \
  2> >(stdbuf -o0 head -c 65536 >"$TMP/svc.err"; cat >/dev/null) &
pids+=($!)
NOJ_SVC=
if [ -n "${NOJOURNAL:-}" ]; then
  mkdir -p "$TMP/noj"
  (cd "$TMP/noj" && exec timeout 900 "$TMP/svc-nojournal" serve --addr 127.0.0.1:0 --db "$TMP/noj/svc.db" --log-level "$LOGLEVEL" --rate 1e9 --burst 1000000000 --unpaid-rate -1) \
    2> >(stdbuf -o0 head -c 65536 >"$TMP/noj.err"; cat >/dev/null) &
  pids+=($!)
  NOJ_SVC=$(wait_url "$TMP/noj.err")
fi
BASE_SVC=
if [ -n "${BASELINE:-}" ]; then
  mkdir -p "$TMP/base"
  (cd "$TMP/base" && exec timeout 900 "$TMP/svc-base" serve --addr 127.0.0.1:0 --db "$TMP/base/svc.db" --log-level "$LOGLEVEL" --rate 1e9 --burst 1000000000) \
    2> >(stdbuf -o0 head -c 65536 >"$TMP/base.err"; cat >/dev/null) &
  pids+=($!)
  BASE_SVC=$(wait_url "$TMP/base.err")
fi
BARE=$(wait_url "$TMP/bare.out")
SVC=$(wait_url "$TMP/svc.err")
EXPRESS_ON=${EXPRESS:-}
if [ -z "$EXPRESS_ON" ]; then
  if command -v node >/dev/null && command -v npm >/dev/null; then EXPRESS_ON=1; else EXPRESS_ON=0; fi
fi
EXPRESS=
if [ "$EXPRESS_ON" = 1 ]; then
  echo "== npm ci (bench/express)" >&2
  (cd bench/express && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
  timeout 900 "$TMP/svcbench" facilitator >"$TMP/fac.out" 2>&1 &
  pids+=($!)
  FAC=$(wait_url "$TMP/fac.out")
  (cd bench/express && FACILITATOR_URL=$FAC exec timeout 900 node express-402.mjs 0) >"$TMP/express.out" 2>&1 &
  pids+=($!)
  EXPRESS=$(wait_url "$TMP/express.out")
fi
BODY='{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}'
timeout 900 "$TMP/svcbench" replay --url "$SVC/api/risk-levels" --method POST --body "$BODY" >"$TMP/replay.out" 2>&1 &
pids+=($!)
SAME=$(wait_url "$TMP/replay.out")
PAYER_KEY=0x$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export PAYER_KEY

# run NAME URL [paid|post] → one line "NAME rps=… p99=…ms statuses"
run() {
  local name=$1 url=$2 kind=${3:-}
  if [ "$LOADER" = wrk ]; then
    local script=()
    case $kind in
      post) script=(-s bench/post.lua) ;;
      paid) script=(-s bench/paid.lua) ;;
    esac
    local threads=2
    [ "$kind" = paid ] && threads=1
    local out
    out=$(wrk -t"$threads" -c"$CONC" -d"${DUR}s" --latency "${script[@]}" "$url")
    local rps p99 non2xx
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    if [ "$kind" = paid ] && [ "${non2xx:-0}" != 0 ]; then
      echo "$name: the $PAYMENTS payments ran out (${non2xx} unpaid answers); raise PAYMENTS" >&2
      rps=0
    fi
    echo "$name rps=$rps p99=$p99 non2xx=${non2xx:-0}"
  else
    local args=(--name "$name" --url "$url" --duration "${DUR}s" --concurrency "$CONC")
    case $kind in
      post) args+=(--method POST --body "$BODY") ;;
      paid) args+=(--method POST --body "$BODY" --pay-key-env PAYER_KEY --prepay "$PAYMENTS") ;;
    esac
    "$TMP/svcbench" load "${args[@]}" |
      sed -E 's/.*"rps":([0-9.]+).*"p99Ms":([0-9.]+).*"statuses":(\{[^}]*\}).*/'"$name"' rps=\1 p99=\2ms statuses=\3/'
  fi
}

echo "== $(nproc) cores, $(go version | cut -d' ' -f3-4), loader $LOADER, $CONC connections, ${DUR}s per run, svc log level $LOGLEVEL, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  run "bare#$r" "$BARE/" post
  run "402#$r" "$SVC/api/risk-levels" post
  run "same#$r" "$SAME/" post
  if [ -n "$EXPRESS" ]; then run "express402#$r" "$EXPRESS/api/risk-levels" post; fi
done | tee "$TMP/rounds.txt"
run bare-get "$BARE/"
run free "$SVC/health"
# paidrun NAME URL: one paid row with fresh payments for that server.
paidrun() {
  if [ "$LOADER" = wrk ]; then
    "$TMP/svcbench" sign --url "$2/api/risk-levels" --body "$BODY" --pay-key-env PAYER_KEY --n "$PAYMENTS" --out "$TMP/payments.txt"
    PAYMENTS_FILE="$TMP/payments.txt" run "$1" "$2/api/risk-levels" paid
  else
    run "$1" "$2/api/risk-levels" paid
  fi
}
if [ -n "$BASE_SVC" ] || [ -n "$NOJ_SVC" ]; then
  for r in $(seq 1 "$ROUNDS"); do
    if [ -n "$BASE_SVC" ]; then paidrun "paid-base#$r" "$BASE_SVC"; fi
    paidrun "paid#$r" "$SVC"
    if [ -n "$NOJ_SVC" ]; then paidrun "paid-nojournal#$r" "$NOJ_SVC"; fi
  done | tee -a "$TMP/rounds.txt"
else
  paidrun paid "$SVC"
fi

best() { grep "^$1#" "$TMP/rounds.txt" | sed -E 's/.*rps=([0-9.]+).*/\1/' | sort -g | tail -1; }
rps() { grep "^$1 " "$TMP/rounds.txt" | sed -E 's/.*rps=([0-9.]+).*/\1/'; }
paired=""
for r in $(seq 1 "$ROUNDS"); do
  paired="$paired $(awk -v p="$(rps "402#$r")" -v b="$(rps "bare#$r")" 'BEGIN { printf "%.2f", p / b }')"
done
echo "402 / bare handler, round by round:$paired"
awk -v b="$(best bare)" -v p="$(best 402)" -v s="$(best same)" \
  'BEGIN { printf "402 answers / bare handler (best of rounds): %.0f / %.0f req/s = %.2fx (target >= 0.6x)\n", p, b, p / b
           printf "the same 402 bytes from a plain net/http handler / bare handler: %.0f / %.0f req/s = %.2fx\n", s, b, s / b }'
if [ -n "$EXPRESS" ]; then
  awk -v e="$(best express402)" -v p="$(best 402)" \
    'BEGIN { printf "svc 402 answers / @x402/express 402 answers (best of rounds): %.0f / %.0f req/s = %.2fx (target >= 6x)\n", p, e, p / e }'
fi
if [ -n "$BASE_SVC" ]; then
  awk -v n="$(best paid)" -v o="$(best paid-base)" \
    'BEGIN { printf "paid calls / paid calls of %s (best of rounds): %.0f / %.0f req/s = %.2fx (target >= 3x)\n", "'"$BASELINE"'", n, o, n / o }'
  if [ -n "$NOJ_SVC" ]; then
    awk -v n="$(best paid-nojournal)" -v o="$(best paid-base)" \
      'BEGIN { printf "paid calls with no durable journal / paid calls of %s (best of rounds): %.0f / %.0f req/s = %.2fx (the ceiling of the 3x target)\n", "'"$BASELINE"'", n, o, n / o }'
  fi
fi
