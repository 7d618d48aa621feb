//! link (issue 5): an echo app behind emulated constrained links. Charts of round trip
//! vs payload size beside the theoretical minimum, round trip vs one-way delay (first
//! from cold and stable), link utilisation vs payload size, and bytes on the wire per
//! transport; the four tables under them. A run without the four tables (another
//! bench's idea of `link`) is shown as plain tables instead.

use serde::Deserialize;

use super::{Ctx, Section, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::Run;
use crate::table::{Table, ms, num};

/// A link run. The four tables have no default: a run without them is not this shape.
#[derive(Debug, Deserialize)]
pub struct LinkRun {
    #[serde(default)]
    pub settings: LinkSettings,
    pub round_trip_vs_size: Vec<Row>,
    pub round_trip_vs_delay: Vec<Row>,
    pub throughput: Vec<Row>,
    pub wire_bytes: Vec<Row>,
    /// Rows the bench could not measure, and why.
    #[serde(default)]
    pub failures: Vec<Failure>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Failure {
    pub table: String,
    pub transport: String,
    pub rate_bps: Option<f64>,
    pub delay_us: Option<f64>,
    pub payload_bytes: Option<f64>,
    pub error: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LinkSettings {
    pub link: LinkRecord,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LinkRecord {
    pub description: Option<String>,
    pub overhead_bytes: Option<f64>,
}

/// A row of any of the four tables: each reads the fields it has.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Row {
    pub transport: String,
    pub rate_bps: Option<f64>,
    pub delay_us: Option<f64>,
    pub payload_bytes: Option<f64>,
    pub round_trip_min_us: Option<f64>,
    pub round_trip_mean_us: Option<f64>,
    pub round_trip_max_us: Option<f64>,
    pub min_payload_us: Option<f64>,
    pub min_wire_us: Option<f64>,
    pub wire_up_bytes: Option<f64>,
    pub wire_down_bytes: Option<f64>,
    pub connect_us: Option<f64>,
    pub first_round_trip_us: Option<f64>,
    pub stable_round_trip_min_us: Option<f64>,
    pub stable_round_trip_mean_us: Option<f64>,
    pub stable_round_trip_max_us: Option<f64>,
    pub messages: Option<f64>,
    pub duration_us: Option<f64>,
    pub payload_bps: Option<f64>,
    pub utilisation_pct: Option<f64>,
    pub setup_wire_up_bytes: Option<f64>,
    pub setup_wire_down_bytes: Option<f64>,
    pub first_message_wire_up_bytes: Option<f64>,
    pub first_message_wire_down_bytes: Option<f64>,
    pub message_wire_up_bytes: Option<f64>,
    pub message_wire_down_bytes: Option<f64>,
    pub message_overhead_bytes: Option<f64>,
}

/// What a chart reads from a row.
type Figure = fn(&Row) -> Option<f64>;

/// `2400` → "2.4 kbit/s".
fn rate(bps: Option<f64>) -> String {
    match bps {
        Some(b) if b >= 1e9 => format!("{} Gbit/s", trim(b / 1e9)),
        Some(b) if b >= 1e6 => format!("{} Mbit/s", trim(b / 1e6)),
        Some(b) if b >= 1e3 => format!("{} kbit/s", trim(b / 1e3)),
        Some(b) => format!("{} bit/s", trim(b)),
        None => "–".to_string(),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

fn point(x: Option<f64>, y: Option<f64>) -> Point {
    Point {
        x,
        y: x.and(y),
        flag: None,
    }
}

/// A line chart with one series per (server, transport[, rate]): the server's hue,
/// a shade per line, a point style per transport; points sorted by x.
struct Lines<'a> {
    chart: Chart,
    transports: &'a [String],
}

impl Lines<'_> {
    /// `shade` of `shades` tells apart a transport's lines (one per rate).
    fn series(
        &mut self,
        run: &Run,
        label: String,
        transport: &str,
        (shade, shades): (usize, usize),
        mut points: Vec<Point>,
    ) {
        points.sort_by(|a, b| a.x.unwrap_or(0.0).total_cmp(&b.x.unwrap_or(0.0)));
        let t = self
            .transports
            .iter()
            .position(|x| x == transport)
            .unwrap_or(0);
        self.chart.series.push(Series {
            label,
            color: chart::color(
                run.source,
                t * shades + shade,
                self.transports.len() * shades,
            ),
            point_style: chart::point_style(t),
            points,
        });
    }
}

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Constrained links".to_string(),
        about: "One client and an echo app behind an emulated link (a bit rate, a one-way delay, 40 bytes of TCP/IP headers per packet): round trip against payload size and delay, how much of the line carries payload, and what each transport puts on the wire.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, LinkRun)> = parse_runs(ctx, runs, &mut section);
    let all = transports(parsed.iter().flat_map(|(_, l)| {
        l.round_trip_vs_size
            .iter()
            .chain(&l.round_trip_vs_delay)
            .chain(&l.throughput)
            .chain(&l.wire_bytes)
            .map(|r| r.transport.as_str())
    }));
    for (run, data) in &parsed {
        if let Some(d) = &data.settings.link.description {
            section.notes.push(format!("{}: {d}.", ctx.label(run)));
        }
        for f in &data.failures {
            let table = match f.table.as_str() {
                "size" => "(a)",
                "delay" => "(b)",
                "throughput" => "(c)",
                "bytes" => "(d)",
                other => other,
            };
            section.warnings.push(format!(
                "⚠ {}: {table} {} at {}, {} ms delay, {} B not measured: {}",
                ctx.label(run),
                transport_name(&f.transport),
                rate(f.rate_bps),
                ms(f.delay_us),
                num(f.payload_bytes, 0),
                f.error
            ));
        }
    }

    // (a) Round trip vs payload size, and the minimum the payload alone needs.
    let mut size = Lines {
        chart: Chart::line(
            format!("{id}-size"),
            "Round trip vs payload size",
            "payload (bytes)",
            "round trip (ms)",
        ),
        transports: &all,
    };
    for (run, data) in &parsed {
        let label = ctx.label(run);
        for t in &all {
            let points = data
                .round_trip_vs_size
                .iter()
                .filter(|r| transport_name(&r.transport) == t)
                .map(|r| point(r.payload_bytes, r.round_trip_mean_us.map(|us| us / 1000.0)))
                .collect::<Vec<_>>();
            if !points.is_empty() {
                size.series(run, format!("{label} · {t}"), t, (0, 1), points);
            }
        }
        // The theory does not depend on the transport: one line per server.
        let mut theory: Vec<Point> = Vec::new();
        for r in &data.round_trip_vs_size {
            if !theory.iter().any(|p| p.x == r.payload_bytes) {
                theory.push(point(
                    r.payload_bytes,
                    r.min_payload_us.map(|us| us / 1000.0),
                ));
            }
        }
        theory.sort_by(|a, b| a.x.unwrap_or(0.0).total_cmp(&b.x.unwrap_or(0.0)));
        if !theory.is_empty() {
            size.chart.series.push(Series {
                label: format!(
                    "{label} · theoretical minimum (payload bits both ways / rate + 2 × delay)"
                ),
                color: "hsl(0 0% 55%)".to_string(),
                point_style: "line",
                points: theory,
            });
        }
    }

    // (b) Round trip vs one-way delay: first from cold and stable, per rate.
    let mut first = Lines {
        chart: Chart::line(
            format!("{id}-first"),
            "First round trip from cold (connection set-up included) vs one-way delay",
            "one-way delay (ms)",
            "first round trip (ms)",
        ),
        transports: &all,
    };
    let mut stable = Lines {
        chart: Chart::line(
            format!("{id}-stable"),
            "Stable round trip vs one-way delay",
            "one-way delay (ms)",
            "stable round trip, mean (ms)",
        ),
        transports: &all,
    };
    for (run, data) in &parsed {
        let mut rates: Vec<f64> = data
            .round_trip_vs_delay
            .iter()
            .filter_map(|r| r.rate_bps)
            .collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        for t in &all {
            for (i, &bps) in rates.iter().enumerate() {
                let rows: Vec<&Row> = data
                    .round_trip_vs_delay
                    .iter()
                    .filter(|r| transport_name(&r.transport) == t && r.rate_bps == Some(bps))
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                let label = format!("{} · {t} · {}", ctx.label(run), rate(Some(bps)));
                let x = |r: &Row| r.delay_us.map(|us| us / 1000.0);
                let pts = |f: Figure| {
                    rows.iter()
                        .map(|r| point(x(r), f(r).map(|us| us / 1000.0)))
                        .collect()
                };
                first.series(
                    run,
                    label.clone(),
                    t,
                    (i, rates.len()),
                    pts(|r| r.first_round_trip_us),
                );
                stable.series(
                    run,
                    label,
                    t,
                    (i, rates.len()),
                    pts(|r| r.stable_round_trip_mean_us),
                );
            }
        }
    }

    // (c) Utilisation vs payload size.
    let mut util = Lines {
        chart: Chart::line(
            format!("{id}-utilisation"),
            "Link utilisation streaming payloads one way",
            "payload (bytes)",
            "payload share of the line (%)",
        ),
        transports: &all,
    };
    for (run, data) in &parsed {
        for t in &all {
            let points: Vec<Point> = data
                .throughput
                .iter()
                .filter(|r| transport_name(&r.transport) == t)
                .map(|r| point(r.payload_bytes, r.utilisation_pct))
                .collect();
            if !points.is_empty() {
                util.series(run, format!("{} · {t}", ctx.label(run)), t, (0, 1), points);
            }
        }
    }

    // (d) Bytes on the wire per set-up and per message, both ways, per transport.
    let mut bytes = Chart::bar(
        format!("{id}-bytes"),
        "Bytes on the wire (both ways): connection set-up and one echoed message",
        all.clone(),
        "transport",
        "bytes on the wire",
    );
    for (run, data) in &parsed {
        let kinds: [(&str, Figure); 2] = [
            ("set-up", |r| {
                sum(r.setup_wire_up_bytes, r.setup_wire_down_bytes)
            }),
            ("per message", |r| {
                sum(r.message_wire_up_bytes, r.message_wire_down_bytes)
            }),
        ];
        for (k, (what, value)) in kinds.into_iter().enumerate() {
            let points = all
                .iter()
                .map(|t| Point {
                    x: None,
                    y: data
                        .wire_bytes
                        .iter()
                        .rev()
                        .find(|r| transport_name(&r.transport) == t)
                        .and_then(value),
                    flag: None,
                })
                .collect();
            bytes.series.push(Series {
                label: format!("{} · {what}", ctx.label(run)),
                color: chart::color(run.source, k, 2),
                point_style: chart::point_style(k),
                points,
            });
        }
    }

    for chart in [size.chart, first.chart, stable.chart, util.chart, bytes] {
        let chart = chart.finish();
        if !chart.is_empty() {
            section.charts.push(chart);
        }
    }
    section.tables.extend(tables(ctx, &parsed));
    if section.charts.is_empty() && !parsed.is_empty() {
        section.notes.push("No figure was measured.".to_string());
    }
    section
}

fn tables(ctx: &Ctx, parsed: &[(&Run, LinkRun)]) -> Vec<Table> {
    let b = |x: Option<f64>| num(x, 0);
    let mut size = Table::new(
        "(a) Round trip vs payload size",
        &[
            "server",
            "transport",
            "rate",
            "#delay (ms)",
            "#payload (B)",
            "#min (ms)",
            "#mean (ms)",
            "#max (ms)",
            "#theory: payload (ms)",
            "#theory: wire (ms)",
            "#wire up (B)",
            "#wire down (B)",
        ],
    );
    let mut delay = Table::new(
        "(b) Round trip vs one-way delay: the first from cold, then stable",
        &[
            "server",
            "transport",
            "rate",
            "#delay (ms)",
            "#payload (B)",
            "#connect (ms)",
            "#first (ms)",
            "#stable mean (ms)",
            "#stable min (ms)",
            "#stable max (ms)",
            "#theory: payload (ms)",
        ],
    );
    let mut throughput = Table::new(
        "(c) Throughput: messages streamed back to back to the echo app",
        &[
            "server",
            "transport",
            "rate",
            "#delay (ms)",
            "#payload (B)",
            "#messages",
            "#time (ms)",
            "#payload (bit/s)",
            "#utilisation (%)",
            "#wire up per msg (B)",
            "#wire down per msg (B)",
        ],
    );
    let mut wire = Table::new(
        "(d) Bytes on the wire (payload + per-packet overhead)",
        &[
            "server",
            "transport",
            "#payload (B)",
            "#set-up up (B)",
            "#set-up down (B)",
            "#first msg up (B)",
            "#first msg down (B)",
            "#msg up (B)",
            "#msg down (B)",
            "#overhead per msg (B)",
        ],
    );
    for (run, data) in parsed {
        let server = ctx.label(run).to_string();
        let head = |r: &Row| vec![server.clone(), transport_name(&r.transport).to_string()];
        for r in &data.round_trip_vs_size {
            let mut cells = head(r);
            cells.extend([
                rate(r.rate_bps),
                ms(r.delay_us),
                b(r.payload_bytes),
                ms(r.round_trip_min_us),
                ms(r.round_trip_mean_us),
                ms(r.round_trip_max_us),
                ms(r.min_payload_us),
                ms(r.min_wire_us),
                b(r.wire_up_bytes),
                b(r.wire_down_bytes),
            ]);
            size.push(cells, run.partial);
        }
        for r in &data.round_trip_vs_delay {
            let mut cells = head(r);
            cells.extend([
                rate(r.rate_bps),
                ms(r.delay_us),
                b(r.payload_bytes),
                ms(r.connect_us),
                ms(r.first_round_trip_us),
                ms(r.stable_round_trip_mean_us),
                ms(r.stable_round_trip_min_us),
                ms(r.stable_round_trip_max_us),
                ms(r.min_payload_us),
            ]);
            delay.push(cells, run.partial);
        }
        for r in &data.throughput {
            let mut cells = head(r);
            cells.extend([
                rate(r.rate_bps),
                ms(r.delay_us),
                b(r.payload_bytes),
                b(r.messages),
                ms(r.duration_us),
                b(r.payload_bps),
                num(r.utilisation_pct, 1),
                b(r.wire_up_bytes),
                b(r.wire_down_bytes),
            ]);
            throughput.push(cells, run.partial);
        }
        for r in &data.wire_bytes {
            let mut cells = head(r);
            cells.extend([
                b(r.payload_bytes),
                b(r.setup_wire_up_bytes),
                b(r.setup_wire_down_bytes),
                b(r.first_message_wire_up_bytes),
                b(r.first_message_wire_down_bytes),
                b(r.message_wire_up_bytes),
                b(r.message_wire_down_bytes),
                b(r.message_overhead_bytes),
            ]);
            wire.push(cells, run.partial);
        }
    }
    [size, delay, throughput, wire]
        .into_iter()
        .filter(|t| !t.rows.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(rate(Some(2400.0)), "2.4 kbit/s");
        assert_eq!(rate(Some(19_200.0)), "19.2 kbit/s");
        assert_eq!(rate(Some(1e6)), "1 Mbit/s");
        assert_eq!(rate(Some(300.0)), "300 bit/s");
        assert_eq!(rate(None), "–");
    }
}
