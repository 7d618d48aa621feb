//! The rooms a node follows, whichever way it shares them (NATS, or the
//! uplink to its host): each for as many members as it has here, or on
//! their way in, with who is in it on other nodes.

use std::collections::HashMap;
use std::sync::Arc;

use hub::{BrokerError, Hub, Payload, RoomEvent};
use parking_lot::Mutex;
use tokio::sync::watch;

/// A room a node follows, as its members wait for it and see who is in
/// it elsewhere.
#[derive(Debug)]
pub(crate) struct Room {
    /// `Some(Ok)` once the history and the names elsewhere are in.
    pub(crate) ready: watch::Sender<Option<Result<(), BrokerError>>>,
    /// Names held on other nodes: shown name to node.
    pub(crate) elsewhere: Mutex<HashMap<Arc<str>, Arc<str>>>,
}

impl Room {
    fn new() -> Arc<Room> {
        Arc::new(Room { ready: watch::channel(None).0, elsewhere: Mutex::new(HashMap::new()) })
    }

    /// Waits until the room is ready, or cannot be.
    pub(crate) async fn ready(&self) -> Result<(), BrokerError> {
        let mut ready = self.ready.subscribe();
        match ready.wait_for(Option::is_some).await {
            Ok(outcome) => (*outcome).unwrap_or(Err(BrokerError::Unavailable)),
            Err(_) => Err(BrokerError::Unavailable),
        }
    }

    /// Takes the members on `node` (every node, for `None`) out of room
    /// `name`, telling the members here (in `hub`) that they left.
    pub(crate) fn bury(&self, hub: &Hub, name: &Arc<str>, node: Option<&Arc<str>>) {
        let mut gone = Vec::new();
        self.elsewhere.lock().retain(|member, at| {
            let stays = node.is_some_and(|node| at != node);
            if !stays {
                gone.push(member.clone());
            }
            stays
        });
        for member in gone {
            hub.publish(name, &Payload::event(name.clone(), RoomEvent::leave(member)));
        }
    }
}

/// The rooms followed, each with what following it holds (`T`: the task
/// that reads it, or nothing).
#[derive(Debug)]
pub(crate) struct Following<T> {
    rooms: Mutex<HashMap<Arc<str>, Followed<T>>>,
}

#[derive(Debug)]
struct Followed<T> {
    /// Members here, or on their way in.
    interest: usize,
    room: Arc<Room>,
    with: T,
}

impl<T> Following<T> {
    pub(crate) fn new() -> Following<T> {
        Following { rooms: Mutex::new(HashMap::new()) }
    }

    /// One more member in `room`: the room, followed with `start` if this
    /// is the first (under the lock, so that a stop and a start keep their
    /// order).
    pub(crate) fn enter<E>(&self, room: &str, start: impl FnOnce(&Arc<str>, &Arc<Room>) -> Result<T, E>) -> Result<Arc<Room>, E> {
        let mut rooms = self.rooms.lock();
        if let Some(followed) = rooms.get_mut(room) {
            followed.interest += 1;
            return Ok(followed.room.clone());
        }
        let (name, state): (Arc<str>, _) = (Arc::from(room), Room::new());
        let with = start(&name, &state)?;
        rooms.insert(name, Followed { interest: 1, room: state.clone(), with });
        Ok(state)
    }

    /// One member fewer in `room`; the last one stops following it, with
    /// `stop` (under the lock).
    pub(crate) fn leave(&self, room: &str, stop: impl FnOnce(T)) {
        let mut rooms = self.rooms.lock();
        let Some(followed) = rooms.get_mut(room) else { return };
        followed.interest -= 1;
        if followed.interest == 0
            && let Some(followed) = rooms.remove(room)
        {
            stop(followed.with);
        }
    }

    pub(crate) fn get(&self, room: &str) -> Option<Arc<Room>> {
        self.rooms.lock().get(room).map(|f| f.room.clone())
    }

    /// Every room followed.
    pub(crate) fn all(&self) -> Vec<(Arc<str>, Arc<Room>)> {
        self.rooms.lock().iter().map(|(name, f)| (name.clone(), f.room.clone())).collect()
    }

    /// The names of `room`'s members, at most `max`: those here (in `hub`),
    /// then those elsewhere.
    pub(crate) fn names(&self, hub: &Hub, room: &str, max: usize) -> Vec<Arc<str>> {
        let mut names = hub.names(room, max);
        if let Some(followed) = self.rooms.lock().get(room) {
            let elsewhere = followed.room.elsewhere.lock();
            names.extend(elsewhere.keys().take(max.saturating_sub(names.len())).cloned());
        }
        names
    }
}
