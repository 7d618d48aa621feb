#!/usr/bin/env bash
# Starts the vertx peer on 127.0.0.1:PORT in the foreground (exec, so the
# caller can taskset it and signal it). Prints 'listening on
# http://127.0.0.1:PORT/' once it accepts connections; GET /healthz → ok.
# JVM defaults (heap, GC ergonomics: on one CPU the JVM picks the serial GC).
set -euo pipefail
PEER=vertx
. "$(dirname "$0")/../lib/common.sh"
start_peer "${1:-}" peer-vertx.jar java -jar "$PEERS_DIR/vertx/peer-vertx.jar"
