#!/usr/bin/env bash
# The satellite-link study with standard federation (RFC 6120 server-to-server
# streams, STARTTLS, SASL EXTERNAL on certificates, one stream each way): two
# `switchboard serve`, a.test on 127.0.0.2 and b.test on 127.0.0.3, each
# reaching the other through a `switchboard link` of its own (a.test to b.test
# through 127.0.0.4, b.test to a.test through 127.0.0.5) at the study's rates
# and one-way delays, 40 bytes of IP and TCP headers a packet. One user on each
# server, its client on loopback beside it (not through the link); `bench
# federated` times the run's first round trip (both servers just started, no
# stream between them: the streams are set up on the way) and the stable ones.
# Certificates are made here (P-256, one authority, no intermediate). A
# stream between the servers may take 10 minutes to be ready, not the
# default 30 s: at 2400 bit/s and 1 s each way, setting it up takes longer.
#
#   shootout/satellite.sh [OUT-DIR]      (default build/satellite)
#   Each cell runs three times: the stream between the servers set up with
#   STARTTLS (OUT/starttls/), with TLS from the first byte, XEP-0368
#   (OUT/direct-tls/: each server listens for it, and routes say tls:), and
#   the optimised profile (OUT/zero/): each server names the other in
#   [[xmpp_s2s_peer]], a zero-handshake stream (XEP-0361) on port 15271,
#   one connection both ways, deflated, no TLS (the link is declared
#   trusted); and the same over TLS with each server's certificate pinned by
#   the other, not deflated (OUT/zero-tls/); MODES="starttls", "direct-tls",
#   "zero" or "zero-tls" runs one.
#   QUICK=1: payload 2 B, 3 stable round trips a cell, the cells 2400 bit/s
#   with one-way delays of 0 and 1 s and 19,200 bit/s with none, every mode
#   but direct-tls and zero-tls (MODES still picks), one timed login a
#   style; otherwise payloads
#   2, 100, 200 and 500 B, each answered at once and after 5, 10 and 15 s
#   ("typing", taken off the round trip), 5 round trips. RATES (bit/s) and DELAYS override
#   the grid: RATES="2400 19200" DELAYS="0s 500ms 1s", every rate at every
#   delay; or CELLS, a list of RATE-DELAY (QUICK: "2400-0s 2400-1s
#   19200-0s"); SIZES, TYPING and
#   ROUNDS the payloads, the answers' waits and the round trips a cell.
#   Cells with no delay then measure throughput: messages one way back to
#   back, THROUGHPUT payload sizes (10,100,1024,10240; QUICK: 10,100),
#   THROUGHPUT_BYTES of bodies each (2048; QUICK: 1024).
#
#   IRC (OUT/irc-ngircd/, MODES="irc-ngircd"): two ngIRCd 26 servers
#   (peers/ngircd, installed by its install.sh), a.irc on 127.0.0.2 and
#   b.irc on 127.0.0.3, linked as IRC servers link (RFC 2813, one
#   connection, which ngIRCd deflates), a.irc connecting to b.irc through
#   the link on 127.0.0.4; a client on each in one channel (`bench
#   federated --transport irc`). The same payloads (IRC_SIZES: those of
#   SIZES that fit a line, at most 400 B) and typing, and throughput at
#   10 and 100 B (a line is 512 bytes at most), IRC_THROUGHPUT_BYTES (500;
#   QUICK: 100) of bodies each. The peer is installed first if it is not (its
#   install.sh, as root). The same with two ircu 2.10.12 servers, the
#   study's (OUT/irc-ircu/, MODES="irc-ircu", P10, peers/ircu; the link
#   goes to b.irc's server port, 16668; the bench starts once the servers
#   have taken in each other's burst, peers/lib/irc_settled.py, since ircu
#   drops channel messages towards a server still bursting). IRC users of
#   two Switchboard nodes
#   (OUT/irc-switchboard/, MODES="irc-switchboard"): a.irc on 127.0.0.2
#   hosts the rooms (--broker-listen 127.0.0.2:15280) and b.irc on
#   127.0.0.3 links to it (--broker node://…) through the link on
#   127.0.0.4, one deflated connection. The same nodes sharing their rooms
#   through one nats-server beside a.irc instead (OUT/irc-switchboard-nats/,
#   MODES="irc-switchboard-nats"; make nats-server), b.irc's node reaching it
#   through the link; each node takes the other for lost after BROKER_TTL
#   (2m) of silence, not the default 15 s: its heartbeats queue behind
#   messages.
#
#   Prosody (OUT/prosody/, MODES="prosody"): two Prosody 0.12 servers
#   (Debian's, peers/prosody/install.sh if it is not there) in the same
#   places, standard federation as Prosody does it (STARTTLS, certificates
#   checked, one connection both ways: mod_s2s_bidi), each finding the
#   other at its link through a hosts file (peers/prosody/satellite.cfg.lua).
#   ejabberd (OUT/ejabberd/, MODES="ejabberd"): two ejabberd 23.01 servers
#   (Debian's, peers/ejabberd/install.sh if it is not there) likewise, as
#   ejabberd federates (STARTTLS, certificates checked, one connection each
#   way), each in a mount namespace where /etc/hosts names the other's link
#   (peers/ejabberd/satellite.sh; needs root).
#
#   Then client logins over the link (OUT/login/): a.test alone
#   (--tcp-fast-open: a returning client's first flight may come in its SYN;
#   accounts only, no anonymous logins offered, as Prosody and ejabberd by default),
#   its client ports (STARTTLS on 15222, TLS from the first byte on 15223)
#   behind links on 127.0.0.6, and `bench login` timing each style (standard, sasl2, fast)
#   to a first message, LOGINS (2; QUICK: 1) a style; LOGIN_RATES and LOGIN_DELAYS
#   (QUICK=1: 2400 bit/s at 500 ms only; otherwise RATES and DELAYS);
#   MODES="login" runs only these, and leaving it out of MODES none.
#
# Writes OUT/<mode>/<rate>-<delay>.json (bench result files), .link (what
# each link carried) and .txt (the bench's output), OUT/satellite.md,
# the tables beside the study's figures (printed too), and
# OUT/satellite.html, `switchboard report`'s charts of them.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${SWITCHBOARD_BIN:-$ROOT/target/release/switchboard}"
OUT="${1:-$ROOT/build/satellite}"
# QUICK's cells, unless RATES or DELAYS name a grid.
if [ -n "${QUICK:-}" ] && [ -z "${RATES:-}${DELAYS:-}" ]; then CELLS="${CELLS:-2400-0s 2400-1s 19200-0s}"; fi
RATES="${RATES:-2400 19200}"
if [ -n "${QUICK:-}" ]; then LOGINS="${LOGINS:-1}"; DELAYS="${DELAYS:-0s 1s}"; SIZES="${SIZES:-2}"; ROUNDS="${ROUNDS:-3}"; TYPING="${TYPING:-0s}"; THROUGHPUT="${THROUGHPUT:-10,100}"; THROUGHPUT_BYTES="${THROUGHPUT_BYTES:-1024}"; IRC_THROUGHPUT_BYTES="${IRC_THROUGHPUT_BYTES:-100}"; LOGIN_RATES="${LOGIN_RATES:-2400}"; LOGIN_DELAYS="${LOGIN_DELAYS:-500ms}"
  MODES="${MODES:-starttls zero prosody ejabberd irc-ngircd irc-ircu irc-switchboard login}"
