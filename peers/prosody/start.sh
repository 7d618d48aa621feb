#!/usr/bin/env bash
# Starts the prosody peer (Debian's Prosody 0.12.3) in the foreground: XMPP
# client TCP on 127.0.0.1:C2S_PORT, BOSH at http://127.0.0.1:HTTP_PORT/http-bind,
# XMPP over WebSocket at /xmpp-websocket, GET /healthz → ok. Prints
# 'xmpp on 127.0.0.1:C2S_PORT' and then 'listening on http://127.0.0.1:HTTP_PORT/'
# once both ports answer. The PID is the Lua interpreter's running Prosody
# (/usr/bin/prosody execs lua5.4). SIGTERM ends it at once.
#
# Usage: [XMPP_PORT=C2S_PORT] peers/prosody/start.sh HTTP_PORT [C2S_PORT]
#   A port given as 0 (C2S_PORT's default) is a free port picked here.
#
# Each start runs in a fresh folder, peers/prosody/data/run.PID: the
# configuration (prosody.cfg.lua filled in) and a copy of the data
# install.sh made (its accounts and the room bench). A later start removes
# the folders of instances that no longer run. `prosodyctl --config
# peers/prosody/data/run.PID/prosody.cfg.lua shell` reaches the instance.
set -euo pipefail
PEER=prosody
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/xmpp_peer.sh"
. "$PEERS_DIR/prosody/instance.sh"

xmpp_ports "$@"
[ -f "$SEED/.installed" ] && [ -x /usr/bin/prosody ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
instance_config "$run" "$HTTP_PORT" "$C2S_PORT"
cp -a "$SEED/data/." "$run/data/"

# stdout is for the two ready lines alone (fd 3, written by the watcher);
# Prosody's console log goes to stderr.
exec 3>&1
announce_when_ready $$
instance_exec "$run" 3>&- >&2
