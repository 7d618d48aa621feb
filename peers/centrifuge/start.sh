#!/usr/bin/env bash
# Starts the centrifuge peer on 127.0.0.1:PORT in the foreground (exec, so the
# caller can taskset it and signal it). Prints 'listening on
# http://127.0.0.1:PORT/' once it accepts connections; GET /healthz → ok;
# Centrifugo's client protocol (JSON) over WebSocket at /connection/websocket.
#
# Usage: [REDIS_ADDR=HOST:PORT] peers/centrifuge/start.sh PORT
#
# With REDIS_ADDR the node joins that Redis (nodes started with the same
# REDIS_ADDR form one cluster). Without it, a private redis-server is started
# first on a free loopback port, no persistence, as a child that gets SIGTERM
# when the peer exits however it exits (setpriv --pdeathsig): it shares the
# peer's taskset, and its CPU and memory count in the peer's process tree.
set -euo pipefail
PEER=centrifuge
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
BIN="$DIR/centrifuge-peer"

case "${1:-}" in
  ''|*[!0-9]*) echo "usage: [REDIS_ADDR=HOST:PORT] $0 PORT   (serves on 127.0.0.1:PORT; prints 'listening on http://127.0.0.1:PORT/' when ready)" >&2; exit 2 ;;
esac
port="$1"
[ -x "$BIN" ] || die "not installed: run peers/$PEER/install.sh"

if [ -n "${REDIS_ADDR:-}" ]; then
  exec "$BIN" -redis "$REDIS_ADDR" "$port"
fi

command -v redis-server >/dev/null && command -v redis-cli >/dev/null \
  || die "not installed: no redis-server: run peers/$PEER/install.sh"
# A free port can be taken between the probe and redis binding it: try again.
for _ in 1 2 3; do
  rport="$("$BIN" freeport)"
  # Started from this shell, so its parent is the process the exec below turns
  # into the peer: the peer's death (even SIGKILL) sends it SIGTERM.
  setpriv --pdeathsig TERM redis-server --port "$rport" --bind 127.0.0.1 \
    --save '' --appendonly no --loglevel warning >&2 &
  redis_pid=$!
  for _ in $(seq 50); do
    if [ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ]; then
      exec "$BIN" -redis "127.0.0.1:$rport" "$port"
    fi
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
done
die "redis-server did not start (tried three free ports)"
