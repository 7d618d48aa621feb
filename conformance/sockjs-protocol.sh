#!/usr/bin/env bash
# Runs the public SockJS protocol suite (github.com/sockjs/sockjs-protocol)
# against `switchboard serve --config conformance/sockjs-protocol.toml`.
#
#   conformance/sockjs-protocol.sh PATH-TO-SOCKJS-PROTOCOL [unittest args...]
#
# PATH-TO-SOCKJS-PROTOCOL is a checkout of the suite (it is not vendored
# here and this script does not download it). The suite is Python 2: the
# script makes a virtualenv in PATH/venv with a Python 2.7 interpreter
# ($PYTHON2, default python2.7) and the last versions of the suite's
# dependencies that run on it (with pyenv: PYTHON2=$(pyenv root)/versions/2.7.18/bin/python), builds the debug binary, starts the server
# on $PORT (default 8081), runs the suite, and stops the server. Extra
# arguments go to unittest, e.g. `XhrPolling` or `-v`.
#
# Expected: every test passes except Websocket.test_haproxy, which speaks
# the obsolete hixie-76 handshake (see docs/sockjs.md).
set -euo pipefail

suite=${1:?usage: $0 PATH-TO-SOCKJS-PROTOCOL [unittest args...]}
shift
suite=$(cd "$suite" && pwd)
[ -f "$suite/sockjs-protocol.py" ] || { echo "$suite has no sockjs-protocol.py" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/conformance/lib.sh"
python2=${PYTHON2:-python2.7}
port=${PORT:-8081}
venv=$suite/venv

if [ ! -x "$venv/bin/python" ]; then
    # virtualenv 20.21 is the last that runs on, and creates, Python 2.7.
    tools=$(mktemp -d)
    "$python2" -m pip install --quiet --disable-pip-version-check --target "$tools" 'virtualenv<20.22'
    PYTHONPATH=$tools "$python2" -m virtualenv --quiet "$venv"
    rm -rf "$tools"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        unittest2==1.1.0 websocket-client==0.59.0 ws4py==0.5.1
fi

cargo build --manifest-path "$root/Cargo.toml" --bin switchboard
"$root/target/debug/switchboard" serve \
    --config "$root/conformance/sockjs-protocol.toml" --listen "127.0.0.1:$port" --xmpp-listen off --irc-listen off --store memory &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
wait_for_port "$port" "$server"

cd "$suite"
SOCKJS_URL="http://127.0.0.1:$port" "$venv/bin/python" sockjs-protocol.py "$@"
