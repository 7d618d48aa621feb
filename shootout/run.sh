#!/usr/bin/env bash
# The shootout (issue 6): the same workloads against Switchboard and every peer
# in peers/, on this machine, in one run, on the same charts.
#
# For each server in turn: start it pinned to one core (taskset -c 0), wait for
# its ready line, warm it up (PyPy's JIT needs it; every server gets the same),
# run pingpong, countdown, chat and broadcast with the bench pinned to the other
# core (taskset -c 1, --server-pid so its CPU and RSS are sampled), stop it.
# Then the bench's own receive ceiling (selftest) and the RSS per idle
# WebSocket connection at 50,000 connections (or as many as the open-file limit
# lets one process hold), Switchboard's beside Bun's; the XMPP part (shootout/xmpp.sh:
# Switchboard, ejabberd and Prosody); the IRC part (shootout/irc.sh: Switchboard,
# ircu, ngircd, InspIRCd and Hybrid); finally `switchboard report` over
# every result file, and a text summary with the broadcast table and the bar.
# A peer that fails to install, start or answer is recorded as failed (its
# result file carries the error, so the report's summary shows it) and the run
# goes on. Traffic goes to 127.0.0.1 only.
#
# Usage: shootout/run.sh            (or: make shootout [QUICK=1])
# Environment:
#   QUICK=1                  the quick profile: under 15 minutes on 2 cores
#   SHOOTOUT_SERVERS="switchboard ws …"   which servers [default: switchboard and every peer with apps]
#   SHOOTOUT_OUT=DIR         where results go [default: shootout/results/<UTC time>]
#   SHOOTOUT_XMPP_SERVERS="…", SHOOTOUT_IRC_SERVERS="…"   the XMPP and IRC parts' servers ("" skips a part)
#   SHOOTOUT_SKIP_INSTALL=1  do not run peers/install-all.sh
#   SHOOTOUT_SKIP_BUILD=1    do not run cargo build --release
# Output: DIR/report.html, DIR/summary.txt (also printed), DIR/bench/*.json and
# *.txt (one result file and table per server and scenario), DIR/logs/.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
. "$ROOT/shootout/lib.sh"
case "${QUICK:-0}" in ""|0|no|false) QUICK=0 ;; *) QUICK=1 ;; esac
BIN="$ROOT/target/release/switchboard"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
OUT="${SHOOTOUT_OUT:-$ROOT/shootout/results/$STAMP}"
START_S=30          # longest wait for a server's ready line
STOP_S=5            # grace after SIGTERM before SIGKILL

# --- the two profiles --------------------------------------------------------
# Broadcast: every server gets the same ramp. QUICK uses one level of 200
# clients in 1 s steps growing 25% from 100 msgs/s (fine enough to place a
# peer's limit within 25%), until the server saturates; the cap of 100,000
# msgs/s sent (20 M received) is above what any server here reaches, and the
# bench's own ceiling (selftest) is reported beside it. A level ends when a message is not back within 2 s or a step's
# mean round trip passes 250 ms, so "sustainable" means every message
# delivered with a mean round trip under that.
if [ "$QUICK" = 1 ]; then
  PROFILE="quick"
  WARMUP=(--levels 50 --start-rate 200 --max-rate 200 --step-seconds 2)
  PINGPONG=(--count 200)
  COUNTDOWN=(--count 500)
  # The chat-server study's grid (1, 2 and 4 rooms) at three of its six room
  # sizes, each user sending 30 messages 10 ms apart instead of 500; what has
  # not arrived 1 s after the last send counts as lost.
  CHAT=(--rooms 1,2,4 --users 20,40,60 --messages 30 --interval 10ms --drain 1s)
  BROADCAST=(--levels 200 --start-rate 100 --step 25% --step-seconds 1 --max-rate 100000 --loss-timeout 2s --max-mean 250ms)
  SELFTEST=(--connections 200 --start-rate 2000 --step 50% --step-seconds 1 --max-rate 100000 --loss-timeout 2s --max-mean 250ms)
  IDLE_PEERS=0      # idle RSS of Switchboard and Bun only
  BENCH_TIMEOUT=240 # per bench invocation, seconds
  CPD_ROUNDS=2      # rounds of the CPU-per-delivery comparison
