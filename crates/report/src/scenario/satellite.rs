//! federated and login: the satellite-link study (two servers joined by a
//! constrained link, or one server behind it) beside the study's published
//! figures. Each run is one cell of the grid: its link is the one the run's
//! script put between the servers (`--via-link`), its server the target's
//! name (a federation profile: starttls, zero …). Charts: first and stable
//! round trip against one-way delay, round trip against payload, link
//! utilisation against payload, and login time by style; tables under them.

use serde::Deserialize;

use super::{Ctx, Section, parse_runs};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Latency, Run};
use crate::table::{Table, ms, num, rate};

/// One cell of the study's 2-byte tables: bit/s, one-way delay (s), stable
/// round trip (s), first (s).
type StudyCell = (f64, f64, f64, f64);

/// The study's 2-byte tables, standard S2S then optimised.
const STUDY: [(&str, [StudyCell; 6]); 2] = [
    ("standard S2S", [(2400.0, 0.0, 1.2, 36.3), (2400.0, 0.5, 2.3, 57.0), (2400.0, 1.0, 3.3, 78.5), (19200.0, 0.0, 0.16, 4.6), (19200.0, 0.5, 1.15, 25.8), (19200.0, 1.0, 2.15, 46.9)]),
    ("optimised S2S", [(2400.0, 0.0, 0.7, 2.9), (2400.0, 0.5, 1.8, 4.9), (2400.0, 1.0, 2.8, 6.9), (19200.0, 0.0, 0.10, 0.4), (19200.0, 0.5, 1.10, 2.4), (19200.0, 1.0, 2.10, 4.4)]),
];

/// The study's round trip by payload at 2400 bit/s with no delay: (bytes,
/// standard s, optimised s).
const STUDY_PAYLOAD: [(f64, f64, f64); 4] = [(2.0, 1.2, 0.7), (100.0, 1.85, 1.4), (200.0, 2.3, 1.85), (500.0, 3.75, 3.2)];

/// The study's utilisation streaming one way at 2400 bit/s: (bytes, %).
const STUDY_UTILISATION: [(f64, f64); 4] = [(10.0, 22.0), (100.0, 46.0), (1024.0, 70.0), (10240.0, 74.0)];

/// The study's IRC (two linked ircu servers) at 2400 bit/s: link utilisation
/// of one stream by payload (bytes, %).
const STUDY_IRC_UTILISATION: [(f64, f64); 2] = [(10.0, 1.6), (100.0, 11.0)];

