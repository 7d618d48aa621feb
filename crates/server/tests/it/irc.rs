//! IRC at the byte level: registration and capabilities, every command's
//! replies and error numerics, one room shared with chat and XMPP members,
//! names and text crossing protocols, and every bound (issue 31).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::support::{TestServer, until};
use crate::xmpp::Client as Xmpp;

/// A raw IRC client: lines out, lines in, as bytes.
pub struct Irc {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Irc {
    pub async fn connect(addr: SocketAddr) -> Irc {
        Irc::over(TcpStream::connect(addr).await.expect("IRC listens"))
    }

    fn over(stream: TcpStream) -> Irc {
        let (read, writer) = stream.into_split();
        Irc { reader: BufReader::new(read), writer }
    }

    /// Connects and registers as `nick`, past the welcome.
    pub async fn register(addr: SocketAddr, nick: &str) -> Irc {
        Irc::connect(addr).await.registered(nick).await
    }

    /// Registers as `nick`, past the welcome.
    async fn registered(mut self, nick: &str) -> Irc {
        self.send(&format!("NICK {nick}")).await;
        self.send("USER u 0 * :Real Name").await;
        self.until(" 422 ").await;
        self
    }

    pub async fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\r\n").as_bytes()).await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("the server reads");
    }

    /// The next line, CR LF included; empty once the server has closed.
    pub async fn line(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
            .await
            .expect("a line within 10 s")
            .expect("a readable socket");
        line
    }

    /// Lines up to and including the first that contains `text`.
    pub async fn lines_until(&mut self, text: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self.line().await;
            assert!(!line.is_empty(), "closed before {text:?}; read {lines:?}");
            let done = line.contains(text);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// The first line that contains `text`, skipping those before it.
    pub async fn until(&mut self, text: &str) -> String {
        self.lines_until(text).await.pop().expect("a line")
    }

    /// Joins `channel`, past its names.
    pub async fn join(&mut self, channel: &str) -> Vec<String> {
        self.send(&format!("JOIN {channel}")).await;
        self.lines_until(" 366 ").await
    }
}

#[tokio::test]
async fn registration_is_answered_to_the_byte() {
    let server = TestServer::start().await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("NICK alice").await;
    irc.send("USER a 0 * :Alice A").await;
    let lines = irc.lines_until(" 422 ").await;
    assert_eq!(lines[0], ":localhost 001 alice :Welcome to the Switchboard IRC Network alice!~a@localhost\r\n");
    assert!(lines[1].starts_with(":localhost 002 alice :Your host is localhost, running version switchboard-"));
    assert!(lines[2].starts_with(":localhost 003 alice :This server was created "));
    assert!(lines[3].starts_with(":localhost 004 alice localhost switchboard-") && lines[3].ends_with(" Biow CIbeiklmnostv klov\r\n"));
    let isupport: Vec<&String> = lines.iter().filter(|l| l.contains(" 005 ")).collect();
    for token in [" BOT=B ", " CASEMAPPING=ascii ", " CHANMODES=Ibe,k,l,Cimnst ", " CHANTYPES=# ", " ELIST=MNU ", " EXCEPTS=e ", " INVEX=I ", " MAXLIST=Ibe:100 ", " MONITOR=100 ", " PREFIX=(ov)@+ ", " WHOX "] {
        assert!(isupport.iter().any(|l| l.contains(token)), "{token} in {isupport:?}");
    }
    assert!(isupport.iter().all(|l| l.ends_with(" :are supported by this server\r\n") && l.len() <= 512));
    assert_eq!(lines.last().unwrap(), ":localhost 422 alice :MOTD File is missing\r\n");

    irc.send("PING :token one").await;
    assert_eq!(irc.line().await, ":localhost PONG localhost :token one\r\n");
    irc.send("USER again 0 * :x").await;
    assert_eq!(irc.line().await, ":localhost 462 alice :You may not reregister\r\n");
    irc.send("FROB x").await;
    assert_eq!(irc.line().await, ":localhost 421 alice FROB :Unknown command\r\n");
    irc.send("HELP privmsg").await;
    assert_eq!(irc.line().await, ":localhost 704 alice privmsg :PRIVMSG <target>[,...] :<text>: a message to channels or users, at most 4\r\n");
    assert_eq!(irc.line().await, ":localhost 706 alice privmsg :End of /HELP\r\n");
    irc.send("HELP FROB").await;
    assert_eq!(irc.line().await, ":localhost 524 alice FROB :No help available on this topic\r\n");
    irc.send("HELP").await;
    let index = irc.lines_until(" 706 ").await;
    assert!(index[0].starts_with(":localhost 704 alice index :") && index[1..index.len() - 1].iter().all(|l| l.starts_with(":localhost 705 alice index :")), "{index:?}");
    irc.send("QUIT :bye now").await;
    assert_eq!(irc.line().await, "ERROR :Closing Link: 127.0.0.1 (Quit: bye now)\r\n");
    assert_eq!(irc.line().await, "", "closed");
}

#[tokio::test]
async fn commands_before_registration_and_bad_nicknames_are_refused() {
    let server = TestServer::start().await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("JOIN #lobby").await;
    assert_eq!(irc.line().await, ":localhost 451 * :You have not registered\r\n");
    for none in ["NICK", "NICK :", "WHOIS"] {
        irc.send(none).await;
        assert_eq!(irc.line().await, ":localhost 431 * :No nickname given\r\n", "{none}");
    }
    for bad in ["1abc", "a,b", "#chan", "a\\41", "x!y", &"n".repeat(65)] {
        irc.send(&format!("NICK {bad}")).await;
        assert_eq!(irc.line().await, format!(":localhost 432 * {bad} :Erroneous nickname\r\n"));
    }
    let _bob = Irc::register(server.irc, "bob").await;
    irc.send("NICK BOB").await;
    assert_eq!(irc.line().await, ":localhost 433 * BOB :Nickname is already in use\r\n", "nicknames compare without case");
    irc.send("USER a 0 *").await;
    assert_eq!(irc.line().await, ":localhost 461 * USER :Not enough parameters\r\n");
    // A line with no command, an empty one and one not UTF-8 are ignored.
    irc.send_bytes(b":source\r\n\r\nNICK \xff\r\nNICK carol\r\nUSER c 0 * :C\r\n").await;
    assert_eq!(irc.line().await, ":localhost 001 carol :Welcome to the Switchboard IRC Network carol!~c@localhost\r\n");
}

#[tokio::test]
async fn registration_waits_for_the_end_of_capability_negotiation() {
    let server = TestServer::start().await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("CAP LS 302").await;
    assert_eq!(irc.line().await, ":localhost CAP * LS :account-notify account-tag away-notify batch cap-notify draft/chathistory draft/multiline=max-bytes=4096,max-lines=32 echo-message extended-join extended-monitor labeled-response message-tags multi-prefix server-time setname userhost-in-names\r\n");
    irc.send("NICK dave").await;
    irc.send("USER d 0 * :D").await;
    irc.send("CAP REQ :server-time nonsense").await;
    assert_eq!(irc.line().await, ":localhost CAP dave NAK :server-time nonsense\r\n", "no welcome while negotiating");
    irc.send("CAP REQ :server-time echo-message").await;
    assert_eq!(irc.line().await, ":localhost CAP dave ACK :server-time echo-message\r\n");
    irc.send("CAP LIST").await;
    assert_eq!(irc.line().await, ":localhost CAP dave LIST :echo-message server-time\r\n");
    irc.send("CAP FROB").await;
    assert_eq!(irc.line().await, ":localhost 410 dave FROB :Invalid CAP command\r\n");
    irc.send("CAP END").await;
    assert!(irc.line().await.starts_with(":localhost 001 dave "));
}

#[tokio::test]
async fn an_irc_user_a_chat_member_and_an_xmpp_occupant_share_one_room() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut chat = server.chat_member("Alice Smith", "lobby").await;
    let mut irc = Irc::register(server.irc, "bob").await;
    let joined = irc.join("#Lobby").await;
    assert_eq!(joined[0], ":bob!bob@localhost JOIN #lobby\r\n");
    assert_eq!(joined[1], ":localhost 353 bob = #lobby :Alice\\20Smith @bob\r\n", "the chat member by her IRC nickname; the first IRC member is an operator");
    assert_eq!(joined[2], ":localhost 366 bob #lobby :End of /NAMES list\r\n");
    assert_eq!(chat.recv_json().await, json!({"event": "join", "name": "bob", "room": "lobby"}));

    irc.send("PRIVMSG #lobby :hello from IRC").await;
    assert_eq!(chat.recv_json().await, json!({"name": "bob", "room": "lobby", "message": "hello from IRC"}));
    chat.send(&json!({"message": "hi\r\nQUIT :gotcha"}).to_string()).await;
    assert_eq!(irc.line().await, ":Alice\\20Smith!Alice\\20Smith@localhost PRIVMSG #lobby :hi\r\n", "a line break starts a new message, never a command");
    assert_eq!(irc.line().await, ":Alice\\20Smith!Alice\\20Smith@localhost PRIVMSG #lobby :QUIT :gotcha\r\n");

    let (mut xmpp, _) = Xmpp::login(server.xmpp.unwrap()).await;
    xmpp.send("<presence to='lobby@conference.localhost/carol'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    assert_eq!(irc.line().await, ":carol!carol@localhost JOIN #lobby\r\n");
    loop {
        if xmpp.stanza().await.find("subject", "jabber:client").is_some() {
            break;
        }
    }
    xmpp.send("<message to='lobby@conference.localhost' type='groupchat'><body>/me waves</body></message>").await;
    assert_eq!(irc.line().await, ":carol!carol@localhost PRIVMSG #lobby :\u{1}ACTION waves\u{1}\r\n");
    irc.send("PRIVMSG #lobby :\u{1}ACTION nods\u{1}").await;
    loop {
        let stanza = xmpp.stanza().await;
        if stanza.find("body", "jabber:client").is_some_and(|b| b.text_content() == "/me nods") {
            assert_eq!(stanza.get("from"), Some("lobby@conference.localhost/bob"));
            break;
        }
    }
    // Without echo-message, its own message does not come back: the next
    // line is the answer to a PING.
    irc.send("PING x").await;
    assert_eq!(irc.line().await, ":localhost PONG localhost :x\r\n");

    irc.send("PART #lobby").await;
    assert_eq!(irc.line().await, ":bob!~u@localhost PART #lobby\r\n");
    assert_eq!(chat.recv_json().await["message"], "hi\r\nQUIT :gotcha");
    assert_eq!(chat.recv_json().await, json!({"event": "join", "name": "carol", "room": "lobby"}));
    assert_eq!(chat.recv_json().await["message"], "/me waves");
    assert_eq!(chat.recv_json().await["message"], "/me nods");
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "bob", "room": "lobby"}));
}

/// kim, an XMPP occupant, comes into the lobby after `irc` (ivan and jo)
/// and the chat member `chat` (who saw ivan and jo come): the IRC users see
/// its JOIN, and `chat` the three joins.
async fn kim_joins_the_lobby(server: &TestServer, irc: [&mut Irc; 2], chat: &mut crate::support::Ws) -> Xmpp {
    let (mut kim, _) = Xmpp::login(server.xmpp.unwrap()).await;
    kim.send("<presence to='lobby@conference.localhost/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    for irc in irc {
        assert_eq!(irc.line().await, ":kim!kim@localhost JOIN #lobby\r\n");
    }
    for name in ["ivan", "jo", "kim"] {
        assert_eq!(chat.recv_json().await, json!({"event": "join", "name": name, "room": "lobby"}));
    }
    kim
}

#[tokio::test]
async fn a_change_of_name_is_one_nick_line_on_irc_a_303_on_xmpp_and_a_leave_and_join_naming_each_other_in_the_chat_app() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut chat = server.chat_member("dora", "lobby").await;
    let mut ivan = Irc::register(server.irc, "ivan").await;
    let mut jo = Irc::register(server.irc, "jo").await;
    for channel in ["#lobby", "#den"] {
        ivan.join(channel).await;
        jo.join(channel).await;
        assert_eq!(ivan.line().await, format!(":jo!jo@localhost JOIN {channel}\r\n"));
    }
    let mut kim = kim_joins_the_lobby(&server, [&mut ivan, &mut jo], &mut chat).await;

    // An IRC user's NICK: once to each IRC user, however many channels
    // they share (the next line answers a PING).
    ivan.send("NICK ivan2").await;
    assert_eq!(ivan.line().await, ":ivan!~u@localhost NICK ivan2\r\n");
    jo.send("PING once").await;
    assert_eq!(jo.line().await, ":ivan!ivan@localhost NICK ivan2\r\n");
    assert_eq!(jo.line().await, ":localhost PONG localhost :once\r\n");
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "ivan", "room": "lobby", "new_name": "ivan2"}));
    assert_eq!(chat.recv_json().await, json!({"event": "join", "name": "ivan2", "room": "lobby", "old_name": "ivan"}));
    let left = kim.stanza().await;
    assert_eq!(
        left.to_xml("jabber:client"),
        format!(
            "<presence from=\"lobby@conference.localhost/ivan\" to=\"{}\" type=\"unavailable\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"participant\" nick=\"ivan2\"/><status code=\"303\"/></x></presence>",
            left.get("to").unwrap()
        )
    );
    let back = kim.stanza().await;
    assert_eq!((back.get("from"), back.get("type")), (Some("lobby@conference.localhost/ivan2"), None));

    // An XMPP occupant's nick change: a NICK to IRC users.
    kim.send("<presence to='lobby@conference.localhost/kim2'/>").await;
    for irc in [&mut ivan, &mut jo] {
        assert_eq!(irc.line().await, ":kim!kim@localhost NICK kim2\r\n");
    }
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "kim", "room": "lobby", "new_name": "kim2"}));
    assert_eq!(chat.recv_json().await, json!({"event": "join", "name": "kim2", "room": "lobby", "old_name": "kim"}));

    // Back to the old name: told again.
    ivan.send("NICK ivan").await;
    assert_eq!(ivan.line().await, ":ivan2!~u@localhost NICK ivan\r\n");
    jo.send("PING back").await;
    assert_eq!(jo.line().await, ":ivan2!ivan2@localhost NICK ivan\r\n");
    assert_eq!(jo.line().await, ":localhost PONG localhost :back\r\n");
    jo.send("NAMES #lobby").await;
    assert_eq!(jo.line().await, ":localhost 353 jo = #lobby :dora @ivan jo kim2\r\n");
}

/// A typing notification crosses protocols through the room: IRC's TAGMSG
/// with `+typing` is a chat state to XMPP occupants (XEP-0085) and a tags
/// event in the chat app; an XMPP chat state alone is a TAGMSG to IRC
/// clients that read tags, and nothing to those that do not.
#[tokio::test]
async fn typing_is_a_tagmsg_on_irc_a_chat_state_on_xmpp_and_a_tags_event_in_the_chat_app() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut chat = server.chat_member("dora", "lobby").await;
    let mut ivan = register_with(server.irc, "ivan", "message-tags").await;
    ivan.join("#lobby").await;
    let mut jo = Irc::register(server.irc, "jo").await;
    jo.join("#lobby").await;
    assert_eq!(ivan.line().await, ":jo!jo@localhost JOIN #lobby\r\n");
    let mut kim = kim_joins_the_lobby(&server, [&mut ivan, &mut jo], &mut chat).await;

    ivan.send("@+typing=active;+draft/react=a\\sb TAGMSG #lobby").await;
    let typing = kim.stanza().await;
    assert_eq!(
        typing.to_xml("jabber:client"),
        format!(
            "<message from=\"lobby@conference.localhost/ivan\" to=\"{}\" type=\"groupchat\"><composing xmlns=\"http://jabber.org/protocol/chatstates\"/></message>",
            typing.get("to").unwrap()
        )
    );
    assert_eq!(chat.recv_json().await, json!({"event": "tags", "name": "ivan", "room": "lobby", "tags": {"+typing": "active", "+draft/react": "a b"}}));

    kim.send("<message to='lobby@conference.localhost' type='groupchat'><paused xmlns='http://jabber.org/protocol/chatstates'/></message>").await;
    assert_eq!(kim.stanza().await.find("paused", "http://jabber.org/protocol/chatstates").map(|_| ()), Some(()), "reflected, as every groupchat message");
    let (_, line) = without_msgid(&ivan.line().await);
    assert_eq!(line, "@+typing=paused :kim!kim@localhost TAGMSG #lobby\r\n");
    assert_eq!(chat.recv_json().await, json!({"event": "tags", "name": "kim", "room": "lobby", "tags": {"+typing": "paused"}}));
    // A message ends the typing: it is a message, and only that.
    kim.send("<message to='lobby@conference.localhost' type='groupchat'><body>hi</body><active xmlns='http://jabber.org/protocol/chatstates'/></message>").await;
    assert_eq!(ivan.line().await.split_once(' ').unwrap().1, ":kim!kim@localhost PRIVMSG #lobby :hi\r\n");
    // jo reads no tags: its next line is the message.
    assert_eq!(jo.line().await, ":kim!kim@localhost PRIVMSG #lobby :hi\r\n");
}

#[tokio::test]
async fn the_topic_is_one_for_the_room_in_every_protocol() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut chat = server.chat_member("dora", "lobby").await;
    let mut ivan = Irc::register(server.irc, "ivan").await;
    ivan.join("#lobby").await;
    let mut jo = Irc::register(server.irc, "jo").await;
    jo.join("#lobby").await;
    assert_eq!(ivan.line().await, ":jo!jo@localhost JOIN #lobby\r\n");
    let mut kim = kim_joins_the_lobby(&server, [&mut ivan, &mut jo], &mut chat).await;

    // The channel's operator sets it: a TOPIC line, the occupant's subject
    // (IRC's bold, a control character XML forbids, made U+FFFD), the chat
    // app's topic event.
    ivan.send("TOPIC #lobby :plans & <dates> \u{2}now\u{2}").await;
    assert_eq!(ivan.line().await, ":ivan!ivan@localhost TOPIC #lobby :plans & <dates> \u{2}now\u{2}\r\n");
    assert_eq!(jo.line().await, ":ivan!ivan@localhost TOPIC #lobby :plans & <dates> \u{2}now\u{2}\r\n");
    let subject = kim.stanza().await;
    assert_eq!(
        subject.to_xml("jabber:client"),
        format!(
            "<message from=\"lobby@conference.localhost/ivan\" to=\"{}\" type=\"groupchat\"><subject>plans &amp; &lt;dates&gt; \u{FFFD}now\u{FFFD}</subject></message>",
            subject.get("to").unwrap()
        )
    );
    assert_eq!(chat.recv_json().await, json!({"event": "topic", "name": "ivan", "room": "lobby", "topic": "plans & <dates> \u{2}now\u{2}"}));

    // The occupant changes it (a participant may, by default): each sees it
    // from kim; the IRC side keeps it as the channel's topic.
    kim.send("<message to='lobby@conference.localhost' type='groupchat'><subject>new plans</subject></message>").await;
    assert_eq!(kim.stanza().await.find("subject", "jabber:client").map(|s| s.text_content()).as_deref(), Some("new plans"));
    assert_eq!(ivan.line().await, ":kim!kim@localhost TOPIC #lobby :new plans\r\n");
    assert_eq!(chat.recv_json().await, json!({"event": "topic", "name": "kim", "room": "lobby", "topic": "new plans"}));
    jo.send("TOPIC #lobby").await;
    assert_eq!(jo.until(" 332 ").await, ":localhost 332 jo #lobby :new plans\r\n");
    assert!(jo.line().await.starts_with(":localhost 333 jo #lobby kim "));
    // An occupant who comes in after is told it as it is.
    let (mut lee, _) = Xmpp::login(server.xmpp.unwrap()).await;
    lee.send("<presence to='lobby@conference.localhost/lee'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    let told = loop {
        let stanza = lee.stanza().await;
        if let Some(subject) = stanza.find("subject", "jabber:client") {
            break (stanza.get("from").map(str::to_owned), subject.text_content());
        }
    };
    assert_eq!(told, (Some("lobby@conference.localhost/kim".to_owned()), "new plans".to_owned()));

    // A room no IRC user is in: the first who joins is told the topic the
    // room has.
    kim.send("<presence to='den@conference.localhost/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    kim.send("<message to='den@conference.localhost' type='groupchat'><subject>quiet</subject></message>").await;
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    jo.send("JOIN #den").await;
    assert_eq!(jo.until(" 332 ").await, ":localhost 332 jo #den :quiet\r\n");
    assert!(jo.line().await.starts_with(":localhost 333 jo #den kim "));
    // A chat-app member, after the members list.
    let mut eve = server.ws("/chat/websocket").await;
    eve.send(&json!({"name": "eve", "room": "den"}).to_string()).await;
    assert_eq!(eve.recv_json().await["event"], "members");
    assert_eq!(eve.recv_json().await, json!({"event": "topic", "name": "kim", "room": "den", "topic": "quiet"}));
    // Cleared, from IRC: nobody who comes after is told one, not even
    // the subject XMPP had.
    ivan.send("TOPIC #lobby :").await;
    assert_eq!(jo.until("TOPIC").await, ":ivan!ivan@localhost TOPIC #lobby :\r\n");
    let (mut lee2, _) = Xmpp::login(server.xmpp.unwrap()).await;
    lee2.send("<presence to='lobby@conference.localhost/lee2'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    let subject = loop {
        let stanza = lee2.stanza().await;
        if let Some(subject) = stanza.find("subject", "jabber:client") {
            break (stanza.get("from").map(str::to_owned), subject.text_content());
        }
    };
    assert_eq!(subject, (Some("lobby@conference.localhost".to_owned()), String::new()), "an empty subject from the room");
    jo.send("TOPIC #lobby").await;
    assert_eq!(jo.until(" 331 ").await, ":localhost 331 jo #lobby :No topic is set\r\n");
}

#[tokio::test]
async fn a_name_taken_in_a_room_by_another_protocol_cannot_join_it_under_that_name() {
    let server = TestServer::start().await;
    let _chat = server.chat_member("erin", "lobby").await;
    let mut irc = Irc::register(server.irc, "Erin").await;
    irc.send("JOIN #lobby").await;
    assert_eq!(irc.line().await, ":localhost 437 Erin #lobby :Your nickname is taken in this channel by a member of another protocol\r\n");
    irc.send("NICK erin_").await;
    assert_eq!(irc.line().await, ":Erin!~u@localhost NICK erin_\r\n");
    assert_eq!(irc.join("#lobby").await[0], ":erin_!erin_@localhost JOIN #lobby\r\n");
    // A nickname in use in a room it is in is refused there too.
    irc.send("NICK ERIN").await;
    assert_eq!(irc.line().await, ":localhost 433 erin_ ERIN :Nickname is in use in #lobby\r\n");
}

#[tokio::test]
async fn history_comes_as_a_batch_with_times_to_clients_that_ask() {
    let server = TestServer::start().await;
    let mut chat = server.chat_member("frank", "lobby").await;
    chat.send(&json!({"message": "before you came"}).to_string()).await;
    assert_eq!(chat.recv_json().await["message"], "before you came");
    let mut irc = Irc::connect(server.irc).await;
    irc.send("CAP REQ :server-time batch message-tags echo-message").await;
    irc.send("NICK gina").await;
    irc.send("USER g 0 * :G").await;
    irc.send("CAP END").await;
    irc.until(" 422 ").await;
    let joined = irc.join("#lobby").await;
    assert!(joined[0].starts_with("@time=") && joined[0].ends_with(" :gina!gina@localhost JOIN #lobby\r\n"), "{joined:?}");
    let batch = irc.lines_until("BATCH -").await;
    assert_eq!(batch[0], ":localhost BATCH +h1 chathistory #lobby\r\n");
    assert!(batch[1].starts_with("@batch=h1;time=20") && batch[1].ends_with(" :frank!frank@localhost PRIVMSG #lobby :before you came\r\n"), "{batch:?}");
    assert_eq!(batch[2], ":localhost BATCH -h1\r\n");
    // With echo-message its own message comes back, tagged.
    irc.send("PRIVMSG #lobby :mine").await;
    let echo = irc.line().await;
    assert!(echo.starts_with("@time=") && echo.ends_with(" :gina!gina@localhost PRIVMSG #lobby :mine\r\n"), "{echo:?}");
}

#[tokio::test]
async fn channel_commands_answer_with_their_numerics() {
    let server = TestServer::start().await;
    let mut op = Irc::register(server.irc, "olga").await;
    op.join("#den").await;
    let mut user = Irc::register(server.irc, "uma").await;
    user.send("TOPIC #den :mine").await;
    assert_eq!(user.line().await, ":localhost 442 uma #den :You're not on that channel\r\n");
    user.send("PRIVMSG #den :from outside").await;
    assert_eq!(user.line().await, ":localhost 404 uma #den :Cannot send to channel\r\n");
    user.send("PART #den").await;
    assert_eq!(user.line().await, ":localhost 442 uma #den :You're not on that channel\r\n");
    user.send("JOIN nochannel").await;
    assert_eq!(user.line().await, ":localhost 403 uma nochannel :No such channel\r\n");
    user.send("PRIVMSG nobody :hi").await;
    assert_eq!(user.line().await, ":localhost 401 uma nobody :No such nick/channel\r\n");
    user.send("PRIVMSG #den").await;
    assert_eq!(user.line().await, ":localhost 412 uma :No text to send\r\n");
    user.send("PRIVMSG").await;
    assert_eq!(user.line().await, ":localhost 411 uma :No recipient given (PRIVMSG)\r\n");
    user.join("#den").await;
    assert_eq!(op.line().await, ":uma!uma@localhost JOIN #den\r\n");

    // +t: only operators set the topic.
    user.send("TOPIC #den :mine").await;
    assert_eq!(user.line().await, ":localhost 482 uma #den :You're not channel operator\r\n");
    op.send("TOPIC #den :Welcome all").await;
    assert_eq!(op.line().await, ":olga!olga@localhost TOPIC #den :Welcome all\r\n");
    assert_eq!(user.line().await, ":olga!olga@localhost TOPIC #den :Welcome all\r\n");
    user.send("TOPIC #den").await;
    assert_eq!(user.line().await, ":localhost 332 uma #den :Welcome all\r\n");
    assert!(user.line().await.starts_with(":localhost 333 uma #den olga "));

    op.send("MODE #den").await;
    assert_eq!(op.line().await, ":localhost 324 olga #den +nt\r\n");
    assert!(op.line().await.starts_with(":localhost 329 olga #den "));
    // +C: no CTCP but an action.
    op.send("MODE #den +C").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den +C\r\n");
    assert_eq!(user.line().await, ":olga!~u@localhost MODE #den +C\r\n");
    user.send("PRIVMSG #den :\u{1}VERSION\u{1}").await;
    assert_eq!(user.line().await, ":localhost 404 uma #den :Cannot send CTCP to channel (+C)\r\n");
    user.send("PRIVMSG #den :\u{1}ACTION waves\u{1}").await;
    assert_eq!(op.line().await, ":uma!uma@localhost PRIVMSG #den :\u{1}ACTION waves\u{1}\r\n");
    op.send("MODE #den -C").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den -C\r\n");
    assert_eq!(user.line().await, ":olga!~u@localhost MODE #den -C\r\n");
    op.send("MODE #den +mk-t secret").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den +mk-t secret\r\n");
    assert_eq!(user.line().await, ":olga!~u@localhost MODE #den +mk-t secret\r\n");
    user.send("PRIVMSG #den :may I?").await;
    assert_eq!(user.line().await, ":localhost 404 uma #den :Cannot send to channel\r\n", "+m");
    op.send("MODE #den +v uma").await;
    assert_eq!(user.line().await, ":olga!~u@localhost MODE #den +v uma\r\n");
    user.send("PRIVMSG #den :thanks").await;
    assert_eq!(op.until("PRIVMSG").await, ":uma!uma@localhost PRIVMSG #den :thanks\r\n");
    user.send("MODE #den +o uma").await;
    assert_eq!(user.line().await, ":localhost 482 uma #den :You're not channel operator\r\n");
    op.send("MODE #den +z").await;
    assert_eq!(op.line().await, ":localhost 472 olga z :is unknown mode char to me\r\n");
    op.send("MODE #den +b").await;
    assert_eq!(op.line().await, ":localhost 368 olga #den :End of channel ban list\r\n");

    // +k: a join needs the key, which only members are shown; +l: at most
    // so many IRC members.
    let mut late = Irc::register(server.irc, "lee").await;
    late.send("JOIN #den").await;
    assert_eq!(late.line().await, ":localhost 475 lee #den :Cannot join channel (+k)\r\n");
    late.send("MODE #den").await;
    assert_eq!(late.line().await, ":localhost 324 lee #den +mnk *\r\n");
    late.line().await;
    user.send("MODE #den").await;
    assert_eq!(user.line().await, ":localhost 324 uma #den +mnk secret\r\n");
    user.line().await;
    // A key that would be read as a last parameter is not well-formed.
    op.send("MODE #den +k ::x").await;
    assert_eq!(op.line().await, ":localhost 525 olga #den :Key is not well-formed\r\n");
    op.send("MODE #den -k+l * 2").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den -k+l * 2\r\n");
    late.send("JOIN #den").await;
    assert_eq!(late.line().await, ":localhost 471 lee #den :Cannot join channel (+l)\r\n");

    op.send("NAMES #den").await;
    assert_eq!(op.line().await, ":localhost 353 olga = #den :@olga +uma\r\n");
    assert_eq!(op.line().await, ":localhost 366 olga #den :End of /NAMES list\r\n");
    // Several channels: the names of those it is in, then one end naming all.
    op.join("#two").await;
    op.send("NAMES #den,#nowhere,#two").await;
    assert_eq!(op.line().await, ":localhost 353 olga = #den :@olga +uma\r\n");
    assert_eq!(op.line().await, ":localhost 353 olga = #two :@olga\r\n");
    assert_eq!(op.line().await, ":localhost 366 olga #den,#nowhere,#two :End of /NAMES list\r\n");
    op.send("PART #two").await;
    op.line().await;
    op.send("WHO #den").await;
    assert_eq!(op.line().await, ":localhost 352 olga #den ~u localhost localhost olga H@ :0 Real Name\r\n");
    assert_eq!(op.line().await, ":localhost 352 olga #den ~u localhost localhost uma H+ :0 Real Name\r\n");
    assert_eq!(op.line().await, ":localhost 315 olga #den :End of /WHO list\r\n");
    // WHOX: the fields asked for, in its one order, and the token.
    op.send("WHO #den %rnfatc,42").await;
    assert_eq!(op.line().await, ":localhost 354 olga 42 #den olga H@ 0 :Real Name\r\n");
    assert_eq!(op.line().await, ":localhost 354 olga 42 #den uma H+ 0 :Real Name\r\n");
    assert_eq!(op.line().await, ":localhost 315 olga #den :End of /WHO list\r\n");
    op.send("WHO uma %tcuihsnfdao").await;
    assert_eq!(op.line().await, ":localhost 354 olga 0 * ~u 255.255.255.255 localhost localhost uma H 0 0 n/a\r\n");
    assert_eq!(op.line().await, ":localhost 315 olga uma :End of /WHO list\r\n");
    late.send("LIST").await;
    assert_eq!(late.line().await, ":localhost 321 lee Channel :Users  Name\r\n");
    assert_eq!(late.line().await, ":localhost 322 lee #den 2 :Welcome all\r\n");
    assert_eq!(late.line().await, ":localhost 323 lee :End of /LIST\r\n");
    // ELIST: by mask, not by mask, by user count; a channel meets them all.
    op.join("#solo").await;
    for (conditions, listed) in [("#d*", "#den"), ("!#d*", "#solo"), (">1", "#den"), ("<2", "#solo"), ("*o*,>0,<2", "#solo")] {
        late.send(&format!("LIST {conditions}")).await;
        assert_eq!(late.line().await, ":localhost 321 lee Channel :Users  Name\r\n");
        assert!(late.line().await.starts_with(&format!(":localhost 322 lee {listed} ")), "{conditions}");
        assert_eq!(late.line().await, ":localhost 323 lee :End of /LIST\r\n", "{conditions}");
    }
}

