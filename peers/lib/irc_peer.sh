# The IRC peers' (ircu, ngircd, inspircd, hybrid) shared install and start
# steps: Debian's package, installed or unpacked into the peer's folder, its
# own system daemon kept off, the port, the instance folder, the user the
# server runs as, and the ready line. Sourced after lib/common.sh, with PEER
# set. The generic helpers free_port, instance_dir, fill_template and
# apt_install_quiet (apt-get with a policy-rc.d that starts no daemon) are
# lib/xmpp_peer.sh's, sourced here.

. "$PEERS_DIR/lib/xmpp_peer.sh"

DIR="$PEERS_DIR/$PEER"
# Where a peer whose package is unpacked rather than installed keeps it
# (pkg/usr/sbin/…, pkg/.installed).
PKG="$DIR/pkg"
# The user a server that refuses root runs as when started by root (ircu,
# hybrid; ngircd switches to it itself): Debian's own daemons run as irc.
IRC_RUN_USER="${IRC_RUN_USER:-irc}"

# ---- install ---------------------------------------------------------------

# apt_update_once — apt-get update, once per install-all run (as apt_install).
apt_update_once() {
  if [ -z "${PEERS_APT_UPDATED:-}" ]; then
    say "apt-get update"
    apt-get update -qq >&2 || die "apt-get update failed"
    export PEERS_APT_UPDATED=1
  fi
}

# irc_apt_install PKG — installs Debian's PKG with apt-get (no recommended
# packages, no daemon started: see apt_install_quiet), unless it is
# installed. The Debian IRC servers declare conflicts with one another
# (ngircd, ircd-hybrid and ircd-ircu pairwise), and apt-get resolves a
# conflict by removing the other package: this refuses instead.
irc_apt_install() {
  local pkg="$1" sim removed
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ] || return 0
  [ "$(id -u)" = 0 ] || die "installing $pkg needs root (apt-get, policy-rc.d)"
  apt-cache show "$pkg" >/dev/null 2>&1 || apt_update_once
  sim="$(apt-get install -s --no-install-recommends "$pkg" 2>&1)" || die "apt-get cannot install $pkg: $(printf '%s\n' "$sim" | grep -m1 '^E:' || printf '%s\n' "$sim" | tail -n1)"
  removed="$(printf '%s\n' "$sim" | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')"
  [ -z "$removed" ] || die "installing $pkg would remove ${removed% } (Debian declares them conflicting); not done"
  apt_install_quiet --no-install-recommends "$pkg"
}

# irc_unpack PKG — Debian's PKG unpacked into peers/$PEER/pkg (dpkg-deb -x of
# the .deb apt-get downloads; nothing registered with dpkg, no maintainer
# script run, no daemon, no user, nothing under /etc), and the shared
# libraries it depends on installed with apt-get. For the packages that
# conflict with another IRC peer's. Skipped when pkg/.installed is there and
# the server binary BIN (a path under pkg) finds all its libraries. Sets
# PKG_VERSION.
irc_unpack() {
  local pkg="$1" bin="$PKG/$2" tmp deb libs lib
  if [ -f "$PKG/.installed" ] && [ -x "$bin" ] && ! ldd "$bin" 2>/dev/null | grep -q 'not found'; then
    PKG_VERSION="$(sed -n "s/^$pkg //p" "$PKG/.installed")"
    [ -n "$PKG_VERSION" ] && return 0
  fi
  [ "$(id -u)" = 0 ] || die "installing $pkg needs root (apt-get)"
  apt-cache show "$pkg" >/dev/null 2>&1 || apt_update_once
  tmp="$DIR/pkg.new"
  rm -rf "$tmp"
  mkdir -p "$tmp/deb"
  say "apt-get download $pkg"
  # (apt-get warns that the download runs unsandboxed as root: its _apt
  # user cannot write the folder.) A failure may be stale package lists.
  (cd "$tmp/deb" && apt-get download "$pkg" >&2) || { apt_update_once; (cd "$tmp/deb" && apt-get download "$pkg" >&2); } \
    || die "apt-get download $pkg failed"
  deb="$(ls "$tmp"/deb/*.deb)"
  PKG_VERSION="$(dpkg-deb -f "$deb" Version)"
  # The libraries: the Depends entries named lib* or zlib*, first
  # alternative, no version, those not installed yet (the rest — lsb-base,
  # init-system-helpers, debconf — serve the maintainer scripts, which never
  # run here; an installed library is left as it is, not upgraded).
  libs=""
  for lib in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/^ *//; s/ *$//' | grep -E '^z?lib'); do
    [ "$(dpkg-query -W -f='${Status}' "$lib" 2>/dev/null || true)" = "install ok installed" ] || libs="$libs $lib"
  done
  if [ -n "$libs" ]; then
    # shellcheck disable=SC2086
    apt_install_quiet --no-install-recommends $libs
  fi
  dpkg-deb -x "$deb" "$tmp/root" || die "dpkg-deb -x $deb failed"
  printf '%s %s\n' "$pkg" "$PKG_VERSION" >"$tmp/root/.installed"
  rm -rf "$PKG"
  mv "$tmp/root" "$PKG"
  rm -rf "$tmp"
  [ -x "$bin" ] || die "$pkg has no $2"
  ! ldd "$bin" | grep 'not found' >&2 || die "$2 misses libraries (see above)"
}

