//! login: an XMPP client logs in from cold, by style, says it is available and sends
//! itself a message; timed from the TCP connect to that message's return, with the
//! round trips it waited (the times the client could go no further until the server
//! answered: TCP's handshake as one unless the server took the first flight in the SYN,
//! and TLS's unless the client's next bytes went as its early data) and the bytes each way on the socket, TLS's included. Over a slow link (`switchboard link` in front of the
//! server's ports) round trips and bytes are what a login costs.
//!
//! - `standard`: STARTTLS, SASL SCRAM-SHA-256, the stream's restart, resource binding:
//!   RFC 6120 as most clients speak it, each step waiting for the one before.
//! - `sasl2`: direct TLS (XEP-0368), then SASL2 (XEP-0388) SCRAM-SHA-256 with Bind 2
//!   (XEP-0386): no restart, no separate bind. A cold client that knows its password.
//! - `fast`: direct TLS resumed from the client's last connection (TLS 1.3, no
//!   certificate sent), and in one flight with it, as early data where the server
//!   takes it (0-RTT), its stream header, a SASL2 login with the FAST token
//!   (XEP-0484, HT-SHA-256-NONE) it was given last time and the count of its logins
//!   with it (which a server refuses to see twice in early data), Bind 2, its presence
//!   and its message, all in one write; its connection opened with TCP Fast Open
//!   (RFC 7413), so that a server that takes it (`--tcp-fast-open`) reads that
//!   write with the SYN, and TCP's handshake is no wait of its own. A client
//!   coming back. Its first token comes from one `sasl2` login before the timed
//!   ones, then one FAST login, neither counted: by then it holds the server's
//!   Fast Open cookie (and so does a link in between, the server's) and a TLS
//!   ticket, as a client that has logged in before does.

use std::sync::Arc;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use wire::xmpp::{Element, Header, Limits, StreamEvent, StreamParser, ns};

use super::Ctx;
use crate::Error;
use crate::flags::{LoginSettings, LoginStyle, XmppAuth};
use crate::latency::Latency;
use crate::result::LoginResult;
use crate::scram::Scram;
use crate::transport::corked::Corked;
use crate::transport::counted::{Counted, Counts};

/// The user-agent id this bench's FAST tokens are bound to.
const AGENT: &str = "8f1c2a3e-7b44-4d21-9a6e-5d0c1b2e3f40";

pub(crate) async fn run(ctx: &Ctx, settings: &LoginSettings, out: &mut Vec<LoginResult>) -> Result<(), Error> {
    let Some(xmpp) = &ctx.xmpp else { return Err(Error::usage("login needs the XMPP flags")) };
    let XmppAuth::Plain { password, .. } = &xmpp.auth else {
        return Err(Error::usage("login needs --xmpp-user and --xmpp-password: FAST tokens are an account's"));
    };
    let user = xmpp.auth.user(0).unwrap_or_default();
    let roots = trust(&settings.trust)?;
    let who = Who { domain: xmpp.domain.clone(), user, password: password.clone() };
    let host = ctx.target.host().to_owned();
    for &style in &settings.styles {
        ctx.progress.step(format!("login {style}"), settings.logins);
        let window = ctx.monitor.window();
        // One client's TLS configuration across its logins: its session cache is what
        // lets `fast` resume, sending its first flight as early data. Each `standard`
        // and `sasl2` login starts from a new one, cold.
        let mut warm = tls_config(&roots, true)?;
        let mut token = Given::default();
        let fast_open = style == LoginStyle::Fast;
        if style == LoginStyle::Fast {
            let address = format!("{host}:{}", settings.tls_port);
            let login = Login::new(&who, &address, warm.clone(), fast_open);
            token = ctx.expect(async { login.sasl2(true).await.map(|(_, t)| Some(t)) }, "the login that is given the first FAST token").await?;
            if !token.zero_rtt {
                // Early data only where the server said it takes a login in it.
                warm = tls_config(&roots, false)?;
            }
            // A client coming back has done this before: by now it holds the
            // server's TCP Fast Open cookie (and so does a link in between, the
            // server's), and a TLS ticket that takes early data.
            let login = Login::new(&who, &address, warm.clone(), fast_open);
            ctx.expect(async { login.fast(&mut token).await.map(Some) }, "a FAST login before the timed ones").await?;
        }
        let mut time = Latency::new();
        let mut last = Cost::default();
        for _ in 0..settings.logins {
            let (port, config) = match style {
                LoginStyle::Standard => (settings.port, tls_config(&roots, false)?),
                LoginStyle::Sasl2 => (settings.tls_port, tls_config(&roots, false)?),
                LoginStyle::Fast => (settings.tls_port, warm.clone()),
            };
            let login = Login::new(&who, &format!("{host}:{port}"), config, fast_open);
            let mut arrival = match style {
                LoginStyle::Standard => ctx.expect(async { login.standard().await.map(Some) }, "a standard login").await?,
                LoginStyle::Sasl2 => ctx.expect(async { login.sasl2(false).await.map(|(c, _)| Some(c)) }, "a SASL2 login").await?,
                LoginStyle::Fast => ctx.expect(async { login.fast(&mut token).await.map(Some) }, "a FAST login").await?,
            };
            // TCP's handshake was no wait of its own when the first flight
            // went in the SYN and was taken there (behind `switchboard link`,
            // by the link: its `fast_opens` says whether the server took it
            // from the link).
            if arrival.carried_in_syn {
                arrival.cost.round_trips = arrival.cost.round_trips.saturating_sub(1);
            }
            time.record(arrival.after.as_micros() as u64);
            last = arrival.cost;
            ctx.progress.inc(1);
        }
        out.push(LoginResult {
            style,
            first_message: time.summary(),
            round_trips: last.round_trips,
            bytes_sent: last.sent,
            bytes_received: last.received,
            resources: ctx.monitor.finish(window),
        });
    }
    Ok(())
}

