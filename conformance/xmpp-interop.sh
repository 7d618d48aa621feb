#!/usr/bin/env bash
# The public XMPP-Interop-Testing suite (the server-oriented extension of
# Smack's integration tests: github XMPP-Interop-Testing/
# smack-sint-server-extensions, tag v1.6.0, on Smack 4.5.0-beta5) against
# `switchboard serve`, as a new user runs it: the suite makes its accounts
# by in-band registration, which it does only over TLS, so the server gets a
# certificate made here and the JVM is told to trust it. XEP-0133 (service
# administration) is left out: the server has no admin account. The suite
# registers every account it makes later over one connection it opens at the
# start and never logs in, so the server's login deadline
# (--xmpp-login-timeout, 1 min) is lifted to the length of a run: at the
# default, that connection is closed under it, and the first account made
# after a minute (the low-level tests') is refused by Smack itself as
# "Creating account over insecure connection", which ends the run. Rooms
# start non-anonymous (--xmpp-muc-non-anonymous): XEP-0045's tests want a
# participant of a default room to read its owner list, and one of a
# semi-anonymous room refused it; only owners read it in a semi-anonymous
# room, our default.
#
#   conformance/xmpp-interop.sh PATH-TO-CHECKOUT [SPEC,SPEC...] [CLASS,CLASS...]
#
# Builds the suite's jar with Maven (`mvn -DskipTests package`) if the
# checkout has none, runs it (every specification, or those given) against
# a fresh server on 127.0.0.1:5222 (the suite has no port setting; test
# classes, if given, narrow it to those, e.g. MultiUserChatOwnerIntegrationTest), and
# prints the table of passed, failed and not possible tests by
# specification (conformance/xmpp_interop_table.py). Logs in
# build/xmpp-interop/. The suite is a repository, not a package, so
# `make test` cannot fetch it; a full run takes about an hour here: many
# tests wait out their reply timeout to see that nothing comes.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
CHECKOUT="$(cd "${1:?usage: conformance/xmpp-interop.sh PATH-TO-CHECKOUT [SPEC,...]}" && pwd)"
ONLY="${2:-}"
CLASSES="${3:-}"
# The release build: a debug build's key derivation makes each of the
# suite's many registrations and logins slow.
BIN="${SWITCHBOARD_BIN:-$ROOT/target/release/switchboard}"
OUT="$ROOT/build/xmpp-interop"
die() { echo "xmpp-interop: FAILED: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "no switchboard binary at $BIN; run cargo build --release first"
command -v java >/dev/null && command -v mvn >/dev/null || die "no java or mvn: \`make jdk\` installs Debian's"
mkdir -p "$OUT"
JAR="$(ls "$CHECKOUT"/target/smack-sint-server-extensions-*-jar-with-dependencies.jar 2>/dev/null | head -1 || true)"
if [ -z "$JAR" ]; then
  echo "xmpp-interop: building the suite in $CHECKOUT" >&2
  (cd "$CHECKOUT" && mvn -B -q -DskipTests package) >"$OUT/mvn.log" 2>&1 || die "Maven could not build the suite; see $OUT/mvn.log"
  JAR="$(ls "$CHECKOUT"/target/smack-sint-server-extensions-*-jar-with-dependencies.jar | head -1)"
fi
! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 5222), timeout=2)' 2>/dev/null \
  || die "127.0.0.1:5222 is taken; the suite can only connect to 5222"

TLS="$OUT/tls"
source "$HERE/java-tls.sh"
java_tls "$TLS"

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BIN" serve --store memory --listen "127.0.0.1:$PORT" --xmpp-listen 127.0.0.1:5222 --irc-listen off --irc-tls-listen off \
  --tls-cert "$TLS/cert.pem" --tls-key "$TLS/key.pem" --xmpp-registration 100000 --xmpp-s2s-listen off \
  --xmpp-login-timeout 3h --xmpp-muc-non-anonymous true >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "serves XMPP for" "$OUT/server.log" && break
  kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(cat "$OUT/server.log")"
  sleep 0.1
done

select=(-Dsinttest.disabledSpecifications=XEP-0133)
[ -z "$ONLY" ] || select+=(-Dsinttest.enabledSpecifications="$ONLY")
[ -z "$CLASSES" ] || select+=(-Dsinttest.enabledTests="$CLASSES")
echo "xmpp-interop: running the suite (${ONLY:-every specification}); log in $OUT/suite.log" >&2
java -Dsinttest.service=localhost -Dsinttest.host=127.0.0.1 -Dsinttest.enabledConnections=tcp \
  -Dsinttest.securityMode=required -Dsinttest.replyTimeout=5000 "${select[@]}" \
  -Djavax.net.ssl.trustStore="$TLS/trust.p12" -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=PKCS12 \
  -jar "$JAR" >"$OUT/suite.log" 2>&1 || true
python3 "$HERE/xmpp_interop_table.py" "$JAR" "$OUT/suite.log"
