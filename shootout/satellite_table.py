#!/usr/bin/env python3
"""The satellite-link study's tables from shootout/satellite.sh's result files
(OUT/<mode>/<rate>-<delay>.json, mode starttls, direct-tls, zero (the optimised profile), zero-tls (the same over TLS with pinned certificates), prosody or ejabberd (a pair of those servers) or irc-ngircd, irc-ircu and irc-switchboard (IRC users on two linked servers)), beside the
figures the study published for
standard and optimised S2S (2 B payload; and by payload at 2400 bit/s with no
delay). Usage: satellite_table.py OUT-DIR"""

import json
import math
import pathlib
import re
import sys

# (rate bit/s, one-way delay s) -> (standard stable, standard first, optimised stable, optimised first), seconds.
STUDY = {
    (2400, 0.0): (1.2, 36.3, 0.7, 2.9),
    (2400, 0.5): (2.3, 57.0, 1.8, 4.9),
    (2400, 1.0): (3.3, 78.5, 2.8, 6.9),
    (19200, 0.0): (0.16, 4.6, 0.10, 0.4),
    (19200, 0.5): (1.15, 25.8, 1.10, 2.4),
    (19200, 1.0): (2.15, 46.9, 2.10, 4.4),
}
# payload bytes -> (standard, optimised) stable round trip at 2400 bit/s, no delay.
STUDY_PAYLOAD = {2: (1.2, 0.7), 100: (1.85, 1.4), 200: (2.3, 1.85), 500: (3.75, 3.2)}
# payload bytes -> link utilisation of one stream of stanzas at 2400 bit/s.
STUDY_UTILISATION = {10: "22%", 100: "46%", 1024: "70%", 10240: "74%"}


def seconds(text):
    """A delay as the script names it (0s, 500ms, 1s) in seconds."""
    m = re.fullmatch(r"([0-9.]+)(ms|s)", text)
    if not m:
        raise SystemExit(f"not a delay: {text}")
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


MODES = ("starttls", "direct-tls", "zero", "zero-tls", "prosody", "ejabberd")
IRC_MODES = ("irc-ngircd", "irc-ircu", "irc-switchboard", "irc-switchboard-nats")
# The study's IRC (two ircu servers): ping round trip at 2400 bit/s with no
# delay by payload, and link utilisation of one stream by payload.
STUDY_IRC_PING = {10: "3.5 s", 100: "4.5 s"}
STUDY_IRC_UTILISATION = {10: "1.6%", 100: "11%"}


def cell_files(folder):
    """Each result file of a mode's folder with figures: its path, rate, delay and result."""
    for path in sorted(folder.glob("*.json")):
        rate, delay = path.stem.split("-", 1)
        run = json.loads(path.read_text())["runs"][0]
        if not run["results"]:
            print(f"{path}: no figures: {run.get('error')}", file=sys.stderr)
            continue
        yield path, int(rate), seconds(delay), run["results"][0]


def cells(folder):
    for _, rate, delay, result in cell_files(folder):
        yield rate, delay, result


def utilisation(t, rate):
    """The bodies' bits of a throughput row over what the link could carry in its time."""
    return t["size"] * t["messages"] * 8 / (rate * t["duration_us"] / 1e6)


def link_bytes(path):
    """Payload bytes both ways on a cell's links, from their 'link stopped' lines."""
    if not path.exists():
        return None
    total = 0
    for line in path.read_text().splitlines():
        fields = dict(re.findall(r"(\w+)=(\d+)", line))
        total += int(fields.get("up_bytes", 0)) + int(fields.get("down_bytes", 0))
    return total


def bytes_per_message(path, result):
    """Link bytes both ways over a cell's messages (set-up, pings and
    acknowledgements included): None without the cell's .link file."""
    total = link_bytes(path.with_suffix(".link"))
    if not total:
        return None
    messages = 2 + sum(2 * x["round_trip"]["count"] for x in result["rows"]) + sum(t["messages"] for t in result.get("throughput", []))
    return total / messages


