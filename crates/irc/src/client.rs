//! One IRC client's protocol: registration (`CAP`, `PASS`, `NICK`,
//! `USER`), then its commands. What it answers is queued on its own
//! outbox, as lines; what it says in a room goes to the room through the
//! broker, as a room event every protocol renders for its own clients.

mod register;
mod sasl;

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use hub::{Greeting, JoinError, Member, MemberId, Outbox, Payload, RenameError, Roster, RoomEvent, Speaks};
use wire::irc::{Line, MAX_LINE, Message, channel_of, name_of, nick_of, room_of};
use wire::nickname::Nickname;

use crate::Irc;
use crate::cap::{self, Cap, Caps};
use crate::{chathistory, labeled, multiline, private, whox};
use crate::private::{Party, PrivateArchive};
use crate::nicks::{self, Names, Public, Shown};
use crate::numeric::*;
use crate::render::{self, By, Tags};

/// Longest nickname a client may take, in bytes.
pub const NICKLEN: usize = 64;
/// Longest topic, away message or reason kept.
const TEXTLEN: usize = 390;
/// Quits and changes of name remembered to tell each once.
const TOLD_KEPT: usize = 64;
/// Longest user name kept of `USER`'s.
const USERLEN: usize = 10;
/// Most members `NAMES` and `WHO` list.
const MAX_LISTED: usize = 1000;
/// The channel modes a client may set, and which take a parameter.
const CHANNEL_MODES: &str = "CIbeiklmnostv";

/// Most nicknames one `KICK` takes (`TARGMAX`).
const MAX_KICKS: usize = 4;
/// Most targets of one `PRIVMSG`, `NOTICE` or `TAGMSG` (`TARGMAX`).
const MAX_TARGETS: usize = 4;

/// What the connection does after a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Go,
    /// The client quit, or must go: the reason its `ERROR` line gives.
    Close(String),
}

/// A quit or a change of name (old, new) a client was told of.
#[derive(Debug, PartialEq, Eq)]
enum Told {
    Quit(Arc<str>),
    Rename(Arc<str>, Arc<str>),
}

/// A room event of its own that the client is not to get back: it was
/// told otherwise (its `JOIN` comes before the room's names).
#[derive(Debug, PartialEq, Eq)]
enum Echo {
    Join(Arc<str>),
    Leave(Arc<str>),
}

/// See the module docs.
#[derive(Debug)]
pub struct Client {
    pub(crate) irc: Arc<Irc>,
    pub public: Arc<Public>,
    /// The name its nickname stands for, once it has one.
    name: Option<Nickname>,
    /// It gave `USER` (what it gave is in `public`).
    user_given: bool,
    caps: Caps,
    /// Inside `CAP LS` … `CAP END`: registration waits for its end.
    negotiating: bool,
    pub registered: bool,
    /// Rooms it is in: a boxed slice, 8 bytes less than a `Vec` in every
    /// client's task; a join or a part makes it again.
    joined: Box<[Arc<str>]>,
    /// Quits and changes of name it was told of lately, so that the same
    /// one in another shared channel is not told again. Boxed, made on the
    /// first: 16 bytes in every client's task where a `Vec` took 24.
    #[allow(clippy::box_collection)] // For its size in the task (above), not for the heap.
    told: Option<Box<Vec<Told>>>,
    /// Batches sent so far, for their ids.
    batches: u32,
    /// What it began and has not ended. Boxed, made when needed: inline,
    /// it would be in every idle client's task.
    under_way: Option<Box<UnderWay>>,
    /// Where it connects from (failed logins are counted per address).
    address: IpAddr,
    /// Over TLS: SASL PLAIN is offered.
    encrypted: bool,
    /// A SASL exchange under way.
    sasl: Option<Box<sasl::Sasl>>,
    /// `CAP LS 302` or later: capabilities with values.
    cap_302: bool,
    /// Whether `PASS` gave the server's password (`--irc-password`).
    password: Password,
}

/// What a client began and has not ended.
#[derive(Debug, Default)]
struct UnderWay {
    /// A multiline message it is sending, and the label its `BATCH` had.
    batch: Option<(multiline::Batch, Option<String>)>,
    /// The labeled command being handled.
    labeling: Option<Labeling>,
    /// Its channel messages that await their echo to carry a label: the
    /// room, the command, the label; oldest first, at most [`ECHOES_LABELED`].
    echoes: Vec<(Arc<str>, &'static str, String)>,
    /// Room events of its own it is not to get back (see [`Echo`]).
    awaited: Vec<(Arc<str>, Echo)>,
}

/// The most channel messages awaiting their labeled echo: an echo that
/// never comes (a room gone meanwhile) is forgotten once this many follow.
const ECHOES_LABELED: usize = 16;

/// A labeled command being handled (IRCv3 labeled-response): its label,
/// and the lines sent to its client meanwhile (`Client::send` holds them
/// here), which are its answer.
#[derive(Debug)]
struct Labeling {
    label: String,
    lines: parking_lot::Mutex<String>,
    /// Answered where the room answers it: the echo of its message
    /// carries the label.
    answered: bool,
    /// The `labeled-response` batch its answer is in, opened at once
    /// (a `JOIN`: part of the answer, the greeting, comes from the room).
    batch: Option<String>,
}

/// Where a client stands with the server's password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Password {
    NotGiven,
    Given,
    /// It registered without it: it goes.
    Refused,
}

impl Client {
    /// A client from `address`, over TLS if `encrypted`.
    pub fn new(irc: Arc<Irc>, outbox: Arc<Outbox>, address: IpAddr, encrypted: bool) -> Client {
        let public = Arc::new(Public::new(hub::next_member_id(), outbox));
        Client {
            irc,
            public,
            name: None,
            user_given: false,
            caps: Caps::default(),
            negotiating: false,
            registered: false,
            joined: Box::default(),
            told: None,
            batches: 0,
            under_way: None,
            address,
            encrypted,
            sasl: None,
            cap_302: false,
            password: Password::NotGiven,
        }
    }

    fn id(&self) -> MemberId {
        self.public.id
    }

    /// Where it connects from.
    pub fn address(&self) -> IpAddr {
        self.address
    }

    fn server(&self) -> &str {
        self.irc.server_name()
    }

    /// Its nickname, `*` before it has one.
    pub fn nick(&self) -> String {
        self.name.as_ref().map_or_else(|| "*".to_owned(), |n| nick_of(&n.shown).into_owned())
    }

    /// A line of `command` from this client to one with `caps`: tagged
    /// with the time and this client's account as that one asked
    /// (`server-time`, `account-tag`).
    fn line_from_me(&self, caps: Caps, command: &str) -> Line {
        self.line_from(&self.source(), caps, command)
    }

    /// The same, from `source`, one of the forms this client is shown in.
    fn line_from(&self, source: &str, caps: Caps, command: &str) -> Line {
        let (account, bot) = self.shown_as();
        let tags = Tags::of(caps).text(SystemTime::now(), None, By { account: account.as_deref(), bot }, None, None);
        Line::tagged(&tags, Some(source), command)
    }

    /// Its own lines' source: `nick!~user@server`. (A room event shows
    /// every member as `nick!nick@server`: it names a member, not a
    /// connection.)
    fn source(&self) -> String {
        let names = self.public.state.lock().names.clone();
        let user = names.user();
        if user.is_empty() {
            return render::source(&self.nick(), self.server());
        }
        format!("{}!{user}@{}", self.nick(), self.server())
    }

    /// Whether it gave the server's password, if the server has one.
    fn password_given(&self) -> bool {
        self.irc.settings.password.is_none() || self.password == Password::Given
    }

    /// The account it logged in to, if it did.
    fn account(&self) -> Option<Arc<str>> {
        self.public.state.lock().account().cloned()
    }

    /// The account it is logged in to and whether it is a bot: what the
    /// tags of its lines show of it (`render::By`).
    fn shown_as(&self) -> (Option<Arc<str>>, bool) {
        let state = self.public.state.lock();
        (state.account().cloned(), state.bot)
    }

    /// Sends `line` to the client; while a labeled command is handled,
    /// holds it as part of its answer.
    fn send(&self, line: String) {
        if let Some(labeling) = self.under_way.as_ref().and_then(|u| u.labeling.as_ref()) {
            labeling.lines.lock().push_str(&line);
            return;
        }
        self.public.send(line);
    }

    fn under_way(&mut self) -> &mut UnderWay {
        self.under_way.get_or_insert_with(Box::default)
    }

    /// Lets go of what is under way if nothing is.
    fn settle(&mut self) {
        if self.under_way.as_ref().is_some_and(|u| u.batch.is_none() && u.labeling.is_none() && u.echoes.is_empty() && u.awaited.is_empty()) {
            self.under_way = None;
        }
    }

    /// The label of the labeled command being handled, if it is not
    /// answered yet.
    fn unanswered_label(&self) -> Option<&str> {
        self.under_way.as_ref()?.labeling.as_ref().filter(|l| !l.answered).map(|l| l.label.as_str())
    }

    /// Starts handling a command labeled `label`.
    fn begin_label(&mut self, label: String) {
        self.under_way().labeling = Some(Labeling { label, lines: parking_lot::Mutex::default(), answered: false, batch: None });
    }

    /// Ends handling a labeled command: what was sent meanwhile goes as its
    /// answer (`labeled::answer`), or as it was if the room answered it.
    fn end_label(&mut self) {
        let Some(labeling) = self.under_way.as_mut().and_then(|u| u.labeling.take()) else { return };
        let lines = labeling.lines.into_inner();
        if let Some(reference) = &labeling.batch {
            let server = self.server();
            self.send(labeled::inside(&lines, reference) + &labeled::end(server, reference));
        } else if !labeling.answered {
            let server = self.irc.server_name().to_owned();
            let answer = labeled::answer(&lines, &labeling.label, &server, || self.next_batch("l"));
            self.send(answer);
        } else if !lines.is_empty() {
            self.send(lines);
        }
        self.settle();
    }

    /// A new batch's reference: `kind` and a count of the batches this
    /// client was sent.
    fn next_batch(&mut self, kind: &str) -> String {
        self.batches = self.batches.wrapping_add(1);
        format!("{kind}{}", self.batches)
    }

    /// Opens at once the batch the answer to the labeled command being
    /// handled goes in, if it is not answered yet: its reference.
    fn open_labeled_batch(&mut self) -> Option<String> {
        let label = self.unanswered_label()?.to_owned();
        let reference = self.next_batch("l");
        self.public.send(labeled::start(&label, self.server(), &reference));
        let labeling = self.under_way().labeling.as_mut()?;
        labeling.batch = Some(reference.clone());
        labeling.answered = true;
        Some(reference)
    }

    /// Takes note that the labeled command being handled is answered
    /// where the room answers it.
    fn answered(&mut self) {
        if let Some(labeling) = self.under_way.as_mut().and_then(|u| u.labeling.as_mut()) {
            labeling.answered = true;
        }
    }

    /// A numeric reply, addressed to the client.
    fn reply(&self, numeric: &str) -> Line {
        Line::new(Some(self.server()), numeric).arg(&self.nick())
    }

    /// A line it sent that is too long (417).
    pub fn too_long(&self) {
        self.send(self.reply(ERR_INPUTTOOLONG).trailing("Input line was too long"));
    }

    /// Handles one line; one with a label (IRCv3 labeled-response, to a
    /// client that asked for it and for `batch`) is answered under it.
    pub async fn on_line(&mut self, message: &Message<'_>) -> Flow {
        let labels = self.caps.has(Cap::LabeledResponse) && self.caps.has(Cap::Batch);
        let label = message.tag("label").filter(|l| labels && !l.is_empty() && l.len() <= labeled::MAX_LABEL);
        let Some(label) = label else { return self.handle(message).await };
        self.begin_label(label.into_owned());
        let flow = self.handle(message).await;
        self.end_label();
        flow
    }

