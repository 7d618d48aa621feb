# Shared by shootout/run.sh, shootout/xmpp.sh and shootout/irc.sh (sourced, not run).

# stop_server: ends the server whose pid is in PID: SIGTERM, then SIGKILL
# after STOP_S seconds; empties PID.
stop_server() {
  [ -n "$PID" ] || return 0
  kill -TERM "$PID" 2>/dev/null
  for _ in $(seq $((STOP_S * 10))); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  PID=""
}

# listening_port LOG PID WHO: waits up to 30 s for the server with pid PID
# to print "listening on http://127.0.0.1:PORT/" in LOG, and prints PORT;
# fails, naming WHO, if it exits or does not say it in time.
listening_port() {
  local log="$1" pid="$2" who="$3" port=""
  for _ in $(seq 300); do
    port="$(sed -n 's#^.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/.*$#\1#p' "$log" | head -n1)"
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$pid" 2>/dev/null || { echo "$who exited: $(tail -n3 "$log")" >&2; return 1; }
    sleep 0.1
  done
  echo "$who did not start in 30 s" >&2
  return 1
}

# part_status NAME PROTOCOL FAILURES: the line OUT/status.tsv gets for one
# server's run of a protocol part (shootout/xmpp.sh, shootout/irc.sh): ok, or
# failed with the scenarios that failed (FAILURES, space-separated).
part_status() {
  if [ -n "$3" ]; then
    printf '%s-%s\tfailed\t%s\n' "$1" "$2" "failed:$3 (see bench/$1-$2-*.txt)" >>"$OUT/status.tsv"
  else
    printf '%s-%s\tok\t\n' "$1" "$2" >>"$OUT/status.tsv"
  fi
}

# pin_cpus: sets SERVER_PIN and BENCH_PIN, the taskset prefixes of the server
# and of the bench: the CPUs shootout/run.sh chose (SERVER_CPUS, BENCH_CPUS),
# or run alone core 0 for the server and core 1 for the bench.
pin_cpus() {
  SERVER_PIN=(); BENCH_PIN=()
  if [ -n "${SERVER_CPUS:-}" ] && [ -n "${BENCH_CPUS:-}" ]; then
    SERVER_PIN=(taskset -c "$SERVER_CPUS"); BENCH_PIN=(taskset -c "$BENCH_CPUS")
  elif command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    SERVER_PIN=(taskset -c 0); BENCH_PIN=(taskset -c 1)
  fi
}

# failed_result PATH NAME SCENARIO TRANSPORTS ERROR: a result file holding one
# failed run, so the report shows the server as failed instead of leaving it out.
failed_result() {
  python3 - "$@" "$0" <<'EOF'
import json, sys, datetime
path, name, scenario, transports, error, command = sys.argv[1:7]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
run = {"target_name": name, "target": "", "started_at": now, "duration_s": 0.0, "partial": True, "error": error,
       "bench_cpu_bound": False, "server_pid": None, "transports": transports.split(","), "scenario": scenario,
       "settings": {"count": 0}, "results": []}
json.dump({"format": "switchboard-bench/1", "command": [command], "started_at": now,
           "versions": {"switchboard": "", "format": "switchboard-bench/1"},
           "machine": {"cpu_model": "", "cores": 0, "os": "linux", "kernel": None, "memory_bytes": None},
           "runs": [run]}, open(path, "w"), indent=2)
EOF
}
