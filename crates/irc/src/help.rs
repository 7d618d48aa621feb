//! What `HELP` (and `HELPOP`) says: a line on each command this server
//! takes, and the index of them (Modern IRC: `704`, `705`, `706`; `524`
//! for a subject it has none on).

/// Each command, its parameters and what it does, in one line.
const TOPICS: &[(&str, &str)] = &[
    ("AUTHENTICATE", "AUTHENTICATE <mechanism>: logs in to an account with SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-1)"),
    ("AWAY", "AWAY [:<message>]: marks you away with a message, or back without one"),
    ("BATCH", "BATCH +<ref> draft/multiline <target>, then BATCH -<ref>: sends the PRIVMSG lines between as one message"),
    ("CAP", "CAP LS [302] | REQ :<caps> | LIST | END: negotiates IRCv3 capabilities"),
    ("HELP", "HELP [<command>]: this index, or a line on one command"),
    ("INFO", "INFO: what this server is"),
    ("INVITE", "INVITE <nick> <channel>: lets a user into an invite-only channel once"),
    ("ISON", "ISON <nick> ...: which of the nicknames are online"),
    ("JOIN", "JOIN <channel>[,...] [<key>[,...]]: joins channels (a room shared with chat and XMPP users); JOIN 0 leaves them all"),
    ("KICK", "KICK <channel> <nick>[,...] [:<reason>]: a channel operator takes IRC users out"),
    ("KILL", "KILL <nick> :<reason>: a server operator closes a user's connection"),
    ("LINKS", "LINKS: the servers of this network (this one)"),
    ("LIST", "LIST: the channels, their sizes and topics"),
    ("LUSERS", "LUSERS: how many users and channels this server has"),
    ("MODE", "MODE <channel> [+|-]<modes> [<args>] | MODE <nick> [+|-]<modes>: shows or changes modes"),
    ("MONITOR", "MONITOR + <nick>[,...] | - <nick>[,...] | C | L | S: tells you when nicknames come online and go"),
    ("MOTD", "MOTD: the message of the day (there is none)"),
    ("NAMES", "NAMES <channel>: who is in a channel"),
    ("NICK", "NICK <nick>: takes a nickname"),
    ("NOTICE", "NOTICE <target>[,...] :<text>: a message no client answers automatically"),
    ("OPER", "OPER <name> <password>: makes you a server operator"),
    ("PART", "PART <channel>[,...] [:<reason>]: leaves channels"),
    ("PASS", "PASS <password>: the server's password, before registering"),
    ("PING", "PING <token>: answered with PONG <token>"),
    ("PRIVMSG", "PRIVMSG <target>[,...] :<text>: a message to channels or users, at most 4"),
    ("QUIT", "QUIT [:<reason>]: leaves the server"),
    ("SETNAME", "SETNAME :<real name>: changes your real name"),
    ("TAGMSG", "TAGMSG <target>: client-only tags and no text, such as +typing"),
    ("TOPIC", "TOPIC <channel> [:<topic>]: shows or sets a channel's topic"),
    ("USER", "USER <user> 0 * :<real name>: your user name and real name, when registering"),
    ("USERHOST", "USERHOST <nick> ...: the nick!user@host of each"),
    ("VERSION", "VERSION: this server's version"),
    ("WALLOPS", "WALLOPS :<text>: a server operator's message to users with mode +w"),
    ("WHO", "WHO <channel>|<mask>: who is in a channel, or whose nickname matches"),
    ("WHOIS", "WHOIS <nick>: who a user is"),
    ("WHOWAS", "WHOWAS <nick> [<count>]: who had a nickname lately"),
];

/// What `HELP` says of `subject` (the index if empty): its lines' texts,
/// the first for `704`, the others for `705`; `None` if it has none.
pub fn lines(subject: &str) -> Option<Vec<String>> {
    if subject.is_empty() {
        let mut lines = vec!["Commands this server takes; HELP <command> says more:".to_owned()];
        let names: Vec<&str> = TOPICS.iter().map(|(name, _)| *name).collect();
        lines.extend(names.chunks(10).map(|chunk| chunk.join(" ")));
        return Some(lines);
    }
    let (_, text) = TOPICS.iter().find(|(name, _)| name.eq_ignore_ascii_case(subject))?;
    Some(vec![(*text).to_owned()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_has_a_line_and_the_index_names_them_all() {
        assert!(TOPICS.windows(2).all(|pair| pair[0].0 < pair[1].0), "in order");
        assert!(TOPICS.iter().all(|(name, text)| text.starts_with(name) && text.len() < 400));
        assert_eq!(lines("privmsg").unwrap().len(), 1);
        assert_eq!(lines("NOSUCH"), None);
        let index = lines("").unwrap();
        assert_eq!(index[1..].iter().map(|l| l.split(' ').count()).sum::<usize>(), TOPICS.len());
    }
}