else DELAYS="${DELAYS:-0s 500ms 1s}"; SIZES="${SIZES:-2,100,200,500}"; ROUNDS="${ROUNDS:-5}"; TYPING="${TYPING:-0s,5s,10s,15s}"; THROUGHPUT="${THROUGHPUT:-10,100,1024,10240}"; THROUGHPUT_BYTES="${THROUGHPUT_BYTES:-2048}"; LOGIN_RATES="${LOGIN_RATES:-$RATES}"; LOGIN_DELAYS="${LOGIN_DELAYS:-$DELAYS}"; fi
MODES="${MODES:-starttls direct-tls zero zero-tls prosody ejabberd irc-ngircd irc-ircu irc-switchboard login}"
IRC_THROUGHPUT_BYTES="${IRC_THROUGHPUT_BYTES:-500}"
LOGINS="${LOGINS:-2}"
# The grid's cells, RATE-DELAY: CELLS, or every rate at every delay.
if [ -z "${CELLS:-}" ]; then
  CELLS="$(for rate in $RATES; do for delay in $DELAYS; do printf '%s-%s ' "$rate" "$delay"; done; done)"
fi
BROKER_TTL="${BROKER_TTL:-2m}"
STEADY_ROUNDS="${STEADY_ROUNDS:-10}"
die() { echo "satellite: $*" >&2; exit 1; }
[ -x "$BIN" ] || die "no switchboard binary at $BIN; run cargo build --release first"
for ip in 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6; do
  for port in 5269 15222 15223 15269 15270 15271 15280 16667 18080; do
    ! (exec 3<>"/dev/tcp/$ip/$port") 2>/dev/null || die "$ip:$port is taken: is another run going?"
  done
