//! pingpong: sequential round trips to an echo app, one bar group per transport and one
//! bar per server.

use serde::Deserialize;

use super::{Ctx, Plot, Section, Warnings, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, Latency, Resources, Run};
use crate::table::{Table, ms, num};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PingpongRun {
    pub results: Vec<PingpongResult>,
}

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

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Ping-pong".to_string(),
        about: "One client sends a message to an echo app and waits for it to come back, again and again: the round trip of one message, per transport.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, PingpongRun)> = parse_runs(ctx, runs, &mut section);
    let categories = transports(
        parsed
            .iter()
            .flat_map(|(_, p)| p.results.iter().map(|r| r.transport.as_str())),
    );
    let charts: [Plot<Latency>; 2] = [
        Plot {
            key: "mean",
            title: "Ping-pong: mean round trip per transport",
            y: "mean round trip (µs)",
            value: |l| l.mean_us,
        },
        Plot {
            key: "p99",
            title: "Ping-pong: p99 round trip per transport",
            y: "p99 round trip (µs)",
            value: |l| l.p99_us,
        },
    ];
    for Plot {
        key,
        title,
        y,
        value,
    } in charts
    {
        let mut chart = Chart::bar(
            format!("{id}-{key}"),
            title,
            categories.clone(),
            "transport",
            y,
        );
        let mut warnings = Warnings::default();
        for (run, data) in &parsed {
            let label = ctx.label(run);
            let points = categories
                .iter()
                .map(|cat| {
                    let Some(r) = data
                        .results
                        .iter()
                        .rev()
                        .find(|r| transport_name(&r.transport) == cat)
                    else {
                        return Point {
                            x: None,
                            y: None,
                            flag: None,
                        };
                    };
                    let c = Caveats::of(run, &r.resources);
                    warnings.note(label, label, c);
                    let y = value(&r.round_trip);
                    Point {
                        x: None,
                        y,
                        flag: c.bench_cpu_bound.then(|| c.text()),
                    }
                })
                .collect();
            chart.series.push(Series {
                label: label.to_string(),
                color: chart::color(run.source, 0, 1),
                point_style: "rect",
                points,
            });
        }
        chart.warnings = warnings.lines();
        chart.subtitle = warnings.short();
        let chart = chart.finish();
        if !chart.is_empty() {
            section.charts.push(chart);
        }
    }
    let mut table = Table::new(
        "Every transport",
        &[
            "server",
            "caveats",
            "transport",
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
        ],
    );
    for (run, data) in &parsed {
        for r in &data.results {
            let c = Caveats::of(run, &r.resources);
            let l = &r.round_trip;
            table.push(
                vec![
                    ctx.label(run).to_string(),
                    c.text(),
                    transport_name(&r.transport).to_string(),
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
                ],
                c.serious(),
            );
        }
    }
    if section.charts.is_empty() && !parsed.is_empty() {
        section.notes.push("No round trip completed.".to_string());
    }
    if !table.rows.is_empty() {
        section.tables.push(table);
    }
    section
}
