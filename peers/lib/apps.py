"""The four Switchboard apps (echo, broadcast, chat, count) for the Python
peers, with Switchboard's exact message formats (docs/apps.md, "Apps and message
formats"; crates/wire/src/app.rs). Transport-free: a peer's server gives each
app a `conn` object with a `send(text)` method and calls on_open / on_message /
on_close.

Fan-out goes through a Room so a peer can use its own idiomatic broadcast
(sockjs-tornado: `SockJSRouter.broadcast`, which encodes a message once for all
its sessions); the default Room writes to each member in turn.

Runs on CPython and PyPy 3.9+.
"""

import json
import sys

MAX_NAME_LEN = 64
I64_MIN = -(2 ** 63)
I64_MAX = 2 ** 63 - 1
APP_NAMES = ("echo", "broadcast", "chat", "count")


def dumps(obj):
    """Compact JSON with raw UTF-8, byte for byte what Switchboard (serde_json) sends."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def error_json(message):
    return dumps({"error": message})


class Room(object):
    """Members of one fan-out group; publish() sends to each in turn."""

    def __init__(self, key):
        self.key = key
        self.conns = {}  # insertion-ordered set

    def add(self, conn):
        self.conns[conn] = None

    def remove(self, conn):
        self.conns.pop(conn, None)

    def publish(self, text):
        for c in list(self.conns):
            c.send(text)


def _strict_object(text, keys):
    """The JSON object in `text` if it has exactly `keys`, else None."""
    try:
        v = json.loads(text)
    except ValueError:
        return None
    if not isinstance(v, dict) or set(v) != set(keys):
        return None
    return v


def count_answer(n):
    """(ok, body) for a count n: {"count":n-1}, or an error out of i64 range."""
    if n < I64_MIN or n > I64_MAX:
        return False, error_json("malformed message: count out of the 64-bit range")
    if n == I64_MIN:
        return False, error_json("count out of range")
    return True, '{"count":%d}' % (n - 1)


def count_message(text):
    v = _strict_object(text, ("count",))
    if v is None or type(v["count"]) is not int:
        return error_json('malformed message: expected {"count":N}')
    return count_answer(v["count"])[1]


def count_xhr(raw):
    """GET /count/xhr?count=N with `raw` the count argument (or None) → (status, body)."""
    if raw is None:
        return 400, error_json("malformed message: expected ?count=N")
    s = raw[1:] if raw[:1] in ("+", "-") else raw
    if not s.isdigit() or not s.isascii():
        return 400, error_json("malformed message: count %s is not an integer" % dumps(raw))
    ok, body = count_answer(int(raw))
    return (200 if ok else 400), body


class EchoApp(object):
    def on_open(self, conn):
        pass

    def on_message(self, conn, text):
        conn.send(text)

    def on_close(self, conn):
        pass


class BroadcastApp(object):
    def __init__(self, make_room):
        self.room = make_room("broadcast")

    def on_open(self, conn):
        self.room.add(conn)

    def on_message(self, conn, text):
        self.room.publish(text)

    def on_close(self, conn):
        self.room.remove(conn)


class CountApp(object):
    def on_open(self, conn):
        pass

    def on_message(self, conn, text):
        conn.send(count_message(text))

    def on_close(self, conn):
        pass


class _ChatRoom(object):
    def __init__(self, room):
        self.room = room
        self.names = {}  # name → conn, in join order


class ChatApp(object):
    def __init__(self, make_room):
        self.make_room = make_room
        self.rooms = {}  # room name → _ChatRoom
        self.joined = {}  # conn → (name, room)

    def on_open(self, conn):
        pass

    def on_message(self, conn, text):
        me = self.joined.get(conn)
        if me is None:
            return self._join(conn, text)
        v = _strict_object(text, ("message",))
        if v is None or not isinstance(v["message"], str):
            return conn.send(error_json('malformed message: expected {"message":"..."}'))
        name, room = me
        self.rooms[room].room.publish(dumps({"name": name, "room": room, "message": v["message"]}))

    def _join(self, conn, text):
        v = _strict_object(text, ("name", "room"))
        if v is None or not isinstance(v["name"], str) or not isinstance(v["room"], str):
            return conn.send(error_json('malformed message: expected {"name":"...","room":"..."}'))
        for field in ("name", "room"):
            n = len(v[field].encode("utf-8", "surrogatepass"))
            if n < 1 or n > MAX_NAME_LEN:
                return conn.send(error_json("invalid %s: must be 1 to %d bytes" % (field, MAX_NAME_LEN)))
        name, room = v["name"], v["room"]
        r = self.rooms.get(room)
        if r is not None and name in r.names:
            return conn.send(error_json("name %s is already taken in room %s" % (dumps(name), dumps(room))))
        if r is None:
            r = self.rooms[room] = _ChatRoom(self.make_room("chat:" + room))
        r.names[name] = conn
        r.room.add(conn)
        self.joined[conn] = (name, room)
        conn.send(dumps({"event": "members", "room": room, "members": list(r.names)}))
        r.room.publish(dumps({"event": "join", "name": name, "room": room}))

    def on_close(self, conn):
        me = self.joined.pop(conn, None)
        if me is None:
            return
        name, room = me
        r = self.rooms[room]
        r.names.pop(name, None)
        r.room.remove(conn)
        if not r.names:
            del self.rooms[room]
            return
        r.room.publish(dumps({"event": "leave", "name": name, "room": room}))


def make_apps(make_room=Room):
    """One instance of each app; `make_room(key)` builds a Room."""
    return {
        "echo": EchoApp(),
        "broadcast": BroadcastApp(make_room),
        "chat": ChatApp(make_room),
        "count": CountApp(),
    }


def parse_port(argv):
    try:
        port = int(argv[1])
        if not 0 <= port <= 65535:
            raise ValueError
        return port
    except (IndexError, ValueError):
        sys.stderr.write("usage: %s PORT\n" % argv[0])
        sys.exit(2)


def announce(port):
    """The one line the caller waits for (start.sh contract)."""
    sys.stdout.write("listening on http://127.0.0.1:%d/\n" % port)
    sys.stdout.flush()
