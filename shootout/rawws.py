"""What the shootout's memory scripts share: a process's RSS from /proc, and a
WebSocket client in plain asyncio (hand-written RFC 6455), so that they need
nothing installed."""

import asyncio
import base64
import os
import socket


def rss_bytes(pid):
    """Resident set size of a process, from /proc/PID/status (VmRSS, kB)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def ws_open(host, port, path, source=None):
    """One WebSocket handshake, from the local address `source` if given;
    returns the open (reader, writer) pair."""
    if source:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # The port is chosen at connect for the whole address pair (Linux's
        # IP_BIND_ADDRESS_NO_PORT), so a port that a closed connection to
        # another server holds in TIME_WAIT can be used again.
        sock.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24), 1)
        sock.bind((source, 0))
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, (host, port))
        except BaseException:
            sock.close()
            raise
        reader, writer = await asyncio.open_connection(sock=sock)
    else:
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


def ws_frame(opcode, data):
    """A masked client frame."""
    mask = os.urandom(4)
    n = len(data)
    head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


async def ws_drain(reader, writer):
    """Reads frames until the connection ends, answering pings as a client must."""
    try:
        while True:
            b0, b1 = await reader.readexactly(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(await reader.readexactly(2), "big")
            elif n == 127:
                n = int.from_bytes(await reader.readexactly(8), "big")
            payload = await reader.readexactly(n)
            if b0 & 0x0F == 0x9:
                writer.write(ws_frame(0xA, payload))
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass
