#!/usr/bin/env python3
"""Smoke check of an IRC server peer (peers/ircu, ngircd, inspircd, hybrid).

Usage: python3 peers/check-irc.py HOST PORT

Standard library only. Prints one line per check and exits 1 if any failed
(2 on a usage error). The checks:

  1. message   two clients register (NICK, USER; any PING answered with PONG,
               during registration too; until 001), both JOIN #bench (until
               366), A sends `PRIVMSG #bench :hello <random>`, B must receive
               exactly that text.
  2. clones    200 more clients register at once from the same address; all
               must get 001 within 30 s (no clone limit, no throttle).
  3. flood     A sends 50 PRIVMSGs to #bench back-to-back (one write); B must
               receive all 50, in order, within 10 s. If they take longer the
               wait goes on (up to FLOOD_WAIT_S) so that the line reports the
               time they took: that is the flood control the server keeps.

Every wait is bounded; nothing is left connected at the end.
"""

import random
import select
import selectors
import socket
import string
import sys
import time

REGISTER_S = 15
JOIN_S = 10
MESSAGE_S = 5
CLONES = 200
CLONES_S = 30
FLOOD = 50
FLOOD_S = 10
FLOOD_WAIT_S = 150
CHANNEL = "#bench"
# The user name of every client: ircu refuses some (mixed case, two groups of
# digits, ...), never a lower-case word.
USERNAME = "check"


class Gone(Exception):
    """The server closed the connection (or sent ERROR)."""


def token(n=6):
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def parse(line):
    """(source, command, params) of one IRC line (tags dropped)."""
    if line.startswith("@"):
        line = line.split(" ", 1)[1] if " " in line else ""
    source = ""
    if line.startswith(":"):
        source, _, line = line[1:].partition(" ")
    if " :" in line:
        head, _, trailing = line.partition(" :")
        params = head.split() + [trailing]
    else:
        params = line.split()
    command = params.pop(0).upper() if params else ""
    return source, command, params


class Client:
    """One blocking IRC connection that answers PING wherever it reads."""

    def __init__(self, host, port, nick):
        self.nick = nick
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buf = b""

    def send(self, text):
        self.sock.sendall(text.encode() + b"\r\n")

    def line(self, deadline):
        """The next line (str) before deadline, PINGs answered; None on timeout.
        A deadline already past reads only what has arrived (no wait)."""
        while True:
            if b"\n" in self.buf:
                raw, self.buf = self.buf.split(b"\n", 1)
                text = raw.rstrip(b"\r").decode("utf-8", "replace")
                _, command, params = parse(text)
                if command == "PING":
                    self.send("PONG :" + (params[-1] if params else ""))
                    continue
                if command == "ERROR":
                    raise Gone(text)
                return text
            ready, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            data = self.sock.recv(65536)
            if not data:
                raise Gone("connection closed by the server")
            self.buf += data

    def wait_for(self, command, seconds, what):
        """Reads until a line with COMMAND (a numeric or a word); fails after seconds."""
        deadline = time.monotonic() + seconds
        while True:
            text = self.line(deadline)
            if text is None:
                raise TimeoutError(f"{self.nick}: no {what} within {seconds} s")
            _, cmd, params = parse(text)
            if cmd in ("432", "433", "436", "437"):
                raise RuntimeError(f"{self.nick}: nickname refused: {text}")
            if cmd == "465" or cmd == "KILL":
                raise RuntimeError(f"{self.nick}: {text}")
            if cmd == command:
                return params

    def register(self):
        self.send(f"NICK {self.nick}")
        self.send(f"USER {USERNAME} 0 * :check-irc")
        self.wait_for("001", REGISTER_S, "welcome (001)")

    def join(self, channel):
        self.send(f"JOIN {channel}")
        self.wait_for("366", JOIN_S, f"end of NAMES (366) for {channel}")

    def close(self):
        try:
            self.send("QUIT :done")
        except OSError:
            pass
        self.sock.close()


def check_message(a, b):
    text = f"hello {token(10)}"
    a.send(f"PRIVMSG {CHANNEL} :{text}")
    deadline = time.monotonic() + MESSAGE_S
    while True:
        line = b.line(deadline)
        if line is None:
            return False, f"B got no PRIVMSG within {MESSAGE_S} s"
        source, cmd, params = parse(line)
        if cmd == "PRIVMSG" and params[:1] == [CHANNEL]:
            if source.split("!", 1)[0] != a.nick:
                return False, f"B got a PRIVMSG from {source}, not from A: {line}"
            if params[-1] != text:
                return False, f"B got {params[-1]!r}, A sent {text!r}"
            return True, f"B received A's {text!r} on {CHANNEL}"