/// When a login's first message came back, and what the login had cost by then.
struct Arrival {
    after: std::time::Duration,
    cost: Cost,
    /// Whether the server took the login's first flight in its SYN.
    carried_in_syn: bool,
}

/// What one login cost on its socket.
#[derive(Debug, Default)]
struct Cost {
    round_trips: u64,
    sent: u64,
    received: u64,
}

/// A FAST token as the client keeps it.
#[derive(Debug, Default)]
struct Given {
    token: String,
    /// Its logins so far: one in TLS early data carries the next (XEP-0484 §4).
    count: u64,
    /// Whether the server takes a login with it in TLS early data.
    zero_rtt: bool,
}

struct Who {
    domain: String,
    user: String,
    password: String,
}

/// The authorities the server's certificate is checked against.
fn trust(path: &std::path::Path) -> Result<rustls::RootCertStore, Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect())
        .map_err(|e| Error::usage(format!("--tls-trust {}: {e}", path.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::usage(format!("--tls-trust {} holds no certificate", path.display())));
    }
    Ok(roots)
}

/// A client's TLS configuration: a new one has no session to resume. With `early`,
/// a resumed session's first bytes go as early data (TLS 1.3 0-RTT) when the server
/// takes them.
fn tls_config(roots: &rustls::RootCertStore, early: bool) -> Result<Arc<rustls::ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().map_err(|e| Error::usage(format!("TLS: {e}")))?;
    let mut config = builder.with_root_certificates(roots.clone()).with_no_client_auth();
    config.enable_early_data = early;
    Ok(Arc::new(config))
}

/// A stream the login reads and writes: TCP, or TLS over it; counted underneath.
enum Io {
    Plain(Counted<Corked<TcpStream>>),
    Tls(Box<tokio_rustls::client::TlsStream<Counted<Corked<TcpStream>>>>),
    /// While the TCP stream is being wrapped in TLS.
    Wrapping,
}

impl Io {
    async fn write(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            Io::Plain(s) => write_flush(s, text).await,
            Io::Tls(s) => write_flush(s, text).await,
            Io::Wrapping => Err(std::io::Error::other("the stream failed to turn to TLS")),
        }
    }

    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf).await,
            Io::Tls(s) => s.read(buf).await,
            Io::Wrapping => Err(std::io::Error::other("the stream failed to turn to TLS")),
        }
    }

    /// Whether the server took the login's first bytes in its SYN (TCP Fast Open).
    fn carried_in_syn(&self) -> bool {
        let tcp = match self {
            Io::Plain(s) => s.get_ref().get_ref(),
            Io::Tls(s) => s.get_ref().0.get_ref().get_ref(),
            Io::Wrapping => return false,
        };
        tfo::syn_data_taken(tcp).ok().flatten().unwrap_or(false)
    }
}

