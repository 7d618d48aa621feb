//! The SockJS-versus-BOSH study beside our own figures. A published study timed, in a
//! browser against an XMPP server, 100 sequential XEP-0199 pings after logging in
//! (each waiting for its pong) over WebSocket, three SockJS transports and BOSH, on
//! localhost and against a server 162 ms away; `bench pingpong` over XMPP measures the
//! same, and this section sets its totals beside the study's table.
//!
//! When it appears: some pingpong run ran, or was asked to run, one of the study's
//! five transports (xmpp-websocket, xmpp-xhr-streaming, xmpp-xhr-polling,
//! xmpp-jsonp-polling, bosh). Then every pingpong run over XMPP adds its results: a
//! run without `link` is localhost, a run through an emulated link (`--link`) is
//! remote, one column per server and link. A total over another count than the
//! study's 100 pings is scaled to 100 and marked †.

use serde::Deserialize;

use super::pingpong::PingpongResult;
use super::{Ctx, Section, Warnings, partial_warnings};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, LinkRecord, Run};
use crate::table::{Table, ms, num, rate, trim};

/// A transport the study measured: its name there, ours for it, and its totals (ms
/// for 100 pings) on localhost and against the remote server.
struct Measured {
    theirs: &'static str,
    ours: &'static str,
    localhost_ms: f64,
    remote_ms: f64,
}

/// The study's table, in its order.
const STUDY: [Measured; 5] = [
    Measured {
        theirs: "websocket",
        ours: "xmpp-websocket",
        localhost_ms: 98.0,
        remote_ms: 19_126.0,
    },
    Measured {
        theirs: "xhr-streaming",
        ours: "xmpp-xhr-streaming",
        localhost_ms: 3_190.0,
        remote_ms: 24_270.0,
    },
    Measured {
        theirs: "xhr-polling",
        ours: "xmpp-xhr-polling",
        localhost_ms: 3_181.0,
        remote_ms: 37_980.0,
    },
    Measured {
        theirs: "jsonp-polling",
        ours: "xmpp-jsonp-polling",
        localhost_ms: 10_884.0,
        remote_ms: 42_173.0,
    },
    Measured {
        theirs: "BOSH",
        ours: "bosh",
        localhost_ms: 21_471.0,
        remote_ms: 47_905.0,
    },
];

/// Our XMPP transports the study did not have: rows below its own.
const OURS_ONLY: [&str; 3] = ["xmpp-tcp", "xmpp-sockjs-websocket", "xmpp-eventsource"];

/// The rows' transports, ours: the study's, then ours only. Cells are indexed by it.
const TRANSPORTS: [&str; 8] = [
    STUDY[0].ours,
    STUDY[1].ours,
    STUDY[2].ours,
    STUDY[3].ours,
    STUDY[4].ours,
    OURS_ONLY[0],
    OURS_ONLY[1],
    OURS_ONLY[2],
];

/// The rows of the ratio: BOSH and WebSocket.
const BOSH: usize = 4;
const WEBSOCKET: usize = 0;

/// Pings per total in the study; totals over another count are scaled to it.
pub const PINGS: f64 = 100.0;

/// The round trip to the study's remote server.
const STUDY_ROUND_TRIP_MS: f64 = 162.0;

/// The study's BOSH total on localhost ÷ its WebSocket total: 219×.
pub const STUDY_LOCALHOST_RATIO: f64 = STUDY[BOSH].localhost_ms / STUDY[WEBSOCKET].localhost_ms;

/// The project's goal: Switchboard's BOSH total on localhost is at most this many
/// times its xmpp-websocket total.
pub const GOAL: f64 = 3.0;

/// The study's bars: a grey that no server's hue takes.
const STUDY_COLOR: &str = "hsl(0 0% 55%)";

/// A pingpong run as this section reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StudyRun {
    settings: Settings,
    /// The transports asked for, in the order the bench runs them.
    transports: Vec<String>,
    link: Option<LinkRecord>,
    results: Vec<PingpongResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    count: Option<f64>,
}

/// Whether `run` is a pingpong run over XMPP transports only: one of the
/// study's, which the study's section shows instead of the ping-pong one.
pub fn is_xmpp(run: &Run) -> bool {
    run.scenario == "pingpong"
        && run.parse::<StudyRun>().is_ok_and(|d| {
            let mut names = d.names().peekable();
            names.peek().is_some() && names.all(|t| TRANSPORTS.contains(&t))
        })
}

