//! pingpong: sequential round trips to an echo app, one bar group per transport and one
//! bar per server.

use serde::Deserialize;

use super::per_transport::{self, PerTransport, Results};
use super::{Ctx, Plot, Section, parse_runs};
use crate::input::{Latency, Resources, Run};
use crate::table::{ms, num};

pub type PingpongRun = Results<PingpongResult>;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PingpongResult {
    pub transport: String,
    pub connect_us: Option<f64>,
    pub count: Option<f64>,
    pub total_us: Option<f64>,
    pub round_trip: Latency,
    pub resources: Resources,
}

impl PerTransport for PingpongResult {
    fn transport(&self) -> &str {
        &self.transport
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

/// The two charts: what each plots from a result.
const CHARTS: [Plot<PingpongResult>; 2] = [
    Plot {
        key: "mean",
        title: "Ping-pong: mean round trip per transport",
        y: "mean round trip (µs)",
        value: |r| r.round_trip.mean_us,
    },
    Plot {
        key: "p99",
        title: "Ping-pong: p99 round trip per transport",
        y: "p99 round trip (µs)",
        value: |r| r.round_trip.p99_us,
    },
];

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Ping-pong".to_string(),
        about: "One client sends a message to an echo app and waits for it to come back, again and again: the round trip of one message, per transport.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, PingpongRun)> = parse_runs(ctx, runs, &mut section);
    for plot in &CHARTS {
        section
            .charts
            .extend(per_transport::bars(ctx, id, &parsed, plot));
    }
    if section.charts.is_empty() && !parsed.is_empty() {
        section.notes.push("No round trip completed.".to_string());
    }
    let columns = [
        "#round trips",
        "#connect (ms)",
        "#total (ms)",
        "#mean (µs)",
        "#p50 (µs)",
        "#p90 (µs)",
        "#p99 (µs)",
        "#p99.9 (µs)",
        "#max (µs)",
        "#server CPU (%)",
    ];
    section
        .tables
        .extend(per_transport::table(ctx, &parsed, &columns, |r| {
            let l = &r.round_trip;
            vec![
                num(r.count, 0),
                ms(r.connect_us),
                ms(r.total_us),
                num(l.mean_us, 0),
                num(l.p50_us, 0),
                num(l.p90_us, 0),
                num(l.p99_us, 0),
                num(l.p999_us, 0),
                num(l.max_us, 0),
                num(r.resources.server_cpu_pct, 0),
            ]
        }));
    section
}