else
  PROFILE="full"
  WARMUP=(--levels 50 --start-rate 200 --max-rate 200 --step-seconds 10)
  PINGPONG=(--count 2000)
  COUNTDOWN=(--count 2000)
  # The chat-server study's workload as it ran it: 10 to 60 users in each of
  # 1, 2 and 4 rooms, each user sending 500 messages 10 ms apart.
  CHAT=(--rooms 1,2,4 --users 10,20,30,40,50,60 --messages 500 --interval 10ms --drain 5s)
  BROADCAST=(--levels 100,500,2000 --start-rate 10 --step 25% --step-seconds 2 --max-rate 100000 --loss-timeout 3s --max-mean 250ms)
  SELFTEST=(--connections 500 --start-rate 1000 --step 40% --step-seconds 2 --max-rate 100000 --loss-timeout 3s --max-mean 250ms)
  IDLE_PEERS=1      # idle RSS of every server with a native WebSocket endpoint
  BENCH_TIMEOUT=1800
  CPD_ROUNDS=3
fi
# Every server's warm-up, after WARMUP's broadcast and a pingpong: one chat room
# of 20 users, 40,000 deliveries, so the JVMs' JIT has compiled the chat path
# before it is measured (Node's and PyPy's too).
WARMUP_CHAT=(--rooms 1 --users 20 --messages 100 --interval 10ms --drain 2s)
# Idle connections held open for the RSS figure: 50,000, from several source
# addresses (shootout/idle-rss.py), or as many as the open-file limit lets the
# server hold (set below, once the limit is raised).
IDLE_WANTED=50000
# The fixed loads of the CPU-per-delivery comparison, in msgs/s to 200
# clients: 100,000 and 1,000,000 deliveries/s, below where either server
# saturates on this machine.
CPD_RATES="500 5000"

mkdir -p "$OUT/bench" "$OUT/logs" "$OUT/idle-rss"
STATUS="$OUT/status.tsv"   # server <TAB> ok|failed <TAB> detail
: >"$STATUS"
T0=$(date +%s)
say() { printf '[%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*" | tee -a "$OUT/shootout.log" >&2; }

# --- pinning and limits ------------------------------------------------------
# On 2 cores (and in the quick profile) the server gets core 0 and the bench
# core 1. The full profile on a larger machine gives the bench the last quarter
# of the cores (SHOOTOUT_BENCH_CORES=N to choose) and the server all the rest,
# as the chat study gave its servers the whole machine. Every result file
# records both sets (server_cpus, machine.bench_cpus).
SERVER_PIN=(); BENCH_PIN=()
CORES="$(nproc)"
if command -v taskset >/dev/null && [ "$CORES" -ge 2 ]; then
  if [ "$QUICK" = 1 ] || [ "$CORES" -eq 2 ]; then
    SERVER_PIN=(taskset -c 0); BENCH_PIN=(taskset -c 1)
  else
    BENCH_CORES="${SHOOTOUT_BENCH_CORES:-$(( CORES / 4 > 0 ? CORES / 4 : 1 ))}"
    SERVER_PIN=(taskset -c "0-$(( CORES - BENCH_CORES - 1 ))"); BENCH_PIN=(taskset -c "$(( CORES - BENCH_CORES ))-$(( CORES - 1 ))")
  fi
else
  say "WARNING: no taskset or fewer than 2 CPUs: server and bench are not pinned"
fi
# Thousands of sockets on both sides; children inherit the limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
IDLE_CONNECTIONS="$IDLE_WANTED"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((IDLE_WANTED + 500)) ]; then
  IDLE_CONNECTIONS=$(( $(ulimit -n) - 500 ))
  say "NOTE: the open-file hard limit is $(ulimit -n) (raising it needs CAP_SYS_RESOURCE), so a server process can hold no more than that: idle RSS is measured at $IDLE_CONNECTIONS connections, not $IDLE_WANTED"
