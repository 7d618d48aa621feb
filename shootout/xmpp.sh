#!/usr/bin/env bash
# The shootout's XMPP part (issue 12): Switchboard beside ejabberd and Prosody.
#
# For each server in turn, started fresh and pinned to the CPUs shootout/run.sh
# chose for servers, with the bench on its own (core 0 and core 1 run alone):
# - the SockJS-versus-BOSH study: log in, then 100 sequential XEP-0199 pings,
#   total time, over every XMPP transport the server has, on localhost and again
#   through an emulated link of 81 ms each way (`--link delay=81ms`, the study's
#   remote server's 162 ms round trip; 25 pings in the quick profile, scaled to
#   100 in the summary and the report; XMPP over TCP has no link, so it is
#   measured on localhost only);
# - the MUC broadcast sweep (`bench muc` over XMPP TCP): the ramp shootout/run.sh
#   uses for broadcast, through one room;
# - RSS per idle authenticated XMPP session (`bench idle` over XMPP TCP).
# Every client logs in with SASL PLAIN as bench<i> / bench, the accounts each
# peer's install.sh makes; Switchboard gets the same accounts from a generated
# configuration file. Result files go to OUT/bench/<server>-xmpp-*.json.
#
# Usage: shootout/xmpp.sh OUT   (shootout/run.sh calls it; QUICK=1 for the
#        quick profile; XMPP_SERVERS="switchboard ejabberd prosody" to choose)
# Needs target/release/switchboard and the peers installed (run.sh installs them).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
. "$ROOT/shootout/lib.sh"
OUT="${1:?usage: shootout/xmpp.sh OUT}"
case "${QUICK:-0}" in ""|0|no|false) QUICK=0 ;; *) QUICK=1 ;; esac
BIN="$ROOT/target/release/switchboard"
SERVERS="${XMPP_SERVERS:-switchboard ejabberd prosody}"
START_S=60   # ejabberd needs a few seconds
STOP_S=5
IDLE_SESSIONS=10000
PINGS=100    # the study's count
LINK="delay=81ms"
if [ "$QUICK" = 1 ]; then
  # Through the link a ping takes a round trip of 162 ms: 25 of them per
  # transport (the report scales the total to 100, marked †) keep the quick
  # profile short; the full profile makes the study's 100.
  REMOTE_PINGS=25
  MUC=(--levels 200 --start-rate 20 --step 25% --step-seconds 1 --max-rate 100000 --loss-timeout 2s --max-mean 250ms)
  BENCH_TIMEOUT=300
else
  REMOTE_PINGS=$PINGS
  MUC=(--levels 50,200,500 --start-rate 10 --step 25% --step-seconds 2 --max-rate 100000 --loss-timeout 3s --max-mean 250ms)
  BENCH_TIMEOUT=1800
fi
LOGIN=(--xmpp-user 'bench{i}' --xmpp-password bench)

