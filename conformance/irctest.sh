#!/usr/bin/env bash
# Runs the public IRC server test suite, irctest (github.com/progval/irctest),
# against `switchboard serve`'s IRC, with a controller of its own
# (conformance/irctest/switchboard_controller.py) that starts a fresh server
# for every test, as the suite does for every server it knows.
#
#   conformance/irctest.sh PATH-TO-IRCTEST [pytest args...]
#
# PATH-TO-IRCTEST is a checkout of the suite (its PyPI release is from 2017;
# it is not vendored here and this script does not download it). The script
# makes a virtualenv in PATH/venv with pytest, builds the debug binary, and
# runs the tests of the specifications Switchboard claims (RFC 1459, RFC
# 2812, Modern, and IRCv3 for the capabilities it offers). The summary is
# printed; the junit file is left in build/irctest/junit.xml. Extra
# arguments go to pytest, e.g. `-k Join -x`; IRCTEST_DEBUG_LOGS=1 shows the
# servers' logs.
#
# What passes and what does not, by specification: docs/irc.md.
set -euo pipefail

suite=${1:?usage: $0 PATH-TO-IRCTEST [pytest args...]}
shift
suite=$(cd "$suite" && pwd)
[ -d "$suite/irctest/server_tests" ] || { echo "$suite is not an irctest checkout" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/irctest
mkdir -p "$out"

if [ ! -x "$suite/venv/bin/pytest" ]; then
    python3 -m venv "$suite/venv"
    "$suite/venv/bin/pip" install --quiet --disable-pip-version-check 'pytest!=9.0.0' ecdsa filelock
fi

cargo build --manifest-path "$root/Cargo.toml" --bin switchboard

# Tests of capabilities and commands the server does not offer skip
# themselves (irctest asks the server first).
# testLinksWithServices expects a services package (Atheme, Anope) linked
# to the server as a server of its own; Switchboard's accounts are its own,
# as Ergo's are, and its LINKS is tested by the suite's other LINKS test.
# testWhoxAccount expects an account shown in the letters it was registered
# in (coolAcct); Switchboard's accounts are XMPP localparts, case-mapped
# when made (RFC 7613's UsernameCaseMapped: coolacct), one account however
# it is typed, and every protocol shows that one form. WHOX's account field
# itself is tested by testWhoxNoAccount and the byte-level tests.
# RegisterBeforeConnectDisallowedTestCase wants a server that refuses
# REGISTER before the connection completes; Switchboard allows it, as
# XMPP's in-band registration comes before authentication (the suite's
# test of registering before connecting passes).
cd "$suite"
status=0
SWITCHBOARD_BIN="$root/target/debug/switchboard" PYTHONPATH="$root/conformance/irctest" "$suite/venv/bin/pytest" \
    --controller switchboard_controller \
    -m "(RFC1459 or RFC2812 or modern or ircdocs or IRCv3) and not (deprecated or strict)" -k "not Ergo and not Sable and not testLinksWithServices and not testWhoxAccount and not RegisterBeforeConnectDisallowedTestCase" \
    --junit-xml "$out/junit.xml" -q -rfE -p no:cacheprovider "$@" || status=$?
echo "irctest against Switchboard: junit in $out/junit.xml"
exit $status
