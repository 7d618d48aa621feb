#!/usr/bin/env bash
# Installs the bun peer: Bun's Linux x64 binary from npm (@oven/bun-linux-x64,
# pinned by package-lock.json; no download step of its own) into
# peers/bun/node_modules. Idempotent. Prints one line with the version.
set -euo pipefail
PEER=bun
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
npm_install "$DIR"
BUN="$DIR/node_modules/@oven/bun-linux-x64/bin/bun"
[ -x "$BUN" ] || die "npm installed no bun binary at $BUN"
echo "$PEER: installed bun $("$BUN" --version)"
