#!/usr/bin/env bash
# Starts the ircu peer (Debian's ircd-ircu 2.10.12.10, unpacked in
# peers/ircu/pkg; its binary with one operand changed, pkg/ircd-ircu, and
# the shim pkg/compat.so preloaded: see README.md) in the foreground: IRC clients on 127.0.0.1:PORT
# (IRC_ADDRESS:PORT), plain TCP.
# Prints 'irc on 127.0.0.1:PORT' once the server listens there; nothing else
# goes to stdout (the server's own output goes to stderr, its log to
# data/run.PID/ircd.log). The PID is the server's: this script execs
# setpriv, which execs env, which execs ircd-ircu (ircu refuses to run as
# root, so when started by root it runs as the irc user). SIGTERM ends it
# at once.
#
# Usage: peers/ircu/start.sh PORT   (0 picks a free port)
#
# Two instances link into one network (P10) with the settings ngircd takes
# (IRC_ADDRESS, IRC_NAME, IRC_PEER, IRC_PEER_CONNECT, IRC_PEER_FROM,
# IRC_LINK_PASSWORD: ../lib/irc_peer.sh), and two of ircu's own:
#   IRC_SERVER_PORT  the passive side's server port on IRC_ADDRESS (default
#                    PORT+1): ircu takes servers only on a port of their own
#                    (Port server = yes) and refuses them on the client port,
#                    so IRC_PEER_CONNECT names this port, not the client one
#   IRC_NUMERIC      the server's P10 numeric, distinct on each server
#                    (default 1; 2 on the passive side of a link)
# The active side (IRC_PEER_CONNECT set) tries the link 1 s after it starts
# and then every 5 s (feature CONNECTFREQUENCY; ircu's default, 600 s, is the
# whole retry interval while the link has never been up: the class's
# connectfreq only delays the reconnect after a link that was up drops).
#
# Each start runs in a fresh folder, peers/ircu/data/run.PID: the
# configuration (ircd.conf filled in), the MOTD, the log, the PID file.
# A later start removes the folders of instances that no longer run.
set -euo pipefail
PEER=ircu
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_port "$@"
ircd="$PKG/ircd-ircu"
[ -f "$PKG/.installed" ] && [ -x "$ircd" ] && [ -f "$PKG/compat.so" ] || die "not installed: run peers/$PEER/install.sh"

# ircu takes IPv4 literals here (a name would need DNS, which is off), at
# most 20 characters of password (PASSWDLEN), and no '"' in a string.
is_ipv4() { [[ "$1" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; }
is_ipv4 "$IRC_ADDRESS" || die "IRC_ADDRESS is an IPv4 address for ircu, not $IRC_ADDRESS"
case "$IRC_NAME$IRC_PEER$IRC_LINK_PASSWORD" in *'"'*) die "no '\"' in IRC_NAME, IRC_PEER or IRC_LINK_PASSWORD" ;; esac
[ "${#IRC_LINK_PASSWORD}" -le 20 ] || die "IRC_LINK_PASSWORD: ircu takes at most 20 characters"
if [ -n "$IRC_PEER" ] && [ -z "$IRC_PEER_CONNECT" ]; then numeric_default=2; else numeric_default=1; fi
IRC_NUMERIC="${IRC_NUMERIC:-$numeric_default}"
case "$IRC_NUMERIC" in ''|*[!0-9]*) die "IRC_NUMERIC is a number (0-4095), not $IRC_NUMERIC" ;; esac
[ "$IRC_NUMERIC" -le 4095 ] || die "IRC_NUMERIC is a number (0-4095), not $IRC_NUMERIC"

run="$(instance_dir)"
fill_template "$DIR/ircd.conf" "$run/ircd.conf" PORT="$IRC_PORT" ADDRESS="$IRC_ADDRESS" NAME="$IRC_NAME" NUMERIC="$IRC_NUMERIC"
if [ -n "$IRC_PEER" ]; then
  # The link (P10): both sides name each other in a Connect block with the
  # same password; the active side has the other's address and port and
  # autoconnects, the passive one has the address the connection comes from
  # (no port: it never connects) and a server port. A link is one
  # connection of class Server (maxlinks 1), with the clients' send queue.
  if [ -n "$IRC_PEER_CONNECT" ]; then
    host="${IRC_PEER_CONNECT%:*}" port="${IRC_PEER_CONNECT##*:}" auto=yes
  else
    host="$IRC_PEER_FROM" port=0 auto=no
    IRC_SERVER_PORT="${IRC_SERVER_PORT:-$((IRC_PORT + 1))}"
    case "$IRC_SERVER_PORT" in ''|*[!0-9]*) die "IRC_SERVER_PORT is a port, not $IRC_SERVER_PORT" ;; esac
    [ "$IRC_SERVER_PORT" -ge 1 ] && [ "$IRC_SERVER_PORT" -le 65535 ] && [ "$IRC_SERVER_PORT" != "$IRC_PORT" ] || die "IRC_SERVER_PORT is a port other than $IRC_PORT, not $IRC_SERVER_PORT"
    [ -z "$(ss -ltnH "src $IRC_ADDRESS and sport = :$IRC_SERVER_PORT" 2>/dev/null)" ] || die "$IRC_ADDRESS:$IRC_SERVER_PORT (IRC_SERVER_PORT) is in use"
  fi
  is_ipv4 "$host" || die "ircu links to and from IPv4 addresses, not $host"
  {
    printf '\n# The link to %s (start.sh: IRC_PEER).\n' "$IRC_PEER"
    printf 'Class {\n  name = "Server";\n  pingfreq = 90 seconds;\n  connectfreq = 5 seconds;\n  maxlinks = 1;\n  sendq = 8388608;\n};\n'
    printf 'Connect {\n  name = "%s";\n  host = "%s";\n' "$IRC_PEER" "$host"
    [ "$port" = 0 ] || printf '  port = %s;\n' "$port"
    printf '  password = "%s";\n  class = "Server";\n  autoconnect = %s;\n};\n' "$IRC_LINK_PASSWORD" "$auto"
    [ "$auto" = yes ] || printf 'Port {\n  vhost = ipv4 "%s";\n  port = ipv4 %s;\n  server = yes;\n};\n' "$IRC_ADDRESS" "$IRC_SERVER_PORT"
    # How often the active side tries a link that is not up (default 600 s).
    printf 'features {\n  "CONNECTFREQUENCY" = "5";\n};\n'
  } >>"$run/ircd.conf"
fi
echo "Switchboard shootout peer (ircu)" >"$run/ircd.motd"
irc_as_server_user "$run"
irc_nofile

# stdout is for the ready line alone (fd 3, written by the watcher).
exec 3>&1
irc_announce_when_ready $$
exec "${AS_USER[@]}" env LD_PRELOAD="$PKG/compat.so" IRCU_SPATH="$ircd" \
  "$ircd" -n -d "$run" -f "$run/ircd.conf" 3>&- >&2
