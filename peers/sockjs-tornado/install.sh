#!/usr/bin/env bash
# Installs the sockjs-tornado peer on CPython: a venv in
# peers/sockjs-tornado/venv with requirements.txt (sockjs-tornado, tornado).
# The interpreter is $PEERS_PYTHON, default python3. Idempotent. Prints one
# line with the versions.
set -euo pipefail
PEER=sockjs-tornado
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
cpython_venv_install "$DIR/requirements.txt"
echo "$PEER: installed sockjs-tornado $(python_version "$DIR/venv" sockjs-tornado), tornado $(python_version "$DIR/venv" tornado) on $(python_runtime "$DIR/venv")"