def steady_bytes_per_message(path):
    """What a message cost the link once the servers were linked and the
    clients in the channel: the cell run again with more round trips
    (CELL.steady), its link bytes over the first run's, per message."""
    steady = path.with_suffix(".steady")
    first = link_bytes(path.with_suffix(".link"))
    if not steady.exists() or not first:
        return None
    extra = int(dict(re.findall(r"(\w+)=(\d+)", steady.read_text())).get("extra_round_trips", 0))
    more = link_bytes(steady)
    return (more - first) / (2 * extra) if extra and more else None


def irc_table(out):
    """Two linked IRC servers, a client on each in one channel: the stable
    round trip by payload, the link's set-up as the clients saw it, and what
    a message cost the link over the whole cell and once linked."""
    for mode in IRC_MODES:
        found = sorted(cell_files(out / mode), key=lambda c: (-c[1], c[2])) if (out / mode).is_dir() else []
        if not found:
            continue
        print()
        print(f"| {mode} | one-way delay | stable (p50) by payload | servers linked, seen by both clients | link bytes a message (whole cell) | link bytes a message, once linked | study IRC (ircu), 2400 bit/s, no delay |")
        print("|---|---|---|---|---|---|---|")
        for path, rate, delay, r in found:
            stable = ", ".join(f"{x['size']} B {x['round_trip']['p50_us'] / 1e6:.2f} s" for x in r["rows"] if x["typing_us"] == 0)
            per = bytes_per_message(path, r)
            per = f"{per:.0f} B" if per else "–"
            steady = steady_bytes_per_message(path)
            steady = f"{steady:.0f} B" if steady is not None else "–"
            met = f"{r['met_us'] / 1e6:.2f} s" if r.get("met_us") is not None else "–"
            study = ", ".join(f"{k} B {v}" for k, v in STUDY_IRC_PING.items()) if (rate, delay) == (2400, 0.0) else "–"
            study = f"{study}; 40 B of overhead" if (rate, delay) == (2400, 0.0) else study
            print(f"| {rate} bit/s | {delay:g} s | {stable} | {met} | {per} | {steady} | {study} |")
        rows = []
        for _, rate, delay, r in found:
            for t in r.get("throughput", []) if delay == 0.0 else []:
                used = utilisation(t, rate)
                rows.append((rate, t["size"], f"{used:.1%} ({t['messages']} in {t['duration_us'] / 1e6:.1f} s)"))
        if rows:
            print()
            print(f"| {mode} throughput, no delay | payload | bodies' share of the link | study IRC (ircu) |")
            print("|---|---|---|---|")
            for rate, size, used in sorted(rows, key=lambda x: (-x[0], x[1])):
                print(f"| {rate} bit/s | {size} B | {used} | {STUDY_IRC_UTILISATION.get(size, '–') if rate == 2400 else '–'} |")


def main():
    out = pathlib.Path(sys.argv[1])
    if (out / "login").is_dir():
        login_table(out / "login")
        print()
    irc_table(out)
    by_mode = {mode: {(r, d): x for r, d, x in cells(out / mode)} for mode in MODES if (out / mode).is_dir()}
    if not any(by_mode.values()):
        if (out / "login").is_dir() or any((out / m).is_dir() for m in IRC_MODES):
            return
        raise SystemExit(f"no result files in {out}/starttls, {out}/direct-tls or {out}/zero")
    keys = sorted({k for cells_ in by_mode.values() for k in cells_}, key=lambda k: (-k[0], k[1]))
    s = lambda us: f"{us / 1e6:.2f} s"
    modes = [m for m in MODES if m in by_mode]
    head = " | ".join(f"{m}: stable (p50) / first" for m in modes)
    print()
    print(f"| link | one-way delay | {head} | study standard stable / first | study optimised stable / first |")
    print("|---|---|" + "---|" * len(modes) + "---|---|")
    for rate, delay in keys:
        ours = []
        for mode in modes:
            r = by_mode[mode].get((rate, delay))
            if r is None:
                ours.append("–")
                continue
            row = next(x for x in r["rows"] if x["typing_us"] == 0 and x["size"] == r["rows"][0]["size"])
            ours.append(f"{s(row['round_trip']['p50_us'])} / {s(r['first_us'])}")
        std = STUDY.get((rate, delay))
        study = (f"{std[0]} s / {std[1]} s", f"{std[2]} s / {std[3]} s") if std else ("–", "–")
        print(f"| {rate} bit/s | {delay:g} s | {' | '.join(ours)} | {study[0]} | {study[1]} |")
    found = [(rate, delay, r) for (rate, delay), r in by_mode[modes[0]].items()]
    sized = [(rate, delay, r) for rate, delay, r in found if rate == 2400 and delay == 0.0]
    rows = [x for _, _, r in sized for x in r["rows"] if x["typing_us"] == 0]
    if len(rows) > 1:
        print()
        print(f"| payload, 2400 bit/s, no delay ({modes[0]}) | Switchboard stable (p50) | study standard | study optimised |")
        print("|---|---|---|---|")
        for x in rows:
            std = STUDY_PAYLOAD.get(x["size"], ("–", "–"))
            print(f"| {x['size']} B | {s(x['round_trip']['p50_us'])} | {std[0]} s | {std[1]} s |")
    typing_table(found)
    throughput_table(by_mode, modes)


