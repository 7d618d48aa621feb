//! muc: the broadcast sweep through an XMPP Multi-User Chat room (XEP-0045). Per level,
//! every client logs in and joins one fresh room, then the level runs as `broadcast`
//! runs it (the same open-loop ramp, saturation rules and figures): each occupant sends
//! groupchat messages to the room, measures the round trip of its own message as the
//! room reflects it, and counts every message it receives.

use std::sync::atomic::{AtomicU64, Ordering};

use wire::xmpp::{Element, ns};

use super::{Ctx, on_each};
use crate::Error;
use crate::transport::{Connection, TransportKind, xmpp};

/// Joins at once after the first: enough to be quick, few enough not to flood.
const JOIN_AT_ONCE: usize = 64;

/// A fresh room for one level of `n` occupants, so that its first occupant creates it.
pub(crate) fn room(ctx: &Ctx, kind: TransportKind, n: u32) -> Result<String, Error> {
    let service = ctx.xmpp.as_ref().map(|x| x.muc_service.as_str()).ok_or_else(|| Error::usage("muc needs the XMPP flags"))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    Ok(format!("bench-{}-{nanos}-{kind}-{n}@{service}", std::process::id()))
}

/// Joins every connection to `room` as `u<index>`: the first alone, as it creates the
/// room and must configure it before others may enter, then the others. The error
/// carries how many had joined before it.
pub(crate) async fn join_all(ctx: &Ctx, conns: &mut [Connection], room: &str) -> Result<(), (u32, Error)> {
    let Some((first, others)) = conns.split_first_mut() else { return Ok(()) };
    join(ctx, first, room, 0).await.map_err(|e| (0, e))?;
    ctx.progress.set(1);
    let joined = AtomicU64::new(1);
    let joining = on_each(others, JOIN_AT_ONCE, |conn, i| {
        let joined = &joined;
        async move {
            join(ctx, conn, room, i + 1).await?;
            ctx.progress.set(joined.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(())
        }
    });
    joining.await.map_err(|(done, e)| (done + 1, e))
}

/// Enters `room` as `u<i>` and waits for the presence that says so (status 110). A
/// room that is new (status 201) is configured as an instant room, as XEP-0045 §10.1.2
/// has it, so that the others may enter. Then the connection's messages go to the room.
async fn join(ctx: &Ctx, conn: &mut Connection, room: &str, i: u32) -> Result<(), Error> {
    let (Some(tx), Some(rx)) = (conn.sender.xmpp(), conn.receiver.xmpp()) else {
        return Err(Error::usage("muc needs an XMPP transport"));
    };
    let nick = format!("u{i}");
    let what = format!("{room} entered as {nick}");
    tx.send_stanza(&enter(room, &nick)).await?;
    let created = ctx.expect(async { entered(rx, room, &nick).await.map(Some) }, &what).await?;
    if created {
        tx.send_stanza(&instant_room(room)).await?;
        ctx.expect(async { rx.result("instant", "the instant room's configuration").await.map(Some) }, "the room's configuration").await?;
    }
    tx.address(room, "groupchat");
    Ok(())
}

/// `<presence to='room/nick'><x xmlns='…muc'><history maxstanzas='0'/></x></presence>`:
/// no history, so that a level counts only its own messages.
fn enter(room: &str, nick: &str) -> Element {
    let muc = Element::new("x", ns::MUC).child(Element::new("history", ns::MUC).attr("maxstanzas", "0"));
    Element::new("presence", ns::CLIENT).attr("to", &format!("{room}/{nick}")).child(muc)
}

/// The owner's empty form that accepts the default configuration: an instant room.
fn instant_room(room: &str) -> Element {
    let form = Element::new("x", ns::DATA).attr("type", "submit");
    xmpp::iq("set", "instant", Element::new("query", ns::MUC_OWNER).child(form)).attr("to", room)
}

/// Reads the room's presences until its own (status 110); whether the room is new (201).
async fn entered(rx: &mut xmpp::Receiver, room: &str, nick: &str) -> Result<bool, Error> {
    while let Some(stanza) = rx.stanza().await? {
        let from_room = stanza.get("from").is_some_and(|from| from.split('/').next() == Some(room));
        if stanza.name != "presence" || !from_room {
            continue;
        }
        if stanza.get("type") == Some("error") {
            return Err(Error::refused(format!("{}: entering {room} as {nick} was refused: {}", rx.place(), xmpp::stanza_error(&stanza))));
        }
        let codes: Vec<&str> = stanza
            .find("x", ns::MUC_USER)
            .map(|x| x.elements().filter(|s| s.name == "status").filter_map(|s| s.get("code")).collect())
            .unwrap_or_default();
        if codes.contains(&"110") {
            return Ok(codes.contains(&"201"));
        }
    }
    Err(Error::closed(format!("{}: the stream ended while entering {room}", rx.place())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_and_the_instant_room_to_the_byte() {
        assert_eq!(
            enter("r@conference.localhost", "u3").to_xml(ns::CLIENT),
            r#"<presence to="r@conference.localhost/u3"><x xmlns="http://jabber.org/protocol/muc"><history maxstanzas="0"/></x></presence>"#
        );
        assert_eq!(
            instant_room("r@c").to_xml(ns::CLIENT),
            r#"<iq type="set" id="instant" to="r@c"><query xmlns="http://jabber.org/protocol/muc#owner"><x xmlns="jabber:x:data" type="submit"/></query></iq>"#
        );
    }
}