mkdir -p "$OUT/bench" "$OUT/logs"
T0=$(date +%s)
say() { printf '[xmpp %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*" | tee -a "$OUT/shootout.log" >&2; }

pin_cpus
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Switchboard's accounts: the same bench<i> / bench as the peers', one
# [[xmpp_account]] entry each (the salted hashes of one, reused: every account
# has the same password).
CONFIG="$OUT/logs/switchboard-xmpp.toml"
make_config() {
  echo bench | "$BIN" xmpp-account bench0 >"$CONFIG.one" || return 1
  python3 - "$CONFIG.one" "$CONFIG" "$IDLE_SESSIONS" <<'EOF'
import sys
one, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
entry = open(one).read().strip()
with open(path, "w") as f:
    for i in range(n):
        f.write(entry.replace('name = "bench0"', f'name = "bench{i}"') + "\n\n")
EOF
}

PID=""; BASE=""; XMPP_PORT=""
cleanup() { [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; }
trap cleanup EXIT

# start NAME: a fresh server, pinned; sets PID, BASE and XMPP_PORT, or returns 1
# with the reason in START_ERROR.
start() {
  local name="$1" log="$OUT/logs/$1-xmpp.out" err="$OUT/logs/$1-xmpp.err"
  : >"$log"
  if [ "$name" = switchboard ]; then
    # Every client comes from 127.0.0.1, and the sweep's clients all join one
    # room at once: the per-address limits on new BOSH and SockJS sessions and
    # on BOSH sessions held, and the per-room join rate, would refuse them;
    # the peers have no such limits.
    "${SERVER_PIN[@]}" "$BIN" serve --config "$CONFIG" --listen 127.0.0.1:0 --xmpp-listen 127.0.0.1:0 --irc-listen off \
      --xmpp-plain-unencrypted true --session-rate 1000000 --join-rate 1000000 \
      --bosh-max-sessions-per-address 10000 >>"$log" 2>"$err" &
  else
    "${SERVER_PIN[@]}" "peers/$name/start.sh" 0 >>"$log" 2>"$err" &
  fi
  PID=$!
  local port="" xmpp=""
  for _ in $(seq $((START_S * 10))); do
    port="$(sed -n 's#^.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/.*$#\1#p' "$log" "$err" | head -n1)"
    xmpp="$(sed -n -e 's#^xmpp on 127\.0\.0\.1:\([0-9][0-9]*\)$#\1#p' -e 's#^.*serves XMPP for [^ ]* on 127\.0\.0\.1:\([0-9][0-9]*\).*$#\1#p' "$log" "$err" | head -n1)"
    [ -n "$port" ] && [ -n "$xmpp" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ] || [ -z "$xmpp" ]; then
    if kill -0 "$PID" 2>/dev/null; then START_ERROR="not ready within ${START_S} s"; else START_ERROR="did not start: $(tail -n1 "$err")"; fi
    stop_server
    return 1
  fi
  BASE="http://127.0.0.1:$port"; XMPP_PORT="$xmpp"
}


# bench NAME FILE SCENARIO ARGS…: one bench run against the current server.
bench() {
  local name="$1" file="$2" scenario="$3"; shift 3
  "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench "$scenario" --quiet --target "$name=$BASE" \
    --server-pid "$PID" --xmpp-port "$XMPP_PORT" "${LOGIN[@]}" --out "$OUT/bench/$file.json" "$@" >"$OUT/bench/$file.txt" 2>&1
  local rc=$?
  [ $rc = 0 ] || say "$name: $scenario ($file) exited with $rc: $(tail -n1 "$OUT/bench/$file.txt")"
  return $rc
}

study() {   # the study's transports each server has
  case "$1" in
    switchboard) echo "xmpp-websocket,xmpp-xhr-streaming,xmpp-xhr-polling,xmpp-jsonp-polling,bosh" ;;
    *) echo "xmpp-websocket,bosh" ;;
  esac
}

extra() {   # other transports, measured on localhost only
  case "$1" in
    switchboard) echo "xmpp-tcp,xmpp-sockjs-websocket,xmpp-eventsource" ;;
    *) echo "xmpp-tcp" ;;
  esac
}


run() {
  local name="$1"
  if ! start "$name"; then
    say "$name: FAILED: $START_ERROR"
    failed_result "$OUT/bench/$name-xmpp-study-local.json" "$name" pingpong "$(study "$name"),$(extra "$name")" "$START_ERROR"
    printf '%s-xmpp\tfailed\t%s\n' "$name" "$START_ERROR" >>"$OUT/status.tsv"
    return
  fi
  say "$name: pid $PID, HTTP $BASE, XMPP TCP $XMPP_PORT"
  local failures=""
  say "$name: the study, localhost"
  bench "$name" "$name-xmpp-study-local" pingpong --count "$PINGS" --transport "$(study "$name"),$(extra "$name")" || failures="$failures study-local"
  say "$name: the study, through $LINK"
  bench "$name" "$name-xmpp-study-remote" pingpong --count "$REMOTE_PINGS" --transport "$(study "$name")" --link "$LINK" --timeout 60s || failures="$failures study-remote"
  say "$name: MUC broadcast sweep"
  bench "$name" "$name-xmpp-muc" muc --transport xmpp-tcp "${MUC[@]}" || failures="$failures muc"
  stop_server
  # A fresh server for the idle sessions, so the sweep's garbage does not count.
  if start "$name"; then
    say "$name: RSS with $IDLE_SESSIONS idle XMPP sessions"
    bench "$name" "$name-xmpp-idle" idle --transport xmpp-tcp --connections "$IDLE_SESSIONS" --hold 2s --timeout 60s || failures="$failures idle"
    stop_server
  else
    failures="$failures idle"
  fi
  part_status "$name" xmpp "$failures"
}

[ -x "$BIN" ] || { say "FAILED: $BIN missing"; exit 1; }
make_config || { say "FAILED: cannot make Switchboard's accounts"; exit 1; }
for s in $SERVERS; do run "$s"; done
say "done"
