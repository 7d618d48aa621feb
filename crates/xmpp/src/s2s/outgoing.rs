//! The stream this server opens to another to send it stanzas (RFC 6120,
//! the initiating entity): it connects, asks for TLS, checks that the
//! other's certificate names its domain, asks for the stream to go both
//! ways where the other offers it (XEP-0288), authenticates with SASL
//! EXTERNAL (XEP-0178) or dialback, and then `carry` writes what waits in
//! the domain's queue, in order.

use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use wire::xmpp::{Element, Header, Limits};

use super::carry::{Acks, Duties, carry};
use super::wire_stream::{Failed, WireStream, attribute};
use super::{Federation, Peer, Undelivered, ns};
use crate::Xmpp;

type Secure = WireStream<TlsStream<TcpStream>>;

/// Sends what `peer` queues for the pair of domains `key` (ours, theirs)
/// over a new stream, until it is idle or fails; then whatever could not
/// go goes back to its senders as an error.
pub(super) async fn run(xmpp: Arc<Xmpp>, key: (String, String), peer: Arc<Peer>) {
    let Some(federation) = xmpp.federation.clone() else { return };
    let metrics = &xmpp.context.metrics;
    let Ok(slot) = federation.streams.clone().try_acquire_owned() else {
        metrics.s2s_failed("max_streams");
        tracing::warn!("xmpp: no stream to {}: --xmpp-s2s-max-streams are open", key.1);
        return xmpp.give_up(&key, &peer, Undelivered::NotFound);
    };
    let (from, to) = (&key.0, &key.1);
    // A peer configured in advance: no handshake at all (XEP-0361).
    if let Some(zero) = federation.settings.zero.iter().find(|z| z.domains.contains(to)).cloned() {
        return super::zero::outgoing(xmpp, key, peer, zero, slot).await;
    }
    let _slot = slot;
    let negotiating = metrics.s2s_stream("out", "negotiating", "none");
    let connected = tokio::time::timeout(federation.settings.connect_timeout, connect(&xmpp, &federation, from, to)).await;
    drop(negotiating);
    let Connected { mut stream, bidi, acked, auth } = match connected {
        Ok(Ok(connected)) => connected,
        Ok(Err(e)) => {
            metrics.s2s_failed("connect");
            tracing::warn!("xmpp: stream from {from} to {to} failed: {e}");
            return xmpp.give_up(&key, &peer, Undelivered::NotFound);
        }
        Err(_) => {
            metrics.s2s_failed("timeout");
            tracing::warn!("xmpp: stream from {from} to {to} not ready within {}", humantime::format_duration(federation.settings.connect_timeout));
            return xmpp.give_up(&key, &peer, Undelivered::Timeout);
        }
    };
    let _open = metrics.s2s_stream("out", "authenticated", auth);
    tracing::debug!("xmpp: stream from {from} to {to} ready{}", if bidi { ", both ways" } else { "" });
    let acks = if acked { Acks::on() } else { Acks::default() };
    let duties = Duties { sends: Some((&key, &peer)), reads: bidi, theirs: std::slice::from_ref(to), acks, continuity: None, superseded: None };
    let why = carry(&xmpp, &mut stream, duties).await;
    xmpp.give_up(&key, &peer, why);
}

/// A stream from `from` to `to`, secured, as the other server opened its
/// side: its stream id, the features it offers, and whether its
/// certificate vouches for `to`.
pub(super) struct Opened {
    pub stream: Secure,
    pub id: String,
    pub features: Element,
    pub vouched: bool,
}

/// Connects to `to`'s server and secures a stream from `from` with TLS:
/// STARTTLS, or TLS from the first byte where DNS says so (XEP-0368).
pub(super) async fn open_secure(xmpp: &Xmpp, federation: &Federation, from: &str, to: &str) -> Result<Opened, Failed> {
    let limits = Limits { max_stanza_bytes: xmpp.context.bounds.max_message_size, ..Limits::default() };
    let (tcp, direct) = open(federation, to).await?;
    let _ = tcp.set_nodelay(true);
    let header = Header { id: None, from: Some(from), to: Some(to) }.server_stream();
    let tcp = if direct { tcp } else { starttls(tcp, &header, limits, to).await? };
    // The domain as the server name (SNI), as XEP-0368 §3 asks.
    let name = ServerName::try_from(to.to_owned()).map_err(|e| Failed::Protocol("host-unknown", e.to_string()))?;
    let tls = federation.identity.connector(direct).connect(name, tcp).await?;
    let vouched = federation.identity.vouches(tls.get_ref().1.peer_certificates(), to);
    let mut stream = WireStream::new(tls, limits);
    stream.send(&header).await?;
    let attrs = stream.header().await?;
    let id = attribute(&attrs, "id").unwrap_or_default().to_owned();
    let features = stream.element().await?;
    Ok(Opened { stream, id, features, vouched })
}

/// Opens a plain stream on `tcp` with `header` and asks to go on over TLS.
async fn starttls(tcp: TcpStream, header: &str, limits: Limits, to: &str) -> Result<TcpStream, Failed> {
    let mut plain = WireStream::new(tcp, limits);
    plain.send(header).await?;
    plain.header().await?;
    let features = plain.element().await?;
    if features.find("starttls", ns::TLS).is_none() {
        plain.fail("policy-violation", "TLS is required between servers").await;
        return Err(Failed::Protocol("policy-violation", format!("{to} offers no TLS")));
    }
    plain.send_element(&Element::new("starttls", ns::TLS)).await?;
    let proceed = plain.element().await?;
    if proceed.name != "proceed" {
        return Err(Failed::Protocol("policy-violation", format!("{to} refused TLS")));
    }
    Ok(plain.into_parts().0)
}

