//! In-band registration (XEP-0077), when `--xmpp-registration` allows it:
//! before authentication, the form and making accounts; after, removing
//! one's own account. Like PLAIN, it sends the password as it is, so it is
//! offered only over TLS (or where `--xmpp-plain-unencrypted` allows it).

use wire::xmpp::Element;

use super::super::accounts::Refused;
use super::super::ns;
use super::Session;

impl Session {
    /// A registration iq before authentication. A refused `set` counts as a
    /// failed attempt to log in (`--xmpp-auth-tries`; then the stream ends
    /// with policy-violation), the name is checked before any key is made,
    /// and the keys are made on the blocking pool: thousands of hashes each.
    pub(super) async fn on_register(&mut self, iq: &Element, query: &Element) -> Result<(), super::StreamEnd> {
        let answer = |kind: &str| Element::new("iq", ns::CLIENT).attr("type", kind).attr("id", iq.get("id").unwrap_or_default());
        let error = |kind: &str, condition: &str| {
            answer("error").child(Element::new("error", ns::CLIENT).attr("type", kind).child(Element::new(condition, ns::STANZA_ERRORS)))
        };
        let out = match iq.get("type") {
            _ if !self.plain_allowed() => error("cancel", "not-allowed"),
            Some("get") => {
                let form = Element::new("query", ns::REGISTER)
                    .child(Element::new("instructions", ns::REGISTER).text("Choose a username and password."))
                    .child(Element::new("username", ns::REGISTER))
                    .child(Element::new("password", ns::REGISTER));
                answer("result").child(form)
            }
            Some("set") if query.find("remove", ns::REGISTER).is_some() => error("cancel", "not-allowed"),
            Some("set") => {
                let field = |name: &str| query.find(name, ns::REGISTER).map(Element::text_content);
                match (field("username"), field("password")) {
                    (Some(name), Some(password)) => match self.xmpp.auth.accounts.register(&name, &password).await {
                        Ok(_) => answer("result"),
                        Err(Refused::Taken) => error("cancel", "conflict"),
                        Err(Refused::BadName) => error("modify", "not-acceptable"),
                        Err(Refused::Full) => error("wait", "resource-constraint"),
                        Err(Refused::Closed) => error("cancel", "service-unavailable"),
                        Err(Refused::Unavailable) => {
                            self.xmpp.context.metrics.store_failed("accounts");
                            error("wait", "internal-server-error")
                        }
                    },
                    _ => error("modify", "bad-request"),
                }
            }
            _ => error("modify", "bad-request"),
        };
        self.send(&out);
        if out.get("type") == Some("error") && iq.get("type") == Some("set") {
            self.count_failure();
            self.xmpp.context.metrics.refused("xmpp", "registration");
            if self.failed >= self.xmpp.auth.tries {
                return Err(super::StreamEnd("policy-violation", format!("{} failed attempts to register or authenticate", self.failed)));
            }
        }
        Ok(())
    }

    /// `<remove/>` from an authenticated user (XEP-0077 §3.2): its account
    /// goes with its roster, unless the configuration file holds it, and
    /// the stream ends.
    pub(super) async fn on_unregister(&mut self, iq: &Element, query: &Element) -> Result<(), super::StreamEnd> {
        let name = self.jid.as_deref().and_then(|j| j.local.clone()).unwrap_or_default();
        if iq.get("type") != Some("set") || query.find("remove", ns::REGISTER).is_none() {
            self.refuse(iq, "modify", "bad-request");
            return Ok(());
        }
        match self.xmpp.auth.accounts.unregister(&name).await {
            Ok(true) => {}
            Ok(false) => {
                self.refuse(iq, "cancel", "not-allowed");
                return Ok(());
            }
            Err(_) => {
                self.xmpp.context.metrics.store_failed("accounts");
                self.refuse(iq, "wait", "internal-server-error");
                return Ok(());
            }
        }
        if let Some(user) = self.user() {
            self.xmpp.rosters.forget(&user).await;
            self.xmpp.forget_kept(&user).await;
        }
        self.reply(iq, None);
        Err(super::StreamEnd("not-authorized", "the account was removed".into()))
    }
}
