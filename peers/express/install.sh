#!/usr/bin/env bash
# Installs the express peer: npm express and ws, pinned by package-lock.json,
# into peers/express/node_modules. Idempotent. Prints one line with the versions.
set -euo pipefail
PEER=express
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
npm_install "$DIR"
echo "$PEER: installed express $(node_version "$DIR" express) and ws $(node_version "$DIR" ws) on node $(node --version)"
