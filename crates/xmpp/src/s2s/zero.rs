//! Zero-handshake federation (XEP-0361) with peers configured in advance
//! (`[[xmpp_s2s_peer]]`): no stream header, no TLS or SASL negotiation, no
//! stream features. A connection to a peer's zero-handshake address carries
//! stanzas from its first byte, read as if inside a `jabber:server` stream;
//! the peer is known by the address its connections come from. On a link
//! declared trusted (a closed network whose links are secured below XMPP,
//! XEP-0361 §4.6) that is all; otherwise the peer's entry pins its
//! certificate (`pin`, the SHA-256 of its DER bytes) and each connection is
//! TLS from its first byte, both sides showing their certificates, the
//! other's checked against its pin and nothing else (no authority, no
//! name). TLS 1.3 resumes on a reconnection, so the certificates do not
//! cross the link again. One connection carries both ways: the side
//! that did not open it sends on it too. Stream management is on from the
//! start on both sides, as the configuration agrees, and it outlives a
//! connection ([`Continuity`]): a link that drops and comes back loses
//! nothing and delivers nothing twice.
//!
//! A peer may also agree to compress: each write is deflated (zlib, one
//! stream per connection direction) and flushed, so that a stanza goes out
//! whole at once. XEP-0138's stream compression is obsolete because
//! compressing text an attacker chooses beside secrets lets whoever sees
//! the sizes read the secrets (CRIME). One stream carries every user's
//! stanzas here, so a user who can send across the link and can see the
//! sizes of what crosses it (even under IPsec or another layer below) can
//! learn other users' text: compression is off unless both peers' entries
//! turn it on, for links where nobody can see the traffic, and never with a
//! pinned certificate (inside TLS).

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use base::deflated::Deflated;
use rustls::pki_types::{CertificateDer, ServerName};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use wire::xmpp::Limits;

use super::carry::{Acks, Duties, Ended, carry, carry_over};
use super::wire_stream::WireStream;
use super::{Item, Peer, Undelivered};
use crate::Xmpp;

/// Stream management with one peer across its connections (XEP-0198's
/// resumption, on zero-handshake links, where there is no negotiation to
/// carry it). What this server sends the peer is numbered under an id of
/// its own, `epoch`, for the process's life: the count the peer has
/// acknowledged and what it has not are kept when a connection ends, and
/// the next one goes on from there. What the peer sends is counted under
/// the peer's id, by every connection it comes on.
///
/// Each side opens every connection, before any stanza, with
/// `<resume previd='THEIR-ID' h='N'/>` (if it has counted the other's
/// stanzas: how many it handled) and then `<enabled id='OWN-ID'
/// resume='true'/>`. The side that sends on the connection drops what `h`
/// acknowledges and sends the rest again, first; an `<enabled/>` with no
/// `<resume/>` before it, or one naming another id, says the other counted
/// none of them (it is new, or restarted): everything unacknowledged goes
/// again, and counting starts over. A side with nothing unacknowledged
/// sends at once; one with something waits for the other's opening. A
/// stanza that comes again after all (a connection that ended with it
/// still unread on this side) is known by its number and dropped.
#[derive(Default)]
pub(super) struct Continuity {
    sending: parking_lot::Mutex<Sending>,
    receiving: parking_lot::Mutex<Receiving>,
    /// The peer's connections to this side, oldest first: what ends each.
    incoming: parking_lot::Mutex<VecDeque<Arc<Notify>>>,
}

/// A connection from the peer, counted among its connections here while held.
pub(super) struct Arrival<'a> {
    continuity: &'a Continuity,
    /// Notified when a newer connection takes this one's place.
    pub ends: Arc<Notify>,
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.continuity.incoming.lock().retain(|ends| !Arc::ptr_eq(ends, &self.ends));
    }
}

/// What this side has sent the peer.
pub(super) struct Sending {
    pub epoch: String,
    /// Stanzas the peer has acknowledged under `epoch`.
    pub acked: u32,
    /// Sent under `epoch` after those, not yet acknowledged.
    pub unacked: VecDeque<Item>,
    /// Connections in a row that made no progress (see [`STALLS`]).
    pub stalls: u32,
}

impl Default for Sending {
    fn default() -> Sending {
        Sending { epoch: new_epoch(), acked: 0, unacked: VecDeque::new(), stalls: 0 }
    }
}

/// Connections in a row that may end with nothing more acknowledged (or
/// before the peer opened its side, or not be made at all) before
/// something is given up on (see `carry::carry_over`): a peer that ends the
/// connection on a stanza it refuses (a domain its entry for this side
/// lacks, a stanza over its size) would otherwise be sent it again forever,
/// and nothing behind it would go. Between them the next connection waits
/// 1 s, then 2 s.
pub(super) const STALLS: u32 = 3;

