#!/usr/bin/env bash
# Runs an ejabberdctl command against a running instance of the ejabberd
# peer, named by its PID (the one start.sh's caller holds), e.g.
#
#   peers/ejabberd/ctl.sh 12345 connected_users_number
#
# /usr/sbin/ejabberdctl itself cannot reach it: it looks for the node
# through epmd and with /etc/ejabberd's cookie, and this peer's nodes use
# neither (see node.sh).
set -euo pipefail
PEER=ejabberd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
. "$PEERS_DIR/ejabberd/node.sh"
case "${1:-}" in
  ''|*[!0-9]*) echo "usage: $0 PID COMMAND [ARG...]   (PID: a running instance's, as start.sh's caller has it)" >&2; exit 2 ;;
esac
run="$PEERS_DIR/ejabberd/data/run.$1"
[ -f "$run/dist_port" ] && kill -0 "$1" 2>/dev/null || die "no running instance with pid $1 (no $run, or it has exited)"
shift
node_ctl "$run" "$@"
