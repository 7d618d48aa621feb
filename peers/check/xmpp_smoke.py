"""Smoke check of one running XMPP peer (ejabberd, prosody), driven the way
the bench will drive it, and one verdict line. Over client TCP with slixmpp
(no TLS; SASL PLAIN as bench0/bench): login, ping (XEP-0199), joining the
room `bench` and seeing its own presence (status 110), a groupchat message
coming back to its sender, and a room made on first join: its creator gets
status 201, a second account is held out (item-not-found) until the
creator submits the instant-room form if peers.json says the server locks
new rooms (or else gets in at once), and joins after it. Over HTTP: a BOSH session-creation request answered with a
<body sid=…>, and a WebSocket upgrade with the subprotocol xmpp answered
with an <open/> and the stream features. Endpoints and accounts come from
peers.json. Traffic goes to 127.0.0.1 only; every wait is bounded.

Usage: xmpp_smoke.py PEER HTTP_PORT C2S_PORT
Exit status: 0 if every check passed, 1 otherwise.
"""

import asyncio
import json
import os
import re
import sys
import urllib.request
import uuid
import xml.etree.ElementTree as ET

import slixmpp
import websockets

HOST = "127.0.0.1"
STEP_S = 10  # longest wait for any one answer
MUC_USER = "http://jabber.org/protocol/muc#user"


class Checks:
    """The checks run so far, by name, each passed or failed with a reason."""

    def __init__(self):
        self.results = []

    def add(self, name, ok, detail=""):
        self.results.append((name, bool(ok), detail))
        if os.environ.get("XMPP_SMOKE_VERBOSE"):
            print(f"  {'ok' if ok else 'FAILED'}: {name} {detail}", file=sys.stderr)

    async def run(self, name, coro):
        """Awaits coro (which returns (ok, detail)); an exception fails it."""
        try:
            ok, detail = await asyncio.wait_for(coro, 3 * STEP_S)
        except Exception as e:  # a check that raises has failed; say why
            ok, detail = False, f"{type(e).__name__}: {e}"
        self.add(name, ok, detail)
        return ok


def client(jid, password):
    """A slixmpp client that logs in with PLAIN over plain TCP, as the bench does."""
    xmpp = slixmpp.ClientXMPP(jid, password)
    xmpp.enable_direct_tls = False
    xmpp.enable_starttls = False
    xmpp.enable_plaintext = True
    xmpp.plugin["feature_mechanisms"].use_mech = "PLAIN"
    xmpp.plugin["feature_mechanisms"].unencrypted_plain = True
    for plugin in ("xep_0045", "xep_0199"):
        xmpp.register_plugin(plugin)
    return xmpp


async def log_in(xmpp, port):
    """Connects and waits for session_start; returns the SASL mechanism used."""
    started, failed = asyncio.Event(), []
    mech = []
    xmpp.add_event_handler("session_start", lambda _: started.set())
    xmpp.add_event_handler("failed_auth", lambda e: (failed.append(str(e)), started.set()))
    xmpp.add_event_handler("auth_success", lambda _: mech.append(xmpp.plugin["feature_mechanisms"].mech.name))
    xmpp.connect(host=HOST, port=port)
    await asyncio.wait_for(started.wait(), STEP_S)
    if failed:
        raise RuntimeError(f"authentication failed: {failed[0]}")
    return mech[0] if mech else None


async def join(xmpp, room, nick):
    """Sends the MUC join presence and returns the status codes of the
    room's presence for our own nick (or raises on an error presence)."""
    own = asyncio.get_running_loop().create_future()

    def on_presence(pres):
        # An unavailable one would be from an earlier stay in the room.
        if pres["type"] == "unavailable":
            return
        if pres["from"].bare == room and pres["from"].resource == nick and not own.done():
            own.set_result(pres)

    xmpp.add_event_handler("presence", on_presence)
    try:
        # The <x xmlns='…/muc'/> makes it a MUC join (without it, servers
        # treat it as the old groupchat protocol and lock nothing).
        pres = xmpp.make_presence(pto=f"{room}/{nick}")
        pres.append(ET.Element("{http://jabber.org/protocol/muc}x"))
        pres.send()
        got = await asyncio.wait_for(own, STEP_S)
    finally:
        xmpp.del_event_handler("presence", on_presence)
    if got["type"] == "error":
        raise RuntimeError(f"join refused: {got['error']['condition']}")
    x = got.xml.find(f"{{{MUC_USER}}}x")
    return {int(s.get("code")) for s in x.findall(f"{{{MUC_USER}}}status")} if x is not None else set()


async def groupchat_echo(xmpp, room, nick):
    """Sends a groupchat message and waits for the room to send it back."""
    body = f"check {uuid.uuid4().hex[:8]}"
    back = asyncio.get_running_loop().create_future()

    def on_message(msg):
        if msg["type"] == "groupchat" and msg["from"] == f"{room}/{nick}" and msg["body"] == body and not back.done():
            back.set_result(msg)

    xmpp.add_event_handler("groupchat_message", on_message)
    try:
        xmpp.send_message(mto=room, mbody=body, mtype="groupchat")
        await asyncio.wait_for(back, STEP_S)
    finally:
        xmpp.del_event_handler("groupchat_message", on_message)
    return True


async def instant_room(xmpp, room):
    """Submits the instant-room form, <x xmlns='jabber:x:data' type='submit'/>."""
    iq = xmpp.make_iq_set(ito=room)
    query = ET.Element("{http://jabber.org/protocol/muc#owner}query")
    ET.SubElement(query, "{jabber:x:data}x", {"type": "submit"})
    iq.append(query)
    reply = await iq.send(timeout=STEP_S)
    return reply["type"] == "result"