#[tokio::test]
async fn an_invitation_names_a_channel_and_lets_in_once() {
    let server = TestServer::start().await;
    let mut op = Irc::register(server.irc, "olga").await;
    op.join("#den").await;
    op.send("MODE #den +i").await;
    op.line().await;
    let mut guest = Irc::register(server.irc, "gus").await;
    op.send("INVITE gus :#den visit evil.example").await;
    assert!(op.line().await.starts_with(":localhost 403 olga "), "not a channel: nobody is invited");
    op.send("INVITE gus #DEN").await;
    assert_eq!(op.line().await, ":localhost 341 olga gus #den\r\n");
    assert_eq!(guest.line().await, ":olga!~u@localhost INVITE gus #den\r\n");
    // INVITE alone lists the channels it is invited to and has not joined.
    guest.send("INVITE").await;
    assert_eq!(guest.line().await, ":localhost 336 gus #den\r\n");
    assert_eq!(guest.line().await, ":localhost 337 gus :End of /INVITE list\r\n");
    guest.send("INVITE olga").await;
    assert_eq!(guest.line().await, ":localhost 461 gus INVITE :Not enough parameters\r\n");
    guest.join("#den").await;
    guest.send("INVITE").await;
    assert_eq!(guest.line().await, ":localhost 337 gus :End of /INVITE list\r\n", "used");
    guest.send("PART #den").await;
    guest.line().await;
    guest.send("JOIN #den").await;
    assert_eq!(guest.line().await, ":localhost 473 gus #den :Cannot join channel (+i)\r\n", "once");
    // An invite exception (+I) lets in whom its mask matches, uninvited.
    op.send("MODE #den +I gus").await;
    assert_eq!(op.until("MODE").await, ":olga!~u@localhost MODE #den +I gus!*@*\r\n");
    op.send("MODE #den +I").await;
    assert!(op.line().await.starts_with(":localhost 346 olga #den gus!*@* olga!~u@localhost "));
    assert_eq!(op.line().await, ":localhost 347 olga #den :End of channel invite exception list\r\n");
    guest.join("#den").await;
    // An invitation lets in past the limit (+l) too.
    op.send("MODE #den -i+l 2").await;
    assert_eq!(op.until("MODE").await, ":olga!~u@localhost MODE #den -i+l 2\r\n");
    let mut tia = Irc::register(server.irc, "tia").await;
    tia.send("JOIN #den").await;
    assert_eq!(tia.line().await, ":localhost 471 tia #den :Cannot join channel (+l)\r\n");
    op.send("INVITE tia #den").await;
    assert_eq!(op.until(" 341 ").await, ":localhost 341 olga tia #den\r\n");
    tia.line().await;
    tia.join("#den").await;
}

#[tokio::test]
async fn bans_keep_irc_clients_out_unless_an_exception_lets_them_in() {
    let server = TestServer::start().await;
    let mut op = Irc::register(server.irc, "olga").await;
    op.join("#den").await;
    op.send("MODE #den +b ba*").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den +b ba*!*@*\r\n", "a nickname is made a whole mask");
    op.send("MODE #den +b ba*!*@*").await;
    op.send("MODE #den +b").await;
    let list = op.lines_until(" 368 ").await;
    assert_eq!(list.len(), 2, "the same mask again changes nothing: {list:?}");
    assert!(list[0].starts_with(":localhost 367 olga #den ba*!*@* olga!~u@localhost "), "{}", list[0]);
    assert_eq!(list[1], ":localhost 368 olga #den :End of channel ban list\r\n");

    let mut bar = Irc::register(server.irc, "Bar").await;
    bar.send("JOIN #den").await;
    assert_eq!(bar.line().await, ":localhost 474 Bar #den :Cannot join channel (+b)\r\n");
    bar.send("MODE #den +e *ar!*@*").await;
    assert_eq!(bar.line().await, ":localhost 482 Bar #den :You're not channel operator\r\n");
    op.send("MODE #den +e *ar!*@*").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den +e *ar!*@*\r\n");
    bar.send("MODE #den e").await;
    assert!(bar.line().await.starts_with(":localhost 348 Bar #den *ar!*@* olga!~u@localhost "));
    assert_eq!(bar.line().await, ":localhost 349 Bar #den :End of channel exception list\r\n");
    bar.join("#den").await;
    assert_eq!(op.line().await, ":Bar!Bar@localhost JOIN #den\r\n");

    op.send("MODE #den -be BA*!*@* *ar!*@*").await;
    assert_eq!(op.line().await, ":olga!~u@localhost MODE #den -be BA*!*@* *ar!*@*\r\n", "removed whatever its case");
    for n in 0..100 {
        op.send(&format!("MODE #den +b n{n}")).await;
    }
    op.send("MODE #den +b one-too-many").await;
    assert_eq!(op.until(" 478 ").await, ":localhost 478 olga #den b :Channel list is full\r\n");
}

#[tokio::test]
async fn an_operator_kicks_an_irc_member_and_every_protocol_sees_it_leave() {
    let server = TestServer::start().await;
    let mut op = Irc::register(server.irc, "olga").await;
    op.join("#den").await;
    let mut uma = Irc::register(server.irc, "uma").await;
    uma.join("#den").await;
    assert_eq!(op.line().await, ":uma!uma@localhost JOIN #den\r\n");
    let mut carl = server.chat_member("carl", "den").await;
    assert_eq!(op.line().await, ":carl!carl@localhost JOIN #den\r\n");
    assert_eq!(uma.line().await, ":carl!carl@localhost JOIN #den\r\n");
    let mut lee = Irc::register(server.irc, "lee").await;

    uma.send("KICK #den olga").await;
    assert_eq!(uma.line().await, ":localhost 482 uma #den :You're not channel operator\r\n");
    lee.send("KICK #den uma").await;
    assert_eq!(lee.line().await, ":localhost 442 lee #den :You're not on that channel\r\n");
    lee.send("KICK #nowhere uma").await;
    assert_eq!(lee.line().await, ":localhost 403 lee #nowhere :No such channel\r\n");
    lee.send("KICK #den").await;
    assert_eq!(lee.line().await, ":localhost 461 lee KICK :Not enough parameters\r\n");
    op.send("KICK #den nobody").await;
    assert_eq!(op.line().await, ":localhost 441 olga nobody #den :They aren't on that channel\r\n");
    op.send("KICK #den carl").await;
    assert_eq!(op.line().await, ":localhost 441 olga carl #den :They are in the channel through another protocol or server: not kicked\r\n");

    op.send("KICK #den uma :spam, again").await;
    let kick = ":olga!olga@localhost KICK #den uma :spam, again\r\n";
    assert_eq!(op.line().await, kick);
    assert_eq!(uma.line().await, kick);
    assert_eq!(carl.recv_json().await, serde_json::json!({"event": "leave", "name": "uma", "room": "den"}));
    uma.send("PRIVMSG #den :still here?").await;
    assert_eq!(uma.line().await, ":localhost 404 uma #den :Cannot send to channel\r\n", "out of the channel");
    uma.join("#den").await;
    assert_eq!(op.line().await, ":uma!uma@localhost JOIN #den\r\n");
    // With no comment, the kicker's nickname is the reason (RFC 2812 §3.2.8).
    op.send("KICK #den,#den uma,lee").await;
    assert_eq!(op.line().await, ":olga!olga@localhost KICK #den uma :olga\r\n");
    assert_eq!(op.line().await, ":localhost 441 olga lee #den :They aren't on that channel\r\n");
    assert_eq!(uma.until("KICK").await, ":olga!olga@localhost KICK #den uma :olga\r\n");
}

#[tokio::test]
async fn operators_kill_and_send_wallops() {
    let mut config = server::Config::default();
    config.irc.operators = Some("root:s3cret,other:pw".to_owned());
    let server = TestServer::with(config).await;
    let mut alice = Irc::register(server.irc, "alice").await;
    let mut bob = Irc::register(server.irc, "bob").await;

    alice.send("OPER root wrong").await;
    assert_eq!(alice.line().await, ":localhost 464 alice :Password incorrect\r\n");
    alice.send("OPER nobody s3cret").await;
    assert_eq!(alice.line().await, ":localhost 491 alice :No operator block for your name\r\n");
    alice.send("OPER root").await;
    assert_eq!(alice.line().await, ":localhost 461 alice OPER :Not enough parameters\r\n");
    bob.send("KILL alice :go").await;
    assert_eq!(bob.line().await, ":localhost 481 bob :Permission Denied- You're not an IRC operator\r\n");
    bob.send("WALLOPS :hear me").await;
    assert_eq!(bob.line().await, ":localhost 481 bob :Permission Denied- You're not an IRC operator\r\n");
    alice.send("OPER root s3cret").await;
    assert_eq!(alice.line().await, ":localhost 381 alice :You are now an IRC operator\r\n");
    assert_eq!(alice.line().await, ":alice!~u@localhost MODE alice +o\r\n");
    alice.send("MODE alice").await;
    assert_eq!(alice.line().await, ":localhost 221 alice +o\r\n");

    bob.send("MODE bob +w+o").await;
    assert_eq!(bob.line().await, ":bob!~u@localhost MODE bob +w\r\n", "+o only by OPER");
    alice.send("WALLOPS :maintenance at noon").await;
    assert_eq!(bob.line().await, ":alice!~u@localhost WALLOPS :maintenance at noon\r\n");
    bob.send("WHOIS alice").await;
    let whois = bob.lines_until(" 318 ").await;
    assert!(whois.contains(&":localhost 313 bob alice :is an IRC operator\r\n".to_owned()), "{whois:?}");
    bob.send("WHO alice").await;
    assert_eq!(bob.line().await, ":localhost 352 bob * ~u localhost localhost alice H* :0 Real Name\r\n");
    assert_eq!(bob.line().await, ":localhost 315 bob alice :End of /WHO list\r\n");
    bob.send("USERHOST alice bob").await;
    assert_eq!(bob.line().await, ":localhost 302 bob :alice*=+~u@localhost bob=+~u@localhost\r\n", "an operator starred");
    bob.send("LUSERS").await;
    let lusers = bob.lines_until(" 266 ").await;
    assert!(lusers.contains(&":localhost 252 bob 1 :operator(s) online\r\n".to_owned()), "{lusers:?}");
    bob.send("INFO").await;
    assert!(bob.line().await.starts_with(":localhost 371 bob :switchboard-"));
    assert_eq!(bob.until(" 374 ").await, ":localhost 374 bob :End of INFO list\r\n");

    alice.send("KILL nobody :x").await;
    assert_eq!(alice.line().await, ":localhost 401 alice nobody :No such nick/channel\r\n");
    alice.send("KILL bob :flooding").await;
    assert_eq!(bob.line().await, "ERROR :Closing Link: 127.0.0.1 (Killed (alice (flooding)))\r\n");
    assert_eq!(bob.line().await, "", "closed");
    alice.send("MODE alice -o").await;
    assert_eq!(alice.line().await, ":alice!~u@localhost MODE alice -o\r\n");
    alice.send("WALLOPS :again").await;
    assert_eq!(alice.line().await, ":localhost 481 alice :Permission Denied- You're not an IRC operator\r\n");
}

