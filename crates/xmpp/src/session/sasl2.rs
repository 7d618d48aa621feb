//! SASL2 (XEP-0388) and what rides inside it: Bind 2 (XEP-0386), stream
//! management's enable and resume (XEP-0198), and FAST tokens (XEP-0484).
//! One exchange authenticates, then resumes a session or binds a new one
//! (with stream management enabled), and hands the client its next token;
//! the stream is not restarted. With a FAST token that is one round trip
//! from the stream's features to stanzas flowing.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use wire::xmpp::{Element, STREAMS_NS};

use super::sasl::sasl_data;
use super::{Flow, Phase, Session, StreamEnd};
use crate::accounts::Step;
use crate::ns;

/// Longest user-agent id taken (XEP-0388 asks for a UUID: 36 bytes).
const AGENT_BYTES: usize = 128;

/// Longest Bind 2 tag kept in a resource, in characters.
const TAG_CHARS: usize = 32;

/// What an `<authenticate/>` asked for beside authentication, kept until
/// the exchange ends.
#[derive(Debug, Default)]
pub(super) struct Inline {
    /// The client's user-agent id, which its FAST tokens are bound to.
    agent: String,
    /// Bind 2: the tag its resource starts with, and whether it enables
    /// stream management (`Some(resume)`).
    bind: Option<(String, Option<bool>)>,
    /// Stream management's `<resume/>`: the session's id and the count of
    /// stanzas the client handled.
    resume: Option<(String, Option<u32>)>,
    /// It asked for a FAST token.
    token: bool,
    /// It asked that the FAST token it logs in with go (`invalidate`).
    invalidate: bool,
    /// The count of its logins with that token (`count`, XEP-0484 §4),
    /// which one sent in TLS early data must carry.
    count: Option<i64>,
    /// It logged in with a FAST token, which expires then.
    used: Option<i64>,
    /// The fingerprint of the account's keys the login was checked against,
    /// read no later than the check: a token it is given is bound to them.
    keys: Option<Vec<u8>>,
}

impl Inline {
    fn of(authenticate: &Element) -> Result<Inline, &'static str> {
        let agent = authenticate.find("user-agent", ns::SASL2).and_then(|a| a.get("id")).unwrap_or_default();
        if agent.len() > AGENT_BYTES {
            return Err("malformed-request");
        }
        let bind = authenticate.find("bind", ns::BIND2).map(|bind| {
            let tag = bind.find("tag", ns::BIND2).map(Element::text_content).unwrap_or_default();
            // A resource is shown to others: the tag keeps only what names software.
            let tag: String = tag.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)).take(TAG_CHARS).collect();
            let sm = bind.find("enable", ns::SM).map(|e| matches!(e.get("resume"), Some("true" | "1")));
            (tag, sm)
        });
        let resume = authenticate.find("resume", ns::SM).map(|r| (r.get("previd").unwrap_or_default().to_owned(), r.get("h").and_then(|h| h.parse().ok())));
        let token = authenticate.find("request-token", ns::FAST).is_some_and(|r| r.get("mechanism") == Some(base::fast::MECHANISM));
        let fast = authenticate.find("fast", ns::FAST);
        let invalidate = fast.is_some_and(|f| matches!(f.get("invalidate"), Some("true" | "1")));
        // A positive integer (xs:positiveInteger); anything else is no count.
        let count = fast.and_then(|f| f.get("count")).and_then(|c| c.parse::<i64>().ok()).filter(|&c| c > 0);
        Ok(Inline { agent: agent.to_owned(), bind, resume, token, invalidate, count, used: None, keys: None })
    }
}

/// A SASL2 success that resumes a session: the `<success/>` so far (its
/// additional data), and what follows `<resumed/>` in it (a token).
#[derive(Debug)]
pub struct Resumed {
    pub(super) success: Element,
    pub(super) then: Vec<Element>,
}

impl Session {
    /// SASL2's stream feature, where it is offered: over TLS, or where the
    /// configuration allows PLAIN in the clear (XEP-0388 asks for TLS).
    pub(super) fn sasl2_feature(&self) -> Option<Element> {
        if !self.plain_allowed() {
            return None;
        }
        let auth = &self.xmpp.auth;
        let mut authentication = Element::new("authentication", ns::SASL2);
        for name in auth.accounts.offered(true, auth.anonymous) {
            authentication = authentication.child(Element::new("mechanism", ns::SASL2).text(name));
        }
        let bind = Element::new("bind", ns::BIND2).child(Element::new("inline", ns::BIND2).child(Element::new("feature", ns::BIND2).attr("var", ns::SM)));
        let mut inline = Element::new("inline", ns::SASL2).child(bind);
        if self.may_resume {
            inline = inline.child(Element::new("sm", ns::SM));
        }
        if auth.fast.is_some() && !auth.accounts.is_empty() {
            let mut fast = Element::new("fast", ns::FAST);
            if self.zero_rtt {
                // A login may come in TLS early data, with its count.
                fast = fast.attr("tls-0rtt", "true");
            }
            inline = inline.child(fast.child(Element::new("mechanism", ns::FAST).text(base::fast::MECHANISM)));
        }
        Some(authentication.child(inline))
    }

