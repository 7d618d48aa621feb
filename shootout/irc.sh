#!/usr/bin/env bash
# The shootout's IRC part (issue 31): Switchboard beside Debian's IRC servers,
# ircd-ircu, ngircd, InspIRCd and ircd-hybrid (peers/<name>/).
#
# For each server in turn, started fresh and pinned to the CPUs shootout/run.sh
# chose for servers, with the bench on its own (run alone: core 0 and core 1),
# every client a plain RFC 1459 client (`--transport irc`, docs/bench.md):
# - pingpong: registration time and PING/PONG round trips, after the rest, in
#   rounds (IRC_PING_ROUNDS, 3), each server fresh in each;
# - chat: the chat-server study's grid (rooms × users per room), each room a
#   channel, latency from the scheduled send;
# - broadcast: the ramp shootout/run.sh uses, every client in one channel and
#   every client sending: the most messages per second received with every
#   message delivered and a mean under the limit;
# - idle: RSS per registered idle client, on a fresh server.
# IRC servers do not send a message back to its sender (no server here is
# asked for echo-message), so a message counts n − 1 deliveries and is timed
# by another member (docs/bench.md, IRC in the bench). Result files go to
# OUT/bench/<server>-irc-*.json, a status line each to OUT/status.tsv.
#
# Usage: shootout/irc.sh OUT   (shootout/run.sh calls it; QUICK=1 for the
#        quick profile; IRC_SERVERS="switchboard ircu ngircd inspircd hybrid")
# Needs target/release/switchboard and the peers installed (run.sh installs them).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
. "$ROOT/shootout/lib.sh"
OUT="${1:?usage: shootout/irc.sh OUT}"
case "${QUICK:-0}" in ""|0|no|false) QUICK=0 ;; *) QUICK=1 ;; esac
BIN="$ROOT/target/release/switchboard"
SERVERS="${IRC_SERVERS:-switchboard ircu ngircd inspircd hybrid}"
START_S=30
STOP_S=5
IDLE_CLIENTS=10000
# No idle run for these: ircd-hybrid looks up every client's address in the
# DNS, with no setting to skip it, and this machine's resolver answers a
# burst of lookups so slowly that 10,000 registrations take about ten
# minutes (peers/hybrid/README.md).
IDLE_SKIP="${IRC_IDLE_SKIP-hybrid}"
# No ping run for these: ircu's fake lag holds a client to one command per
# 2 s after a burst of five, PING included (peers/ircu/README.md), so the
# round trips would take an hour.
PING_SKIP="${IRC_PING_SKIP-ircu}"
PINGS=(--count 2000)   # a round trip is tens of µs: 200 of them leave p50 to noise
PING_ROUNDS="${IRC_PING_ROUNDS:-3}"
if [ "$QUICK" = 1 ]; then
  # As shootout/run.sh's quick profile.
  CHAT=(--rooms 1,2,4 --users 20,40,60 --messages 30 --interval 10ms --drain 1s)
  BROADCAST=(--levels 200 --start-rate 100 --step 25% --step-seconds 1 --max-rate 100000 --loss-timeout 2s --max-mean 250ms)
  BENCH_TIMEOUT=300
else
  CHAT=(--rooms 1,2,4 --users 10,20,30,40,50,60 --messages 500 --interval 10ms --drain 5s)
  BROADCAST=(--levels 50,200,500 --start-rate 100 --step 25% --step-seconds 2 --max-rate 100000 --loss-timeout 3s --max-mean 250ms)
  BENCH_TIMEOUT=1800
fi

