#!/usr/bin/env bash
# Installs the ejabberd peer: Debian's ejabberd (23.01 in bookworm) with
# apt-get, none of its daemons started (a policy-rc.d forbids it for the
# apt-get run) and the system service kept off (stopped if it runs, removed
# from boot); then the peer's database in peers/ejabberd/data/seed, which
# every start copies: the accounts bench0 … bench<N-1> with password bench
# (N = $XMPP_ACCOUNTS, default 10000), imported in one `ejabberdctl
# import_piefxis` of a generated XEP-0227 file, and the persistent room
# bench@conference.localhost (`ejabberdctl create_room_with_opts`). The
# database is made by a node of its own on free loopback ports.
#
# Idempotent: apt-get is skipped when the package is installed, the
# database when it holds the same accounts for the same configuration.
# Needs root (apt-get, policy-rc.d). Prints one line with the versions.
set -euo pipefail
PEER=ejabberd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
DIR="$PEERS_DIR/$PEER"
DATA="$DIR/data"

if [ "$(dpkg-query -W -f='${Status}' ejabberd 2>/dev/null || true)" != "install ok installed" ]; then
  apt_install_quiet ejabberd
fi
version="$(dpkg-query -W -f='${Version}' ejabberd)"
case "$version" in 23.01*) ;; *) say "warning: Debian's ejabberd is $version; the peer was made for 23.01" ;; esac
disable_system_service ejabberd ejabberd
check_no_system_daemon ejabberd
. "$DIR/node.sh"
[ -n "$EJABBERD_ERL_LIBS" ] || die "cannot read ERL_LIBS from /usr/sbin/ejabberdctl"

# What the database depends on: the accounts, and the configuration it was
# made with (hosts, password format, modules).
stamp="accounts=$XMPP_ACCOUNTS config=$(cat "$DIR/ejabberd.yml" "$DIR/accounts.py" | sha1sum | cut -c1-12)"

# The node make_seed runs, stopped on any failure.
seed_pid=""
trap '[ -z "$seed_pid" ] || kill "$seed_pid" 2>/dev/null' EXIT

# make_seed — builds the database in data/seed.new and moves it to
# data/seed: a node on it, the accounts imported, the room made, the node
# stopped cleanly so Mnesia has written everything.
make_seed() {
  local new="$DATA/seed.new" run n t0 t
  t0=$(date +%s)
  rm -rf "$new"
  mkdir -p "$new/home"
  # The cookie ejabberdctl and the node share; Erlang wants it unreadable
  # by others.
  head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$new/home/.erlang.cookie"
  chmod 400 "$new/home/.erlang.cookie"
  SEED="$new"
  run="$new/run"
  mkdir -p "$run/db"

  say "generating $XMPP_ACCOUNTS accounts (SCRAM-SHA-1, 4096 iterations)"
  python3 "$DIR/accounts.py" "$XMPP_DOMAIN" bench "$XMPP_ACCOUNTS" "$XMPP_PASSWORD" >"$new/accounts.xml" \
    || die "could not generate the accounts"
  say "... in $(( $(date +%s) - t0 )) s"

  HTTP_PORT="$(free_port)" C2S_PORT="$(free_port)"
  node_config "$run" "$HTTP_PORT" "$C2S_PORT"
  say "starting a node to make the database (log: $run/ejabberd.log)"
  (node_exec "$run") </dev/null >"$run/node.out" 2>&1 &
  seed_pid=$!
  case "$(wait_ready "$seed_pid" 60; echo $?)" in
    1) die "the node did not start: $(tail -n3 "$run/node.out")" ;;
    2) die "the node was not ready within 60 s" ;;
  esac

  t=$(date +%s)
  say "ejabberdctl import_piefxis ($XMPP_ACCOUNTS accounts)"
  node_ctl "$run" import_piefxis "$new/accounts.xml" >&2 || die "import_piefxis failed"
  n="$(node_ctl "$run" stats registeredusers)"
  [ "$n" = "$XMPP_ACCOUNTS" ] || die "the node holds $n accounts after the import, not $XMPP_ACCOUNTS"
  # The imported keys must take the password (see accounts.py on their format).
  node_ctl "$run" check_password bench0 "$XMPP_DOMAIN" "$XMPP_PASSWORD" >&2 \
    || die "bench0's imported keys do not take the password $XMPP_PASSWORD"
  say "... in $(( $(date +%s) - t )) s"
  say "ejabberdctl create_room_with_opts $XMPP_ROOM $XMPP_MUC $XMPP_DOMAIN '{\"persistent\":\"true\"}'"
  node_ctl "$run" create_room_with_opts "$XMPP_ROOM" "$XMPP_MUC" "$XMPP_DOMAIN" '{"persistent":"true"}' >&2 \
    || die "create_room_with_opts failed"
  node_ctl "$run" stop >&2 || die "ejabberdctl stop failed"
  for _ in $(seq 600); do kill -0 "$seed_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$seed_pid" 2>/dev/null && die "the node did not stop within 60 s"
  wait "$seed_pid" 2>/dev/null || true
  seed_pid=""

  mv "$run/db" "$new/db"
  rm -rf "$run" "$new/accounts.xml"
  echo "$stamp" >"$new/.installed"
  rm -rf "$DATA/seed"
  mv "$new" "$DATA/seed"
  SEED="$DATA/seed"
  say "database made in $(( $(date +%s) - t0 )) s"
}

if [ "$(cat "$SEED/.installed" 2>/dev/null || true)" != "$stamp" ]; then
  make_seed
fi
check_no_system_daemon ejabberd

otp="$(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')"
echo "$PEER: installed ejabberd $version (Debian), $XMPP_ACCOUNTS accounts, room $XMPP_ROOM@$XMPP_MUC, on Erlang/OTP $otp"
