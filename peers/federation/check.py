"""The federation check's clients (see check.sh): slixmpp users on
Switchboard (alice@sb.internal), Prosody (pat@prosody.internal) and ejabberd
(ed@ejabberd.internal), each logged in to its own server with STARTTLS,
trusting only the check's authority. For each of the other two servers:
alice and its user message each other both ways, and share a MUC room on
that server and one on Switchboard, messages going both ways in each.

    check.py CA_FILE sb.internal=IP prosody.internal=IP ejabberd.internal=IP   (exits 0 when every check passed)
"""

import asyncio
import sys

import slixmpp

PATIENCE = 30
USERS = {"sb.internal": "alice", "prosody.internal": "pat", "ejabberd.internal": "ed"}


async def login(jid, address, ca_file):
    """A client logged in to the server at `address` (port 5222)."""
    xmpp = slixmpp.ClientXMPP(jid, "pw")
    xmpp.ca_certs = ca_file
    for plugin in ("xep_0004", "xep_0030", "xep_0045", "xep_0199"):
        xmpp.register_plugin(plugin)
    started = asyncio.Event()
    xmpp.add_event_handler("session_start", lambda _: started.set())
    xmpp.add_event_handler("failed_auth", lambda _: print(f"FAILED: {jid} could not log in", flush=True))
    xmpp.chats = asyncio.Queue()
    xmpp.groupchats = asyncio.Queue()
    xmpp.add_event_handler("message", lambda m: m["type"] in ("chat", "normal") and xmpp.chats.put_nowait((m["from"].bare, m["body"])))
    xmpp.add_event_handler("groupchat_message", lambda m: m["body"] and xmpp.groupchats.put_nowait((str(m["from"].bare), m["mucnick"], m["body"])))
    xmpp.connect(host=address, port=5222)
    await asyncio.wait_for(started.wait(), PATIENCE)
    xmpp.send_presence()
    return xmpp


async def heard(queue, want):
    """The next item of `queue` that is `want`, past others; None after PATIENCE."""
    try:
        while True:
            got = await asyncio.wait_for(queue.get(), PATIENCE)
            if got == want:
                return got
    except asyncio.TimeoutError:
        return None


async def share_room(owner, guest, room, check, label):
    """`owner` makes `room` (an instant room), `guest` joins it, and each
    hears the other."""
    muc_owner, muc_guest = owner.plugin["xep_0045"], guest.plugin["xep_0045"]
    try:
        await muc_owner.join_muc_wait(room, owner.boundjid.user, maxstanzas=0, timeout=PATIENCE)
        await muc_owner.set_room_config(room, owner.plugin["xep_0004"].make_form(ftype="submit"), timeout=PATIENCE)
        await muc_guest.join_muc_wait(room, guest.boundjid.user, maxstanzas=0, timeout=PATIENCE)
        joined = True
    except (asyncio.TimeoutError, slixmpp.exceptions.XMPPError) as e:
        joined = False
        print(f"  ({label}: {type(e).__name__} {e})", flush=True)
    check(f"{label}: {guest.boundjid.bare} joins {room}", joined)
    if not joined:
        return
    guest.send_message(mto=room, mbody=f"{guest.boundjid.user} here", mtype="groupchat")
    check(f"{label}: the room's owner hears its guest", await heard(owner.groupchats, (room, guest.boundjid.user, f"{guest.boundjid.user} here")) is not None)
    owner.send_message(mto=room, mbody=f"welcome {guest.boundjid.user}", mtype="groupchat")
    check(f"{label}: the guest hears the room's owner", await heard(guest.groupchats, (room, owner.boundjid.user, f"welcome {guest.boundjid.user}")) is not None)
    muc_guest.leave_muc(room, guest.boundjid.user)
    muc_owner.leave_muc(room, owner.boundjid.user)


async def main(ca_file, addresses):
    checks = []

    def check(name, ok):
        checks.append(ok)
        print(f"{'ok' if ok else 'FAILED'}: {name}", flush=True)

    clients = {}
    for domain, user in USERS.items():
        try:
            clients[domain] = await login(f"{user}@{domain}/check", addresses[domain], ca_file)
            check(f"{user}@{domain} logs in to its server", True)
        except asyncio.TimeoutError:
            check(f"{user}@{domain} logs in to its server", False)
    alice = clients.get("sb.internal")
    for domain in ("prosody.internal", "ejabberd.internal"):
        other = clients.get(domain)
        if alice is None or other is None:
            continue
        name = other.boundjid.bare
        alice.send_message(mto=name, mbody=f"hello {domain}", mtype="chat")
        check(f"{domain}: {name} gets alice@sb.internal's message", await heard(other.chats, ("alice@sb.internal", f"hello {domain}")) is not None)
        other.send_message(mto="alice@sb.internal", mbody=f"hello from {domain}", mtype="chat")
        check(f"{domain}: alice@sb.internal gets {name}'s message", await heard(alice.chats, (name, f"hello from {domain}")) is not None)
        await share_room(other, alice, f"fed@conference.{domain}", check, f"{domain}'s room")
        await share_room(alice, other, f"fed-{domain.split('.')[0]}@conference.sb.internal", check, "Switchboard's room")

    for client in clients.values():
        client.disconnect()
    failed = checks.count(False)
    print(f"{len(checks) - failed} passed, {failed} failed", flush=True)
    return failed == 0


if __name__ == "__main__":
    ca = sys.argv[1]
    addresses = dict(arg.split("=", 1) for arg in sys.argv[2:])
    sys.exit(0 if asyncio.run(main(ca, addresses)) else 1)
