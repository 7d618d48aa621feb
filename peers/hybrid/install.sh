#!/usr/bin/env bash
# Installs the hybrid peer: Debian's ircd-hybrid (8.2.43 in bookworm) with
# apt-get (no recommended packages), its daemon not started (a policy-rc.d
# forbids it for the apt-get run) and the system service kept off (removed
# from boot, stopped if it runs). Refuses if apt-get would remove another
# package to install it (Debian declares ircd-hybrid conflicting with
# ircd-ircu and ngircd, which the ircu and ngircd peers therefore unpack
# instead). The package's postinst makes a TLS key, certificate and DH
# parameters in /etc/ircd-hybrid/key (some seconds of CPU, once); the peer
# uses none of it.
#
# Idempotent: apt-get is skipped when the package is installed. Needs root
# (apt-get, policy-rc.d). Prints one line with the version.
set -euo pipefail
PEER=hybrid
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_apt_install ircd-hybrid
version="$(dpkg-query -W -f='${Version}' ircd-hybrid)"
case "$version" in *:8.2.*|8.2.*) ;; *) say "warning: Debian's ircd-hybrid is $version; the peer was made for 8.2.43" ;; esac
irc_system_daemon_off ircd-hybrid /usr/sbin/ircd-hybrid

echo "$PEER: installed ircd-hybrid $version (Debian)"
