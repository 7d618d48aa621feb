#!/usr/bin/env bash
# The Smack integration test framework (Maven Central's
# smack-integration-test) against `switchboard serve`'s XMPP, one
# specification per run (in one run, one test's failure can close the shared
# connection and fail the tests after it), each against a fresh server with
# the framework's three accounts; then check.py on the runs' logs.
# Installs the framework into build/smack/lib with Maven on first use.
#
#   conformance/smack/run.sh             # SWITCHBOARD_BIN picks the binary (default target/debug)
#   conformance/smack/run.sh XEP-0045    # one specification
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${SWITCHBOARD_BIN:-$ROOT/target/debug/switchboard}"
OUT="$ROOT/build/smack"
LIB="$OUT/lib"
SPECS=("${@:-RFC6120 RFC6121 XEP-0030 XEP-0045 XEP-0198 XEP-0199}")
SPECS=(${SPECS[*]})
die() { echo "smack: FAILED: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "no switchboard binary at $BIN; run cargo build first"
command -v java >/dev/null || die "no java: \`make test-smack\` installs Debian's default-jdk-headless"
command -v mvn >/dev/null || die "no mvn: \`make test-smack\` installs Debian's maven"
if [ ! -f "$LIB/.installed" ] || [ "$HERE/pom.xml" -nt "$LIB/.installed" ]; then
  echo "smack: installing the Smack integration test framework into $LIB" >&2
  rm -rf "$LIB" && mkdir -p "$LIB"
  mvn -B -q -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$LIB" >"$OUT/mvn.log" 2>&1 \
    || die "Maven could not fetch the framework; see $OUT/mvn.log"
  touch "$LIB/.installed"
fi

# The framework has no port setting: it connects to 5222.
! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 5222), timeout=2)' 2>/dev/null \
  || die "127.0.0.1:5222 is taken; the framework can only connect to 5222 (another XMPP server running?)"

# The framework's three accounts, made as a user makes them.
CONFIG="$OUT/accounts.toml"
: >"$CONFIG"
for who in one two three; do
  echo "sinttest-$who-pw" | "$BIN" xmpp-account "sinttest$who" >>"$CONFIG"
done

SERVER=
stop() { [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=; }; }
trap stop EXIT
for spec in "${SPECS[@]}"; do
  PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$BIN" serve --config "$CONFIG" --listen "127.0.0.1:$PORT" --xmpp-listen 127.0.0.1:5222 >"$OUT/server-$spec.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do
    grep -q "serves XMPP for" "$OUT/server-$spec.log" && break
    kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(cat "$OUT/server-$spec.log")"
    sleep 0.1
  done
  echo "smack: $spec" >&2
  # A reply that takes 10 s is a failure here (the framework waits longer by default).
  java -Dsinttest.service=localhost -Dsinttest.host=127.0.0.1 \
    -Dsinttest.securityMode=disabled -Dsinttest.enabledConnections=tcp -Dsinttest.replyTimeout=10000 \
    -Dsinttest.accountOneUsername=sinttestone -Dsinttest.accountOnePassword=sinttest-one-pw \
    -Dsinttest.accountTwoUsername=sinttesttwo -Dsinttest.accountTwoPassword=sinttest-two-pw \
    -Dsinttest.accountThreeUsername=sinttestthree -Dsinttest.accountThreePassword=sinttest-three-pw \
    -Dsinttest.enabledSpecifications="$spec" \
    -cp "$LIB/*" org.igniterealtime.smack.inttest.SmackIntegrationTestFramework >"$OUT/$spec.log" 2>&1 || true
  stop
done

python3 "$HERE/check.py" "$HERE/known-failures.txt" "${SPECS[@]/#/$OUT/}"
