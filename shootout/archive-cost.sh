#!/usr/bin/env bash
# What archiving a chat room's messages costs: the chat study's loads
# (rooms × users, each user sending MESSAGES every 10 ms) against two
# release servers side by side on core 0 (taskset), one with --room-archive
# on (SQLite in a fresh data folder, its default) and one with it off; the
# bench on core 1. Each load is run against both, one after the other, in
# ROUNDS rounds, the order swapped each round: this machine's speed drifts
# by a quarter over a minute, so a load's two runs are compared with each
# other, seconds apart, not with runs minutes away. Prints each load's
# median p50, p99 and server CPU for both, and the median of each round's
# ratio on/off; then, from /proc, the CPU time of the database's threads
# (SQLite's, `sqlx-sqlite-wor`) and of the others over each round, per
# message sent.
#
#   shootout/archive-cost.sh
#   ROOMS=1,2,4 USERS=10,20,30,40,50,60 MESSAGES=500 ROUNDS=5   the loads (the study's, by default)
#   STORE=sqlite            or memory: the archive kept in memory (what the path costs without the database)
#   CONTROL=1               both servers without archiving: the ratios when nothing differs, this machine's noise
#
# Needs the release build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
. shootout/lib.sh
STORE="${STORE:-sqlite}" ROOMS="${ROOMS:-1,2,4}" USERS="${USERS:-10,20,30,40,50,60}" MESSAGES="${MESSAGES:-500}" ROUNDS="${ROUNDS:-5}"
BIN=target/release/switchboard
[ -x "$BIN" ] || { echo "archive-cost: no $BIN; run make build" >&2; exit 1; }
OUT="$(mktemp -d)"
declare -A PIDS PORTS
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$OUT/data-true" "$OUT/data-false"; true' EXIT

for archive in true false; do
  archived="$archive"
  [ -n "${CONTROL:-}" ] && archived=false
  taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen off --store "$STORE" --data-dir "$OUT/data-$archive" --room-archive "$archived" >"$OUT/server-$archive.log" 2>&1 &
  PIDS[$archive]=$!
  PORTS[$archive]="$(listening_port "$OUT/server-$archive.log" "$!" "archive-cost: the server")" || exit 1
done

# Each thread's user and system ticks, by name (database's or not).
ticks() {
  for task in /proc/"$1"/task/*; do
    echo "$(cat "$task/comm" 2>/dev/null) $(awk '{print $14 + $15}' "$task/stat" 2>/dev/null)"
  done | awk '{ if ($1 == "sqlx-sqlite-wor") db += $2; else rest += $2 } END { print db + 0, rest + 0 }'
}

for round in $(seq "$ROUNDS"); do
  order="true false"
  [ $((round % 2)) = 0 ] && order="false true"
  for rooms in ${ROOMS//,/ }; do
    for users in ${USERS//,/ }; do
      for archive in $order; do
        run="$archive-$round-$rooms-$users"
        before="$(ticks "${PIDS[$archive]}")"
        taskset -c 1 "$BIN" bench chat --quiet --target "archive-$archive=http://127.0.0.1:${PORTS[$archive]}/chat" --server-pid "${PIDS[$archive]}" \
          --rooms "$rooms" --users "$users" --messages "$MESSAGES" --out "$OUT/$run.json" >"$OUT/$run.bench.log" 2>&1 \
          || { echo "archive-cost: the bench failed: $(tail -n3 "$OUT/$run.bench.log")" >&2; exit 1; }
        echo "$before $(ticks "${PIDS[$archive]}")" >"$OUT/$run.ticks"
      done
    done
  done
done

python3 - "$OUT" "$ROUNDS" "$ROOMS" "$USERS" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
loads = [(int(r), int(u)) for r in sys.argv[3].split(",") for u in sys.argv[4].split(",")]
def result(archive, r, load):
    return json.load(open(f"{out}/{archive}-{r}-{load[0]}-{load[1]}.json"))["runs"][0]["results"][0]
p50 = lambda x: x["latency"]["p50_us"]
p99 = lambda x: x["latency"]["p99_us"]
cpu = lambda x: x["resources"]["server_cpu_pct"]
lost = lambda x: x["expected"] - x["received"]
print(f"{rounds} rounds, each load against both servers in turn; medians, and the median of the rounds' ratios on/off")
if os.environ.get("CONTROL"):
    print("CONTROL: neither server archives ('on' is a second server without archiving)")
print("latency in µs, server CPU in % of one core")
print(f"{'rooms':>5} {'users':>5} | {'p50 on':>7} {'off':>7} {'ratio':>5} | {'p99 on':>7} {'off':>7} {'ratio':>5} | {'CPU on':>6} {'off':>6} {'ratio':>5} | lost on/off")
worst = [0, 0, 0]
for load in loads:
    on = [result("true", r, load) for r in range(1, rounds + 1)]
    off = [result("false", r, load) for r in range(1, rounds + 1)]
    cells = []
    for f in (p50, p99, cpu):
        ratios = [f(a) / f(b) if f(b) else float("inf") for a, b in zip(on, off)]
        cells.append((statistics.median(map(f, on)), statistics.median(map(f, off)), statistics.median(ratios)))
    worst = [max(w, c[2]) for w, c in zip(worst, cells)]
    row = " | ".join(f"{a:>{7 if i < 2 else 6}.{0 if i < 2 else 1}f} {b:>{7 if i < 2 else 6}.{0 if i < 2 else 1}f} {r:>5.2f}" for i, (a, b, r) in enumerate(cells))
    print(f"{load[0]:>5} {load[1]:>5} | {row} | {sum(map(lost, on))}/{sum(map(lost, off))}")
print(f"largest ratio on/off: p50 {worst[0]:.2f}, p99 {worst[1]:.2f}, server CPU {worst[2]:.2f}")
tick = 1e6 / os.sysconf("SC_CLK_TCK")
for archive in ("true", "false"):
    per = []
    for r in range(1, rounds + 1):
        db = rest = sent = 0
        for load in loads:
            b_db, b_rest, a_db, a_rest = map(int, open(f"{out}/{archive}-{r}-{load[0]}-{load[1]}.ticks").read().split())
            db, rest, sent = db + a_db - b_db, rest + a_rest - b_rest, sent + result(archive, r, load)["sent"]
        per.append((db * tick / sent, rest * tick / sent))
    print(f"archive {'on ' if archive == 'true' else 'off'}: CPU a message sent, over all loads, by round: database's threads "
          + ", ".join(f"{d:.2f}" for d, _ in per) + " µs; the server's others " + ", ".join(f"{o:.2f}" for _, o in per) + " µs")
PY
