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

/// The study's three figures, each drawn against messages once per room count.
const FIGURES: [Plot<ChatResult>; 3] = [
    Plot {
        key: "latency",
        title: "mean latency",
        y: "mean latency (ms)",
        value: |r| r.latency.mean_ms(),
    },
    Plot {
        key: "cpu",
        title: "server CPU",
        y: "server CPU (% of one core)",
        value: |r| r.resources.server_cpu_pct,
    },
    Plot {
        key: "rss",
        title: "server memory",
        y: "server RSS, peak (MiB)",
        value: |r| r.resources.server_rss_mib(),
    },
];

/// The x of the study's charts: every message delivered in the run, rooms × users² ×
/// messages per user (each member receives its own too).
fn deliveries(r: &ChatResult) -> Option<f64> {
    r.expected.or_else(|| {
        Some(r.rooms? * r.users? * r.users? * r.messages?)
    })
}

fn rooms_title(rooms: f64) -> String {
    let n = num(Some(rooms), 0);
    if rooms == 1.0 { format!("{n} room") } else { format!("{n} rooms") }
}

/// One server's (and transport's) chat results, in the order of their load.
struct Group<'a> {
    run: &'a Run,
    label: String,
    results: Vec<&'a ChatResult>,
}

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Chat".to_string(),
        about: "The chat-server study's workload: rooms of users, every user sending messages at a fixed interval and every member receiving them, in 1, 2 and 4 rooms. Latency is measured from the scheduled send time (corrected for coordinated omission); CPU and RSS cover the server's whole process tree.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, ChatRun)> = parse_runs(ctx, runs, &mut section);

    // A series per server, and per transport where a server ran several (each
    // server's own protocol is in its name otherwise: socket.io's, for one).
    let mut groups: Vec<Group> = Vec::new();
    for (run, data) in &parsed {
        let first = groups.len();
        let many_transports = transports(data.results.iter().map(|r| r.transport.as_str())).len() > 1;
        for r in &data.results {
            let mut label = ctx.label(run).to_string();
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
    let load = |r: &ChatResult| (r.rooms.unwrap_or(0.0), r.users.unwrap_or(0.0));
    for g in &mut groups {
        g.results.sort_by(|a, b| {
            let (a, b) = (load(a), load(b));
            a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
        });
    }
    let mut room_counts: Vec<f64> = groups
        .iter()
        .flat_map(|g| g.results.iter().filter_map(|r| r.rooms))
        .collect();
    room_counts.sort_by(f64::total_cmp);
    room_counts.dedup();

    let mut missing: Vec<&str> = Vec::new();
    for &rooms in &room_counts {
        for Plot {
            key,
            title,
            y,
            value,
        } in FIGURES
        {
            let mut chart = Chart::line(
                format!("{id}-{}r-{key}", num(Some(rooms), 0)),
                format!("Chat, {}: {title} vs messages", rooms_title(rooms)),
                "messages delivered (rooms × users² × messages per user)",
                y,
            );
            let mut warnings = Warnings::default();
            for (i, g) in groups.iter().enumerate() {
                let points: Vec<Point> = g
                    .results
                    .iter()
                    .filter(|r| r.rooms == Some(rooms))
                    .map(|r| {
                        let c = Caveats::of(g.run, &r.resources);
                        warnings.note(ctx.label(g.run), &g.label, c);
                        Point {
                            x: deliveries(r),
                            y: value(r),
                            flag: c.bench_cpu_bound.then(|| c.text()),
                            note: Some(format!("{} users per room", num(r.users, 0))),
                            ..Default::default()
                        }
                    })
                    .collect();
                if points.is_empty() {
                    continue;
                }
                let (k, siblings) = place_among_siblings(&groups, i);
                chart.series.push(Series {
                    label: g.label.clone(),
                    color: chart::color(g.run.source, k, siblings),
                    point_style: chart::point_style(i),
                    points,
                });
            }
            chart.warnings = warnings.lines();
            chart.subtitle = warnings.short();
            let chart = chart.finish();
            if chart.is_empty() {
                if !groups.is_empty() && !missing.contains(&y) {
                    missing.push(y);
                }
            } else {
                section.charts.push(chart);
            }
        }
    }
    for y in missing {
        section.notes.push(format!(
            "No {y} figures: {}",
            if y.starts_with("server") {
                "the bench did not know the server's pid (give --server-pid, or run the server on this machine)"
            } else {
                "no message was received"
            }
        ));
    }
    match bubbles(ctx, &format!("{id}-bubble"), &groups) {
        Ok(chart) => section.charts.push(chart),
        Err(why) if !groups.is_empty() => section.notes.push(why),
        Err(_) => {}
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

/// Where group `i` stands among the groups of its own server (one per transport), and
/// how many there are: its shade of the server's colour.
fn place_among_siblings(groups: &[Group], i: usize) -> (usize, usize) {
    let source = groups[i].run.source;
    let k = groups[..i].iter().filter(|g| g.run.source == source).count();
    let siblings = groups.iter().filter(|g| g.run.source == source).count();
    (k, siblings)
}

/// The study's bubble chart: at the heaviest one-room load every server ran, each server
/// is one disc placed by mean latency and server CPU, its area the server's RSS. Names
/// why there is none otherwise.
fn bubbles(ctx: &Ctx, id: &str, groups: &[Group]) -> Result<Chart, String> {
    // (group, its one-room results that carry all three figures)
    let complete = |r: &&ChatResult| {
        r.rooms == Some(1.0)
            && r.latency.mean_us.is_some()
            && r.resources.server_cpu_pct.is_some()
            && r.resources.server_rss_max_bytes.is_some()
    };
    let candidates: Vec<(usize, Vec<&ChatResult>)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (i, g.results.iter().copied().filter(|r| complete(r)).collect::<Vec<_>>()))
        .filter(|(_, rs)| !rs.is_empty())
        .collect();
    if candidates.is_empty() {
        return Err("No bubble chart: no one-room run has latency, server CPU and RSS all measured".to_string());
    }
    let users_of = |rs: &[&ChatResult]| rs.iter().filter_map(|r| r.users).collect::<Vec<f64>>();
    let heaviest = users_of(&candidates[0].1)
        .into_iter()
        .filter(|u| candidates.iter().all(|(_, rs)| users_of(rs).contains(u)))
        .max_by(f64::total_cmp)
        .ok_or_else(|| "No bubble chart: the servers ran no one-room load in common".to_string())?;
    let picked: Vec<(usize, &ChatResult)> = candidates
        .iter()
        .filter_map(|(i, rs)| Some((*i, *rs.iter().find(|r| r.users == Some(heaviest))?)))
        .collect();
    let max_rss = picked
        .iter()
        .filter_map(|(_, r)| r.resources.server_rss_mib())
        .fold(0.0, f64::max);
    let mut chart = Chart::bubble(
        id.to_string(),
        format!(
            "Chat, 1 room × {} users: latency, CPU and memory (disc area: server RSS)",
            num(Some(heaviest), 0)
        ),
        "mean latency (ms)",
        "server CPU (% of one core)",
    );
    let mut warnings = Warnings::default();
    for (i, r) in picked {
        let g = &groups[i];
        let c = Caveats::of(g.run, &r.resources);
        warnings.note(ctx.label(g.run), &g.label, c);
        let rss = r.resources.server_rss_mib().unwrap_or(0.0);
        let (k, siblings) = place_among_siblings(groups, i);
        chart.series.push(Series {
            label: g.label.clone(),
            color: chart::color(g.run.source, k, siblings),
            point_style: "circle",
            points: vec![Point {
                x: r.latency.mean_ms(),
                y: r.resources.server_cpu_pct,
                flag: c.bench_cpu_bound.then(|| c.text()),
                r: Some(chart::bubble_radius(rss, max_rss)),
                note: Some(format!(
                    "mean latency {} ms · server CPU {} % · server RSS {} MiB",
                    num(r.latency.mean_ms(), 2),
                    num(r.resources.server_cpu_pct, 0),
                    num(Some(rss), 1)
                )),
            }],
        });
    }
    chart.warnings = warnings.lines();
    chart.subtitle = warnings.short();
    Ok(chart.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{sources, test_file};

    fn result(rooms: f64, users: f64, mean_ms: f64, cpu: f64, rss_mib: f64) -> ChatResult {
        ChatResult {
            transport: "websocket".into(),
            rooms: Some(rooms),
            users: Some(users),
            messages: Some(10.0),
            latency: Latency {
                mean_us: Some(mean_ms * 1000.0),
                ..Latency::default()
            },
            resources: Resources {
                server_cpu_pct: Some(cpu),
                server_rss_max_bytes: Some(rss_mib * 1024.0 * 1024.0),
                ..Resources::default()
            },
            ..ChatResult::default()
        }
    }

    #[test]
    fn messages_are_rooms_times_users_squared_times_messages() {
        assert_eq!(deliveries(&result(4.0, 20.0, 1.0, 1.0, 1.0)), Some(16_000.0));
        let counted = ChatResult {
            expected: Some(7.0),
            ..result(4.0, 20.0, 1.0, 1.0, 1.0)
        };
        assert_eq!(deliveries(&counted), Some(7.0), "the bench's own count wins");
    }

    #[test]
    fn the_bubble_chart_takes_the_heaviest_one_room_load_every_server_ran() {
        let mut files = [test_file("f.json", &[("switchboard", "chat"), ("vertx", "chat")])];
        let sources = sources(&mut files);
        let (a, b) = (&files[0].runs[0], &files[0].runs[1]);
        let sb = [result(1.0, 20.0, 1.0, 10.0, 20.0), result(1.0, 40.0, 2.0, 30.0, 25.0), result(1.0, 60.0, 3.0, 50.0, 30.0), result(4.0, 60.0, 9.0, 90.0, 40.0)];
        let vx = [result(1.0, 20.0, 5.0, 20.0, 100.0), result(1.0, 40.0, 8.0, 60.0, 120.0)];
        let groups = vec![
            Group { run: a, label: "switchboard".into(), results: sb.iter().collect() },
            Group { run: b, label: "vertx".into(), results: vx.iter().collect() },
        ];
        let ctx = Ctx { files: &[], sources: &sources };
        let chart = bubbles(&ctx, "c", &groups).expect("a chart");
        assert!(chart.title.contains("1 room × 40 users"), "{}", chart.title);
        assert_eq!(chart.kind, chart::Kind::Bubble);
        let points: Vec<(f64, f64, f64)> = chart
            .series
            .iter()
            .map(|s| (s.points[0].x.unwrap(), s.points[0].y.unwrap(), s.points[0].r.unwrap()))
            .collect();
        assert_eq!(points[0].0, 2.0);
        assert_eq!(points[0].1, 30.0);
        assert_eq!(points[1], (8.0, 60.0, chart::BUBBLE_MAX_RADIUS), "the most memory, the largest disc");
        assert!((points[0].2 - chart::bubble_radius(25.0, 120.0)).abs() < 1e-9);

        let none = vec![Group { run: a, label: "switchboard".into(), results: vec![&sb[3]] }];
        assert!(bubbles(&ctx, "c", &none).unwrap_err().contains("no one-room run"));
    }
}