    /// One SASL2 element: `<authenticate/>`, `<response/>` or `<abort/>`;
    /// a resumption when the login resumed a session.
    pub(super) async fn on_sasl2(&mut self, element: &Element) -> Result<Option<Flow>, StreamEnd> {
        self.login_allowed()?;
        let step = match element.name.as_str() {
            "authenticate" if self.sasl2.is_some() => return Err(StreamEnd("policy-violation", "one authentication at a time".into())),
            "authenticate" if self.sasl2_feature().is_none() => Step::Failure("encryption-required"),
            "authenticate" => match (Inline::of(element), sasl_data(&element.find("initial-response", ns::SASL2).map(Element::text_content).unwrap_or_default())) {
                (Err(condition), _) => Step::Failure(condition),
                (_, Err(_)) => Step::Failure("incorrect-encoding"),
                (Ok(mut inline), Ok(data)) => {
                    let step = self.first_step(element.get("mechanism").unwrap_or_default(), &data, &mut inline).await;
                    self.sasl2 = Some(Box::new(inline));
                    step
                }
            },
            "response" => match (self.sasl.as_deref_mut(), sasl_data(&element.text_content())) {
                (Some(exchange), Ok(data)) if self.sasl2.is_some() => {
                    // SCRAM's keys, as read for its first message, are what its proof is checked against.
                    let keys = exchange.fingerprint();
                    if let Some(inline) = self.sasl2.as_mut() {
                        inline.keys = keys;
                    }
                    self.xmpp.auth.accounts.step(exchange, &data).await
                }
                (_, Err(_)) => Step::Failure("incorrect-encoding"),
                _ => Step::Failure("malformed-request"),
            },
            "abort" => Step::Failure("aborted"),
            _ => return Err(StreamEnd("not-authorized", "authenticate first".into())),
        };
        match step {
            Step::Challenge(challenge) => {
                self.send(&Element::new("challenge", ns::SASL2).text(&STANDARD.encode(challenge)));
                Ok(None)
            }
            Step::Failure(condition) => {
                self.sasl2 = None;
                let failure = Element::new("failure", ns::SASL2).child(Element::new(condition, ns::SASL));
                self.failed_login(condition, &failure)?;
                Ok(None)
            }
            Step::Success(account, data) => self.sasl2_success(account, data).await,
        }
    }

    /// The first step of the exchange `<authenticate/>` starts with
    /// `mechanism`: a FAST token's, or a password mechanism's.
    async fn first_step(&mut self, mechanism: &str, data: &[u8], inline: &mut Inline) -> Step {
        let auth = &self.xmpp.auth;
        if mechanism == base::fast::MECHANISM
            && let Some(fast) = &auth.fast
        {
            // In early data, which may be a replay, only with a count never
            // taken with this token (XEP-0484 §4).
            let early_count = match (self.early_data, inline.count) {
                (false, _) => None,
                (true, Some(count)) => Some(count),
                (true, None) => return Step::Failure("not-authorized"),
            };
            let checked = match fast.check(data, &inline.agent).await {
                Ok(checked) => checked,
                Err(condition) => return Step::Failure(condition),
            };
            if let Some(count) = early_count {
                match fast.early_count(&checked, count).await {
                    Ok(true) => {}
                    Ok(false) => return Step::Failure("not-authorized"),
                    Err(_) => return Step::Failure("temporary-auth-failure"),
                }
            }
            // The account's keys must be those it was given under: a new
            // password, or the name made again (in the store or the
            // configuration file), ends it.
            return match auth.accounts.fingerprint(&checked.account).await {
                Ok(Some(keys)) if keys == checked.keys => {
                    inline.used = Some(checked.expires);
                    inline.keys = Some(keys);
                    Step::Success(Some(checked.account), checked.answer)
                }
                Ok(Some(_)) => Step::Failure("credentials-expired"),
                Ok(None) => Step::Failure("not-authorized"),
                Err(_) => Step::Failure("temporary-auth-failure"),
            };
        }
        // Early data may be a replay (XEP-0388 §4): no password's login in it.
        if self.early_data {
            return Step::Failure("not-authorized");
        }
        if mechanism == "PLAIN"
            && let Some(name) = data.split(|&b| b == 0).nth(1).and_then(|n| std::str::from_utf8(n).ok()).and_then(wire::xmpp::jid::localpart)
        {
            // Read before PLAIN reads the keys it checks: if they change
            // between, a token given is bound to the old ones, and works never.
            inline.keys = auth.accounts.fingerprint(&name).await.ok().flatten();
        }
        match auth.accounts.start(mechanism, true, auth.anonymous) {
            Some(mut exchange) => {
                let step = auth.accounts.step(&mut exchange, data).await;
                self.sasl = Some(Box::new(exchange));
                step
            }
            None => Step::Failure("invalid-mechanism"),
        }
    }

