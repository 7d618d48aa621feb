//! IRCv3 SASL (`AUTHENTICATE`, version 3.1) over the server's accounts,
//! the same as XMPP's (`base::accounts`): SCRAM-SHA-256, SCRAM-SHA-1, and
//! PLAIN where the connection is encrypted (or `--xmpp-plain-unencrypted`
//! allows it). The client's data comes base64 in chunks of 400 bytes; the
//! server's challenges go back the same way.

use base::accounts::{Exchange, Step};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use wire::irc::Line;

use super::Client;
use crate::cap::Cap;
use crate::numeric::*;

/// Longest chunk of an `AUTHENTICATE` line; a chunk this long means more follow.
const CHUNK: usize = 400;
/// Most base64 one exchange's message may take (SCRAM's are far shorter).
const MOST: usize = 8 * 1024;

/// One client's SASL exchange under way (the client holds it boxed, and
/// only while logging in: every idle client has the field).
#[derive(Debug, Default)]
pub struct Sasl {
    exchange: Option<Exchange>,
    /// The chunks of the client's message so far.
    gathered: String,
    /// SCRAM's last server message was sent: the client's `+` ends it as this account.
    succeeding: Option<String>,
}

impl Client {
    /// The mechanisms offered to this client, as `CAP LS 302` and `908` list them.
    pub(crate) fn mechanisms(&self) -> Vec<&'static str> {
        self.irc.accounts.offered(self.plain_allowed(), false)
    }

    fn sasl(&mut self) -> &mut Sasl {
        self.sasl.get_or_insert_with(Box::default)
    }

    pub(super) fn plain_allowed(&self) -> bool {
        self.encrypted || self.irc.settings.plain_unencrypted
    }

    /// `AUTHENTICATE <mechanism>`, `AUTHENTICATE <chunk>` or `AUTHENTICATE *`.
    pub(super) async fn authenticate(&mut self, param: &str) {
        if self.account().is_some() {
            return self.send(self.reply(ERR_SASLALREADY).trailing("You have already authenticated using SASL"));
        }
        if param == "*" {
            self.sasl = None;
            return self.send(self.reply(ERR_SASLABORTED).trailing("SASL authentication aborted"));
        }
        if let Some(account) = self.sasl().succeeding.take() {
            return self.logged_in(account);
        }
        if self.sasl().exchange.is_none() {
            return self.start(param);
        }
        let sasl = self.sasl();
        // A chunk too long is 905 (IRCv3 SASL 3.1); a message that runs
        // past what any exchange needs is a failed exchange.
        if param.len() > CHUNK {
            self.sasl = None;
            return self.send(self.reply(ERR_SASLTOOLONG).trailing("SASL message too long"));
        }
        if sasl.gathered.len() + param.len() > MOST {
            self.sasl = None;
            return self.failed();
        }
        if param != "+" {
            sasl.gathered.push_str(param);
        }
        if param.len() == CHUNK {
            return;
        }
        let gathered = std::mem::take(&mut sasl.gathered);
        let Ok(data) = STANDARD.decode(gathered) else {
            self.sasl = None;
            return self.failed();
        };
        // Refused before any password is looked at, once an address has used up its failures.
        if !self.irc.auth_failures.allows(self.address) {
            self.sasl = None;
            self.irc.context.metrics.refused("irc", "auth_failures");
            return self.failed();
        }
        let Some(mut exchange) = self.sasl().exchange.take() else { return };
        match self.irc.accounts.step(&mut exchange, &data).await {
            Step::Challenge(challenge) => {
                self.sasl().exchange = Some(exchange);
                self.challenge(&challenge);
            }
            Step::Success(Some(account), last) if !last.is_empty() => {
                self.sasl().succeeding = Some(account);
                self.challenge(&last);
            }
            Step::Success(Some(account), _) => self.logged_in(account),
            Step::Success(None, _) | Step::Failure(_) => {
                self.irc.auth_failures.admit(self.address);
                self.sasl = None;
                self.failed();
            }
        }
    }

    fn start(&mut self, mechanism: &str) {
        match self.irc.accounts.start(&mechanism.to_ascii_uppercase(), self.plain_allowed(), false) {
            Some(exchange) => {
                self.sasl().exchange = Some(exchange);
                self.send(Line::new(None, "AUTHENTICATE").arg("+").end());
            }
            None => {
                let offered = self.mechanisms().join(",");
                self.send(self.reply(RPL_SASLMECHS).arg(&offered).trailing("are available SASL mechanisms"));
                self.failed();
            }
        }
    }

    /// The server's next message, in chunks of 400 (an empty one as `+`,
    /// and one after a last chunk of exactly 400).
    fn challenge(&self, data: &[u8]) {
        let text = STANDARD.encode(data);
        let mut lines = String::new();
        for chunk in text.as_bytes().chunks(CHUNK) {
            lines.push_str(&Line::new(None, "AUTHENTICATE").arg(&String::from_utf8_lossy(chunk)).end());
        }
        if text.len().is_multiple_of(CHUNK) {
            lines.push_str(&Line::new(None, "AUTHENTICATE").arg("+").end());
        }
        self.send(lines);
    }

    fn failed(&self) {
        self.send(self.reply(ERR_SASLFAIL).trailing("SASL authentication failed"));
    }

    fn logged_in(&mut self, account: String) {
        let line = self.reply(RPL_LOGGEDIN).arg(&self.source()).arg(&account).trailing(&format!("You are now logged in as {account}"));
        self.send(line + &self.reply(RPL_SASLSUCCESS).trailing("SASL authentication successful"));
        self.now_logged_in(account);
    }

    /// It is logged in to `account` (its `900` sent).
    pub(super) fn now_logged_in(&mut self, account: String) {
        self.public.state.lock().set_account(Some(account.as_str().into()));
        self.sasl = None;
        // account-notify: a client that logs in once registered is told
        // of to those sharing a channel with it (and, with extended-monitor,
        // watching it) that asked.
        if self.registered {
            self.tell_sharing(Cap::AccountNotify, |caps| self.line_from_me(caps, "ACCOUNT").arg(&account).end());
        }
    }
}
