#!/usr/bin/env bash
# Starts the hybrid peer (Debian's ircd-hybrid 8.2.43) in the foreground: IRC
# clients on 127.0.0.1:PORT, plain TCP. Prints 'irc on 127.0.0.1:PORT' once
# the server listens there; nothing else goes to stdout (the server's own
# output goes to stderr, its log to data/run.PID/ircd.log). The PID is the
# server's: this script execs setpriv, which execs ircd-hybrid -foreground
# (ircd-hybrid refuses to run as root, so when started by root it runs as
# the irc user). SIGTERM ends it at once.
#
# Usage: peers/hybrid/start.sh PORT   (0 picks a free port)
#
# Each start runs in a fresh folder, peers/hybrid/data/run.PID: the
# configuration (ircd.conf filled in), the MOTD, the log, the PID file and
# the ban databases (empty). A later start removes the folders of instances
# that no longer run.
set -euo pipefail
PEER=hybrid
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_port "$@"
irc_lone
[ -x /usr/sbin/ircd-hybrid ] && [ -d /usr/lib/ircd-hybrid/modules ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
fill_template "$DIR/ircd.conf" "$run/ircd.conf" PORT="$IRC_PORT" RUN="$run"
echo "Switchboard shootout peer (hybrid)" >"$run/ircd.motd"
irc_as_server_user "$run"
irc_nofile

# stdout is for the ready line alone (fd 3, written by the watcher).
exec 3>&1
irc_announce_when_ready $$
exec "${AS_USER[@]}" /usr/sbin/ircd-hybrid -foreground -configfile "$run/ircd.conf" \
  -logfile "$run/ircd.log" -pidfile "$run/ircd.pid" -klinefile "$run/kline.db" \
  -dlinefile "$run/dline.db" -xlinefile "$run/xline.db" -resvfile "$run/resv.db" 3>&- >&2