def bosh_session(url, domain):
    """POSTs a BOSH session-creation body; returns the reply's sid (or None)."""
    body = (f"<body rid='{uuid.uuid4().int % 10**9}' to='{domain}' xml:lang='en' wait='60' hold='1' "
            "ver='1.6' xmpp:version='1.0' xmlns='http://jabber.org/protocol/httpbind' "
            "xmlns:xmpp='urn:xmpp:xbosh'/>")
    req = urllib.request.Request(url, data=body.encode(), headers={"Content-Type": "text/xml; charset=utf-8"})
    with urllib.request.urlopen(req, timeout=STEP_S) as resp:
        reply = ET.fromstring(resp.read())
    if reply.tag != "{http://jabber.org/protocol/httpbind}body":
        return None, reply.tag
    return reply.get("sid"), ET.tostring(reply, encoding="unicode")[:200]


async def websocket_open(url, domain):
    """Opens an RFC 7395 WebSocket (subprotocol xmpp) and an XMPP stream on it;
    returns (subprotocol, whether <open/> came, whether features came)."""
    async with websockets.connect(url, subprotocols=["xmpp"], open_timeout=STEP_S) as ws:
        await ws.send(f"<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='{domain}' version='1.0'/>")
        frames = []
        while not any("features" in f for f in frames) and len(frames) < 4:
            frames.append(await asyncio.wait_for(ws.recv(), STEP_S))
        opened = any(re.match(r"\s*<open\b", f) for f in frames)
        featured = any(re.search(r"<(stream:)?features\b", f) for f in frames)
        await ws.send("<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
        return ws.subprotocol, opened, featured


async def main(peer, http_port, c2s_port):
    with open(os.path.join(os.path.dirname(__file__), "..", "peers.json")) as f:
        manifest = json.load(f)
    spec = next((p for p in manifest["peers"] if p["name"] == peer), None)
    if not spec or "xmpp" not in spec:
        print(f"{peer}: FAILED — peers.json has no xmpp entry for it")
        return False
    x = spec["xmpp"]
    domain, muc, password = x["domain"], x["muc"], x["password"]
    account = lambda n: x["account"].replace("{i}", str(n)) + "@" + domain
    room = f"{x['room']}@{muc}"
    checks = Checks()

    alice, bob = client(account(0) + "/check", password), client(account(1) + "/check", password)
    try:
        async def login():
            mech = await log_in(alice, c2s_port)
            return mech == "PLAIN" and alice.boundjid.bare == account(0), f"{mech} {alice.boundjid}"
        if await checks.run("login (PLAIN, no TLS)", login()):
            async def ping():
                rtt = await alice.plugin["xep_0199"].ping(jid=domain, timeout=STEP_S)
                return rtt is not None, f"rtt {rtt}"
            await checks.run("ping", ping())

            async def join_bench():
                codes = await join(alice, room, "alice")
                return 110 in codes, f"status {sorted(codes)}"
            if await checks.run(f"join {room}", join_bench()):
                async def echo():
                    return await groupchat_echo(alice, room, "alice"), ""
                await checks.run("groupchat message back", echo())

            fresh = f"check-{uuid.uuid4().hex[:8]}@{muc}"
            async def create():
                codes = await join(alice, fresh, "alice")
                return {110, 201} <= codes, f"status {sorted(codes)} (want 110 and 201)"
            if await checks.run("new room: its creator gets 201", create()):
                # Whether others are held out until the form is peers.json's
                # new_room_locked; the form must work either way.
                async def locked():
                    await log_in(bob, c2s_port)
                    try:
                        codes = await join(bob, fresh, "bob")
                    except RuntimeError as e:
                        return x["new_room_locked"] and "item-not-found" in str(e), str(e)
                    bob.send_presence(pto=f"{fresh}/bob", ptype="unavailable")
                    return not x["new_room_locked"], f"joined before the form: status {sorted(codes)}"
                lock_name = "locked to others" if x["new_room_locked"] else "open to others (not locked)"
                await checks.run(f"new room: {lock_name}", locked())

                async def form():
                    return await instant_room(alice, fresh), "instant-room form refused"
                if await checks.run("new room: instant-room form", form()):
                    async def second():
                        codes = await join(bob, fresh, "bob")
                        return 110 in codes, f"status {sorted(codes)}"
                    await checks.run("new room: then a second account joins", second())

        async def bosh():
            sid, detail = await asyncio.to_thread(bosh_session, f"http://{HOST}:{http_port}{x['bosh']}", domain)
            return bool(sid), detail
        await checks.run("BOSH session (body sid)", bosh())

        async def ws():
            proto, opened, featured = await websocket_open(f"ws://{HOST}:{http_port}{x['websocket']}", domain)
            return proto == "xmpp" and opened and featured, f"subprotocol {proto}, open {opened}, features {featured}"
        await checks.run("WebSocket (subprotocol xmpp, open, features)", ws())
    finally:
        for c in (alice, bob):
            if c.transport is not None:
                c.disconnect(wait=0)

    failed = [f"{n}: {d}" for n, ok, d in checks.results if not ok]
    if failed:
        print(f"{peer}: FAILED — {len(failed)} of {len(checks.results)} checks failed: {'; '.join(failed)}")
        return False
    names = ", ".join(n for n, _, _ in checks.results)
    print(f"{peer}: ok — {len(checks.results)} checks passed ({names})")
    return True


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: xmpp_smoke.py PEER HTTP_PORT C2S_PORT", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))) else 1)