done
mkdir -p "$OUT"
RUN="$(mktemp -d /tmp/switchboard-satellite.XXXXXX)"
pids=()
links=()
# stop_all: the links first, with SIGINT, so that each logs what it carried.
stop_all() {
  for pid in "${links[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${links[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  for pid in "${links[@]}" "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=(); links=()
}
trap 'stop_all; rm -rf "$RUN"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Satellite study authority" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -keyout "$RUN/ca.key" -out "$RUN/ca.pem" 2>/dev/null
for name in a b; do
  printf 'subjectAltName=DNS:%s.test,DNS:conference.%s.test\nextendedKeyUsage=serverAuth,clientAuth\n' "$name" "$name" >"$RUN/$name.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name.test" -keyout "$RUN/$name.key" -out "$RUN/$name.csr" 2>/dev/null
  openssl x509 -req -in "$RUN/$name.csr" -CA "$RUN/ca.pem" -CAkey "$RUN/ca.key" -CAcreateserial -days 2 -extfile "$RUN/$name.ext" -out "$RUN/$name.pem" 2>/dev/null
done
echo pw | "$BIN" xmpp-account alice >"$RUN/a.toml"
echo pw | "$BIN" xmpp-account bob >"$RUN/b.toml"
# The optimised profile: each names the other, reached through its link,
# its connections coming from the link (which connects from 127.0.0.1).
for pair in "a b 127.0.0.4" "b a 127.0.0.5"; do
  set -- $pair
  { cat "$RUN/$1.toml"; printf '[[xmpp_s2s_peer]]\ndomains = ["%s.test", "conference.%s.test"]\naddress = "%s:15271"\nfrom = ["127.0.0.1"]\ncompress = true\n' "$2" "$2" "$3"; } >"$RUN/$1-zero.toml"
  pin="$(openssl x509 -noout -fingerprint -sha256 -in "$RUN/$2.pem" | cut -d= -f2)"
  { cat "$RUN/$1.toml"; printf '[[xmpp_s2s_peer]]\ndomains = ["%s.test", "conference.%s.test"]\naddress = "%s:15271"\nfrom = ["127.0.0.1"]\npin = "%s"\n' "$2" "$2" "$3" "$pin"; } >"$RUN/$1-zero-tls.toml"
done

# wait_for LOG TEXT PID WHO: waits up to 30 s for TEXT in LOG.
wait_for() {
  for _ in $(seq 300); do
    grep -q "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || die "$4 exited: $(tail -n3 "$1")"
    sleep 0.1
  done
  die "$4 did not start in 30 s: $(tail -n3 "$1")"
}

