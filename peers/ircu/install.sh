#!/usr/bin/env bash
# Installs the ircu peer: Debian's ircd-ircu (2.10.12.10 in bookworm),
# unpacked into peers/ircu/pkg (apt-get download, dpkg-deb -x) rather than
# installed, since Debian declares it conflicting with ircd-hybrid and
# ngircd, which are peers too; its libraries (libcrypt1) come from apt-get.
#
# Debian's binary cannot start as shipped (README.md, "Debian's binary"), so
# two things are added beside it, both explained there:
#  - pkg/ircd-ircu: a copy of pkg/usr/sbin/ircd-ircu with one instruction's
#    operand changed (the client capacity of the server's numeric nicks,
#    1,048,548 → 262,116), after checking that the instruction occurs
#    exactly once;
#  - pkg/compat.so, built from compat.c with the system's cc: the shim
#    start.sh preloads for the open-file limit and the program's path.
# No daemon of the package ever runs: nothing of it is registered with dpkg,
# and if Debian's ircd-ircu is installed system-wide anyway, its daemon is
# removed from boot and stopped.
#
# Idempotent: the download is skipped when pkg/ holds the package, the
# build when compat.so is newer than compat.c. Needs root (apt-get). Prints
# one line with the version.
set -euo pipefail
PEER=ircu
. "$(dirname "$0")/../lib/common.sh"
. "$PEERS_DIR/lib/irc_peer.sh"

irc_unpack ircd-ircu usr/sbin/ircd-ircu
case "$PKG_VERSION" in 2.10.12.*) ;; *) say "warning: Debian's ircd-ircu is $PKG_VERSION; the peer was made for 2.10.12.10" ;; esac

# The patched copy (see above): `mov $0xfffe4,%esi` (MAXCLIENTS, the
# argument of SetYXXCapacity in main) becomes `mov $0x3ffe4,%esi`.
if [ ! -x "$PKG/ircd-ircu" ]; then
  python3 - "$PKG/usr/sbin/ircd-ircu" "$PKG/ircd-ircu.new" <<'PY' || die "cannot patch ircd-ircu (not the expected Debian build?)"
import sys
src, dest = sys.argv[1:3]
code = bytearray(open(src, "rb").read())
old, new = bytes.fromhex("bee4ff0f00"), bytes.fromhex("bee4ff0300")
if code.count(old) != 1:
    sys.exit("ircu: FAILED: expected one 'mov $0xfffe4,%%esi' in %s, found %d" % (src, code.count(old)))
at = code.find(old)
code[at:at + len(old)] = new
open(dest, "wb").write(code)
PY
  chmod 755 "$PKG/ircd-ircu.new"
  mv "$PKG/ircd-ircu.new" "$PKG/ircd-ircu"
fi

if [ ! -f "$PKG/compat.so" ] || [ "$DIR/compat.c" -nt "$PKG/compat.so" ]; then
  command -v cc >/dev/null || apt_install_quiet --no-install-recommends gcc libc6-dev
  say "cc -shared compat.c"
  cc -shared -fPIC -O2 -Wall -o "$PKG/compat.so.new" "$DIR/compat.c" -ldl >&2 || die "cannot build compat.so from compat.c"
  mv "$PKG/compat.so.new" "$PKG/compat.so"
fi

irc_system_daemon_off ircd-ircu /usr/sbin/ircd-ircu

echo "$PEER: installed ircd-ircu $PKG_VERSION (Debian, unpacked into peers/ircu/pkg), $("$PKG/usr/sbin/ircd-ircu" -v 2>&1 | head -n1)"
