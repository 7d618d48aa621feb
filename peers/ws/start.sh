#!/usr/bin/env bash
# Starts the ws peer on 127.0.0.1:PORT in the foreground (exec, so the
# caller can taskset it and signal it). Prints 'listening on
# http://127.0.0.1:PORT/' once it accepts connections; GET /healthz → ok.
set -euo pipefail
PEER=ws
. "$(dirname "$0")/../lib/common.sh"
PORT="$(port_arg "$@")"
DIR="$PEERS_DIR/$PEER"
[ -f "$DIR/node_modules/ws/package.json" ] || die "not installed: run peers/$PEER/install.sh"
exec node "$DIR/server.js" "$PORT"
