//! Users of other servers in this server's MUC rooms ("guests"). Each
//! guest, by its full JID, is an XMPP session here as a client's would be,
//! with no connection of its own: the stanzas its server sends to the MUC
//! service are handed to it, and what the rooms send it (rendered for it,
//! as for any occupant) goes back over the stream to its server. So a
//! remote occupant is one more member of the room, seen by chat-app
//! members and local occupants alike. A guest ends once it is in no room,
//! or when its server can no longer be reached.

use std::collections::HashMap;
use std::sync::Arc;

use hub::{Drained, Outbox};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use wire::xmpp::Element;

use crate::session::Session;
use crate::{Jid, Xmpp};

/// Stanzas one guest's task may have waiting; past it, its server is read
/// more slowly (its stream waits).
const INBOX: usize = 64;

/// What a guest's task is handed.
enum ToGuest {
    /// A stanza its server sent for it.
    Stanza(Element),
    /// Its server can no longer be reached: it leaves its rooms.
    Gone,
}

/// The guests, by full JID: how to hand each its stanzas.
#[derive(Default)]
pub(crate) struct Guests {
    guests: Mutex<HashMap<String, mpsc::Sender<ToGuest>>>,
}

impl Guests {
    /// Guests at the moment.
    pub fn count(&self) -> usize {
        self.guests.lock().len()
    }

    /// The guest `jid`'s server can no longer be reached.
    pub fn gone(&self, jid: &str) {
        if let Some(guest) = self.guests.lock().get(jid) {
            let _ = guest.try_send(ToGuest::Gone);
        }
    }
}

impl Xmpp {
    /// Hands `stanza`, from the user `from` of another server to the MUC
    /// service here, to that user's guest session, made if it has none
    /// (at most `limit` at once: past it the stanza is refused).
    pub(crate) async fn to_guest(self: &Arc<Self>, from: Jid, stanza: Element, limit: usize) -> Result<(), ()> {
        let key = from.to_string();
        let sender = {
            let mut guests = self.guests.guests.lock();
            match guests.get(&key) {
                Some(sender) if !sender.is_closed() => sender.clone(),
                _ if guests.len() >= limit => return Err(()),
                _ => {
                    let (sender, inbox) = mpsc::channel(INBOX);
                    guests.insert(key.clone(), sender.clone());
                    self.context.tracker.spawn(guest(self.clone(), from, inbox));
                    sender
                }
            }
        };
        sender.send(ToGuest::Stanza(stanza)).await.map_err(|_| ())
    }
}

/// Runs the guest `jid` until it is in no room (with nothing more for it)
/// or its server is gone, or the server shuts down.
async fn guest(xmpp: Arc<Xmpp>, jid: Jid, mut inbox: mpsc::Receiver<ToGuest>) {
    let outbox = Arc::new(Outbox::new(xmpp.context.bounds.queue_limit));
    let mut session = Session::guest(xmpp.clone(), outbox.clone(), jid.clone());
    let key = jid.to_string();
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            handed = inbox.recv() => match handed {
                Some(ToGuest::Stanza(stanza)) => Box::pin(session.take_stanza(stanza)).await,
                Some(ToGuest::Gone) | None => break,
            },
            drained = outbox.drain(&mut batch) => {
                send(&xmpp, &mut session, &mut batch, &jid);
                if let Drained::Closed(_) = drained {
                    break;
                }
            }
            () = xmpp.context.shutdown.wait() => break,
        }
        if !session.in_rooms() {
            // What it was answered goes first.
            if outbox.try_drain(&mut batch).is_some() {
                send(&xmpp, &mut session, &mut batch, &jid);
            }
            let mut guests = xmpp.guests.guests.lock();
            if inbox.is_empty() {
                guests.remove(&key);
                return;
            }
        }
    }
    xmpp.guests.guests.lock().remove(&key);
    session.leave_all().await;
}

/// Sends what the rooms sent the guest, rendered for it, to its server.
fn send(xmpp: &Arc<Xmpp>, session: &mut Session, batch: &mut Vec<hub::Payload>, jid: &Jid) {
    for payload in batch.drain(..) {
        if let Some(text) = session.render(&payload)
            && xmpp.send_to_guest(text, jid).is_err()
        {
            // Too much waits for its server: it is told nothing more.
            xmpp.guests.gone(&jid.to_string());
        }
    }
}
