//! Private messages kept in their parties' archives, where XMPP keeps its
//! users' chats (XEP-0313), and read back by `CHATHISTORY` of a nickname.
//!
//! A `PRIVMSG` from one client to another is kept in the archive of each
//! party logged in to an account, as that account's archiving preferences
//! say (XEP-0441, `base::archive::Keeps`): both entries under one id, the
//! `msgid` both clients were given, and at the time their `time` tag
//! showed. A party is named in the archives by its account's bare JID, or,
//! not logged in, by `<domain>/irc:<nickname>` (its nickname's key), which
//! no account can take: an account later made under that nickname reads
//! none of it.
//!
//! An entry is an XMPP `chat` message, so that the account's XMPP clients
//! page through it too, with an `<irc/>` element (namespace [`NS`]) that
//! keeps both nicknames as IRC showed them. An account's chats over XMPP
//! read back to IRC the same way, each party by its JID's local part as a
//! nickname (`wire::irc::nick_of`). A body is XML's: a control character
//! XML forbids (IRC's formatting codes) is kept as U+FFFD.

use std::sync::Arc;

use base::archive::{Archive, Keeps};
use store::Entry;
use wire::xmpp::{Element, Jid, ns};

/// Entries of an account's archive `CHATHISTORY TARGETS` reads at most,
/// newest first, for the nicknames it talked with: a partner only older
/// messages name is not listed.
pub const TARGETS_READ: usize = 1000;

/// The namespace of the element that keeps a message's nicknames; XMPP
/// takes it out of what clients and other servers send.
pub const NS: &str = ns::IRC;

/// Where private messages are kept: the archives' writer, the XMPP domain
/// an account's JID is of, and whose archive keeps what.
#[derive(Debug, Clone)]
pub struct PrivateArchive {
    pub archive: Arc<Archive>,
    pub domain: String,
    pub keeps: Arc<dyn Keeps>,
}

/// One party of a private message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    /// Its name in the archives.
    pub jid: String,
    /// Logged in to an account: it has an archive.
    pub account: bool,
    /// Its nickname as IRC showed it.
    pub nick: String,
}

/// A kept private message as IRC shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub from: String,
    pub to: String,
    /// The sender's account, if it had one.
    pub account: Option<String>,
    pub text: String,
    /// Whether the archive's owner sent it.
    pub mine: bool,
}

impl PrivateArchive {
    /// The party shown as `nick` (whose key is `key`), logged in to `account` if any.
    pub fn party(&self, account: Option<&str>, key: &str, nick: &str) -> Party {
        match account {
            Some(account) => Party { jid: self.archive_of(account), account: true, nick: nick.to_owned() },
            None => Party { jid: format!("{}/irc:{key}", self.domain), account: false, nick: nick.to_owned() },
        }
    }

    /// The archive of an account.
    pub fn archive_of(&self, account: &str) -> String {
        format!("{account}@{}", self.domain)
    }

    /// Which of the two parties' archives keep a message from `from` to
    /// `to`: the sender's, the recipient's (one archive, once, for a
    /// message to oneself).
    pub async fn keepers(&self, from: &Party, to: &Party) -> (bool, bool) {
        let mine = from.account && self.keeps.keeps(&from.jid, &to.jid).await;
        let theirs = to.account && to.jid != from.jid && self.keeps.keeps(&to.jid, &from.jid).await;
        (mine, theirs)
    }
}

/// The entries of `text` from `from` to `to`, taken at `at` under `id`,
/// in the archives `keepers` names.
pub fn entries(from: &Party, to: &Party, text: &str, at: i64, id: &str, keepers: (bool, bool)) -> Vec<Entry> {
    let message = Element::new("message", ns::CLIENT)
        .attr("type", "chat")
        .attr("from", &from.jid)
        .attr("to", &to.jid)
        .child(Element::new("body", ns::CLIENT).text(text))
        .child(Element::new("irc", NS).attr("from", &from.nick).attr("to", &to.nick))
        .to_xml_standalone();
    let entry = |archive: &Party, with: &Party| Entry { archive: archive.jid.clone(), id: id.to_owned(), at, with: with.jid.clone(), message: message.clone() };
    let mut entries = Vec::with_capacity(2);
    if keepers.0 {
        entries.push(entry(from, to));
    }
    if keepers.1 {
        entries.push(entry(to, from));
    }
    entries
}

