#!/usr/bin/env bash
# Installs the sockjs-node peer: npm sockjs, pinned by package-lock.json, into
# peers/sockjs-node/node_modules. Idempotent. Prints one line with the version.
set -euo pipefail
PEER=sockjs-node
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
npm_install "$DIR"
echo "$PEER: installed sockjs $(node_version "$DIR" sockjs) on node $(node --version)"
