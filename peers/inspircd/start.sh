#!/usr/bin/env bash
# Starts the inspircd peer (Debian's inspircd 3.15.0) in the foreground: IRC
# clients on 127.0.0.1:PORT, plain TCP. Prints 'irc on 127.0.0.1:PORT' once
# the server listens there; nothing else goes to stdout (InspIRCd's own
# output goes to stderr, its log — errors only — to data/run.PID/inspircd.log).
# The PID is the server's: this script execs inspircd --nofork. Started by
# root it stays root (--runasroot). SIGTERM ends it at once (exit status 10,
# InspIRCd's "exited because of SIGTERM").
#
# Usage: peers/inspircd/start.sh PORT   (0 picks a free port)
#
# Each start runs in a fresh folder, peers/inspircd/data/run.PID (the
# configuration, inspircd.conf filled in; the MOTD; the log). A later start
# removes the folders of instances that no longer run.
set -euo pipefail
PEER=inspircd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_port "$@"
irc_lone
[ -x /usr/sbin/inspircd ] && [ -d /usr/lib/inspircd/modules ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
fill_template "$DIR/inspircd.conf" "$run/inspircd.conf" PORT="$IRC_PORT" RUN="$run"
echo "Switchboard shootout peer (inspircd)" >"$run/motd.txt"
irc_nofile
root=()
[ "$(id -u)" != 0 ] || root=(--runasroot)

# stdout is for the ready line alone (fd 3, written by the watcher).
exec 3>&1
irc_announce_when_ready $$
exec /usr/sbin/inspircd --nofork --nopid "${root[@]}" --config "$run/inspircd.conf" 3>&- >&2