/// What [`Continuity::keep`] kept, and what it could not.
pub(super) struct Kept {
    /// Whether anything is left to send.
    pub left: bool,
    /// Stanzas of the closed queue past the bound on what is held
    /// unacknowledged, for their senders to be told.
    pub over: Vec<Item>,
}

fn new_epoch() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// What this side has handled of the peer's stanzas.
#[derive(Default)]
pub(super) struct Receiving {
    /// The id the peer numbers them under, once it has said.
    pub epoch: Option<String>,
    pub handled: u32,
}

impl Continuity {
    /// What this side has sent, for the connection that sends now to
    /// carry on with: taken until it [`keep`](Continuity::keep)s it.
    pub fn take_sending(&self) -> Sending {
        let mut sending = self.sending.lock();
        Sending { epoch: sending.epoch.clone(), acked: sending.acked, unacked: std::mem::take(&mut sending.unacked), stalls: sending.stalls }
    }

    /// Kept for the next connection: the count acknowledged under
    /// `epoch` and what was sent after it, then what `last` gives (closing
    /// the queue and taking what it still held, never sent) as far as
    /// `bound` bytes in all, while no other connection can take it.
    pub fn keep(&self, mut taken: Sending, bound: usize, last: impl FnOnce() -> Vec<Item>) -> Kept {
        let mut sending = self.sending.lock();
        let mut bytes: usize = taken.unacked.iter().map(|item| item.text().len()).sum();
        let mut over = Vec::new();
        for item in last() {
            bytes = bytes.saturating_add(item.text().len());
            // Past the bound once something is held: the rest, in order.
            if bytes > bound && !taken.unacked.is_empty() {
                over.push(item);
            } else {
                taken.unacked.push_back(item);
            }
        }
        let left = !taken.unacked.is_empty();
        *sending = taken;
        Kept { left, over }
    }

    /// What was sent and not acknowledged, taken back when no connection
    /// could be made to send it again: counting starts over under a new id.
    pub fn abandon(&self) -> VecDeque<Item> {
        std::mem::take(&mut *self.sending.lock()).unacked
    }

    /// A connection from the peer arrived. At most `bound` of them stay: past
    /// it, the oldest is ended. A link that drops leaves this side of its
    /// connection open until it is written to or goes quiet
    /// (`--xmpp-s2s-idle-timeout`), and the peer's newest connection is the
    /// one alive; refusing it would keep the peer out until then.
    pub fn arrive(&self, bound: usize) -> Arrival<'_> {
        let ends = Arc::new(Notify::new());
        let mut incoming = self.incoming.lock();
        while incoming.len() >= bound.max(1) {
            if let Some(oldest) = incoming.pop_front() {
                // Kept if the connection is not waiting yet: it ends when it does.
                oldest.notify_one();
            }
        }
        incoming.push_back(ends.clone());
        Arrival { continuity: self, ends }
    }

    /// This side's id, for a connection that does not send.
    pub fn epoch(&self) -> String {
        self.sending.lock().epoch.clone()
    }

    /// What a connection opens with (see the type's docs), and the count
    /// of the peer's stanzas it starts from.
    pub fn opening(&self, own: &str) -> (String, u32) {
        let receiving = self.receiving.lock();
        let mut text = String::new();
        if let Some(theirs) = &receiving.epoch {
            text.push_str("<resume xmlns='urn:xmpp:sm:3' previd='");
            wire::xmpp::escape_into(theirs, &mut text);
            text.push_str(&format!("' h='{}'/>", receiving.handled));
        }
        text.push_str(&format!("<enabled xmlns='urn:xmpp:sm:3' id='{own}' resume='true'/>"));
        (text, receiving.handled)
    }

    /// The peer numbers its stanzas under `epoch`: if that is new, counting
    /// starts over, and so does `next`, the count a connection is at.
    pub fn their_epoch(&self, epoch: &str, next: &mut u32) {
        let mut receiving = self.receiving.lock();
        if receiving.epoch.as_deref() != Some(epoch) {
            receiving.epoch = Some(epoch.to_owned());
            receiving.handled = 0;
            *next = 0;
        }
    }

    /// The peer's stanza numbered `number` arrived: whether it is new
    /// (then it is counted handled); the count handled either way.
    pub fn arrived(&self, number: u32) -> (bool, u32) {
        let mut receiving = self.receiving.lock();
        // Later than the count, in the wrapping order of XEP-0198's counts.
        let new = (number.wrapping_sub(receiving.handled) as i32) > 0;
        if new {
            receiving.handled = number;
        }
        (new, receiving.handled)
    }
}

