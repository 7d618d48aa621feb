#!/usr/bin/env bash
# Runs the public IRC server test suite, irctest (github.com/progval/irctest),
# against `switchboard serve`'s IRC, through the suite's external-server
# controller.
#
#   conformance/irctest.sh PATH-TO-IRCTEST [pytest args...]
#
# PATH-TO-IRCTEST is a checkout of the suite (its PyPI release is from 2017;
# it is not vendored here and this script does not download it). The script
# makes a virtualenv in PATH/venv with pytest, builds the debug binary,
# starts the server with IRC on 127.0.0.1:$PORT (default 6668) and a chat
# app whose rooms keep no history, runs the tests of the specifications
# Switchboard claims (RFC 1459, RFC 2812, Modern, and IRCv3 for the
# capabilities it offers), and stops the server. The summary is printed;
# the junit file is left in build/irctest/junit.xml. Extra arguments go to
# pytest, e.g. `-k Join -x`.
#
# What passes and what does not, by specification: docs/irc.md.
set -euo pipefail

suite=${1:?usage: $0 PATH-TO-IRCTEST [pytest args...]}
shift
suite=$(cd "$suite" && pwd)
[ -d "$suite/irctest/server_tests" ] || { echo "$suite is not an irctest checkout" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/conformance/lib.sh"
port=${PORT:-6668}
out=$root/build/irctest
mkdir -p "$out"

if [ ! -x "$suite/venv/bin/pytest" ]; then
    python3 -m venv "$suite/venv"
    "$suite/venv/bin/pip" install --quiet --disable-pip-version-check 'pytest!=9.0.0' ecdsa filelock
fi

cargo build --manifest-path "$root/Cargo.toml" --bin switchboard
"$root/target/debug/switchboard" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen "127.0.0.1:$port" --irc-server-name My.Little.Server --irc-server-description "test server" \
    --irc-operators operuser:operpassword \
    --store memory --room-history 0 --max-message-rate 100000 --max-byte-rate 100000000 >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
wait_for_port "$port" "$server"

# Tests of capabilities and commands the server does not offer skip
# themselves (irctest asks the server first).
cd "$suite"
status=0
IRCTEST_SERVER_HOSTNAME=127.0.0.1 IRCTEST_SERVER_PORT=$port "$suite/venv/bin/pytest" \
    --controller irctest.controllers.external_server \
    -m "(RFC1459 or RFC2812 or modern or ircdocs or IRCv3) and not (deprecated or strict)" -k "not Ergo and not Sable" \
    --junit-xml "$out/junit.xml" -q -rfE -p no:cacheprovider "$@" || status=$?
echo "irctest against Switchboard: junit in $out/junit.xml, server log in $out/server.log"
exit $status
