# Shared by shootout/run.sh and shootout/xmpp.sh (sourced, not run).

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