def check_clones(host, port, prefix):
    """CLONES clients connect and register at once (one selector loop)."""
    sel = selectors.DefaultSelector()
    conns = {}
    start = time.monotonic()
    for i in range(CLONES):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        nick = f"{prefix}{i}"
        conns[s] = {"nick": nick, "buf": b"", "out": f"NICK {nick}\r\nUSER {USERNAME} 0 * :check-irc\r\n".encode(), "welcomed": None, "error": None}
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    deadline = start + CLONES_S
    welcomed = 0
    errors = []
    try:
        while welcomed + len(errors) < CLONES and time.monotonic() < deadline:
            for key, mask in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                s, c = key.fileobj, conns[key.fileobj]
                if mask & selectors.EVENT_WRITE and c["out"]:
                    try:
                        n = s.send(c["out"])
                        c["out"] = c["out"][n:]
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError as e:
                        c["error"] = f"send: {e}"
                    if not c["out"] and c["error"] is None:
                        sel.modify(s, selectors.EVENT_READ)
                if mask & selectors.EVENT_READ and c["error"] is None:
                    try:
                        data = s.recv(65536)
                    except (BlockingIOError, InterruptedError):
                        data = None
                    except OSError as e:
                        data, c["error"] = None, f"recv: {e}"
                    if data == b"":
                        c["error"] = "closed by the server"
                    elif data:
                        c["buf"] += data
                        while b"\n" in c["buf"]:
                            raw, c["buf"] = c["buf"].split(b"\n", 1)
                            text = raw.rstrip(b"\r").decode("utf-8", "replace")
                            _, cmd, params = parse(text)
                            if cmd == "PING":
                                try:
                                    s.send(b"PONG :" + (params[-1] if params else "").encode() + b"\r\n")
                                except OSError:
                                    pass
                            elif cmd == "001" and c["welcomed"] is None:
                                c["welcomed"] = time.monotonic() - start
                                welcomed += 1
                            elif cmd in ("ERROR", "432", "433", "436", "465") and c["error"] is None:
                                c["error"] = text
                if c["error"] is not None and c["nick"] not in [e[0] for e in errors]:
                    errors.append((c["nick"], c["error"]))
                    try:
                        sel.unregister(s)
                    except (KeyError, ValueError):
                        pass
    finally:
        for s in conns:
            try:
                s.send(b"QUIT :done\r\n")
            except OSError:
                pass
            s.close()
        sel.close()
    times = sorted(c["welcomed"] for c in conns.values() if c["welcomed"] is not None)
    if welcomed == CLONES:
        return True, f"{CLONES} clients registered at once from one address, all welcomed within {times[-1]:.2f} s"
    detail = f"; first error: {errors[0][0]}: {errors[0][1]}" if errors else ""
    return False, f"{welcomed} of {CLONES} clients welcomed within {CLONES_S} s, {len(errors)} refused or closed{detail}"


def check_flood(a, b):
    tag = token(4)
    texts = [f"flood {tag} {i:02d}" for i in range(FLOOD)]
    start = time.monotonic()
    a.sock.sendall("".join(f"PRIVMSG {CHANNEL} :{t}\r\n" for t in texts).encode())
    got = []
    at_limit = None
    hard = start + FLOOD_WAIT_S
    while len(got) < FLOOD:
        # A's own socket is read too: answers its PINGs, and catches a kill.
        try:
            while a.line(time.monotonic()) is not None:
                pass
        except Gone as e:
            return False, f"A was disconnected after sending {FLOOD} messages: {e}"
        line = b.line(min(hard, time.monotonic() + 0.2))
        now = time.monotonic()
        if at_limit is None and now - start > FLOOD_S:
            at_limit = len(got)
        if line is None:
            if now >= hard:
                break
            continue
        _, cmd, params = parse(line)
        if cmd == "PRIVMSG" and params[:1] == [CHANNEL] and params[-1].startswith(f"flood {tag} "):
            got.append((params[-1], now - start))
    took = got[-1][1] if got else None
    if at_limit is None:
        at_limit = len(got)
    if [t for t, _ in got] != texts[: len(got)]:
        return False, f"B received {len(got)} messages out of order or altered"
    if len(got) < FLOOD:
        return False, f"B received {len(got)} of {FLOOD} back-to-back messages within {FLOOD_WAIT_S} s ({at_limit} within {FLOOD_S} s)"
    if took > FLOOD_S:
        return False, f"B received all {FLOOD} back-to-back messages in {took:.2f} s, not within {FLOOD_S} s ({at_limit} within {FLOOD_S} s; first after {got[0][1]:.2f} s)"
    return True, f"B received all {FLOOD} back-to-back messages in {took:.3f} s, in order"


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    host, port = sys.argv[1], int(sys.argv[2])
    run = "".join(random.choice(string.ascii_lowercase) for _ in range(3))
    failed = 0

    def report(name, ok, text):
        nonlocal failed
        failed += not ok
        print(f"{name}: {'ok' if ok else 'FAILED'}: {text}", flush=True)

    a = b = None
    try:
        a = Client(host, port, f"a{run}")
        b = Client(host, port, f"b{run}")
        a.register()
        b.register()
        a.join(CHANNEL)
        b.join(CHANNEL)
    except (OSError, Gone, TimeoutError, RuntimeError) as e:
        report("message", False, f"setup: {e}")
        print("clones: skipped\nflood: skipped")
        return 1
    try:
        report("message", *check_message(a, b))
    except (OSError, Gone) as e:
        report("message", False, str(e))
    try:
        report("clones", *check_clones(host, port, f"c{run}"))
    except OSError as e:
        report("clones", False, str(e))
    try:
        report("flood", *check_flood(a, b))
    except (OSError, Gone) as e:
        report("flood", False, str(e))
    for c in (a, b):
        c.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
