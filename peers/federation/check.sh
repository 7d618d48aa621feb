#!/usr/bin/env bash
# Federation beside the servers people run: Switchboard (sb.internal),
# Prosody 0.12.3 (prosody.internal, with mod_s2s_bidi) and ejabberd 23.01
# (ejabberd.internal), each its own domain on its own loopback address
# (127.0.0.11, .12, .13), with certificates from an authority made here.
# The domains are under .internal, the top-level domain kept for private
# use: libunbound, which Prosody resolves with, answers every name under
# .test (RFC 6761) NXDOMAIN itself, asking no server.
# The three find each other through a dnsmasq on 127.0.0.10 that serves
# each domain's A and _xmpp-server._tcp SRV records (Switchboard with
# --xmpp-s2s-dns, Prosody through libunbound, ejabberd through
# ERL_INETRC and a hosts file of its own). slixmpp users on each server
# message the users of the others and share a MUC room on each
# (check.py).
#
# Usage: peers/federation/check.sh   (exits 0 when every check passed)
#   Installs prosody, ejabberd and dnsmasq-base with apt-get (their
#   daemons kept off), slixmpp (make xmpp-clients) and builds switchboard
#   if they are missing. Needs root (apt-get, port 53 for dnsmasq).
#   LOGLEVEL=debug shows the servers' logs; KEEP=1 keeps the folder.
set -euo pipefail
PEER=federation
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
ROOT="$(cd "$PEERS_DIR/.." && pwd)"
HERE="$PEERS_DIR/federation"
BIN="${SWITCHBOARD_BIN:-$ROOT/target/debug/switchboard}"
PYTHON="$ROOT/build/xmpp/venv/bin/python"
LOGLEVEL="${LOGLEVEL:-warn}"
DNS=127.0.0.10
declare -A AT=([sb]=127.0.0.11 [prosody]=127.0.0.12 [ejabberd]=127.0.0.13)

# What it needs.
missing=()
for pkg in prosody ejabberd dnsmasq-base; do
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$pkg")
done
[ "${#missing[@]}" = 0 ] || apt_install_quiet "${missing[@]}"
disable_system_service prosody prosody
disable_system_service ejabberd ejabberd
check_no_system_daemon prosody
check_no_system_daemon ejabberd
[ -x "$PYTHON" ] || make -C "$ROOT" xmpp-clients >&2
[ -x "$BIN" ] || (cd "$ROOT" && cargo build -q)
for ip in "${AT[@]}" "$DNS"; do
  for port in 53 5222 5269; do
    ! (exec 3<>"/dev/tcp/$ip/$port") 2>/dev/null || die "$ip:$port is taken: is another check running?"
  done
done

RUN="$(mktemp -d /tmp/switchboard-federation.XXXXXX)"
pids=()
finish() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then rm -rf "$RUN"; else say "kept $RUN"; fi
}
trap finish EXIT

# The authority, and a certificate for each domain and its MUC service.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Federation check authority" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -keyout "$RUN/ca.key" -out "$RUN/ca.pem" 2>/dev/null
for name in "${!AT[@]}"; do
  domain="$name.internal"
  printf 'subjectAltName=DNS:%s,DNS:conference.%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$domain" "$domain" >"$RUN/$name.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$domain" -keyout "$RUN/$name.key" -out "$RUN/$name.csr" 2>/dev/null
  openssl x509 -req -in "$RUN/$name.csr" -CA "$RUN/ca.pem" -CAkey "$RUN/ca.key" -CAcreateserial -days 2 -extfile "$RUN/$name.ext" -out "$RUN/$name.pem" 2>/dev/null
  # Prosody and ejabberd run as root here, but read their key as any user would.
  chmod 644 "$RUN/$name.key"
done

# The names: A records for each domain and its subdomains, SRV records
# for each domain and its MUC service.
dns=(--keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --local=/internal/ --bind-interfaces --listen-address="$DNS" --port=53 --user=root --pid-file=)
for name in "${!AT[@]}"; do
  dns+=(--address="/$name.internal/${AT[$name]}")
  for domain in "$name.internal" "conference.$name.internal"; do dns+=(--srv-host="_xmpp-server._tcp.$domain,$name.internal,5269"); done
done
dnsmasq "${dns[@]}" --log-queries --log-facility="$RUN/dnsmasq.log" &
pids+=($!)
printf 'nameserver %s\n' "$DNS" >"$RUN/resolv.conf"

wait_port() { # HOST PORT PID WHAT
  local i
  for ((i = 0; i < 600; i++)); do
    kill -0 "$3" 2>/dev/null || die "$4 exited; see above"
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  die "$4 is not listening on $1:$2 after a minute"
}