/// A peer configured in advance for zero-handshake federation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeroPeer {
    /// The peer's domains (its users' and its MUC service's), whose
    /// stanzas its connections carry.
    pub domains: Vec<String>,
    /// Where its zero-handshake listener is.
    pub address: SocketAddr,
    /// The addresses its connections come from: the only ones taken as it.
    pub from: Vec<IpAddr>,
    /// Whether each write is deflated both ways.
    pub compress: bool,
    /// The SHA-256 of its certificate: if given, connections are TLS both
    /// ways and the peer must show this certificate.
    pub pin: Option<[u8; 32]>,
}

/// A certificate's SHA-256 read from `text`, as `openssl x509 -fingerprint
/// -sha256` prints it: 64 hexadecimal digits, in pairs apart by colons or not.
pub fn parse_pin(text: &str) -> Result<[u8; 32], String> {
    let digits: String = text.trim().trim_start_matches("sha256:").trim_start_matches("SHA256 Fingerprint=").chars().filter(|c| *c != ':').collect();
    let bad = || format!("{text:?} is not a SHA-256 fingerprint (64 hexadecimal digits, as `openssl x509 -noout -fingerprint -sha256` prints)");
    if digits.len() != 64 || !digits.is_ascii() {
        return Err(bad());
    }
    let mut pin = [0u8; 32];
    for (i, byte) in pin.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(pin)
}