fi

# --- build and install -------------------------------------------------------
if [ "${SHOOTOUT_SKIP_BUILD:-0}" != 1 ]; then
  say "building release"
  cargo build --release --quiet >"$OUT/logs/build.log" 2>&1 || { say "FAILED: cargo build --release (see $OUT/logs/build.log)"; exit 1; }
fi
[ -x "$BIN" ] || { say "FAILED: $BIN missing"; exit 1; }

# Peers that serve the apps: the XMPP peers (ejabberd, prosody) have none; the
# XMPP part below (shootout/xmpp.sh) drives them beside Switchboard.
ALL_PEERS="$(python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["peers"] if p["apps"]))' peers/peers.json)"
SERVERS="${SHOOTOUT_SERVERS:-switchboard $ALL_PEERS}"
PEERS=""
for s in $SERVERS; do [ "$s" = switchboard ] || PEERS="$PEERS $s"; done

declare -A INSTALL_FAILED=()
if [ -n "$PEERS" ] && [ "${SHOOTOUT_SKIP_INSTALL:-0}" != 1 ]; then
  say "installing peers:$PEERS"
  # shellcheck disable=SC2086
  peers/install-all.sh $PEERS >"$OUT/logs/install.txt" 2>"$OUT/logs/install.err"
  while IFS= read -r line; do
    case "$line" in
      *": FAILED: "*) INSTALL_FAILED["${line%%: FAILED: *}"]="did not install: ${line#*: FAILED: }" ;;
    esac
  done <"$OUT/logs/install.txt"
  sed 's/^/    /' "$OUT/logs/install.txt" >&2
fi

# --- one server --------------------------------------------------------------
PID=""; BASE=""
cleanup() { [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; }
trap cleanup EXIT

# start_server NAME: starts it pinned on a free port; sets PID and BASE, or
# returns 1 with the reason in START_ERROR.
start_server() {
  local name="$1" log="$OUT/logs/$1.out"
  # Emptied here, not by the background job's redirection (that runs after the
  # fork), so the poll below never reads a previous run's ready line.
  : >"$log"
  if [ "$name" = switchboard ]; then
    # Every bench client comes from 127.0.0.1, so the per-address limit on new
    # SockJS sessions (100/s by default) would refuse the larger levels; the
    # peers have no such limit.
    "${SERVER_PIN[@]}" "$BIN" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen off --session-rate 1000000 >>"$log" 2>"$OUT/logs/$name.err" &
  else
    "${SERVER_PIN[@]}" "peers/$name/start.sh" 0 >>"$log" 2>"$OUT/logs/$name.err" &
  fi
  PID=$!   # start.sh and taskset exec, so this is the server's own pid
  local port=""
  for _ in $(seq $((START_S * 10))); do
    port="$(sed -n 's#^.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/.*$#\1#p' "$log" | head -n1)"
    [ -n "$port" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    if kill -0 "$PID" 2>/dev/null; then
      START_ERROR="not ready within ${START_S} s"
    else
      START_ERROR="did not start: $(tail -n1 "$OUT/logs/$name.err" "$log" 2>/dev/null | grep -v '^==>' | grep . | tail -n1)"
    fi
    stop_server
    return 1
  fi
  BASE="http://127.0.0.1:$port"
}


# failed_file NAME SCENARIO ERROR: a result file holding one failed run, so the
# report shows the server as failed instead of leaving it out.
failed_file() {
  python3 - "$OUT/bench/$1-$2.json" "$1" "$2" "$3" <<'EOF'
import json, sys, datetime
path, name, scenario, error = sys.argv[1:5]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
outcome = {"pingpong": {"settings": {"count": 0}, "results": []},
           "countdown": {"settings": {"count": 0}, "results": []},
           "chat": {"settings": {"rooms": [], "users": [], "messages": 0, "interval_us": 0, "drain_us": 0}, "results": []}}
run = {"target_name": name, "target": "", "started_at": now, "duration_s": 0.0, "partial": True,
       "error": error, "bench_cpu_bound": False, "server_pid": None, "transports": [], "scenario": scenario}
broadcast = {"settings": {"levels": [], "start_rate": 0, "step": {"percent": 0}, "step_us": 0, "max_rate": 0,
                          "loss_timeout_us": 0, "max_dropped": 0, "max_mean_us": 0, "good_mean_us": 0,
                          "selftest": False}, "levels": [], "summary": []}
run.update(outcome.get(scenario, broadcast))
json.dump({"format": "switchboard-bench/1", "command": ["shootout/run.sh"], "started_at": now,
           "versions": {"switchboard": "", "format": "switchboard-bench/1"},
           "machine": {"cpu_model": "", "cores": 0, "os": "linux", "kernel": None, "memory_bytes": None},
           "runs": [run]}, open(path, "w"), indent=2)
EOF
}

# bench NAME SCENARIO APP ARGS…: one bench run against the current server,
# pinned, writing bench/NAME-SCENARIO.json and .txt. Returns the bench's status.
bench() {
  local name="$1" scenario="$2" app="$3"; shift 3
  local out="$OUT/bench/$name-$scenario"
  "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench "$scenario" --quiet \
    --target "$name=$BASE/$app" --server-pid "$PID" --out "$out.json" "$@" >"$out.txt" 2>&1
  local rc=$?
  if [ ! -s "$out.json" ]; then
    failed_file "$name" "$scenario" "bench exited with status $rc: $(tail -n1 "$out.txt")"
  fi
  return $rc
}

transport_of() {   # socketio or centrifuge for those peers, else native websocket
  python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1]))["peers"] if p["name"]==sys.argv[2]]; print(next((k for k in ("socketio", "centrifuge") if p and k in p[0]), "websocket"))' peers/peers.json "$1"
}

