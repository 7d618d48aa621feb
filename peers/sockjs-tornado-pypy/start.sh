#!/usr/bin/env bash
# Starts the sockjs-tornado peer's app under PyPy on 127.0.0.1:PORT in the
# foreground (exec, so the caller can taskset it and signal it). Prints
# 'listening on http://127.0.0.1:PORT/' once it accepts connections;
# GET /healthz → ok. PyPy's JIT needs a warm-up before its numbers settle.
set -euo pipefail
PEER=sockjs-tornado-pypy
. "$(dirname "$0")/../lib/common.sh"
start_peer "${1:-}" venv/.installed "$PEERS_DIR/sockjs-tornado-pypy/venv/bin/python" "$PEERS_DIR/sockjs-tornado/server.py"
