# The XMPP peers' (ejabberd, prosody) shared start and install steps: their
# ports, their instance folders, the ready lines, and keeping the Debian
# packages' own daemons from running. Sourced after lib/common.sh, with PEER
# set.

XMPP_DOMAIN=localhost
XMPP_MUC=conference.localhost
XMPP_PASSWORD=bench
XMPP_ROOM=bench
# The accounts install.sh makes: bench0 … bench<N-1>.
XMPP_ACCOUNTS="${XMPP_ACCOUNTS:-10000}"
# The ports the Debian packages' daemons would listen on; nothing of theirs
# may be left there (the test suite runs Switchboard and Smack on 5222).
XMPP_SYSTEM_PORTS="5222 5269 5280 5443"

# free_port — a port of 127.0.0.1 that was free a moment ago. The servers
# cannot bind port 0 and say which port they got, so start.sh asks the
# kernel for one here. Another process could take it before the server
# binds it: ejabberd then exits, Prosody logs the error and runs without
# that port, never ready (the caller's wait for the ready line ends it).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# xmpp_ports HTTP_PORT [C2S_PORT] — sets HTTP_PORT and C2S_PORT from
# start.sh's arguments ($XMPP_PORT when the second is absent), a free port
# for each that is 0. Exits 2 with the usage on a bad argument.
xmpp_ports() {
  local usage="usage: [XMPP_PORT=C2S_PORT] $0 HTTP_PORT [C2S_PORT]   (BOSH at http://127.0.0.1:HTTP_PORT/http-bind, WebSocket at /xmpp-websocket, client TCP on 127.0.0.1:C2S_PORT; 0 picks a free port; prints 'xmpp on 127.0.0.1:C2S_PORT' then 'listening on http://127.0.0.1:HTTP_PORT/' when ready)"
  HTTP_PORT="${1:-}"
  C2S_PORT="${2:-${XMPP_PORT:-0}}"
  case "$HTTP_PORT" in ''|*[!0-9]*) echo "$usage" >&2; exit 2 ;; esac
  case "$C2S_PORT" in ''|*[!0-9]*) echo "$usage" >&2; exit 2 ;; esac
  [ "$HTTP_PORT" != 0 ] || HTTP_PORT="$(free_port)"
  [ "$C2S_PORT" != 0 ] || C2S_PORT="$(free_port)"
  [ "$HTTP_PORT" != "$C2S_PORT" ] || { echo "$PEER: FAILED: HTTP_PORT and C2S_PORT are both $HTTP_PORT" >&2; exit 2; }
  # A port something already listens on fails here rather than in Prosody,
  # which would run on without it.
  local port
  for port in "$HTTP_PORT" "$C2S_PORT"; do
    ! tcp_accepts "$port" || die "127.0.0.1:$port is in use"
  done
}

# instance_dir — a fresh folder peers/$PEER/data/run.PID for this start
# (PID being the server's, as start.sh execs it), after removing those of
# instances that are no longer running. Echoes its path.
instance_dir() {
  local data="$PEERS_DIR/$PEER/data" d pid
  for d in "$data"/run.*; do
    [ -d "$d" ] || continue
    pid="${d##*/run.}"
    kill -0 "$pid" 2>/dev/null || rm -rf "$d"
  done
  d="$data/run.$$"
  rm -rf "$d"
  mkdir -p "$d"
  echo "$d"
}

# fill_template SRC DEST NAME=VALUE... — copies SRC to DEST with each
# @NAME@ replaced by VALUE.
fill_template() {
  local src="$1" dest="$2" expr=() kv
  shift 2
  for kv in "$@"; do expr+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${expr[@]}" "$src" >"$dest"
  ! grep -q '@[A-Z0-9_]*@' "$dest" || die "unfilled placeholder in $dest: $(grep -o '@[A-Z0-9_]*@' "$dest" | head -n1)"
}

# tcp_accepts PORT — whether 127.0.0.1:PORT accepts a connection.
tcp_accepts() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# healthz_ok PORT — whether GET /healthz on 127.0.0.1:PORT answers 200 with
# the body ok. The request names the XMPP domain as its Host: ejabberd
# serves files per virtual host (see peers/ejabberd/README.md).
healthz_ok() {
  local reply
  reply="$(exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$XMPP_DOMAIN" >&3 && timeout 2 cat <&3)" || return 1
  case "$reply" in "HTTP/1."?" 200"*) [ "$(printf '%s' "$reply" | tail -n1 | tr -d '\r\n')" = ok ] ;; *) return 1 ;; esac
}

