#!/usr/bin/env bash
# Installs the ws peer: npm ws, pinned by package-lock.json, into
# peers/ws/node_modules. Idempotent. Prints one line with the version.
set -euo pipefail
PEER=ws
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
npm_install "$DIR"
echo "$PEER: installed ws $(node_version "$DIR" ws) on node $(node --version)"
