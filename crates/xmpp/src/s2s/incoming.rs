//! Streams other servers open to this one (RFC 6120, the receiving
//! entity): TLS is required, the other's certificate must name the domain
//! its header claims (or, where allowed, dialback vouch for it), SASL
//! EXTERNAL (XEP-0178) authenticates it, and then `carry` delivers what it
//! carries here (`inbound`), and carries this server's stanzas back when
//! the other asked for the stream to go both ways (XEP-0288).

use std::sync::Arc;

use base64::Engine;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio::io::{AsyncRead, AsyncWrite};
use wire::xmpp::{Element, Header, Limits, STREAMS_NS};

use super::carry::{Acks, Duties, carry};
use super::wire_stream::{Failed, WireStream, attribute};
use super::{Federation, ns};
use crate::{Jid, Xmpp};

/// Accepts streams from other servers on `listener` until shutdown; with
/// `direct`, each starts with TLS (XEP-0368).
pub async fn serve(listener: TcpListener, xmpp: Arc<Xmpp>, direct: bool) {
    let Some(federation) = xmpp.federation.clone() else { return };
    let context = xmpp.context.clone();
    context.accept(listener, "xmpp-s2s", |tcp, _| {
        let Ok(slot) = federation.streams.clone().try_acquire_owned() else {
            context.metrics.s2s_failed("max_streams");
            return;
        };
        context.tracker.spawn(run(tcp, xmpp.clone(), federation.clone(), slot, direct));
    })
    .await;
}

