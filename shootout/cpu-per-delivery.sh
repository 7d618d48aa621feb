#!/usr/bin/env bash
# Server CPU per delivered message at one fixed broadcast load: each server in
# turn on core 0 (taskset), the bench on core 1, ROUNDS rounds interleaved;
# prints each round and each server's best round, and each server's best as a
# ratio to the first server's. A figure only means something while the server
# is not saturated (its CPU well under 100 %): a saturated server batches more
# and its CPU per delivery falls with the load.
#
#   shootout/cpu-per-delivery.sh [SERVER...]     default: switchboard bun
#   RATE=500 CLIENTS=200 STEP_SECONDS=10 ROUNDS=2   the load (msgs/s sent, each to every client)
#   WRITE_DELAY=5ms                               the delay of the server named switchboard+delay:
#                                                 Switchboard with --write-delay, its writes gathered
#                                                 (switchboard+tasks: with --shared-writer false,
#                                                 each client's messages written by its own task)
#   CPD_JSON=FILE                                 also write the figures as JSON (the shootout does)
#
# Needs the release build (make build) and the peers named (peers/<peer>/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. shootout/lib.sh
RATE="${RATE:-500}" CLIENTS="${CLIENTS:-200}" STEP_SECONDS="${STEP_SECONDS:-10}" ROUNDS="${ROUNDS:-2}"
SERVERS=("$@"); [ ${#SERVERS[@]} -gt 0 ] || SERVERS=(switchboard bun)
BIN=target/release/switchboard
[ -x "$BIN" ] || { echo "cpu-per-delivery: no $BIN; run make build" >&2; exit 1; }
OUT="$(mktemp -d)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; true' EXIT

for round in $(seq "$ROUNDS"); do
  for name in "${SERVERS[@]}"; do
    log="$OUT/$name-$round.log"
    : >"$log"
    if [[ "$name" = switchboard* ]]; then
      case "$name" in
        switchboard) options=() ;;
        switchboard+delay) options=(--write-delay "${WRITE_DELAY:-5ms}") ;;
        switchboard+tasks) options=(--shared-writer false) ;;
        *) echo "cpu-per-delivery: no such server: $name" >&2; exit 1 ;;
      esac
      taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --xmpp-listen off --irc-listen off "${options[@]}" >>"$log" 2>&1 &
    else
      taskset -c 0 "peers/$name/start.sh" 0 >>"$log" 2>&1 &
    fi
    PID=$!
    port="$(listening_port "$log" "$PID" "cpu-per-delivery: $name")" || exit 1
    taskset -c 1 "$BIN" bench broadcast --quiet --target "${name/+/-}=http://127.0.0.1:$port/broadcast" --server-pid "$PID" \
      --levels "$CLIENTS" --start-rate "$RATE" --max-rate "$RATE" --step-seconds "$STEP_SECONDS" \
      --out "$OUT/$name-$round.json" >"$OUT/$name-$round.bench.log" 2>&1 \
      || { echo "cpu-per-delivery: the bench failed against $name: $(tail -n3 "$OUT/$name-$round.bench.log")" >&2; exit 1; }
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  done
done

python3 - "$OUT" "$ROUNDS" "${CPD_JSON:-}" "$RATE" "$CLIENTS" "${WRITE_DELAY:-5ms}" "${SERVERS[@]}" <<'PY'
import json, sys
out, rounds, json_out, rate, clients, delay, servers = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7:]
best, figures = {}, {"rate": rate, "clients": clients, "rounds": []}
if "switchboard+delay" in servers:
    figures["write_delay"] = delay
print(f"{'server':<18} {'round':>5} {'deliveries/s':>13} {'lost':>5} {'server CPU':>10} {'µs/delivery':>12} {'p50 ms':>7} {'p99 ms':>7}")
for name in servers:
    for r in range(1, rounds + 1):
        step = json.load(open(f"{out}/{name}-{r}.json"))["runs"][0]["levels"][0]["steps"][0]
        cpu, per_s = step["resources"]["server_cpu_pct"], step["received_per_s"]
        us = cpu / 100 * 1e6 / per_s if per_s else float("inf")
        p50, p99 = step["round_trip"]["p50_us"] / 1000, step["round_trip"]["p99_us"] / 1000
        print(f"{name:<18} {r:>5} {per_s:>13,.0f} {step['lost']:>5} {cpu:>9.1f}% {us:>12.3f} {p50:>7.2f} {p99:>7.2f}")
        best[name] = min(best.get(name, us), us)
        figures["rounds"].append({"server": name, "round": r, "deliveries_per_s": per_s, "lost": step["lost"],
                                  "server_cpu_pct": cpu, "us_per_delivery": us, "p50_ms": p50, "p99_ms": p99})
first = servers[0]
print()
for name in servers:
    print(f"best {name:<18} {best[name]:.3f} µs/delivery" + ("" if name == first else f"   {first}/{name} = {best[first] / best[name]:.2f}×"))
figures["best_us_per_delivery"] = best
if json_out:
    with open(json_out, "w") as f:
        json.dump(figures, f, indent=2)
PY
