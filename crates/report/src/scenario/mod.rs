//! One section of the report per scenario: charts and tables built from every run of
//! that scenario, all sources together. Scenarios the report does not know (newer
//! benches) become generic tables, so their figures still appear.

pub mod broadcast;
pub mod chat;
pub mod countdown;
pub mod generic;
pub mod link;
pub mod per_transport;
pub mod pingpong;
pub mod satellite;
pub mod study;

use serde::de::DeserializeOwned;

use crate::chart::Chart;
use crate::input::{Caveats, ResultFile, Run, Source};
use crate::table::Table;

/// A part of the page: a heading, caveats, charts, then the tables of their figures.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The HTML id, also the prefix of its charts' ids.
    pub id: String,
    pub title: String,
    /// One sentence: what the scenario measures.
    pub about: String,
    /// Shown in red: partial runs, runs that could not be read.
    pub warnings: Vec<String>,
    /// Shown plainly: figures that were not recorded, and why.
    pub notes: Vec<String>,
    pub charts: Vec<Chart>,
    pub tables: Vec<Table>,
}

/// What every section builder reads.
pub struct Ctx<'a> {
    pub files: &'a [ResultFile],
    pub sources: &'a [Source],
}

impl Ctx<'_> {
    pub fn label(&self, run: &Run) -> &str {
        &self.sources[run.source].label
    }

    /// Every run, in file order.
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.files.iter().flat_map(|f| f.runs.iter())
    }
}

/// The order known scenarios appear in; unknown ones follow in order of appearance.
const ORDER: [&str; 10] = [
    "broadcast",
    "muc",
    "chat",
    "pingpong",
    "countdown",
    "idle",
    "selftest",
    "link",
    "federated",
    "login",
];

/// The sections of the report, one per scenario present in the files, and the XMPP
/// study's after pingpong's when its runs have the study's transports (see `study`).
pub fn sections(ctx: &Ctx) -> Vec<Section> {
    let mut scenarios: Vec<&str> = ORDER
        .iter()
        .copied()
        .filter(|s| ctx.runs().any(|r| r.scenario == *s))
        .collect();
    for run in ctx.runs() {
        if !scenarios.contains(&run.scenario.as_str()) {
            scenarios.push(&run.scenario);
        }
    }
    let mut ids: Vec<String> = Vec::new();
    let mut sections = Vec::new();
    // Ping-pong over XMPP is the study's (below), when there is one, not the apps' round trips.
    let studied = study::Study::of(ctx).is_some();
    for scenario in scenarios {
        // Series in server order (switchboard first), whatever the order of the files.
        let mut runs: Vec<&Run> = ctx.runs().filter(|r| r.scenario == scenario && !(studied && study::is_xmpp(r))).collect();
        runs.sort_by_key(|r| r.source);
        if runs.is_empty() && scenario == "pingpong" {
            if let Some(study) = study::Study::of(ctx) {
                sections.push(study.section(ctx, &unique_id("xmpp-study", &mut ids)));
            }
            continue;
        }
        let id = unique_id(scenario, &mut ids);
        let mut section = match scenario {
            "broadcast" => broadcast::section(ctx, &id, &runs, broadcast::Sweep::Broadcast),
            "selftest" => broadcast::section(ctx, &id, &runs, broadcast::Sweep::Selftest),
            "muc" => broadcast::section(ctx, &id, &runs, broadcast::Sweep::Muc),
            "chat" => chat::section(ctx, &id, &runs),
            "pingpong" => pingpong::section(ctx, &id, &runs),
            "countdown" => countdown::section(ctx, &id, &runs),
            "link" => link::section(ctx, &id, &runs),
            "federated" => satellite::section(ctx, &id, &runs),
            "login" => satellite::login_section(ctx, &id, &runs),
            _ => generic::section(ctx, &id, scenario, &runs),
        };
        section.warnings.extend(partial_warnings(ctx, &runs));
        sections.push(section);
        if scenario == "pingpong"
            && let Some(study) = study::Study::of(ctx)
        {
            sections.push(study.section(ctx, &unique_id("xmpp-study", &mut ids)));
        }
    }
    sections
}