serves() {   # serves NAME APP: whether the server has that app (Switchboard has all)
  [ "$1" = switchboard ] && return 0
  python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1]))["peers"] if p["name"]==sys.argv[2]]; sys.exit(0 if p and sys.argv[3] in p[0]["apps"] else 1)' peers/peers.json "$1" "$2"
}

APP_OF_pingpong=echo APP_OF_countdown=count APP_OF_chat=chat APP_OF_broadcast=broadcast

SCENARIOS="pingpong countdown chat broadcast"
run_server() {
  local name="$1" t="websocket" pp="all"
  if [ "$name" != switchboard ]; then
    t="$(transport_of "$name")"
    [ "$t" = socketio ] || [ "$t" = centrifuge ] && pp="$t"
  fi
  if [ -n "${INSTALL_FAILED[$name]:-}" ]; then
    say "$name: ${INSTALL_FAILED[$name]}"
    for sc in $SCENARIOS; do failed_file "$name" "$sc" "${INSTALL_FAILED[$name]}"; done
    printf '%s\tfailed\t%s\n' "$name" "${INSTALL_FAILED[$name]}" >>"$STATUS"
    return
  fi
  if ! start_server "$name"; then
    say "$name: FAILED: $START_ERROR"
    for sc in $SCENARIOS; do failed_file "$name" "$sc" "$START_ERROR"; done
    printf '%s\tfailed\t%s\n' "$name" "$START_ERROR" >>"$STATUS"
    return
  fi
  say "$name: pid $PID at $BASE (pinned: ${SERVER_PIN[*]:-none}); warming up"
  "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench broadcast --quiet --transport "$t" \
    --target "$name=$BASE/broadcast" --server-pid "$PID" "${WARMUP[@]}" >"$OUT/logs/$name-warmup.txt" 2>&1
  if serves "$name" echo; then
    "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench pingpong --quiet --transport "$t" \
      --target "$name=$BASE/echo" --server-pid "$PID" "${PINGPONG[@]}" >>"$OUT/logs/$name-warmup.txt" 2>&1
  fi
  if serves "$name" chat; then
    "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench chat --quiet --transport "$t" \
      --target "$name=$BASE/chat" --server-pid "$PID" "${WARMUP_CHAT[@]}" >>"$OUT/logs/$name-warmup.txt" 2>&1
  fi
  local failures=""
  for sc in $SCENARIOS; do
    if ! kill -0 "$PID" 2>/dev/null; then
      failed_file "$name" "$sc" "the server exited before $sc (log: logs/$name.err)"
      failures="$failures $sc"
      continue
    fi
    app="APP_OF_$sc"
    if ! serves "$name" "${!app}"; then
      say "$name: $sc skipped: it has no ${!app} app"
      continue
    fi
    say "$name: $sc"
    case "$sc" in
      pingpong) bench "$name" pingpong echo --transport "$pp" "${PINGPONG[@]}" ;;
      countdown) bench "$name" countdown count --transport "http,$t" "${COUNTDOWN[@]}" ;;
      chat) bench "$name" chat chat --transport "$t" "${CHAT[@]}" ;;
      broadcast) bench "$name" broadcast broadcast --transport "$t" "${BROADCAST[@]}" ;;
    esac || failures="$failures $sc"
  done
  if [ "$name" = switchboard ]; then
    say "$name: bench selftest (the bench's own receive ceiling)"
    "${BENCH_PIN[@]}" timeout "$BENCH_TIMEOUT" "$BIN" bench selftest --quiet --target "bench-selftest=$BASE/broadcast" \
      --server-pid "$PID" --out "$OUT/bench/bench-selftest.json" "${SELFTEST[@]}" >"$OUT/bench/bench-selftest.txt" 2>&1
  fi
  stop_server
  if [ -n "$failures" ]; then
    printf '%s\tfailed\t%s\n' "$name" "failed:$failures (see bench/$name-*.txt)" >>"$STATUS"
  else
    printf '%s\tok\t\n' "$name" >>"$STATUS"
  fi
}