def throughput_table(by_mode, modes):
    """Link utilisation by payload, with no delay: the bodies' bits over what
    the link could carry in the time they took."""
    rows = {}
    for mode in modes:
        for (rate, delay), r in by_mode[mode].items():
            if delay == 0.0:
                for t in r.get("throughput", []):
                    used = utilisation(t, rate)
                    # Random letters and digits carry log2(62) bits a character, not 8:
                    # deflate gets close to that, which the second figure takes off.
                    info = used * math.log2(62) / 8
                    rows.setdefault((rate, t["size"]), {})[mode] = f"{used:.0%} / {info:.0%} ({t['messages']} in {t['duration_us'] / 1e6:.1f} s)"
    if not rows:
        return
    print()
    print(f"| throughput, no delay | payload | {' | '.join(m + ': bodies / their information' for m in modes)} | study (standard, compressed; random bytes) |")
    print("|---|---|" + "---|" * len(modes) + "---|")
    for (rate, size), cells_ in sorted(rows.items(), key=lambda x: (-x[0][0], x[0][1])):
        study = STUDY_UTILISATION.get(size, "–") if rate == 2400 else "–"
        print(f"| {rate} bit/s | {size} B | {' | '.join(cells_.get(m, '–') for m in modes)} | {study} |")


def login_table(folder):
    """Client logins by style, each cell's p50 to a first message, with the round
    trips and bytes of one login, and fast's share of standard's time."""
    runs = []
    for path in sorted(folder.glob("*.json")):
        rate, delay = path.stem.split("-", 1)
        run = json.loads(path.read_text())["runs"][0]
        if run["results"]:
            runs.append((int(rate), seconds(delay), {r["style"]: r for r in run["results"]}))
    if not runs:
        return
    print()
    print("| client login | one-way delay | standard: time (p50), round trips, bytes up / down | sasl2 | fast | fast / standard |")
    print("|---|---|---|---|---|---|")
    for rate, delay, styles in sorted(runs, key=lambda x: (-x[0], x[1])):
        cell = lambda r: f"{r['first_message']['p50_us'] / 1e6:.2f} s, {r['round_trips']}, {r['bytes_sent']} / {r['bytes_received']} B" if r else "–"
        std, fast = styles.get("standard"), styles.get("fast")
        ratio = f"{fast['first_message']['p50_us'] / std['first_message']['p50_us']:.2f}" if std and fast else "–"
        print(f"| {rate} bit/s | {delay:g} s | {cell(std)} | {cell(styles.get('sasl2'))} | {cell(fast)} | {ratio} |")


def typing_table(found):
    """Round trips at 2400 bit/s with no delay by how long the answer waited."""
    rows = [x for rate, delay, r in found if rate == 2400 and delay == 0.0 for x in r["rows"]]
    if len({x["typing_us"] for x in rows}) < 2:
        return
    print()
    print("| payload, 2400 bit/s, no delay | answer after | Switchboard stable (p50), the wait taken off |")
    print("|---|---|---|")
    for x in rows:
        print(f"| {x['size']} B | {x['typing_us'] / 1e6:g} s | {x['round_trip']['p50_us'] / 1e6:.2f} s |")


if __name__ == "__main__":
    main()
