#!/usr/bin/env bash
# Installs the tornado peer on CPython: a venv in peers/tornado/venv with
# requirements.txt (tornado). The interpreter is $PEERS_PYTHON, default
# python3 (Tornado 6.6 needs >= 3.11). Idempotent. Prints one line with the
# version.
set -euo pipefail
PEER=tornado
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
PYTHON="${PEERS_PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || apt_install python3 python3-venv
"$PYTHON" -c 'import ensurepip' 2>/dev/null || apt_try python3-venv || true
venv_install "$DIR/venv" "$PYTHON" "$DIR/requirements.txt"
echo "$PEER: installed tornado $(python_version "$DIR/venv" tornado) on $("$DIR/venv/bin/python" -c 'import platform; print(platform.python_implementation(), platform.python_version())')"