    async fn handle(&mut self, message: &Message<'_>) -> Flow {
        let command = message.command.to_ascii_uppercase();
        let params = &message.params;
        let needs = |count: usize| params.len() < count;
        if needs(match command.as_str() {
            "NICK" | "PING" | "JOIN" | "PART" | "TOPIC" | "WHOIS" | "MODE" | "ISON" | "USERHOST" | "CAP" | "AUTHENTICATE" | "PASS" => 1,
            "KICK" | "OPER" => 2,
            "KILL" | "WALLOPS" | "MONITOR" | "SETNAME" => 1,
            "PRIVMSG" | "NOTICE" => 0,
            "USER" => 4,
            "REGISTER" => 3,
            _ => 0,
        }) {
            return match command.as_str() {
                "NICK" | "WHOIS" => self.no_nick(),
                "PING" => self.send_flow(self.reply(ERR_NOORIGIN).trailing("No origin specified")),
                _ => self.send_flow(self.reply(ERR_NEEDMOREPARAMS).arg(&command).trailing("Not enough parameters")),
            };
        }
        let param = |i: usize| params.get(i).copied().unwrap_or("");
        match command.as_str() {
            "CAP" => self.cap(param(0), param(1)),
            "PASS" if self.registered => self.send(self.reply(ERR_ALREADYREGISTERED).trailing("You may not reregister")),
            "PASS" => {
                let right = self.irc.settings.password.as_deref() == Some(param(0));
                self.password = if right { Password::Given } else { Password::NotGiven };
            }
            "AUTHENTICATE" => self.authenticate(param(0)).await,
            "REGISTER" => self.register(param(0), param(2)).await,
            // `NICK :` gives an empty one: none.
            "NICK" if param(0).is_empty() => return self.no_nick(),
            "NICK" => self.set_nick(param(0)).await,
            "USER" if self.registered || self.user_given => {
                self.send(self.reply(ERR_ALREADYREGISTERED).trailing("You may not reregister"));
            }
            "USER" => {
                let user: String = param(0).chars().filter(|c| !matches!(c, '@' | '!')).take(USERLEN).collect();
                self.user_given = true;
                let mut state = self.public.state.lock();
                state.names = Names::new(&format!("~{user}"), truncated(param(3)));
                drop(state);
                self.try_register();
            }
            "PING" => self.send(Line::new(Some(self.server()), "PONG").arg(self.server()).trailing(param(0))),
            "PONG" => {}
            "QUIT" => {
                let reason = params.first().map_or_else(|| "Client Quit".to_owned(), |r| format!("Quit: {}", truncated(r)));
                return Flow::Close(reason);
            }
            _ if !self.registered => self.send(self.reply(ERR_NOTREGISTERED).trailing("You have not registered")),
            _ if message.tag("batch").is_some() => self.in_batch(&command, message).await,
            "BATCH" => self.batch(message).await,
            "JOIN" => self.join_all(param(0), param(1)).await,
            "PART" => self.part_all(param(0), params.get(1).copied().filter(|r| !r.is_empty())),
            "PRIVMSG" | "NOTICE" | "TAGMSG" => self.message(&command, message).await,
            "TOPIC" => self.topic(param(0), params.get(1).copied()),
            "NAMES" => self.names(params.first().copied()),
            "WHO" => self.who(param(0), params.get(1).copied()),
            "WHOIS" => self.whois(params.last().copied().unwrap_or("")),
            "LIST" => self.list(params.first().copied()),
            "MODE" => self.mode(&params[..]),
            "AWAY" => self.away(params.first().copied().filter(|t| !t.is_empty())),
            "ISON" => self.ison(&params[..]),
            "USERHOST" => self.userhost(&params[..]),
            "INVITE" if params.is_empty() => self.invitations(),
            "INVITE" if params.len() < 2 => self.send(self.reply(ERR_NEEDMOREPARAMS).arg("INVITE").trailing("Not enough parameters")),
            "INVITE" => self.invite(param(0), param(1)),
            "OPER" => self.oper(param(0), param(1)),
            "KILL" => self.kill(param(0), params.get(1).copied().unwrap_or("")),
            "WALLOPS" => self.wallops(param(0)),
            "MONITOR" => self.monitor(param(0), param(1)),
            "SETNAME" => self.setname(param(0)),
            "CHATHISTORY" => self.chathistory(&params[..]).await,
            "HELP" | "HELPOP" => self.help(param(0)),
            "INFO" => {
                let mut lines = self.reply(RPL_INFO).trailing(&format!("{} {}", version(), self.irc.settings.description));
                lines.push_str(&self.reply(RPL_INFO).trailing("Rooms shared with chat, SockJS and XMPP clients"));
                lines.push_str(&self.reply(RPL_ENDOFINFO).trailing("End of INFO list"));
                self.send(lines);
            }
            "KICK" => self.kick_all(param(0), param(1), params.get(2).copied().filter(|c| !c.is_empty())),
            "WHOWAS" => self.whowas(params.first().copied(), params.get(1).copied()),
            "MOTD" => self.send(self.reply(ERR_NOMOTD).trailing("MOTD File is missing")),
            "LUSERS" => self.lusers(),
            "VERSION" => self.send(self.reply(RPL_VERSION).arg(&version()).arg(self.server()).trailing("")),
            // One server, no links: itself, at no hops.
            "LINKS" => {
                let server = self.server().to_owned();
                let mut lines = self.reply(RPL_LINKS).arg(&server).arg(&server).trailing(&format!("0 {}", self.irc.settings.description));
                lines.push_str(&self.reply(RPL_ENDOFLINKS).arg("*").trailing("End of /LINKS list"));
                self.send(lines);
            }
            _ => self.send(self.reply(ERR_UNKNOWNCOMMAND).arg(&command).trailing("Unknown command")),
        }
        if self.password == Password::Refused {
            return Flow::Close("Bad password".to_owned());
        }
        Flow::Go
    }

    /// `BATCH`: a client opens and ends a multiline message
    /// (`+ref draft/multiline target`, `-ref`); see `multiline`.
    async fn batch(&mut self, message: &Message<'_>) {
        let param = |i: usize| message.param(i).unwrap_or("");
        let fail = |why| Some(multiline::Fail::Invalid(why));
        let failed = if let Some(reference) = param(0).strip_prefix('+') {
            let open = self.under_way().batch.take().is_some_and(|(b, _)| !b.broken);
            let refused = match () {
                _ if !self.caps.has(Cap::Multiline) => fail("draft/multiline is not enabled"),
                _ if !param(1).eq_ignore_ascii_case(multiline::BATCH_TYPE) => fail("Only draft/multiline batches are taken"),
                _ if reference.is_empty() || param(2).is_empty() => fail("A batch needs a reference and a target"),
                _ if open => fail("One multiline batch at a time"),
                _ => None,
            };
            // What follows under this reference is dropped if it is refused.
            let batch = match refused {
                Some(_) => multiline::Batch::broken(reference),
                None => multiline::Batch::open(reference, param(2), message.tags.and_then(render::client_only)),
            };
            // Its label is the whole message's, answered at its end.
            let label = refused.is_none().then(|| self.unanswered_label().map(str::to_owned)).flatten();
            if label.is_some() {
                self.answered();
            }
            self.under_way().batch = Some((batch, label));
            refused
        } else if let Some(reference) = param(0).strip_prefix('-') {
            match self.under_way().batch.take() {
                Some((batch, _)) if batch.reference == reference && batch.broken => None,
                Some((batch, label)) if batch.reference == reference => {
                    // Answered under the label its start had, as a command of its own.
                    let outer = self.under_way().labeling.take();
                    if let Some(label) = label {
                        self.begin_label(label);
                    }
                    let failed = match batch.end() {
                        Ok(whole) => {
                            self.public.state.lock().spoke = self.irc.clock();
                            let said = Said { command: "PRIVMSG", text: &whole.text, client_tags: whole.client_tags, cuts: &whole.cuts };
                            match whole.target.starts_with('#') {
                                true => self.say_in_room(&whole.target, &said).await,
                                false => self.say_to_nick(&whole.target, &said).await,
                            }
                            None
                        }
                        Err(fail) => Some(fail),
                    };
                    if let Some(fail) = &failed {
                        self.send(fail.line(self.server()));
                    }
                    self.end_label();
                    self.under_way().labeling = outer;
                    self.settle();
                    return;
                }
                other => {
                    self.under_way().batch = other;
                    fail("No such batch is open")
                }
            }
        } else {
            fail("A batch starts with + and ends with -")
        };
        if let Some(fail) = failed {
            self.send(fail.line(self.server()));
        }
        self.settle();
    }

    /// A line of a batch (tagged `batch=…`): a line of the multiline
    /// message under way, or refused with what is left of it.
    async fn in_batch(&mut self, command: &str, message: &Message<'_>) {
        let reference = message.tag("batch").unwrap_or_default();
        let failed = match self.under_way.as_mut().and_then(|u| u.batch.as_mut()).map(|(b, _)| b) {
            Some(batch) if batch.reference == *reference && batch.broken => None,
            Some(batch) if batch.reference == *reference => {
                let concat = message.tag(multiline::CONCAT).is_some();
                let taken = batch.take(command, message.param(0).unwrap_or(""), message.param(1).unwrap_or(""), concat);
                batch.broken = taken.is_err();
                taken.err()
            }
            Some(batch) => {
                batch.broken = true;
                Some(multiline::Fail::Invalid("A line of another batch than the one open"))
            }
            None => Some(multiline::Fail::Invalid("A line of no open batch")),
        };
        if let Some(fail) = failed {
            self.send(fail.line(self.server()));
        }
    }

    fn send_flow(&self, line: String) -> Flow {
        self.send(line);
        Flow::Go
    }

    fn no_nick(&self) -> Flow {
        self.send_flow(self.reply(ERR_NONICKNAMEGIVEN).trailing("No nickname given"))
    }

    /// What of the capabilities that need something of the server it
    /// offers this client.
    fn offer(&self) -> cap::Offer {
        cap::Offer { sasl: !self.mechanisms().is_empty(), registration: self.registers(), history: self.irc.archive.is_some() || self.irc.private.is_some() }
    }

    fn cap(&mut self, sub: &str, arg: &str) {
        let nick = self.nick();
        let line = |sub: &str| Line::new(Some(self.irc.server_name()), "CAP").arg(&nick).arg(sub);
        match sub.to_ascii_uppercase().as_str() {
            "LS" => {
                self.negotiating |= !self.registered;
                self.cap_302 |= arg.parse::<u32>().is_ok_and(|v| v >= 302);
                let mechanisms = self.mechanisms().join(",");
                self.send(line("LS").trailing(&cap::offered(self.offer(), self.cap_302.then_some(mechanisms.as_str()))));
            }
            "LIST" => self.send(line("LIST").trailing(&self.caps.names())),
            "REQ" => {
                self.negotiating |= !self.registered;
                let unoffered = self.offer().refuses(arg);
                match self.caps.after(arg).filter(|_| !unoffered) {
                    Some(caps) => {
                        self.caps = caps;
                        self.public.set_caps(caps);
                        self.send(line("ACK").trailing(arg));
                    }
                    None => self.send(line("NAK").trailing(arg)),
                }
            }
            "END" => {
                self.negotiating = false;
                self.try_register();
            }
            _ => self.send(self.reply(ERR_INVALIDCAPCMD).arg(sub).trailing("Invalid CAP command")),
        }
    }

    async fn set_nick(&mut self, nick: &str) {
        let name = match name_of(nick).ok().and_then(|name| Nickname::parse(&name).ok()) {
            Some(name) if nick.len() <= NICKLEN && nick_of(&name.shown) == nick => name,
            _ => return self.send(self.reply(ERR_ERRONEUSNICKNAME).arg(nick).trailing("Erroneous nickname")),
        };
        if self.name.as_ref().is_some_and(|old| old.shown == name.shown) {
            return;
        }
        let old = self.name.as_ref().map(|n| n.key.clone());
        if !self.irc.nicks.claim(&name.key, old.as_ref(), &self.public) {
            return self.send(self.reply(ERR_NICKNAMEINUSE).arg(nick).trailing("Nickname is already in use"));
        }
        if let Err(room) = self.rename_in_rooms(&name).await {
            // Back to the old name everywhere it had changed.
            if let Some(old) = &self.name {
                let _ = self.irc.nicks.claim(&old.key, Some(&name.key), &self.public);
            } else {
                self.irc.nicks.release(&name.key, self.id());
            }
            let line = self.reply(ERR_NICKNAMEINUSE).arg(nick).trailing(&format!("Nickname is in use in {}", channel_of(&room)));
            return self.send(line);
        }
        let before = self.registered.then(|| self.source());
        // Another nickname, not the same one in other letters: its watchers are told.
        let other = self.name.as_ref().is_some_and(|old| old.key != name.key);
        if self.registered {
            self.remember();
            if other {
                self.tell_monitors(false);
            }
        }
        // The name's own text when the nickname shows it unchanged (most do).
        self.public.state.lock().nick = if *name.shown == *nick { name.shown.clone() } else { Arc::from(nick) };
        let old_name = self.name.replace(name.clone());
        if let (Some(before), Some(old_name)) = (before, old_name) {
            if other {
                self.tell_monitors(true);
            }
            self.send(Line::new(Some(&before), "NICK").arg(nick).end());
            for room in self.joined.clone() {
                let awaited = &mut self.under_way().awaited;
                awaited.push((room.clone(), Echo::Leave(old_name.shown.clone())));
                awaited.push((room.clone(), Echo::Join(name.shown.clone())));
                for event in RoomEvent::rename(old_name.shown.clone(), name.shown.clone()) {
                    self.publish(&room, event);
                }
            }
        }
        self.try_register();
    }

    /// Takes `name` in every room it is in; on a room where it is taken,
    /// gives the old name back where it had changed and says which room.
    async fn rename_in_rooms(&self, name: &Nickname) -> Result<(), Arc<str>> {
        let (Some(rooms), Some(old)) = (&self.irc.rooms, &self.name) else { return Ok(()) };
        for (done, room) in self.joined.iter().enumerate() {
            match rooms.rename(room, self.id(), name.clone()).await {
                Ok(()) | Err(RenameError::NotMember) => {}
                Err(_) => {
                    for room in &self.joined[..done] {
                        let _ = rooms.rename(room, self.id(), old.clone()).await;
                    }
                    return Err(room.clone());
                }
            }
        }
        Ok(())
    }

