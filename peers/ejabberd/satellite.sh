#!/usr/bin/env bash
# Starts one of the two ejabberd servers of the satellite-link study
# (shootout/satellite.sh) in the foreground, in DIR (made afresh): DOMAIN
# on IP (clients on 15222, servers on 5269), its certificate CERT and key
# KEY, the other server's checked against the authority CA, and OTHER (the
# other server's domain) reached at LINK-IP, port 5269. Once it listens for
# clients, USER is registered (password pw) and 'ejabberd DOMAIN ready' is
# printed on stdout. The PID is the Erlang VM's; SIGTERM ends it at once.
#
# How ejabberd finds OTHER: its SRV query goes to no name server (the
# inetrc empties the VM's resolver) and fails at once; then it asks the C
# library (getaddrinfo, which reads /etc/hosts and ignores the inetrc), so
# the VM runs in a mount namespace of its own (unshare, as root) where
# /etc/hosts is DIR/hosts, naming LINK-IP as OTHER. Nothing outside it sees
# that file.
#
# Usage: peers/ejabberd/satellite.sh DIR DOMAIN IP OTHER LINK-IP CERT KEY CA USER
set -euo pipefail
PEER=ejabberd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
. "$PEERS_DIR/ejabberd/node.sh"

[ $# = 9 ] || { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
dir="$1" domain="$2" ip="$3" other="$4" via="$5" cert="$6" key="$7" ca="$8" user="$9"
[ -f "$SEED/.installed" ] && [ -x /usr/bin/erl ] || die "not installed: run peers/$PEER/install.sh"

if [ "${EJABBERD_SATELLITE_HOSTS:-}" = "$dir/hosts" ]; then
  mount --bind "$dir/hosts" /etc/hosts || die "could not mount $dir/hosts on /etc/hosts"
  # Once ejabberd accepts clients: the account, then the ready line (fd 3,
  # the caller's stdout). Detached (its parent exits at once), so it is
  # never the VM's child.
  exec 3>&1
  ( (
    exec </dev/null >&2
    for _ in $(seq 300); do
      grep -q "Start accepting TCP connections at $ip:15222" "$dir/ejabberd.log" 2>/dev/null && break
      sleep 0.1
    done
    node_ctl "$dir" register "$user" "$domain" pw || die "registering $user@$domain failed"
    echo "ejabberd $domain ready" >&3
  ) & )
  node_exec "$dir" 3>&- >&2
fi

[ "$(id -u)" = 0 ] || die "needs root: the VM runs in a mount namespace of its own (see the top of $0)"
rm -rf "$dir"
mkdir -p "$dir/db"
fill_template "$PEERS_DIR/ejabberd/satellite.yml" "$dir/ejabberd.yml" \
  DOMAIN="$domain" ADDRESS="$ip" CERT="$cert" KEY="$key" CA="$ca"
printf '%s\n' '{resolv_conf,""}.' '{lookup,["file"]}.' '{host,{127,0,0,1},["localhost"]}.' >"$dir/inetrc"
printf '127.0.0.1 localhost\n%s %s conference.%s\n' "$via" "$other" "$other" >"$dir/hosts"
free_port >"$dir/dist_port"
EJABBERD_SATELLITE_HOSTS="$dir/hosts" exec unshare --mount "$0" "$@"
