//! broadcast: per connection level, ramp the total send rate until saturation.

use super::Ctx;
use crate::Error;
use crate::flags::BroadcastSettings;
use crate::result::BroadcastLevel;
use crate::transport::TransportKind;

pub(crate) async fn run(
    _ctx: &Ctx,
    _settings: &BroadcastSettings,
    _kinds: &[TransportKind],
    _out: &mut Vec<BroadcastLevel>,
) -> Result<(), Error> {
    Err(Error::usage("the broadcast scenario is not built yet"))
}

/// One row per level: the highest sustainable received rate.
pub(crate) fn summarise(levels: &[BroadcastLevel]) -> Vec<crate::result::LevelSummary> {
    levels
        .iter()
        .map(|l| crate::result::LevelSummary {
            transport: l.transport,
            connections: l.connections,
            max_sustainable_received_per_s: l.max_sustainable_received_per_s,
            max_received_per_s_good_mean: l.max_received_per_s_good_mean,
            saturated: l.saturation.is_some(),
            bench_cpu_bound: l.steps.iter().any(|s| s.resources.bench_cpu_bound),
        })
        .collect()
}
