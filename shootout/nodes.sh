#!/usr/bin/env bash
# The price of the broker: Switchboard as one node with its rooms in memory,
# against two nodes sharing their rooms through one nats-server (docs/nodes.md).
#
#   1. chat round trip, 2 users per room: one node in memory; two nodes with
#      both users of a room on one node; two nodes with one user on each.
#   2. the broadcast sweep: one node in memory against two nodes, clients
#      spread over the nodes (client i on node i mod 2); and the same for the
#      anchor, the centrifuge peer (Centrifugo's engine) with its Redis broker,
#      one node and two sharing one redis-server.
#
# This machine has two cores. The bench runs on core 1; everything on the
# server side (the one node, or both nodes and nats-server) is pinned to core
# 0, so the two-node figures show what the broker costs on the same CPU, not
# what a second machine would add. The server CPU figures cover every server
# process (the bench is given the pid of a shell that starts them all).
#
#   shootout/nodes.sh                   writes shootout/results/nodes-<time>/
#   ROOMS=10 MESSAGES=200 INTERVAL=20ms   the chat load (1,000 messages a second)
#   LEVELS=200 START=500 MAX=100000 STEP_SECONDS=3   the broadcast sweep
#
# Needs the release build (make build), nats-server (make nats-server) and
# the centrifuge peer (peers/centrifuge/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOMS="${ROOMS:-10}" MESSAGES="${MESSAGES:-200}" INTERVAL="${INTERVAL:-20ms}"
LEVELS="${LEVELS:-200}" START="${START:-500}" MAX="${MAX:-100000}" STEP_SECONDS="${STEP_SECONDS:-3}"
BIN=target/release/switchboard
[ -x "$BIN" ] || { echo "nodes: no $BIN; run make build" >&2; exit 1; }
command -v nats-server >/dev/null || { echo "nodes: no nats-server; run make nats-server" >&2; exit 1; }
[ -x peers/centrifuge/centrifuge-peer ] || { echo "nodes: no centrifuge peer; run peers/centrifuge/install.sh" >&2; exit 1; }
OUT="shootout/results/nodes-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GROUP=""
trap '[ -n "$GROUP" ] && kill -- -"$GROUP" 2>/dev/null; true' EXIT

# Starts the server side on core 0 in a process group of its own; sets GROUP
# and the URLs A and B (B empty for one node). $1: "memory" or "nats".
start() {
  local a b n log="$OUT/$1.server.log"
  a="$(free_port)"; b="$(free_port)"; n="$(free_port)"
  if [ "$1" = memory ]; then
    setsid taskset -c 0 bash -c "exec $BIN serve --listen 127.0.0.1:$a --xmpp-listen off --irc-listen off" >"$log" 2>&1 &
    B=""
  elif [ "$1" = centrifuge ]; then
    setsid taskset -c 0 bash -c "exec peers/centrifuge/start.sh $a" >"$log" 2>&1 &
    B=""
  elif [ "$1" = centrifuge-2 ]; then
    setsid taskset -c 0 bash -c "
      redis-server --port $n --bind 127.0.0.1 --save '' --appendonly no & sleep 1
      REDIS_ADDR=127.0.0.1:$n peers/centrifuge/start.sh $a &
      REDIS_ADDR=127.0.0.1:$n peers/centrifuge/start.sh $b &
      wait" >"$log" 2>&1 &
    B="http://127.0.0.1:$b"
  else
    local store; store="$(mktemp -d)"
    setsid taskset -c 0 bash -c "
      nats-server -js -a 127.0.0.1 -p $n -sd $store & sleep 1
      $BIN serve --listen 127.0.0.1:$a --xmpp-listen off --irc-listen off --broker nats://127.0.0.1:$n &
      $BIN serve --listen 127.0.0.1:$b --xmpp-listen off --irc-listen off --broker nats://127.0.0.1:$n &
      wait" >"$log" 2>&1 &
    B="http://127.0.0.1:$b"
  fi
  GROUP=$!
  A="http://127.0.0.1:$a"
  for _ in $(seq 300); do
    [ "$(grep -c 'listening on' "$log")" -ge "$([ -n "$B" ] && echo 2 || echo 1)" ] && return 0
    sleep 0.1
  done
  echo "nodes: the server side did not start: $(tail -n3 "$log")" >&2; exit 1
}
stop() { kill -- -"$GROUP" 2>/dev/null || true; wait "$GROUP" 2>/dev/null || true; GROUP=""; }

bench() { taskset -c 1 "$BIN" bench "$@" --quiet --server-pid "$GROUP"; }
chat() { bench chat --rooms "$ROOMS" --users 2 --messages "$MESSAGES" --interval "$INTERVAL" "$@"; }
sweep() { bench broadcast --levels "$LEVELS" --start-rate "$START" --max-rate "$MAX" --step-seconds "$STEP_SECONDS" "$@"; }

start memory
chat --target "one-node=$A/chat" --out "$OUT/chat-memory.json"
sweep --target "one-node=$A/broadcast" --out "$OUT/broadcast-memory.json"
stop
start nats
chat --target "two-nodes-same=$A/chat" --out "$OUT/chat-nats-same.json"
chat --target "two-nodes-across=$A/chat,$B/chat" --out "$OUT/chat-nats-across.json"
sweep --target "two-nodes=$A/broadcast,$B/broadcast" --out "$OUT/broadcast-nats.json"
stop
start centrifuge
sweep --transport centrifuge --target "centrifuge-one-node=$A/broadcast" --out "$OUT/broadcast-centrifuge.json"
stop
start centrifuge-2
sweep --transport centrifuge --target "centrifuge-two-nodes=$A/broadcast,$B/broadcast" --out "$OUT/broadcast-centrifuge-2.json"
stop

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
run = lambda name: json.load(open(f"{out}/{name}.json"))["runs"][0]
print(f"{'chat, 2 users per room':<28} {'p50 ms':>8} {'p99 ms':>8} {'received':>10} {'expected':>10} {'server CPU %':>12}")
p50 = {}
for name in ["memory", "nats-same", "nats-across"]:
    r = run(f"chat-{name}")
    c = r["results"][0]
    p50[name] = c["latency"]["p50_us"] / 1000
    print(f"{r['target_name']:<28} {p50[name]:>8.3f} {c['latency']['p99_us'] / 1000:>8.3f} {c['received']:>10} {c['expected']:>10} {c['resources']['server_cpu_pct']:>12.1f}")
print(f"the broker adds {p50['nats-across'] - p50['memory']:.3f} ms to p50 (one user on each node, against one node in memory)")
for name in ["memory", "nats", "centrifuge", "centrifuge-2"]:
    r = run(f"broadcast-{name}")
    s = r["summary"][0]
    print(f"broadcast {r['target_name']:<18} {s['connections']} clients: most received/s sustained {s['max_sustainable_received_per_s']:>12,.0f}"
          f" (saturated: {s['saturated']}, bench CPU-bound: {s['bench_cpu_bound']})")
PY
echo "results in $OUT"
