#!/usr/bin/env bash
# Installs the ngircd peer: Debian's ngircd (26.1 in bookworm), unpacked into
# peers/ngircd/pkg (apt-get download, dpkg-deb -x) rather than installed,
# since Debian declares it conflicting with ircd-hybrid and ircd-ircu, which
# are peers too; the shared libraries it needs (libident, libgnutls30,
# libpam0g, zlib1g) come from apt-get. No daemon of the package ever runs:
# nothing of it is registered with dpkg, and if Debian's ngircd is installed
# system-wide anyway, its daemon is removed from boot and stopped.
#
# Idempotent: the download is skipped when pkg/ holds the package and its
# binary finds its libraries. Needs root (apt-get). Prints one line with the
# version.
set -euo pipefail
PEER=ngircd
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_unpack ngircd usr/sbin/ngircd
case "$PKG_VERSION" in 26.*) ;; *) say "warning: Debian's ngircd is $PKG_VERSION; the peer was made for 26.1" ;; esac
irc_system_daemon_off ngircd /usr/sbin/ngircd

echo "$PEER: installed ngircd $PKG_VERSION (Debian, unpacked into peers/ngircd/pkg), $("$PKG/usr/sbin/ngircd" --version 2>&1 | head -n1)"
