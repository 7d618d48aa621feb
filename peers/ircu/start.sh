#!/usr/bin/env bash
# Starts the ircu peer (Debian's ircd-ircu 2.10.12.10, unpacked in
# peers/ircu/pkg; its binary with one operand changed, pkg/ircd-ircu, and
# the shim pkg/compat.so preloaded: see README.md) in the foreground: IRC clients on 127.0.0.1:PORT, plain TCP.
# Prints 'irc on 127.0.0.1:PORT' once the server listens there; nothing else
# goes to stdout (the server's own output goes to stderr, its log to
# data/run.PID/ircd.log). The PID is the server's: this script execs
# setpriv, which execs env, which execs ircd-ircu (ircu refuses to run as
# root, so when started by root it runs as the irc user). SIGTERM ends it
# at once.
#
# Usage: peers/ircu/start.sh PORT   (0 picks a free port)
#
# Each start runs in a fresh folder, peers/ircu/data/run.PID: the
# configuration (ircd.conf filled in), the MOTD, the log, the PID file.
# A later start removes the folders of instances that no longer run.
set -euo pipefail
PEER=ircu
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_port "$@"
irc_lone
ircd="$PKG/ircd-ircu"
[ -f "$PKG/.installed" ] && [ -x "$ircd" ] && [ -f "$PKG/compat.so" ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
fill_template "$DIR/ircd.conf" "$run/ircd.conf" PORT="$IRC_PORT"
echo "Switchboard shootout peer (ircu)" >"$run/ircd.motd"
irc_as_server_user "$run"
irc_nofile

# stdout is for the ready line alone (fd 3, written by the watcher).
exec 3>&1
irc_announce_when_ready $$
exec "${AS_USER[@]}" env LD_PRELOAD="$PKG/compat.so" IRCU_SPATH="$ircd" \
  "$ircd" -n -d "$run" -f "$run/ircd.conf" 3>&- >&2