    fn try_register(&mut self) {
        if self.registered || self.negotiating || !self.user_given {
            return;
        }
        if self.name.is_none() {
            return;
        }
        if !self.password_given() {
            self.send(self.reply(ERR_PASSWDMISMATCH).trailing("Password incorrect"));
            self.password = Password::Refused;
            return;
        }
        self.registered = true;
        let now = self.irc.clock();
        {
            let mut state = self.public.state.lock();
            state.registered = true;
            (state.signon, state.spoke) = (now, now);
        }
        self.irc.users.arrive();
        self.tell_monitors(true);
        let server = self.server().to_owned();
        let network = &self.irc.settings.network;
        let created = humantime::format_rfc3339_seconds(self.irc.created);
        let version = version();
        let mut lines = vec![
            self.reply(RPL_WELCOME).trailing(&format!("Welcome to the {network} IRC Network {}", self.source())),
            self.reply(RPL_YOURHOST).trailing(&format!("Your host is {server}, running version {version}")),
            self.reply(RPL_CREATED).trailing(&format!("This server was created {created}")),
            self.reply(RPL_MYINFO).arg(&server).arg(&version).arg("Biow").arg(CHANNEL_MODES).arg("klov").end(),
        ];
        let tokens = [
            format!("AWAYLEN={TEXTLEN}"),
            "BOT=B".into(),
            "CASEMAPPING=ascii".into(),
            format!("CHANLIMIT=#:{}", self.irc.settings.max_channels),
            "CHANMODES=Ibe,k,l,Cimnst".into(),
            format!("CHANNELLEN={}", 1 + 3 * wire::app::MAX_NAME_LEN),
            "CHANTYPES=#".into(),
            "ELIST=MNU".into(),
            "EXCEPTS=e".into(),
            format!("KICKLEN={TEXTLEN}"),
            format!("TARGMAX=KICK:{MAX_KICKS},NAMES:{MAX_TARGETS},NOTICE:{MAX_TARGETS},PRIVMSG:{MAX_TARGETS},TAGMSG:{MAX_TARGETS}"),
            "INVEX=I".into(),
            format!("MAXLIST=Ibe:{}", crate::channels::MAX_LIST),
            "MODES=4".into(),
            format!("MONITOR={}", crate::monitor::LIMIT),
            format!("NETWORK={network}"),
            format!("NICKLEN={NICKLEN}"),
            "PREFIX=(ov)@+".into(),
            "STATUSMSG=".into(),
            format!("TOPICLEN={TEXTLEN}"),
            "UTF8ONLY".into(),
            "WHOX".into(),
        ];
        let mut tokens = Vec::from(tokens);
        // CHATHISTORY reads the rooms' and the accounts' archives: without
        // either, it is not offered.
        if self.irc.archive.is_some() || self.irc.private.is_some() {
            tokens.extend([format!("CHATHISTORY={}", chathistory::MAX), "MSGREFTYPES=msgid,timestamp".into()]);
        }
        for chunk in tokens.chunks(13) {
            let mut line = self.reply(RPL_ISUPPORT);
            for token in chunk {
                line = line.arg(token);
            }
            lines.push(line.trailing("are supported by this server"));
        }
        lines.push(self.lusers_lines());
        lines.push(self.reply(ERR_NOMOTD).trailing("MOTD File is missing"));
        self.send(lines.concat());
    }

    /// `LUSERS`: the users and channels of this node.
    fn lusers_lines(&self) -> String {
        let (users, most) = self.irc.users.counts();
        let all = self.irc.nicks.all();
        let invisible = all.iter().filter(|c| c.state.lock().invisible).count().min(users);
        let operators = all.iter().filter(|c| c.state.lock().oper).count().to_string();
        let channels = self.irc.channels.len().to_string();
        [
            self.reply(RPL_LUSERCLIENT).trailing(&format!("There are {} users and {invisible} invisible on 1 servers", users - invisible)),
            self.reply(RPL_LUSEROP).arg(&operators).trailing("operator(s) online"),
            self.reply(RPL_LUSERCHANNELS).arg(&channels).trailing("channels formed"),
            self.reply(RPL_LUSERME).trailing(&format!("I have {users} clients and 0 servers")),
            self.reply(RPL_LOCALUSERS).arg(&users.to_string()).arg(&most.to_string()).trailing(&format!("Current local users {users}, max {most}")),
            self.reply(RPL_GLOBALUSERS).arg(&users.to_string()).arg(&most.to_string()).trailing(&format!("Current global users {users}, max {most}")),
        ]
        .concat()
    }

    fn lusers(&self) {
        self.send(self.lusers_lines());
    }

    async fn join_all(&mut self, channels: &str, keys: &str) {
        if channels == "0" {
            let all = self.joined.iter().map(|r| channel_of(r)).collect::<Vec<_>>().join(",");
            return self.part_all(&all, None);
        }
        let mut keys = keys.split(',');
        // Labeled, its answer is a batch, opened before the greetings come
        // (none comes for a channel it is in already).
        let new = |c: &str| !c.is_empty() && room_of(c).map_or(true, |r| !self.joined.iter().any(|j| **j == *r));
        if channels.split(',').any(new) {
            self.open_labeled_batch();
        }
        for channel in channels.split(',').filter(|c| !c.is_empty()) {
            self.join(channel, keys.next().filter(|k| !k.is_empty())).await;
        }
    }

    async fn join(&mut self, channel: &str, key: Option<&str>) {
        let (Ok(room), Some(rooms)) = (room_of(channel), self.irc.rooms.clone()) else {
            return self.send(self.reply(ERR_NOSUCHCHANNEL).arg(channel).trailing("No such channel"));
        };
        let Some(name) = self.name.clone() else { return };
        let room: Arc<str> = Arc::from(room);
        if self.joined.contains(&room) {
            return;
        }
        let channel = channel_of(&room);
        if self.joined.len() >= self.irc.settings.max_channels {
            return self.send(self.reply(ERR_TOOMANYCHANNELS).arg(&channel).trailing("You have joined too many channels"));
        }
        // IRC's own modes, for IRC's members.
        let source = self.source();
        let refused = self.irc.channels.with(&room, |c| {
            if c.modes.banned(&source) {
                Some((ERR_BANNEDFROMCHAN, "Cannot join channel (+b)"))
            } else if c.modes.invite_only_for(&source) && !c.invited.contains(&self.public.id) {
                Some((ERR_INVITEONLYCHAN, "Cannot join channel (+i)"))
            } else if c.modes.key.as_deref().is_some_and(|k| Some(k) != key) {
                Some((ERR_BADCHANNELKEY, "Cannot join channel (+k)"))
            } else if c.modes.limit.is_some_and(|l| c.members.len() >= l) && !c.invited.contains(&self.public.id) {
                Some((ERR_CHANNELISFULL, "Cannot join channel (+l)"))
            } else {
                // An invitation lets its client in once.
                c.invited.retain(|id| *id != self.public.id);
                None
            }
        });
        if let Some(Some((numeric, text))) = refused {
            return self.send(self.reply(numeric).arg(&channel).trailing(text));
        }
        // In the channel first, so that its names show a first member as operator.
        self.irc.channels.enter(&room, &self.public);
        let answer_batch = self.under_way.as_ref().and_then(|u| u.labeling.as_ref()).and_then(|l| l.batch.clone());
        let greeting = self.greeting(&room, &channel, &name, answer_batch);
        let member = Member { id: self.id(), name: Some(name.clone()), outbox: self.public.outbox.clone(), speaks: Speaks::Irc };
        if let Err(e) = rooms.join(&room, member, MAX_LISTED, greeting).await {
            self.irc.channels.exit(&room, self.id());
            let text = match e {
                JoinError::NameTaken => "Your nickname is taken in this channel by a member of another protocol".to_owned(),
                JoinError::RoomFull => return self.send(self.reply(ERR_CHANNELISFULL).arg(&channel).trailing("Cannot join channel (room full)")),
                JoinError::TooManyJoins => "Too many joins to this channel; try again in a moment".to_owned(),
                JoinError::Broker(e) => e.to_string(),
            };
            return self.send(self.reply(ERR_UNAVAILRESOURCE).arg(&channel).trailing(&text));
        }
        let away = {
            let mut state = self.public.state.lock();
            state.enter(channel);
            state.away().cloned()
        };
        if let Some(away) = away {
            // away-notify: who joins away is announced as away.
            let line = Line::new(Some(&self.source()), "AWAY").trailing(&away);
            for m in self.irc.channels.members(&room) {
                if m.client.id != self.public.id && m.client.has(Cap::AwayNotify) {
                    m.client.send(line.clone());
                }
            }
        }
        nicks::push(&mut self.joined, room.clone());
        self.under_way().awaited.push((room.clone(), Echo::Join(name.shown.clone())));
        self.publish(&room, RoomEvent::join(name.shown));
    }

    /// What a client that joins `room` is sent before anything else of it:
    /// its own `JOIN`, the topic, the names, and, to a client that reads
    /// times, the room's history as a batch; all of it inside the batch
    /// `answer_batch` that answers a labeled `JOIN`, if it was one.
    fn greeting(&mut self, room: &Arc<str>, channel: &str, name: &Nickname, answer_batch: Option<String>) -> Greeting {
        let server = self.server().to_owned();
        let nick = nick_of(&name.shown).into_owned();
        let caps = self.caps;
        // In the room's form, as its members see it (`nick!nick@server`):
        // clients size what they send by the source their own JOIN shows,
        // and a channel's messages are relayed under that form (`fits_relayed`).
        let join = self.line_from(&render::source(&nick, &server), caps, "JOIN").arg(channel);
        let join = match caps.has(Cap::ExtendedJoin) {
            true => {
                let (account, names) = {
                    let state = self.public.state.lock();
                    (state.account().cloned(), state.names.clone())
                };
                join.arg(account.as_deref().unwrap_or("*")).trailing(names.realname())
            }
            false => join.end(),
        };
        let me = self.nick();
        let prefixes = self.prefixes(room);
        let secret = self.irc.channels.with(room, |c| c.modes.secret).unwrap_or(false);
        let shape = Shape { secret, userhost: caps.has(Cap::UserhostInNames) };
        let batch = self.next_batch("h");
        let channel = channel.to_owned();
        Box::new(move |roster: &Roster| {
            // The room's topic as it is under the room's lock, as the rest.
            let topic = roster.topic.as_ref().filter(|t| !t.text.is_empty()).map(|t| topic_lines(&server, &me, &channel, t)).unwrap_or_default();
            let mut lines = join + &topic;
            lines.push_str(&names_lines(&server, &nick, &channel, &roster.names, &prefixes, shape));
            let history = (caps.has(Cap::ServerTime) && !roster.history.is_empty()).then(|| history(&server, caps, &channel, &batch, &roster.history));
            match (answer_batch, history) {
                (Some(reference), history) => vec![Payload::new(labeled::inside(&(lines + &history.unwrap_or_default()), &reference))],
                (None, Some(history)) => vec![Payload::new(lines), Payload::new(history)],
                (None, None) => vec![Payload::new(lines)],
            }
        })
    }

    /// `332` and `333` for the room's topic, if it has one here.
    fn topic_lines(&self, room: &str, channel: &str) -> String {
        let topic = self.irc.rooms.as_ref().and_then(|rooms| rooms.topic(room)).filter(|t| !t.text.is_empty());
        topic.map(|t| topic_lines(self.server(), &self.nick(), channel, &t)).unwrap_or_default()
    }

    /// The `NAMES` prefixes of `room`'s IRC members who have one, by name.
    fn prefixes(&self, room: &str) -> Vec<(Arc<str>, &'static str)> {
        let all = self.caps.has(Cap::MultiPrefix);
        self.irc
            .channels
            .members(room)
            .iter()
            .filter(|m| m.op || m.voice)
            .map(|m| (m.client.nick(), m.prefix(all)))
            .collect()
    }

    fn part_all(&mut self, channels: &str, reason: Option<&str>) {
        for channel in channels.split(',').filter(|c| !c.is_empty()) {
            let room = room_of(channel).ok().and_then(|r| self.joined.iter().find(|j| ***j == *r).cloned());
            let Some(room) = room else {
                self.send(self.reply(ERR_NOTONCHANNEL).arg(channel).trailing("You're not on that channel"));
                continue;
            };
            let part = Line::new(Some(&self.source()), "PART").arg(&channel_of(&room));
            self.send(match reason {
                Some(reason) => part.trailing(truncated(reason)),
                None => part.end(),
            });
            self.leave(&room, reason.map(|r| Arc::from(truncated(r))), false);
        }
    }

    /// Leaves `room`, telling its members why, and whether it quit.
    fn leave(&mut self, room: &Arc<str>, reason: Option<Arc<str>>, quit: bool) {
        if self.step_out(room)
            && let Some(name) = &self.name
        {
            self.publish(room, RoomEvent::Leave { name: name.shown.clone(), reason, quit, by: None, new_name: None });
        }
    }

    /// Takes this client out of `room` everywhere it is kept, saying
    /// nothing; whether the room had it as a member.
    fn step_out(&mut self, room: &Arc<str>) -> bool {
        nicks::retain(&mut self.joined, |r| r != room);
        if let Some(under_way) = self.under_way.as_mut() {
            under_way.awaited.retain(|(r, _)| r != room);
            self.settle();
        }
        let channel = channel_of(room);
        self.public.state.lock().exit(&channel);
        self.irc.channels.exit(room, self.id());
        self.irc.rooms.as_ref().is_some_and(|rooms| rooms.leave(room, self.id()).is_some())
    }

    /// It was taken out of `room` (`KICK`): it leaves, and the event that
    /// said so has told the room.
    fn kicked(&mut self, room: &str) {
        if let Some(room) = self.joined.iter().find(|j| ***j == *room).cloned() {
            self.step_out(&room);
        }
    }

    /// Leaves every room, quitting with `reason`, and frees its nickname:
    /// the client is gone.
    pub fn end(&mut self, reason: &str) {
        let reason: Arc<str> = Arc::from(truncated(reason));
        for room in self.joined.clone() {
            self.leave(&room, Some(reason.clone()), true);
        }
        if let Some(name) = &self.name {
            self.irc.nicks.release(&name.key, self.id());
        }
        if std::mem::take(&mut self.registered) {
            self.remember();
            self.irc.users.leave();
            self.tell_monitors(false);
        }
        self.irc.monitors.clear(self.id());
    }

    /// Tells the clients watching its nickname (`MONITOR`) that it is now
    /// online (`730`, as `nick!user@host`) or offline (`731`).
    fn tell_monitors(&self, online: bool) {
        let Some(name) = &self.name else { return };
        let watchers = self.irc.monitors.watchers(&name.key);
        if watchers.is_empty() {
            return;
        }
        let (numeric, shown) = if online { (RPL_MONONLINE, self.source()) } else { (RPL_MONOFFLINE, self.nick()) };
        for watcher in watchers {
            watcher.send(Line::new(Some(self.server()), numeric).arg(&watcher.nick()).trailing(&shown));
        }
    }

