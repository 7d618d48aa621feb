//! link (issue 5): an echo app behind emulated constrained links. Charts of round trip
//! vs payload size beside the theoretical minimum, round trip vs one-way delay (first
//! from cold and stable), link utilisation vs payload size, and bytes on the wire per
//! transport; the four tables under them. A run without the four tables (another
//! bench's idea of `link`) is shown as plain tables instead.

use serde::Deserialize;

use super::{Ctx, Section, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{LinkRecord, Run};
use crate::table::{Table, ms, num, rate};

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

fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// Microseconds as milliseconds, the unit of every time axis here.
fn in_ms(us: Option<f64>) -> Option<f64> {
    us.map(|us| us / 1000.0)
}

/// A count or a size in bytes, as a whole number.
fn whole(x: Option<f64>) -> String {
    num(x, 0)
}

fn point(x: Option<f64>, y: Option<f64>) -> Point {
    Point {
        x,
        y: x.and(y),
        flag: None,
        ..Default::default()
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

    /// One line per transport of `run`, drawn from that transport's `rows`.
    fn per_transport(&mut self, ctx: &Ctx, run: &Run, rows: &[Row], point: fn(&Row) -> Point) {
        let transports = self.transports;
        for t in transports {
            let points: Vec<Point> = rows
                .iter()
                .filter(|r| transport_name(&r.transport) == t)
                .map(point)
                .collect();
            if !points.is_empty() {
                self.series(run, format!("{} · {t}", ctx.label(run)), t, (0, 1), points);
            }
        }
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
            let table = TABLES
                .iter()
                .find(|t| t.key == f.table)
                .map_or(f.table.as_str(), |t| t.mark);
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
        size.per_transport(ctx, run, &data.round_trip_vs_size, |r| {
            point(r.payload_bytes, in_ms(r.round_trip_mean_us))
        });
        // The theory does not depend on the transport: one line per server.
        let mut theory: Vec<Point> = Vec::new();
        for r in &data.round_trip_vs_size {
            if !theory.iter().any(|p| p.x == r.payload_bytes) {
                theory.push(point(r.payload_bytes, in_ms(r.min_payload_us)));
            }
        }
        theory.sort_by(|a, b| a.x.unwrap_or(0.0).total_cmp(&b.x.unwrap_or(0.0)));
        if !theory.is_empty() {
            size.chart.series.push(Series {
                label: format!(
                    "{} · theoretical minimum (payload bits both ways / rate + 2 × delay)",
                    ctx.label(run)
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
                let pts = |f: Figure| {
                    rows.iter()
                        .map(|r| point(in_ms(r.delay_us), in_ms(f(r))))
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
        util.per_transport(ctx, run, &data.throughput, |r| {
            point(r.payload_bytes, r.utilisation_pct)
        });
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
                    ..Default::default()
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

/// One of the four tables: which rows it lists and the columns after server and
/// transport.
struct LinkTable {
    /// How the bench names the table in `failures`.
    key: &'static str,
    /// "(a)": warnings name a table by its mark.
    mark: &'static str,
    title: &'static str,
    columns: &'static [&'static str],
    rows: fn(&LinkRun) -> &[Row],
    cells: fn(&Row) -> Vec<String>,
}

const TABLES: [LinkTable; 4] = [
    LinkTable {
        key: "size",
        mark: "(a)",
        title: "Round trip vs payload size",
        columns: &[
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
        rows: |l| &l.round_trip_vs_size,
        cells: |r| {
            vec![
                rate(r.rate_bps),
                ms(r.delay_us),
                whole(r.payload_bytes),
                ms(r.round_trip_min_us),
                ms(r.round_trip_mean_us),
                ms(r.round_trip_max_us),
                ms(r.min_payload_us),
                ms(r.min_wire_us),
                whole(r.wire_up_bytes),
                whole(r.wire_down_bytes),
            ]
        },
    },
    LinkTable {
        key: "delay",
        mark: "(b)",
        title: "Round trip vs one-way delay: the first from cold, then stable",
        columns: &[
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
        rows: |l| &l.round_trip_vs_delay,
        cells: |r| {
            vec![
                rate(r.rate_bps),
                ms(r.delay_us),
                whole(r.payload_bytes),
                ms(r.connect_us),
                ms(r.first_round_trip_us),
                ms(r.stable_round_trip_mean_us),
                ms(r.stable_round_trip_min_us),
                ms(r.stable_round_trip_max_us),
                ms(r.min_payload_us),
            ]
        },
    },
    LinkTable {
        key: "throughput",
        mark: "(c)",
        title: "Throughput: messages streamed back to back to the echo app",
        columns: &[
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
        rows: |l| &l.throughput,
        cells: |r| {
            vec![
                rate(r.rate_bps),
                ms(r.delay_us),
                whole(r.payload_bytes),
                whole(r.messages),
                ms(r.duration_us),
                whole(r.payload_bps),
                num(r.utilisation_pct, 1),
                whole(r.wire_up_bytes),
                whole(r.wire_down_bytes),
            ]
        },
    },
    LinkTable {
        key: "bytes",
        mark: "(d)",
        title: "Bytes on the wire (payload + per-packet overhead)",
        columns: &[
            "#payload (B)",
            "#set-up up (B)",
            "#set-up down (B)",
            "#first msg up (B)",
            "#first msg down (B)",
            "#msg up (B)",
            "#msg down (B)",
            "#overhead per msg (B)",
        ],
        rows: |l| &l.wire_bytes,
        cells: |r| {
            vec![
                whole(r.payload_bytes),
                whole(r.setup_wire_up_bytes),
                whole(r.setup_wire_down_bytes),
                whole(r.first_message_wire_up_bytes),
                whole(r.first_message_wire_down_bytes),
                whole(r.message_wire_up_bytes),
                whole(r.message_wire_down_bytes),
                whole(r.message_overhead_bytes),
            ]
        },
    },
];

/// The four tables that have rows, a row per measurement, highlighted in partial runs.
fn tables(ctx: &Ctx, parsed: &[(&Run, LinkRun)]) -> Vec<Table> {
    let mut out = Vec::new();
    for spec in &TABLES {
        let columns = [&["server", "transport"][..], spec.columns].concat();
        let mut table = Table::new(format!("{} {}", spec.mark, spec.title), &columns);
        for (run, data) in parsed {
            for r in (spec.rows)(data) {
                let mut cells = vec![
                    ctx.label(run).to_string(),
                    transport_name(&r.transport).to_string(),
                ];
                cells.extend((spec.cells)(r));
                table.push(cells, run.partial);
            }
        }
        if !table.rows.is_empty() {
            out.push(table);
        }
    }
    out
}