/// A stream this server opened, ready: whether it goes both ways, whether
/// stream management is on, and how it was authenticated.
struct Connected {
    stream: Secure,
    bidi: bool,
    acked: bool,
    auth: &'static str,
}

/// A stream from `from` to `to`, secured and authenticated: with SASL
/// EXTERNAL when the other server offers it, else with dialback; and
/// whether it goes both ways (XEP-0288), as it does where the other
/// server offers it; and whether stream management is on (XEP-0198), as
/// this server asks where offered.
async fn connect(xmpp: &Xmpp, federation: &Federation, from: &str, to: &str) -> Result<Connected, Failed> {
    let Opened { mut stream, id, features, vouched } = open_secure(xmpp, federation, from, to).await?;
    // Where dialback is allowed, DNS (or the route) is what vouches for the other server.
    if !vouched && !federation.dialback.allows(to) {
        stream.fail("undefined-condition", "your certificate does not vouch for your domain").await;
        return Err(Failed::Protocol("not-authorized", format!("the certificate of {to}'s server does not vouch for {to}")));
    }
    // Both ways, asked before authentication (XEP-0288 §2).
    let bidi = features.find("bidi", ns::BIDI_FEATURE).is_some();
    if bidi {
        stream.send_element(&Element::new("bidi", ns::BIDI)).await?;
    }
    let external = features.find("mechanisms", ns::SASL).is_some_and(|m| m.elements().any(|m| m.text_content() == "EXTERNAL"));
    if external {
        let authzid = base64::engine::general_purpose::STANDARD.encode(from);
        stream.send_element(&Element::new("auth", ns::SASL).attr("mechanism", "EXTERNAL").text(&authzid)).await?;
        let outcome = stream.element().await?;
        if outcome.name == "success" {
            stream.parser.restart();
            stream.send(&Header { id: None, from: Some(from), to: Some(to) }.server_stream()).await?;
            stream.header().await?;
            let features = stream.element().await?;
            let mut acked = false;
            if features.find("sm", ns::SM).is_some() {
                stream.send_element(&Element::new("enable", ns::SM)).await?;
                let answer = stream.element().await?;
                acked = answer.ns == ns::SM && answer.name == "enabled";
            }
            return Ok(Connected { stream, bidi, acked, auth: "external" });
        }
        tracing::info!("xmpp: {to} refused our certificate for {from}; trying dialback");
    }
    if features.find("dialback", ns::DIALBACK_FEATURE).is_none() {
        stream.fail("not-authorized", "no means of authentication in common").await;
        return Err(Failed::Protocol("not-authorized", format!("{to} offers neither SASL EXTERNAL for us nor dialback")));
    }
    let key = federation.keys.key(to, from, &id);
    stream.send_element(&Element::new("result", ns::DIALBACK).attr("from", from).attr("to", to).text(&key)).await?;
    let answer = stream.element().await?;
    if answer.ns == ns::DIALBACK && answer.name == "result" && answer.get("type") == Some("valid") {
        return Ok(Connected { stream, bidi, acked: false, auth: "dialback" });
    }
    Err(Failed::Protocol("not-authorized", format!("{to} did not take our dialback key for {from}")))
}

/// Asks `originating`'s server whether it gave `key` to this server, as
/// `receiving`, on the stream `id` (XEP-0220 §2.1.3): over a new stream,
/// whatever its certificate, since the domain's address is what
/// dialback trusts.
pub(super) async fn verify(xmpp: &Xmpp, federation: &Federation, receiving: &str, originating: &str, id: &str, key: &str) -> Result<bool, Failed> {
    let Opened { mut stream, .. } = open_secure(xmpp, federation, receiving, originating).await?;
    let ask = Element::new("verify", ns::DIALBACK).attr("from", receiving).attr("to", originating).attr("id", id).text(key);
    stream.send_element(&ask).await?;
    let answer = stream.element().await?;
    let _ = stream.send(wire::xmpp::STREAM_END).await;
    Ok(answer.ns == ns::DIALBACK && answer.name == "verify" && answer.get("id") == Some(id) && answer.get("type") == Some("valid"))
}

/// A connection to `to`'s server, and whether it is for TLS from the
/// first byte: where its route says, or where DNS does.
async fn open(federation: &Federation, to: &str) -> Result<(TcpStream, bool), Failed> {
    if let Some(route) = federation.settings.routes.get(to) {
        return Ok((TcpStream::connect(route.address).await?, route.direct_tls));
    }
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, format!("no server for {to} in DNS"));
    for target in federation.resolver.targets(to).await {
        let addresses = match federation.resolver.addresses(&target.host, target.port).await {
            Ok(addresses) => addresses,
            Err(e) => {
                last = e;
                continue;
            }
        };
        for address in addresses {
            match TcpStream::connect(address).await {
                Ok(tcp) => return Ok((tcp, target.direct)),
                Err(e) => last = e,
            }
        }
    }
    Err(Failed::Io(last))
}