    /// `MONITOR`: `+ nick,…` watches nicknames (and says which are online,
    /// `730`, and which not, `731`; past the limit, `734`), `- nick,…` no
    /// longer, `C` none, `L` lists them (`732`, `733`), `S` says of each
    /// whether it is online.
    fn monitor(&mut self, sub: &str, targets: &str) {
        let id = self.id();
        let status = |client: &Client, watched: &[crate::monitor::Watched]| {
            let (mut online, mut offline) = (Vec::new(), Vec::new());
            for (_, nick) in watched {
                match client.find(nick) {
                    Some(found) => {
                        let state = found.state.lock();
                        online.push(format!("{}!{}@{}", state.nick, state.names.user(), client.server()));
                    }
                    None => offline.push(nick.to_string()),
                }
            }
            let mut lines = client.listed(RPL_MONONLINE, &online);
            lines.push_str(&client.listed(RPL_MONOFFLINE, &offline));
            lines
        };
        match sub.to_ascii_uppercase().as_str() {
            "+" => {
                let mut valid = Vec::new();
                for nick in targets.split(',').filter(|t| !t.is_empty()) {
                    match name_of(nick).ok().and_then(|n| Nickname::parse(&n).ok()) {
                        Some(name) if nick.len() <= NICKLEN => valid.push((name.key, Arc::from(nick))),
                        _ => self.send(self.reply(ERR_ERRONEUSNICKNAME).arg(nick).trailing("Erroneous nickname")),
                    }
                }
                let full = self.irc.monitors.add(&self.public, valid.clone());
                if !full.is_empty() {
                    let listed = full.join(",");
                    self.send(self.reply(ERR_MONLISTFULL).arg(&crate::monitor::LIMIT.to_string()).arg(&listed).trailing("Monitor list is full."));
                }
                // Of each it watches now, whether it is online.
                valid.retain(|(_, nick)| !full.contains(nick));
                self.send(status(self, &valid));
            }
            "-" => {
                let keys: Vec<Arc<str>> = targets.split(',').filter_map(|n| name_of(n).ok().and_then(|n| Nickname::parse(&n).ok())).map(|n| n.key).collect();
                self.irc.monitors.remove(id, &keys);
            }
            "C" => self.irc.monitors.clear(id),
            "L" => {
                let nicks: Vec<String> = self.irc.monitors.list(id).into_iter().map(|(_, nick)| nick.to_string()).collect();
                let mut lines = self.listed(RPL_MONLIST, &nicks);
                lines.push_str(&self.reply(RPL_ENDOFMONLIST).trailing("End of MONITOR list"));
                self.send(lines);
            }
            "S" => self.send(status(self, &self.irc.monitors.list(id))),
            _ => {}
        }
    }

    /// `items` as `numeric` lines, as many to a line as fit, comma
    /// separated; none for none.
    fn listed(&self, numeric: &str, items: &[String]) -> String {
        let mut lines = String::new();
        let mut line = String::new();
        for item in items {
            if !line.is_empty() && line.len() + 1 + item.len() > 400 {
                lines.push_str(&self.reply(numeric).trailing(&line));
                line.clear();
            }
            if !line.is_empty() {
                line.push(',');
            }
            line.push_str(item);
        }
        if !line.is_empty() {
            lines.push_str(&self.reply(numeric).trailing(&line));
        }
        lines
    }

    fn publish(&self, room: &Arc<str>, event: RoomEvent) {
        if let Some(rooms) = &self.irc.rooms {
            // Nobody to tell if the broker cannot take it; the member's
            // state is right either way.
            let _ = rooms.publish(room, self.event(room, event));
        }
    }

    /// `event` of `room` as this client publishes it: with the account it
    /// logged in to (IRCv3 `account-tag`, on every node and in every
    /// protocol that shows one).
    fn event(&self, room: &Arc<str>, event: RoomEvent) -> Payload {
        let (account, bot) = self.shown_as();
        Payload::event(room.clone(), event).with_account(account).with_bot(bot)
    }

    /// `PRIVMSG`, `NOTICE` or `TAGMSG` (IRCv3 message-tags: tags and no
    /// text) to each of its targets.
    async fn message(&mut self, command: &str, message: &Message<'_>) {
        let notice = command == "NOTICE";
        let tagmsg = command == "TAGMSG";
        let (Some(targets), Some(text)) = (message.param(0), message.param(1).or(tagmsg.then_some(""))) else {
            if !notice {
                let numeric = if message.params.is_empty() { ERR_NORECIPIENT } else { ERR_NOTEXTTOSEND };
                let text = if message.params.is_empty() { format!("No recipient given ({command})") } else { "No text to send".to_owned() };
                self.send(self.reply(numeric).trailing(&text));
            }
            return;
        };
        if text.is_empty() && !tagmsg {
            if !notice {
                self.send(self.reply(ERR_NOTEXTTOSEND).trailing("No text to send"));
            }
            return;
        }
        if !tagmsg {
            self.public.state.lock().spoke = self.irc.clock();
        }
        let said = Said { command, text, client_tags: message.tags.and_then(render::client_only), cuts: &[] };
        for (n, target) in targets.split(',').filter(|t| !t.is_empty()).enumerate() {
            if n == MAX_TARGETS {
                if !notice {
                    self.send(self.reply(ERR_TOOMANYTARGETS).arg(target).trailing(&format!("Too many targets; at most {MAX_TARGETS}")));
                }
                break;
            }
            if command == "PRIVMSG" && !self.fits_relayed(target, text) {
                self.too_long();
            } else if target.starts_with('#') {
                self.say_in_room(target, &said).await;
            } else {
                self.say_to_nick(target, &said).await;
            }
        }
    }

    /// Whether a `PRIVMSG` of `text` to `target` fits one line of IRC's
    /// 512 bytes as its recipients get it, from this client's source. One
    /// that does not is refused (417) rather than cut or split: the
    /// sender knows, and resends it shorter (a client splits what a user
    /// types by the source it saw in its own `JOIN`). A `NOTICE`, which is
    /// never answered, is split instead.
    fn fits_relayed(&self, target: &str, text: &str) -> bool {
        // A room's members see a source made from the nickname alone.
        let source = if target.starts_with('#') { render::source(&self.nick(), self.server()) } else { self.source() };
        text.len() <= render::room_for_text(&source, target)
    }

    async fn say_in_room(&mut self, channel: &str, said: &Said<'_>) {
        let Said { command, text, client_tags, cuts } = said;
        let notice = *command == "NOTICE";
        let (Ok(room), Some(rooms), Some(name)) = (room_of(channel), self.irc.rooms.clone(), self.name.clone()) else {
            if !notice {
                self.send(self.reply(ERR_NOSUCHCHANNEL).arg(channel).trailing("No such channel"));
            }
            return;
        };
        let inside = self.joined.iter().any(|r| **r == *room);
        // A CTCP request or reply but an action (`/me`).
        let ctcp = text.starts_with('\u{1}') && !text.starts_with("\u{1}ACTION ");
        let refused = self
            .irc
            .channels
            .with(&room, |c| {
                let me = c.members.iter().find(|m| m.client.id == self.public.id);
                if (!inside && c.modes.no_outside) || (c.modes.moderated && !me.is_some_and(|m| m.op || m.voice)) {
                    Some("Cannot send to channel")
                } else if c.modes.no_ctcp && ctcp {
                    Some("Cannot send CTCP to channel (+C)")
                } else {
                    None
                }
            })
            .unwrap_or(if inside { None } else { Some("Cannot send to channel") });
        if let Some(why) = refused {
            if !notice {
                self.send(self.reply(ERR_CANNOTSENDTOCHAN).arg(&channel_of(&room)).trailing(why));
            }
            return;
        }
        let room: Arc<str> = Arc::from(room);
        let tags = client_tags.as_deref().map(Arc::from);
        // Its echo, if it has one, answers a labeled command.
        let echoed = self.caps.has(Cap::EchoMessage) && (*command != "TAGMSG" || self.caps.has(Cap::MessageTags));
        if let (true, Some(label)) = (echoed, self.unanswered_label().map(str::to_owned)) {
            let command = match *command {
                "PRIVMSG" => "PRIVMSG",
                "NOTICE" => "NOTICE",
                _ => "TAGMSG",
            };
            let under_way = self.under_way();
            if under_way.echoes.len() == ECHOES_LABELED {
                under_way.echoes.remove(0);
            }
            under_way.echoes.push((room.clone(), command, label));
            self.answered();
        }
        match *command {
            // Tags and no text (a typing notification): neither kept nor
            // answered, as a notice.
            "TAGMSG" => {
                let event = RoomEvent::Tags { name: name.shown, tags: tags.unwrap_or_else(|| Arc::from("")) };
                let _ = rooms.publish(&room, self.event(&room, event));
            }
            // Neither kept nor answered: nobody is told if it cannot go.
            "NOTICE" => {
                let event = RoomEvent::Notice { name: name.shown, text: Arc::from(*text) };
                let _ = rooms.publish(&room, self.event(&room, event).with_client_tags(tags));
            }
            _ => {
                let shown = render::text_from_irc(text);
                // Cuts count in the text as sent: an action shown otherwise has none.
                let cuts = matches!(shown, std::borrow::Cow::Borrowed(_)).then(|| Arc::from(*cuts));
                let event = RoomEvent::Message { name: name.shown.clone(), text: Arc::from(shown) };
                let payload = self.event(&room, event).with_client_tags(tags).with_cuts(cuts);
                if let Err(e) = rooms.publish_and_keep(&room, payload).await {
                    // No echo: the error is the answer.
                    if let Some(under_way) = self.under_way.as_mut()
                        && under_way.echoes.last().is_some_and(|(r, c, _)| *r == room && *c == "PRIVMSG")
                        && let Some(labeling) = under_way.labeling.as_mut()
                    {
                        under_way.echoes.pop();
                        labeling.answered = false;
                    }
                    self.send(self.reply(ERR_CANNOTSENDTOCHAN).arg(&channel_of(&room)).trailing(&e.to_string()));
                }
            }
        }
    }

    /// A message to the client `target`. A `PRIVMSG` is kept in the
    /// archives of those of the two logged in to an account, under the
    /// `msgid` and time both are given (`private`).
    async fn say_to_nick(&self, target: &str, said: &Said<'_>) {
        let command = said.command;
        let Some((to, key)) = self.find_keyed(target) else {
            if command != "NOTICE" {
                self.send(self.reply(ERR_NOSUCHNICK).arg(target).trailing("No such nick/channel"));
            }
            return;
        };
        let to_nick = to.nick();
        let source = self.source();
        // A TAGMSG only to a client that reads tags.
        let gets = |caps: Caps| command != "TAGMSG" || caps.has(Cap::MessageTags);
        let deliver = |stamp: (SystemTime, String)| {
            let line = said.line_maker(self, &source, &to_nick, stamp);
            if gets(to.caps()) {
                to.send(line(to.caps()));
            }
            if self.caps.has(Cap::EchoMessage) && gets(self.caps) {
                self.send(line(self.caps));
            }
        };
        match self.private_parties(&to, &key, &to_nick).filter(|_| command == "PRIVMSG") {
            Some((private, from, them)) => {
                let keepers = private.keepers(&from, &them).await;
                if keepers == (false, false) {
                    deliver(new_stamp());
                } else {
                    // Pushed in the order of the ids taken, as XMPP's chats are.
                    let (at, id) = base::archive::in_order(&them.jid, || {
                        let (at, id) = base::archive::next_id();
                        deliver((base::archive::time(at), id.clone()));
                        (at, id)
                    });
                    let text = render::text_from_irc(said.text);
                    private.archive.queue(private::entries(&from, &them, &text, at, &id, keepers)).await;
                }
            }
            None => deliver(new_stamp()),
        }
        let away = to.state.lock().away().cloned();
        if let (Some(away), "PRIVMSG") = (away, command) {
            self.send(self.reply(RPL_AWAY).arg(&to_nick).trailing(&away));
        }
    }

    fn topic(&mut self, channel: &str, text: Option<&str>) {
        let room = room_of(channel).ok().and_then(|r| self.joined.iter().find(|j| ***j == *r).cloned());
        let Some(room) = room else {
            let known = room_of(channel).is_ok_and(|r| self.irc.channels.with(&r, |_| ()).is_some());
            let (numeric, why) = if known { (ERR_NOTONCHANNEL, "You're not on that channel") } else { (ERR_NOSUCHCHANNEL, "No such channel") };
            return self.send(self.reply(numeric).arg(channel).trailing(why));
        };
        let channel = channel_of(&room);
        let Some(text) = text else {
            let lines = self.topic_lines(&room, &channel);
            return self.send(if lines.is_empty() { self.reply(RPL_NOTOPIC).arg(&channel).trailing("No topic is set") } else { lines });
        };
        let Some(name) = self.name.as_ref().map(|n| n.shown.clone()) else { return };
        let allowed = self.irc.channels.with(&room, |c| !c.modes.topic_ops || c.members.iter().any(|m| m.client.id == self.public.id && m.op));
        // The room keeps it, and tells every member, of every protocol and
        // node, in its order: IRC's as `TOPIC` (`render`).
        match allowed {
            Some(true) => {
                let text: Arc<str> = Arc::from(truncated(text));
                let topic = RoomEvent::Topic { name: name.clone(), text: text.clone() };
                match self.irc.rooms.as_ref().map(|rooms| rooms.publish(&room, self.event(&room, topic))) {
                    Some(Err(e)) => self.send(self.reply(ERR_CANNOTSENDTOCHAN).arg(&channel).trailing(&e.to_string())),
                    // A room that keeps its topic (a persistent MUC room's subject) keeps this one.
                    Some(Ok(_)) => {
                        if let Some(topics) = &self.irc.topics {
                            topics.topic_set(&room, &name, &text);
                        }
                    }
                    None => {}
                }
            }
            _ => self.send(self.reply(ERR_CHANOPRIVSNEEDED).arg(&channel).trailing("You're not channel operator")),
        }
    }