mkdir -p "$OUT/bench" "$OUT/logs"
T0=$(date +%s)
say() { printf '[irc %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*" | tee -a "$OUT/shootout.log" >&2; }
pin_cpus
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

PID=""; IRC_PORT=""
cleanup() { [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; }
trap cleanup EXIT

# start NAME: a fresh server, pinned; sets PID and IRC_PORT, or returns 1 with
# the reason in START_ERROR.
start() {
  local name="$1" log="$OUT/logs/$1-irc.out" err="$OUT/logs/$1-irc.err"
  : >"$log"
  if [ "$name" = switchboard ]; then
    # The peers run with their flood and join limits lifted as far as each
    # allows (peers/README.md, IRC peers; ircu's fake lag cannot be);
    # Switchboard's per-room join rate would refuse a level's clients
    # joining one channel at once.
    "${SERVER_PIN[@]}" "$BIN" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen 127.0.0.1:0 \
      --join-rate 1000000 --store memory >>"$log" 2>"$err" &
  else
    "${SERVER_PIN[@]}" "peers/$name/start.sh" 0 >>"$log" 2>"$err" &
  fi
  PID=$!
  local port=""
  for _ in $(seq $((START_S * 10))); do
    port="$(sed -n -e 's#^irc on 127\.0\.0\.1:\([0-9][0-9]*\)$#\1#p' -e 's#^switchboard serves IRC on 127\.0\.0\.1:\([0-9][0-9]*\)$#\1#p' "$log" "$err" | head -n1)"
    [ -n "$port" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    if kill -0 "$PID" 2>/dev/null; then START_ERROR="not ready within ${START_S} s"; else START_ERROR="did not start: $(tail -n1 "$err")"; fi
    stop_server
    return 1
  fi
  IRC_PORT="$port"
}

# bench NAME FILE SCENARIO ARGS…: one bench run against the current server.
# 30 s for a connection (TIMEOUT; 120 s for the idle clients: ngircd's
# listen backlog is 10, so some of a burst of connections wait for SYN
# retries): ircd-hybrid looks up every client's address in the
# DNS (it has no setting to skip it) and this machine's resolver is slow to
# answer a burst; the wait is not part of any figure but the connect times.
bench() {
  local name="$1" file="$2" scenario="$3"; shift 3
  "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench "$scenario" --quiet --target "$name=irc://127.0.0.1:$IRC_PORT" \
    --transport irc --server-pid "$PID" --timeout "${TIMEOUT:-30s}" --out "$OUT/bench/$file.json" "$@" >"$OUT/bench/$file.txt" 2>&1
  local rc=$?
  [ $rc = 0 ] || say "$name: $scenario ($file) exited with $rc: $(tail -n1 "$OUT/bench/$file.txt")"
  return $rc
}

run() {
  local name="$1"
  if ! start "$name"; then
    say "$name: FAILED: $START_ERROR"
    failed_result "$OUT/bench/$name-irc-broadcast.json" "$name" broadcast irc "$START_ERROR"
    printf '%s-irc\tfailed\t%s\n' "$name" "$START_ERROR" >>"$OUT/status.tsv"
    return
  fi
  say "$name: pid $PID, IRC on 127.0.0.1:$IRC_PORT"
  local failures=""
  say "$name: chat"
  bench "$name" "$name-irc-chat" chat "${CHAT[@]}" || failures="$failures chat"
  say "$name: broadcast sweep"
  bench "$name" "$name-irc-broadcast" broadcast "${BROADCAST[@]}" || failures="$failures broadcast"
  stop_server
  # A fresh server for the idle clients, so the sweep's garbage does not count.
  if [[ " $IDLE_SKIP " == *" $name "* ]]; then
    say "$name: no idle run (IRC_IDLE_SKIP)"
  elif start "$name"; then
    say "$name: RSS with $IDLE_CLIENTS idle clients"
    TIMEOUT=120s bench "$name" "$name-irc-idle" idle --connections "$IDLE_CLIENTS" --hold 2s || failures="$failures idle"
    stop_server
  else
    failures="$failures idle"
  fi
  part_status "$name" irc "$failures"
}

# ping NAME ROUND: one round of round trips against a fresh server. Every
# server warms up alike first (a fresh process's first round trips pay for
# its page faults), then the measured run.
ping() {
  local name="$1" round="$2" failures=""
  if ! start "$name"; then
    say "$name: FAILED: $START_ERROR"
    part_status "$name" irc " ping-start"
    return
  fi
  bench "$name" "$name-irc-warmup" pingpong --count 500 || failures="$failures warmup"
  rm -f "$OUT/bench/$name-irc-warmup.json"   # not a figure: kept out of the report
  bench "$name" "$name-irc-pingpong-$round" pingpong "${PINGS[@]}" || failures="$failures pingpong"
  stop_server
  # Only a failure is written: a later line for a server overrides its run's.
  [ -z "$failures" ] || part_status "$name" irc "$failures"
}

[ -x "$BIN" ] || { say "FAILED: $BIN missing"; exit 1; }
for s in $SERVERS; do run "$s"; done
# The round trips in rounds, the servers taken in turn in each: one run a
# server, minutes apart from the others', moved by 10 to 30 µs from one
# sitting to the next, more than the servers differ by. The summary
# compares the rounds' medians and calls two servers tied when their
# rounds overlap.
for round in $(seq "$PING_ROUNDS"); do
  for s in $SERVERS; do
    if [[ " $PING_SKIP " == *" $s "* ]]; then
      [ "$round" = 1 ] && say "$s: no ping run (IRC_PING_SKIP)"
      continue
    fi
    say "$s: ping, round $round of $PING_ROUNDS"
    ping "$s" "$round"
  done
done
say "done"
