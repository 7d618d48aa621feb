# Sourced by the scripts that run Java XMPP clients over TLS (smack/run.sh,
# xmpp-interop.sh): `java_tls DIR` makes a self-signed certificate for
# localhost (DIR/cert.pem, DIR/key.pem) and a Java trust store holding it
# (DIR/trust.p12, password changeit), calling the script's `die` on failure.
java_tls() {
  local dir=$1
  rm -rf "$dir" && mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>"$dir/openssl.log" \
    || die "openssl could not make a certificate; see $dir/openssl.log"
  keytool -importcert -noprompt -alias switchboard -file "$dir/cert.pem" -keystore "$dir/trust.p12" \
    -storetype PKCS12 -storepass changeit >"$dir/keytool.log" 2>&1 || die "keytool could not make a trust store; see $dir/keytool.log"
}
