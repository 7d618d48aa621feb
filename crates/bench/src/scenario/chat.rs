//! chat: rooms × users, every user sending M messages at a fixed interval.

use super::Ctx;
use crate::Error;
use crate::flags::ChatSettings;
use crate::result::ChatResult;
use crate::transport::TransportKind;

pub(crate) async fn run(
    _ctx: &Ctx,
    _settings: &ChatSettings,
    _kinds: &[TransportKind],
    _out: &mut Vec<ChatResult>,
) -> Result<(), Error> {
    Err(Error::usage("the chat scenario is not built yet"))
}