# idle_rss NAME: RSS per idle native WebSocket connection, on a fresh server.
idle_rss() {
  local name="$1" path="/echo/websocket"
  start_server "$name" || { say "$name: idle RSS skipped: $START_ERROR"; return; }
  say "$name: RSS with $IDLE_CONNECTIONS idle WebSocket connections"
  "${BENCH_PIN[@]}" python3 shootout/idle-rss.py --url "ws://${BASE#http://}$path" --pid "$PID" \
    --connections "$IDLE_CONNECTIONS" >"$OUT/idle-rss/$name.json" 2>"$OUT/logs/$name-idle-rss.err" \
    || say "$name: idle RSS failed: $(tail -n1 "$OUT/logs/$name-idle-rss.err")"
  stop_server
}

say "shootout ($PROFILE profile): $SERVERS -> $OUT"
for s in $SERVERS; do run_server "$s"; done
for s in $SERVERS; do
  if [ "$s" = switchboard ] || [ "$s" = bun ]; then
    idle_rss "$s"
  elif [ "$IDLE_PEERS" = 1 ] && [ -z "${INSTALL_FAILED[$s]:-}" ] && [ "$(transport_of "$s")" = websocket ]; then
    idle_rss "$s"
  fi
done

# protocol_part PROTOCOL SERVERS: installs the peers among SERVERS (a status
# line PEER-PROTOCOL for each that fails) and runs shootout/PROTOCOL.sh with
# the others and the CPUs chosen above.
protocol_part() {
  local protocol="$1" ok="" s
  for s in $2; do
    if [ "$s" != switchboard ] && [ "${SHOOTOUT_SKIP_INSTALL:-0}" != 1 ]; then
      if ! "peers/$s/install.sh" >>"$OUT/logs/install.txt" 2>>"$OUT/logs/install.err"; then
        say "$s: did not install: $(tail -n1 "$OUT/logs/install.txt")"
        printf '%s-%s\tfailed\t%s\n' "$s" "$protocol" "did not install" >>"$STATUS"
        continue
      fi
    fi
    ok="$ok $s"
  done
  [ -n "$ok" ] || return 0
  say "$protocol:$ok"
  QUICK="$QUICK" XMPP_SERVERS="$ok" IRC_SERVERS="$ok" SERVER_CPUS="${SERVER_PIN[2]:-}" BENCH_CPUS="${BENCH_PIN[2]:-}" \
    "shootout/$protocol.sh" "$OUT" || say "$protocol part FAILED (see $OUT/shootout.log)"
}