/// An entry of an account's archive as IRC shows it: one of these
/// entries, or a chat an XMPP client sent or got; `None` for one with no
/// body.
pub fn read(entry: &Entry) -> Option<Kept> {
    let message = wire::xmpp::standalone(&entry.message)?;
    let text = message.find("body", ns::CLIENT)?.text_content();
    let jid = |attr: &str| message.get(attr).and_then(Jid::parse);
    let (from, to) = (jid("from"), jid("to"));
    let local = |jid: &Option<Jid>| jid.as_ref().and_then(|j| j.local.clone());
    let nick = |jid: &Option<Jid>| local(jid).map(|l| wire::irc::nick_of(&l).into_owned()).unwrap_or_else(|| "*".to_owned());
    // Only nicknames IRC could have shown: what becomes a line's source
    // and target must be one word.
    let kept = |attr: &str| message.find("irc", NS).and_then(|irc| irc.get(attr)).filter(|n| wire::irc::name_of(n).is_ok()).map(str::to_owned);
    let (from_nick, to_nick) = (kept("from").unwrap_or_else(|| nick(&from)), kept("to").unwrap_or_else(|| nick(&to)));
    let mine = from.as_ref().is_some_and(|f| f.bare().to_string() == entry.archive);
    Some(Kept { from: from_nick, to: to_nick, account: local(&from), text, mine })
}

impl Kept {
    /// The other party's nickname, as the archive's owner talked with it.
    pub fn partner(&self) -> &str {
        if self.mine { &self.to } else { &self.from }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Always;

    impl Keeps for Always {
        fn keeps<'a>(&'a self, _: &'a str, _: &'a str) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
            Box::pin(async { true })
        }
    }

    #[test]
    fn an_entry_is_an_xmpp_chat_that_keeps_both_nicknames_and_reads_back() {
        let from = Party { jid: "al@example.org".into(), account: true, nick: "Al".into() };
        let to = Party { jid: "example.org/irc:bo".into(), account: false, nick: "Bo".into() };
        let entries = entries(&from, &to, "hi <b>\u{2}", 7, "01", (true, false));
        assert_eq!(entries.len(), 1);
        let entry = &entries[0];
        assert_eq!((entry.archive.as_str(), entry.with.as_str(), entry.id.as_str(), entry.at), ("al@example.org", "example.org/irc:bo", "01", 7));
        assert_eq!(
            entry.message,
            "<message xmlns=\"jabber:client\" type=\"chat\" from=\"al@example.org\" to=\"example.org/irc:bo\"><body>hi &lt;b&gt;\u{fffd}</body><irc xmlns=\"urn:switchboard:irc\" from=\"Al\" to=\"Bo\"/></message>"
        );
        let kept = read(entry).unwrap();
        assert_eq!(kept, Kept { from: "Al".into(), to: "Bo".into(), account: Some("al".into()), text: "hi <b>\u{fffd}".into(), mine: true });
        assert_eq!(kept.partner(), "Bo");
    }

    #[test]
    fn an_xmpp_chat_reads_back_with_local_parts_as_nicknames() {
        let entry = Entry {
            archive: "bo@example.org".into(),
            id: "02".into(),
            at: 1,
            with: "al@example.org".into(),
            message: "<message xmlns=\"jabber:client\" type=\"chat\" from=\"al@example.org/phone\" to=\"bo@example.org\"><body>yo</body></message>".into(),
        };
        let kept = read(&entry).unwrap();
        assert_eq!((kept.from.as_str(), kept.to.as_str(), kept.mine, kept.partner()), ("al", "bo", false, "al"));
        let forged = Entry { message: entry.message.replace("</message>", "<irc xmlns=\"urn:switchboard:irc\" from=\"a b\" to=\"bo\"/></message>"), ..entry.clone() };
        let kept = read(&forged).unwrap();
        assert_eq!((kept.from.as_str(), kept.to.as_str()), ("al", "bo"), "a nickname IRC could not show is not taken");
        let bodiless = Entry { message: "<message xmlns=\"jabber:client\" from=\"al@example.org\"/>".into(), ..entry };
        assert_eq!(read(&bodiless), None);
    }

    #[tokio::test]
    async fn only_parties_with_accounts_keep_it_and_a_message_to_oneself_once() {
        let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::default());
        let second = std::time::Duration::from_secs(1);
        let bounds = base::Bounds { queue_limit: 16, max_message_size: 1024, header_timeout: second, idle_timeout: second, ping_interval: second };
        let context = Arc::new(base::Context::new(bounds));
        let private = PrivateArchive {
            archive: Arc::new(Archive::start(store, 16, base::archive::Bounds::default(), context)),
            domain: "example.org".into(),
            keeps: Arc::new(Always),
        };
        let al = private.party(Some("al"), "al", "Al");
        let bo = private.party(None, "bo", "Bo");
        assert_eq!(bo.jid, "example.org/irc:bo");
        assert_eq!(private.keepers(&al, &bo).await, (true, false));
        assert_eq!(private.keepers(&bo, &al).await, (false, true));
        assert_eq!(private.keepers(&al, &al).await, (true, false));
    }
}