/// A stream's negotiation failed: the stream error that says why.
struct Refusal(&'static str, String);

/// Serves one stream from another server until it ends: it reads the
/// stanzas the other server sends, and where the stream goes both ways
/// (XEP-0288) and this server has no stream of its own to that domain, it
/// carries this server's stanzas there too.
async fn run(tcp: TcpStream, xmpp: Arc<Xmpp>, federation: Arc<Federation>, _slot: OwnedSemaphorePermit, direct: bool) {
    let negotiating = xmpp.context.metrics.s2s_stream("in", "negotiating", "none");
    let negotiated = tokio::time::timeout(federation.settings.connect_timeout, negotiate(&xmpp, &federation, tcp, direct)).await;
    drop(negotiating);
    let Ok(Some(Negotiated { mut stream, theirs, ours, bidi, auth })) = negotiated else {
        xmpp.context.metrics.s2s_failed("negotiation");
        return;
    };
    let Some(_counted) = federation.stream_from(&theirs) else {
        xmpp.context.metrics.s2s_failed("max_streams_per_domain");
        let limit = federation.settings.max_streams_per_domain;
        return stream.fail("policy-violation", &format!("{theirs} is at its bound of {limit} streams here")).await;
    };
    let _open = xmpp.context.metrics.s2s_stream("in", "authenticated", auth);
    let key = (ours, theirs);
    let peer = if bidi { xmpp.claim_peer(&key) } else { None };
    tracing::debug!("xmpp: stream from {} authenticated{}", key.1, if peer.is_some() { ", both ways" } else { "" });
    let acks = Acks::offered();
    let duties = Duties { sends: peer.as_deref().map(|peer| (&key, peer)), reads: true, theirs: std::slice::from_ref(&key.1), acks, continuity: None, superseded: None };
    let why = carry(&xmpp, &mut stream, duties).await;
    if let Some(peer) = peer {
        xmpp.give_up(&key, &peer, why);
    }
}

/// A stream from another server, authenticated: for the domain `theirs`,
/// to the domain `ours`; `bidi` if it asked to go both ways.
struct Negotiated {
    stream: WireStream<tokio_rustls::server::TlsStream<TcpStream>>,
    theirs: String,
    ours: String,
    bidi: bool,
    /// How: `external` or `dialback`.
    auth: &'static str,
}

/// Negotiates the stream up to its authentication (over TLS from the first
/// byte if `direct`, XEP-0368, else after STARTTLS); the stream and the
/// domains, or `None` once it has been refused or has only asked this
/// server to verify dialback keys.
async fn negotiate(xmpp: &Xmpp, federation: &Federation, tcp: TcpStream, direct: bool) -> Option<Negotiated> {
    let id = || format!("{:016x}", rand::random::<u64>());
    let limits = Limits { max_stanza_bytes: xmpp.context.bounds.max_message_size, ..Limits::default() };
    let (tcp, expected) = if direct { (tcp, None) } else { plain_phase(xmpp, WireStream::new(tcp, limits), &id()).await? };
    let tls = federation.identity.acceptor(direct).accept(tcp).await.ok()?;
    let mut secure = WireStream::new(tls, limits);
    let stream_id = id();
    let (from, to) = match opened(xmpp, &mut secure, &stream_id).await {
        Ok(names) if expected.as_ref().is_none_or(|before| *before == names) => names,
        Ok(_) => return refuse(&mut secure, "invalid-from", "the stream restarted for other domains").await,
        Err(Refusal(condition, text)) => return refuse(&mut secure, condition, &text).await,
    };
    let vouched = federation.identity.vouches(secure.io.get_ref().1.peer_certificates(), &from);
    // SASL EXTERNAL for a certificate that vouches for the domain; dialback
    // always, as this server answers for its own keys whoever asks.
    let mut offered = Element::new("features", STREAMS_NS);
    if vouched {
        offered = offered.child(Element::new("mechanisms", ns::SASL).child(Element::new("mechanism", ns::SASL).text("EXTERNAL")));
    }
    offered = offered.child(Element::new("dialback", ns::DIALBACK_FEATURE).child(Element::new("errors", ns::DIALBACK_FEATURE)));
    offered = offered.child(Element::new("bidi", ns::BIDI_FEATURE));
    secure.send_element(&offered).await.ok()?;
    let mut bidi = false;
    loop {
        let asked = match secure.element().await {
            Ok(asked) => asked,
            Err(Failed::Protocol(condition, text)) => return refuse(&mut secure, condition, &text).await,
            Err(_) => return None,
        };
        match (asked.ns.as_str(), asked.name.as_str()) {
            // Both ways, once authenticated (XEP-0288 §2): no answer.
            (ns::BIDI, "bidi") => bidi = true,
            (ns::SASL, "auth") if vouched && asked.get("mechanism") == Some("EXTERNAL") => {
                if !authorizes(&asked, &from) {
                    let failure = Element::new("failure", ns::SASL).child(Element::new("invalid-authzid", ns::SASL));
                    let _ = secure.send(&format!("{}{}", failure.to_xml(ns::SERVER), wire::xmpp::STREAM_END)).await;
                    return None;
                }
                secure.send_element(&Element::new("success", ns::SASL)).await.ok()?;
                secure.parser.restart();
                match opened(xmpp, &mut secure, &id()).await {
                    Ok(again) if again == (from.clone(), to.clone()) => {}
                    Ok(_) => return refuse(&mut secure, "invalid-from", "the stream restarted for other domains").await,
                    Err(Refusal(condition, text)) => return refuse(&mut secure, condition, &text).await,
                }
                // Stream management, without resumption (XEP-0198).
                secure.send_element(&Element::new("features", STREAMS_NS).child(Element::new("sm", ns::SM))).await.ok()?;
                return Some(Negotiated { stream: secure, theirs: from, ours: to, bidi, auth: "external" });
            }
            (ns::SASL, "auth") => {
                let failure = Element::new("failure", ns::SASL).child(Element::new("not-authorized", ns::SASL));
                secure.send_element(&failure).await.ok()?;
            }
            (ns::DIALBACK, "verify") => {
                // The other server asks whether this one gave a key (XEP-0220 §2.2).
                let (asker, ours, key_id) = (asked.get("from").unwrap_or_default(), asked.get("to").unwrap_or_default(), asked.get("id").unwrap_or_default());
                let valid = xmpp.serves(ours) && federation.keys.check(asker, ours, key_id, &asked.text_content());
                let answer = Element::new("verify", ns::DIALBACK).attr("from", ours).attr("to", asker).attr("id", key_id).attr("type", if valid { "valid" } else { "invalid" });
                secure.send_element(&answer).await.ok()?;
            }
            (ns::DIALBACK, "result") if asked.get("type").is_none() => {
                let claimed = asked.get("from").unwrap_or_default().to_ascii_lowercase();
                if claimed != from || asked.get("to").is_none_or(|t| !t.eq_ignore_ascii_case(&to)) {
                    return refuse(&mut secure, "invalid-from", "dialback is for the domains the stream names").await;
                }
                if !federation.dialback.allows(&from) {
                    federation.refused(&from, "its certificate does not vouch for it, and dialback is not allowed for it");
                    xmpp.context.metrics.s2s_failed("certificate");
                    return refuse(&mut secure, "not-authorized", &format!("no certificate trusted here vouches for {from}")).await;
                }
                let valid = super::outgoing::verify(xmpp, federation, &to, &from, &stream_id, &asked.text_content()).await;
                let valid = valid.inspect_err(|e| tracing::info!("xmpp: dialback for {from} not verified: {e}")).unwrap_or(false);
                let answer = Element::new("result", ns::DIALBACK).attr("from", &to).attr("to", &from).attr("type", if valid { "valid" } else { "invalid" });
                secure.send_element(&answer).await.ok()?;
                if !valid {
                    federation.refused(&from, "its dialback key was not verified");
                    xmpp.context.metrics.s2s_failed("dialback");
                    return refuse(&mut secure, "not-authorized", &format!("{from}'s server did not vouch for the key")).await;
                }
                return Some(Negotiated { stream: secure, theirs: from, ours: to, bidi, auth: "dialback" });
            }
            _ if !vouched => {
                federation.refused(&from, "its certificate does not vouch for it");
                xmpp.context.metrics.s2s_failed("certificate");
                return refuse(&mut secure, "not-authorized", &format!("no certificate trusted here vouches for {from}")).await;
            }
            _ => return refuse(&mut secure, "not-authorized", "authenticate with SASL EXTERNAL or dialback first").await,
        }
    }
}

/// Whether the authorization identity of an EXTERNAL `<auth/>`, if it
/// gives one, is `domain` (XEP-0178 §3).
fn authorizes(auth: &Element, domain: &str) -> bool {
    let named = match auth.text_content().trim() {
        "" | "=" => Some(domain.to_owned()),
        encoded => base64::engine::general_purpose::STANDARD.decode(encoded).ok().and_then(|d| String::from_utf8(d).ok()),
    };
    named.as_deref() == Some(domain)
}

/// A plain stream's start: headers, and STARTTLS, required; the socket
/// to turn to TLS and the domains the header names.
async fn plain_phase(xmpp: &Xmpp, mut plain: WireStream<TcpStream>, id: &str) -> Option<(TcpStream, Option<(String, String)>)> {
    let names = match opened(xmpp, &mut plain, id).await {
        Ok(names) => names,
        Err(Refusal(condition, text)) => return refuse(&mut plain, condition, &text).await,
    };
    let features = Element::new("features", STREAMS_NS).child(Element::new("starttls", ns::TLS).child(Element::new("required", ns::TLS)));
    plain.send_element(&features).await.ok()?;
    match plain.element().await {
        Ok(e) if e.ns == ns::TLS && e.name == "starttls" => plain.send_element(&Element::new("proceed", ns::TLS)).await.ok()?,
        Ok(_) => return refuse(&mut plain, "policy-violation", "TLS is required between servers").await,
        Err(Failed::Protocol(condition, text)) => return refuse(&mut plain, condition, &text).await,
        Err(_) => return None,
    }
    Some((plain.into_parts().0, Some(names)))
}

/// Reads the other server's header and answers with this one's: the
/// domain it claims (`from`) and the one it asks for (`to`), served here.
/// On `Err` this side's header is sent, and the error is to follow.
async fn opened<S: AsyncRead + AsyncWrite + Unpin>(xmpp: &Xmpp, stream: &mut WireStream<S>, id: &str) -> Result<(String, String), Refusal> {
    let attrs = match stream.header().await {
        Ok(attrs) => attrs,
        Err(Failed::Protocol(condition, text)) => {
            let _ = stream.send(&Header { id: Some(id), from: Some(&xmpp.domain), to: None }.server_stream()).await;
            return Err(Refusal(condition, text));
        }
        Err(e) => return Err(Refusal("undefined-condition", e.to_string())),
    };
    let to = attribute(&attrs, "to").unwrap_or_default().to_ascii_lowercase();
    let from = attribute(&attrs, "from").unwrap_or_default().to_ascii_lowercase();
    let served = xmpp.serves(&to);
    let ours = if served { to.as_str() } else { xmpp.domain.as_str() };
    let theirs = Some(from.as_str()).filter(|f| !f.is_empty());
    stream.send(&Header { id: Some(id), from: Some(ours), to: theirs }.server_stream()).await.map_err(|e| Refusal("undefined-condition", e.to_string()))?;
    if !served {
        return Err(Refusal("host-unknown", format!("{to} is not served here")));
    }
    if Jid::parse(&from).is_none_or(|jid| jid.local.is_some() || jid.resource.is_some()) {
        return Err(Refusal("invalid-from", "a server's stream names its domain in 'from'".into()));
    }
    Ok((from, to))
}

/// Ends a stream being negotiated with a stream error (this side's header
/// already sent); `None`, for `negotiate`.
async fn refuse<S: AsyncRead + AsyncWrite + Unpin, T>(stream: &mut WireStream<S>, condition: &'static str, text: &str) -> Option<T> {
    tracing::debug!("xmpp: a server's stream refused: {condition}: {text}");
    stream.fail(condition, text).await;
    None
}
