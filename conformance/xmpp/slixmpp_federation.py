"""slixmpp (PyPI), a client nobody here wrote, on each of two federated
`switchboard serve` servers, a.test and b.test: alice@a.test and
bob@b.test log in with STARTTLS, message each other across the two
servers, alice pings b.test, and both talk in lobby@conference.b.test, a
room of bob's server. Each trusts only the test's authority, CA_FILE.

    slixmpp_federation.py A_PORT B_PORT CA_FILE   (exits 0 when every check passed)
"""

import asyncio
import sys

import slixmpp

from checks import PATIENCE, Checks

ROOM = "lobby@conference.b.test"


async def login(jid, port, ca_file):
    """A client logged in to the server on `port` with SCRAM over STARTTLS."""
    xmpp = slixmpp.ClientXMPP(jid, "pw")
    xmpp.ca_certs = ca_file
    for plugin in ("xep_0004", "xep_0030", "xep_0045", "xep_0199"):
        xmpp.register_plugin(plugin)
    started = asyncio.Event()
    xmpp.add_event_handler("session_start", lambda _: started.set())
    xmpp.chats = asyncio.Queue()
    xmpp.groupchats = asyncio.Queue()
    xmpp.add_event_handler("message", lambda m: m["type"] in ("chat", "normal") and xmpp.chats.put_nowait((str(m["from"]), m["body"])))
    xmpp.add_event_handler("groupchat_message", lambda m: xmpp.groupchats.put_nowait((m["mucnick"], m["body"])))
    xmpp.connect(host="127.0.0.1", port=port)
    await asyncio.wait_for(started.wait(), PATIENCE)
    xmpp.send_presence()
    return xmpp


async def main(a_port, b_port, ca_file):
    check = Checks()

    alice = await login("alice@a.test/slix", a_port, ca_file)
    bob = await login("bob@b.test/slix", b_port, ca_file)
    check("both log in, each to its own server", str(alice.boundjid) == "alice@a.test/slix" and str(bob.boundjid) == "bob@b.test/slix")

    alice.send_message(mto="bob@b.test", mbody="hello from a.test", mtype="chat")
    got = await asyncio.wait_for(bob.chats.get(), PATIENCE)
    check("bob@b.test gets alice@a.test's message", got == ("alice@a.test/slix", "hello from a.test"), str(got))
    bob.send_message(mto="alice@a.test/slix", mbody="hello back from b.test", mtype="chat")
    got = await asyncio.wait_for(alice.chats.get(), PATIENCE)
    check("alice@a.test gets bob@b.test's answer", got == ("bob@b.test/slix", "hello back from b.test"), str(got))

    rtt = await alice.plugin["xep_0199"].ping(jid="b.test", timeout=PATIENCE)
    check("alice pings b.test through her server (XEP-0199)", rtt is not None)

    # bob makes the room, an instant room (XEP-0045 §10.1.2): until then it is locked.
    await bob.plugin["xep_0045"].join_muc_wait(ROOM, "bob", maxstanzas=0, timeout=PATIENCE)
    await bob.plugin["xep_0045"].set_room_config(ROOM, bob.plugin["xep_0004"].make_form(ftype="submit"), timeout=PATIENCE)
    await alice.plugin["xep_0045"].join_muc_wait(ROOM, "alice", maxstanzas=0, timeout=PATIENCE)
    roster = alice.plugin["xep_0045"].get_roster(ROOM)
    check("alice, in a room of b.test, sees bob there", sorted(roster) == ["alice", "bob"], str(roster))
    alice.send_message(mto=ROOM, mbody="alice in b.test's room", mtype="groupchat")
    heard = await asyncio.wait_for(bob.groupchats.get(), PATIENCE)
    check("bob hears alice in the room", heard == ("alice", "alice in b.test's room"), str(heard))
    echo = await asyncio.wait_for(alice.groupchats.get(), PATIENCE)
    check("alice's message comes back to her from the room", echo == ("alice", "alice in b.test's room"), str(echo))
    bob.send_message(mto=ROOM, mbody="bob at home", mtype="groupchat")
    heard = await asyncio.wait_for(alice.groupchats.get(), PATIENCE)
    check("alice hears bob in the room", heard == ("bob", "bob at home"), str(heard))

    for client in (alice, bob):
        client.disconnect()
    return check.done()


if __name__ == "__main__":
    a_port, b_port, ca_file = sys.argv[1:4]
    sys.exit(0 if asyncio.run(main(int(a_port), int(b_port), ca_file)) else 1)