/// `certificate`'s SHA-256 as `parse_pin` reads it: pairs of uppercase
/// hexadecimal digits apart by colons.
pub fn fingerprint(certificate: &[u8]) -> String {
    Sha256::digest(certificate).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

/// Whether `chain`, the certificates the other side showed, starts with the
/// one `pin` names.
fn pinned(chain: Option<&[CertificateDer<'_>]>, pin: &[u8; 32]) -> bool {
    chain.and_then(<[_]>::first).is_some_and(|own| <[u8; 32]>::from(Sha256::digest(own.as_ref())) == *pin)
}

/// Sends what `peer` queues for the domain pair `key` to `zero`, over a
/// connection that carries stanzas from its first byte, holding `_slot`
/// among the streams between servers; then whatever could not go goes
/// back to its senders.
pub(super) async fn outgoing(xmpp: Arc<Xmpp>, key: (String, String), peer: Arc<Peer>, zero: ZeroPeer, _slot: tokio::sync::OwnedSemaphorePermit) {
    let Some(federation) = xmpp.federation.clone() else { return };
    let metrics = &xmpp.context.metrics;
    let connected = tokio::time::timeout(federation.settings.connect_timeout, async {
        let tcp = TcpStream::connect(zero.address).await.map_err(|e| ("connect", e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let Some(pin) = &zero.pin else { return Ok(Link::Plain(tcp)) };
        // The name is the peer's domain, for its SNI: the certificate is
        // checked against the pin alone.
        let name = ServerName::try_from(key.1.clone()).map_err(|e| ("connect", e.to_string()))?;
        let tls = federation.identity.connector(false).connect(name, tcp).await.map_err(|e| ("tls", e.to_string()))?;
        if !pinned(tls.get_ref().1.peer_certificates(), pin) {
            return Err(("zero_pin", "its certificate is not the one pinned".to_owned()));
        }
        Ok(Link::Tls(Box::new(tls)))
    })
    .await;
    let Some((_, continuity)) = federation.zero_peer(&key.1) else { return };
    let link = match connected {
        Ok(Ok(link)) => link,
        Ok(Err((reason, e))) => {
            metrics.s2s_failed(reason);
            tracing::warn!("xmpp: zero-handshake connection to {} at {} failed: {e}", key.1, zero.address);
            if reason == "zero_pin" {
                // Not the peer pinned: trying again would not change that.
                xmpp.undelivered(continuity.abandon().into(), Undelivered::NotFound);
            } else {
                // Perhaps a link still down: tried again, as after a stall.
                carry_over(&xmpp, &key, &peer, continuity, continuity.take_sending(), Ended::Unanswered, Undelivered::NotFound);
            }
            return xmpp.give_up(&key, &peer, Undelivered::NotFound);
        }
        Err(_) => {
            metrics.s2s_failed("timeout");
            carry_over(&xmpp, &key, &peer, continuity, continuity.take_sending(), Ended::Unanswered, Undelivered::Timeout);
            return xmpp.give_up(&key, &peer, Undelivered::Timeout);
        }
    };
    let _open = metrics.s2s_stream("out", "authenticated", "zero");
    let sends = Some((&key, &*peer));
    let why = match link {
        Link::Plain(tcp) => run(&xmpp, tcp, &zero, continuity, sends, None).await,
        Link::Tls(tls) => run(&xmpp, tls, &zero, continuity, sends, None).await,
    };
    xmpp.give_up(&key, &peer, why);
}

/// A zero-handshake connection, made: TLS when the peer's certificate is pinned.
enum Link<T> {
    Plain(TcpStream),
    Tls(Box<T>),
}

/// Takes zero-handshake connections on `listener` from the configured
/// peers' addresses until shutdown; a connection from anywhere else is
/// closed unread.
pub async fn serve(listener: tokio::net::TcpListener, xmpp: Arc<Xmpp>) {
    let Some(federation) = xmpp.federation.clone() else { return };
    if federation.settings.zero.iter().any(|z| z.pin.is_some()) {
        tracing::info!("xmpp: zero-handshake peers pin this server's certificate as {}", federation.identity.fingerprint());
    }
    let context = xmpp.context.clone();
    context
        .accept(listener, "xmpp-s2s-zero", |tcp, from| {
            // An IPv4 peer reaching a listener on [::] comes as ::ffff:a.b.c.d.
            let ip = from.ip().to_canonical();
            let Some(zero) = federation.settings.zero.iter().find(|z| z.from.contains(&ip)).cloned() else {
                context.metrics.s2s_failed("zero_unknown_address");
                tracing::warn!("xmpp: a zero-handshake connection from {from}, which no [[xmpp_s2s_peer]] names, closed");
                return;
            };
            let Ok(slot) = federation.streams.clone().try_acquire_owned() else {
                context.metrics.s2s_failed("max_streams");
                return;
            };
            context.tracker.spawn(incoming(xmpp.clone(), tcp, zero, slot));
        })
        .await;
}

/// A peer's connection: read, and used to send to its first domain while
/// no other connection does. With a pinned certificate, TLS first: a
/// connection that does not show it is closed.
async fn incoming(xmpp: Arc<Xmpp>, tcp: TcpStream, zero: ZeroPeer, _slot: tokio::sync::OwnedSemaphorePermit) {
    let Some(federation) = xmpp.federation.clone() else { return };
    let metrics = &xmpp.context.metrics;
    let link = match &zero.pin {
        None => Link::Plain(tcp),
        Some(pin) => {
            let accepted = tokio::time::timeout(federation.settings.connect_timeout, federation.identity.acceptor(false).accept(tcp)).await;
            match accepted {
                Ok(Ok(tls)) if pinned(tls.get_ref().1.peer_certificates(), pin) => Link::Tls(Box::new(tls)),
                Ok(Ok(_)) => {
                    metrics.s2s_failed("zero_pin");
                    tracing::warn!("xmpp: a zero-handshake connection from {} closed: its certificate is not the one pinned", zero.domains.join(", "));
                    return;
                }
                Ok(Err(_)) => return metrics.s2s_failed("tls"),
                Err(_) => return metrics.s2s_failed("timeout"),
            }
        }
    };
    let Some((_, continuity)) = zero.domains.first().and_then(|domain| federation.zero_peer(domain)) else { return };
    let arrival = continuity.arrive(federation.settings.max_streams_per_domain);
    let _open = metrics.s2s_stream("in", "authenticated", "zero");
    let key = (xmpp.domain.clone(), zero.domains[0].clone());
    let peer = xmpp.claim_peer(&key);
    let sends = peer.as_deref().map(|peer| (&key, peer));
    let why = match link {
        Link::Plain(tcp) => run(&xmpp, tcp, &zero, continuity, sends, Some(&arrival.ends)).await,
        Link::Tls(tls) => run(&xmpp, tls, &zero, continuity, sends, Some(&arrival.ends)).await,
    };
    if let Some(peer) = peer {
        xmpp.give_up(&key, &peer, why);
    }
}

/// Carries stanzas both ways on `io` with `zero`, sending what `sends` queues.
async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    xmpp: &Arc<Xmpp>,
    io: S,
    zero: &ZeroPeer,
    continuity: &Continuity,
    sends: Option<(&(String, String), &Peer)>,
    superseded: Option<&Notify>,
) -> Undelivered {
    let limits = Limits { max_stanza_bytes: xmpp.context.bounds.max_message_size, ..Limits::default() };
    let duties = Duties { sends, reads: true, theirs: &zero.domains, acks: Acks::on(), continuity: Some(continuity), superseded };
    if zero.compress {
        carry(xmpp, &mut WireStream::zero(Deflated::new(io), limits), duties).await
    } else {
        carry(xmpp, &mut WireStream::zero(io, limits), duties).await
    }
}
