//! The server API's methods: what each takes (its params, JSON with no
//! unknown field) and what it answers. Each is `POST /api/<method>`, and
//! `batch` runs several in one call. `openapi.json` describes them; a test
//! checks the two agree.

use std::sync::Arc;

use hub::{Payload, RoomEvent, Speaks};
use serde::Deserialize;
use serde_json::{Value, json};
use store::{Cursor, Filter};
use wire::app::MAX_NAME_LEN;
use wire::nickname::Nickname;

use crate::error::ApiError;
use crate::idempotency::Seen;
use crate::Api;

/// Every method, as its path names it.
pub const NAMES: [&str; 9] = ["publish", "broadcast", "presence", "presence_stats", "history", "disconnect", "rooms", "info", "batch"];

/// One call: a method with its params.
#[derive(Debug)]
pub enum Command {
    Publish(Publish),
    Broadcast(Broadcast),
    Presence(RoomPage),
    PresenceStats(Room),
    History(History),
    Disconnect(Disconnect),
    Rooms(Rooms),
    Info(Empty),
    Batch(Batch),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    room: String,
    #[serde(default)]
    name: Option<String>,
    text: String,
    #[serde(default)]
    idempotency_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Broadcast {
    rooms: Vec<String>,
    #[serde(default)]
    name: Option<String>,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Room {
    room: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomPage {
    room: String,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    room: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    after: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disconnect {
    name: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rooms {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    after: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    commands: Vec<BatchItem>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchItem {
    method: String,
    #[serde(default = "empty_object")]
    params: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// Longest reason a disconnect gives: it goes into a WebSocket close
/// frame, whose reason may be at most 123 bytes.
const MAX_REASON: usize = 120;

/// Longest idempotency key: with `--api-idempotency-keys` of them kept,
/// what they hold stays bounded.
const MAX_IDEMPOTENCY_KEY: usize = 200;

/// What a disconnected client is told when the call gives no reason.
const DISCONNECTED: &str = "disconnected by the server";

/// Where a call's params are read from: a request's body, or one command
/// of a batch, already parsed with the batch.
trait Params {
    fn read<T: serde::de::DeserializeOwned>(self) -> serde_json::Result<T>;
}

impl Params for &[u8] {
    fn read<T: serde::de::DeserializeOwned>(self) -> serde_json::Result<T> {
        let body = if self.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { self };
        serde_json::from_slice(body)
    }
}

impl Params for Value {
    fn read<T: serde::de::DeserializeOwned>(self) -> serde_json::Result<T> {
        serde_json::from_value(self)
    }
}

impl Command {
    /// The call of method `name` with the params in `body`.
    pub fn parse(name: &str, body: &[u8]) -> Result<Command, ApiError> {
        Command::of(name, body)
    }

    fn of(name: &str, params: impl Params) -> Result<Command, ApiError> {
        let taken = |e: serde_json::Error| ApiError::bad_request(format!("the params are not what the method takes: {e}"));
        Ok(match name {
            "publish" => Command::Publish(params.read().map_err(taken)?),
            "broadcast" => Command::Broadcast(params.read().map_err(taken)?),
            "presence" => Command::Presence(params.read().map_err(taken)?),
            "presence_stats" => Command::PresenceStats(params.read().map_err(taken)?),
            "history" => Command::History(params.read().map_err(taken)?),
            "disconnect" => Command::Disconnect(params.read().map_err(taken)?),
            "rooms" => Command::Rooms(params.read().map_err(taken)?),
            "info" => Command::Info(params.read().map_err(taken)?),
            "batch" => Command::Batch(params.read().map_err(taken)?),
            _ => return Err(ApiError::unknown_method(name)),
        })
    }
}

impl Api {
    /// Runs one call.
    pub(crate) async fn run(&self, command: Command) -> Result<Value, ApiError> {
        match command {
            Command::Publish(p) => self.publish(p).await,
            Command::Broadcast(b) => self.broadcast(b).await,
            Command::Presence(p) => self.presence(p).await,
            Command::PresenceStats(r) => self.presence_stats(r).await,
            Command::History(h) => self.history(h).await,
            Command::Disconnect(d) => self.disconnect(d).await,
            Command::Rooms(r) => self.rooms(r).await,
            Command::Info(_) => Ok(self.info()),
            Command::Batch(b) => self.batch(b).await,
        }
    }

    async fn publish(&self, p: Publish) -> Result<Value, ApiError> {
        let Some(key) = p.idempotency_key else {
            return self.say(&p.room, p.name.as_deref(), &p.text).await;
        };
        if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
            return Err(ApiError::invalid(format!("an idempotency key is 1 to {MAX_IDEMPOTENCY_KEY} bytes")));
        }
        match self.idempotency.see(&key) {
            Seen::Done(reply) => return Ok(reply),
            Seen::UnderWay => return Err(ApiError::conflict(format!("a publish with idempotency key {key:?} is under way"))),
            Seen::New => {}
        }
        let reply = self.say(&p.room, p.name.as_deref(), &p.text).await;
        match &reply {
            Ok(reply) => self.idempotency.done(&key, reply),
            Err(_) => self.idempotency.failed(&key),
        }
        reply
    }

    /// Publishes `text` into `room` as the member `name`, or as the room
    /// itself without one: delivered to every member on every node and
    /// protocol, and kept as a chat client's message is; with its position
    /// in the room's history when the room kept it.
    async fn say(&self, room: &str, name: Option<&str>, text: &str) -> Result<Value, ApiError> {
        check_room(room)?;
        let name = name.map(Nickname::parse).transpose().map_err(|e| ApiError::invalid(format!("invalid name: {e}")))?;
        if text.is_empty() {
            return Err(ApiError::invalid("the text is empty"));
        }
        let room: Arc<str> = Arc::from(room);
        let text = Arc::from(text);
        let event = match name {
            Some(name) => RoomEvent::Message { name: name.shown, text },
            None => RoomEvent::Announcement { text },
        };
        let position = self.reach.rooms.publish_and_keep(&room, Payload::event(room.clone(), event)).await?;
        Ok(match position {
            Some(p) => json!({ "room": room, "offset": p.offset, "epoch": p.epoch }),
            None => json!({ "room": room }),
        })
    }

    async fn broadcast(&self, b: Broadcast) -> Result<Value, ApiError> {
        if b.rooms.len() > self.settings.max_batch {
            return Err(ApiError::invalid(format!("more than {} rooms (--api-max-batch)", self.settings.max_batch)));
        }
        let mut replies = Vec::with_capacity(b.rooms.len());
        for room in &b.rooms {
            replies.push(match self.say(room, b.name.as_deref(), &b.text).await {
                Ok(result) => json!({ "result": result }),
                Err(e) => e.to_json(),
            });
        }
        Ok(json!({ "replies": replies }))
    }

    async fn presence(&self, p: RoomPage) -> Result<Value, ApiError> {
        check_room(&p.room)?;
        let limit = self.page(p.limit)?;
        let present = self.reach.rooms.presence(&p.room, limit).await?;
        let members: Vec<Value> = present
            .iter()
            .map(|m| json!({ "name": m.name, "protocol": m.speaks.name(), "node": m.node.as_ref().unwrap_or(&self.reach.node) }))
            .collect();
        Ok(json!({ "room": p.room, "members": members }))
    }

    async fn presence_stats(&self, r: Room) -> Result<Value, ApiError> {
        check_room(&r.room)?;
        let present = self.reach.rooms.presence(&r.room, self.reach.rooms.limits().max_members).await?;
        let count = |speaks| present.iter().filter(|m| m.speaks == speaks).count();
        let protocols = json!({ "app": count(Speaks::App), "xmpp": count(Speaks::Xmpp), "irc": count(Speaks::Irc) });
        Ok(json!({ "room": r.room, "members": present.len(), "protocols": protocols }))
    }

    async fn history(&self, h: History) -> Result<Value, ApiError> {
        check_room(&h.room)?;
        let limit = self.page(h.limit)?;
        let Some((archive, prefix)) = &self.reach.archive else {
            // Without an archive: what the room keeps in memory here, newest last.
            if h.before.is_some() || h.after.is_some() {
                return Err(ApiError::invalid("before and after need the rooms' archive (--room-archive)"));
            }
            let kept = self.reach.rooms.history(&h.room);
            let newest = &kept[kept.len().saturating_sub(limit)..];
            let messages: Vec<Value> = newest.iter().filter_map(message_json).collect();
            return Ok(json!({ "room": h.room, "messages": messages, "complete": newest.len() == kept.len() }));
        };
        let cursor = match (h.before, h.after) {
            (Some(_), Some(_)) => return Err(ApiError::invalid("give before or after, not both")),
            (None, Some(after)) => Cursor::After(after),
            (before, None) => Cursor::Before(before),
        };
        let name = base::rooms::ArchivedRooms::archive_of(prefix, &h.room);
        // What was published before this call is in the page: the writer
        // commits what it was given first.
        archive.flush().await;
        let page = archive.page(&name, &Filter::default(), &cursor, limit).await.map_err(|e| {
            tracing::warn!("the server API could not read the archive of {:?}: {e}", h.room);
            ApiError::unavailable("the archive cannot be read now; try again later")
        })?;
        let Some(page) = page else {
            return Err(ApiError::invalid("no message of this room has the id given in before or after"));
        };
        let messages: Vec<Value> = page
            .entries
            .iter()
            .map(|e| json!({ "id": e.id, "at": at(base::archive::time(e.at)), "name": Some(&e.with).filter(|w| !w.is_empty()), "text": e.message }))
            .collect();
        Ok(json!({ "room": h.room, "messages": messages, "complete": page.complete }))
    }

    async fn disconnect(&self, d: Disconnect) -> Result<Value, ApiError> {
        Nickname::parse(&d.name).map_err(|e| ApiError::invalid(format!("invalid name: {e}")))?;
        let reason = d.reason.unwrap_or_else(|| DISCONNECTED.to_owned());
        if reason.len() > MAX_REASON || reason.chars().any(char::is_control) {
            return Err(ApiError::invalid(format!("the reason must be at most {MAX_REASON} bytes, with no control character")));
        }
        let mut disconnected = self.reach.clients.disconnect(&d.name, &reason);
        if let Some(elsewhere) = &self.reach.elsewhere {
            disconnected += elsewhere(d.name.clone(), reason).await?;
        }
        Ok(json!({ "name": d.name, "disconnected": disconnected }))
    }

    async fn rooms(&self, r: Rooms) -> Result<Value, ApiError> {
        let limit = self.page(r.limit)?;
        let mut rooms = self.reach.rooms.rooms().await?;
        if let Some(pattern) = &r.pattern {
            rooms.retain(|s| wire::mask::matches(pattern, &s.room, wire::mask::Case::Sensitive));
        }
        if let Some(after) = &r.after {
            rooms.retain(|s| &*s.room > after.as_str());
        }
        rooms.sort_by(|a, b| a.room.cmp(&b.room));
        let more = rooms.len() > limit;
        rooms.truncate(limit);
        let next = more.then(|| rooms.last().map(|s| s.room.clone())).flatten();
        let listed: Vec<Value> = rooms.iter().map(|s| json!({ "room": s.room, "members": s.members })).collect();
        Ok(json!({ "rooms": listed, "next": next }))
    }

    fn info(&self) -> Value {
        let mut clients: Vec<Value> = self
            .context
            .metrics
            .clients()
            .into_iter()
            .map(|(app, transport, count)| json!({ "app": app, "transport": transport, "count": count }))
            .collect();
        clients.sort_by_key(|c| (c["app"].as_str().map(str::to_owned), c["transport"].as_str().map(str::to_owned)));
        let mut nodes = vec![self.reach.node.clone()];
        nodes.extend((self.reach.nodes)());
        json!({ "version": env!("CARGO_PKG_VERSION"), "node": self.reach.node, "nodes": nodes, "clients": clients })
    }

    async fn batch(&self, b: Batch) -> Result<Value, ApiError> {
        if b.commands.len() > self.settings.max_batch {
            return Err(ApiError::invalid(format!("more than {} commands (--api-max-batch)", self.settings.max_batch)));
        }
        let mut replies = Vec::with_capacity(b.commands.len());
        for item in b.commands {
            let reply = match Command::of(&item.method, item.params) {
                Ok(Command::Batch(_)) => Err(ApiError::invalid("a batch cannot hold a batch")),
                Ok(command) => Box::pin(self.run(command)).await,
                Err(e) => Err(e),
            };
            replies.push(match reply {
                Ok(result) => json!({ "result": result }),
                Err(e) => e.to_json(),
            });
        }
        Ok(json!({ "replies": replies }))
    }

    /// A page's length: `limit`, or the most a page holds.
    fn page(&self, limit: Option<usize>) -> Result<usize, ApiError> {
        match limit {
            None => Ok(self.settings.max_page),
            Some(0) => Err(ApiError::invalid("limit must be at least 1")),
            Some(n) if n > self.settings.max_page => Err(ApiError::invalid(format!("limit must be at most {} (--api-max-page)", self.settings.max_page))),
            Some(n) => Ok(n),
        }
    }
}

/// A room name as the chat app takes one.
fn check_room(room: &str) -> Result<(), ApiError> {
    if !wire::app::is_room_name(room) {
        return Err(ApiError::invalid(format!("invalid room: must be 1 to {MAX_NAME_LEN} bytes with no control character")));
    }
    Ok(())
}

/// A kept message as the history method lists it.
fn message_json(payload: &Payload) -> Option<Value> {
    let (name, text) = match payload.as_event()?.1 {
        RoomEvent::Message { name, text } => (Some(name), text),
        RoomEvent::Announcement { text } => (None, text),
        _ => return None,
    };
    Some(json!({ "id": payload.id(), "at": at(payload.at()), "name": name, "text": text }))
}

/// A time as RFC 3339 with microseconds, in UTC.
fn at(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_micros(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_method_or_field_is_refused() {
        assert_eq!(Command::parse("nope", b"{}").unwrap_err().code, "unknown_method");
        assert_eq!(Command::parse("info", br#"{"x":1}"#).unwrap_err().code, "bad_request");
        assert!(matches!(Command::parse("info", b""), Ok(Command::Info(_))));
    }
}