    /// `NAMES #a,#b`: the names of each channel given that this client is
    /// in (at most [`MAX_TARGETS`]; others have none to it), then one `366`
    /// naming them as given.
    fn names(&self, channels: Option<&str>) {
        let given = channels.filter(|c| !c.is_empty()).unwrap_or("*");
        let mut lines = String::new();
        for channel in given.split(',').filter(|c| !c.is_empty()).take(MAX_TARGETS) {
            let Some(room) = room_of(channel).ok().filter(|r| self.joined.iter().any(|j| **j == **r)) else { continue };
            let names = self.room_names(&room);
            let secret = self.irc.channels.with(&room, |c| c.modes.secret).unwrap_or(false);
            let shape = Shape { secret, userhost: self.caps.has(Cap::UserhostInNames) };
            lines.push_str(&name_replies(self.server(), &self.nick(), &channel_of(&room), &names, &self.prefixes(&room), shape));
        }
        lines.push_str(&self.reply(RPL_ENDOFNAMES).arg(given).trailing("End of /NAMES list"));
        self.send(lines);
    }

    fn room_names(&self, room: &str) -> Vec<Arc<str>> {
        self.irc.rooms.as_ref().map(|r| r.names(room, MAX_LISTED)).unwrap_or_default()
    }

    /// `WHO`: the members of a channel this client is in, or the
    /// registered clients whose nicknames match a mask, as `352` lines, or
    /// as `354` with the fields `fields` asks for (WHOX, `whox`).
    fn who(&self, mask: &str, fields: Option<&str>) {
        let fields = fields.and_then(whox::Fields::parse);
        let mut lines = String::new();
        let multi = self.caps.has(Cap::MultiPrefix);
        if let Ok(room) = room_of(mask) {
            if self.joined.iter().any(|j| **j == *room) {
                let channel = channel_of(&room);
                let irc = self.irc.channels.members(&room);
                for name in self.room_names(&room) {
                    let nick = nick_of(&name);
                    let line = match irc.iter().find(|m| *m.client.nick() == *nick) {
                        Some(m) => self.who_line(&channel, &m.client.state.lock(), m.prefix(multi), fields.as_ref()),
                        None => self.who_line(&channel, &other_member(&nick, &name), "", fields.as_ref()),
                    };
                    lines.push_str(&line);
                }
            }
        } else {
            let mine: Vec<hub::MemberId> = self.joined.iter().flat_map(|r| self.irc.channels.members(r)).map(|m| m.client.id).collect();
            // Invisible users hide from masks, not from their own nickname.
            let is_mask = mask.contains(['*', '?']);
            for client in self.irc.nicks.all() {
                let state = client.state.lock().clone();
                let visible = !is_mask || !state.invisible || client.id == self.public.id || mine.contains(&client.id);
                if state.registered && visible && matches_mask(mask, &state.nick) {
                    lines.push_str(&self.who_line("*", &state, "", fields.as_ref()));
                }
            }
        }
        lines.push_str(&self.reply(RPL_ENDOFWHO).arg(mask).trailing("End of /WHO list"));
        self.send(lines);
    }

    /// One member's `WHO` line: `352`, or `354` with `fields`. A member of
    /// another protocol is never idle (`other_member`).
    fn who_line(&self, channel: &str, client: &Shown, prefix: &str, fields: Option<&whox::Fields>) -> String {
        let flags = format!(
            "{}{}{prefix}{}",
            if client.away().is_some() { 'G' } else { 'H' },
            if client.oper { "*" } else { "" },
            if client.bot { "B" } else { "" }
        );
        let server = self.server();
        if let Some(fields) = fields {
            let idle = if client.registered { self.irc.clock().saturating_sub(client.spoke) } else { 0 };
            let row = whox::Row {
                channel,
                user: client.names.user(),
                host: server,
                server,
                nick: &client.nick,
                flags: &flags,
                idle: u64::from(idle),
                account: client.account().map(|a| &**a),
                realname: client.names.realname(),
            };
            return fields.line(self.reply(RPL_WHOSPCRPL), &row);
        }
        self.reply(RPL_WHOREPLY)
            .arg(channel)
            .arg(client.names.user())
            .arg(server)
            .arg(server)
            .arg(&client.nick)
            .arg(&flags)
            .trailing(&format!("0 {}", client.names.realname()))
    }

    /// The registered client called `nick`: one still registering holds
    /// its nickname but is nobody's to message, invite or look up.
    fn find(&self, nick: &str) -> Option<Arc<Public>> {
        self.find_keyed(nick).map(|(found, _)| found)
    }

    /// [`Client::find`], with the key of the nickname it was found by.
    fn find_keyed(&self, nick: &str) -> Option<(Arc<Public>, Arc<str>)> {
        let key = name_of(nick).ok().and_then(|n| Nickname::parse(&n).ok())?.key;
        let found = self.irc.nicks.find(&key)?;
        let registered = found.state.lock().registered;
        registered.then_some((found, key))
    }

    /// Where a private message to `to` (its nickname's key `key`, shown as
    /// `nick`) is kept, with its two parties; `None` where private messages
    /// are not kept.
    fn private_parties(&self, to: &Public, key: &str, nick: &str) -> Option<(&PrivateArchive, Party, Party)> {
        let private = self.irc.private.as_ref()?;
        let name = self.name.as_ref()?;
        let from = private.party(self.account().as_deref(), &name.key, &self.nick());
        let account = to.state.lock().account().cloned();
        let them = private.party(account.as_deref(), key, nick);
        Some((private, from, them))
    }

    /// `channel` as `WHOIS` lists it to this client: with the member's
    /// prefix, unless it is secret and this client is not in it.
    fn whois_channel(&self, channel: &str, of: hub::MemberId) -> Option<String> {
        let room = room_of(channel).ok()?;
        let mine = self.joined.iter().any(|j| **j == *room);
        let multi = self.caps.has(Cap::MultiPrefix);
        self.irc
            .channels
            .with(&room, |c| {
                if c.modes.secret && !mine {
                    return None;
                }
                let prefix = c.members.iter().find(|m| m.client.id == of).map_or("", |m| m.prefix(multi));
                Some(format!("{prefix}{channel}"))
            })
            .flatten()
    }

    fn whois(&self, nick: &str) {
        let mut lines = String::new();
        match self.find(nick) {
            Some(client) => {
                let state = client.state.lock().clone();
                let server = self.server();
                lines.push_str(&self.reply(RPL_WHOISUSER).arg(&state.nick).arg(state.names.user()).arg(server).arg("*").trailing(state.names.realname()));
                let channels: Vec<String> = state.channels.iter().filter_map(|c| self.whois_channel(c, client.id)).collect();
                if !channels.is_empty() {
                    lines.push_str(&self.reply(RPL_WHOISCHANNELS).arg(&state.nick).trailing(&channels.join(" ")));
                }
                lines.push_str(&self.reply(RPL_WHOISSERVER).arg(&state.nick).arg(server).trailing(&self.irc.settings.description));
                let idle = self.irc.clock().saturating_sub(state.spoke).to_string();
                let signon = self.irc.unix_time(state.signon).to_string();
                lines.push_str(&self.reply(RPL_WHOISIDLE).arg(&state.nick).arg(&idle).arg(&signon).trailing("seconds idle, signon time"));
                if state.oper {
                    lines.push_str(&self.reply(RPL_WHOISOPERATOR).arg(&state.nick).trailing("is an IRC operator"));
                }
                if state.bot {
                    lines.push_str(&self.reply(RPL_WHOISBOT).arg(&state.nick).trailing("is a bot"));
                }
                if let Some(account) = state.account() {
                    lines.push_str(&self.reply(RPL_WHOISACCOUNT).arg(&state.nick).arg(account).trailing("is logged in as"));
                }
                if let Some(away) = state.away() {
                    lines.push_str(&self.reply(RPL_AWAY).arg(&state.nick).trailing(away));
                }
            }
            None => lines.push_str(&self.reply(ERR_NOSUCHNICK).arg(nick).trailing("No such nick/channel")),
        }
        lines.push_str(&self.reply(RPL_ENDOFWHOIS).arg(nick).trailing("End of /WHOIS list"));
        self.send(lines);
    }

    /// `LIST [conditions]`: the channels with IRC members, those a secret
    /// one's members alone, that meet the conditions (`elist`).
    fn list(&self, conditions: Option<&str>) {
        let filter = crate::elist::Filter::parse(conditions);
        let mut lines = self.reply(RPL_LISTSTART).arg("Channel").trailing("Users  Name");
        for (room, secret) in self.irc.channels.list() {
            if secret && !self.joined.contains(&room) {
                continue;
            }
            let users = self.room_names(&room).len();
            if !filter.admits(&channel_of(&room), users) {
                continue;
            }
            let count = users.to_string();
            let topic = self.irc.rooms.as_ref().and_then(|rooms| rooms.topic(&room));
            lines.push_str(&self.reply(RPL_LIST).arg(&channel_of(&room)).arg(&count).trailing(topic.as_ref().map_or("", |t| truncated(&t.text))));
        }
        lines.push_str(&self.reply(RPL_LISTEND).trailing("End of /LIST"));
        self.send(lines);
    }

    /// Remembers its nickname for `WHOWAS`.
    fn remember(&self) {
        let state = self.public.state.lock();
        self.irc.remember(state.nick.clone(), state.names.clone());
    }

    /// `WHOWAS nick [count]`: who had `nick` (a mask too), newest first;
    /// every one when `count` is not positive.
    fn whowas(&self, nick: Option<&str>, count: Option<&str>) {
        let Some(nick) = nick.filter(|n| !n.is_empty()) else {
            return self.send(self.reply(ERR_NONICKNAMEGIVEN).trailing("No nickname given"));
        };
        let most = count.and_then(|c| c.parse::<i64>().ok()).filter(|&c| c > 0).map_or(usize::MAX, |c| c as usize);
        let gone: Vec<crate::Gone> = self.irc.gone.lock().iter().filter(|g| matches_mask(nick, &g.nick)).take(most).cloned().collect();
        let mut lines = String::new();
        for g in &gone {
            let server = self.server();
            lines.push_str(&self.reply(RPL_WHOWASUSER).arg(&g.nick).arg(g.names.user()).arg(server).arg("*").trailing(g.names.realname()));
            let at = humantime::format_rfc3339_seconds(g.at).to_string();
            lines.push_str(&self.reply(RPL_WHOISSERVER).arg(&g.nick).arg(server).trailing(&at));
        }
        if gone.is_empty() {
            lines.push_str(&self.reply(ERR_WASNOSUCHNICK).arg(nick).trailing("There was no such nickname"));
        }
        lines.push_str(&self.reply(RPL_ENDOFWHOWAS).arg(nick).trailing("End of WHOWAS"));
        self.send(lines);
    }

    /// `INVITE` alone: the channels this client is invited to and has not
    /// joined yet (`336`), then `337`.
    fn invitations(&self) {
        let mut lines = String::new();
        for (room, _) in self.irc.channels.list() {
            if self.irc.channels.with(&room, |c| c.invited.contains(&self.public.id)).unwrap_or(false) {
                lines.push_str(&self.reply(RPL_INVITELIST).arg(&channel_of(&room)).end());
            }
        }
        lines.push_str(&self.reply(RPL_ENDOFINVITELIST).trailing("End of /INVITE list"));
        self.send(lines);
    }

    /// `INVITE nick #channel`: lets `nick` join the channel under `+i`.
    fn invite(&self, nick: &str, channel: &str) {
        let Some(target) = self.find(nick) else {
            return self.send(self.reply(ERR_NOSUCHNICK).arg(nick).trailing("No such nick/channel"));
        };
        let Ok(room) = room_of(channel) else {
            return self.send(self.reply(ERR_NOSUCHCHANNEL).arg(channel).trailing("No such channel"));
        };
        // As the channel is written, whatever case it was given in.
        let channel = &channel_of(&room);
        let room = Some(room);
        let mine = room.as_ref().is_some_and(|r| self.joined.iter().any(|j| **j == **r));
        let outcome = room.as_deref().and_then(|room| {
            self.irc.channels.with(room, |c| {
                if !mine {
                    return Err((ERR_NOTONCHANNEL, "You're not on that channel"));
                }
                if c.members.iter().any(|m| m.client.id == target.id) {
                    return Err((ERR_USERONCHANNEL, "is already on channel"));
                }
                let op = c.members.iter().any(|m| m.client.id == self.public.id && m.op);
                if c.modes.invite_only && !op {
                    return Err((ERR_CHANOPRIVSNEEDED, "You're not channel operator"));
                }
                if !c.invited.contains(&target.id) {
                    // The oldest invitation goes once the list is full.
                    if c.invited.len() >= crate::channels::MAX_LIST {
                        c.invited.remove(0);
                    }
                    c.invited.push(target.id);
                }
                Ok(())
            })
        });
        let target_nick = target.nick();
        match outcome {
            // A channel nobody of IRC is in: the invitation only tells.
            None | Some(Ok(())) => {
                self.send(self.reply(RPL_INVITING).arg(&target_nick).arg(channel).end());
                target.send(self.line_from_me(target.caps(), "INVITE").arg(&target_nick).arg(channel).end());
            }
            Some(Err((ERR_USERONCHANNEL, text))) => self.send(self.reply(ERR_USERONCHANNEL).arg(&target_nick).arg(channel).trailing(text)),
            Some(Err((numeric, text))) => self.send(self.reply(numeric).arg(channel).trailing(text)),
        }
    }

