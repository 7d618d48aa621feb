#!/usr/bin/env bash
# Smoke check of every peer (or the ones named): starts it on a free port of
# 127.0.0.1, drives each app it hosts over each of its transports with
# check/smoke.js (echo round trip, broadcast to two clients in one order, chat
# join/members/message/taken name/leave, count over WebSocket and HTTP with
# keep-alive, SockJS /info and an xhr-polling round trip), stops it, and prints
# one verdict line per peer. XMPP peers (an "xmpp" entry in peers.json) are
# checked by check/xmpp_smoke.py instead (login, ping, rooms over client TCP;
# BOSH; WebSocket), with slixmpp from a venv of its own (check/venv, pinned
# by conformance/xmpp/requirements.txt). Bounded in time: 30 s to start, 60 s
# of checks.
#
# Usage: peers/check.sh [PEER...]
# Exit status: 0 if every peer checked passed (peers not installed are
# reported, and count as failures). Server logs: peers/.logs/check-PEER.log.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ALL_PEERS="sockjs-node sockjs-tornado sockjs-tornado-pypy socketio ws bun tornado express express-cluster vertx vertx-eventbus spring-tomcat spring-jetty pekko centrifuge ejabberd prosody"
START_S=30
CHECK_S=60
peers=("$@")
[ ${#peers[@]} -gt 0 ] || read -r -a peers <<<"$ALL_PEERS"

mkdir -p "$HERE/.logs"
(PEER=check; . "$HERE/lib/common.sh"; npm_install "$HERE/check") >"$HERE/.logs/install-check.log" 2>&1 \
  || { echo "check: FAILED: cannot install the smoke-check client (peers/.logs/install-check.log)"; exit 1; }

# is_xmpp PEER — whether peers.json describes PEER as an XMPP server.
is_xmpp() {
  python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1]))["peers"] if p["name"]==sys.argv[2]]; sys.exit(0 if p and "xmpp" in p[0] else 1)' "$HERE/peers.json" "$1"
}
# The XMPP check's client, installed only when an XMPP peer is to be checked;
# without it those peers fail (never pass unchecked).
xmpp_client=""
for p in "${peers[@]}"; do
  if is_xmpp "$p"; then
    if (PEER=check; . "$HERE/lib/common.sh"; venv_install "$HERE/check/venv" python3 "$HERE/../conformance/xmpp/requirements.txt") >"$HERE/.logs/install-check-xmpp.log" 2>&1; then
      xmpp_client="$HERE/check/venv/bin/python"
    else
      xmpp_client="missing"
    fi
    break
  fi
done

server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; }
trap cleanup EXIT

failed=0
for p in "${peers[@]}"; do
  log="$HERE/.logs/check-$p.log"
  if [ ! -x "$HERE/$p/start.sh" ]; then
    echo "$p: FAILED: no such peer"; failed=$((failed + 1)); continue
  fi
  xmpp=""
  if is_xmpp "$p"; then
    xmpp=1
    if [ "$xmpp_client" = missing ]; then
      echo "$p: FAILED: cannot install the XMPP check's client (peers/.logs/install-check-xmpp.log)"
      failed=$((failed + 1)); continue
    fi
  fi
  # Port 0: the server binds a free port and names it in its ready line.
  # Empty the log here, not in the background job: its redirection runs after
  # the fork, and the loop below must not read the last run's ready line.
  : >"$log"
  "$HERE/$p/start.sh" 0 >>"$log" 2>&1 &
  server_pid=$!
  port=""
  for _ in $(seq $((START_S * 10))); do
    port="$(sed -n 's#^listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/$#\1#p' "$log" | head -n1)"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    if kill -0 "$server_pid" 2>/dev/null; then
      echo "$p: FAILED: not ready within ${START_S} s (log: peers/.logs/check-$p.log)"
    else
      echo "$p: FAILED: did not start: $(tail -n1 "$log" | sed "s/^$p: FAILED: //")"
    fi
    kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
    server_pid=""; failed=$((failed + 1)); continue
  fi
  if [ -n "$xmpp" ]; then
    # XMPP peers print their client TCP port on the line before the ready line.
    c2s="$(sed -n 's#^xmpp on 127\.0\.0\.1:\([0-9][0-9]*\)$#\1#p' "$log" | head -n1)"
    check=("$xmpp_client" "$HERE/check/xmpp_smoke.py" "$p" "$port" "${c2s:-0}")
  else
    check=(node "$HERE/check/smoke.js" "$p" "$port")
  fi
  # The status is read here, not after `if !`, which would make it 0.
  timeout "$CHECK_S" "${check[@]}"
  status=$?
  if [ "$status" != 0 ]; then
    [ "$status" = 124 ] && echo "$p: FAILED: checks did not finish within ${CHECK_S} s"
    failed=$((failed + 1))
  fi
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
  server_pid=""
done
[ "$failed" = 0 ]
