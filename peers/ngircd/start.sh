#!/usr/bin/env bash
# Starts the ngircd peer (Debian's ngircd 26.1, unpacked in peers/ngircd/pkg)
# in the foreground: IRC clients on 127.0.0.1:PORT, plain TCP. Prints
# 'irc on 127.0.0.1:PORT' once the server listens there; nothing else goes to
# stdout (ngIRCd's log, which -n sends to stdout, goes to stderr). The PID is
# the server's (this script execs ngircd -n, which does not fork). ngIRCd
# refuses to run as root: started by root, it switches itself to the irc
# user after binding the port (ServerUID). SIGTERM ends it at once.
#
# Usage: peers/ngircd/start.sh PORT   (0 picks a free port)
#
# Each start runs in a fresh folder, peers/ngircd/data/run.PID (the
# configuration, ngircd.conf filled in). A later start removes the folders
# of instances that no longer run.
set -euo pipefail
PEER=ngircd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_port "$@"
ngircd="$PKG/usr/sbin/ngircd"
[ -f "$PKG/.installed" ] && [ -x "$ngircd" ] || die "not installed: run peers/$PEER/install.sh"

run="$(instance_dir)"
mkdir -p "$run/conf.d"
if [ "$(id -u)" = 0 ]; then user="$IRC_RUN_USER" group="$(id -gn "$IRC_RUN_USER")"; else user="$(id -u)" group="$(id -g)"; fi
fill_template "$DIR/ngircd.conf" "$run/ngircd.conf" PORT="$IRC_PORT" ADDRESS="$IRC_ADDRESS" NAME="$IRC_NAME" RUN="$run" PKG="$PKG" USER="$user" GROUP="$group"
if [ -n "$IRC_PEER" ]; then
  # The link (RFC 2813): the active side has the other's port and connects,
  # the passive one waits; servers come in on the client port.
  {
    printf '\n[Server]\n\tName = %s\n\tMyPassword = %s\n\tPeerPassword = %s\n' "$IRC_PEER" "$IRC_LINK_PASSWORD" "$IRC_LINK_PASSWORD"
    if [ -n "$IRC_PEER_CONNECT" ]; then
      printf '\tHost = %s\n\tPort = %s\n' "${IRC_PEER_CONNECT%:*}" "${IRC_PEER_CONNECT##*:}"
    else
      printf '\tHost = %s\n' "$IRC_PEER_FROM"
    fi
  } >>"$run/ngircd.conf"
fi
irc_nofile

# stdout is for the ready line alone (fd 3, written by the watcher).
exec 3>&1
irc_announce_when_ready $$
exec "$ngircd" -n -f "$run/ngircd.conf" 3>&- >&2
