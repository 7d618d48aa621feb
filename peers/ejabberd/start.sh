#!/usr/bin/env bash
# Starts the ejabberd peer (Debian's ejabberd 23.01) in the foreground: XMPP
# client TCP on 127.0.0.1:C2S_PORT, BOSH at http://127.0.0.1:HTTP_PORT/http-bind,
# XMPP over WebSocket at /xmpp-websocket, GET /healthz → ok. Prints
# 'xmpp on 127.0.0.1:C2S_PORT' and then 'listening on http://127.0.0.1:HTTP_PORT/'
# once both ports answer. The PID is the Erlang VM's (beam.smp): this script
# execs erl as ejabberdctl's foreground command would, minus the su to the
# ejabberd user. SIGTERM ends it at once.
#
# Usage: [XMPP_PORT=C2S_PORT] peers/ejabberd/start.sh HTTP_PORT [C2S_PORT]
#   A port given as 0 (C2S_PORT's default) is a free port picked here.
#
# Each start runs in a fresh folder, peers/ejabberd/data/run.PID: the
# configuration (ejabberd.yml filled in), a copy of the database install.sh
# made (its accounts and the room bench), the log. A later start removes
# the folders of instances that no longer run. The node is ejabberd@localhost
# with Erlang distribution on a third loopback port and no epmd, so
# ejabberdctl can reach it (see peers/ejabberd/README.md) and several
# instances can run at once.
set -euo pipefail
PEER=ejabberd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
. "$PEERS_DIR/ejabberd/node.sh"

xmpp_ports "$@"
[ -f "$SEED/.installed" ] && [ -x /usr/bin/erl ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
cp -a "$SEED/db" "$run/db"
node_config "$run" "$HTTP_PORT" "$C2S_PORT"

# stdout is for the two ready lines alone (fd 3, written by the watcher);
# the VM's own output goes to stderr.
exec 3>&1
announce_when_ready $$
node_exec "$run" 3>&- >&2