# irc_system_daemon_pids BIN — the processes running BIN (the Debian
# package's own daemon) that are not an instance of a peer, i.e. whose
# command line names nothing under peers/.
irc_system_daemon_pids() {
  local bin="$1" pid
  for pid in $(pgrep -x "$(basename "$bin" | cut -c1-15)" 2>/dev/null || true); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$bin" ] || continue
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$PEERS_DIR/" && continue
    echo "$pid"
  done
}

# irc_system_daemon_off NAME BIN — keeps Debian's own NAME daemon (program
# BIN) off: removed from boot (systemctl disable; update-rc.d disable), and
# stopped with SIGTERM if it runs. Never calls the package's init script,
# whose stop would end every process running BIN, peers included. Fails if
# it still runs 5 s later.
irc_system_daemon_off() {
  local name="$1" bin="$2" pids i
  if command -v systemctl >/dev/null && [ -e "/lib/systemd/system/$name.service" ]; then
    if [ -d /run/systemd/system ]; then
      systemctl disable --now "$name.service" >&2 2>/dev/null || true
    else
      systemctl disable "$name.service" >&2 2>/dev/null || true
    fi
  fi
  if [ -x "/etc/init.d/$name" ] && command -v update-rc.d >/dev/null; then
    update-rc.d "$name" disable >&2 2>/dev/null || true
  fi
  pids="$(irc_system_daemon_pids "$bin")"
  [ -n "$pids" ] || return 0
  say "stopping the system $name daemon (pid $(echo $pids))"
  # shellcheck disable=SC2086
  kill $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [ -n "$(irc_system_daemon_pids "$bin")" ] || return 0
    sleep 0.1
  done
  die "the system $name daemon (pid $(echo $pids)) still runs after SIGTERM"
}

# ---- start -----------------------------------------------------------------

# Two instances of ngircd form one IRC network (shootout/satellite.sh)
# when started with these set (none set: a lone server on 127.0.0.1, as the
# shootout runs it):
#   IRC_ADDRESS        the address it listens on (default 127.0.0.1)
#   IRC_NAME           its server name (default irc.localhost)
#   IRC_PEER           the other server's name: set, the configuration links to it
#   IRC_PEER_CONNECT   HOST:PORT it connects to the other at (the active side);
#                      unset, it waits for the other to connect (passive)
#   IRC_PEER_FROM      the address the other's connection comes from (default
#                      127.0.0.1)
#   IRC_LINK_PASSWORD  the link's password, the same on both (default satellite)

# irc_link_env — fills in the defaults above.
irc_link_env() {
  IRC_ADDRESS="${IRC_ADDRESS:-127.0.0.1}"
  IRC_NAME="${IRC_NAME:-irc.localhost}"
  IRC_PEER="${IRC_PEER:-}"
  IRC_PEER_CONNECT="${IRC_PEER_CONNECT:-}"
  IRC_PEER_FROM="${IRC_PEER_FROM:-127.0.0.1}"
  IRC_LINK_PASSWORD="${IRC_LINK_PASSWORD:-satellite}"
  case "$IRC_PEER_CONNECT" in ''|?*:[0-9]*) ;; *) die "IRC_PEER_CONNECT is HOST:PORT, not $IRC_PEER_CONNECT" ;; esac
}

