#!/usr/bin/env bash
# Installs the sockjs-tornado peer on CPython: a venv in
# peers/sockjs-tornado/venv with requirements.txt (sockjs-tornado, tornado).
# The interpreter is $PEERS_PYTHON, default python3. Idempotent. Prints one
# line with the versions.
set -euo pipefail
PEER=sockjs-tornado
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
PYTHON="${PEERS_PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || apt_install python3 python3-venv
# Debian's own python3 has venv's pip (ensurepip) only with python3-venv.
"$PYTHON" -c 'import ensurepip' 2>/dev/null || apt_try python3-venv || true
venv_install "$DIR/venv" "$PYTHON" "$DIR/requirements.txt"
echo "$PEER: installed sockjs-tornado $(python_version "$DIR/venv" sockjs-tornado), tornado $(python_version "$DIR/venv" tornado) on $("$DIR/venv/bin/python" -c 'import platform; print(platform.python_implementation(), platform.python_version())')"