#[tokio::test]
async fn private_messages_whois_and_away() {
    let server = TestServer::start().await;
    let mut a = Irc::connect(server.irc).await;
    a.send("CAP REQ away-notify").await;
    a.send("NICK amy").await;
    a.send("USER a 0 * :Amy A").await;
    a.send("CAP END").await;
    a.until(" 422 ").await;
    a.join("#room").await;
    let mut b = Irc::register(server.irc, "ben").await;
    b.join("#room").await;
    a.until("JOIN").await;

    b.send("PRIVMSG AMY :psst").await;
    assert_eq!(a.line().await, ":ben!~u@localhost PRIVMSG amy :psst\r\n");
    b.send("AWAY :lunch").await;
    assert_eq!(b.line().await, ":localhost 306 ben :You have been marked as being away\r\n");
    assert_eq!(a.line().await, ":ben!~u@localhost AWAY :lunch\r\n", "away-notify");
    a.send("PRIVMSG ben :back soon?").await;
    assert_eq!(a.line().await, ":localhost 301 amy ben :lunch\r\n");
    a.send("WHOIS ben").await;
    assert_eq!(a.line().await, ":localhost 311 amy ben ~u localhost * :Real Name\r\n");
    assert_eq!(a.line().await, ":localhost 319 amy ben :#room\r\n");
    assert_eq!(a.line().await, ":localhost 312 amy ben localhost :Switchboard\r\n");
    // Seconds since ben last spoke (just now), and when it registered.
    let idle = a.line().await;
    let fields: Vec<&str> = idle.split(' ').collect();
    assert_eq!((fields[1], fields[3], fields[6..].join(" ").as_str()), ("317", "ben", ":seconds idle, signon time\r\n"), "{idle}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let (secs, signon): (u64, u64) = (fields[4].parse().unwrap(), fields[5].parse().unwrap());
    assert!(secs <= 60 && signon <= now && signon + 60 >= now, "{idle}");
    assert_eq!(a.line().await, ":localhost 301 amy ben :lunch\r\n");
    assert_eq!(a.line().await, ":localhost 318 amy ben :End of /WHOIS list\r\n");
    a.send("WHOIS nobody").await;
    assert_eq!(a.line().await, ":localhost 401 amy nobody :No such nick/channel\r\n");
    assert_eq!(a.line().await, ":localhost 318 amy nobody :End of /WHOIS list\r\n");
    b.send("AWAY").await;
    assert_eq!(b.until(" 305 ").await, ":localhost 305 ben :You are no longer marked as being away\r\n");
    assert_eq!(a.line().await, ":ben!~u@localhost AWAY\r\n");
    a.send("ISON ben nobody amy").await;
    assert_eq!(a.line().await, ":localhost 303 amy :ben amy\r\n");
    a.send("MODE amy").await;
    assert_eq!(a.line().await, ":localhost 221 amy +\r\n");
    a.send("MODE ben +i").await;
    assert_eq!(a.line().await, ":localhost 502 amy ben :Cant change mode for other users\r\n");
}

/// IRCv3 bot mode: `+B` is shown in `WHOIS` (335), in `WHO`'s flags, and
/// as a `bot` tag (no value) on what the bot says, to clients that read
/// tags, in a channel, to a nickname and in its own echo.
#[tokio::test]
async fn a_bot_says_so_in_its_mode_whois_who_and_tags() {
    let server = TestServer::start().await;
    let mut bot = register_with(server.irc, "robo", "echo-message message-tags").await;
    bot.send("MODE robo +B").await;
    assert_eq!(bot.line().await, ":robo!~u@localhost MODE robo +B\r\n");
    bot.send("MODE robo").await;
    assert_eq!(bot.line().await, ":localhost 221 robo +B\r\n");
    let mut user = register_with(server.irc, "hu", "message-tags").await;
    let mut plain = Irc::register(server.irc, "pl").await;
    user.send("WHOIS robo").await;
    assert_eq!(user.until(" 335 ").await, ":localhost 335 hu robo :is a bot\r\n");
    for irc in [&mut bot, &mut user, &mut plain] {
        irc.join("#robots").await;
    }
    bot.until("JOIN").await;
    bot.until("JOIN").await;
    user.until("JOIN").await;
    plain.send("WHO robo").await;
    assert_eq!(plain.line().await, ":localhost 352 pl * ~u localhost localhost robo HB :0 R\r\n");
    assert_eq!(plain.line().await, ":localhost 315 pl robo :End of /WHO list\r\n");
    // The tag, and only it (and the message's id), to a client that reads tags.
    let tags_of = |line: &str, rest: &str| {
        let (tags, after) = line.split_once(' ').unwrap();
        assert_eq!(after, rest, "{line}");
        let tags: Vec<&str> = tags.trim_start_matches('@').split(';').collect();
        assert!(tags.len() == 2 && tags[0].starts_with("msgid=") && tags[1] == "bot", "{line}");
    };
    bot.send("PRIVMSG #robots :beep").await;
    tags_of(&user.line().await, ":robo!robo@localhost PRIVMSG #robots :beep\r\n");
    assert_eq!(plain.line().await, ":robo!robo@localhost PRIVMSG #robots :beep\r\n");
    tags_of(&bot.line().await, ":robo!robo@localhost PRIVMSG #robots :beep\r\n");
    bot.send("PRIVMSG hu :boop").await;
    tags_of(&user.line().await, ":robo!~u@localhost PRIVMSG hu :boop\r\n");
    tags_of(&bot.line().await, ":robo!~u@localhost PRIVMSG hu :boop\r\n");
    bot.send("MODE robo -B").await;
    assert_eq!(bot.line().await, ":robo!~u@localhost MODE robo -B\r\n");
    bot.send("PRIVMSG pl :plain").await;
    assert_eq!(plain.line().await, ":robo!~u@localhost PRIVMSG pl :plain\r\n");
    let echo = bot.line().await;
    assert!(echo.starts_with("@msgid=") && !echo.contains(";bot") && echo.ends_with(" :robo!~u@localhost PRIVMSG pl :plain\r\n"), "{echo}");
}

/// `CHATHISTORY` reads a channel's messages back from its room's archive,
/// under the ids and times its members were given, each bound exclusive.
#[tokio::test]
async fn chathistory_reads_a_channel_back_from_its_archive() {
    let server = TestServer::start().await;
    let mut ana = register_with(server.irc, "ana", "batch draft/chathistory echo-message message-tags server-time").await;
    ana.join("#hist").await;
    // Each echo as the history gives it: tags first, then the line.
    let mut said = Vec::new();
    for n in 0..6 {
        ana.send(&format!("PRIVMSG #hist :m{n}")).await;
        let echo = ana.line().await;
        assert!(echo.ends_with(&format!(" :ana!ana@localhost PRIVMSG #hist :m{n}\r\n")), "{echo}");
        said.push(echo);
        // A time names a whole millisecond: each message in one of its
        // own, for the queries by time below (the clock must move on;
        // there is nothing to wait for).
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let msgid = |n: usize| said[n].split(['=', ';', ' ']).nth(3).unwrap().to_owned();
    let time = |n: usize| said[n].split(['=', ';']).nth(1).unwrap().to_owned();
    assert!(said[0].starts_with(&format!("@time={};msgid={} ", time(0), msgid(0))), "{}", said[0]);
    assert!((1..6).all(|n| time(n - 1) < time(n)), "{said:?}");
    // The batch's lines: `@batch=<ref>;` before each echo's tags.
    let mut history = async |query: &str| -> Vec<usize> {
        ana.send(&format!("CHATHISTORY {query}")).await;
        let open = ana.line().await;
        let reference = open.strip_prefix(":localhost BATCH +").and_then(|l| l.strip_suffix(" chathistory #hist\r\n")).unwrap_or_else(|| panic!("{open}")).to_owned();
        let mut got = Vec::new();
        loop {
            let line = ana.line().await;
            if line == format!(":localhost BATCH -{reference}\r\n") {
                return got;
            }
            let n = said.iter().position(|s| line == format!("@batch={reference};{}", &s[1..])).unwrap_or_else(|| panic!("{line}"));
            got.push(n);
        }
    };
    assert_eq!(history("LATEST #hist * 10").await, [0, 1, 2, 3, 4, 5]);
    assert_eq!(history("LATEST #hist * 2").await, [4, 5]);
    assert_eq!(history(&format!("LATEST #hist msgid={} 10", msgid(3))).await, [4, 5]);
    assert_eq!(history(&format!("BEFORE #hist msgid={} 10", msgid(2))).await, [0, 1]);
    assert_eq!(history(&format!("BEFORE #hist timestamp={} 1", time(4))).await, [3]);
    assert_eq!(history(&format!("AFTER #hist timestamp={} 2", time(1))).await, [2, 3]);
    assert_eq!(history(&format!("BETWEEN #hist msgid={} msgid={} 10", msgid(0), msgid(5))).await, [1, 2, 3, 4]);
    assert_eq!(history(&format!("BETWEEN #hist msgid={} msgid={} 2", msgid(5), msgid(0))).await, [3, 4], "from the first's side");
    assert_eq!(history(&format!("AROUND #hist msgid={} 3", msgid(2))).await, [1, 2, 3]);
    assert_eq!(history(&format!("AROUND #hist msgid={} 1", msgid(2))).await, [2]);
    assert_eq!(history("AFTER #hist msgid=nothing-of-this-room 10").await, Vec::<usize>::new(), "a message it has none of: nothing");
    // TARGETS: the channels with messages between two times, by their newest.
    ana.join("#quiet").await;
    ana.join("#later").await;
    ana.send("PRIVMSG #later :last").await;
    let last = ana.line().await;
    let last_time = last.split(['=', ';']).nth(1).unwrap().to_owned();
    let targets = |from: &str, to: &str, limit: usize| format!("CHATHISTORY TARGETS timestamp={from} timestamp={to} {limit}");
    ana.send(&targets("2020-01-01T00:00:00.000Z", "2262-01-01T00:00:00.000Z", 10)).await;
    let open = ana.line().await;
    let reference = open.strip_prefix(":localhost BATCH +").and_then(|l| l.strip_suffix(" draft/chathistory-targets\r\n")).unwrap_or_else(|| panic!("{open}")).to_owned();
    assert_eq!(ana.line().await, format!("@batch={reference} :localhost CHATHISTORY TARGETS #hist {}\r\n", time(5)));
    assert_eq!(ana.line().await, format!("@batch={reference} :localhost CHATHISTORY TARGETS #later {last_time}\r\n"));
    assert_eq!(ana.line().await, format!(":localhost BATCH -{reference}\r\n"));
    // The limit counts from the first time given.
    for (from, to, first) in [("2020-01-01T00:00:00.000Z", "2262-01-01T00:00:00.000Z", "#hist"), ("2262-01-01T00:00:00.000Z", "2020-01-01T00:00:00.000Z", "#later")] {
        ana.send(&targets(from, to, 1)).await;
        ana.line().await;
        assert_eq!(ana.line().await.split(' ').nth(4), Some(first), "from {from}");
        ana.line().await;
    }
    ana.send(&targets("2262-01-01T00:00:00.000Z", &time(5), 10)).await;
    ana.line().await;
    assert_eq!(ana.line().await.split(' ').nth(4), Some("#later"), "after #hist's newest");
    ana.line().await;
    ana.send("CHATHISTORY LATEST #elsewhere * 10").await;
    assert_eq!(ana.line().await, ":localhost FAIL CHATHISTORY INVALID_TARGET LATEST #elsewhere :Only the history of a channel you are in is kept\r\n");
    ana.send("CHATHISTORY LATEST ana * 10").await;
    assert_eq!(ana.line().await, ":localhost FAIL CHATHISTORY INVALID_TARGET LATEST ana :Private messages are kept for accounts only\r\n");
    ana.send("CHATHISTORY BEFORE #hist 01ab 10").await;
    assert_eq!(ana.line().await, ":localhost FAIL CHATHISTORY INVALID_PARAMS BEFORE :Invalid message reference\r\n");
    ana.send("CHATHISTORY LATEST #hist * many").await;
    assert_eq!(ana.line().await, ":localhost FAIL CHATHISTORY INVALID_PARAMS LATEST :Invalid limit\r\n");
    ana.send("CHATHISTORY LATEST").await;
    assert_eq!(ana.line().await, ":localhost FAIL CHATHISTORY NEED_MORE_PARAMS LATEST :Insufficient parameters\r\n");

    // A window that ends before a channel's newest message does not list it.
    ana.send(&targets("2020-01-01T00:00:00.000Z", &time(4), 10)).await;
    ana.line().await;
    assert!(ana.line().await.contains(" BATCH -"), "#hist's newest is later");

    // Rooms not archived: only private messages to read; neither: nothing.
    for (private, why) in [(true, "Channels' messages are not archived here"), (false, "Messages are not archived here")] {
        let mut config = server::Config::default();
        config.rooms.archive = false;
        config.xmpp.archive = private;
        let unkept = TestServer::with(config).await;
        let mut ned = Irc::register(unkept.irc, "ned").await;
        ned.join("#x").await;
        ned.send("CHATHISTORY LATEST #x * 10").await;
        assert_eq!(ned.line().await, format!(":localhost FAIL CHATHISTORY MESSAGE_ERROR LATEST #x :{why}\r\n"));
        ned.send("CAP LS 302").await;
        assert_eq!(ned.line().await.contains("draft/chathistory"), private, "offered for private messages only");
    }
}

/// Connects, asks for `caps` and `sasl`, logs in to `account` (password
/// `pw`) with SASL PLAIN and registers as `nick`.
async fn logged_in(addr: SocketAddr, nick: &str, account: &str, caps: &str) -> Irc {
    use base64::Engine;
    let mut irc = Irc::connect(addr).await;
    irc.send(&format!("CAP REQ :sasl {caps}")).await;
    irc.send(&format!("NICK {nick}")).await;
    irc.send("USER u 0 * :R").await;
    irc.send("AUTHENTICATE PLAIN").await;
    irc.until("AUTHENTICATE +").await;
    irc.send(&format!("AUTHENTICATE {}", base64::engine::general_purpose::STANDARD.encode(format!("\0{account}\0pw")))).await;
    irc.until(" 903 ").await;
    irc.send("CAP END").await;
    irc.until(" 422 ").await;
    irc
}

/// Private messages are kept in the archives of those of their parties
/// logged in to an account, as XMPP's chats are, under the `msgid` and
/// time both were given, as each owner's preferences say; `CHATHISTORY`
/// of a nickname reads them back, and the account's XMPP clients page
/// through them (XEP-0313).
#[tokio::test]
async fn chathistory_reads_private_messages_back_from_the_accounts_archives() {
    let accounts = ["sam", "kim", "lee"].iter().map(|name| server::AccountEntry::new(name, "pw")).collect();
    let mut config = server::Config { xmpp_accounts: accounts, ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let caps = "batch draft/chathistory echo-message message-tags server-time";
    let mut sam = logged_in(server.irc, "sammy", "sam", caps).await;
    let mut kim = logged_in(server.irc, "kim", "kim", caps).await;
    let mut gus = register_with(server.irc, "gus", caps).await;
    // Each message as its sender's echo and its recipient's copy: one
    // time and one msgid, and the tags as history gives them.
    let mut said = Vec::new();
    for (from, to, text) in [("sammy", "kim", "one"), ("kim", "sammy", "two"), ("gus", "sammy", "three"), ("sammy", "sammy", "self")] {
        let sender = match from {
            "sammy" => &mut sam,
            "kim" => &mut kim,
            _ => &mut gus,
        };
        sender.send(&format!("PRIVMSG {to} :{text}")).await;
        let echo = sender.line().await;
        let recipient = match to {
            "sammy" => &mut sam,
            _ => &mut kim,
        };
        let copy = recipient.line().await;
        let (tags, line) = echo.split_once(' ').unwrap();
        assert!(line.ends_with(&format!(" PRIVMSG {to} :{text}\r\n")), "{echo}");
        assert_eq!(copy, echo, "one time and one msgid for both");
        said.push(format!("{tags} :{from}!{from}@localhost PRIVMSG {to} :{text}\r\n"));
        // Times apart, for TARGETS's order below (the clock must move on;
        // there is nothing to wait for).
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The batch's lines, each as its echo with `batch=<ref>` first.
    async fn history(irc: &mut Irc, query: &str, target: &str) -> Vec<String> {
        irc.send(&format!("CHATHISTORY {query}")).await;
        let open = irc.line().await;
        let reference = open.strip_prefix(":localhost BATCH +").and_then(|l| l.strip_suffix(&format!(" chathistory {target}\r\n"))).unwrap_or_else(|| panic!("{open}")).to_owned();
        let mut got = Vec::new();
        loop {
            let line = irc.line().await;
            if line == format!(":localhost BATCH -{reference}\r\n") {
                return got;
            }
            got.push(line.strip_prefix(&format!("@batch={reference};")).map(|rest| format!("@{rest}")).unwrap_or_else(|| panic!("{line}")));
        }
    }
    assert_eq!(history(&mut sam, "LATEST kim * 10", "kim").await, [said[0].clone(), said[1].clone()]);
    assert_eq!(history(&mut kim, "LATEST SAMMY * 10", "SAMMY").await, [said[0].clone(), said[1].clone()], "the nickname as given");
    assert_eq!(history(&mut sam, "LATEST gus * 10", "gus").await, [said[2].clone()], "kept though gus has no account");
    assert_eq!(history(&mut sam, "LATEST sammy * 10", "sammy").await, [said[3].clone()], "to oneself, once");
    let msgid = said[1].split(['=', ';', ' ']).nth(3).unwrap().to_owned();
    assert_eq!(history(&mut kim, &format!("BEFORE sammy msgid={msgid} 10"), "sammy").await, [said[0].clone()]);
    gus.send("CHATHISTORY LATEST sammy * 10").await;
    assert_eq!(gus.line().await, ":localhost FAIL CHATHISTORY INVALID_TARGET LATEST sammy :Private messages are kept for accounts only\r\n");
    // An account no client has now: by its name.
    sam.send("QUIT").await;
    assert_eq!(history(&mut kim, "LATEST sam * 10", "sam").await, [said[0].clone(), said[1].clone()]);
    kim.send("CHATHISTORY LATEST #no,such * 10").await;
    assert_eq!(kim.line().await, ":localhost FAIL CHATHISTORY INVALID_TARGET LATEST #no,such :Only the history of a channel you are in is kept\r\n");

    // TARGETS: the nicknames and channels whose newest message is between
    // the two times, each by that newest, the longest quiet first.
    let mut sam = logged_in(server.irc, "sammy", "sam", caps).await;
    let time = |n: usize| said[n].split(['=', ';']).nth(1).unwrap().to_owned();
    let targets = async |irc: &mut Irc, from: &str, to: &str| -> Vec<String> {
        irc.send(&format!("CHATHISTORY TARGETS timestamp={from} timestamp={to} 10")).await;
        let open = irc.line().await;
        let reference = open.strip_prefix(":localhost BATCH +").and_then(|l| l.strip_suffix(" draft/chathistory-targets\r\n")).unwrap_or_else(|| panic!("{open}")).to_owned();
        irc.lines_until(&format!("BATCH -{reference}")).await.iter().rev().skip(1).rev().map(|l| l.split(' ').skip(3).collect::<Vec<_>>().join(" ")).collect()
    };
    let all = targets(&mut sam, "2020-01-01T00:00:00.000Z", "2262-01-01T00:00:00.000Z").await;
    assert_eq!(all, [format!("TARGETS kim {}\r\n", time(1)), format!("TARGETS gus {}\r\n", time(2)), format!("TARGETS sammy {}\r\n", time(3))]);
    let before_gus = targets(&mut sam, "2020-01-01T00:00:00.000Z", &time(2)).await;
    assert_eq!(before_gus, [format!("TARGETS kim {}\r\n", time(1))]);
    let during = targets(&mut sam, &time(0), &time(2)).await;
    assert_eq!(during, [format!("TARGETS kim {}\r\n", time(1))], "a target whose newest message is later is not listed: {during:?}");
    let early = targets(&mut sam, "2020-01-01T00:00:00.000Z", &time(1)).await;
    assert!(early.is_empty(), "kim's newest is at the end: {early:?}");

    // Sam's XMPP client pages through the same archive: IRC's messages as chats.
    let mut desk = crate::xmpp::bound_account(server.xmpp.unwrap(), "sam", "desk").await;
    let archived = desk.archived_messages().await;
    let kept: Vec<String> = archived.iter().map(|m| m.to_xml("jabber:client")).collect();
    assert_eq!(
        kept[0],
        "<message type=\"chat\" from=\"sam@localhost\" to=\"kim@localhost\"><body>one</body><irc xmlns=\"urn:switchboard:irc\" from=\"sammy\" to=\"kim\"/></message>"
    );
    assert_eq!(kept.len(), 4, "{kept:?}");
    assert!(kept[2].contains(" from=\"localhost/irc:gus\" to=\"sam@localhost\""), "{}", kept[2]);

    // Kim's XMPP chat with sam reads back to IRC, its parties by their
    // JIDs' local parts; nicknames a client claims are not taken.
    let mut phone = crate::xmpp::bound_account(server.xmpp.unwrap(), "kim", "phone").await;
    desk.send("<presence/>").await;
    phone.send("<message to='sam@localhost' type='chat'><body>over xmpp</body><irc xmlns='urn:switchboard:irc' from='liar' to='sammy'/></message>").await;
    let got = desk.next_named("message").await;
    assert!(got.find("irc", "urn:switchboard:irc").is_none(), "{got:?}");
    let read = history(&mut sam, "LATEST kim * 10", "kim").await;
    assert_eq!(read.len(), 3, "{read:?}");
    assert!(read[2].ends_with(" :kim!kim@localhost PRIVMSG sam :over xmpp\r\n"), "{}", read[2]);

    // Kim keeps nothing with lee: each archive follows its owner's preferences.
    phone.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='always'><never><jid>lee@localhost</jid></never></prefs></iq>").await;
    assert_eq!(phone.answer("p").await.get("type"), Some("result"));
    let mut lee = logged_in(server.irc, "lee", "lee", caps).await;
    lee.send("PRIVMSG kim :unkept").await;
    lee.line().await;
    kim.line().await;
    assert_eq!(history(&mut kim, "LATEST lee * 10", "lee").await, Vec::<String>::new());
    assert_eq!(history(&mut lee, "LATEST kim * 10", "kim").await.len(), 1, "lee's own archive keeps it");
}

/// IRCv3 extended-join: a `JOIN` names the member's account (`*` for none)
/// and real name to clients that asked, its own `JOIN` too; a member of
/// another protocol's real name is its name.
#[tokio::test]
async fn extended_join_names_the_account_and_the_real_name() {
    use base64::Engine;
    let config = sam_in_the_clear();
    let server = TestServer::with(config).await;
    let mut wat = register_with(server.irc, "wat", "extended-join").await;
    assert_eq!(wat.join("#x").await[0], ":wat!wat@localhost JOIN #x * :R\r\n");
    let mut plain = Irc::register(server.irc, "pla").await;
    plain.join("#x").await;
    assert_eq!(wat.line().await, ":pla!pla@localhost JOIN #x * :Real Name\r\n");
    assert_eq!(plain.join("#y").await[0], ":pla!pla@localhost JOIN #y\r\n", "not to a client that did not ask");
    let mut sam = Irc::connect(server.irc).await;
    sam.send("CAP REQ sasl").await;
    sam.send("NICK sammy").await;
    sam.send("USER s 0 * :Sam S").await;
    sam.send("AUTHENTICATE PLAIN").await;
    sam.until("AUTHENTICATE +").await;
    sam.send(&format!("AUTHENTICATE {}", base64::engine::general_purpose::STANDARD.encode("\0sam\0sesame"))).await;
    sam.until(" 903 ").await;
    sam.send("CAP END").await;
    sam.until(" 422 ").await;
    sam.join("#x").await;
    assert_eq!(wat.line().await, ":sammy!sammy@localhost JOIN #x sam :Sam S\r\n");
    let mut eve = server.ws("/chat/websocket").await;
    eve.send(&json!({"name": "Eve Smith", "room": "x"}).to_string()).await;
    assert_eq!(wat.line().await, ":Eve\\20Smith!Eve\\20Smith@localhost JOIN #x * :Eve Smith\r\n");
}

/// IRCv3 account-notify: a client that logs in once registered is told of
/// as `ACCOUNT` to those sharing a channel with it that asked.
#[tokio::test]
async fn logging_in_once_registered_is_told_to_those_who_asked() {
    use base64::Engine;
    let config = sam_in_the_clear();
    let server = TestServer::with(config).await;
    let mut told = register_with(server.irc, "tol", "account-notify").await;
    told.join("#acc").await;
    let mut not = Irc::register(server.irc, "not").await;
    not.join("#acc").await;
    let mut sam = Irc::register(server.irc, "sammy").await;
    sam.join("#acc").await;
    told.until("JOIN").await;
    told.until("JOIN").await;
    not.until("JOIN").await;
    sam.send("AUTHENTICATE PLAIN").await;
    assert_eq!(sam.line().await, "AUTHENTICATE +\r\n");
    sam.send(&format!("AUTHENTICATE {}", base64::engine::general_purpose::STANDARD.encode("\0sam\0sesame"))).await;
    assert_eq!(sam.line().await, ":localhost 900 sammy sammy!~u@localhost sam :You are now logged in as sam\r\n");
    assert_eq!(told.line().await, ":sammy!~u@localhost ACCOUNT sam\r\n");
    sam.send("PRIVMSG #acc :hi").await;
    assert_eq!(not.line().await, ":sammy!sammy@localhost PRIVMSG #acc :hi\r\n", "nothing before to one that did not ask");
}

/// IRCv3 account-registration: `REGISTER` makes an account as XMPP's
/// in-band registration does, and logs the client in to it; offered only
/// where accounts may be made and the password is safe on the way.
#[tokio::test]
async fn register_makes_an_account_and_logs_in_to_it() {
    use base64::Engine;
    let server = TestServer::start().await;
    let mut closed = Irc::register(server.irc, "clo").await;
    closed.send("REGISTER * * pw").await;
    assert_eq!(closed.line().await, ":localhost FAIL REGISTER TEMPORARILY_UNAVAILABLE * :Accounts are not made here\r\n");

    let mut config = sam_in_the_clear();
    config.xmpp.registration = 2;
    let server = TestServer::with(config).await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("CAP LS 302").await;
    assert!(irc.line().await.contains(" draft/account-registration=before-connect,custom-account-name "));
    irc.send("CAP REQ draft/account-registration").await;
    assert_eq!(irc.line().await, ":localhost CAP * ACK :draft/account-registration\r\n");
    irc.send("REGISTER * * pw").await;
    assert_eq!(irc.line().await, ":localhost FAIL REGISTER NEED_NICK * :Choose a nickname first\r\n");
    irc.send("NICK Reg").await;
    irc.send("REGISTER sam * pw").await;
    assert_eq!(irc.line().await, ":localhost FAIL REGISTER ACCOUNT_EXISTS sam :That account exists\r\n");
    irc.send("REGISTER * *").await;
    assert_eq!(irc.line().await, ":localhost 461 Reg REGISTER :Not enough parameters\r\n");
    // Before the connection completes: the account is its nickname's, case-mapped.
    irc.send("REGISTER * * secret").await;
    assert_eq!(irc.line().await, ":localhost REGISTER SUCCESS reg :Account created\r\n");
    assert_eq!(irc.line().await, ":localhost 900 Reg Reg!Reg@localhost reg :You are now logged in as reg\r\n");
    irc.send("REGISTER other * pw").await;
    assert_eq!(irc.line().await, ":localhost FAIL REGISTER ALREADY_AUTHENTICATED reg :You are already logged in\r\n");
    irc.send("USER r 0 * :R").await;
    irc.send("CAP END").await;
    irc.until(" 422 ").await;
    irc.send("WHOIS Reg").await;
    assert_eq!(irc.until(" 330 ").await, ":localhost 330 Reg Reg reg :is logged in as\r\n");
    // The account is the server's: SASL logs in to it.
    let mut again = Irc::connect(server.irc).await;
    again.send("AUTHENTICATE PLAIN").await;
    assert_eq!(again.line().await, "AUTHENTICATE +\r\n");
    again.send(&format!("AUTHENTICATE {}", base64::engine::general_purpose::STANDARD.encode("\0reg\0secret"))).await;
    assert!(again.line().await.starts_with(":localhost 900 * "));
    // Another name than its nickname's; then the bound.
    let mut other = Irc::register(server.irc, "oth").await;
    other.send("REGISTER ann * pw").await;
    assert_eq!(other.line().await, ":localhost REGISTER SUCCESS ann :Account created\r\n");
    assert_eq!(other.line().await, ":localhost 900 oth oth!~u@localhost ann :You are now logged in as ann\r\n");
    let mut third = Irc::register(server.irc, "thi").await;
    third.send("REGISTER * * pw").await;
    assert_eq!(third.line().await, ":localhost FAIL REGISTER TEMPORARILY_UNAVAILABLE * :No more accounts are made now\r\n");

    // A server with a password makes accounts only for those who gave it.
    let mut config = sam_in_the_clear();
    config.xmpp.registration = 2;
    config.irc.password = Some("letmein".into());
    let server = TestServer::with(config).await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("NICK pas").await;
    irc.send("REGISTER * * pw").await;
    assert_eq!(irc.line().await, ":localhost FAIL REGISTER TEMPORARILY_UNAVAILABLE * :Give the server's password first (PASS)\r\n");
    irc.send("PASS letmein").await;
    irc.send("REGISTER * * pw").await;
    assert_eq!(irc.line().await, ":localhost REGISTER SUCCESS pas :Account created\r\n");
}

#[tokio::test]
async fn a_line_too_long_is_answered_and_the_next_one_is_read() {
    let server = TestServer::start().await;
    let mut irc = Irc::register(server.irc, "hal").await;
    irc.send(&format!("PRIVMSG #x :{}", "y".repeat(600))).await;
    assert_eq!(irc.line().await, ":localhost 417 hal :Input line was too long\r\n");
    // Far past any line: dropped to its end, once answered.
    irc.send_bytes("z".repeat(20_000).as_bytes()).await;
    irc.send("\r\nPING after").await;
    assert_eq!(irc.line().await, ":localhost 417 hal :Input line was too long\r\n");
    assert_eq!(irc.line().await, ":localhost PONG localhost :after\r\n");
}

#[tokio::test]
async fn a_message_that_would_not_fit_one_line_as_relayed_is_refused_and_reaches_nobody() {
    let server = TestServer::start().await;
    let mut a = Irc::register(server.irc, "amy").await;
    a.join("#room").await;
    let mut b = Irc::register(server.irc, "ben").await;
    b.join("#room").await;
    a.until("JOIN").await;
    // ":amy!amy@localhost PRIVMSG #room :" is 34 bytes, CR LF 2: 476 fill the line.
    let fits = "x".repeat(476);
    a.send(&format!("PRIVMSG #room :{fits}")).await;
    let relayed = b.line().await;
    assert_eq!(relayed, format!(":amy!amy@localhost PRIVMSG #room :{fits}\r\n"));
    assert_eq!(relayed.len(), 512);
    a.send(&format!("PRIVMSG #room :{fits}y")).await;
    assert_eq!(a.line().await, ":localhost 417 amy :Input line was too long\r\n");
    // To a nickname: ":amy!~u@localhost PRIVMSG ben :" is 31 bytes.
    let fits = "z".repeat(479);
    a.send(&format!("PRIVMSG ben :{fits}y")).await;
    assert_eq!(a.line().await, ":localhost 417 amy :Input line was too long\r\n");
    a.send(&format!("PRIVMSG ben :{fits}")).await;
    assert_eq!(b.line().await, format!(":amy!~u@localhost PRIVMSG ben :{fits}\r\n"), "nothing of the refused ones came before");
    // A notice is never answered: it is cut into lines, and nothing is lost.
    a.send(&format!("NOTICE #room :{}", "n".repeat(477))).await;
    assert_eq!(b.line().await, format!(":amy!amy@localhost NOTICE #room :{}\r\n", "n".repeat(476)));
    assert_eq!(b.line().await, ":amy!amy@localhost NOTICE #room :n\r\n");
    a.send("PING done").await;
    assert_eq!(a.line().await, ":localhost PONG localhost :done\r\n");
}

/// A bare CR ends a line, so it never reaches the parameters a server
/// copies into other clients' lines (a `USER` with CRs in it used to make
/// its sender's source say `QUIT` to whoever it wrote to); a line with a
/// NUL is dropped whole.
#[tokio::test]
async fn a_bare_cr_ends_a_line_and_a_nul_drops_one() {
    let server = TestServer::start().await;
    let mut bob = Irc::register(server.irc, "bob").await;
    let mut amy = Irc::connect(server.irc).await;
    amy.send("NICK amy").await;
    amy.send("USER \rQUIT\r: 0 * :x").await;
    assert_eq!(amy.line().await, ":localhost 461 amy USER :Not enough parameters\r\n");
    assert_eq!(amy.line().await, "ERROR :Closing Link: 127.0.0.1 (Client Quit)\r\n");

    let mut amy = Irc::connect(server.irc).await;
    amy.send("NICK amy\rUSER a 0 * :Amy").await;
    amy.until(" 422 ").await;
    amy.send_bytes(b"PRIVMSG bob :a\0b\r\nPRIVMSG bob :one\rPRIVMSG bob :two\n").await;
    assert_eq!(bob.line().await, ":amy!~a@localhost PRIVMSG bob :one\r\n");
    assert_eq!(bob.line().await, ":amy!~a@localhost PRIVMSG bob :two\r\n");
}

/// A client that has given only `NICK` holds the name, but is nobody yet:
/// `WHOIS` and messages find no one (its `311` had an empty user field).
#[tokio::test]
async fn a_client_still_registering_is_not_found() {
    let server = TestServer::start().await;
    let mut half = Irc::connect(server.irc).await;
    half.send("NICK half").await;
    let mut bob = Irc::register(server.irc, "bob").await;
    bob.send("WHOIS half").await;
    assert_eq!(bob.line().await, ":localhost 401 bob half :No such nick/channel\r\n");
    assert_eq!(bob.line().await, ":localhost 318 bob half :End of /WHOIS list\r\n");
    bob.send("PRIVMSG half :hello?").await;
    assert_eq!(bob.line().await, ":localhost 401 bob half :No such nick/channel\r\n");
    half.send("USER h 0 * :H").await;
    half.until(" 422 ").await;
    bob.send("WHOIS half").await;
    assert_eq!(bob.line().await, ":localhost 311 bob half ~h localhost * :H\r\n");
}

/// A client sizes what it sends by the source its own JOIN showed it
/// (as WeeChat and irssi do): a channel message sized so fits as relayed,
/// even with a nickname much longer than its user name.
#[tokio::test]
async fn a_message_sized_by_the_senders_own_join_is_relayed_whole() {
    let server = TestServer::start().await;
    let long = "n".repeat(28);
    let mut sender = Irc::register(server.irc, &long).await;
    let join = sender.join("#room").await.remove(0);
    let source = join.strip_prefix(':').and_then(|l| l.split(' ').next()).unwrap().to_owned();
    let mut reader = Irc::register(server.irc, "reader").await;
    reader.join("#room").await;
    sender.until("reader").await;
    let text = "x".repeat(512 - format!(":{source} PRIVMSG #room :\r\n").len());
    sender.send(&format!("PRIVMSG #room :{text}")).await;
    assert_eq!(reader.line().await, format!(":{source} PRIVMSG #room :{text}\r\n"));
}

#[tokio::test]
async fn a_client_that_does_not_register_in_time_is_closed() {
    let mut config = server::Config::default();
    config.irc.registration_timeout = Duration::from_millis(200);
    let server = TestServer::with(config).await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("NICK slow").await;
    assert_eq!(irc.line().await, "ERROR :Closing Link: 127.0.0.1 (Registration timed out)\r\n");
    assert_eq!(irc.line().await, "");
    assert_eq!(server.metric("switchboard_refused_total{app=\"irc\",reason=\"registration_timeout\"}").await, Some(1.0));
}

#[tokio::test]
async fn a_silent_client_is_pinged_then_closed() {
    let mut config = server::Config::default();
    config.server.ping_interval = Duration::from_millis(200);
    let server = TestServer::with(config).await;
    let mut irc = Irc::register(server.irc, "quiet").await;
    assert_eq!(irc.line().await, "PING localhost\r\n");
    irc.send("PONG localhost").await;
    assert_eq!(irc.line().await, "PING localhost\r\n", "an answer counts as speaking");
    assert_eq!(irc.line().await, "ERROR :Closing Link: 127.0.0.1 (Ping timeout: 400ms)\r\n");
}

#[tokio::test]
async fn a_client_in_as_many_channels_as_it_may_be_cannot_join_more() {
    let mut config = server::Config::default();
    config.irc.max_channels = 2;
    let server = TestServer::with(config).await;
    let mut irc = Irc::register(server.irc, "many").await;
    irc.join("#a,#b").await;
    irc.until(" 366 many #b ").await;
    irc.send("JOIN #c").await;
    assert_eq!(irc.line().await, ":localhost 405 many #c :You have joined too many channels\r\n");
}

/// A connection to `addr` with a small receive buffer, so that the
/// server's writes back up soon once it stops reading.
async fn slow_reader(addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(addr).await.unwrap()
}

/// A client that never reads, in a busy room, with a small receive buffer
/// so that the server's writes back up soon: the server's write to it waits
/// on a full socket, and must not wait forever, holding the connection; the
/// room goes on meanwhile.
#[tokio::test]
async fn a_client_that_does_not_read_is_let_go_and_the_room_goes_on() {
    let mut config = server::Config::default();
    config.server.queue_limit = 16 * 1024;
    let server = TestServer::with(config).await;
    let mut stuck = Irc::over(slow_reader(server.irc).await).registered("stuck").await;
    stuck.join("#busy").await;
    let clients = "switchboard_connections{app=\"irc\",transport=\"tcp\"}";
    assert_eq!(server.metric(clients).await, Some(1.0));
    let mut chat = server.chat_member("talker", "busy").await;
    let text = "x ".repeat(1000);
    // The chat member gets each of its 2,000 messages: the stuck client
    // holds nobody up.
    for _ in 0..2000 {
        chat.send(&json!({ "message": text }).to_string()).await;
        while chat.recv_json().await.get("message").is_none() {}
    }
    until(|| async { (server.metric(clients).await == Some(0.0)).then_some(()) }).await;
    assert_eq!(server.metric("switchboard_slow_consumer_disconnects_total{app=\"irc\",transport=\"tcp\"}").await, Some(1.0));
}

/// Over WebSocket the connection's lines go through a pump to the client:
/// a client that stops reading holds neither, nor its slot.
#[tokio::test]
async fn a_websocket_client_that_does_not_read_gives_back_its_slot() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut config = server::Config::default();
    (config.server.queue_limit, config.server.max_connections) = (1 << 20, 2);
    let server = TestServer::with(config).await;
    let tcp = slow_reader(server.addr).await;
    let request = server.url("/irc-websocket").into_client_request().unwrap();
    let mut stuck = crate::support::Ws(tokio_tungstenite::client_async(request, tokio_tungstenite::MaybeTlsStream::Plain(tcp)).await.unwrap().0);
    stuck.send("NICK stuck").await;
    stuck.send("USER s 0 * :S").await;
    while !stuck.recv().await.contains(" 422 ") {}
    stuck.send("JOIN #busy").await;
    while !stuck.recv().await.contains(" 366 ") {}
    let mut talker = Irc::register(server.irc, "talker").await;
    talker.join("#busy").await;
    let line = format!("PRIVMSG #busy :{}", "x ".repeat(200));
    for _ in 0..20_000 {
        talker.send(&line).await;
    }
    talker.send("PING done").await;
    talker.until("PONG").await;
    // A third client gets in once the stuck one's slot is free.
    until(|| async {
        let mut third = Irc::connect(server.irc).await;
        third.send("NICK third").await;
        third.send("USER t 0 * :T").await;
        (!third.line().await.contains("too many connections")).then_some(())
    })
    .await;
    assert_eq!(server.metric("switchboard_slow_consumer_disconnects_total{app=\"irc\",transport=\"websocket\"}").await, Some(1.0));
}

#[tokio::test]
async fn a_fast_client_is_slowed_not_dropped() {
    let mut config = server::Config::default();
    config.limits.max_message_rate = 20;
    let server = TestServer::with(config).await;
    let mut irc = Irc::register(server.irc, "fast").await;
    let burst: String = (0..60).map(|i| format!("PING {i}\r\n")).collect();
    irc.send_bytes(burst.as_bytes()).await;
    for i in 0..60 {
        assert_eq!(irc.line().await, format!(":localhost PONG localhost :{i}\r\n"));
    }
}

#[tokio::test]
async fn parts_quits_and_notices_say_what_they_are() {
    let server = TestServer::start().await;
    let mut chat = server.chat_member("cleo", "one").await;
    let mut a = Irc::register(server.irc, "ann").await;
    let mut b = Irc::register(server.irc, "bea").await;
    for channel in ["#one", "#two"] {
        a.join(channel).await;
        b.join(channel).await;
        a.until(" JOIN ").await;
    }
    assert_eq!(chat.recv_json().await["name"], "ann");
    assert_eq!(chat.recv_json().await["name"], "bea");

    b.send("NOTICE #one :heads up").await;
    assert_eq!(a.line().await, ":bea!bea@localhost NOTICE #one :heads up\r\n");
    assert_eq!(chat.recv_json().await, json!({"name": "bea", "room": "one", "message": "heads up"}), "a message to other protocols");
    b.send("PART #two :off to bed").await;
    assert_eq!(b.line().await, ":bea!~u@localhost PART #two :off to bed\r\n");
    assert_eq!(a.line().await, ":bea!bea@localhost PART #two :off to bed\r\n");
    b.join("#two").await;
    a.until(" JOIN #two").await;
    b.send("QUIT :gone fishing").await;
    // One QUIT for both shared channels.
    assert_eq!(a.line().await, ":bea!bea@localhost QUIT :Quit: gone fishing\r\n");
    a.send("PING done").await;
    assert_eq!(a.line().await, ":localhost PONG localhost :done\r\n");
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "bea", "room": "one"}));
}