# XMPP: Switchboard beside ejabberd and Prosody (shootout/xmpp.sh): the
# SockJS-versus-BOSH study on localhost and through a 162 ms link, the MUC
# sweep, and RSS per idle session. SHOOTOUT_XMPP_SERVERS="" skips it.
protocol_part xmpp "${SHOOTOUT_XMPP_SERVERS-switchboard ejabberd prosody}"

# IRC: Switchboard beside ircu, ngircd, InspIRCd and Hybrid (shootout/irc.sh):
# ping, the chat grid, the broadcast sweep in one channel, and RSS per idle
# client. SHOOTOUT_IRC_SERVERS="" skips it.
protocol_part irc "${SHOOTOUT_IRC_SERVERS-switchboard ircu ngircd inspircd hybrid}"

# The satellite-link study's quick profile (shootout/satellite.sh: two
# Switchboard servers, and pairs of Prosody, ejabberd, ircu and ngIRCd,
# through emulated 2400 and 19,200 bit/s links; about 40 minutes, most of
# it waiting on the links, not CPU), its figures in the summary.
# SHOOTOUT_SATELLITE="" skips it.
if [ -n "${SHOOTOUT_SATELLITE-1}" ]; then
  say "satellite: the satellite-link study, quick profile"
  QUICK=1 SWITCHBOARD_BIN="$BIN" shootout/satellite.sh "$OUT/satellite" >"$OUT/logs/satellite.txt" 2>&1 \
    || say "satellite part FAILED (see $OUT/logs/satellite.txt)"
fi

# Server CPU per delivery at fixed loads, Switchboard beside Bun (rounds
# interleaved, each on a fresh server): the comparison that still separates
# the two where the broadcast sweep meets the bench's own ceiling. At each
# load Switchboard runs twice, writing at once and with --write-delay
# (switchboard+delay), so that what the delay saves and costs is side by side.
if [[ " $SERVERS " == *" switchboard "* && " $SERVERS " == *" bun "* && -z "${INSTALL_FAILED[bun]:-}" ]]; then
  for rate in $CPD_RATES; do
    say "CPU per delivery: switchboard, switchboard+delay and bun at $rate msgs/s to 200 clients, $CPD_ROUNDS rounds"
    RATE="$rate" CLIENTS=200 ROUNDS="$CPD_ROUNDS" CPD_JSON="$OUT/cpu-per-delivery-$rate.json" \
      shootout/cpu-per-delivery.sh switchboard switchboard+delay bun >"$OUT/logs/cpu-per-delivery-$rate.txt" 2>&1 \
      || say "CPU per delivery FAILED: $(tail -n1 "$OUT/logs/cpu-per-delivery-$rate.txt")"
  done
fi

say "writing the report"
"$BIN" report "$OUT"/bench/*.json -o "$OUT/report.html" \
  --title "Switchboard shootout ($PROFILE, $(date -u +%Y-%m-%d))" >"$OUT/logs/report.txt" 2>&1 \
  || say "report FAILED: $(tail -n1 "$OUT/logs/report.txt")"
python3 shootout/summary.py "$OUT" --profile "$PROFILE" --elapsed "$(( $(date +%s) - T0 ))" | tee "$OUT/summary.txt"
ln -sfn "$OUT" "$ROOT/shootout/results/latest" 2>/dev/null || true
echo "report: $OUT/report.html"
