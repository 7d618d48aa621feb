"""A small slixmpp client for trying a room by hand: joins ROOM (default
lobby@conference.localhost) anonymously as NICK, prints what the room says,
and sends each line typed on stdin to the room. Ctrl-D leaves.

    talk.py NICK [XMPP_PORT [ROOM]]
"""

import asyncio
import sys
import xml.etree.ElementTree as ET

import slixmpp


async def main(nick, port, room):
    xmpp = slixmpp.ClientXMPP("localhost", "")
    xmpp.register_plugin("xep_0045")
    started = asyncio.Event()
    xmpp.add_event_handler("session_start", lambda _: started.set())
    xmpp.add_event_handler("groupchat_message", lambda m: print(f"<{m['mucnick']}> {m['body']}", flush=True))
    xmpp.add_event_handler("muc::%s::got_online" % room, lambda p: print(f"* {p['muc']['nick']} is here", flush=True))
    xmpp.add_event_handler("muc::%s::got_offline" % room, lambda p: print(f"* {p['muc']['nick']} left", flush=True))
    xmpp.connect(host="127.0.0.1", port=port)
    await started.wait()
    own, *_ = await xmpp.plugin["xep_0045"].join_muc_wait(room, nick, maxstanzas=20)
    if 201 in own["muc"]["status_codes"]:
        # It made the room, which stays locked to others until it is
        # configured: take the defaults (an instant room, XEP-0045 §10.1.2).
        iq = xmpp.make_iq_set(ito=room)
        iq.append(ET.fromstring("<query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query>"))
        await iq.send()
        print(f"* made {room}", flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        if line.strip():
            xmpp.send_message(mto=room, mbody=line.rstrip("\n"), mtype="groupchat")
    xmpp.plugin["xep_0045"].leave_muc(room, nick)
    await asyncio.sleep(0.5)  # let the leave presence go out before the stream closes
    xmpp.disconnect()


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    asyncio.run(main(args[0], int(args[1]) if len(args) > 1 else 5222, args[2] if len(args) > 2 else "lobby@conference.localhost"))
