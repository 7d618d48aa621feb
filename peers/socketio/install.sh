#!/usr/bin/env bash
# Installs the socketio peer: npm socket.io, pinned by package-lock.json, into
# peers/socketio/node_modules. Idempotent. Prints one line with the version.
set -euo pipefail
PEER=socketio
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
npm_install "$DIR"
echo "$PEER: installed socket.io $(node_version "$DIR" socket.io) on node $(node --version)"