/// Where the bench's client was: on the server's machine, or behind an emulated link.
/// Routes with the same label are one column.
#[derive(Debug, Clone)]
pub enum Route {
    Localhost,
    Link(LinkRecord),
}

impl Route {
    fn is_link(&self) -> bool {
        matches!(self, Route::Link(_))
    }

    /// "localhost", or "link: 81 ms each way, 162 ms round trip" (with its rate,
    /// jitter and loss when it has them).
    pub fn label(&self) -> String {
        let Route::Link(link) = self else {
            return "localhost".to_string();
        };
        let Some(delay) = link.delay_us else {
            return format!(
                "link: {}",
                link.description.as_deref().unwrap_or("emulated")
            );
        };
        let mut label = format!(
            "link: {} ms each way, {} ms round trip",
            trim(delay / 1000.0),
            trim(2.0 * delay / 1000.0)
        );
        if link.rate_bps.is_some() {
            label.push_str(&format!(", {}", rate(link.rate_bps)));
        }
        if let Some(j) = link.jitter_us.filter(|j| *j > 0.0) {
            label.push_str(&format!(", ±{} ms jitter", trim(j / 1000.0)));
        }
        if let Some(l) = link.loss_pct.filter(|l| *l > 0.0) {
            label.push_str(&format!(", {} % loss", trim(l)));
        }
        label
    }

    /// Localhost first, then links by delay.
    fn order(&self) -> (bool, f64) {
        match self {
            Route::Localhost => (false, 0.0),
            Route::Link(l) => (true, l.delay_us.unwrap_or(f64::INFINITY)),
        }
    }
}

/// What a server shows for one transport on one route.
#[derive(Debug, Clone)]
pub enum Cell {
    /// A result: `pings` of the `asked` completed.
    Result {
        source: usize,
        total_us: Option<f64>,
        connect_us: Option<f64>,
        pings: f64,
        asked: f64,
        caveats: Caveats,
    },
    /// The run ended as it came to this transport (connecting or logging in):
    /// "failed" with an error, "stopped" without (cancelled).
    Ended(&'static str),
    /// The run ended before this transport.
    NotRun,
}

impl Cell {
    /// The total for the study's 100 pings (ms), scaled from the pings measured; `None`
    /// unless every ping asked for came back.
    pub fn total_ms(&self) -> Option<f64> {
        match self {
            Cell::Result {
                total_us,
                pings,
                asked,
                ..
            } if *pings > 0.0 && pings >= asked => Some((*total_us)? / 1000.0 * PINGS / pings),
            _ => None,
        }
    }

    /// The pings measured, when the total is scaled from another count.
    fn scaled_from(&self) -> Option<f64> {
        match self {
            Cell::Result { pings, .. } if self.total_ms().is_some() && *pings != PINGS => {
                Some(*pings)
            }
            _ => None,
        }
    }

    fn cpu_bound(&self) -> bool {
        matches!(self, Cell::Result { caveats, .. } if caveats.bench_cpu_bound)
    }

    /// A failure, or a figure the bench's own CPU limited: the row is highlighted.
    fn flagged(&self) -> bool {
        self.cpu_bound() || self.total_ms().is_none()
    }

    /// "22.7", "113.4 †" (scaled), "failed after 57 pings", "failed", "not run"; " ⚠"
    /// where the bench was CPU-bound.
    fn total_text(&self) -> String {
        let mut text = match self {
            Cell::Result { pings, .. } => match self.total_ms() {
                Some(total) if self.scaled_from().is_some() => format!("{} †", num(Some(total), 1)),
                Some(total) => num(Some(total), 1),
                None => format!("failed after {} pings", num(Some(*pings), 0)),
            },
            Cell::Ended(what) => what.to_string(),
            Cell::NotRun => "not run".to_string(),
        };
        if self.cpu_bound() {
            text.push_str(" ⚠");
        }
        text
    }

    /// The login before the pings (ms): a run that failed during its pings had logged in.
    fn login_text(&self) -> String {
        match self {
            Cell::Result { connect_us, .. } => ms(*connect_us),
            Cell::Ended(what) => what.to_string(),
            Cell::NotRun => "not run".to_string(),
        }
    }
}

/// One server on one route: a column of the tables, a series of a chart.
#[derive(Debug)]
pub struct Column {
    /// The server's name; its source's label where two sources of that name ran on
    /// the same route (two runs of one server, told apart by file).
    pub server: String,
    pub route: Route,
    /// The source whose colour the server has in every chart.
    color_source: usize,
    /// One per transport of `TRANSPORTS`.
    cells: Vec<Option<Cell>>,
}

impl Column {
    fn title(&self) -> String {
        format!("{} · {}", self.server, self.route.label())
    }