# serve MODE NAME IP OTHER-DOMAIN LINK-IP: the server of NAME.test on IP,
# reaching the other domain through the link on LINK-IP: with STARTTLS on
# port 15269, or TLS from the first byte on 15270.
serve() {
  local mode="$1" name="$2" ip="$3" other="$4" via="$5" log="$RUN/$2-serve.log" route config="$RUN/$2.toml" zero=off
  if [ "$mode" = direct-tls ]; then route="tls:$via:15270"; else route="$via:15269"; fi
  case "$mode" in zero|zero-tls) config="$RUN/$name-$mode.toml"; zero="$ip:15271" ;; esac
  "$BIN" serve --config "$config" --xmpp-s2s-zero-listen "$zero" --store memory --listen "$ip:18080" --xmpp-listen "$ip:15222" \
    --irc-listen off --irc-tls-listen off --xmpp-domain "$name.test" --tls-cert "$RUN/$name.pem" --tls-key "$RUN/$name.key" \
    --xmpp-plain-unencrypted true --xmpp-s2s-listen "$ip:15269" --xmpp-s2s-trust "$RUN/ca.pem" --xmpp-s2s-connect-timeout 10m \
    --xmpp-s2s-tls-listen "$ip:15270" --xmpp-s2s-routes "$other=$route,conference.$other=$route" >"$log" 2>&1 &
  pids+=($!)
  wait_for "$log" "federates $name.test" $! "the $name.test server"
}

# link IP PORT UPSTREAM RATE DELAY: one emulated line each way, IP:PORT to UPSTREAM.
link() {
  local log="$RUN/link-$1-$2.log"
  "$BIN" link --listen "$1:$2" --upstream "$3" --rate "${4}bit" --delay "$5" --overhead 40 >"$log" 2>&1 &
  links+=($!)
  wait_for "$log" "listening on" $! "the link on $1"
}

# end_cell CELL STATUS WHAT: stops the cell's servers and links, keeps what
# crossed each link both ways (handshakes and messages) in CELL.link, and
# stops the run if the bench failed (STATUS, its exit status).
end_cell() {
  stop_all
  grep -h "link stopped" "$RUN"/link-*.log >"$1.link" || true
  rm -f "$RUN"/link-*.log
  [ "$2" = 0 ] || die "the bench failed ($3): $(tail -n5 "$1.txt")"
}

# prosody_serve NAME IP OTHER-DOMAIN LINK-IP USER: Prosody for NAME.test on
# IP, finding the other domain at LINK-IP, with the account USER (password pw).
prosody_serve() {
  local name="$1" ip="$2" other="$3" via="$4" user="$5" dir="$RUN/prosody-$1"
  rm -rf "$dir"
  mkdir -p "$dir/data" "$dir/certs"
  printf '%s %s\n' "$via" "$other" >"$dir/hosts"
  printf 'nameserver 127.0.0.1\n' >"$dir/resolv.conf"
  sed -e "s|@DIR@|$dir|g" -e "s|@DOMAIN@|$name.test|g" -e "s|@ADDRESS@|$ip|g" -e "s|@CERT@|$RUN/$name.pem|g" -e "s|@KEY@|$RUN/$name.key|g" \
    -e "s|@CA@|$RUN/ca.pem|g" -e "s|@HOSTS@|$dir/hosts|g" -e "s|@RESOLV@|$dir/resolv.conf|g" "$ROOT/peers/prosody/satellite.cfg.lua" >"$dir/prosody.cfg.lua"
  prosodyctl --config "$dir/prosody.cfg.lua" register "$user" "$name.test" pw >"$dir/register.log" 2>&1 || die "prosodyctl register failed: $(tail -n3 "$dir/register.log")"
  (cd "$dir" && exec prosody --config "$dir/prosody.cfg.lua" -F) >"$dir/log" 2>&1 &
  pids+=($!)
  wait_for "$dir/log" "Activated service 'c2s' on \[$ip\]:15222" $! "prosody for $name.test"
}

# ejabberd_serve NAME IP OTHER-DOMAIN LINK-IP USER: ejabberd for NAME.test on
# IP, finding the other domain at LINK-IP, with the account USER (password pw).
ejabberd_serve() {
  "$ROOT/peers/ejabberd/satellite.sh" "$RUN/ejabberd-$1" "$1.test" "$2" "$3" "$4" "$RUN/$1.pem" "$RUN/$1.key" "$RUN/ca.pem" "$5" \
    >"$RUN/ejabberd-$1.out" 2>"$RUN/ejabberd-$1.log" &
  pids+=($!)
  wait_for "$RUN/ejabberd-$1.out" "ejabberd $1.test ready" $! "ejabberd for $1.test"
}

