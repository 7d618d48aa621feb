"""The Python `irc` library (PyPI, 20.x), a client nobody here wrote,
against `switchboard serve`'s IRC: it registers and joins #lobby, where a
chat-app WebSocket member and an slixmpp MUC occupant (over STARTTLS, the
server's certificate trusted from CA_FILE) already are, and each of the
three hears the other two, in the room's one order.

    irc_lib.py IRC_PORT XMPP_PORT WS_URL CA_FILE   (exits 0 when every check passed)
"""

import asyncio
import json
import ssl
import sys

import irc.client_aio
import slixmpp
import websockets

from checks import PATIENCE, Checks, next_event

ROOM = "lobby@conference.localhost"


async def next_from(queue, who):
    """The next item of `queue` whose first field is `who`."""
    while True:
        item = await asyncio.wait_for(queue.get(), PATIENCE)
        if item[0] == who:
            return item


async def main(irc_port, xmpp_port, ws_url, ca_file):
    check = Checks()

    ws = await websockets.connect(ws_url, ssl=ssl.create_default_context(cafile=ca_file))
    await ws.send(json.dumps({"name": "Wendy Walker", "room": "lobby"}))
    await next_event(ws, event="join", name="Wendy Walker")

    xmpp = slixmpp.ClientXMPP("localhost", "")
    xmpp.ca_certs = ca_file
    xmpp.register_plugin("xep_0045")
    started = asyncio.Event()
    xmpp.add_event_handler("session_start", lambda _: started.set())
    muc_heard = asyncio.Queue()
    xmpp.add_event_handler("groupchat_message", lambda m: muc_heard.put_nowait((m["mucnick"], m["body"])))
    xmpp.connect(host="127.0.0.1", port=xmpp_port)
    await asyncio.wait_for(started.wait(), PATIENCE)
    await xmpp.plugin["xep_0045"].join_muc_wait(ROOM, "xavier", maxstanzas=0, timeout=PATIENCE)
    await next_event(ws, event="join", name="xavier")

    reactor = irc.client_aio.AioReactor(loop=asyncio.get_running_loop())
    heard = asyncio.Queue()
    names = []
    joined = asyncio.Event()
    welcomed = asyncio.Event()
    reactor.add_global_handler("welcome", lambda c, e: welcomed.set())
    reactor.add_global_handler("namreply", lambda c, e: names.extend(e.arguments[-1].split()))
    reactor.add_global_handler("endofnames", lambda c, e: joined.set())
    reactor.add_global_handler("pubmsg", lambda c, e: heard.put_nowait((e.source.nick, "say", e.arguments[0])))
    reactor.add_global_handler("action", lambda c, e: heard.put_nowait((e.source.nick, "action", e.arguments[0])))
    reactor.add_global_handler("join", lambda c, e: heard.put_nowait((e.source.nick, "join", e.target)))
    reactor.add_global_handler("part", lambda c, e: heard.put_nowait((e.source.nick, "part", e.target)))
    server = reactor.server()
    await server.connect("127.0.0.1", irc_port, "ivy", username="ivy", ircname="Ivy I")
    await asyncio.wait_for(welcomed.wait(), PATIENCE)
    check("registration: the welcome numeric", server.get_nickname() == "ivy")

    server.join("#lobby")
    await asyncio.wait_for(joined.wait(), PATIENCE)
    check(
        "NAMES lists the chat member (by her escaped nickname) and the XMPP occupant",
        "Wendy\\20Walker" in names and "xavier" in names and "@ivy" in names,
        str(names),
    )
    await next_event(ws, event="join", name="ivy")
    check("the chat member sees the IRC user join", True)

    server.privmsg("#lobby", "hello from irc")
    said = await next_event(ws, name="ivy")
    position = {k: said.pop(k, None) for k in ("offset", "epoch")}
    check("the chat member gets the IRC message", said == {"name": "ivy", "room": "lobby", "message": "hello from irc"}, str(said))
    check("with its position in the room's history", isinstance(position["offset"], int) and isinstance(position["epoch"], str), str(position))
    got = await next_from(muc_heard, "ivy")
    check("the XMPP occupant gets the IRC message", got == ("ivy", "hello from irc"), str(got))

    await ws.send(json.dumps({"message": "hello from the chat page"}))
    got = await next_from(heard, "Wendy\\20Walker")
    check("the IRC user gets the chat member's message", got == ("Wendy\\20Walker", "say", "hello from the chat page"), str(got))

    xmpp.send_message(mto=ROOM, mbody="hello from xmpp", mtype="groupchat")
    got = await next_from(heard, "xavier")
    check("the IRC user gets the XMPP occupant's message", got == ("xavier", "say", "hello from xmpp"), str(got))

    server.action("#lobby", "waves")
    said = await next_event(ws, name="ivy")
    check("an IRC action reaches the chat member as /me", said.get("message") == "/me waves", str(said))

    server.part("#lobby")
    await next_event(ws, event="leave", name="ivy")
    check("the chat member sees the IRC user leave", True)
    server.disconnect()
    xmpp.disconnect()
    await ws.close()
    return check.done()


if __name__ == "__main__":
    irc_port, xmpp_port, ws_url, ca_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    sys.exit(0 if asyncio.run(main(int(irc_port), xmpp_port, ws_url, ca_file)) else 1)