# Switchboard: alice@sb.internal, finding the other two through dnsmasq.
"$BIN" xmpp-account alice <<<"pw" >"$RUN/sb.toml"
RUST_LOG="$LOGLEVEL" "$BIN" serve --listen "${AT[sb]}:0" --store memory --config "$RUN/sb.toml" --xmpp-domain sb.internal \
  --xmpp-listen "${AT[sb]}:5222" --irc-listen off --irc-tls-listen off --tls-cert "$RUN/sb.pem" --tls-key "$RUN/sb.key" --xmpp-s2s-listen "${AT[sb]}:5269" \
  --xmpp-s2s-trust "$RUN/ca.pem" --xmpp-s2s-dns "$DNS:53" >&2 &
pids+=($!)
wait_port "${AT[sb]}" 5269 $! switchboard

# Prosody: pat@prosody.internal.
mkdir -p "$RUN/prosody"
fill_template "$HERE/prosody.cfg.lua" "$RUN/prosody/prosody.cfg.lua" IP="${AT[prosody]}" DATA="$RUN/prosody" CERT="$RUN/prosody.pem" \
  KEY="$RUN/prosody.key" CA="$RUN/ca.pem" RESOLV="$RUN/resolv.conf" LOGLEVEL="$LOGLEVEL"
/usr/bin/prosodyctl --config "$RUN/prosody/prosody.cfg.lua" register pat prosody.internal pw >&2
(cd "$RUN/prosody" && exec /usr/bin/prosody --config "$RUN/prosody/prosody.cfg.lua" -F >&2) &
pids+=($!)
wait_port "${AT[prosody]}" 5269 $! prosody

# ejabberd: ed@ejabberd.internal, as peers/ejabberd/node.sh runs a node (no epmd).
E="$RUN/ejabberd"
mkdir -p "$E/home"
fill_template "$HERE/ejabberd.yml" "$E/ejabberd.yml" IP="${AT[ejabberd]}" CERT="$RUN/ejabberd.pem" KEY="$RUN/ejabberd.key" CA="$RUN/ca.pem" \
  LOGLEVEL="$([ "$LOGLEVEL" = warn ] && echo warning || echo "$LOGLEVEL")"
# SRV records from dnsmasq (Erlang's resolver, ERL_INETRC); the address of
# an SRV record's target from the C library's getaddrinfo, which reads
# /etc/hosts: ejabberd runs in a mount namespace of its own where a hosts
# file made here is /etc/hosts, so the system's is left alone.
printf '%s\n' '{lookup, ["file", "dns"]}.' '{host, {127,0,0,1}, ["localhost"]}.' "{resolv_conf, \"$RUN/resolv.conf\"}." >"$E/inetrc"
{
  printf '127.0.0.1 localhost\n'
  for name in "${!AT[@]}"; do printf '%s %s.internal conference.%s.internal\n' "${AT[$name]}" "$name" "$name"; done
} >"$E/hosts"
head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z' >"$E/home/.erlang.cookie"
chmod 400 "$E/home/.erlang.cookie"
dist="$(free_port)"
libs="$(sed -n "s/^ERL_LIBS='\(.*\)'\$/\1/p" /usr/sbin/ejabberdctl)"
erl_env=(env EJABBERD_CONFIG_PATH="$E/ejabberd.yml" EJABBERD_LOG_PATH="$E/ejabberd.log" ERL_INETRC="$E/inetrc" ERL_LIBS="$libs"
  ERL_CRASH_DUMP_BYTES=0 HOME="$E/home")
dist_args=(-start_epmd false -erl_epmd_port "$dist" -kernel inet_dist_use_interface '{127,0,0,1}')
(cd "$E" && exec unshare --mount --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$E/hosts" \
  "${erl_env[@]}" /usr/bin/erl -sname fed@localhost "${dist_args[@]}" -mnesia dir "\"$E/db\"" \
  -eval 'os:set_signal(sigterm, default)' -s ejabberd -noinput >&2) &
pids+=($!)
wait_port "${AT[ejabberd]}" 5269 $! ejabberd
# The node answers ejabberdctl a moment after its ports open.
for try in $(seq 1 50); do
  "${erl_env[@]}" /usr/bin/erl -sname "ctl$$-$try@localhost" -hidden -noinput "${dist_args[@]}" -dist_listen false \
    -s ejabberd_ctl -extra fed@localhost --no-timeout register ed ejabberd.internal pw >"$E/register.log" 2>&1 && break
  [ "$try" -lt 50 ] || die "ejabberdctl register failed: $(cat "$E/register.log")"
  sleep 0.2
done

"$PYTHON" "$HERE/check.py" "$RUN/ca.pem" "sb.internal=${AT[sb]}" "prosody.internal=${AT[prosody]}" "ejabberd.internal=${AT[ejabberd]}"
