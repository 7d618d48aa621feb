#!/usr/bin/env bash
# Installs every peer (or the ones named) and the smoke-check clients (Node's,
# and slixmpp's when an XMPP peer is named), each into
# its own folder under peers/, and prints one line per peer: ok with its
# versions, or FAILED with the reason. A failure does not stop the others.
#
# Usage: peers/install-all.sh [--strict] [PEER...]
# Exit status: 0, or with --strict 1 if any peer failed. Full logs of each
# install: peers/.logs/install-PEER.log.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ALL_PEERS="sockjs-node sockjs-tornado sockjs-tornado-pypy socketio ws bun tornado express express-cluster vertx vertx-eventbus spring-tomcat spring-jetty pekko centrifuge ejabberd prosody ircu ngircd inspircd hybrid"
strict=0
peers=()
for a in "$@"; do
  case "$a" in
    --strict) strict=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) peers+=("$a") ;;
  esac
done
[ ${#peers[@]} -gt 0 ] || read -r -a peers <<<"$ALL_PEERS"

mkdir -p "$HERE/.logs"
failed=0
# The smoke-check client (peers/check.sh) first: it is a peer's tool, not a peer.
if ! (PEER=check; . "$HERE/lib/common.sh"; npm_install "$HERE/check") >"$HERE/.logs/install-check.log" 2>&1; then
  echo "check-client: FAILED (see peers/.logs/install-check.log)"
fi
# The XMPP peers' check client (slixmpp in check/venv), when one of the peers
# is an XMPP server (an "xmpp" entry in peers.json).
for p in "${peers[@]}"; do
  if python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1]))["peers"] if p["name"]==sys.argv[2]]; sys.exit(0 if p and "xmpp" in p[0] else 1)' "$HERE/peers.json" "$p"; then
    if ! (PEER=check; . "$HERE/lib/common.sh"; venv_install "$HERE/check/venv" python3 "$HERE/../conformance/xmpp/requirements.txt") >"$HERE/.logs/install-check-xmpp.log" 2>&1; then
      echo "check-client-xmpp: FAILED (see peers/.logs/install-check-xmpp.log)"
    fi
    break
  fi
done
for p in "${peers[@]}"; do
  log="$HERE/.logs/install-$p.log"
  if [ ! -x "$HERE/$p/install.sh" ]; then
    echo "$p: FAILED: no such peer (peers: $ALL_PEERS)"; failed=$((failed + 1)); continue
  fi
  if out="$("$HERE/$p/install.sh" 2>"$log")"; then
    echo "${out/#$p: installed/$p: ok, installed}"
  else
    reason="$(grep -m1 'FAILED' "$log" || tail -n1 "$log")"
    reason="${reason#"$p: FAILED: "}"; [ ${#reason} -le 300 ] || reason="${reason:0:300}…"
    echo "$p: FAILED: $reason (log: peers/.logs/install-$p.log)"
    failed=$((failed + 1))
  fi
done
[ "$strict" = 1 ] && [ "$failed" -gt 0 ] && exit 1
exit 0