# irc_lone — for the peers that do not link here (inspircd, hybrid):
# refuses the link settings.
irc_lone() {
  [ "$IRC_ADDRESS" = 127.0.0.1 ] && [ -z "$IRC_PEER" ] || die "$PEER runs alone on 127.0.0.1 here: IRC_ADDRESS and IRC_PEER are for ngircd and ircu"
}

# irc_port ARGS — sets IRC_PORT from start.sh's arguments (PORT; 0 → a
# free port), and the link settings (irc_link_env). Exits 2 with the usage
# on a bad argument, 1 if something listens on the port already.
irc_port() {
  local usage="usage: $0 PORT   (IRC clients on 127.0.0.1:PORT, plain TCP; 0 picks a free port; prints 'irc on 127.0.0.1:PORT' when ready)"
  [ "$#" = 1 ] || { echo "$usage" >&2; exit 2; }
  IRC_PORT="$1"
  case "$IRC_PORT" in ''|*[!0-9]*) echo "$usage" >&2; exit 2 ;; esac
  [ "$IRC_PORT" -le 65535 ] || { echo "$usage" >&2; exit 2; }
  [ "$IRC_PORT" != 0 ] || IRC_PORT="$(free_port)"
  irc_link_env
  [ -z "$(ss -ltnH "src $IRC_ADDRESS and sport = :$IRC_PORT" 2>/dev/null)" ] || die "$IRC_ADDRESS:$IRC_PORT is in use"
}

# irc_nofile — raises the open-file soft limit to the hard limit (what ircu,
# hybrid and inspircd do themselves; ngircd does not), so every server gets
# the same.
irc_nofile() {
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# irc_as_server_user [DIR] — when run by root: sets AS_USER to the setpriv
# command that execs a program as IRC_RUN_USER (its uid and gid, no
# supplementary groups; setpriv execs, so the PID stays the server's), and
# gives DIR (the instance's folder), if named, to that user. AS_USER is
# empty when not root: the server runs as the caller.
irc_as_server_user() {
  AS_USER=()
  [ "$(id -u)" = 0 ] || return 0
  id "$IRC_RUN_USER" >/dev/null 2>&1 || die "no user $IRC_RUN_USER to run the server as (IRC_RUN_USER)"
  [ -z "${1:-}" ] || chown -R "$IRC_RUN_USER:$(id -gn "$IRC_RUN_USER")" "$1"
  AS_USER=(setpriv "--reuid=$IRC_RUN_USER" "--regid=$(id -g "$IRC_RUN_USER")" --clear-groups --)
}

# irc_listening PID — whether PID has a listening socket on IRC_PORT.
irc_listening() {
  ss -ltnpH "sport = :$IRC_PORT" 2>/dev/null | grep -q "pid=$1,"
}

# irc_announce_when_ready PID — in the background: once PID listens on
# IRC_ADDRESS:IRC_PORT (IRC_READY_S seconds at most, default 60), prints the
# ready line 'irc on IRC_ADDRESS:IRC_PORT' on fd 3 (the caller's stdout).
# Watching the listening socket (ss) rather than connecting keeps the check
# invisible to the server (no client, no ident or DNS query). The watching
# shell is detached (its parent exits at once), so it is never the server's
# child: the server's process tree is the server alone.
irc_announce_when_ready() {
  local pid="$1"
  (
    (
      exec </dev/null
      for ((i = 0; i < ${IRC_READY_S:-60} * 20; i++)); do
        # Gone, or exited and not yet reaped by the caller (a zombie).
        case "$(ps -o stat= -p "$pid" 2>/dev/null)" in ''|Z*) exit 0 ;; esac
        if irc_listening "$pid"; then
          printf 'irc on %s:%s\n' "$IRC_ADDRESS" "$IRC_PORT" >&3
          exit 0
        fi
        sleep 0.05
      done
      echo "$PEER: not ready after ${IRC_READY_S:-60} s" >&2
    ) &
  )
}
