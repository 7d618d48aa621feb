#!/usr/bin/env bash
# Installs the prosody peer: Debian's prosody (0.12.3 in bookworm) with
# apt-get, its daemon not started (a policy-rc.d forbids it for the apt-get
# run) and the system service kept off (stopped if it runs, removed from
# boot); then the peer's data in peers/prosody/data/seed, which every start
# copies: the accounts bench0 … bench<N-1> with password bench
# (N = $XMPP_ACCOUNTS, default 10000), made by `prosodyctl shell` reading
# one user:create(...) a line against an instance of its own on free
# loopback ports, and the persistent room bench@conference.localhost
# (muc:create in the same shell).
#
# Idempotent: apt-get is skipped when the package is installed, the data
# when it holds the same accounts for the same configuration. Needs root
# (apt-get, policy-rc.d). Prints one line with the versions.
set -euo pipefail
PEER=prosody
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
DIR="$PEERS_DIR/$PEER"
DATA="$DIR/data"

if [ "$(dpkg-query -W -f='${Status}' prosody 2>/dev/null || true)" != "install ok installed" ]; then
  apt_install_quiet prosody
fi
version="$(dpkg-query -W -f='${Version}' prosody)"
case "$version" in 0.12.3*) ;; *) say "warning: Debian's prosody is $version; the peer was made for 0.12.3" ;; esac
disable_system_service prosody prosody
check_no_system_daemon prosody
. "$DIR/instance.sh"

# What the data depends on: the accounts, and the configuration it was
# made with (storage, password hashing, the MUC component).
stamp="accounts=$XMPP_ACCOUNTS config=$(sha1sum <"$DIR/prosody.cfg.lua" | cut -c1-12)"

# The instance make_seed runs, stopped on any failure.
seed_pid=""
trap '[ -z "$seed_pid" ] || kill "$seed_pid" 2>/dev/null' EXIT

# make_seed — builds the data in data/seed.new and moves it to data/seed:
# an instance on it, the accounts and the room made through its admin
# shell, then the instance shut down from the shell (which saves the room).
make_seed() {
  local new="$DATA/seed.new" run n t0 t out
  t0=$(date +%s)
  rm -rf "$new"
  run="$new/run"
  HTTP_PORT="$(free_port)" C2S_PORT="$(free_port)"
  instance_config "$run" "$HTTP_PORT" "$C2S_PORT"
  say "starting an instance to make the data (log: $run/prosody.out)"
  (instance_exec "$run") </dev/null >"$run/prosody.out" 2>&1 &
  seed_pid=$!
  case "$(wait_ready "$seed_pid" 60; echo $?)" in
    1) die "the instance did not start: $(tail -n3 "$run/prosody.out")" ;;
    2) die "the instance was not ready within 60 s" ;;
  esac

  t=$(date +%s)
  say "prosodyctl shell: $XMPP_ACCOUNTS x user:create, muc:create"
  out="$new/shell.out"
  {
    for ((n = 0; n < XMPP_ACCOUNTS; n++)); do
      printf 'user:create("bench%d@%s", "%s")\n' "$n" "$XMPP_DOMAIN" "$XMPP_PASSWORD"
    done
    printf 'muc:create("%s@%s", { persistent = true })\n' "$XMPP_ROOM" "$XMPP_MUC"
  } | instance_shell "$run" >"$out" 2>&1 || die "prosodyctl shell failed: $(tail -n3 "$out")"
  n="$(grep -c '^| OK: User created$' "$out" || true)"
  [ "$n" = "$XMPP_ACCOUNTS" ] || die "the shell made $n accounts, not $XMPP_ACCOUNTS: $(grep -m1 '^!' "$out" || tail -n1 "$out")"
  grep -q "^| Result: MUC room ($XMPP_ROOM@$XMPP_MUC)$" "$out" || die "muc:create failed: $(grep -m1 '^!' "$out" || tail -n1 "$out")"
  say "... in $(( $(date +%s) - t )) s"

  echo 'server:shutdown("the peer'"'"'s data is made")' | instance_shell "$run" >>"$out" 2>&1 || true
  for _ in $(seq 600); do kill -0 "$seed_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$seed_pid" 2>/dev/null && die "the instance did not stop within 60 s"
  wait "$seed_pid" 2>/dev/null || true
  seed_pid=""
  [ -f "$run/data/conference%2elocalhost/config/$XMPP_ROOM.dat" ] || die "the room $XMPP_ROOM was not saved"

  mv "$run/data" "$new/data"
  rm -f "$new/data/prosody.sock"
  rm -rf "$run"
  echo "$stamp" >"$new/.installed"
  rm -rf "$DATA/seed"
  mv "$new" "$DATA/seed"
  say "data made in $(( $(date +%s) - t0 )) s"
}

if [ "$(cat "$SEED/.installed" 2>/dev/null || true)" != "$stamp" ]; then
  make_seed
fi
check_no_system_daemon prosody

lua="$(sed -n '1s|^#!/usr/bin/env ||p' /usr/bin/prosody)"
echo "$PEER: installed prosody $version (Debian), $XMPP_ACCOUNTS accounts, room $XMPP_ROOM@$XMPP_MUC, on $("$lua" -v 2>&1 | cut -d' ' -f1-2)"
