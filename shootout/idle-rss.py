#!/usr/bin/env python3
"""RSS per idle WebSocket connection: opens N native WebSocket connections to a
server on this machine, holds them idle, and reads the server's RSS from /proc
before and after. Prints one JSON object on stdout.

    shootout/idle-rss.py --url ws://127.0.0.1:8080/echo/websocket --pid PID [--connections 10000]

One source address has about 28,000 ephemeral ports, so the connections are
spread over the default address, then 127.0.0.2, 127.0.0.3, ... (all of
127.0.0.0/8 is loopback on Linux), a new one for every --per-source
connections.

Plain asyncio and a hand-written RFC 6455 handshake, so it needs nothing installed.
Traffic goes only to the URL given (127.0.0.1 in the shootout). Raise `ulimit -n`
above N on both sides first.
"""

import argparse
import asyncio
import json
import resource
import sys
import time
from urllib.parse import urlsplit

from rawws import rss_bytes, ws_open


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="ws://127.0.0.1:PORT/echo/websocket")
    ap.add_argument("--pid", type=int, required=True, help="the server's pid")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--at-once", type=int, default=100, help="handshakes in flight at once")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds to wait before reading RSS")
    ap.add_argument("--per-source", type=int, default=14000, help="connections from each loopback source address")
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

    def source(i):
        """The first --per-source connections go from the default address."""
        n = i // args.per_source + 1
        return f"127.0.0.{n}" if host.startswith("127.") and 1 < n < 255 else None

    async def guarded(i):
        async with sem:
            conns.append(await ws_open(host, port, path, source(i)))

    results = await asyncio.gather(*(guarded(i) for i in range(args.connections)), return_exceptions=True)
    failures = [r for r in results if isinstance(r, Exception)]
    connect_s = time.monotonic() - t0
    await asyncio.sleep(args.settle)
    after = rss_bytes(args.pid)
    opened = len(conns)
    out = {
        "url": args.url,
        "server_pid": args.pid,
        "connections": opened,
        "source_addresses": len({source(i) or host for i in range(args.connections)}),
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
