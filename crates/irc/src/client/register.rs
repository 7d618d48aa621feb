//! `REGISTER <account> <email> <password>` (IRCv3 draft/account-registration):
//! a client makes an account of the server's, the one XMPP's in-band
//! registration makes (`--xmpp-registration` bounds how many there may
//! be), and is logged in to it. Before the connection completes too, and
//! under any name (`*`: its nickname's); no email is asked for. As with
//! PLAIN, the password comes as it is, so it is offered only over TLS or
//! where `--xmpp-plain-unencrypted` allows it. A refused name counts as a
//! failed login of the client's address (`--xmpp-auth-failures`).

use base::accounts::Refused;
use wire::irc::{Line, name_of};

use super::Client;
use crate::numeric::*;

impl Client {
    /// Whether this client may make an account.
    pub(super) fn registers(&self) -> bool {
        self.irc.accounts.is_open() && self.plain_allowed()
    }

    pub(super) async fn register(&mut self, account: &str, password: &str) {
        let fail = |code: &str, account: &str, why: &str| Line::new(Some(self.server()), "FAIL").arg("REGISTER").arg(code).arg(account).trailing(why);
        if !self.irc.accounts.is_open() {
            return self.send(fail("TEMPORARILY_UNAVAILABLE", account, "Accounts are not made here"));
        }
        if !self.registers() {
            return self.send(fail("TEMPORARILY_UNAVAILABLE", account, "Registration needs TLS"));
        }
        // A server with a password (`--irc-password`) makes accounts only
        // for those who gave it.
        if !self.password_given() {
            return self.send(fail("TEMPORARILY_UNAVAILABLE", account, "Give the server's password first (PASS)"));
        }
        if let Some(current) = self.account() {
            return self.send(fail("ALREADY_AUTHENTICATED", &current, "You are already logged in"));
        }
        let name = match account {
            "*" => match &self.name {
                Some(name) => name.shown.to_string(),
                None => return self.send(fail("NEED_NICK", "*", "Choose a nickname first")),
            },
            given => name_of(given).unwrap_or_else(|_| given.to_owned()),
        };
        if password.is_empty() || password == "*" {
            return self.send(fail("UNACCEPTABLE_PASSWORD", account, "A password is needed"));
        }
        if !self.irc.auth_failures.allows(self.address) {
            self.irc.context.metrics.refused("irc", "auth_failures");
            return self.send(fail("TEMPORARILY_UNAVAILABLE", account, "Too many failed attempts; try again later"));
        }
        let refused = match self.irc.accounts.register(&name, password).await {
            Ok(kept) => {
                let success = Line::new(Some(self.server()), "REGISTER").arg("SUCCESS").arg(&kept).trailing("Account created");
                let logged_in = self.reply(RPL_LOGGEDIN).arg(&self.source()).arg(&kept).trailing(&format!("You are now logged in as {kept}"));
                self.send(success + &logged_in);
                return self.now_logged_in(kept);
            }
            Err(Refused::Taken) => fail("ACCOUNT_EXISTS", account, "That account exists"),
            Err(Refused::BadName) => fail("BAD_ACCOUNT_NAME", account, "Not a name an account may have"),
            Err(Refused::Full | Refused::Closed) => fail("TEMPORARILY_UNAVAILABLE", account, "No more accounts are made now"),
            Err(Refused::Unavailable) => {
                self.irc.context.metrics.store_failed("accounts");
                fail("TEMPORARILY_UNAVAILABLE", account, "Accounts cannot be made now; try again later")
            }
        };
        self.irc.auth_failures.admit(self.address);
        self.irc.context.metrics.refused("irc", "registration");
        self.send(refused);
    }
}