    fn mode(&self, params: &[&str]) {
        let target = params[0];
        if !target.starts_with('#') {
            return self.user_mode(target, params.get(1).copied());
        }
        let room = room_of(target).ok().filter(|r| self.irc.channels.with(r, |_| ()).is_some());
        let Some(room) = room else {
            return self.send(self.reply(ERR_NOSUCHCHANNEL).arg(target).trailing("No such channel"));
        };
        let channel = channel_of(&room);
        let Some(changes) = params.get(1).filter(|c| !c.is_empty()) else {
            let member = self.joined.iter().any(|j| **j == *room);
            let (modes, created) = self.irc.channels.with(&room, |c| (c.modes.shown(member), c.created)).unwrap_or((Vec::new(), std::time::UNIX_EPOCH));
            let mut line = self.reply(RPL_CHANNELMODEIS).arg(&channel);
            for piece in &modes {
                line = line.arg(piece);
            }
            let created = created.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            return self.send(line.end() + &self.reply(RPL_CREATIONTIME).arg(&channel).arg(&created.to_string()).end());
        };
        if let flag @ ("b" | "e" | "I") = changes.trim_start_matches(['+', '-'])
            && params.len() == 2
        {
            return self.mask_list(&room, &channel, flag);
        }
        self.change_modes(&room, &channel, changes, &params[2..]);
    }

    /// `OPER <name> <password>`: an operator of `--irc-operators` (`+o`).
    /// A wrong password counts as a failed login of the client's address.
    fn oper(&mut self, name: &str, password: &str) {
        if !self.irc.auth_failures.allows(self.address) {
            self.irc.context.metrics.refused("irc", "auth_failures");
            return self.send(self.reply(ERR_PASSWDMISMATCH).trailing("Password incorrect"));
        }
        let Some((_, right)) = self.irc.settings.operators.iter().find(|(n, _)| n == name) else {
            self.irc.auth_failures.admit(self.address);
            return self.send(self.reply(ERR_NOOPERHOST).trailing("No operator block for your name"));
        };
        if !bool::from(subtle::ConstantTimeEq::ct_eq(right.as_bytes(), password.as_bytes())) {
            self.irc.auth_failures.admit(self.address);
            return self.send(self.reply(ERR_PASSWDMISMATCH).trailing("Password incorrect"));
        }
        let newly = !std::mem::replace(&mut self.public.state.lock().oper, true);
        let mut lines = self.reply(RPL_YOUREOPER).trailing("You are now an IRC operator");
        if newly {
            lines.push_str(&Line::new(Some(&self.source()), "MODE").arg(&self.nick()).arg("+o").end());
        }
        self.send(lines);
    }

    fn is_oper(&self) -> bool {
        self.public.state.lock().oper
    }

    fn no_privileges(&self) {
        self.send(self.reply(ERR_NOPRIVILEGES).trailing("Permission Denied- You're not an IRC operator"));
    }

    /// `KILL <nick> :<comment>` from an operator: the IRC client of that
    /// nickname on this server is closed, its channels told why.
    fn kill(&mut self, nick: &str, comment: &str) {
        if !self.is_oper() {
            return self.no_privileges();
        }
        let Some(target) = self.find(nick) else {
            return self.send(self.reply(ERR_NOSUCHNICK).arg(nick).trailing("No such nick/channel"));
        };
        let comment = if comment.is_empty() { "no reason given" } else { truncated(comment) };
        target.outbox.close(hub::Close::new(1008, format!("Killed ({} ({comment}))", self.nick())));
    }

    /// `WALLOPS :<text>` from an operator, to every client of this server
    /// with user mode `+w`.
    fn wallops(&self, text: &str) {
        if !self.is_oper() {
            return self.no_privileges();
        }
        for client in self.irc.nicks.all() {
            if client.state.lock().wallops {
                client.send(self.line_from_me(client.caps(), "WALLOPS").trailing(truncated(text)));
            }
        }
    }

    /// `KICK #channel nick[,nick…] [:comment]`, or channels and nicknames
    /// paired one to one; at most [`MAX_KICKS`] at once, the rest dropped.
    fn kick_all(&mut self, channels: &str, nicks: &str, comment: Option<&str>) {
        let channels: Vec<&str> = channels.split(',').filter(|c| !c.is_empty()).collect();
        let nicks: Vec<&str> = nicks.split(',').filter(|n| !n.is_empty()).take(MAX_KICKS).collect();
        let pairs: Vec<(&str, &str)> = match channels[..] {
            [channel] => nicks.iter().map(|n| (channel, *n)).collect(),
            _ if channels.len() == nicks.len() => channels.into_iter().zip(nicks).collect(),
            _ => return self.send(self.reply(ERR_NEEDMOREPARAMS).arg("KICK").trailing("Not enough parameters")),
        };
        for (channel, nick) in pairs {
            self.kick(channel, nick, comment);
        }
    }

    /// An operator takes an IRC member of this node out of a channel: the
    /// room is told (`RoomEvent::Leave` with `by`), and the member, told
    /// too, leaves it as it renders the event (`Client::render`). Members
    /// of other protocols are moderated in their own (XMPP's kick).
    fn kick(&mut self, channel: &str, nick: &str, comment: Option<&str>) {
        let room = room_of(channel).ok().filter(|r| self.irc.channels.with(r, |_| ()).is_some());
        let Some(room) = room else {
            return self.send(self.reply(ERR_NOSUCHCHANNEL).arg(channel).trailing("No such channel"));
        };
        let channel = channel_of(&room);
        let (Some(room), Some(me)) = (self.joined.iter().find(|j| ***j == *room).cloned(), self.name.clone()) else {
            return self.send(self.reply(ERR_NOTONCHANNEL).arg(&channel).trailing("You're not on that channel"));
        };
        let found = self.irc.channels.with(&room, |c| {
            let op = c.members.iter().any(|m| m.client.id == self.public.id && m.op);
            (op, c.members.iter().find(|m| m.client.nick().eq_ignore_ascii_case(nick)).map(|m| m.client.nick()))
        });
        let Some((true, target)) = found else {
            return self.send(self.reply(ERR_CHANOPRIVSNEEDED).arg(&channel).trailing("You're not channel operator"));
        };
        let Some(name) = target.and_then(|t| name_of(&t).ok()) else {
            let elsewhere = name_of(nick).is_ok_and(|n| {
                let key = Nickname::parse(&n).map(|n| n.key);
                self.irc.rooms.as_ref().is_some_and(|r| r.names(&room, usize::MAX).iter().any(|m| Nickname::parse(m).map(|m| m.key) == key))
            });
            let text = if elsewhere { "They are in the channel through another protocol or server: not kicked" } else { "They aren't on that channel" };
            return self.send(self.reply(ERR_USERNOTINCHANNEL).arg(nick).arg(&channel).trailing(text));
        };
        let reason = comment.map_or_else(|| self.nick(), |c| truncated(c).to_owned());
        self.publish(&room, RoomEvent::Leave { name: name.into(), reason: Some(reason.into()), quit: false, by: Some(me.shown.clone()), new_name: None });
    }

    /// A channel's bans (`MODE #channel +b`), exceptions (`+e`) or
    /// invite exceptions (`+I`), to anyone.
    fn mask_list(&self, room: &str, channel: &str, flag: &str) {
        let (numeric, end, text) = match flag {
            "b" => (RPL_BANLIST, RPL_ENDOFBANLIST, "End of channel ban list"),
            "e" => (RPL_EXCEPTLIST, RPL_ENDOFEXCEPTLIST, "End of channel exception list"),
            _ => (RPL_INVEXLIST, RPL_ENDOFINVEXLIST, "End of channel invite exception list"),
        };
        let flag = flag.chars().next().unwrap_or('b');
        let listed = self.irc.channels.with(room, |c| c.modes.list_mut(flag).map(|l| l.clone())).flatten().unwrap_or_default();
        let mut lines = String::new();
        for l in &listed {
            lines.push_str(&self.reply(numeric).arg(channel).arg(&l.mask).arg(&l.by).arg(&l.at.to_string()).end());
        }
        self.send(lines + &self.reply(end).arg(channel).trailing(text));
    }

    /// Applies `MODE #channel <changes> <args>` from an operator, and tells
    /// the channel's IRC members what changed.
    fn change_modes(&self, room: &str, channel: &str, changes: &str, args: &[&str]) {
        let mut errors = Vec::new();
        let source = self.source();
        let outcome = self.irc.channels.with(room, |c| {
            if !c.members.iter().any(|m| m.client.id == self.public.id && m.op) {
                return None;
            }
            let mut args = args.iter();
            let (mut on, mut applied, mut applied_args) = (true, ModeChanges::default(), Vec::new());
            for flag in changes.chars() {
                match flag {
                    '+' => on = true,
                    '-' => on = false,
                    'n' | 't' | 'm' | 'i' | 's' | 'C' => {
                        let field = match flag {
                            'C' => &mut c.modes.no_ctcp,
                            'n' => &mut c.modes.no_outside,
                            't' => &mut c.modes.topic_ops,
                            'i' => &mut c.modes.invite_only,
                            's' => &mut c.modes.secret,
                            _ => &mut c.modes.moderated,
                        };
                        if *field != on {
                            *field = on;
                            applied.push(on, flag);
                        }
                    }
                    'k' => {
                        // Both ways take a parameter; only setting reads it.
                        let given = args.next().copied();
                        let key = given.filter(|_| on);
                        if on && key.is_none_or(|k| k.trim().is_empty() || k.starts_with(':') || k.contains([',', ' '])) {
                            if given.is_some() {
                                errors.push(self.reply(ERR_INVALIDKEY).arg(channel).trailing("Key is not well-formed"));
                            }
                            continue;
                        }
                        c.modes.key = key.map(str::to_owned);
                        applied.push(on, 'k');
                        applied_args.push(key.unwrap_or("*").to_owned());
                    }
                    'l' => {
                        let given = if on { args.next().copied() } else { None };
                        let limit = given.and_then(|l| l.parse::<usize>().ok()).filter(|&l| l > 0);
                        if on && limit.is_none() {
                            if let Some(given) = given {
                                let shown = if given.is_empty() { "*" } else { given };
                                errors.push(self.reply(ERR_INVALIDMODEPARAM).arg(channel).arg("l").arg(shown).trailing("Invalid limit"));
                            }
                            continue;
                        }
                        c.modes.limit = limit;
                        applied.push(on, 'l');
                        if let Some(limit) = limit {
                            applied_args.push(limit.to_string());
                        }
                    }
                    'o' | 'v' => {
                        let Some(nick) = args.next() else { continue };
                        let Some(member) = c.members.iter_mut().find(|m| m.client.nick().eq_ignore_ascii_case(nick)) else {
                            errors.push(match self.find(nick) {
                                Some(_) => self.reply(ERR_USERNOTINCHANNEL).arg(nick).arg(channel).trailing("They aren't on that channel"),
                                None => self.reply(ERR_NOSUCHNICK).arg(nick).trailing("No such nick/channel"),
                            });
                            continue;
                        };
                        if flag == 'o' { member.op = on } else { member.voice = on }
                        applied.push(on, flag);
                        applied_args.push(member.client.nick().to_string());
                    }
                    'b' | 'e' | 'I' => {
                        let Some(mask) = args.next().map(|m| full_mask(m)).filter(|m| !m.contains(' ') && !m.starts_with(':')) else { continue };
                        let Some(list) = c.modes.list_mut(flag) else { continue };
                        match (on, list.iter().position(|l| l.mask.eq_ignore_ascii_case(&mask))) {
                            (true, None) if list.len() >= crate::channels::MAX_LIST => {
                                errors.push(self.reply(ERR_BANLISTFULL).arg(channel).arg(&flag.to_string()).trailing("Channel list is full"));
                                continue;
                            }
                            (true, None) => {
                                let at = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                                list.push(crate::channels::Listed { mask: mask.clone(), by: source.clone(), at });
                            }
                            (false, Some(at)) => {
                                list.remove(at);
                            }
                            _ => continue,
                        }
                        applied.push(on, flag);
                        applied_args.push(mask);
                    }
                    other => errors.push(self.reply(ERR_UNKNOWNMODE).arg(&other.to_string()).trailing("is unknown mode char to me")),
                }
            }
            Some((applied.text, applied_args, c.members.clone()))
        });
        errors.into_iter().for_each(|e| self.send(e));
        match outcome.flatten() {
            None => self.send(self.reply(ERR_CHANOPRIVSNEEDED).arg(channel).trailing("You're not channel operator")),
            Some((applied, _, _)) if applied.is_empty() => {}
            Some((applied, applied_args, members)) => {
                for m in &members {
                    let mut line = self.line_from_me(m.client.caps(), "MODE").arg(channel).arg(&applied);
                    for arg in &applied_args {
                        line = line.arg(arg);
                    }
                    m.client.send(line.end());
                }
            }
        }
    }

