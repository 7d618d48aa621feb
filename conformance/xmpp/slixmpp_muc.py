"""slixmpp (PyPI), a client nobody here wrote, against `switchboard serve`'s
XMPP with STARTTLS: anonymous login, ping, service discovery, a MUC
conversation in the room `lobby` with a chat-app WebSocket client (over
wss://) in the same room, and a login to an account with SCRAM whose direct
message reaches the first client. Both trust the server's self-signed
certificate, CA_FILE, and nothing else.

    slixmpp_muc.py XMPP_PORT WSS_URL ACCOUNT PASSWORD CA_FILE   (exits 0 when every check passed)
"""

import asyncio
import json
import ssl
import sys

import slixmpp
import websockets

from checks import PATIENCE, Checks, next_event

ROOM = "lobby@conference.localhost"


async def main(port, ws_url, account, password, ca_file):
    check = Checks()

    ws = await websockets.connect(ws_url, ssl=ssl.create_default_context(cafile=ca_file))
    await ws.send(json.dumps({"name": "alice", "room": "lobby"}))
    await next_event(ws, event="join", name="alice")

    xmpp = slixmpp.ClientXMPP("localhost", "")
    xmpp.ca_certs = ca_file
    encrypted = []
    xmpp.add_event_handler("tls_success", lambda _: encrypted.append(True))
    for plugin in ("xep_0030", "xep_0045", "xep_0199"):
        xmpp.register_plugin(plugin)
    started = asyncio.Event()
    xmpp.add_event_handler("session_start", lambda _: started.set())
    heard = asyncio.Queue()
    xmpp.add_event_handler("groupchat_message", lambda m: heard.put_nowait((m["mucnick"], m["body"])))
    xmpp.connect(host="127.0.0.1", port=port)
    await asyncio.wait_for(started.wait(), PATIENCE)
    check("STARTTLS with the server's certificate", encrypted == [True])
    check("anonymous login and resource binding", xmpp.boundjid.domain == "localhost" and bool(xmpp.boundjid.resource), str(xmpp.boundjid))

    rtt = await xmpp.plugin["xep_0199"].ping(jid="localhost", timeout=PATIENCE)
    check("ping (XEP-0199)", rtt is not None)
    info = await xmpp.plugin["xep_0030"].get_info(jid="conference.localhost", timeout=PATIENCE)
    check("the MUC service's disco#info names the MUC feature", "http://jabber.org/protocol/muc" in info["disco_info"]["features"])

    await xmpp.plugin["xep_0045"].join_muc_wait(ROOM, "slix", maxstanzas=0, timeout=PATIENCE)
    roster = xmpp.plugin["xep_0045"].get_roster(ROOM)
    check("joining lists the chat-app member as an occupant", "alice" in roster and "slix" in roster, str(roster))
    await next_event(ws, event="join", name="slix")
    check("the chat-app member sees slixmpp join", True)

    xmpp.send_message(mto=ROOM, mbody="hello from slixmpp", mtype="groupchat")
    said = await next_event(ws, name="slix")
    position = {k: said.pop(k, None) for k in ("offset", "epoch")}
    check("the chat-app member gets the groupchat message", said == {"name": "slix", "room": "lobby", "message": "hello from slixmpp"}, str(said))
    check("with its position in the room's history", isinstance(position["offset"], int) and isinstance(position["epoch"], str), str(position))
    reflected = await asyncio.wait_for(heard.get(), PATIENCE)
    check("the message is reflected to its sender", reflected == ("slix", "hello from slixmpp"), str(reflected))

    await ws.send(json.dumps({"message": "hello from the chat app"}))
    got = await asyncio.wait_for(heard.get(), PATIENCE)
    check("slixmpp gets the chat-app member's message", got == ("alice", "hello from the chat app"), str(got))

    xmpp.plugin["xep_0045"].leave_muc(ROOM, "slix")
    await next_event(ws, event="leave", name="slix")
    check("the chat-app member sees slixmpp leave", True)

    carol = slixmpp.ClientXMPP(f"{account}@localhost/phone", password)
    carol.ca_certs = ca_file
    carol_started = asyncio.Event()
    carol.add_event_handler("session_start", lambda _: carol_started.set())
    mechanisms = []
    carol.add_event_handler("auth_success", lambda _: mechanisms.append(carol.plugin["feature_mechanisms"].mech.name))
    direct = asyncio.Queue()
    xmpp.add_event_handler("message", lambda m: m["type"] in ("chat", "normal") and direct.put_nowait((str(m["from"]), m["body"])))
    carol.connect(host="127.0.0.1", port=port)
    await asyncio.wait_for(carol_started.wait(), PATIENCE)
    check("an account logs in with SCRAM", str(carol.boundjid) == f"{account}@localhost/phone" and mechanisms[:1] == ["SCRAM-SHA-256"], f"{carol.boundjid} {mechanisms}")
    carol.send_message(mto=xmpp.boundjid.full, mbody="hi from carol", mtype="chat")
    got = await asyncio.wait_for(direct.get(), PATIENCE)
    check("a message between two online JIDs is routed", got == (f"{account}@localhost/phone", "hi from carol"), str(got))
    carol.disconnect()
    xmpp.disconnect()
    await ws.close()
    return check.done()


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])) else 1)
