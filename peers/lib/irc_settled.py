#!/usr/bin/env python3
"""Waits until two linked IRC servers have settled: their link is up and
each has taken the other's burst in, so that channel messages cross. ircu
drops a channel message bound for a server whose link is still bursting
(until that server acknowledges the burst, EB then EA in P10), silently;
clients that join and talk at once lose their first messages.

A client registers on each server; each asks, every 2 seconds (ircu
charges a client about 2 s of flood control a command), for the other's
WHOIS as answered by the other's own server (`WHOIS nick nick`) and waits
for its 317 (idle time), which only that server sends: the answer crossed
the link after the other server's burst and its acknowledgement of ours,
which the link carries in order. Exits 0 once both answers came, 1 after
TIMEOUT seconds (default 600).

Usage: irc_settled.py HOST:PORT HOST:PORT [TIMEOUT]"""

import select
import socket
import sys
import time


class Probe:
    def __init__(self, address, nick, other):
        host, port = address.rsplit(":", 1)
        self.address, self.nick, self.other = address, nick, other
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.setblocking(False)
        self.sock.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :link probe\r\n".encode())
        self.pending = b""
        self.welcomed = False
        self.asked = None
        self.idle_seen = False
        self.settled = False

    def poll(self):
        """Reads what came, answers PINGs; asks again when it is time."""
        if self.welcomed and not self.settled and (self.asked is None or time.monotonic() - self.asked >= 2):
            self.sock.sendall(f"WHOIS {self.other} {self.other}\r\n".encode())
            self.asked, self.idle_seen = time.monotonic(), False
        try:
            data = self.sock.recv(4096)
        except BlockingIOError:
            return
        if not data:
            sys.exit(f"irc_settled: {self.address} closed the connection")
        self.pending += data
        *lines, self.pending = self.pending.split(b"\r\n")
        for line in lines:
            words = line.decode("utf-8", "replace").split(" ")
            if words[0] == "PING":
                self.sock.sendall(("PONG " + " ".join(words[1:]) + "\r\n").encode())
            elif len(words) > 3 and words[1] == "001":
                self.welcomed = True
            elif len(words) > 3 and words[1] == "317" and words[3] == self.other:
                self.idle_seen = True
            elif len(words) > 3 and words[1] == "318" and self.idle_seen:
                self.settled = True


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    deadline = time.monotonic() + (float(sys.argv[3]) if len(sys.argv) == 4 else 600.0)
    probes = [Probe(sys.argv[1], "settlea", "settleb"), Probe(sys.argv[2], "settleb", "settlea")]
    while time.monotonic() < deadline:
        for probe in probes:
            probe.poll()
        if all(p.settled for p in probes):
            for p in probes:
                p.sock.sendall(b"QUIT\r\n")
            return
        # Until a probe has something to read, or it is time to ask again.
        select.select([p.sock for p in probes], [], [], 0.5)
    sys.exit("irc_settled: the servers did not settle in time")


if __name__ == "__main__":
    main()