    fn user_mode(&self, target: &str, changes: Option<&str>) {
        match self.find(target) {
            Some(c) if c.id == self.public.id => {}
            Some(_) => return self.send(self.reply(ERR_USERSDONTMATCH).arg(target).trailing("Cant change mode for other users")),
            None => return self.send(self.reply(ERR_NOSUCHNICK).arg(target).trailing("No such nick/channel")),
        }
        match changes {
            None => {
                let state = self.public.state.lock();
                let modes: String = std::iter::once('+')
                    .chain([(state.bot, 'B'), (state.invisible, 'i'), (state.oper, 'o'), (state.wallops, 'w')].into_iter().filter(|(on, _)| *on).map(|(_, flag)| flag))
                    .collect();
                drop(state);
                self.send(self.reply(RPL_UMODEIS).arg(&modes).end());
            }
            Some(changes) if changes.chars().all(|c| matches!(c, '+' | '-' | 'B' | 'i' | 'o' | 'w')) => {
                // What changed, as the MODE line says it; `+o` only comes of OPER.
                let (mut on, mut applied) = (true, ModeChanges::default());
                let mut state = self.public.state.lock();
                for c in changes.chars() {
                    let field = match c {
                        '+' | '-' => {
                            on = c == '+';
                            continue;
                        }
                        'B' => &mut state.bot,
                        'i' => &mut state.invisible,
                        'w' => &mut state.wallops,
                        _ if on => continue,
                        _ => &mut state.oper,
                    };
                    if std::mem::replace(field, on) != on {
                        applied.push(on, c);
                    }
                }
                drop(state);
                if !applied.text.is_empty() {
                    self.send(Line::new(Some(&self.source()), "MODE").arg(&self.nick()).arg(&applied.text).end());
                }
            }
            Some(_) => self.send(self.reply(ERR_UMODEUNKNOWNFLAG).trailing("Unknown MODE flag")),
        }
    }

    fn away(&self, text: Option<&str>) {
        let away = text.map(|t| Arc::<str>::from(truncated(t)));
        self.public.state.lock().set_away(away.clone());
        self.tell_sharing(Cap::AwayNotify, |caps| match &away {
            Some(text) => self.line_from_me(caps, "AWAY").trailing(text),
            None => self.line_from_me(caps, "AWAY").end(),
        });
        self.send(match away {
            Some(_) => self.reply(RPL_NOWAWAY).trailing("You have been marked as being away"),
            None => self.reply(RPL_UNAWAY).trailing("You are no longer marked as being away"),
        });
    }

    /// `CHATHISTORY <subcommand> <channel> <references…> <limit>`: a
    /// channel's messages read back from its room's archive (see
    /// `chathistory`), as a `chathistory` batch; only of a channel the
    /// client is in. Of a nickname: the private messages of the client's
    /// account (`private_history`).
    async fn chathistory(&mut self, params: &[&str]) {
        let server = self.server().to_owned();
        let fail = |code: &str, subcommand: &str, target: Option<&str>, why: &str| {
            let line = Line::new(Some(&server), "FAIL").arg("CHATHISTORY").arg(code).arg(subcommand);
            match target {
                Some(target) => line.arg(target).trailing(why),
                None => line.trailing(why),
            }
        };
        let (Some(subcommand), Some(target)) = (params.first(), params.get(1)) else {
            return self.send(fail("NEED_MORE_PARAMS", params.first().copied().unwrap_or("*"), None, "Insufficient parameters"));
        };
        if self.irc.archive.is_none() && self.irc.private.is_none() {
            return self.send(fail("MESSAGE_ERROR", subcommand, Some(target), "Messages are not archived here"));
        }
        if subcommand.eq_ignore_ascii_case("TARGETS") {
            return match chathistory::targets(&params[1..]) {
                Ok((between, limit, backwards)) => self.chathistory_targets(between, limit, backwards).await,
                Err(refused) => self.send(fail(refused.code, subcommand, None, refused.why)),
            };
        }
        let (query, limit) = match chathistory::Query::parse(subcommand, &params[2..]) {
            Ok(parsed) => parsed,
            Err(refused) => return self.send(fail(refused.code, subcommand, None, refused.why)),
        };
        if !target.starts_with('#') {
            return match self.private_history(target, &query, limit).await {
                Ok(lines) => self.send(lines),
                Err((code, why)) => self.send(fail(code, subcommand, Some(target), why)),
            };
        }
        let Some((archive, prefix)) = self.irc.archive.clone() else {
            return self.send(fail("MESSAGE_ERROR", subcommand, Some(target), "Channels' messages are not archived here"));
        };
        let Some(room) = room_of(target).ok().and_then(|r| self.joined.iter().find(|j| ***j == *r).cloned()) else {
            return self.send(fail("INVALID_TARGET", subcommand, Some(target), "Only the history of a channel you are in is kept"));
        };
        let name = base::rooms::ArchivedRooms::archive_of(&prefix, &room);
        let Ok(entries) = self.read_history(&archive, &name, None, &query, limit).await else {
            return self.send(fail("MESSAGE_ERROR", subcommand, Some(target), "The history cannot be read now"));
        };
        let kept: Vec<Payload> = entries.iter().map(|e| base::rooms::ArchivedRooms::message(&room, e)).collect();
        let batch = self.next_batch("c");
        // In a batch to a client that asked for `batch` (as the
        // specification's clients do), else as bare lines.
        self.send(history(self.server(), self.caps, &channel_of(&room), &batch, &kept));
    }

    /// Reads `query`'s messages, at most `limit`, from the archive
    /// `name` (only those exchanged `with` one party, if given), oldest
    /// first. What was published before the command is in the answer,
    /// unless the writer is [`base::rooms::HISTORY_WAIT`] behind. A
    /// failure is logged and counted.
    async fn read_history(&self, archive: &base::archive::Archive, name: &str, with: Option<&str>, query: &chathistory::Query, limit: usize) -> Result<Vec<store::Entry>, ()> {
        let _ = tokio::time::timeout(base::rooms::HISTORY_WAIT, archive.flush()).await;
        let mut pages = Vec::new();
        for (mut filter, cursor, max) in query.reads(limit) {
            filter.with = with.map(str::to_owned);
            match archive.page(name, &filter, &cursor, max).await {
                // A message named that the archive has none of: nothing.
                Ok(page) => pages.push(page.map(|p| p.entries).unwrap_or_default()),
                Err(e) => {
                    tracing::warn!("CHATHISTORY could not read the archive {name:?}: {e}");
                    self.irc.context.metrics.store_failed("archive");
                    return Err(());
                }
            }
        }
        Ok(match query {
            chathistory::Query::Around(_) => chathistory::around(pages, limit),
            _ => pages.concat(),
        })
    }

    /// `CHATHISTORY <subcommand> <nickname> …`: the private messages this
    /// client's account exchanged with `target` (see `private`), as a
    /// `chathistory` batch naming `target` as given; or why not, as a
    /// `FAIL`'s code and text. `target` is the client of that nickname
    /// here, else the account of that name.
    async fn private_history(&mut self, target: &str, query: &chathistory::Query, limit: usize) -> Result<String, (&'static str, &'static str)> {
        let Some(private) = self.irc.private.clone() else { return Err(("MESSAGE_ERROR", "Private messages are not archived here")) };
        let Some(account) = self.account() else { return Err(("INVALID_TARGET", "Private messages are kept for accounts only")) };
        let partner = match self.find_keyed(target) {
            Some((them, key)) => self.private_parties(&them, &key, &them.nick()).map(|(_, _, them)| them.jid),
            None => base::accounts::account_name(target).map(|name| private.archive_of(&name)),
        };
        let Some(partner) = partner else { return Err(("INVALID_TARGET", "No such nick")) };
        let entries = self.read_history(&private.archive, &private.archive_of(&account), Some(&partner), query, limit).await;
        let entries = entries.map_err(|()| ("MESSAGE_ERROR", "The history cannot be read now"))?;
        let batch = self.next_batch("c");
        let (server, caps) = (self.server(), self.caps);
        Ok(history_batch(server, caps, target, &batch, |batch, out| {
            for entry in &entries {
                let Some(kept) = private::read(entry) else { continue };
                let by = By { account: kept.account.as_deref(), bot: false };
                let tags = Tags::of(caps).text(base::archive::time(entry.at), Some(&entry.id), by, batch, None);
                out.push_str(&render::said(&tags, &render::source(&kept.from, server), &kept.to, "PRIVMSG", &kept.text, &[], None));
            }
        }))
    }