# wait_ready PID SECONDS — waits until the client TCP port (C2S_PORT)
# accepts and GET /healthz on HTTP_PORT answers ok. Returns 0 then, 1 if
# PID exits first, 2 after SECONDS.
wait_ready() {
  local pid="$1" i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    tcp_accepts "$C2S_PORT" && healthz_ok "$HTTP_PORT" && return 0
    sleep 0.1
  done
  return 2
}

# announce_when_ready PID — in the background: once ready (wait_ready,
# XMPP_READY_S seconds at most, default 120), prints on fd 3 (the caller's
# stdout) 'xmpp on 127.0.0.1:C2S_PORT' and the ready line
# 'listening on http://127.0.0.1:HTTP_PORT/'. The watching shell is
# detached (its parent exits at once), so it is never the server's child:
# the server's process tree is the server alone.
announce_when_ready() {
  local pid="$1"
  (
    (
      exec </dev/null
      case "$(wait_ready "$pid" "${XMPP_READY_S:-120}"; echo $?)" in
        0) printf 'xmpp on 127.0.0.1:%s\nlistening on http://127.0.0.1:%s/\n' "$C2S_PORT" "$HTTP_PORT" >&3 ;;
        2) echo "$PEER: not ready after ${XMPP_READY_S:-120} s" >&2 ;;
      esac
    ) &
  )
}

# without_service_start CMD... — runs CMD (apt-get) with a policy-rc.d
# that forbids every init script action, so that installing a package
# starts no daemon; the one found there before (or none) is put back
# afterwards, also when the run is interrupted.
without_service_start() {
  (
    policy=/usr/sbin/policy-rc.d saved=""
    if [ -e "$policy" ]; then saved="$(mktemp)" && cp -p "$policy" "$saved"; fi
    restore() { if [ -n "$saved" ]; then cp -p "$saved" "$policy" && rm -f "$saved"; else rm -f "$policy"; fi; }
    trap restore EXIT
    trap 'exit 130' INT TERM
    printf '#!/bin/sh\n# Written by peers/lib/xmpp_peer.sh for one apt-get run: start no daemon.\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    "$@"
  )
}

# apt_install_quiet PKG... — apt_install, starting no daemon (see above).
apt_install_quiet() {
  [ "$(id -u)" = 0 ] || die "installing $* needs root (a policy-rc.d keeps its daemons from starting)"
  without_service_start apt_try "$@" || die "apt-get install $* failed"
}

# disable_system_service NAME USER — keeps the Debian package's own NAME
# daemon off: stops it if it runs (its init script, or systemd), and
# removes it from boot (update-rc.d, systemctl). USER is the system user it
# runs as.
disable_system_service() {
  local name="$1" user="$2"
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    systemctl disable --now "$name.service" >&2 2>/dev/null || true
  elif command -v systemctl >/dev/null; then
    # No systemd running: remove the unit's boot links all the same.
    systemctl disable "$name.service" >&2 2>/dev/null || true
  fi
  if [ -x "/etc/init.d/$name" ] && pgrep -u "$user" >/dev/null 2>&1; then
    say "stopping the system $name daemon"
    "/etc/init.d/$name" stop >&2 || true
  fi
  if command -v update-rc.d >/dev/null && [ -x "/etc/init.d/$name" ]; then
    update-rc.d "$name" disable >&2 2>/dev/null || true
  fi
}

# check_no_system_daemon USER — fails if a process of the system USER runs
# (the Debian daemon), or if a process of this peer's server (beam.smp,
# lua) listens on one of XMPP_SYSTEM_PORTS.
check_no_system_daemon() {
  local user="$1" port line
  if pgrep -u "$user" >/dev/null 2>&1; then
    die "the system $user daemon is running (pids $(pgrep -u "$user" | tr '\n' ' ')); stop it: /etc/init.d/$user stop"
  fi
  for port in $XMPP_SYSTEM_PORTS; do
    line="$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -E '"(beam\.smp|lua[0-9.]*|prosody|epmd)"' || true)"
    [ -z "$line" ] || die "an XMPP server is listening on port $port: $line"
  done
}