    /// BOSH's total ÷ xmpp-websocket's, when both are measured.
    pub fn ratio(&self) -> Option<f64> {
        let total = |row: usize| self.cells[row].as_ref().and_then(Cell::total_ms);
        Some(total(BOSH)? / total(WEBSOCKET).filter(|w| *w > 0.0)?)
    }

    /// The source of its BOSH result: the summary's column for its ratio.
    fn bosh_source(&self) -> Option<usize> {
        match &self.cells[BOSH] {
            Some(Cell::Result { source, .. }) => Some(*source),
            _ => None,
        }
    }
}

/// The study beside our runs: the columns of every server and route.
pub struct Study<'a> {
    columns: Vec<Column>,
    /// Indices into `TRANSPORTS` of the rows shown: the study's five, and ours only
    /// where some server has them.
    rows: Vec<usize>,
    /// The pingpong runs over XMPP that were read.
    runs: Vec<&'a Run>,
}

impl<'a> Study<'a> {
    /// The study and our runs, or `None` when no pingpong run has the study's
    /// transports (see the module's documentation).
    pub fn of(ctx: &'a Ctx) -> Option<Study<'a>> {
        let mut read: Vec<(&Run, StudyRun)> = ctx
            .runs()
            .filter(|r| r.scenario == "pingpong")
            // A run that does not read is shown by the pingpong section, with a warning.
            .filter_map(|r| Some((r, r.parse::<StudyRun>().ok()?)))
            .filter(|(_, d)| d.names().any(|t| TRANSPORTS.contains(&t)))
            .collect();
        if !read
            .iter()
            .any(|(_, d)| d.names().any(|t| STUDY.iter().any(|s| s.ours == t)))
        {
            return None;
        }
        read.sort_by_key(|(r, _)| r.source);
        let server = |r: &Run| ctx.sources[r.source].server().to_string();
        let mut columns: Vec<Column> = Vec::new();
        for (run, data) in &read {
            let route = data.route();
            let name = server(run);
            let shared = read.iter().any(|(r, d)| {
                r.source != run.source && server(r) == name && d.route().label() == route.label()
            });
            let (name, color_source) = if shared {
                (ctx.label(run).to_string(), run.source)
            } else {
                let first = ctx.sources.iter().position(|s| s.server() == name);
                (name, first.unwrap_or(run.source))
            };
            let at = match columns
                .iter()
                .position(|c| c.server == name && c.route.label() == route.label())
            {
                Some(at) => at,
                None => {
                    columns.push(Column {
                        server: name,
                        route,
                        color_source,
                        cells: vec![None; TRANSPORTS.len()],
                    });
                    columns.len() - 1
                }
            };
            data.fill(run, &mut columns[at].cells);
        }
        columns.sort_by(|a, b| {
            let (al, ad) = a.route.order();
            let (bl, bd) = b.route.order();
            (a.color_source, al)
                .cmp(&(b.color_source, bl))
                .then(ad.total_cmp(&bd))
        });
        let rows = (0..TRANSPORTS.len())
            .filter(|&i| i < STUDY.len() || columns.iter().any(|c| c.cells[i].is_some()))
            .collect();
        Some(Study {
            columns,
            rows,
            runs: read.into_iter().map(|(r, _)| r).collect(),
        })
    }

    /// Each localhost column's ratio, with the source its BOSH result came from.
    pub fn localhost_ratios(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.columns
            .iter()
            .filter(|c| !c.route.is_link())
            .filter_map(|c| Some((c.bosh_source()?, c.ratio()?)))
    }

    pub fn section(&self, ctx: &Ctx, id: &str) -> Section {
        let mut section = Section {
            id: id.to_string(),
            title: "XMPP: the SockJS-versus-BOSH study".to_string(),
            about: format!(
                "A published study logged in to an XMPP server from a browser, then sent 100 sequential XEP-0199 pings, each waiting for its pong, and took the total time, over WebSocket, three SockJS transports and BOSH, against a server on localhost and one {} ms away. Its figures come from its own machine, browser and server: compare shapes and ratios with ours, not milliseconds. switchboard bench pingpong does the same over XMPP (log in, then 100 pings; the total runs from the first ping to the last pong, the login is in the second table) over the study's transports and three it did not have: xmpp-tcp, and XMPP over SockJS's WebSocket and EventSource. Columns: the study's totals on localhost and remote, then each server's on localhost and through each emulated link (--link), named by its one-way delay and round trip. –: the server has no such transport, or was not run over it.",
                STUDY_ROUND_TRIP_MS
            ),
            warnings: partial_warnings(ctx, &self.runs),
            ..Section::default()
        };
        section.notes.extend(self.notes(ctx));
        for remote in [false, true] {
            if let Some(chart) = self.chart(id, remote) {
                section.charts.push(chart);
            }
        }
        section.tables.push(self.totals_table());
        section.tables.push(self.login_table());
        section
    }

    /// The goal, what was scaled, and why xmpp-tcp has no remote figures.
    fn notes(&self, ctx: &Ctx) -> Vec<String> {
        let mut notes = Vec::new();
        for c in &self.columns {
            let switchboard = ctx.sources[c.color_source].is_switchboard();
            if c.route.is_link() || !switchboard {
                continue;
            }
            let here = match c.ratio() {
                Some(r) => format!("{}, {}", times(r), verdict(r)),
                None => "not measured".to_string(),
            };
            notes.push(format!(
                "Goal: {}'s BOSH total on localhost at most {} its xmpp-websocket total (the study's: {}). Here: {here}.",
                c.server,
                goal(),
                times(STUDY_LOCALHOST_RATIO)
            ));
        }
        let scaled: Vec<String> = self
            .columns
            .iter()
            .flat_map(|c| {
                let mut counts: Vec<f64> = c
                    .cells
                    .iter()
                    .flatten()
                    .filter_map(Cell::scaled_from)
                    .collect();
                counts.sort_by(f64::total_cmp);
                counts.dedup();
                counts
                    .into_iter()
                    .map(move |n| format!("{} ({} pings)", c.title(), num(Some(n), 0)))
            })
            .collect();
        if !scaled.is_empty() {
            notes.push(format!(
                "† Measured over another count than the study's {} pings and scaled to it (total × {} ÷ pings), in the tables and the charts: {}.",
                num(Some(PINGS), 0),
                num(Some(PINGS), 0),
                scaled.join(", ")
            ));
        }
        let tcp = TRANSPORTS.iter().position(|t| *t == "xmpp-tcp");
        if tcp.is_some_and(|t| self.rows.contains(&t))
            && self.columns.iter().any(|c| c.route.is_link())
        {
            notes.push("xmpp-tcp has no figures through a link: the bench's --link carries the target's HTTP port only.".to_string());
        }
        notes
    }

    /// Totals per transport: the study's bars beside one per server, on localhost or
    /// (`remote`) through a link. `None` when no server ran there.
    fn chart(&self, id: &str, remote: bool) -> Option<Chart> {
        let columns: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| c.route.is_link() == remote)
            .collect();
        if columns.is_empty() {
            return None;
        }
        let (key, title, study) = if remote {
            (
                "remote",
                "XMPP study: 100 pings through a link".to_string(),
                format!("the study · {STUDY_ROUND_TRIP_MS} ms round trip"),
            )
        } else {
            (
                "localhost",
                "XMPP study: 100 pings on localhost".to_string(),
                "the study".to_string(),
            )
        };
        let study_ms = |row: usize| {
            STUDY
                .get(row)
                .map(|s| if remote { s.remote_ms } else { s.localhost_ms })
        };
        // Only transports with a bar here: xmpp-tcp has none through a link.
        let rows: Vec<usize> = self
            .rows
            .iter()
            .copied()
            .filter(|&i| {
                study_ms(i).is_some()
                    || columns
                        .iter()
                        .any(|c| c.cells[i].as_ref().and_then(Cell::total_ms).is_some())
            })
            .collect();
        let mut chart = Chart::bar(
            format!("{id}-{key}"),
            title,
            rows.iter().map(|&i| TRANSPORTS[i].to_string()).collect(),
            "transport",
            "total for 100 pings (ms)",
        );
        chart.series.push(Series {
            label: study,
            color: STUDY_COLOR.to_string(),
            point_style: "rect",
            points: rows
                .iter()
                .map(|&i| Point {
                    x: None,
                    y: study_ms(i),
                    flag: None,
                    ..Default::default()
                })
                .collect(),
        });
        let mut warnings = Warnings::default();
        for c in columns {
            let label = if remote { c.title() } else { c.server.clone() };
            let points = rows
                .iter()
                .map(|&i| {
                    let cell = c.cells[i].as_ref();
                    if let Some(Cell::Result { caveats, .. }) = cell {
                        warnings.note(&c.server, &label, *caveats);
                    }
                    let mut flags = Vec::new();
                    if cell.is_some_and(Cell::cpu_bound) {
                        flags.push("⚠ bench CPU-bound".to_string());
                    }
                    if let Some(n) = cell.and_then(Cell::scaled_from) {
                        flags.push(format!("scaled to 100 pings from {}", num(Some(n), 0)));
                    }
                    Point {
                        x: None,
                        y: cell.and_then(Cell::total_ms),
                        flag: (!flags.is_empty()).then(|| flags.join(", ")),
                        ..Default::default()
                    }
                })
                .collect();
            chart.series.push(Series {
                label,
                color: chart::color(c.color_source, 0, 1),
                point_style: "rect",
                points,
            });
        }
        chart.warnings = warnings.lines();
        chart.subtitle = warnings.short();
        Some(chart.finish())
    }