async fn write_flush<S: AsyncWrite + Unpin>(s: &mut S, text: &str) -> std::io::Result<()> {
    s.write_all(text.as_bytes()).await?;
    s.flush().await
}

/// One login: where, as whom, with which TLS configuration, and whether
/// it opens its connection with TCP Fast Open, its first flight in the SYN.
struct Login<'a> {
    who: &'a Who,
    address: String,
    tls: Arc<rustls::ClientConfig>,
    fast_open: bool,
}

/// The client's half of a login's stream, once connected.
struct Stream {
    io: Io,
    parser: StreamParser,
    counts: Arc<Counts>,
    place: String,
    /// When the login began: its TCP connect.
    started: Instant,
    /// The times the client waited for the server, so far.
    waits: u64,
    /// Whether the client wrote since it last waited.
    spoke: bool,
}

impl<'a> Login<'a> {
    fn new(who: &'a Who, address: &str, tls: Arc<rustls::ClientConfig>, fast_open: bool) -> Login<'a> {
        Login { who, address: address.to_owned(), tls, fast_open }
    }

    async fn connect(&self, direct_tls: bool) -> Result<Stream, Error> {
        let started = Instant::now();
        let failed = |e: std::io::Error| Error::connect(format!("xmpp://{}: {e}", self.address));
        let tcp = if self.fast_open {
            // Everything written before the first read goes in one write:
            // with the server's cookie, in the SYN.
            Corked::new(fast_open(&self.address).await.map_err(failed)?)
        } else {
            Corked::open(TcpStream::connect(&self.address).await.map_err(failed)?)
        };
        tcp.get_ref().set_nodelay(true).map_err(|e| Error::io(e.to_string()))?;
        let (counted, counts) = Counted::new(tcp);
        let mut stream = Stream { io: Io::Plain(counted), parser: StreamParser::new(Limits::default()), counts, place: format!("xmpp://{}", self.address), started, waits: 1, spoke: false };
        if direct_tls {
            stream.start_tls(&self.tls, &self.who.domain).await?;
        }
        Ok(stream)
    }

    /// The message the login ends with: to its own bare JID, which its presence makes
    /// reach it.
    fn presence_and_message(&self) -> String {
        let me = format!("{}@{}", self.who.user, self.who.domain);
        format!("<presence/><message to='{me}' type='chat' id='first'><body>first</body></message>")
    }

    async fn standard(&self) -> Result<Arrival, Error> {
        let mut s = self.connect(false).await?;
        let features = s.open(&self.who.domain).await?;
        if features.find("starttls", ns::TLS).is_none() {
            return Err(Error::refused(format!("{}: no STARTTLS offered (does the server have --tls-cert?)", s.place)));
        }
        s.send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>").await?;
        s.expect("proceed").await?;
        s.start_tls(&self.tls, &self.who.domain).await?;
        s.open(&self.who.domain).await?;
        let (mut scram, first) = Scram::start(&self.who.user, &self.who.password);
        s.send(&format!("<auth xmlns='{}' mechanism='SCRAM-SHA-256'>{}</auth>", ns::SASL, STANDARD.encode(first))).await?;
        let challenge = s.expect("challenge").await?;
        let last = scram.answer(&decode(&challenge)?)?;
        s.send(&format!("<response xmlns='{}'>{}</response>", ns::SASL, STANDARD.encode(last))).await?;
        let success = s.expect("success").await?;
        scram.verify(&decode(&success)?)?;
        s.parser.restart();
        s.open(&self.who.domain).await?;
        s.send("<iq type='set' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await?;
        s.expect("iq").await?;
        s.send(&self.presence_and_message()).await?;
        s.first_message().await
    }

    /// A SASL2 login with SCRAM-SHA-256 and Bind 2, asking for a FAST token if `token`.
    async fn sasl2(&self, token: bool) -> Result<(Arrival, Given), Error> {
        let mut s = self.connect(true).await?;
        let features = s.open(&self.who.domain).await?;
        let Some(authentication) = features.find("authentication", ns::SASL2) else {
            return Err(Error::refused(format!("{}: no SASL2 offered", s.place)));
        };
        let fast = authentication.find("inline", ns::SASL2).and_then(|i| i.find("fast", ns::FAST));
        let zero_rtt = fast.and_then(|f| f.get("tls-0rtt")).is_some_and(|v| v == "true" || v == "1");
        let (mut scram, first) = Scram::start(&self.who.user, &self.who.password);
        let ask = if token { "<request-token xmlns='urn:xmpp:fast:0' mechanism='HT-SHA-256-NONE'/>" } else { "" };
        s.send(&authenticate("SCRAM-SHA-256", first.as_bytes(), ask)).await?;
        let challenge = s.expect("challenge").await?;
        let last = scram.answer(&decode(&challenge)?)?;
        s.send(&format!("<response xmlns='{}'>{}</response>", ns::SASL2, STANDARD.encode(last))).await?;
        let success = s.expect("success").await?;
        let data = success.find("additional-data", ns::SASL2).map(Element::text_content).unwrap_or_default();
        scram.verify(&STANDARD.decode(data.trim()).unwrap_or_default())?;
        let given = success.find("token", ns::FAST).and_then(|t| t.get("token")).map(str::to_owned);
        if token && given.is_none() {
            return Err(Error::refused(format!("{}: no FAST token given (is --xmpp-fast-tokens 0?)", s.place)));
        }
        s.send(&self.presence_and_message()).await?;
        Ok((s.first_message().await?, Given { token: given.unwrap_or_default(), count: 0, zero_rtt }))
    }

    /// A FAST login with `token`, all in one flight with TLS's resumption when the
    /// server takes early data, else after it: when its message came back. The
    /// login is counted in `token`, and a token given now replaces it (the one
    /// used will go), its count starting again.
    async fn fast(&self, token: &mut Given) -> Result<Arrival, Error> {
        token.count += 1;
        let mut s = self.connect(true).await?;
        let proof = [format!("{}\0", self.who.user).as_bytes(), &hmac(&token.token, b"Initiator")].concat();
        let header = Header { to: Some(&self.who.domain), ..Header::default() }.stream();
        let login = authenticate("HT-SHA-256-NONE", &proof, &format!("<fast xmlns='urn:xmpp:fast:0' count='{}'/>", token.count));
        s.send(&format!("{header}{login}{}", self.presence_and_message())).await?;
        s.header().await?;
        s.expect("features").await?;
        let success = match s.next_stanza().await? {
            e if e.name == "success" && e.ns == ns::SASL2 => e,
            e => return Err(Error::refused(format!("{}: the FAST login was answered {}", s.place, crate::scenario::excerpt(&e.to_xml_standalone())))),
        };
        let answer = success.find("additional-data", ns::SASL2).map(Element::text_content).unwrap_or_default();
        if STANDARD.decode(answer.trim()).ok() != Some(hmac(&token.token, b"Responder")) {
            return Err(Error::unexpected(format!("{}: the server's FAST answer does not prove it knew the token", s.place)));
        }
        if let Some(next) = success.find("token", ns::FAST).and_then(|t| t.get("token")) {
            *token = Given { token: next.to_owned(), count: 0, ..*token };
        }
        s.first_message().await
    }
}

/// Connects to `address` with TCP Fast Open, trying each of its addresses
/// in turn as a plain connect does.
async fn fast_open(address: &str) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    for address in tokio::net::lookup_host(address).await? {
        match tfo::connect(address).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A SASL2 `<authenticate/>` with `mechanism`'s initial response, this bench's
/// user-agent (its id alone: what FAST binds a token to), Bind 2 and `more`
/// inline. It asks what the standard login asks, no more: a resource the server
/// names, no stream management, so that the styles are timed doing the same.
fn authenticate(mechanism: &str, initial: &[u8], more: &str) -> String {
    format!(
        "<authenticate xmlns='{}' mechanism='{mechanism}'><initial-response>{}</initial-response><user-agent id='{AGENT}'/>\
         <bind xmlns='urn:xmpp:bind:0'/>{more}</authenticate>",
        ns::SASL2,
        STANDARD.encode(initial)
    )
}

/// HT-SHA-256-NONE's proof or answer: the token's bytes as the key.
fn hmac(token: &str, data: &[u8]) -> Vec<u8> {
    crate::scram::hmac(token.as_bytes(), data)
}

/// The base64 text of a SASL element, decoded.
fn decode(element: &Element) -> Result<Vec<u8>, Error> {
    STANDARD.decode(element.text_content().trim()).map_err(|_| Error::unexpected(format!("<{}/> is not base64", element.name)))
}

impl Stream {
    fn broke(&self, e: &std::io::Error) -> Error {
        Error::closed(format!("{}: {e}", self.place))
    }

    /// Writes `text`: what the client reads next, it waits for.
    async fn send(&mut self, text: &str) -> Result<(), Error> {
        self.io.write(text).await.map_err(|e| self.broke(&e))?;
        self.spoke = true;
        Ok(())
    }

    async fn start_tls(&mut self, config: &Arc<rustls::ClientConfig>, domain: &str) -> Result<(), Error> {
        let Io::Plain(tcp) = std::mem::replace(&mut self.io, Io::Wrapping) else {
            return Err(Error::unexpected("TLS twice"));
        };
        let name = ServerName::try_from(domain.to_owned()).map_err(|e| Error::usage(format!("--xmpp-domain {domain:?}: {e}")))?;
        let tls = TlsConnector::from(config.clone()).early_data(config.enable_early_data).connect(name, tcp).await.map_err(|e| Error::connect(format!("{}: TLS: {e}", self.place)))?;
        // A handshake still going on is one whose early data the next writes carry:
        // the client waits for the server only once it has written them.
        if !tls.get_ref().1.is_handshaking() {
            self.waits += 1;
        }
        self.io = Io::Tls(Box::new(tls));
        self.parser = StreamParser::new(Limits::default());
        Ok(())
    }

    async fn event(&mut self) -> Result<StreamEvent, Error> {
        loop {
            if let Some(event) = self.parser.next_event().map_err(|e| Error::unexpected(format!("{}: {e}", self.place)))? {
                return Ok(event);
            }
            if std::mem::take(&mut self.spoke) {
                self.waits += 1;
            }
            let mut buf = [0u8; 4096];
            let n = self.io.read(&mut buf).await.map_err(|e| self.broke(&e))?;
            if n == 0 {
                return Err(Error::closed(format!("{}: the server closed the connection", self.place)));
            }
            self.parser.feed(&buf[..n]);
        }
    }

    async fn header(&mut self) -> Result<(), Error> {
        match self.event().await? {
            StreamEvent::Open { .. } => Ok(()),
            other => Err(Error::unexpected(format!("{}: expected the stream's header, got {other:?}", self.place))),
        }
    }

    async fn next_stanza(&mut self) -> Result<Element, Error> {
        match self.event().await? {
            StreamEvent::Stanza(e) => Ok(e),
            other => Err(Error::closed(format!("{}: expected an element, got {other:?}", self.place))),
        }
    }

    /// The next element, which must be `name`; a SASL failure says why.
    async fn expect(&mut self, name: &str) -> Result<Element, Error> {
        let e = self.next_stanza().await?;
        if e.name == name {
            return Ok(e);
        }
        Err(Error::refused(format!("{}: expected <{name}/>, got {}", self.place, crate::scenario::excerpt(&e.to_xml_standalone()))))
    }

    /// Opens the client's side of the stream: the server's features.
    async fn open(&mut self, domain: &str) -> Result<Element, Error> {
        let header = Header { to: Some(domain), ..Header::default() }.stream();
        self.send(&header).await?;
        self.header().await?;
        self.expect("features").await
    }

    /// Waits for the login's own message to come back, past everything else; then
    /// ends the stream and reads to the server's close, as a client would, so that
    /// the TLS session ticket sent after the message (with early data, the server
    /// answers before it has the client's Finished) is there for the next login.
    async fn first_message(&mut self) -> Result<Arrival, Error> {
        loop {
            let e = self.next_stanza().await?;
            if e.name == "message" && e.find("body", ns::CLIENT).is_some_and(|b| b.text_content() == "first") {
                break;
            }
        }
        let cost = Cost { round_trips: self.waits, sent: self.counts.sent(), received: self.counts.received() };
        let arrival = Arrival { after: self.started.elapsed(), cost, carried_in_syn: self.io.carried_in_syn() };
        if self.io.write(wire::xmpp::STREAM_END).await.is_ok() {
            let mut buf = [0u8; 4096];
            while matches!(self.io.read(&mut buf).await, Ok(n) if n > 0) {}
        }
        Ok(arrival)
    }
}