# irc_peers PEER RATE DELAY: two linked IRC servers (PEER: ngircd or ircu),
# a.irc reaching b.irc through the link on 127.0.0.4 (to b.irc's client port
# for ngIRCd; ircu takes servers on a port of their own, the next one).
irc_peers() {
  local to=16667
  [ "$1" != ircu ] || to=16668
  link 127.0.0.4 16667 "127.0.0.3:$to" "$2" "$3"
  IRC_ADDRESS=127.0.0.3 IRC_NAME=b.irc IRC_PEER=a.irc "$ROOT/peers/$1/start.sh" 16667 >"$RUN/b-irc.out" 2>"$RUN/b-irc.log" &
  pids+=($!)
  wait_for "$RUN/b-irc.out" "irc on 127.0.0.3:16667" $! "the b.irc server"
  IRC_ADDRESS=127.0.0.2 IRC_NAME=a.irc IRC_PEER=b.irc IRC_PEER_CONNECT=127.0.0.4:16667 "$ROOT/peers/$1/start.sh" 16667 >"$RUN/a-irc.out" 2>"$RUN/a-irc.log" &
  pids+=($!)
  wait_for "$RUN/a-irc.out" "irc on 127.0.0.2:16667" $! "the a.irc server"
  # ircu drops, silently, a channel message bound for a server whose link
  # is still bursting (until that server acknowledged the burst): clients
  # that join and talk at once lose their first messages. Its clients come
  # once both servers have taken in the other's burst.
  if [ "$1" = ircu ]; then
    python3 "$ROOT/peers/lib/irc_settled.py" 127.0.0.2:16667 127.0.0.3:16667 600 || die "the ircu servers did not settle"
  fi
}

# irc_nodes HOW RATE DELAY: two Switchboard nodes sharing their rooms. HOW
# "link": a.irc's node hosts them on 127.0.0.2:15280, b.irc's links to it
# through the link on 127.0.0.4. HOW "nats": through one nats-server
# (JetStream) beside a.irc's, on 127.0.0.2:14222, b.irc's node reaching it
# through the link on 127.0.0.4; each takes the other for lost after
# BROKER_TTL of silence.
irc_nodes() {
  local how="$1" node shares
  if [ "$how" = link ]; then
    link 127.0.0.4 15280 127.0.0.2:15280 "$2" "$3"
  else
    link 127.0.0.4 14222 127.0.0.2:14222 "$2" "$3"
    rm -rf "$RUN/nats"
    nats-server -js -a 127.0.0.2 -p 14222 -sd "$RUN/nats" >"$RUN/nats.log" 2>&1 &
    pids+=($!)
    wait_for "$RUN/nats.log" "Server is ready" $! "nats-server"
  fi
  for node in "a 127.0.0.2 127.0.0.2" "b 127.0.0.3 127.0.0.4"; do
    set -- $node
    if [ "$how" = nats ]; then shares=(--broker "nats://$3:14222" --broker-ttl "$BROKER_TTL")
    elif [ "$1" = a ]; then shares=(--broker-listen 127.0.0.2:15280)
    else shares=(--broker "node://$3:15280"); fi
    "$BIN" serve --store memory --listen "$2:18080" --xmpp-listen off --xmpp-s2s-listen off --irc-listen "$2:16667" --irc-tls-listen off \
      "${shares[@]}" >"$RUN/$1-serve.log" 2>&1 &
    pids+=($!)
    wait_for "$RUN/$1-serve.log" "serves IRC" $! "the $1.irc node"
  done
}

