//! chat: rooms of users, every user sending at a fixed interval; latency, server CPU and
//! RSS against users per room, one series per (server, room count).

use serde::Deserialize;

use super::{Ctx, Plot, Section, Warnings, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, Latency, Resources, Run};
use crate::table::{Table, mib, ms, num};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatRun {
    pub results: Vec<ChatResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatResult {
    pub transport: String,
    pub rooms: Option<f64>,
    pub users: Option<f64>,
    pub messages: Option<f64>,
    pub joined: Option<f64>,
    pub connect: Latency,
    pub sent: Option<f64>,
    pub expected: Option<f64>,
    pub received: Option<f64>,
    pub late_sends: Option<f64>,
    pub latency: Latency,
    pub latency_uncorrected: Latency,
    pub duration_s: Option<f64>,
    pub resources: Resources,
}

/// The four charts: what each plots from a result.
const CHARTS: [Plot<ChatResult>; 4] = [
    Plot {
        key: "mean",
        title: "Chat: mean latency vs users per room",
        y: "mean latency (ms)",
        value: |r| r.latency.mean_ms(),
    },
    Plot {
        key: "p99",
        title: "Chat: p99 latency vs users per room",
        y: "p99 latency (ms)",
        value: |r| r.latency.p99_ms(),
    },
    Plot {
        key: "cpu",
        title: "Chat: server CPU vs users per room",
        y: "server CPU (% of one core)",
        value: |r| r.resources.server_cpu_pct,
    },
    Plot {
        key: "rss",
        title: "Chat: server memory vs users per room",
        y: "server RSS, peak (MiB)",
        value: |r| r.resources.server_rss_mib(),
    },
];

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Chat".to_string(),
        about: "Rooms of users; every user sends messages at a fixed interval and every member receives them. Latency is measured from the scheduled send time (corrected for coordinated omission).".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, ChatRun)> = parse_runs(ctx, runs, &mut section);
    let names = parsed
        .iter()
        .flat_map(|(_, c)| c.results.iter().map(|r| r.transport.as_str()));
    let many_transports = transports(names).len() > 1;

    // One series per (run, transport, rooms), x = users per room in ascending order.
    struct Group<'a> {
        run: &'a Run,
        label: String,
        results: Vec<&'a ChatResult>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for (run, data) in &parsed {
        let first = groups.len();
        for r in &data.results {
            let rooms = num(r.rooms, 0);
            let room_word = if r.rooms == Some(1.0) {
                "room"
            } else {
                "rooms"
            };
            let mut label = format!("{} · {rooms} {room_word}", ctx.label(run));
            if many_transports {
                label = format!("{label} · {}", transport_name(&r.transport));
            }
            match groups[first..].iter_mut().find(|g| g.label == label) {
                Some(g) => g.results.push(r),
                None => groups.push(Group {
                    run,
                    label,
                    results: vec![r],
                }),
            }
        }
    }
    for g in &mut groups {
        g.results
            .sort_by(|a, b| a.users.unwrap_or(0.0).total_cmp(&b.users.unwrap_or(0.0)));
    }

    for Plot {
        key,
        title,
        y,
        value,
    } in CHARTS
    {
        let mut chart = Chart::line(format!("{id}-{key}"), title, "users per room", y);
        let mut warnings = Warnings::default();
        for (i, g) in groups.iter().enumerate() {
            // Shade and point style follow the group's place among its source's groups.
            let siblings: Vec<&Group> = groups
                .iter()
                .filter(|o| o.run.source == g.run.source)
                .collect();
            let k = groups[..i]
                .iter()
                .filter(|o| o.run.source == g.run.source)
                .count();
            let points = g
                .results
                .iter()
                .map(|r| {
                    let c = Caveats::of(g.run, &r.resources);
                    warnings.note(ctx.label(g.run), &g.label, c);
                    Point {
                        x: r.users,
                        y: value(r),
                        flag: c.bench_cpu_bound.then(|| c.text()),
                    }
                })
                .collect();
            chart.series.push(Series {
                label: g.label.clone(),
                color: chart::color(g.run.source, k, siblings.len()),
                point_style: chart::point_style(k),
                points,
            });
        }
        chart.warnings = warnings.lines();
        chart.subtitle = warnings.short();
        let chart = chart.finish();
        if chart.is_empty() {
            if !groups.is_empty() {
                section.notes.push(format!(
                    "No {y} figures: {}",
                    if key == "cpu" || key == "rss" {
                        "the bench did not know the server's pid (give --server-pid, or run the server on this machine)"
                    } else {
                        "no message was received"
                    }
                ));
            }
        } else {
            section.charts.push(chart);
        }
    }

    let mut table = Table::new(
        "Every rooms × users run",
        &[
            "server",
            "caveats",
            "transport",
            "#rooms",
            "#users/room",
            "#msgs/user",
            "#joined",
            "#sent",
            "#received (% of expected)",
            "#late sends",
            "#mean (ms)",
            "#p50 (ms)",
            "#p99 (ms)",
            "#max (ms)",
            "#mean uncorrected (ms)",
            "#server CPU (%)",
            "#server RSS (MiB)",
        ],
    );
    for g in &groups {
        for r in &g.results {
            let c = Caveats::of(g.run, &r.resources);
            let share = match (r.received, r.expected) {
                (Some(got), Some(want)) if want > 0.0 => format!(
                    "{} ({}%)",
                    num(Some(got), 0),
                    num(Some(got * 100.0 / want), 1)
                ),
                (got, _) => num(got, 0),
            };
            table.push(
                vec![
                    ctx.label(g.run).to_string(),
                    c.text(),
                    transport_name(&r.transport).to_string(),
                    num(r.rooms, 0),
                    num(r.users, 0),
                    num(r.messages, 0),
                    num(r.joined, 0),
                    num(r.sent, 0),
                    share,
                    num(r.late_sends, 0),
                    ms(r.latency.mean_us),
                    ms(r.latency.p50_us),
                    ms(r.latency.p99_us),
                    ms(r.latency.max_us),
                    ms(r.latency_uncorrected.mean_us),
                    num(r.resources.server_cpu_pct, 0),
                    mib(r.resources.server_rss_max_bytes),
                ],
                c.serious(),
            );
        }
    }
    if !table.rows.is_empty() {
        section.tables.push(table);
    }
    section
}