    /// An empty table: the `first` columns, then one per server and route.
    fn table(&self, caption: &str, first: &[&str]) -> Table {
        let titles: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("#{}", c.title()))
            .collect();
        let head: Vec<&str> = first
            .iter()
            .copied()
            .chain(titles.iter().map(String::as_str))
            .collect();
        Table::new(caption, &head)
    }

    /// The study's table with our columns, and the ratio BOSH ÷ WebSocket under it.
    fn totals_table(&self) -> Table {
        let remote = format!("#study: remote, {STUDY_ROUND_TRIP_MS} ms round trip");
        let mut table = self.table(
            "Total for 100 pings (ms); †: scaled to 100 pings; ⚠: the bench was CPU-bound",
            &["study", "ours", "#study: localhost", &remote],
        );
        for &i in &self.rows {
            let study = STUDY.get(i);
            let mut row = vec![
                study.map_or("–", |s| s.theirs).to_string(),
                TRANSPORTS[i].to_string(),
                num(study.map(|s| s.localhost_ms), 0),
                num(study.map(|s| s.remote_ms), 0),
            ];
            row.extend(self.columns.iter().map(|c| {
                c.cells[i]
                    .as_ref()
                    .map_or_else(|| "–".to_string(), Cell::total_text)
            }));
            let flagged = self
                .columns
                .iter()
                .any(|c| c.cells[i].as_ref().is_some_and(Cell::flagged));
            table.push(row, flagged);
        }
        let study_ratio =
            |ms: fn(&Measured) -> f64| Some(times(ms(&STUDY[BOSH]) / ms(&STUDY[WEBSOCKET])));
        let mut row = vec![
            format!("{} ÷ {}", STUDY[BOSH].theirs, STUDY[WEBSOCKET].theirs),
            format!("{} ÷ {}", STUDY[BOSH].ours, STUDY[WEBSOCKET].ours),
        ];
        row.extend(
            [
                study_ratio(|s| s.localhost_ms),
                study_ratio(|s| s.remote_ms),
            ]
            .into_iter()
            .chain(self.columns.iter().map(|c| c.ratio().map(times)))
            .map(|r| r.unwrap_or_else(|| "–".to_string())),
        );
        table.push(row, false);
        table
    }

    /// How long each login before the pings took; the study did not say.
    fn login_table(&self) -> Table {
        let mut table = self.table(
            "Login before the pings (ms): connection, stream, SASL, stream restart and resource binding",
            &["transport"],
        );
        for &i in &self.rows {
            if self.columns.iter().all(|c| c.cells[i].is_none()) {
                continue;
            }
            let mut row = vec![TRANSPORTS[i].to_string()];
            row.extend(self.columns.iter().map(|c| {
                c.cells[i]
                    .as_ref()
                    .map_or_else(|| "–".to_string(), Cell::login_text)
            }));
            table.push(row, false);
        }
        table
    }
}