# irc_cell MODE RATE DELAY: IRC users on two servers (irc-ngircd, irc-ircu:
# linked servers; irc-switchboard: two Switchboard nodes), a client on each
# in one channel, and `bench federated --transport irc`. Then, with
# STEADY_ROUNDS (10; 0 for none), the same cell again with that many more
# round trips: what those cost the link over what the first run's did is
# the cost of a message once the servers are linked and the clients in the
# channel (CELL.steady, the second run's links and the extra round trips).
irc_cell() {
  local mode="$1" rate="$2" delay="$3" cell="$OUT/$1/$2-$3" status=0 sizes streams=() extra
  sizes="$(printf '%s' "$SIZES" | tr ',' '\n' | awk '$1 <= 400' | paste -sd, -)"
  [ -n "$sizes" ] || die "no payload of SIZES ($SIZES) fits an IRC line (400 B at most here)"
  if [ "$delay" = 0s ] && [ -n "$THROUGHPUT" ]; then streams=(--throughput 10,100 --throughput-bytes "$IRC_THROUGHPUT_BYTES"); fi
  for extra in 0 ${STEADY_ROUNDS#0}; do
    case "$mode" in
      irc-switchboard) irc_nodes link "$rate" "$delay" ;;
      irc-switchboard-nats) irc_nodes nats "$rate" "$delay" ;;
      *) irc_peers "${mode#irc-}" "$rate" "$delay" ;;
    esac
    local out="$cell" ; [ "$extra" = 0 ] || out="$cell-steady"
    "$BIN" bench federated --quiet --transport irc --target "$mode=irc://127.0.0.2:16667" --peer-irc 127.0.0.3:16667 \
      --via-link "rate=${rate}bit,delay=$delay,overhead=40" --sizes "$sizes" --typing "$TYPING" --round-trips "$((ROUNDS + extra))" "${streams[@]}" \
      --timeout 600s --out "$out.part" >"$out.txt" 2>&1 || status=$?
    if [ "$extra" = 0 ]; then
      mv "$out.part" "$cell.json"
      end_cell "$cell" "$status" "$mode, $rate bit/s, $delay"
    else
      rm -f "$out.part"
      end_cell "$out" "$status" "$mode, $rate bit/s, $delay, $extra more round trips"
      { echo "extra_round_trips=$extra"; cat "$out.link"; } >"$cell.steady"
      rm -f "$out.link" "$out.txt"
    fi
  done
}

# login_cell RATE DELAY: a.test alone, its client ports behind links on
# 127.0.0.6, and `bench login` through them.
login_cell() {
  local rate="$1" delay="$2" log="$RUN/a-serve.log" cell="$OUT/login/$1-$2" status=0
  local tfo; tfo="$(cat /proc/sys/net/ipv4/tcp_fastopen)"
  [ $(( tfo & 3 )) = 3 ] || { echo $(( tfo | 3 )) >/proc/sys/net/ipv4/tcp_fastopen; } 2>/dev/null ||
    echo "satellite: net.ipv4.tcp_fastopen is not 3 and cannot be set: logins open without TCP Fast Open" >&2
  link 127.0.0.6 15222 127.0.0.2:15222 "$rate" "$delay"
  link 127.0.0.6 15223 127.0.0.2:15223 "$rate" "$delay"
  "$BIN" serve --config "$RUN/a.toml" --store memory --listen 127.0.0.2:18080 --xmpp-listen 127.0.0.2:15222 \
    --xmpp-tls-listen 127.0.0.2:15223 --irc-listen off --irc-tls-listen off --xmpp-s2s-listen off --xmpp-domain a.test \
    --tls-cert "$RUN/a.pem" --tls-key "$RUN/a.key" --xmpp-login-timeout 10m --tcp-fast-open true --xmpp-anonymous false >"$log" 2>&1 &
  pids+=($!)
  wait_for "$log" "serves XMPP" $! "the a.test server"
  "$BIN" bench login --quiet --target "switchboard=http://127.0.0.6:18080" --via-link "rate=${rate}bit,delay=$delay,overhead=40" --server-pid "${pids[-1]}" --xmpp-domain a.test \
    --xmpp-user alice --xmpp-password pw --xmpp-port 15222 --xmpp-tls-port 15223 --tls-trust "$RUN/ca.pem" \
    --logins "$LOGINS" --timeout 600s --out "$cell.json" >"$cell.txt" 2>&1 || status=$?
  end_cell "$cell" "$status" "login, $rate bit/s, $delay"
}

