#!/usr/bin/env bash
# The Smack integration test framework (Maven Central's
# smack-integration-test) against `switchboard serve`'s XMPP, one
# specification per run (in one run, one test's failure can close the shared
# connection and fail the tests after it), each against a fresh server with
# the framework's three accounts; then the framework's tests that name no
# specification ("core": logins, connections, messages between users) over
# STARTTLS with a certificate made here, the framework making its own
# accounts by in-band registration; then check.py on the runs' logs. Each
# server keeps its store as `make run`'s does, in SQLite (a fresh folder per
# run), so the specifications backed by storage (rosters, the archive,
# persistent rooms) are tested on it.
# Installs the framework into build/smack/lib with Maven on first use.
#
#   conformance/smack/run.sh             # SWITCHBOARD_BIN picks the binary (default target/debug)
#   conformance/smack/run.sh XEP-0045    # one specification (or core)
#   SMACK_JAVA_OPTS=-Dsinttest.debugger=console conformance/smack/run.sh core   # every stanza in the logs
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${SWITCHBOARD_BIN:-$ROOT/target/debug/switchboard}"
OUT="$ROOT/build/smack"
LIB="$OUT/lib"
SPECS=("${@:-RFC6120 RFC6121 XEP-0030 XEP-0045 XEP-0198 XEP-0199 XEP-0313 core}")
# The tests that name no specification, but for those of features the
# server does not offer (file transfer, pubsub, IoT, OMEMO, OpenPGP ...).
CORE=LoginIntegrationTest,XmppConnectionIntegrationTest,SimpleXmppConnectionIntegrationTest,IncomingMessageListenerIntegrationTest,OutgoingMessageListenerIntegrationTest,ModularXmppClientToServerConnectionLowLevelIntegrationTest,LowLevelRosterIntegrationTest
SPECS=(${SPECS[*]})
die() { echo "smack: FAILED: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "no switchboard binary at $BIN; run cargo build first"
command -v java >/dev/null || die "no java: \`make test-smack\` installs Debian's default-jdk-headless"
command -v mvn >/dev/null || die "no mvn: \`make test-smack\` installs Debian's maven"
command -v openssl >/dev/null || die "no openssl, which makes the core run's certificate"
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

# The core run's certificate for localhost, and a Java trust store with it.
TLS="$OUT/tls"
source "$HERE/../java-tls.sh"
java_tls "$TLS"

SERVER=
stop() { [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=; }; }
trap stop EXIT
# One run of the framework for specification `$1`, against a fresh server;
# its log is build/smack/$2.log. `$3`, if given, names the only tests to run
# (Class.method, comma-separated).
run_spec() {
  local spec=$1 log=$2 only=${3:-}
  PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  if [ "$spec" = core ]; then
    serve=(--tls-cert "$TLS/cert.pem" --tls-key "$TLS/key.pem" --xmpp-registration 1000 --xmpp-s2s-listen off)
    framework=(-Djavax.net.ssl.trustStore="$TLS/trust.p12" -Djavax.net.ssl.trustStorePassword=changeit
      -Djavax.net.ssl.trustStoreType=PKCS12 -Dsinttest.securityMode=required -Dsinttest.enabledTests="$CORE")
  else
    serve=(--config "$CONFIG")
    # The framework's MAM tests name no specification: they are chosen by class.
    if [ "$spec" = XEP-0313 ]; then select=(-Dsinttest.enabledTests=MamIntegrationTest); else select=(-Dsinttest.enabledSpecifications="$spec"); fi
    framework=(-Dsinttest.securityMode=disabled "${select[@]}"
      -Dsinttest.accountOneUsername=sinttestone -Dsinttest.accountOnePassword=sinttest-one-pw
      -Dsinttest.accountTwoUsername=sinttesttwo -Dsinttest.accountTwoPassword=sinttest-two-pw
      -Dsinttest.accountThreeUsername=sinttestthree -Dsinttest.accountThreePassword=sinttest-three-pw)
  fi
  # The last of a property given twice is the one Java keeps.
  [ -z "$only" ] || framework+=(-Dsinttest.enabledTests="$only")
  rm -rf "$OUT/data-$log"
  "$BIN" serve "${serve[@]}" --data-dir "$OUT/data-$log" --listen "127.0.0.1:$PORT" --xmpp-listen 127.0.0.1:5222 --irc-listen off --irc-tls-listen off >"$OUT/server-$log.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do
    grep -q "serves XMPP for" "$OUT/server-$log.log" && break
    kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(cat "$OUT/server-$log.log")"
    sleep 0.1
  done
  # A reply that takes 10 s is a failure here (the framework waits longer by default).
  java ${SMACK_JAVA_OPTS:-} -Dsinttest.service=localhost -Dsinttest.host=127.0.0.1 \
    -Dsinttest.enabledConnections=tcp -Dsinttest.replyTimeout=10000 "${framework[@]}" \
    -cp "$LIB/*" org.igniterealtime.smack.inttest.SmackIntegrationTestFramework >"$OUT/$log.log" 2>&1 || true
  stop
  rm -rf "$OUT/data-$log"
}

# Some of the framework's tests race with its own listeners (see
# docs/xmpp.md): a test that fails, and is not a known failure, runs again on its
# own against a fresh server, up to three more times; its last run decides,
# and check.py prints the failure of its first.
for spec in "${SPECS[@]}"; do
  rm -f "$OUT/$spec".log "$OUT/$spec".again*.log
  echo "smack: $spec" >&2
  run_spec "$spec" "$spec"
  for again in 1 2 3; do
    only="$(python3 "$HERE/check.py" --again "$HERE/known-failures.txt" "$OUT/$spec")"
    [ -n "$only" ] || break
    echo "smack: $spec: running again on its own ($again of 3): ${only//,/ }" >&2
    run_spec "$spec" "$spec.again$again" "$only"
  done
done

python3 "$HERE/check.py" "$HERE/known-failures.txt" "${SPECS[@]/#/$OUT/}"