#[tokio::test]
async fn irc_over_websocket_is_one_line_a_message() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let server = TestServer::start().await;
    let mut request = server.url("/irc-websocket").into_client_request().unwrap();
    request.headers_mut().insert("Sec-WebSocket-Protocol", "binary.ircv3.net, text.ircv3.net".parse().unwrap());
    let (ws, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "text.ircv3.net");
    let mut ws = crate::support::Ws(ws);
    ws.send("NICK webby").await;
    ws.send("USER w 0 * :Web\r\n").await;
    assert_eq!(ws.recv().await, ":localhost 001 webby :Welcome to the Switchboard IRC Network webby!~w@localhost");
    while !ws.recv().await.contains(" 422 ") {}
    let mut tcp = Irc::register(server.irc, "tess").await;
    tcp.join("#lobby").await;
    ws.send("JOIN #lobby").await;
    assert_eq!(ws.recv().await, ":webby!webby@localhost JOIN #lobby");
    assert_eq!(ws.recv().await, ":localhost 353 webby = #lobby :@tess webby");
    assert_eq!(ws.recv().await, ":localhost 366 webby #lobby :End of /NAMES list");
    tcp.until("JOIN").await;
    tcp.send("PRIVMSG #lobby :over TCP").await;
    assert_eq!(ws.recv().await, ":tess!tess@localhost PRIVMSG #lobby :over TCP");
    ws.send("PRIVMSG #lobby :over WebSocket").await;
    assert_eq!(tcp.line().await, ":webby!webby@localhost PRIVMSG #lobby :over WebSocket\r\n");
    ws.send("QUIT").await;
    assert_eq!(ws.recv().await, "ERROR :Closing Link: 127.0.0.1 (Client Quit)");
    assert_eq!(tcp.line().await, ":webby!webby@localhost QUIT :Client Quit\r\n");
}