for mode in $MODES; do
  mkdir -p "$OUT/$mode"
  if [ "$mode" = login ]; then
    for rate in $LOGIN_RATES; do
      for delay in $LOGIN_DELAYS; do
        echo "satellite: client logins, ${rate} bit/s, one-way delay $delay" >&2
        login_cell "$rate" "$delay"
      done
    done
    continue
  fi
  case "$mode" in
    irc-ngircd|irc-ircu|irc-switchboard|irc-switchboard-nats)
      if [ "$mode" = irc-switchboard-nats ]; then
        command -v nats-server >/dev/null || die "irc-switchboard-nats needs nats-server: make nats-server"
      elif [ "$mode" != irc-switchboard ]; then
        "$ROOT/peers/${mode#irc-}/install.sh" >"$RUN/install.log" 2>&1 || die "installing ${mode#irc-} failed: $(tail -n3 "$RUN/install.log")"
      fi
      for pair in $CELLS; do
        rate="${pair%%-*}" delay="${pair#*-}"
        echo "satellite: $mode, ${rate} bit/s, one-way delay $delay" >&2
        irc_cell "$mode" "$rate" "$delay"
      done
      continue ;;
    irc-*) die "MODES: $mode is not a mode (IRC: irc-ngircd, irc-ircu, irc-switchboard, irc-switchboard-nats)" ;;
  esac
  case "$mode" in
    prosody|ejabberd) "$ROOT/peers/$mode/install.sh" >"$RUN/install.log" 2>&1 || die "installing $mode failed: $(tail -n3 "$RUN/install.log")" ;;
  esac
  case "$mode" in direct-tls) port=15270 ;; zero|zero-tls) port=15271 ;; prosody|ejabberd) port=5269 ;; *) port=15269 ;; esac
  for pair in $CELLS; do
    rate="${pair%%-*}" delay="${pair#*-}"
    echo "satellite: $mode, ${rate} bit/s, one-way delay $delay" >&2
    link 127.0.0.4 "$port" "127.0.0.3:$port" "$rate" "$delay"
    link 127.0.0.5 "$port" "127.0.0.2:$port" "$rate" "$delay"
    if [ "$mode" = prosody ] || [ "$mode" = ejabberd ]; then
      "${mode}_serve" a 127.0.0.2 b.test 127.0.0.4 alice
      "${mode}_serve" b 127.0.0.3 a.test 127.0.0.5 bob
    else
      serve "$mode" a 127.0.0.2 b.test 127.0.0.4
      serve "$mode" b 127.0.0.3 a.test 127.0.0.5
    fi
    cell="$OUT/$mode/$rate-$delay"
    status=0
    streams=()
    if [ "$delay" = 0s ] && [ -n "$THROUGHPUT" ]; then streams=(--throughput "$THROUGHPUT" --throughput-bytes "$THROUGHPUT_BYTES"); fi
    "$BIN" bench federated --quiet --target "$mode=http://127.0.0.2:18080" --via-link "rate=${rate}bit,delay=$delay,overhead=40" --xmpp-port 15222 --xmpp-domain a.test \
      --xmpp-user alice --xmpp-password pw --peer-domain b.test --peer-xmpp 127.0.0.3:15222 --peer-user bob \
      --sizes "$SIZES" --typing "$TYPING" --round-trips "$ROUNDS" "${streams[@]}" --timeout 600s --out "$cell.json" >"$cell.txt" 2>&1 || status=$?
    end_cell "$cell" "$status" "$mode, $rate bit/s, $delay"
  done
done
python3 "$ROOT/shootout/satellite_table.py" "$OUT" | tee "$OUT/satellite.md"
# The report: the same figures as charts beside the study's.
"$BIN" report "$OUT"/*/*.json --title "The satellite-link study" -o "$OUT/satellite.html" >/dev/null
echo "satellite: charts in $OUT/satellite.html" >&2
