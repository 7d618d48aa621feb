#!/usr/bin/env python3
"""RSS per idle WebSocket connection: opens N native WebSocket connections to a
server on this machine, holds them idle, and reads the server's RSS from /proc
before and after. Prints one JSON object on stdout.

    shootout/idle-rss.py --url ws://127.0.0.1:8080/echo/websocket --pid PID [--connections 10000]

Plain asyncio and a hand-written RFC 6455 handshake, so it needs nothing installed.
Traffic goes only to the URL given (127.0.0.1 in the shootout). Raise `ulimit -n`
above N on both sides first.
"""

import argparse
import asyncio
import base64
import json
import os
import resource
import sys
import time
from urllib.parse import urlsplit


def rss_bytes(pid):
    """Resident set size of a process, from /proc/PID/status (VmRSS, kB)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def open_one(host, port, path):
    """One WebSocket handshake; returns the open (reader, writer) pair."""
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status + b" ":
        writer.close()
        raise RuntimeError(f"handshake refused: {status.decode(errors='replace')}")
    return reader, writer


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="ws://127.0.0.1:PORT/echo/websocket")
    ap.add_argument("--pid", type=int, required=True, help="the server's pid")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--at-once", type=int, default=100, help="handshakes in flight at once")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds to wait before reading RSS")
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 100
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        if min(want, hard) < want:
            sys.exit(f"idle-rss: open-file limit {hard} is below {want}; raise ulimit -n")

    u = urlsplit(args.url)
    host, port, path = u.hostname, u.port or 80, (u.path or "/") + (f"?{u.query}" if u.query else "")
    before = rss_bytes(args.pid)
    conns = []
    sem = asyncio.Semaphore(args.at_once)
    t0 = time.monotonic()

    async def guarded():
        async with sem:
            conns.append(await open_one(host, port, path))

    results = await asyncio.gather(*(guarded() for _ in range(args.connections)), return_exceptions=True)
    failures = [r for r in results if isinstance(r, Exception)]
    connect_s = time.monotonic() - t0
    await asyncio.sleep(args.settle)
    after = rss_bytes(args.pid)
    opened = len(conns)
    out = {
        "url": args.url,
        "server_pid": args.pid,
        "connections": opened,
        "failed": len(failures),
        "first_failure": str(failures[0]) if failures else None,
        "connect_s": round(connect_s, 2),
        "rss_before_bytes": before,
        "rss_after_bytes": after,
        "rss_per_connection_bytes": round((after - before) / opened) if opened else None,
    }
    print(json.dumps(out))
    for _, w in conns:
        w.close()


if __name__ == "__main__":
    asyncio.run(main())
