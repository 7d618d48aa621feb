"""slixmpp (PyPI) against what `switchboard serve` keeps across a restart,
in two runs around it. `before`: dora logs in with SCRAM over STARTTLS, adds
evan to her roster and sends him a message while he is offline. `after`
(against the restarted server, on the same store): evan logs in, says he is
available and is given the messages with their delay stamps (XEP-0160,
XEP-0203); dora's roster still has evan; evan pages through his archive
with slixmpp's MAM plugin (XEP-0313 over XEP-0059, two a page) and finds
them all, in order.

    slixmpp_store.py before|after XMPP_PORT CA_FILE   (exits 0 when every check passed)
"""

import asyncio
import sys

import slixmpp

from checks import PATIENCE, Checks

SENT = ["kept for you", "two", "three", "four", "five"]


async def session(jid, password, port, ca_file, plugins=()):
    client = slixmpp.ClientXMPP(jid, password)
    client.ca_certs = ca_file
    for plugin in plugins:
        client.register_plugin(plugin)
    started = asyncio.Event()
    client.add_event_handler("session_start", lambda _: started.set())
    client.connect(host="127.0.0.1", port=port)
    await asyncio.wait_for(started.wait(), PATIENCE)
    return client


async def main(phase, port, ca_file):
    check = Checks()

    dora = await session("dora@localhost/desk", "doras-secret", port, ca_file, ("xep_0199",))
    if phase == "before":
        await dora.get_roster()
        await dora.update_roster("evan@localhost", name="Evan", groups=["Friends"])
        await dora.get_roster()
        check("dora's roster has evan", "evan@localhost" in dora.client_roster, str(list(dora.client_roster)))
        refused = asyncio.Queue()
        dora.add_event_handler("message_error", lambda m: refused.put_nowait(m))
        for body in SENT:
            dora.send_message(mto="evan@localhost", mbody=body, mtype="chat")
        # A ping after it: answered once the message was handled (kept).
        await dora.plugin["xep_0199"].ping(jid="localhost", timeout=PATIENCE)
        check("the message to offline evan is not refused", refused.empty())
    else:
        await dora.get_roster()
        item = dora.client_roster["evan@localhost"] if "evan@localhost" in dora.client_roster else None
        check("dora's roster still has evan after the restart", item is not None and item["name"] == "Evan" and item["groups"] == ["Friends"], str(item and (item["name"], item["groups"])))
        evan = slixmpp.ClientXMPP("evan@localhost/phone", "evans-secret")
        evan.ca_certs = ca_file
        for plugin in ("xep_0203", "xep_0313"):
            evan.register_plugin(plugin)
        got = asyncio.Queue()
        evan.add_event_handler("message", lambda m: m["type"] in ("chat", "normal") and got.put_nowait(m))
        # slixmpp sends its initial presence at session start: the kept
        # message follows it.
        evan.add_event_handler("session_start", lambda _: evan.send_presence())
        evan.connect(host="127.0.0.1", port=port)
        message = await asyncio.wait_for(got.get(), PATIENCE)
        check("evan is given the message kept while he was offline", message["body"] == "kept for you" and message["from"].bare == "dora@localhost", str(message))
        check("with its delay stamp (XEP-0203)", bool(message["delay"]["stamp"]) and message["delay"]["from"] == "localhost", str(message["delay"]))
        rest = [(await asyncio.wait_for(got.get(), PATIENCE))["body"] for _ in SENT[1:]]
        check("and the others after it, in order", rest == SENT[1:], str(rest))
        archived = []
        async for result in evan.plugin["xep_0313"].iterate(rsm={"max": 2}):
            archived.append(result["mam_result"]["forwarded"]["stanza"]["body"])
        check("slixmpp's MAM plugin pages through evan's archive, two at a time", archived == SENT, str(archived))
        evan.disconnect()
    dora.disconnect()
    return check.done()


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3])) else 1)
