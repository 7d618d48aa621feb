#!/usr/bin/env bash
# What archiving a chat room's messages costs: the chat study's loads
# (rooms × users, each user sending MESSAGES every 10 ms) against the
# release server with --room-archive on (SQLite in a fresh data folder, its
# default) and off, ROUNDS rounds interleaved, the server on core 0
# (taskset) and the bench on core 1. Prints each load's p50, p99 and server
# CPU for both, and the ratios on/off of the rounds' medians; then, from
# /proc, the CPU time of the database's threads over each round (SQLite's,
# `sqlx-sqlite-wor`), per message sent: steadier than the latency when the
# machine is not.
#
#   shootout/archive-cost.sh
#   ROOMS=1,2,4 USERS=10,20,30,40,50,60 MESSAGES=500 ROUNDS=3   the loads (the study's, by default)
#   STORE=sqlite            or memory: the archive kept in memory (what the path costs without the database)
#
# Needs the release build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
. shootout/lib.sh
STORE="${STORE:-sqlite}" ROOMS="${ROOMS:-1,2,4}" USERS="${USERS:-10,20,30,40,50,60}" MESSAGES="${MESSAGES:-500}" ROUNDS="${ROUNDS:-3}"
BIN=target/release/switchboard
[ -x "$BIN" ] || { echo "archive-cost: no $BIN; run make build" >&2; exit 1; }
OUT="$(mktemp -d)"
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$OUT/data"; true' EXIT

for round in $(seq "$ROUNDS"); do
  for archive in true false; do
    log="$OUT/$archive-$round.log"
    rm -rf "$OUT/data"
    taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen off --store "$STORE" --data-dir "$OUT/data" --room-archive "$archive" >"$log" 2>&1 &
    PID=$!
    port="$(listening_port "$log" "$PID" "archive-cost: the server")" || exit 1
    taskset -c 1 "$BIN" bench chat --quiet --target "archive-$archive=http://127.0.0.1:$port/chat" --server-pid "$PID" \
      --rooms "$ROOMS" --users "$USERS" --messages "$MESSAGES" --out "$OUT/$archive-$round.json" >"$OUT/$archive-$round.bench.log" 2>&1 \
      || { echo "archive-cost: the bench failed: $(tail -n3 "$OUT/$archive-$round.bench.log")" >&2; exit 1; }
    # Each thread's user and system ticks, by name, before the server goes.
    for task in /proc/"$PID"/task/*; do
      echo "$(cat "$task/comm" 2>/dev/null) $(awk '{print $14 + $15}' "$task/stat" 2>/dev/null)"
    done >"$OUT/$archive-$round.ticks"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def loads(archive, r):
    run = json.load(open(f"{out}/{archive}-{r}.json"))["runs"][0]
    return {(x["rooms"], x["users"]): x for x in run["results"]}
on = [loads("true", r) for r in range(1, rounds + 1)]
off = [loads("false", r) for r in range(1, rounds + 1)]
def med(runs, key, pick):
    return statistics.median(pick(run[key]) for run in runs)
p50 = lambda x: x["latency"]["p50_us"]
p99 = lambda x: x["latency"]["p99_us"]
cpu = lambda x: x["resources"]["server_cpu_pct"]
lost = lambda x: x["expected"] - x["received"]
print(f"medians of {rounds} rounds; latency in µs, server CPU in % of one core")
print(f"{'rooms':>5} {'users':>5} | {'p50 on':>7} {'off':>7} {'ratio':>5} | {'p99 on':>7} {'off':>7} {'ratio':>5} | {'CPU on':>6} {'off':>6} {'ratio':>5} | lost on/off")
worst = [0, 0, 0]
for key in sorted(on[0]):
    a = [med(on, key, f) for f in (p50, p99, cpu)]
    b = [med(off, key, f) for f in (p50, p99, cpu)]
    r = [x / y if y else float("inf") for x, y in zip(a, b)]
    worst = [max(w, x) for w, x in zip(worst, r)]
    print(f"{key[0]:>5} {key[1]:>5} | {a[0]:>7.0f} {b[0]:>7.0f} {r[0]:>5.2f} | {a[1]:>7.0f} {b[1]:>7.0f} {r[1]:>5.2f} | {a[2]:>6.1f} {b[2]:>6.1f} {r[2]:>5.2f} | {sum(lost(run[key]) for run in on)}/{sum(lost(run[key]) for run in off)}")
print(f"largest ratio on/off: p50 {worst[0]:.2f}, p99 {worst[1]:.2f}, server CPU {worst[2]:.2f}")
tick = 1e6 / os.sysconf("SC_CLK_TCK")
def thread_us(archive, r):
    db = rest = 0
    for line in open(f"{out}/{archive}-{r}.ticks"):
        name, _, ticks = line.rstrip().rpartition(" ")
        if not ticks.isdigit():
            continue
        if name == "sqlx-sqlite-wor":
            db += int(ticks)
        else:
            rest += int(ticks)
    sent = sum(x["sent"] for x in loads(archive, r).values())
    return db * tick / sent, rest * tick / sent
for archive in ("true", "false"):
    per = [thread_us(archive, r) for r in range(1, rounds + 1)]
    print(f"archive {'on ' if archive == 'true' else 'off'}: CPU a message sent, over all loads, by round: database's threads "
          + ", ".join(f"{d:.2f}" for d, _ in per) + " µs; the server's others " + ", ".join(f"{o:.2f}" for _, o in per) + " µs")
PY
