#!/usr/bin/env bash
# Starts the tornado peer (CPython) on 127.0.0.1:PORT in the foreground (exec,
# so the caller can taskset it and signal it). Prints 'listening on
# http://127.0.0.1:PORT/' once it accepts connections; GET /healthz → ok.
set -euo pipefail
PEER=tornado
. "$(dirname "$0")/../lib/common.sh"
start_peer "${1:-}" venv/.installed "$PEERS_DIR/tornado/venv/bin/python" "$PEERS_DIR/tornado/server.py"
