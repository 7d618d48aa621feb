//! SASL (RFC 6120 §6): the exchange of each mechanism is `accounts`'; this
//! is the session's side of it, with the bounds on failed attempts.

use base64::Engine;
use wire::xmpp::Element;

use super::{Phase, Session, StreamEnd};
use crate::Jid;
use crate::accounts::{Exchange, Step};
use crate::ns;

impl Session {
    /// One SASL element (RFC 6120 §6.4): `<auth/>`, `<response/>` or
    /// `<abort/>`; `Ok(true)` once authenticated, when the stream restarts.
    pub(super) async fn on_sasl(&mut self, stanza: &Element) -> Result<bool, StreamEnd> {
        self.login_allowed()?;
        if stanza.name == "iq"
            && stanza.ns == ns::CLIENT
            && self.xmpp.auth.accounts.is_open()
            && let Some(query) = stanza.find("query", ns::REGISTER)
        {
            self.on_register(stanza, query).await?;
            return Ok(false);
        }
        if stanza.ns != ns::SASL {
            return Err(StreamEnd("not-authorized", "authenticate first".into()));
        }
        let data = sasl_data(&stanza.text_content());
        let step = match (stanza.name.as_str(), data) {
            // Early data may be a replay (XEP-0388 §4): only FAST's counted
            // logins are taken from it.
            ("auth", Ok(_)) if self.early_data => Step::Failure("not-authorized"),
            ("auth", Ok(data)) => {
                let auth = &self.xmpp.auth;
                match auth.accounts.start(stanza.get("mechanism").unwrap_or_default(), self.plain_allowed(), auth.anonymous) {
                    Some(Exchange::Plain) => auth.accounts.step(&mut Exchange::Plain, &data).await,
                    Some(mut exchange) => {
                        let step = auth.accounts.step(&mut exchange, &data).await;
                        self.sasl = Some(Box::new(exchange));
                        step
                    }
                    None => Step::Failure("invalid-mechanism"),
                }
            }
            ("response", Ok(data)) => match self.sasl.as_deref_mut() {
                Some(exchange) => self.xmpp.auth.accounts.step(exchange, &data).await,
                None => Step::Failure("malformed-request"),
            },
            ("abort", _) => Step::Failure("aborted"),
            (_, Err(_)) => Step::Failure("incorrect-encoding"),
            _ => return Err(StreamEnd("not-authorized", "authenticate first".into())),
        };
        match step {
            Step::Challenge(challenge) => {
                let text = base64::engine::general_purpose::STANDARD.encode(challenge);
                self.send(&Element::new("challenge", ns::SASL).text(&text));
                Ok(false)
            }
            Step::Success(account, data) => {
                self.sasl = None;
                self.sasl2 = None;
                self.authenticated(account);
                let mut success = Element::new("success", ns::SASL);
                if !data.is_empty() {
                    success = success.text(&base64::engine::general_purpose::STANDARD.encode(data));
                }
                self.send(&success);
                self.phase = Phase::Restarting;
                Ok(true)
            }
            Step::Failure(condition) => {
                self.failed_login(condition, &Element::new("failure", ns::SASL).child(Element::new(condition, ns::SASL)))?;
                Ok(false)
            }
        }
    }

    /// Authenticated as `account` (`None`: anonymously, as a name made now).
    pub(super) fn authenticated(&mut self, account: Option<String>) {
        self.anonymous = account.is_none();
        let local = account.unwrap_or_else(|| format!("anon-{:012x}", rand::random::<u64>() >> 16));
        self.jid = Some(Box::new(Jid { local: Some(local), domain: self.xmpp.domain.clone(), resource: None }));
    }

    /// A SASL exchange failed with `condition`: the client is sent
    /// `failure`, and the stream ends once it has failed too often.
    pub(super) fn failed_login(&mut self, condition: &str, failure: &Element) -> Result<(), StreamEnd> {
        self.sasl = None;
        if condition == "temporary-auth-failure" {
            self.xmpp.context.metrics.store_failed("accounts");
        }
        self.send(failure);
        if condition != "aborted" {
            self.count_failure();
            self.xmpp.context.metrics.refused("xmpp", "sasl");
        }
        if self.failed >= self.xmpp.auth.tries {
            return Err(StreamEnd("not-authorized", format!("{} failed attempts to authenticate", self.failed)));
        }
        Ok(())
    }

    /// Refused before any password is looked at: a guesser's failures cost
    /// the server nothing more once its address has used them up.
    pub(super) fn login_allowed(&self) -> Result<(), StreamEnd> {
        if self.xmpp.auth.failures.allows(self.address) {
            return Ok(());
        }
        self.xmpp.context.metrics.refused("xmpp", "auth_failures");
        Err(StreamEnd("policy-violation", "too many failed logins from your address; try again later".into()))
    }

    /// Counts a failed login, on this stream and against its address.
    pub(super) fn count_failure(&mut self) {
        self.failed += 1;
        self.xmpp.auth.failures.admit(self.address);
    }

    /// Whether PLAIN may be offered: over TLS, or where allowed without.
    pub(super) fn plain_allowed(&self) -> bool {
        self.encrypted || self.xmpp.auth.plain_unencrypted
    }
}

/// A SASL element's data (RFC 6120 §6.4.2, XEP-0388 §2.2): base64, where
/// "=" is empty data and no text is none.
pub(super) fn sasl_data(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    match text.trim() {
        "" | "=" => Ok(Vec::new()),
        text => base64::engine::general_purpose::STANDARD.decode(text),
    }
}