#[tokio::test]
async fn sasl_logs_in_to_the_accounts_xmpp_has() {
    use base64::Engine;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("sam", "sesame")], ..server::Config::default() };
    let server = TestServer::with(config.clone()).await;
    // Without TLS, PLAIN is not offered.
    let mut irc = Irc::connect(server.irc).await;
    irc.send("CAP LS 302").await;
    assert!(irc.line().await.contains(" sasl=SCRAM-SHA-256,SCRAM-SHA-1 "));
    irc.send("AUTHENTICATE PLAIN").await;
    assert_eq!(irc.line().await, ":localhost 908 * SCRAM-SHA-256,SCRAM-SHA-1 :are available SASL mechanisms\r\n");
    assert_eq!(irc.line().await, ":localhost 904 * :SASL authentication failed\r\n");
    // SCRAM's first challenge: the server's nonce, salt and rounds.
    irc.send("AUTHENTICATE SCRAM-SHA-256").await;
    assert_eq!(irc.line().await, "AUTHENTICATE +\r\n");
    irc.send(&format!("AUTHENTICATE {}", b64("n,,n=sam,r=clientnonce"))).await;
    let challenge = irc.line().await;
    let first = base64::engine::general_purpose::STANDARD.decode(challenge.trim_end().strip_prefix("AUTHENTICATE ").unwrap()).unwrap();
    let first = String::from_utf8(first).unwrap();
    assert!(first.starts_with("r=clientnonce") && first.contains(",s=") && first.ends_with(",i=4096"), "{first}");
    irc.send("AUTHENTICATE *").await;
    assert_eq!(irc.line().await, ":localhost 906 * :SASL authentication aborted\r\n");

    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with(config).await;
    let mut irc = Irc::connect(server.irc).await;
    irc.send("CAP LS 302").await;
    assert!(irc.line().await.contains(" sasl=SCRAM-SHA-256,SCRAM-SHA-1,PLAIN "));
    irc.send("CAP REQ sasl").await;
    assert_eq!(irc.line().await, ":localhost CAP * ACK :sasl\r\n");
    irc.send("NICK sammy").await;
    irc.send("USER s 0 * :Sam").await;
    irc.send("AUTHENTICATE PLAIN").await;
    assert_eq!(irc.line().await, "AUTHENTICATE +\r\n");
    irc.send(&format!("AUTHENTICATE {}", b64("\0sam\0wrong"))).await;
    assert_eq!(irc.line().await, ":localhost 904 sammy :SASL authentication failed\r\n");
    irc.send("AUTHENTICATE PLAIN").await;
    assert_eq!(irc.line().await, "AUTHENTICATE +\r\n");
    irc.send(&format!("AUTHENTICATE {}", b64("\0sam\0sesame"))).await;
    assert_eq!(irc.line().await, ":localhost 900 sammy sammy!~s@localhost sam :You are now logged in as sam\r\n");
    assert_eq!(irc.line().await, ":localhost 903 sammy :SASL authentication successful\r\n");
    irc.send("AUTHENTICATE PLAIN").await;
    assert_eq!(irc.line().await, ":localhost 907 sammy :You have already authenticated using SASL\r\n");
    irc.send("CAP END").await;
    irc.until(" 422 ").await;
    irc.send("WHOIS sammy").await;
    assert_eq!(irc.until(" 330 ").await, ":localhost 330 sammy sammy sam :is logged in as\r\n");
    // account-tag: what a logged-in member says carries its account; others' nothing.
    let mut watcher = register_with(server.irc, "watcher", "account-tag").await;
    watcher.send("JOIN #acct").await;
    watcher.until(" 366 ").await;
    irc.send("JOIN #acct").await;
    irc.until(" 366 ").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost JOIN #acct\r\n");
    irc.send("PRIVMSG #acct :hi").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost PRIVMSG #acct :hi\r\n");
    let mut anonymous = Irc::register(server.irc, "anon").await;
    anonymous.send("JOIN #acct").await;
    anonymous.until(" 366 ").await;
    assert_eq!(watcher.line().await, ":anon!anon@localhost JOIN #acct\r\n");
    anonymous.send("PRIVMSG #acct :hello").await;
    assert_eq!(watcher.line().await, ":anon!anon@localhost PRIVMSG #acct :hello\r\n");
    // So do the lines it sends a client itself: an invitation.
    irc.send("JOIN #inv").await;
    irc.until(" 366 ").await;
    irc.send("INVITE watcher #inv").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!~s@localhost INVITE watcher #inv\r\n");
    // A message longer than a chunk comes in chunks of 400.
    let mut other = Irc::connect(server.irc).await;
    other.send("AUTHENTICATE PLAIN").await;
    assert_eq!(other.line().await, "AUTHENTICATE +\r\n");
    other.send(&format!("AUTHENTICATE {}", "A".repeat(401))).await;
    assert_eq!(other.line().await, ":localhost 905 * :SASL message too long\r\n");
    // Chunks of 400 that run past 8 KiB, what no exchange needs, fail it.
    other.send("AUTHENTICATE PLAIN").await;
    assert_eq!(other.line().await, "AUTHENTICATE +\r\n");
    for _ in 0..21 {
        other.send(&format!("AUTHENTICATE {}", "A".repeat(400))).await;
    }
    assert_eq!(other.line().await, ":localhost 904 * :SASL authentication failed\r\n");
}

#[tokio::test]
async fn whowas_remembers_nicknames_that_went() {
    let server = TestServer::start().await;
    let mut gone = Irc::register(server.irc, "wes").await;
    gone.send("NICK wesley").await;
    gone.until("NICK wesley").await;
    gone.send("QUIT").await;
    assert_eq!(gone.until("ERROR").await, "ERROR :Closing Link: 127.0.0.1 (Client Quit)\r\n");
    let mut asker = Irc::register(server.irc, "ada").await;
    asker.send("WHOWAS wes*").await;
    assert_eq!(asker.line().await, ":localhost 314 ada wesley ~u localhost * :Real Name\r\n", "newest first");
    assert!(asker.line().await.starts_with(":localhost 312 ada wesley localhost :20"));
    assert_eq!(asker.line().await, ":localhost 314 ada wes ~u localhost * :Real Name\r\n");
    asker.line().await;
    assert_eq!(asker.line().await, ":localhost 369 ada wes* :End of WHOWAS\r\n");
    asker.send("WHOWAS wes* 1").await;
    assert!(asker.line().await.starts_with(":localhost 314 ada wesley "));
    asker.line().await;
    assert_eq!(asker.line().await, ":localhost 369 ada wes* :End of WHOWAS\r\n");
    asker.send("WHOWAS nobody").await;
    assert_eq!(asker.line().await, ":localhost 406 ada nobody :There was no such nickname\r\n");
    assert_eq!(asker.line().await, ":localhost 369 ada nobody :End of WHOWAS\r\n");
}