impl StudyRun {
    fn route(&self) -> Route {
        self.link.clone().map_or(Route::Localhost, Route::Link)
    }

    /// Every transport the run names: the results', and those asked for.
    fn names(&self) -> impl Iterator<Item = &str> {
        self.results
            .iter()
            .map(|r| r.transport.as_str())
            .chain(self.transports.iter().map(String::as_str))
    }

    /// Puts the run's results into a column's cells (a later run's result replaces an
    /// earlier one's), and, when the run stopped early, says which transports it
    /// ended at or never reached: the bench runs them in the order asked and stops at
    /// the first failure.
    fn fill(&self, run: &Run, cells: &mut [Option<Cell>]) {
        let asked = self.settings.count;
        let mut ended = false;
        for r in &self.results {
            let pings = r.count.unwrap_or(0.0);
            let asked = asked.unwrap_or(pings);
            ended |= pings < asked;
            if let Some(i) = TRANSPORTS.iter().position(|t| *t == r.transport) {
                cells[i] = Some(Cell::Result {
                    source: run.source,
                    total_us: r.total_us,
                    connect_us: r.connect_us,
                    pings,
                    asked,
                    caveats: Caveats::of(run, &r.resources),
                });
            }
        }
        if !run.partial {
            return;
        }
        for t in &self.transports {
            if self.results.iter().any(|r| r.transport == *t) {
                continue;
            }
            let cell = if ended {
                Cell::NotRun
            } else {
                ended = true;
                Cell::Ended(if run.error.is_some() {
                    "failed"
                } else {
                    "stopped"
                })
            };
            if let Some(i) = TRANSPORTS.iter().position(|x| x == t) {
                cells[i].get_or_insert(cell);
            }
        }
    }
}

