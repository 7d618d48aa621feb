#!/usr/bin/env bash
# Installs the tornado peer on CPython: a venv in peers/tornado/venv with
# requirements.txt (tornado). The interpreter is $PEERS_PYTHON, default
# python3 (Tornado 6.6 needs >= 3.11). Idempotent. Prints one line with the
# version.
set -euo pipefail
PEER=tornado
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
cpython_venv_install "$DIR/requirements.txt"
echo "$PEER: installed tornado $(python_version "$DIR/venv" tornado) on $(python_runtime "$DIR/venv")"
