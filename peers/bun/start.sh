#!/usr/bin/env bash
# Starts the bun peer on 127.0.0.1:PORT in the foreground (exec, so the
# caller can taskset it and signal it). Prints 'listening on
# http://127.0.0.1:PORT/' once it accepts connections; GET /healthz → ok.
set -euo pipefail
PEER=bun
. "$(dirname "$0")/../lib/common.sh"
start_peer "${1:-}" node_modules/@oven/bun-linux-x64/bin/bun \
  "$PEERS_DIR/bun/node_modules/@oven/bun-linux-x64/bin/bun" "$PEERS_DIR/bun/server.js"