/// A ratio as "219×", "12.5×" or "1.25×": as many digits as it needs.
pub fn times(ratio: f64) -> String {
    let decimals = match ratio {
        r if r >= 100.0 => 0,
        r if r >= 10.0 => 1,
        _ => 2,
    };
    format!("{}×", num(Some(ratio), decimals))
}

/// The goal as written: "3×".
pub fn goal() -> String {
    format!("{}×", trim(GOAL))
}

/// Whether a BOSH ÷ WebSocket ratio meets the goal.
pub fn verdict(ratio: f64) -> &'static str {
    if ratio <= GOAL {
        "the goal holds"
    } else {
        "the goal is missed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(pings: f64, asked: f64, total_us: f64) -> Cell {
        Cell::Result {
            source: 0,
            total_us: Some(total_us),
            connect_us: Some(6_853.0),
            pings,
            asked,
            caveats: Caveats::default(),
        }
    }

    #[test]
    fn totals_are_for_100_pings() {
        let hundred = result(100.0, 100.0, 21_471_000.0);
        assert_eq!(hundred.total_ms(), Some(21_471.0));
        assert_eq!(hundred.total_text(), "21,471.0");
        assert!(!hundred.flagged());
        // 20 pings in 22.6 ms: 113 ms for 100, marked as scaled.
        let twenty = result(20.0, 20.0, 22_600.0);
        assert_eq!(twenty.total_ms(), Some(113.0));
        assert_eq!(twenty.total_text(), "113.0 †");
        assert_eq!(twenty.scaled_from(), Some(20.0));
    }

    #[test]
    fn failures_have_no_total() {
        let stopped = result(57.0, 100.0, 5_000_000.0);
        assert_eq!(stopped.total_ms(), None);
        assert_eq!(stopped.total_text(), "failed after 57 pings");
        assert_eq!(stopped.login_text(), "6.85", "it had logged in");
        assert!(stopped.flagged());
        assert_eq!(Cell::Ended("stopped").total_text(), "stopped");
        assert_eq!(Cell::NotRun.login_text(), "not run");
        let mut cpu_bound = result(100.0, 100.0, 98_000.0);
        if let Cell::Result { caveats, .. } = &mut cpu_bound {
            caveats.bench_cpu_bound = true;
        }
        assert_eq!(cpu_bound.total_text(), "98.0 ⚠");
        assert!(cpu_bound.flagged());
    }

    #[test]
    fn ratios_and_routes_read_plainly() {
        assert_eq!(times(STUDY_LOCALHOST_RATIO), "219×");
        assert_eq!(times(12.54), "12.5×");
        assert_eq!(times(1.254), "1.25×");
        assert_eq!(goal(), "3×");
        assert_eq!(verdict(3.0), "the goal holds");
        assert_eq!(verdict(3.01), "the goal is missed");
        assert_eq!(Route::Localhost.label(), "localhost");
        let link = LinkRecord {
            delay_us: Some(81_000.0),
            rate_bps: Some(1e6),
            jitter_us: Some(2_000.0),
            loss_pct: Some(0.5),
            ..LinkRecord::default()
        };
        assert_eq!(
            Route::Link(link).label(),
            "link: 81 ms each way, 162 ms round trip, 1 Mbit/s, ±2 ms jitter, 0.5 % loss"
        );
    }
}
