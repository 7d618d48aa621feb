//! IRCv3 capability negotiation (`CAP`, version 302): what this server
//! offers, and what one client has asked for.

/// One capability this server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Cap {
    /// `@time=` on every line that reports something that happened.
    ServerTime = 1,
    /// Tags on lines, and `msgid` on messages.
    MessageTags = 2,
    /// A client's own messages come back to it as others see them.
    EchoMessage = 4,
    /// `AWAY` lines when members of a shared channel go away or come back.
    AwayNotify = 8,
    /// Related lines grouped (`BATCH`): a room's history on join.
    Batch = 16,
    /// Every prefix of a member in `NAMES` and `WHO`, not only the highest.
    MultiPrefix = 32,
    /// `NAMES` lists `nick!user@host`.
    UserhostInNames = 64,
    /// `AUTHENTICATE` (logging in works without asking for it too).
    Sasl = 128,
    /// `@account=` on what a member logged in to an account does.
    AccountTag = 256,
    /// Messages of several lines, or longer than a line, as one
    /// `draft/multiline` batch, both ways (with `batch`: see `multiline`).
    Multiline = 512,
    /// A command tagged `label=…` is answered under that label (with `batch`).
    LabeledResponse = 1024,
    /// `SETNAME` lines when a member of a shared channel changes its real name.
    Setname = 2048,
    /// What away-notify and setname tell of members of shared channels,
    /// of the nicknames it watches (`MONITOR`) too.
    ExtendedMonitor = 4096,
    /// `CHATHISTORY`: a channel's messages read back from its archive.
    Chathistory = 8192,
    /// A `JOIN` names the member's account (or `*`) and real name.
    ExtendedJoin = 16384,
    /// `ACCOUNT` lines when a member of a shared channel logs in.
    AccountNotify = 32768,
    /// `CAP NEW` and `DEL` when the capabilities offered change: they never
    /// do here, so asking for it changes nothing, as the specification
    /// allows.
    OfferedChanges = 65536,
    /// `REGISTER`: a client makes an account (`--xmpp-registration`).
    AccountRegistration = 131_072,
}

/// Every capability offered, as `CAP LS` lists them.
pub const OFFERED: [(&str, Cap); 18] = [
    ("account-notify", Cap::AccountNotify),
    ("account-tag", Cap::AccountTag),
    ("away-notify", Cap::AwayNotify),
    ("batch", Cap::Batch),
    ("cap-notify", Cap::OfferedChanges),
    ("draft/account-registration", Cap::AccountRegistration),
    ("draft/chathistory", Cap::Chathistory),
    ("draft/multiline", Cap::Multiline),
    ("echo-message", Cap::EchoMessage),
    ("extended-join", Cap::ExtendedJoin),
    ("extended-monitor", Cap::ExtendedMonitor),
    ("labeled-response", Cap::LabeledResponse),
    ("message-tags", Cap::MessageTags),
    ("multi-prefix", Cap::MultiPrefix),
    ("sasl", Cap::Sasl),
    ("server-time", Cap::ServerTime),
    ("setname", Cap::Setname),
    ("userhost-in-names", Cap::UserhostInNames),
];

/// The capabilities a client has enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps(pub u32);

impl Caps {
    pub fn has(self, cap: Cap) -> bool {
        self.0 & cap as u32 != 0
    }

    /// The capabilities after a `CAP REQ` of `request` (names, each with
    /// `-` to disable it), or `None` if it names one not offered: the
    /// request is then refused whole.
    pub fn after(self, request: &str) -> Option<Caps> {
        let mut caps = self.0;
        for name in request.split_ascii_whitespace() {
            let (off, name) = match name.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, name),
            };
            let (_, cap) = OFFERED.iter().find(|(n, _)| *n == name)?;
            if off {
                caps &= !(*cap as u32);
            } else {
                caps |= *cap as u32;
            }
        }
        Some(Caps(caps))
    }

    /// The enabled capabilities' names, as `CAP LIST` gives them.
    pub fn names(self) -> String {
        OFFERED.iter().filter(|(_, cap)| self.has(*cap)).map(|(name, _)| *name).collect::<Vec<_>>().join(" ")
    }
}

/// Which of the capabilities that need something of the server it offers
/// one client: `sasl` where there are accounts to log in to,
/// `draft/account-registration` where the client may make one (accounts
/// can be made, and a password sent as it is would be safe: TLS, or
/// allowed in the clear), `draft/chathistory` where rooms are archived.
#[derive(Debug, Clone, Copy)]
pub struct Offer {
    pub sasl: bool,
    pub registration: bool,
    pub history: bool,
}

impl Offer {
    /// Whether `cap` is offered: a `CAP REQ` of one that is not is refused.
    pub fn offers(self, cap: Cap) -> bool {
        match cap {
            Cap::Sasl => self.sasl,
            Cap::AccountRegistration => self.registration,
            Cap::Chathistory => self.history,
            _ => true,
        }
    }

    /// Whether a `CAP REQ` of `request` names a capability not offered.
    pub fn refuses(self, request: &str) -> bool {
        request.split_ascii_whitespace().filter_map(|name| OFFERED.iter().find(|(n, _)| *n == name)).any(|(_, cap)| !self.offers(*cap))
    }
}

/// What `CAP LS` says of what `offer` offers; with `CAP LS 302`, `sasl`
/// lists `mechanisms` (none when there are no accounts: then it is not
/// offered), `draft/multiline` its limits and
/// `draft/account-registration` what it allows.
pub fn offered(offer: Offer, mechanisms: Option<&str>) -> String {
    let names = OFFERED.iter().filter_map(|(name, cap)| match (cap, mechanisms) {
        (Cap::AccountRegistration | Cap::Chathistory, _) if !offer.offers(*cap) => None,
        // Before the connection completes too, with any account name;
        // no email is asked for.
        (Cap::AccountRegistration, Some(_)) => Some(format!("{name}=before-connect,custom-account-name")),
        (Cap::Sasl, Some("")) => None,
        (Cap::Sasl, Some(mechanisms)) => Some(format!("sasl={mechanisms}")),
        (Cap::Multiline, Some(_)) => Some(format!("{name}={}", crate::multiline::LIMITS)),
        _ => Some((*name).to_owned()),
    });
    names.collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_taken_whole_or_not_at_all() {
        let caps = Caps::default().after("server-time echo-message").unwrap();
        assert!(caps.has(Cap::ServerTime) && caps.has(Cap::EchoMessage) && !caps.has(Cap::Batch));
        assert_eq!(caps.names(), "echo-message server-time");
        assert_eq!(caps.after("batch nonsense"), None);
        assert_eq!(caps.after("-echo-message").unwrap().names(), "server-time");
    }
}