    /// `CHATHISTORY TARGETS`: the channels this client is in and the
    /// nicknames its account exchanged private messages with whose newest
    /// message came `between` two times, each with that time, at most
    /// `limit` counted from the first time given (the newest if it was the
    /// later, `backwards`), the longest quiet first, as a
    /// `draft/chathistory-targets` batch. An archive that cannot be read
    /// now is left out (logged and counted).
    async fn chathistory_targets(&mut self, between: store::Filter, limit: usize, backwards: bool) {
        let mut newest: Vec<(i64, String)> = Vec::new();
        // Newest first from the window's start: a target whose newest
        // message is past the window is not in it.
        let since = store::Filter { start: between.start, ..store::Filter::default() };
        let within = |at: i64| between.end.is_none_or(|end| at <= end);
        // One writer serves both archives where both are kept: it is waited
        // for once.
        let rooms = self.irc.archive.as_ref().map(|(archive, _)| archive);
        let accounts = self.irc.private.as_ref().map(|p| &p.archive).filter(|a| !rooms.is_some_and(|r| Arc::ptr_eq(r, a)));
        for archive in rooms.into_iter().chain(accounts) {
            let _ = tokio::time::timeout(base::rooms::HISTORY_WAIT, archive.flush()).await;
        }
        if let Some((archive, prefix)) = &self.irc.archive {
            for room in &self.joined {
                let name = base::rooms::ArchivedRooms::archive_of(prefix, room);
                match archive.page(&name, &since, &store::Cursor::Before(None), 1).await {
                    Ok(page) => newest.extend(page.and_then(|p| p.entries.into_iter().next()).filter(|e| within(e.at)).map(|e| (e.at, channel_of(room)))),
                    Err(e) => {
                        tracing::warn!("CHATHISTORY TARGETS could not read the archive of {room:?}: {e}");
                        self.irc.context.metrics.store_failed("archive");
                    }
                }
            }
        }
        if let (Some(private), Some(account)) = (&self.irc.private, self.account()) {
            let name = private.archive_of(&account);
            match private.archive.page(&name, &since, &store::Cursor::Before(None), private::TARGETS_READ).await {
                Ok(page) => {
                    let mut seen = HashSet::new();
                    for entry in page.map(|p| p.entries).unwrap_or_default().iter().rev() {
                        if seen.insert(entry.with.clone())
                            && within(entry.at)
                            && let Some(kept) = private::read(entry)
                        {
                            newest.push((entry.at, kept.partner().to_owned()));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("CHATHISTORY TARGETS could not read the archive {name:?}: {e}");
                    self.irc.context.metrics.store_failed("archive");
                }
            }
        }
        newest.sort();
        let skip = if backwards { newest.len().saturating_sub(limit) } else { 0 };
        let server = self.server().to_owned();
        let mut lines = String::new();
        for (at, channel) in newest.iter().skip(skip).take(limit) {
            let time = humantime::format_rfc3339_millis(base::archive::time(*at)).to_string();
            lines.push_str(&Line::new(Some(&server), "CHATHISTORY").arg("TARGETS").arg(channel).arg(&time).end());
        }
        if self.caps.has(Cap::Batch) {
            let batch = self.next_batch("t");
            let open = Line::new(Some(&server), "BATCH").arg(&format!("+{batch}")).arg("draft/chathistory-targets").end();
            lines = open + &labeled::inside(&lines, &batch) + &labeled::end(&server, &batch);
        }
        self.send(lines);
    }

    /// `HELP [subject]`: a line on a command, or the index of them.
    fn help(&self, subject: &str) {
        let topic = if subject.is_empty() { "index" } else { subject };
        let Some(lines) = crate::help::lines(subject) else {
            return self.send(self.reply(ERR_HELPNOTFOUND).arg(topic).trailing("No help available on this topic"));
        };
        let mut out = String::new();
        for (n, line) in lines.iter().enumerate() {
            out.push_str(&self.reply(if n == 0 { RPL_HELPSTART } else { RPL_HELPTXT }).arg(topic).trailing(line));
        }
        out.push_str(&self.reply(RPL_ENDOFHELP).arg(topic).trailing("End of /HELP"));
        self.send(out);
    }

    /// Sends `line` (made for each recipient's capabilities) to each IRC
    /// member of a channel it shares that asked for `cap`, and to each
    /// client watching its nickname that asked for `cap` and
    /// extended-monitor, once.
    fn tell_sharing(&self, cap: Cap, line: impl Fn(Caps) -> String) {
        let mut told = HashSet::new();
        let mut tell = |client: &Arc<Public>| {
            if client.id != self.public.id && client.has(cap) && told.insert(client.id) {
                client.send(line(client.caps()));
            }
        };
        for room in &self.joined {
            for m in self.irc.channels.members(room) {
                tell(&m.client);
            }
        }
        if let Some(name) = &self.name {
            for watcher in self.irc.monitors.watchers(&name.key) {
                if watcher.has(Cap::ExtendedMonitor) {
                    tell(&watcher);
                }
            }
        }
    }

    /// `SETNAME :real name` (IRCv3 setname): its new real name, told as
    /// `SETNAME` to itself and to the members of channels it shares, each
    /// if it asked for `setname`; an empty one, or one longer than
    /// [`TEXTLEN`], is refused with `FAIL SETNAME INVALID_REALNAME`.
    fn setname(&self, realname: &str) {
        if realname.is_empty() || realname.len() > TEXTLEN {
            let why = format!("A real name is 1 to {TEXTLEN} bytes");
            return self.send(Line::new(Some(self.server()), "FAIL").arg("SETNAME").arg("INVALID_REALNAME").trailing(&why));
        }
        {
            let mut state = self.public.state.lock();
            state.names = state.names.renamed(realname);
        }
        let line = |caps| self.line_from_me(caps, "SETNAME").trailing(realname);
        self.tell_sharing(Cap::Setname, line);
        if self.caps.has(Cap::Setname) {
            self.send(line(self.caps));
        }
    }

    fn ison(&self, nicks: &[&str]) {
        let on: Vec<String> = nicks.iter().flat_map(|n| n.split(' ')).filter_map(|n| self.find(n)).map(|c| c.nick().to_string()).collect();
        self.send(self.reply(RPL_ISON).trailing(&on.join(" ")));
    }

    fn userhost(&self, nicks: &[&str]) {
        let found: Vec<String> = nicks
            .iter()
            .take(5)
            .filter_map(|n| self.find(n))
            .map(|c| {
                let state = c.state.lock();
                let away = if state.away().is_some() { '-' } else { '+' };
                let oper = if state.oper { "*" } else { "" };
                format!("{}{oper}={away}{}@{}", state.nick, state.names.user(), self.server())
            })
            .collect();
        self.send(self.reply(RPL_USERHOST).trailing(&found.join(" ")));
    }

    /// `JOIN` as IRCv3 extended-join has it, with `tags`: `name` joined
    /// `room` logged in to `account` (`*` for none), and its real name: an
    /// IRC user's of this node in the channel, as `WHO` shows it, and any
    /// other member's name. Made for each client that asked, not shared:
    /// joins are few beside messages, and a payload keeps a form for each
    /// set of tags.
    fn extended_join(&self, tags: &str, room: &str, name: &str, account: Option<&str>) -> String {
        let nick = nick_of(name);
        let channel = channel_of(room);
        // The IRC user of this node by that name, if it is in the channel
        // (a member of another protocol may have the same name elsewhere).
        let member = Nickname::parse(name).ok().and_then(|n| self.irc.nicks.find(&n.key));
        let names = member.and_then(|m| {
            let state = m.state.lock();
            state.channels.contains(&channel).then(|| state.names.clone())
        });
        Line::tagged(tags, Some(&render::source(&nick, self.server())), "JOIN")
            .arg(&channel)
            .arg(account.unwrap_or("*"))
            .trailing(names.as_ref().map_or(name, Names::realname))
    }

    /// A room event's lines for this client, or `None` if it is not to get
    /// it (its own join it was told of, its own message without
    /// `echo-message`, a quit it was already told of in another channel).
    pub fn render(&mut self, payload: &Payload) -> Option<bytes::Bytes> {
        if let Some((room, event)) = payload.as_event() {
            let echo = match event {
                RoomEvent::Join { name, .. } => Some(Echo::Join(name.clone())),
                RoomEvent::Leave { name, by: Some(_), .. } => {
                    if self.name.as_ref().is_some_and(|n| n.shown == *name) {
                        self.kicked(room);
                    }
                    None
                }
                RoomEvent::Leave { name, .. } => Some(Echo::Leave(name.clone())),
                RoomEvent::Message { name, .. } | RoomEvent::Notice { name, .. } | RoomEvent::Tags { name, .. } => {
                    let own = self.name.as_ref().is_some_and(|n| n.shown == *name);
                    if own && !self.caps.has(Cap::EchoMessage) {
                        return None;
                    }
                    None
                }
                RoomEvent::Announcement { .. } => None,
                RoomEvent::Topic { .. } => None,
            };
            if let Some(echo) = echo
                && let Some(under_way) = self.under_way.as_mut()
                && let Some(at) = under_way.awaited.iter().position(|(r, e)| r == room && *e == echo)
            {
                under_way.awaited.remove(at);
                self.settle();
                return None;
            }
            // IRC tells a quit or a change of name once, whatever channels are shared.
            let told = match event {
                RoomEvent::Join { name, .. } => {
                    if let Some(told) = self.told.as_mut() {
                        told.retain(|t| !matches!(t, Told::Quit(quit) if quit == name));
                    }
                    None
                }
                RoomEvent::Leave { name, quit: true, .. } => Some(Told::Quit(name.clone())),
                RoomEvent::Leave { name, new_name: Some(new), .. } => {
                    // The new name may later change back to this one.
                    if let Some(told) = self.told.as_mut() {
                        told.retain(|t| !matches!(t, Told::Rename(old, _) if old == new));
                    }
                    Some(Told::Rename(name.clone(), new.clone()))
                }
                _ => None,
            };
            if let Some(told) = told {
                let kept = self.told.get_or_insert_default();
                if kept.contains(&told) {
                    return None;
                }
                if kept.len() == TOLD_KEPT {
                    kept.remove(0);
                }
                kept.push(told);
            }
        }
        if self.caps.has(Cap::ExtendedJoin)
            && let Some((room, RoomEvent::Join { name, old_name: None })) = payload.as_event()
        {
            let tags = render::payload_tags(Tags::of(self.caps), payload, None);
            return Some(bytes::Bytes::from(self.extended_join(&tags, room, name, payload.account())));
        }
        let lines = render::lines(payload, self.server(), Tags::of(self.caps))?;
        // Its own message's echo, awaited to carry a label.
        if let Some((room, event)) = payload.as_event()
            && self.under_way.as_ref().is_some_and(|u| !u.echoes.is_empty())
            && self.name.as_ref().is_some_and(|n| event.name() == Some(&n.shown))
        {
            let command = match event {
                RoomEvent::Message { .. } => "PRIVMSG",
                RoomEvent::Notice { .. } => "NOTICE",
                RoomEvent::Tags { .. } => "TAGMSG",
                _ => return Some(lines),
            };
            let under_way = self.under_way();
            if let Some(at) = under_way.echoes.iter().position(|(r, c, _)| r == room && *c == command) {
                let (_, _, label) = under_way.echoes.remove(at);
                self.settle();
                let server = self.irc.server_name().to_owned();
                let answer = labeled::answer(&String::from_utf8_lossy(&lines), &label, &server, || self.next_batch("l"));
                return Some(bytes::Bytes::from(answer));
            }
        }
        Some(lines)
    }
}

/// How `353` lines show a channel's names.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// A secret channel (`@` rather than `=`).
    secret: bool,
    /// `nick!user@host` rather than `nick` (`userhost-in-names`).
    userhost: bool,
}

/// `353` lines for `names`, as many as fit in a line each, then `366`.
fn names_lines(server: &str, nick: &str, channel: &str, names: &[Arc<str>], prefixes: &[(Arc<str>, &str)], shape: Shape) -> String {
    name_replies(server, nick, channel, names, prefixes, shape) + &Line::new(Some(server), RPL_ENDOFNAMES).arg(nick).arg(channel).trailing("End of /NAMES list")
}

/// `channel`'s `353` lines, without the `366` that ends them.
fn name_replies(server: &str, nick: &str, channel: &str, names: &[Arc<str>], prefixes: &[(Arc<str>, &str)], shape: Shape) -> String {
    let head = Line::new(Some(server), RPL_NAMREPLY).arg(nick).arg(if shape.secret { "@" } else { "=" }).arg(channel);
    let room = MAX_LINE.saturating_sub(head.clone().end().len() + 2);
    let mut out = String::new();
    let mut batch = String::new();
    for name in names {
        let nick = nick_of(name);
        let prefix = prefixes.iter().find(|(n, _)| **n == *nick).map_or("", |(_, p)| p);
        let shown = if shape.userhost { render::source(&nick, server) } else { nick.into_owned() };
        if !batch.is_empty() && batch.len() + 1 + prefix.len() + shown.len() > room {
            out.push_str(&head.clone().trailing(&batch));
            batch.clear();
        }
        if !batch.is_empty() {
            batch.push(' ');
        }
        batch.push_str(prefix);
        batch.push_str(&shown);
    }
    if !batch.is_empty() {
        out.push_str(&head.trailing(&batch));
    }
    out
}

/// Mode changes as a `MODE` line writes them (`+nt-k`): a sign only where
/// it changes.
#[derive(Default)]
struct ModeChanges {
    text: String,
    last: Option<bool>,
}

impl ModeChanges {
    fn push(&mut self, on: bool, flag: char) {
        if self.last != Some(on) {
            self.text.push(if on { '+' } else { '-' });
            self.last = Some(on);
        }
        self.text.push(flag);
    }
}

/// A message a client sent: `PRIVMSG`, `NOTICE` or `TAGMSG`, its text
/// (none for `TAGMSG`) and the client-only tags it gave.
struct Said<'a> {
    command: &'a str,
    text: &'a str,
    client_tags: Option<String>,
    /// Where its sender cut lines of it without a line break (a multiline
    /// message's; see `hub::Payload::cuts`).
    cuts: &'a [u32],
}

impl Said<'_> {
    /// Its line from `source` to `to` for a recipient with the
    /// capabilities given, under one new `msgid` for all of them.
    fn line_maker<'s>(&'s self, client: &Client, source: &'s str, to: &'s str, (now, id): (SystemTime, String)) -> impl Fn(Caps) -> String + 's {
        let batch = format!("m{id}");
        let (account, bot) = client.shown_as();
        move |caps: Caps| {
            let tags = Tags::of(caps).text(now, Some(&id), By { account: account.as_deref(), bot }, None, self.client_tags.as_deref());
            match self.command {
                "TAGMSG" => Line::tagged(&tags, Some(source), self.command).arg(to).end(),
                command => render::message_lines(&tags, source, to, command, self.text, self.cuts, Tags::of(caps).multiline().then_some(&batch)),
            }
        }
    }
}

/// The time and `msgid` of a message no archive keeps.
fn new_stamp() -> (SystemTime, String) {
    (SystemTime::now(), render::new_msgid())
}

/// A room's history as a `chathistory` batch (or bare lines to a client
/// without `batch`), each line with its time.
fn history(server: &str, caps: Caps, channel: &str, batch: &str, kept: &[Payload]) -> String {
    history_batch(server, caps, channel, batch, |batch, out| {
        for payload in kept {
            let tags = render::payload_tags(Tags::of(caps), payload, batch);
            if let Some(lines) = render::event_lines(payload, server, &tags, Tags::of(caps).multiline()) {
                out.push_str(&lines);
            }
        }
    })
}

/// A `chathistory` batch of `target` (or bare lines to a client without
/// `batch`): its start, what `lines` writes (given the batch's reference
/// to tag its lines with, if there is a batch), its end.
fn history_batch(server: &str, caps: Caps, target: &str, batch: &str, lines: impl FnOnce(Option<&str>, &mut String)) -> String {
    let batched = caps.has(Cap::Batch);
    let mut out = String::new();
    if batched {
        out.push_str(&Line::new(Some(server), "BATCH").arg(&format!("+{batch}")).arg("chathistory").arg(target).end());
    }
    lines(batched.then_some(batch), &mut out);
    if batched {
        out.push_str(&labeled::end(server, batch));
    }
    out
}

/// What `WHO` shows of a member of another protocol: a room event's
/// `nick!nick@server`, and as its real name its name as other protocols
/// show it (`name`, which its nickname may only stand for: docs/irc.md).
fn other_member(nick: &str, name: &str) -> Shown {
    let mut shown = Shown::default();
    (shown.nick, shown.names) = (Arc::from(nick), Names::new(nick, name));
    shown
}

/// Whether `nick` matches `mask` as IRC reads it: `*` and `?`, without case (ASCII).
fn matches_mask(mask: &str, nick: &str) -> bool {
    wire::mask::matches(mask, nick, wire::mask::Case::AsciiInsensitive)
}

/// `332` and `333` to `nick` for `channel`'s `topic`: its text, and who
/// set it (as IRC names the member) and when.
fn topic_lines(server: &str, nick: &str, channel: &str, topic: &hub::Topic) -> String {
    let at = topic.at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let reply = |numeric| Line::new(Some(server), numeric).arg(nick).arg(channel);
    reply(RPL_TOPIC).trailing(truncated(&topic.text)) + &reply(RPL_TOPICWHOTIME).arg(&nick_of(&topic.by)).arg(&at.to_string()).end()
}

/// At most [`TEXTLEN`] bytes of `text`, cut at a character's edge.
pub(crate) fn truncated(text: &str) -> &str {
    let mut end = text.len().min(TEXTLEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn version() -> String {
    format!("switchboard-{}", env!("CARGO_PKG_VERSION"))
}

/// A ban or exception mask as kept: `nick` is `nick!*@*`, `user@host` is
/// `*!user@host`, `nick!user` is `nick!user@*`.
fn full_mask(mask: &str) -> String {
    match (mask.contains('!'), mask.contains('@')) {
        (true, true) => mask.to_owned(),
        (true, false) => format!("{mask}@*"),
        (false, true) => format!("*!{mask}"),
        (false, false) => format!("{mask}!*@*"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fill_lines_and_end_with_366() {
        let names: Vec<Arc<str>> = (0..100).map(|i| Arc::from(format!("member{i:03}"))).collect();
        let shape = Shape { secret: false, userhost: false };
        let text = names_lines("irc.test", "me", "#big", &names, &[(Arc::from("member000"), "@")], shape);
        let lines: Vec<&str> = text.split_inclusive("\r\n").collect();
        assert!(lines.len() > 2 && lines.iter().all(|l| l.len() <= MAX_LINE));
        assert!(lines[0].starts_with(":irc.test 353 me = #big :@member000 member001 "));
        assert_eq!(*lines.last().unwrap(), ":irc.test 366 me #big :End of /NAMES list\r\n");
        assert_eq!(text.matches("member").count(), 100);
        let secret = names_lines("irc.test", "me", "#s", &names[..1], &[], Shape { secret: true, userhost: true });
        assert!(secret.starts_with(":irc.test 353 me @ #s :member000!member000@irc.test\r\n"));
    }
}
