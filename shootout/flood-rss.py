#!/usr/bin/env python3
"""Does the server give memory back after an attack? Starts `switchboard serve`,
puts a normal load on it, reads its RSS, then runs two floods one after the other
and follows RSS for 30 s after each ends. Prints one JSON object on stdout.

    shootout/flood-rss.py --bin target/release/switchboard [--sessions 100000] [--joins 1000]

The floods are the two that grew RSS most before the limits existed:
- sessions: fresh SockJS `xhr` sessions, each a new id, over 50 keep-alive
  connections; each lives for the disconnect delay (5 s) after its request.
- joins: that many WebSocket clients join one chat room under 64-character
  names, then all leave.

The server runs with its limits opened wide enough (`--max-sessions`,
`--session-rate`, `--join-rate`) that the flood is admitted in full: this
measures what the allocator returns, not what the limits refuse. The normal
load, 100 chat members in 10 rooms, stays connected throughout.

Plain asyncio and hand-written HTTP and RFC 6455, so it needs nothing
installed. Traffic goes only to 127.0.0.1.
"""

import argparse
import asyncio
import json
import resource
import socket
import subprocess
import sys
import time

from rawws import rss_bytes, ws_drain, ws_frame, ws_open

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


async def read_response(reader):
    """One HTTP/1.1 response; returns (status, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            body += await reader.readexactly(size + 2)
            if size == 0:
                return status, body
    return status, b""


def ws_text(payload):
    return ws_frame(0x1, payload.encode())


async def normal_load(port, members):
    """`members` chat clients in 10 rooms, joined and each having said one thing."""
    conns = []
    for i in range(members):
        reader, writer = await ws_open(HOST, port, "/chat/websocket")
        writer.write(ws_text(json.dumps({"name": f"member{i}", "room": f"room{i % 10}"})))
        writer.write(ws_text(json.dumps({"message": "hello"})))
        conns.append((reader, writer, asyncio.create_task(ws_drain(reader, writer))))
    return conns


async def session_flood(port, sessions, connections=50):
    """`sessions` fresh xhr sessions over keep-alive connections; returns how many opened."""
    opened = 0
    per = sessions // connections

    async def one_connection(c):
        nonlocal opened
        reader, writer = await asyncio.open_connection(HOST, port)
        for i in range(per):
            sid = f"{c:04d}{i:08d}" + "x" * 20
            writer.write(f"POST /echo/000/{sid}/xhr HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 0\r\n\r\n".encode())
            status, body = await read_response(reader)
            if status == 200 and body.startswith(b"o"):
                opened += 1
        writer.close()

    await asyncio.gather(*(one_connection(c) for c in range(connections)))
    return opened


async def join_storm(port, joins, at_once=100):
    """`joins` WebSocket clients join one room under 64-character names, then all leave."""
    conns = []
    sem = asyncio.Semaphore(at_once)

    async def one(i):
        async with sem:
            reader, writer = await ws_open(HOST, port, "/chat/websocket")
            writer.write(ws_text(json.dumps({"name": f"{i:06d}" + "n" * 58, "room": "storm"})))
            conns.append((reader, writer, asyncio.create_task(ws_drain(reader, writer))))

    await asyncio.gather(*(one(i) for i in range(joins)))
    # Every member has had its roster and some presence traffic; then all leave.
    await asyncio.sleep(2)
    for _, writer, task in conns:
        writer.close()
        task.cancel()
    return len(conns)


async def follow(pid, seconds):
    """RSS once a second for `seconds`; returns the samples."""
    samples = []
    for _ in range(seconds):
        await asyncio.sleep(1)
        samples.append(rss_bytes(pid))
    return samples


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the switchboard binary")
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--joins", type=int, default=1000)
    ap.add_argument("--members", type=int, default=100, help="the normal load's chat members")
    ap.add_argument("--after", type=int, default=30, help="seconds to follow RSS after each flood")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out = {"label": args.label, "normal_load_members": args.members, "floods": []}
    for name, flood, size in (("sessions", session_flood, args.sessions), ("joins", join_storm, args.joins)):
        out["floods"].append(await one_flood(args, name, flood, size))
    print(json.dumps(out, indent=2))


async def one_flood(args, name, flood, size):
    """A fresh server, the normal load, one flood, and RSS for `args.after` s after it."""
    port = free_port()
    server = subprocess.Popen(
        [
            args.bin, "serve", "--listen", f"{HOST}:{port}", "--xmpp-listen", "off", "--irc-listen", "off",
            "--max-sessions", str(args.sessions + 1000), "--session-rate", "1000000",
            "--max-room-members", str(args.joins + args.members), "--join-rate", "1000000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        pid = server.pid
        load = await normal_load(port, args.members)
        await asyncio.sleep(2)
        before = rss_bytes(pid)
        t0 = time.monotonic()
        admitted = await flood(port, size)
        took = time.monotonic() - t0
        at_end = rss_bytes(pid)
        samples = await follow(pid, args.after)
        return {
            "flood": name,
            "size": size,
            "admitted": admitted,
            "seconds": round(took, 1),
            "rss_before": before,
            "rss_at_end": at_end,
            "rss_peak": max([at_end] + samples),
            "rss_after": samples[-1],
            "after_seconds": args.after,
            "ratio_after_to_before": round(samples[-1] / before, 2),
            "normal_load_still_connected": sum(1 for _, _, task in load if not task.done()),
        }
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
