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
