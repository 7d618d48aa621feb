#!/usr/bin/env bash
# Installs the sockjs-tornado-pypy peer: the sockjs-tornado peer's app and
# requirements (../sockjs-tornado/requirements.txt) in a venv made by Debian's
# pypy3 (`pypy3 -m venv`) in peers/sockjs-tornado-pypy/venv. If Debian's
# pypy3-venv cannot be had, pip comes from PyPI instead (see lib/common.sh).
# Idempotent. Prints one line with the versions.
set -euo pipefail
PEER=sockjs-tornado-pypy
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
PYPY="${PEERS_PYPY:-pypy3}"
if ! command -v "$PYPY" >/dev/null; then
  apt_try pypy3 pypy3-venv || apt_install pypy3
fi
# Debian splits venv's pip (ensurepip) for pypy3 into pypy3-venv.
"$PYPY" -c 'import ensurepip' 2>/dev/null || apt_try pypy3-venv || true
venv_install "$DIR/venv" "$PYPY" "$PEERS_DIR/sockjs-tornado/requirements.txt"
echo "$PEER: installed sockjs-tornado $(python_version "$DIR/venv" sockjs-tornado), tornado $(python_version "$DIR/venv" tornado) on $(python_runtime "$DIR/venv")"