    /// Authenticated: resumes the session the client asked for, or binds
    /// a new one if it asked, and gives it a token if it asked or is due.
    async fn sasl2_success(&mut self, account: Option<String>, data: Vec<u8>) -> Result<Option<Flow>, StreamEnd> {
        let inline = self.sasl2.take().map(|i| *i).unwrap_or_default();
        self.sasl = None;
        let name = account.clone();
        self.authenticated(account);
        let mut success = Element::new("success", ns::SASL2);
        if !data.is_empty() {
            success = success.child(Element::new("additional-data", ns::SASL2).text(&STANDARD.encode(data)));
        }
        let mut results = Vec::new();
        // A resumption first: if it works, nothing is bound (XEP-0198 §4).
        if let Some((previd, h)) = &inline.resume {
            match (h, self.resumable_session(previd).await) {
                (Some(h), Some(parked)) => {
                    let token = match &name {
                        Some(name) => self.fast_token(name, &inline).await,
                        None => None,
                    };
                    let resumed = Resumed { success, then: token.into_iter().collect() };
                    return Ok(Some(Flow::Resume(Box::new(parked), *h, Some(Box::new(resumed)))));
                }
                _ => results.push(Element::new("failed", ns::SM).child(Element::new("item-not-found", ns::STANZA_ERRORS))),
            }
        }
        let features = match &inline.bind {
            Some((tag, sm)) => {
                results.push(self.bind2(tag, *sm)?);
                // Bound, with stream management if asked: nothing left to negotiate.
                Element::new("features", STREAMS_NS)
            }
            None => {
                self.phase = Phase::Binding;
                self.binding_features()
            }
        };
        // Given once the rest worked: a token kept and never sent would take
        // the place of the one the client holds.
        if let Some(name) = &name {
            results.extend(self.fast_token(name, &inline).await);
        }
        success = success.child(Element::new("authorization-identifier", ns::SASL2).text(&self.full_jid()));
        for result in results {
            success = success.child(result);
        }
        // Not stanzas: stream management, if just enabled, counts what follows.
        self.send_nonza(&success);
        self.send_nonza(&features);
        Ok(None)
    }

    /// Binds a resource named after `tag` (XEP-0386 §3: `tag/random`),
    /// enabling stream management if `sm` says so: the `<bound/>` that
    /// says what was done.
    fn bind2(&mut self, tag: &str, sm: Option<bool>) -> Result<Element, StreamEnd> {
        let Some(bare) = self.jid.as_deref().cloned() else { return Err(StreamEnd("undefined-condition", "no account".into())) };
        // A random part that repeats is one in 2^64: try again, a few times.
        for _ in 0..3 {
            let random = format!("{:016x}", rand::random::<u64>());
            let resource = if tag.is_empty() { random } else { format!("{tag}/{random}") };
            let full = bare.with_resource(&resource);
            if self.xmpp.router.bind(&full, self.outbox.clone(), self.framing, self.anonymous) {
                self.jid = Some(Box::new(full));
                self.phase = Phase::Ready;
                let mut bound = Element::new("bound", ns::BIND2);
                if let Some(resume) = sm {
                    bound = bound.child(self.enable_sm(resume));
                }
                return Ok(bound);
            }
        }
        Err(StreamEnd("undefined-condition", "no resource could be bound".into()))
    }

    /// The `<token/>` for the client, if it asked for one or is due one
    /// after logging in with its last (XEP-0484 §5). A store that fails
    /// gives none: the login itself stands.
    async fn fast_token(&self, account: &str, inline: &Inline) -> Option<Element> {
        let fast = self.xmpp.auth.fast.as_ref()?;
        let keys = inline.keys.as_deref()?;
        let mut wanted = inline.token;
        if let Some(expires) = inline.used {
            match fast.used(account, &inline.agent, expires, inline.invalidate).await {
                Ok(due) => wanted |= due,
                Err(e) => {
                    tracing::warn!("xmpp: FAST tokens of {account:?} not pruned: {e}");
                    self.xmpp.context.metrics.store_failed("fast");
                }
            }
        }
        if !wanted {
            return None;
        }
        match fast.issue(account, &inline.agent, keys).await {
            Ok(issued) => Some(Element::new("token", ns::FAST).attr("expiry", &issued.expiry).attr("token", &issued.token)),
            Err(e) => {
                tracing::warn!("xmpp: no FAST token kept for {account:?}: {e}");
                self.xmpp.context.metrics.store_failed("fast");
                None
            }
        }
    }
}