/// "⚠ server: partial run, stopped early: why", for each partial run.
pub fn partial_warnings(ctx: &Ctx, runs: &[&Run]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.partial)
        .map(|run| {
            let why = run
                .error
                .as_deref()
                .map_or_else(String::new, |e| format!(": {e}"));
            format!("⚠ {}: partial run, stopped early{why}", ctx.label(run))
        })
        .collect()
}

/// An HTML id made of [a-z0-9-] from a scenario name (which comes from a file).
fn unique_id(scenario: &str, taken: &mut Vec<String>) -> String {
    let mut base: String = scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if base.is_empty() || !base.starts_with(|c: char| c.is_ascii_lowercase()) {
        base.insert_str(0, "s-");
    }
    let mut id = base.clone();
    let mut n = 1;
    while taken.contains(&id) || id == "files" || id == "summary" {
        n += 1;
        id = format!("{base}-{n}");
    }
    taken.push(id.clone());
    id
}

/// Reads each run into the scenario's type; a run that does not read is shown as
/// generic tables with a warning, so its figures are not lost.
pub fn parse_runs<'r, T: DeserializeOwned>(
    ctx: &Ctx,
    runs: &[&'r Run],
    section: &mut Section,
) -> Vec<(&'r Run, T)> {
    let mut parsed = Vec::new();
    for run in runs {
        match run.parse::<T>() {
            Ok(data) => parsed.push((*run, data)),
            Err(e) => {
                section.warnings.push(format!(
                    "⚠ {}: this {} run could not be read ({e}); its figures are shown as plain tables",
                    ctx.label(run),
                    run.scenario
                ));
                section.tables.extend(generic::run_tables(ctx, run));
            }
        }
    }
    parsed
}

/// Collects which series had caveats and turns them into a chart's warning lines.
#[derive(Debug, Default)]
pub struct Warnings {
    /// Series with CPU-bound points, and the servers they belong to.
    cpu_bound: Vec<String>,
    cpu_bound_servers: Vec<String>,
    /// Servers with partial runs.
    partial: Vec<String>,
}

impl Warnings {
    pub fn note(&mut self, server: &str, series: &str, caveats: Caveats) {
        fn add(list: &mut Vec<String>, item: &str) {
            if !list.iter().any(|s| s == item) {
                list.push(item.to_string());
            }
        }
        if caveats.bench_cpu_bound {
            add(&mut self.cpu_bound, series);
            add(&mut self.cpu_bound_servers, server);
        }
        if caveats.partial {
            add(&mut self.partial, server);
        }
    }

    /// One short line for the chart's subtitle (drawn in the canvas, which does not wrap).
    pub fn short(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.cpu_bound_servers.is_empty() {
            parts.push(format!(
                "bench CPU-bound (✕ points): {}",
                self.cpu_bound_servers.join(", ")
            ));
        }
        if !self.partial.is_empty() {
            parts.push(format!("partial run: {}", self.partial.join(", ")));
        }
        (!parts.is_empty()).then(|| format!("⚠ {}", parts.join(" · ")))
    }

    /// The series with CPU-bound points, named in full under the chart; partial runs
    /// are explained once, at the top of the section.
    pub fn lines(&self) -> Vec<String> {
        if self.cpu_bound.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "⚠ The bench was CPU-bound at the ✕ points of {}: there the figures show the bench's limit, not the server's.",
            self.cpu_bound.join(", ")
        )]
    }
}

/// One chart of a section: its id suffix, title, y axis and the figure it plots.
pub struct Plot<T> {
    pub key: &'static str,
    pub title: &'static str,
    pub y: &'static str,
    pub value: fn(&T) -> Option<f64>,
}

/// "websocket" → "websocket"; a missing transport reads as "?".
pub fn transport_name(t: &str) -> &str {
    if t.is_empty() { "?" } else { t }
}

/// The transports as shown (see `transport_name`), each once, in order of first
/// appearance: the bar groups of a chart, the rows of the summary, the point styles.
pub fn transports<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in names {
        let t = transport_name(t);
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_and_unique() {
        let mut taken = Vec::new();
        assert_eq!(unique_id("link", &mut taken), "link");
        assert_eq!(unique_id("link", &mut taken), "link-2");
        assert_eq!(unique_id("</script>", &mut taken), "s---script-");
        assert_eq!(unique_id("summary", &mut taken), "summary-2");
    }
}