/// Bits of information in each character of the bench's bodies: random
/// letters and digits, log2(62).
const BITS_PER_CHAR: f64 = 5.954;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    via_link: Option<ViaLink>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ViaLink {
    rate_bps: Option<f64>,
    delay_us: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct FederatedRun {
    #[serde(default)]
    settings: Settings,
    results: Vec<FederatedResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FederatedResult {
    transport: String,
    first_us: Option<f64>,
    rows: Vec<Row>,
    throughput: Vec<Throughput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Row {
    size: f64,
    typing_us: f64,
    round_trip: Latency,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Throughput {
    size: f64,
    messages: f64,
    duration_us: f64,
}

/// One cell of the grid: the run's server, its link, and its figures.
struct Cell<'a> {
    run: &'a Run,
    rate_bps: f64,
    delay_s: f64,
    result: &'a FederatedResult,
}

impl Cell<'_> {
    /// The server, as the run's target was named.
    fn name(&self) -> &str {
        &self.run.target_name
    }

    /// The stable round trip (p50, s) of the smallest payload answered at once.
    fn stable(&self) -> Option<f64> {
        let smallest = self.result.rows.iter().filter(|r| r.typing_us == 0.0).map(|r| r.size).reduce(f64::min)?;
        let row = self.result.rows.iter().find(|r| r.typing_us == 0.0 && r.size == smallest)?;
        row.round_trip.p50_us.map(|us| us / 1e6)
    }

    /// Two linked IRC servers rather than federated XMPP ones.
    fn is_irc(&self) -> bool {
        self.result.transport == "irc"
    }

    /// The first round trip (s), from cold. Not over IRC: IRC servers link
    /// as they start, so its first message crosses a link already up.
    fn first(&self) -> Option<f64> {
        if self.is_irc() {
            return None;
        }
        self.result.first_us.map(|us| us / 1e6)
    }
}

fn point(x: f64, y: Option<f64>) -> Point {
    Point { x: Some(x), y, ..Default::default() }
}

/// A grey line of the study's figures.
fn study_series(label: String, shade: usize, points: Vec<Point>) -> Series {
    Series { label, color: format!("hsl(0 0% {}%)", 35 + 20 * shade), point_style: "line", points }
}

fn kbit(bps: f64) -> String {
    rate(Some(bps))
}

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Satellite link: federation".to_string(),
        about: "Two servers joined by an emulated constrained link, a user on each, one message answered at once: the first round trip (no connection between the servers yet) and the stable one, against one-way delay and payload, and one way's throughput, beside the published study's figures (grey). Two linked IRC servers (a line named for them) have no first round trip: they link as they start.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, FederatedRun)> = parse_runs(ctx, runs, &mut section);
    let mut cells: Vec<Cell> = Vec::new();
    for (run, data) in &parsed {
        let link = data.settings.via_link.as_ref();
        let (Some(rate_bps), Some(delay_us)) = (link.and_then(|l| l.rate_bps), link.and_then(|l| l.delay_us)) else {
            section.notes.push(format!("{}: a run with no --via-link is not placed on the grid.", ctx.label(run)));
            continue;
        };
        for result in &data.results {
            cells.push(Cell { run, rate_bps, delay_s: delay_us / 1e6, result });
        }
    }
    let mut rates: Vec<f64> = cells.iter().map(|c| c.rate_bps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    // A line is a server (the target's name): each of its runs is one
    // point, from a file of its own.
    let mut names: Vec<&str> = Vec::new();
    for cell in &cells {
        if !names.contains(&cell.name()) {
            names.push(cell.name());
        }
    }

    // Round trips against delay, one line per server and rate, the study's beside.
    let mut first = Chart::line(format!("{id}-first"), "First round trip (from cold) vs one-way delay", "one-way delay (s)", "first round trip (s)");
    let mut stable = Chart::line(format!("{id}-stable"), "Stable round trip (p50) vs one-way delay", "one-way delay (s)", "stable round trip (s)");
    for (n, &name) in names.iter().enumerate() {
        for (i, &bps) in rates.iter().enumerate() {
            let mut line: Vec<&Cell> = cells.iter().filter(|c| c.name() == name && c.rate_bps == bps).collect();
            if line.is_empty() {
                continue;
            }
            line.sort_by(|a, b| a.delay_s.total_cmp(&b.delay_s));
            let label = format!("{name} · {}", kbit(bps));
            let color = chart::color(n, i, rates.len());
            // A line with no first round trip at all (IRC) is left out of that chart.
            if line.iter().any(|c| c.first().is_some()) {
                first.series.push(Series { label: label.clone(), color: color.clone(), point_style: chart::point_style(i), points: line.iter().map(|c| point(c.delay_s, c.first())).collect() });
            }
            stable.series.push(Series { label, color, point_style: chart::point_style(i), points: line.iter().map(|c| point(c.delay_s, c.stable())).collect() });
        }
    }
    for (shade, (name, figures)) in STUDY.iter().enumerate() {
        for &bps in &rates {
            let at: Vec<&StudyCell> = figures.iter().filter(|f| f.0 == bps).collect();
            if at.is_empty() {
                continue;
            }
            let label = format!("study · {name} · {}", kbit(bps));
            first.series.push(study_series(label.clone(), shade, at.iter().map(|f| point(f.1, Some(f.3))).collect()));
            stable.series.push(study_series(label, shade, at.iter().map(|f| point(f.1, Some(f.2))).collect()));
        }
    }

    // Round trip against payload, and utilisation against payload, with no delay.
    let mut payload = Chart::line(format!("{id}-payload"), "Stable round trip (p50) vs payload, no delay", "payload (bytes)", "stable round trip (s)");
    let mut utilisation = Chart::line(format!("{id}-utilisation"), "Link utilisation streaming one way, no delay (the bodies' information)", "payload (bytes)", "share of the line (%)");
    for cell in cells.iter().filter(|c| c.delay_s == 0.0) {
        let i = rates.iter().position(|&r| r == cell.rate_bps).unwrap_or(0);
        let label = format!("{} · {}", cell.name(), kbit(cell.rate_bps));
        let n = names.iter().position(|&name| name == cell.name()).unwrap_or(0);
        let color = chart::color(n, i, rates.len());
        let mut rows: Vec<&Row> = cell.result.rows.iter().filter(|r| r.typing_us == 0.0).collect();
        rows.sort_by(|a, b| a.size.total_cmp(&b.size));
        if rows.len() > 1 {
            let points = rows.iter().map(|r| point(r.size, r.round_trip.p50_us.map(|us| us / 1e6))).collect();
            payload.series.push(Series { label: label.clone(), color: color.clone(), point_style: chart::point_style(i), points });
        }
        let points: Vec<Point> = cell.result.throughput.iter().map(|t| point(t.size, utilisation_pct(t, cell.rate_bps))).collect();
        if !points.is_empty() {
            utilisation.series.push(Series { label, color, point_style: chart::point_style(i), points });
        }
    }
    if !payload.series.is_empty() {
        for (shade, name) in ["standard S2S", "optimised S2S"].into_iter().enumerate() {
            let points = STUDY_PAYLOAD.iter().map(|f| point(f.0, Some(if shade == 0 { f.1 } else { f.2 }))).collect();
            payload.series.push(study_series(format!("study · {name} · 2.4 kbit/s"), shade, points));
        }
    }
    if !utilisation.series.is_empty() {
        let points = STUDY_UTILISATION.iter().map(|f| point(f.0, Some(f.1))).collect();
        utilisation.series.push(study_series("study · standard S2S, compressed, random bytes · 2.4 kbit/s".into(), 0, points));
    }
    for chart in [first, stable, payload, utilisation] {
        let chart = chart.finish();
        if !chart.is_empty() {
            section.charts.push(chart);
        }
    }
    section.tables.extend(tables(&cells, &names));
    if cells.is_empty() && !parsed.is_empty() {
        section.notes.push("No run had a link to place it on the grid.".to_string());
    }
    section
}

/// The bodies' information over what the line could carry in the time (%).
fn utilisation_pct(t: &Throughput, rate_bps: f64) -> Option<f64> {
    (t.duration_us > 0.0 && rate_bps > 0.0).then(|| 100.0 * t.messages * t.size * BITS_PER_CHAR / (rate_bps * t.duration_us / 1e6))
}

/// The round-trip table beside the study's, and the throughput table.
fn tables(cells: &[Cell], names: &[&str]) -> Vec<Table> {
    let mut grid = Table::new("Round trips beside the study's (2-byte payload)", &["server", "rate", "#one-way delay (s)", "#stable p50 (s)", "#first (s)", "#study standard stable / first (s)", "#study optimised stable / first (s)"]);
    let mut sorted: Vec<&Cell> = cells.iter().collect();
    let order = |c: &Cell| names.iter().position(|&name| name == c.name()).unwrap_or(0);
    sorted.sort_by(|a, b| (order(a), a.rate_bps, a.delay_s).partial_cmp(&(order(b), b.rate_bps, b.delay_s)).unwrap_or(std::cmp::Ordering::Equal));
    for cell in &sorted {
        // The study's XMPP figures are not IRC's.
        let study = |which: usize| {
            STUDY[which].1.iter().find(|f| f.0 == cell.rate_bps && f.1 == cell.delay_s && !cell.is_irc()).map_or("–".to_string(), |f| format!("{} / {}", f.2, f.3))
        };
        grid.push(
            vec![cell.name().to_string(), kbit(cell.rate_bps), num(Some(cell.delay_s), 1), num(cell.stable(), 2), num(cell.first(), 2), study(0), study(1)],
            cell.run.partial,
        );
    }
    let mut streams = Table::new("Throughput: messages one way back to back", &["server", "rate", "#payload (B)", "#messages", "#time (ms)", "#bodies (%)", "#their information (%)", "#study (%)"]);
    for cell in sorted.iter().filter(|c| c.delay_s == 0.0) {
        for t in &cell.result.throughput {
            let information = utilisation_pct(t, cell.rate_bps);
            let study = if cell.is_irc() { &STUDY_IRC_UTILISATION[..] } else { &STUDY_UTILISATION[..] };
            let study = study.iter().find(|f| f.0 == t.size && cell.rate_bps == 2400.0).map_or("–".to_string(), |f| num(Some(f.1), if cell.is_irc() { 1 } else { 0 }));
            streams.push(
                vec![cell.name().to_string(), kbit(cell.rate_bps), num(Some(t.size), 0), num(Some(t.messages), 0), ms(Some(t.duration_us)), num(information.map(|i| i * 8.0 / BITS_PER_CHAR), 0), num(information, 0), study],
                cell.run.partial,
            );
        }
    }
    [grid, streams].into_iter().filter(|t| !t.rows.is_empty()).collect()
}

#[derive(Debug, Deserialize)]
struct LoginRun {
    #[serde(default)]
    settings: Settings,
    results: Vec<LoginResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginResult {
    style: String,
    first_message: Latency,
    round_trips: Option<f64>,
    bytes_sent: Option<f64>,
    bytes_received: Option<f64>,
}

/// `login`: a client logging in from cold through the link, by style.
pub fn login_section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Satellite link: client logins".to_string(),
        about: "An XMPP client logging in from cold through an emulated constrained link, timed to its first message: standard (STARTTLS, SCRAM, restart, bind), SASL2 with Bind 2 over TLS from the first byte, and FAST (resumed TLS 1.3 and a token, one flight).".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, LoginRun)> = parse_runs(ctx, runs, &mut section);
    let mut styles: Vec<String> = Vec::new();
    for (_, data) in &parsed {
        for r in &data.results {
            if !styles.contains(&r.style) {
                styles.push(r.style.clone());
            }
        }
    }
    let mut bars = Chart::bar(format!("{id}-time"), "Login to the first message (p50) by style", styles.clone(), "style", "time (s)");
    let mut table = Table::new("Logins by style", &["server", "link", "style", "#p50 (s)", "#round trips", "#bytes sent", "#bytes received", "#of standard's time"]);
    for (k, (run, data)) in parsed.iter().enumerate() {
        let link = data.settings.via_link.as_ref();
        let where_ = match (link.and_then(|l| l.rate_bps), link.and_then(|l| l.delay_us)) {
            (Some(bps), Some(us)) => format!("{}, {} s", kbit(bps), num(Some(us / 1e6), 1)),
            _ => "no link".to_string(),
        };
        let seconds = |style: &str| data.results.iter().find(|r| r.style == style).and_then(|r| r.first_message.p50_us).map(|us| us / 1e6);
        bars.series.push(Series {
            label: format!("{} · {where_}", run.target_name),
            color: chart::color(run.source, k, parsed.len()),
            point_style: chart::point_style(k),
            points: styles.iter().map(|s| Point { y: seconds(s), ..Default::default() }).collect(),
        });
        let standard = seconds("standard");
        for r in &data.results {
            let p50 = seconds(&r.style);
            let share = match (p50, standard) {
                (Some(t), Some(s)) if s > 0.0 => num(Some(t / s), 2),
                _ => "–".to_string(),
            };
            table.push(
                vec![run.target_name.clone(), where_.clone(), r.style.clone(), num(p50, 2), num(r.round_trips, 0), num(r.bytes_sent, 0), num(r.bytes_received, 0), share],
                run.partial,
            );
        }
    }
    let bars = bars.finish();
    if !bars.is_empty() {
        section.charts.push(bars);
    }
    if !table.rows.is_empty() {
        section.tables.push(table);
    }
    section
}
