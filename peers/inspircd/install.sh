#!/usr/bin/env bash
# Installs the inspircd peer: Debian's inspircd (3.15.0 in bookworm) with
# apt-get (no recommended packages), its daemon not started (a policy-rc.d
# forbids it for the apt-get run) and the system service kept off (removed
# from boot, stopped if it runs). Refuses if apt-get would remove another
# package to install it.
#
# Idempotent: apt-get is skipped when the package is installed. Needs root
# (apt-get, policy-rc.d). Prints one line with the version.
set -euo pipefail
PEER=inspircd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_apt_install inspircd
version="$(dpkg-query -W -f='${Version}' inspircd)"
case "$version" in 3.*) ;; *) say "warning: Debian's inspircd is $version; the peer was made for 3.15.0" ;; esac
irc_system_daemon_off inspircd /usr/sbin/inspircd

echo "$PEER: installed inspircd $version (Debian), $(/usr/sbin/inspircd --version 2>&1 | head -n1)"