#[tokio::test]
async fn tls_from_the_first_byte_offers_plain_and_serves_the_same_protocol() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = std::env::temp_dir().join(format!("switchboard-irc-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = server::TlsFiles { cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    std::fs::write(&files.cert, cert.cert.pem()).unwrap();
    std::fs::write(&files.key, cert.signing_key.serialize_pem()).unwrap();
    let config = server::Config { tls: Some(files), xmpp_accounts: vec![server::AccountEntry::new("tess", "pw")], ..server::Config::default() };
    let server = TestServer::with(config).await;
    // In the clear, PLAIN is not offered …
    let mut clear = Irc::connect(server.irc).await;
    clear.send("CAP LS 302").await;
    assert!(clear.line().await.contains(" sasl=SCRAM-SHA-256,SCRAM-SHA-1 "));
    // … over TLS it is, and the rest is the same protocol.
    let tcp = TcpStream::connect(server.irc_tls.expect("a TLS port with a certificate")).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = crate::support::tls_connector(cert.cert.der()).connect(name, tcp).await.unwrap();
    let (read, mut write) = tokio::io::split(tls);
    let mut lines = BufReader::new(read).lines();
    let mut next = async || tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.expect("a line in time").unwrap().expect("a line");
    write.write_all(b"CAP LS 302\r\n").await.unwrap();
    assert!(next().await.contains(" sasl=SCRAM-SHA-256,SCRAM-SHA-1,PLAIN "));
    use base64::Engine;
    let plain = base64::engine::general_purpose::STANDARD.encode("\0tess\0pw");
    write.write_all(format!("NICK tess\r\nUSER t 0 * :Tess\r\nAUTHENTICATE PLAIN\r\nAUTHENTICATE {plain}\r\nCAP END\r\n").as_bytes()).await.unwrap();
    assert_eq!(next().await, "AUTHENTICATE +");
    assert_eq!(next().await, ":localhost 900 tess tess!~t@localhost tess :You are now logged in as tess");
    assert_eq!(next().await, ":localhost 903 tess :SASL authentication successful");
    assert!(next().await.starts_with(":localhost 001 tess "));
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn a_shutdown_closes_each_client_with_its_reason() {
    let server = TestServer::start().await;
    let mut irc = Irc::register(server.irc, "last").await;
    let stopped = server.shutdown();
    assert_eq!(irc.until("ERROR").await, "ERROR :Closing Link: 127.0.0.1 (Server shutting down)\r\n");
    assert_eq!(irc.line().await, "", "then the connection ends");
    stopped.await.expect("the server's task").expect("a clean stop");
}

#[tokio::test]
async fn a_server_password_is_asked_for_and_a_client_without_it_is_closed() {
    let mut config = server::Config::default();
    config.irc.password = Some("sesame".to_owned());
    let server = TestServer::with(config).await;
    for pass in [Some("PASS nope"), None] {
        let mut refused = Irc::connect(server.irc).await;
        if let Some(pass) = pass {
            refused.send(pass).await;
        }
        refused.send("NICK wrong").await;
        refused.send("USER w 0 * :W").await;
        assert_eq!(refused.line().await, ":localhost 464 wrong :Password incorrect\r\n");
        assert_eq!(refused.line().await, "ERROR :Closing Link: 127.0.0.1 (Bad password)\r\n");
        assert_eq!(refused.line().await, "", "then the connection ends");
    }
    let mut right = Irc::connect(server.irc).await;
    right.send("PASS").await;
    assert_eq!(right.line().await, ":localhost 461 * PASS :Not enough parameters\r\n");
    right.send("PASS sesame").await;
    right.send("NICK right").await;
    right.send("USER r 0 * :R").await;
    assert!(right.line().await.starts_with(":localhost 001 right "));
    right.send("PASS sesame").await;
    assert_eq!(right.until(" 462 ").await, ":localhost 462 right :You may not reregister\r\n");
}

#[tokio::test]
async fn links_lists_the_one_server_with_its_description() {
    let mut config = server::Config::default();
    config.irc.description = "a test server".to_owned();
    let server = TestServer::with(config).await;
    let mut irc = Irc::register(server.irc, "lin").await;
    irc.send("LINKS").await;
    assert_eq!(irc.line().await, ":localhost 364 lin localhost localhost :0 a test server\r\n");
    assert_eq!(irc.line().await, ":localhost 365 lin * :End of /LINKS list\r\n");
    irc.send("WHOIS lin").await;
    assert_eq!(irc.until(" 312 ").await, ":localhost 312 lin lin localhost :a test server\r\n", "WHOIS tells the same");
}

/// A server with one account, sam (password sesame), that offers SASL
/// PLAIN without TLS.
fn sam_in_the_clear() -> server::Config {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("sam", "sesame")], ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config
}

/// Connects, asks for `caps` and registers as `nick` (user `u`).
async fn register_with(addr: SocketAddr, nick: &str, caps: &str) -> Irc {
    let mut irc = Irc::connect(addr).await;
    irc.send(&format!("CAP REQ :{caps}")).await;
    irc.send(&format!("NICK {nick}")).await;
    irc.send("USER u 0 * :R").await;
    irc.send("CAP END").await;
    irc.until(" 422 ").await;
    irc
}

/// A line's `msgid` and the line without it: `@msgid=…;rest` as
/// (`…`, `@rest`), or `@msgid=… rest` as (`…`, `rest`).
fn without_msgid(line: &str) -> (String, String) {
    let rest = line.strip_prefix("@msgid=").unwrap_or_else(|| panic!("a msgid first: {line:?}"));
    let end = rest.find([';', ' ']).unwrap();
    let id = rest[..end].to_owned();
    let after = match rest.as_bytes()[end] {
        b';' => format!("@{}", &rest[end + 1..]),
        _ => rest[end + 1..].to_owned(),
    };
    (id, after)
}

/// IRCv3 message-tags: every message has a `msgid`, the same for each of
/// its recipients; client-only tags (`+…`) go on to clients that asked for
/// message-tags, other tags the client sent do not; `TAGMSG` reaches only
/// clients that read tags, in a channel and to a nick.
#[tokio::test]
async fn client_only_tags_and_msgids_reach_the_clients_that_read_tags() {
    let server = TestServer::start().await;
    let mut alice = register_with(server.irc, "alice", "message-tags echo-message").await;
    alice.join("#t").await;
    let mut bob = register_with(server.irc, "bob", "message-tags").await;
    bob.join("#t").await;
    let mut carol = Irc::register(server.irc, "carol").await;
    carol.join("#t").await;
    alice.until("carol").await;
    bob.until("carol").await;
    // Nothing came to carol before the answer to a ping.
    let nothing_before_pong = async |c: &mut Irc| assert_eq!(c.line().await.split(' ').nth(1), Some("PONG"));

    alice.send("@+draft/reply=x;fizz=buzz PRIVMSG #t :hi").await;
    let (id, echo) = without_msgid(&alice.line().await);
    assert_eq!(echo, "@+draft/reply=x :alice!alice@localhost PRIVMSG #t :hi\r\n");
    assert_eq!(without_msgid(&bob.line().await), (id.clone(), echo.clone()), "one msgid for all");
    assert_eq!(carol.line().await, ":alice!alice@localhost PRIVMSG #t :hi\r\n");

    // A NUL, which no IRC line may carry (in a tag it would end the tags
    // once relayed), drops its line: nothing is relayed.
    alice.send_bytes(b"@+a=b\0:evil!e@h PRIVMSG #t :spoof?\r\n").await;
    for c in [&mut alice, &mut bob, &mut carol] {
        c.send("PING x").await;
        nothing_before_pong(c).await;
    }

    alice.send("@+typing=active;cat=dog TAGMSG #t").await;
    let (id, echo) = without_msgid(&alice.line().await);
    assert_eq!(echo, "@+typing=active :alice!alice@localhost TAGMSG #t\r\n");
    assert_eq!(without_msgid(&bob.line().await), (id, echo));
    carol.send("PING x").await;
    nothing_before_pong(&mut carol).await;

    alice.send("@+x=y\\sz PRIVMSG bob :hey").await;
    let (id, echo) = without_msgid(&alice.line().await);
    assert_eq!(echo, "@+x=y\\sz :alice!~u@localhost PRIVMSG bob :hey\r\n");
    assert_eq!(without_msgid(&bob.line().await), (id, echo));
    bob.send("@+typing=paused TAGMSG alice").await;
    assert_eq!(without_msgid(&alice.line().await).1, "@+typing=paused :bob!~u@localhost TAGMSG alice\r\n");
    bob.send("@+typing=paused TAGMSG carol").await;
    bob.send("@+x=y PRIVMSG carol :psst").await;
    assert_eq!(carol.line().await, ":bob!~u@localhost PRIVMSG carol :psst\r\n", "no TAGMSG and no tags to carol");
    bob.send("PING y").await;
    nothing_before_pong(&mut bob).await;
    bob.send("TAGMSG").await;
    assert_eq!(bob.line().await, ":localhost 411 bob :No recipient given (TAGMSG)\r\n");
}

/// The lines of one multiline batch, from its start to its end.
async fn batch_lines(irc: &mut Irc) -> Vec<String> {
    let first = irc.line().await;
    assert!(first.contains(" BATCH +"), "a batch's start: {first:?}");
    let mut lines = vec![first];
    lines.extend(irc.lines_until(" BATCH -").await);
    lines
}

/// IRCv3 multiline: a message a client sends as a batch of lines reaches
/// the room whole, as one message in every protocol; a client that reads
/// multiline batches gets one (the message's tags on its start), another
/// the lines, blank ones dropped; a chat member's message of several lines
/// comes the same way; to a nick too.
#[tokio::test]
async fn a_multiline_batch_is_one_message_in_every_protocol() {
    let server = TestServer::start().await;
    let mut chat = server.chat_member("Dee", "t").await;
    let caps = "draft/multiline batch message-tags echo-message";
    let mut alice = register_with(server.irc, "alice", caps).await;
    alice.join("#t").await;
    let mut bob = register_with(server.irc, "bob", "draft/multiline batch message-tags").await;
    bob.join("#t").await;
    let mut carol = Irc::register(server.irc, "carol").await;
    carol.join("#t").await;
    alice.until("carol").await;
    bob.until("carol").await;
    for name in ["alice", "bob", "carol"] {
        assert_eq!(chat.recv_json().await["name"], name);
    }

    alice.send("@+draft/reply=x BATCH +1 draft/multiline #t").await;
    alice.send("@batch=1 PRIVMSG #t hello").await;
    alice.send("@batch=1 PRIVMSG #t :").await;
    alice.send("@batch=1 PRIVMSG #t :how is ").await;
    alice.send("@batch=1;draft/multiline-concat PRIVMSG #t :everyone?").await;
    alice.send("BATCH -1").await;
    let echo = batch_lines(&mut alice).await;
    let (id, start) = without_msgid(&echo[0]);
    let reference = format!("m{id}");
    assert_eq!(start, format!("@+draft/reply=x :alice!alice@localhost BATCH +{reference} draft/multiline #t\r\n"));
    let line = |text: &str| format!("@batch={reference} :alice!alice@localhost PRIVMSG #t :{text}\r\n");
    let goes_on = format!("@batch={reference};draft/multiline-concat :alice!alice@localhost PRIVMSG #t :everyone?\r\n");
    assert_eq!(echo[1..], [line("hello"), line(""), line("how is "), goes_on, format!(":alice!alice@localhost BATCH -{reference}\r\n")], "its lines as the sender cut them");
    assert_eq!(batch_lines(&mut bob).await, echo, "one batch for every client that reads them");
    assert_eq!(carol.line().await, ":alice!alice@localhost PRIVMSG #t :hello\r\n");
    assert_eq!(carol.line().await, ":alice!alice@localhost PRIVMSG #t :how is \r\n", "no blank line; the lines as the sender cut them");
    assert_eq!(carol.line().await, ":alice!alice@localhost PRIVMSG #t :everyone?\r\n");
    assert_eq!(chat.recv_json().await, json!({"name": "alice", "room": "t", "message": "hello\n\nhow is everyone?"}));

    chat.send(&json!({"message": "one\r\ntwo"}).to_string()).await;
    let lines = batch_lines(&mut bob).await;
    let (id, start) = without_msgid(&lines[0]);
    assert_eq!(start, format!(":Dee!Dee@localhost BATCH +m{id} draft/multiline #t\r\n"));
    assert_eq!(lines[1], format!("@batch=m{id} :Dee!Dee@localhost PRIVMSG #t :one\r\n"));
    assert_eq!(lines[2], format!("@batch=m{id} :Dee!Dee@localhost PRIVMSG #t :two\r\n"));
    assert_eq!(lines.len(), 4);
    assert_eq!(batch_lines(&mut alice).await, lines);
    assert_eq!(carol.line().await, ":Dee!Dee@localhost PRIVMSG #t :one\r\n");
    assert_eq!(carol.line().await, ":Dee!Dee@localhost PRIVMSG #t :two\r\n");

    alice.send("BATCH +2 draft/multiline bob").await;
    alice.send("@batch=2 PRIVMSG bob :a").await;
    alice.send("@batch=2 PRIVMSG bob :b").await;
    alice.send("BATCH -2").await;
    let to_bob = batch_lines(&mut bob).await;
    let (id, start) = without_msgid(&to_bob[0]);
    assert_eq!(start, format!(":alice!~u@localhost BATCH +m{id} draft/multiline bob\r\n"));
    assert_eq!(to_bob[1..3], [format!("@batch=m{id} :alice!~u@localhost PRIVMSG bob :a\r\n"), format!("@batch=m{id} :alice!~u@localhost PRIVMSG bob :b\r\n")]);
    assert_eq!(batch_lines(&mut alice).await, to_bob, "echoed");
    alice.send("BATCH +3 draft/multiline carol").await;
    alice.send("@batch=3 PRIVMSG carol :a").await;
    alice.send("@batch=3 PRIVMSG carol :b").await;
    alice.send("BATCH -3").await;
    assert_eq!(carol.line().await, ":alice!~u@localhost PRIVMSG carol :a\r\n");
    assert_eq!(carol.line().await, ":alice!~u@localhost PRIVMSG carol :b\r\n");
}

/// What breaks a multiline batch's rules is answered with `FAIL BATCH`,
/// and nothing of that batch reaches anyone.
#[tokio::test]
async fn a_multiline_batch_that_breaks_a_rule_is_refused_and_reaches_nobody() {
    let server = TestServer::start().await;
    let mut alice = register_with(server.irc, "alice", "draft/multiline batch").await;
    alice.join("#t").await;
    let mut bob = Irc::register(server.irc, "bob").await;
    bob.join("#t").await;
    alice.until("bob").await;
    let fail = |rest: &str| format!(":localhost FAIL BATCH {rest}\r\n");

    alice.send("BATCH +a draft/multiline #t").await;
    for _ in 0..33 {
        alice.send("@batch=a PRIVMSG #t hi").await;
    }
    alice.send("BATCH -a").await;
    assert_eq!(alice.line().await, fail("MULTILINE_MAX_LINES 32 :Multiline batch max-lines exceeded"), "once, then the rest dropped");

    alice.send("BATCH +b draft/multiline #t").await;
    for _ in 0..11 {
        alice.send(&format!("@batch=b PRIVMSG #t {}", "x".repeat(400))).await;
    }
    alice.send("BATCH -b").await;
    assert_eq!(alice.line().await, fail("MULTILINE_MAX_BYTES 4096 :Multiline batch max-bytes exceeded"));

    alice.send("BATCH +c draft/multiline #t").await;
    alice.send("@batch=c PRIVMSG #u hi").await;
    alice.send("BATCH -c").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID_TARGET #t #u :Invalid multiline target"));

    alice.send("BATCH +d draft/multiline #t").await;
    alice.send("@batch=d PRIVMSG #t hi").await;
    alice.send("@batch=d;draft/multiline-concat PRIVMSG #t :").await;
    alice.send("BATCH -d").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :A blank line cannot go on the one before"));

    alice.send("BATCH +e draft/multiline #t").await;
    alice.send("@batch=f PRIVMSG #t :hi").await;
    alice.send("@batch=e PRIVMSG #t :hi").await;
    alice.send("BATCH -e").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :A line of another batch than the one open"));

    alice.send("BATCH +g draft/multiline #t").await;
    alice.send("@batch=g NOTICE #t :hi").await;
    alice.send("BATCH -g").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :A multiline batch holds PRIVMSG lines only"));

    alice.send("BATCH +h draft/multiline #t").await;
    alice.send("@batch=h PRIVMSG #t :").await;
    alice.send("BATCH -h").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :A multiline batch of blank lines only, or none"));

    alice.send("BATCH -z").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :No such batch is open"));
    alice.send("BATCH +i chathistory #t").await;
    assert_eq!(alice.line().await, fail("MULTILINE_INVALID :Only draft/multiline batches are taken"));
    alice.send("BATCH -i").await;
    bob.send("BATCH +j draft/multiline #t").await;
    assert_eq!(bob.line().await, fail("MULTILINE_INVALID :draft/multiline is not enabled"));
    bob.send("BATCH -j").await;

    // None of it reached bob: the next line is the answer to his ping.
    bob.send("PING x").await;
    assert_eq!(bob.line().await, ":localhost PONG localhost :x\r\n");
    // And a batch after them all goes.
    alice.send("BATCH +k draft/multiline #t").await;
    alice.send("@batch=k PRIVMSG #t :after").await;
    alice.send("@batch=k PRIVMSG #t :all").await;
    alice.send("BATCH -k").await;
    assert_eq!(bob.line().await, ":alice!alice@localhost PRIVMSG #t :after\r\n");
    assert_eq!(bob.line().await, ":alice!alice@localhost PRIVMSG #t :all\r\n");
}

/// account-tag names the account of whoever did it, in any protocol: an
/// XMPP user of this server's accounts who enters a room, speaks, sets its
/// subject and leaves shows its account to IRC clients that asked.
#[tokio::test]
async fn account_tag_names_the_account_of_a_member_of_any_protocol() {
    let config = sam_in_the_clear();
    let server = TestServer::with_xmpp(config).await;
    let mut watcher = register_with(server.irc, "watcher", "account-tag").await;
    watcher.join("#acct").await;
    let mut plain = Irc::register(server.irc, "plain").await;
    plain.join("#acct").await;
    watcher.until("plain").await;

    let mut sam = crate::xmpp::login_account(server.xmpp.unwrap(), "sam", "sesame").await;
    sam.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    sam.stanza().await;
    sam.send("<presence to='acct@conference.localhost/sammy'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost JOIN #acct\r\n");
    assert_eq!(plain.line().await, ":sammy!sammy@localhost JOIN #acct\r\n", "no tags to a client that did not ask");
    while sam.stanza().await.find("subject", "jabber:client").is_none() {}
    sam.send("<message to='acct@conference.localhost' type='groupchat'><body>hi</body></message>").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost PRIVMSG #acct :hi\r\n");
    sam.send("<message to='acct@conference.localhost' type='groupchat'><subject>plans</subject></message>").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost TOPIC #acct :plans\r\n");
    sam.send("<presence to='acct@conference.localhost/sammy' type='unavailable'/>").await;
    assert_eq!(watcher.line().await, "@account=sam :sammy!sammy@localhost PART #acct\r\n");
    // A member logged in to no account: nothing.
    plain.send("PRIVMSG #acct :me too").await;
    assert_eq!(watcher.line().await, ":plain!plain@localhost PRIVMSG #acct :me too\r\n");
}

/// IRCv3 labeled-response: a command tagged with a label is answered
/// under it in one logical message (a line, a batch, or `ACK`), to a
/// client that asked for it and for batch; a channel message by its echo,
/// a `JOIN` by its greeting, a multiline message (labeled at its start) by
/// its echoed batch.
#[tokio::test]
async fn a_labeled_command_is_answered_under_its_label() {
    let server = TestServer::start().await;
    let mut ann = register_with(server.irc, "ann", "labeled-response batch echo-message message-tags draft/multiline").await;
    let mut bob = register_with(server.irc, "bob", "labeled-response batch").await;

    ann.send("@label=p1 PING x").await;
    assert_eq!(ann.line().await, "@label=p1 :localhost PONG localhost :x\r\n");
    ann.send("@label=p2 PONG x").await;
    assert_eq!(ann.line().await, "@label=p2 :localhost ACK\r\n", "no answer: ACK");
    ann.send("@label=a\\:b FROB").await;
    assert_eq!(ann.line().await, "@label=a\\:b :localhost 421 ann FROB :Unknown command\r\n", "the label as sent, escaped again");
    ann.send("@label=u NO_SUCH-COMMAND").await;
    assert_eq!(ann.line().await, "@label=u :localhost 421 ann NO_SUCH-COMMAND :Unknown command\r\n");

    ann.send("@label=w WHOIS bob").await;
    let whois = ann.lines_until("BATCH -").await;
    assert_eq!(whois[0], "@label=w :localhost BATCH +l1 labeled-response\r\n");
    assert!(whois[1].starts_with("@batch=l1 :localhost 311 ann bob ~u localhost "), "{whois:?}");
    assert!(whois[1..whois.len() - 1].iter().all(|l| l.starts_with("@batch=l1 :localhost ")), "{whois:?}");
    assert_eq!(whois.last().unwrap(), ":localhost BATCH -l1\r\n");

    ann.send("@label=j JOIN #t").await;
    assert_eq!(
        ann.lines_until("BATCH -").await,
        [
            "@label=j :localhost BATCH +l2 labeled-response\r\n",
            "@batch=l2 :ann!ann@localhost JOIN #t\r\n",
            "@batch=l2 :localhost 353 ann = #t :@ann\r\n",
            "@batch=l2 :localhost 366 ann #t :End of /NAMES list\r\n",
            ":localhost BATCH -l2\r\n",
        ]
    );
    // Part of it refused: the refusal in the same batch.
    ann.send("@label=j2 JOIN #u,inv@lid").await;
    assert_eq!(
        ann.lines_until("BATCH -").await,
        [
            "@label=j2 :localhost BATCH +l4 labeled-response\r\n",
            "@batch=l4 :ann!ann@localhost JOIN #u\r\n",
            "@batch=l4 :localhost 353 ann = #u :@ann\r\n",
            "@batch=l4 :localhost 366 ann #u :End of /NAMES list\r\n",
            "@batch=l4 :localhost 403 ann inv@lid :No such channel\r\n",
            ":localhost BATCH -l4\r\n",
        ]
    );
    // A channel it is in already: nothing comes of it.
    ann.send("@label=j3 JOIN #t").await;
    assert_eq!(ann.line().await, "@label=j3 :localhost ACK\r\n");
    bob.join("#t").await;
    ann.until("bob!bob@localhost JOIN").await;

    // A channel message: its echo carries the label, and only the sender's.
    ann.send("@label=m PRIVMSG #t :hi").await;
    let (_, echo) = without_msgid(&ann.line().await.replacen("@label=m;", "@", 1));
    assert_eq!(echo, ":ann!ann@localhost PRIVMSG #t :hi\r\n");
    assert_eq!(bob.line().await, ":ann!ann@localhost PRIVMSG #t :hi\r\n");
    // A multiline message, labeled at its start: its echoed batch, at its start.
    ann.send("@label=ml BATCH +b draft/multiline #t").await;
    ann.send("@batch=b PRIVMSG #t :one").await;
    ann.send("@batch=b PRIVMSG #t :two").await;
    ann.send("BATCH -b").await;
    let batch = batch_lines(&mut ann).await;
    assert!(batch[0].starts_with("@label=ml;msgid=") && batch[0].contains(" BATCH +m"), "{batch:?}");
    assert_eq!(batch.len(), 4);
    assert_eq!(bob.line().await, ":ann!ann@localhost PRIVMSG #t :one\r\n");
    assert_eq!(bob.line().await, ":ann!ann@localhost PRIVMSG #t :two\r\n");
    // To itself: the message it gets has no label, its echo has it.
    ann.send("@label=s PRIVMSG ann :me").await;
    let (_, delivered) = without_msgid(&ann.line().await);
    assert_eq!(delivered, ":ann!~u@localhost PRIVMSG ann :me\r\n");
    assert!(ann.line().await.starts_with("@label=s;msgid="));
    // A message that goes nowhere answers with its error.
    ann.send("@label=e PRIVMSG #elsewhere :hi").await;
    assert_eq!(ann.line().await, "@label=e :localhost 404 ann #elsewhere :Cannot send to channel\r\n");

    // Too long a label, or a client that did not ask: as if none were given.
    ann.send(&format!("@label={} PING y", "x".repeat(65))).await;
    assert_eq!(ann.line().await, ":localhost PONG localhost :y\r\n");
    let mut carol = register_with(server.irc, "carol", "labeled-response").await;
    carol.send("@label=c PING z").await;
    assert_eq!(carol.line().await, ":localhost PONG localhost :z\r\n", "labeled-response needs batch");
}

/// No line a client can send panics the server or ends a connection
/// unasked: 2,000 lines made at random (a fixed seed) from the commands,
/// targets, tags and texts IRC clients send, multiline batches, labels and
/// channel modes among them, from two clients in one channel. Each still
/// answers a ping every 20 lines, and a third member of the channel gets
/// only whole lines. `IRC_FUZZ_SEED` sets another seed (40 were run when
/// it was written).
#[tokio::test]
async fn lines_made_at_random_harm_nobody() {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let server = TestServer::start().await;
    let caps = "draft/multiline batch labeled-response echo-message message-tags server-time account-tag";
    let mut a = register_with(server.irc, "a", caps).await;
    let mut b = register_with(server.irc, "b", caps).await;
    let mut watcher = register_with(server.irc, "w", "message-tags batch draft/multiline").await;
    for c in [&mut a, &mut b, &mut watcher] {
        c.join("#f").await;
    }
    let long_label = format!("@label={}", "x".repeat(70));
    let long_text = format!(":{}", "é ".repeat(200));
    let tags = ["", "@label=l", "@batch=1", "@batch=1;draft/multiline-concat", "@+typing=active", "@label=x;batch=2", &long_label, "@draft/multiline-concat"];
    let words = ["PRIVMSG", "NOTICE", "TAGMSG", "BATCH", "JOIN", "PART", "MODE", "TOPIC", "KICK", "INVITE", "WHO", "WHOIS", "NAMES", "AWAY", "CAP", "LIST", "NO_SUCH", "privmsg", "MONITOR"];
    let targets = ["#f", "#g", "a", "b", "w", "#f,#g", "", "*", "+1", "-1", "+2", "-2", "+", "-", "L", "S", "C"];
    let texts = [":hi", ":", "draft/multiline #f", "draft/multiline b", "#f", ":\u{1}ACTION x\u{1}", ":  spaced  ", "+o a", "+m", "-m", "+b *!*@*", "-b *!*@*", "REQ :draft/multiline", &long_text, ""];
    let mut rng = StdRng::seed_from_u64(std::env::var("IRC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7));
    let mut pick = |from: &[&str]| from[rng.random_range(0..from.len())].to_owned();
    for round in 0..100 {
        for client in [&mut a, &mut b] {
            for _ in 0..10 {
                let line = format!("{} {} {} {}", pick(&tags), pick(&words), pick(&targets), pick(&texts));
                client.send(line.trim()).await;
            }
            // Still there, and answering.
            client.send(&format!("PING r{round}")).await;
            client.until(&format!("PONG localhost :r{round}")).await;
        }
    }
    watcher.send("PING end").await;
    for line in watcher.lines_until("PONG localhost :end").await {
        assert!(line.ends_with("\r\n") && !line[..line.len() - 2].contains(['\r', '\n', '\0']), "{line:?}");
    }
}

/// IRCv3 MONITOR: a client names the nicknames it wants to know of, and is
/// told when each comes online (its client registers, or a client takes
/// it) and goes offline (its client leaves, or gives it up); at most 100.
/// With extended-monitor, it is told of their AWAY as if it shared a channel.
#[tokio::test]
async fn monitor_tells_when_a_watched_nickname_comes_and_goes() {
    let server = TestServer::start().await;
    let mut ann = register_with(server.irc, "ann", "extended-monitor away-notify").await;
    let mut bob = Irc::register(server.irc, "bob").await;
    ann.send("MONITOR + bob,Cy,b*d!u@h").await;
    assert_eq!(ann.line().await, ":localhost 432 ann b*d!u@h :Erroneous nickname\r\n", "a mask is no nickname");
    assert_eq!(ann.line().await, ":localhost 730 ann :bob!~u@localhost\r\n");
    assert_eq!(ann.line().await, ":localhost 731 ann :Cy\r\n");
    // extended-monitor: what away-notify tells of a shared channel's
    // members, of a watched nickname too, with no channel shared.
    bob.send("AWAY :afk").await;
    assert_eq!(ann.line().await, ":bob!~u@localhost AWAY :afk\r\n");

    let mut cy = Irc::register(server.irc, "cy").await;
    assert_eq!(ann.line().await, ":localhost 730 ann :cy!~u@localhost\r\n");
    // The same nickname in other letters: nothing; another: offline.
    cy.send("NICK CY").await;
    cy.send("NICK dee").await;
    assert_eq!(ann.line().await, ":localhost 731 ann :CY\r\n");
    bob.send("QUIT").await;
    assert_eq!(ann.line().await, ":localhost 731 ann :bob\r\n");
    ann.send("MONITOR L").await;
    assert_eq!(ann.line().await, ":localhost 732 ann :bob,Cy\r\n");
    assert_eq!(ann.line().await, ":localhost 733 ann :End of MONITOR list\r\n");
    ann.send("MONITOR - cy").await;
    ann.send("MONITOR S").await;
    assert_eq!(ann.line().await, ":localhost 731 ann :bob\r\n", "no answer to -, and cy no longer watched");
    dee_quits(&mut cy).await;
    ann.send("MONITOR C").await;
    ann.send("MONITOR L").await;
    assert_eq!(ann.line().await, ":localhost 733 ann :End of MONITOR list\r\n");

    let many: Vec<String> = (0..102).map(|n| format!("n{n}")).collect();
    ann.send(&format!("MONITOR + {}", many.join(","))).await;
    assert_eq!(ann.line().await, ":localhost 734 ann 100 n100,n101 :Monitor list is full.\r\n");
    let offline = ann.lines_until(",n99\r\n").await;
    assert!(offline.iter().all(|l| l.starts_with(":localhost 731 ann :") && l.len() <= 512), "{offline:?}");
    assert_eq!(offline.iter().map(|l| l.matches(',').count() + 1).sum::<usize>(), 100);
}

async fn dee_quits(dee: &mut Irc) {
    dee.send("QUIT").await;
    while !dee.line().await.is_empty() {}
}

/// IRCv3 setname: a new real name, told to itself and to the members of
/// shared channels that asked, and shown by WHOIS; an empty or too long
/// one is refused. A message goes to at most four targets (TARGMAX).
#[tokio::test]
async fn setname_changes_a_real_name_and_messages_have_at_most_four_targets() {
    let server = TestServer::start().await;
    let mut ann = register_with(server.irc, "ann", "setname").await;
    let mut bob = register_with(server.irc, "bob", "setname").await;
    let mut cy = Irc::register(server.irc, "cy").await;
    for c in [&mut ann, &mut bob, &mut cy] {
        c.join("#s").await;
    }
    ann.until("cy").await;
    bob.until("cy").await;
    ann.send("SETNAME :Ann Other").await;
    assert_eq!(ann.line().await, ":ann!~u@localhost SETNAME :Ann Other\r\n");
    assert_eq!(bob.line().await, ":ann!~u@localhost SETNAME :Ann Other\r\n");
    cy.send("WHOIS ann").await;
    assert_eq!(cy.line().await, ":localhost 311 cy ann ~u localhost * :Ann Other\r\n", "none to cy, who did not ask");
    cy.until(" 318 ").await;
    ann.send(&format!("SETNAME :{}", "x".repeat(391))).await;
    assert_eq!(ann.line().await, ":localhost FAIL SETNAME INVALID_REALNAME :A real name is 1 to 390 bytes\r\n");

    ann.send("PRIVMSG bob,cy,ann,#s,bob :hi").await;
    assert_eq!(bob.line().await, ":ann!~u@localhost PRIVMSG bob :hi\r\n");
    assert_eq!(cy.line().await, ":ann!~u@localhost PRIVMSG cy :hi\r\n");
    assert_eq!(ann.line().await, ":ann!~u@localhost PRIVMSG ann :hi\r\n");
    assert_eq!(ann.line().await, ":localhost 407 ann bob :Too many targets; at most 4\r\n");
    assert_eq!(bob.line().await, ":ann!ann@localhost PRIVMSG #s :hi\r\n");
    assert_eq!(cy.line().await, ":ann!ann@localhost PRIVMSG #s :hi\r\n");
    bob.send("PING x").await;
    assert_eq!(bob.line().await, ":localhost PONG localhost :x\r\n", "the fifth target got nothing");
}
