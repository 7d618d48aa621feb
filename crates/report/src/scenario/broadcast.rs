//! broadcast (and selftest, and muc through an XMPP room): per connection level, the
//! send rate ramps up step by step until the server saturates. The chart is the classic
//! one: mean round trip against received messages per second, one line per (server,
//! level).

use serde::Deserialize;

use super::{Ctx, Section, Warnings, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, Latency, Resources, Run};
use crate::table::{Table, mib, ms, num};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BroadcastRun {
    pub settings: Settings,
    pub levels: Vec<Level>,
    pub summary: Vec<LevelSummary>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub good_mean_us: Option<f64>,
    pub max_mean_us: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Level {
    pub transport: String,
    pub connections: Option<f64>,
    pub connect: Latency,
    pub steps: Vec<Step>,
    pub saturation: Option<Saturation>,
    pub max_received_per_s_good_mean: Option<f64>,
    pub max_sustainable_received_per_s: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Step {
    pub rate: Option<f64>,
    pub duration_s: Option<f64>,
    pub sent: Option<f64>,
    pub sent_per_s: Option<f64>,
    pub received: Option<f64>,
    pub received_per_s: Option<f64>,
    pub expected: Option<f64>,
    pub lost: Option<f64>,
    pub missing: Option<f64>,
    pub late_sends: Option<f64>,
    pub round_trip: Latency,
    pub round_trip_uncorrected: Latency,
    pub resources: Resources,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Saturation {
    pub reason: String,
    pub rate: Option<f64>,
    pub detail: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LevelSummary {
    pub transport: String,
    pub connections: Option<f64>,
    pub bench_cpu_bound: bool,
}

impl Level {
    /// Caveats of the level: any step's, or the bench's summary of the level.
    pub fn caveats(&self, run: &Run, summary: &[LevelSummary]) -> Caveats {
        let mut c = Caveats {
            partial: run.partial,
            ..Caveats::default()
        };
        for step in &self.steps {
            c.bench_cpu_bound |= step.resources.bench_cpu_bound;
            c.host_saturated |= step.resources.host_saturated;
        }
        c.bench_cpu_bound |= summary.iter().any(|s| {
            s.bench_cpu_bound && s.transport == self.transport && s.connections == self.connections
        });
        c
    }
}

/// Which sweep a section shows: they share their figures, not their words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    Broadcast,
    Selftest,
    Muc,
}

impl Sweep {
    /// The section's title, what it measures, and its chart's title.
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Sweep::Broadcast => (
                "Broadcast",
                "Every client receives every message. Per connection level the total send rate grows step by step until the server saturates (messages lost, connections dropped, or the mean round trip too high); each point is one step.",
                "Broadcast: mean round trip vs received msgs/s",
            ),
            Sweep::Selftest => (
                "Selftest: the bench's own receive rate",
                "The broadcast ramp against a local switchboard, to find how many messages per second the bench itself can receive; figures above it describe the bench, not the server.",
                "Selftest: mean round trip vs received msgs/s",
            ),
            Sweep::Muc => (
                "MUC: broadcast through an XMPP room",
                "The broadcast sweep over XMPP: per level every client logs in and joins one Multi-User Chat room (XEP-0045), and every occupant receives every groupchat message; the send rate grows step by step until the server saturates.",
                "MUC: mean round trip vs received msgs/s",
            ),
        }
    }
}

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run], sweep: Sweep) -> Section {
    let (title, about, chart_title) = sweep.words();
    let mut section = Section {
        id: id.to_string(),
        title: title.to_string(),
        about: about.to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, BroadcastRun)> = parse_runs(ctx, runs, &mut section);
    let names = parsed
        .iter()
        .flat_map(|(_, b)| b.levels.iter().map(|l| l.transport.as_str()));
    let many_transports = transports(names).len() > 1;

    let mut rt = Chart::line(
        format!("{id}-rt"),
        chart_title,
        "received messages per second (all clients)",
        "mean round trip (ms)",
    );
    let mut warnings = Warnings::default();
    // The bench's threshold for a good mean, when the file says it.
    let good_mean = match parsed.iter().find_map(|(_, d)| d.settings.good_mean_us) {
        Some(us) => format!(
            "#max received msgs/s with mean < {} ms",
            num(Some(us / 1000.0), 0)
        ),
        None => "#max received msgs/s with a good mean".to_string(),
    };
    let mut levels_table = Table::new(
        "Per level: the highest rate the server sustained",
        &[
            "server",
            "caveats",
            "transport",
            "#connections",
            "#connect p50 (ms)",
            "#steps",
            "#max sustainable received msgs/s",
            &good_mean,
            "saturation",
        ],
    );
    let mut steps_table = Table::new(
        "Every step",
        &[
            "server",
            "caveats",
            "#connections",
            "#target msgs/s",
            "#sent/s",
            "#received/s",
            "#mean RT (ms)",
            "#p99 RT (ms)",
            "#lost",
            "#missing",
            "#late sends",
            "#server CPU (%)",
            "#server RSS (MiB)",
            "#bench CPU (%)",
        ],
    );

    // Shades: a source's levels go from dark (fewest connections) to light.
    for (run, data) in &parsed {
        let label = ctx.label(run);
        let shades = data.levels.len();
        for (k, level) in data.levels.iter().enumerate() {
            let caveats = level.caveats(run, &data.summary);
            let conns = num(level.connections, 0);
            let series_label = if many_transports {
                format!(
                    "{label} · {conns} conns · {}",
                    transport_name(&level.transport)
                )
            } else {
                format!("{label} · {conns} conns")
            };
            let mut points = Vec::new();
            for step in &level.steps {
                let c = Caveats::of(run, &step.resources);
                warnings.note(label, &series_label, c);
                points.push(Point {
                    x: step.received_per_s,
                    y: step.round_trip.mean_ms(),
                    flag: c.bench_cpu_bound.then(|| c.text()),
                    ..Default::default()
                });
                steps_table.push(
                    vec![
                        label.to_string(),
                        c.text(),
                        conns.clone(),
                        num(step.rate, 0),
                        num(step.sent_per_s, 0),
                        num(step.received_per_s, 0),
                        ms(step.round_trip.mean_us),
                        ms(step.round_trip.p99_us),
                        num(step.lost, 0),
                        num(step.missing, 0),
                        num(step.late_sends, 0),
                        num(step.resources.server_cpu_pct, 0),
                        mib(step.resources.server_rss_max_bytes),
                        num(step.resources.bench_cpu_pct, 0),
                    ],
                    c.serious(),
                );
            }
            warnings.note(label, &series_label, caveats);
            rt.series.push(Series {
                label: series_label,
                color: chart::color(run.source, k, shades),
                point_style: chart::point_style(k),
                points,
            });
            let saturation = level.saturation.as_ref().map_or_else(
                || "none up to --max-rate".to_string(),
                |s| {
                    let detail = if s.detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", s.detail)
                    };
                    format!("{} at {} msgs/s{detail}", s.reason, num(s.rate, 0))
                },
            );
            levels_table.push(
                vec![
                    label.to_string(),
                    caveats.text(),
                    transport_name(&level.transport).to_string(),
                    conns,
                    ms(level.connect.p50_us),
                    level.steps.len().to_string(),
                    num(level.max_sustainable_received_per_s, 0),
                    num(level.max_received_per_s_good_mean, 0),
                    saturation,
                ],
                caveats.serious(),
            );
        }
    }
    rt.warnings = warnings.lines();
    rt.subtitle = warnings.short();
    let rt = rt.finish();
    if rt.is_empty() {
        section
            .notes
            .push("No step has a round trip to plot.".to_string());
    } else {
        section.charts.push(rt);
    }
    if !levels_table.rows.is_empty() {
        section.tables.push(levels_table);
        section.tables.push(steps_table);
    }
    section
}
