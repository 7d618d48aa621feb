//! IRC channels for the scenarios that put clients in rooms (chat, broadcast): every
//! connection joins its channel, a few at a time, before the scenario starts, as MUC
//! occupants enter their room (`muc`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Ctx, on_each};
use crate::Error;
use crate::transport::{Connection, irc};

/// Joins at once: enough to be quick, few enough not to flood.
const JOIN_AT_ONCE: usize = 64;

/// A channel name unique to this run and `label`, so that leftovers of an earlier run
/// never share it.
pub(crate) fn fresh(label: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("#bench-{}-{nanos}-{label}", std::process::id())
}

/// Joins connection `i` to `channel_of(i)`, each waiting for the end of its names list;
/// from then on each connection's messages go to its channel. The error carries how
/// many had joined before it.
pub(crate) async fn join_all(ctx: &Ctx, conns: &mut [Connection], channel_of: impl Fn(u32) -> String) -> Result<(), (u32, Error)> {
    let joined = AtomicU64::new(0);
    let channel_of = &channel_of;
    let joining = on_each(conns, JOIN_AT_ONCE, |conn, i| {
        let joined = &joined;
        async move {
            let (Some(tx), Some(rx)) = (conn.sender.irc(), conn.receiver.irc()) else {
                return Err(Error::usage("an IRC channel needs the IRC transport"));
            };
            let channel = channel_of(i);
            let what = format!("the end of {channel}'s names after {} joined it", tx.nick());
            ctx.expect(async { irc::join(tx, rx, &channel).await.map(Some) }, &what).await?;
            ctx.progress.set(joined.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(())
        }
    });
    joining.await
}
