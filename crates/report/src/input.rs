//! Result files as the report reads them (written by `switchboard bench … --out FILE`,
//! schema in crates/bench/schema.json).
//!
//! Tolerant on purpose: the report does not depend on the bench crate, every field has
//! a default and unknown fields are ignored, so files from older or newer benches still
//! render. Only a file that is not JSON, or has no `runs` array, is refused.

use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::Error;
use serde_json::Value;

/// One result file: its header and its runs.
#[derive(Debug)]
pub struct ResultFile {
    /// The file name as given on the command line, for headings and fallbacks.
    pub name: String,
    pub format: Option<String>,
    pub command: Vec<String>,
    pub started_at: Option<String>,
    /// `versions` as written (`switchboard`, `format`, whatever newer benches add).
    pub versions: Vec<(String, String)>,
    pub machine: Machine,
    pub runs: Vec<Run>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Machine {
    pub cpu_model: Option<String>,
    pub cores: Option<f64>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub memory_bytes: Option<f64>,
    /// The CPUs the bench ran on ("1"), when the file says.
    pub bench_cpus: Option<String>,
}

/// One scenario against one target.
#[derive(Debug)]
pub struct Run {
    pub target_name: String,
    pub target: String,
    pub duration_s: Option<f64>,
    /// The run stopped early; its figures cover what was measured.
    pub partial: bool,
    pub error: Option<String>,
    pub bench_cpu_bound: bool,
    /// The CPUs the server ran on ("0"), when the file says.
    pub server_cpus: Option<String>,
    pub scenario: String,
    /// The whole run object, for the scenario's own reader or the generic tables.
    pub raw: Value,
    /// Index into the report's sources, set by `sources`.
    pub source: usize,
}

impl Run {
    /// Reads the run into a scenario's own tolerant type.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value(self.raw.clone()).map_err(|e| e.to_string())
    }
}

/// A latency summary; microseconds. The bench writes a summary without samples as an
/// empty histogram, all zeros: such a summary reads as no figures at all, here once,
/// so no chart or table can take those zeros for a measured 0 µs.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(from = "LatencyRecord")]
pub struct Latency {
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub max_us: Option<f64>,
}

/// A latency summary as the file has it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LatencyRecord {
    count: Option<f64>,
    mean_us: Option<f64>,
    p50_us: Option<f64>,
    p90_us: Option<f64>,
    p99_us: Option<f64>,
    p999_us: Option<f64>,
    max_us: Option<f64>,
}

impl From<LatencyRecord> for Latency {
    fn from(r: LatencyRecord) -> Latency {
        // Files without `count` (older benches) had samples when the mean is above zero.
        let sampled = r.count.is_some_and(|c| c > 0.0)
            || (r.count.is_none() && r.mean_us.is_some_and(|m| m > 0.0));
        if !sampled {
            return Latency::default();
        }
        Latency {
            mean_us: r.mean_us,
            p50_us: r.p50_us,
            p90_us: r.p90_us,
            p99_us: r.p99_us,
            p999_us: r.p999_us,
            max_us: r.max_us,
        }
    }
}

impl Latency {
    pub fn mean_ms(&self) -> Option<f64> {
        self.mean_us.map(|us| us / 1000.0)
    }

    pub fn p99_ms(&self) -> Option<f64> {
        self.p99_us.map(|us| us / 1000.0)
    }
}

/// CPU and memory over one measurement window.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Resources {
    /// % of one core.
    pub server_cpu_pct: Option<f64>,
    pub server_cpu_max_pct: Option<f64>,
    pub server_rss_max_bytes: Option<f64>,
    pub bench_cpu_pct: Option<f64>,
    pub bench_rss_bytes: Option<f64>,
    pub host_cpu_pct: Option<f64>,
    pub bench_cpu_bound: bool,
    pub host_saturated: bool,
}

impl Resources {
    pub fn server_rss_mib(&self) -> Option<f64> {
        self.server_rss_max_bytes.map(|b| b / (1024.0 * 1024.0))
    }
}

/// The emulated link every connection of a run crossed (`--link`), as the bench
/// records it in `runs[].link` (and `bench link` in its settings).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct LinkRecord {
    /// The link in words: rate, delay, overhead per packet, shared or not.
    pub description: Option<String>,
    /// Line rate of each direction; `None` for unlimited.
    pub rate_bps: Option<f64>,
    /// One-way delay of each direction.
    pub delay_us: Option<f64>,
    pub jitter_us: Option<f64>,
    pub loss_pct: Option<f64>,
    pub overhead_bytes: Option<f64>,
}

/// Caveats of one measurement window, as shown in tables and chart subtitles.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Caveats {
    /// The bench used ≥ 90 % of its cores: the figure is the bench's limit, not the server's.
    pub bench_cpu_bound: bool,
    /// Less than 5 % of the machine was idle.
    pub host_saturated: bool,
    /// The run stopped early.
    pub partial: bool,
}

impl Caveats {
    pub fn of(run: &Run, resources: &Resources) -> Caveats {
        Caveats {
            bench_cpu_bound: resources.bench_cpu_bound,
            host_saturated: resources.host_saturated,
            partial: run.partial,
        }
    }

    /// A caveat that changes what the figure means: the row is highlighted.
    pub fn serious(&self) -> bool {
        self.bench_cpu_bound || self.partial
    }

    /// "⚠ bench CPU-bound, partial run · host saturated", or empty.
    pub fn text(&self) -> String {
        let mut serious = Vec::new();
        if self.bench_cpu_bound {
            serious.push("bench CPU-bound");
        }
        if self.partial {
            serious.push("partial run");
        }
        let mut text = if serious.is_empty() {
            String::new()
        } else {
            format!("⚠ {}", serious.join(", "))
        };
        if self.host_saturated {
            text.push_str(if text.is_empty() {
                "host saturated"
            } else {
                " · host saturated"
            });
        }
        text
    }
}

/// Reads one result file.
pub fn load(path: &Path) -> Result<ResultFile, Error> {
    let text = std::fs::read_to_string(path).map_err(|error| Error::Read {
        path: path.to_path_buf(),
        error,
    })?;
    let json: Value = serde_json::from_str(&text).map_err(|error| Error::Json {
        path: path.to_path_buf(),
        error,
    })?;
    let refuse = |reason: &str| Error::Format {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if !matches!(json, Value::Object(_)) {
        return Err(refuse("the top level is not a JSON object"));
    }
    match json.get("format") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f.starts_with("switchboard-bench/") => {}
        Some(other) => {
            return Err(refuse(&format!(
                "its format is {}, not switchboard-bench/…",
                other
            )));
        }
    }
    let runs = match json.get("runs") {
        Some(Value::Array(runs)) => runs,
        Some(_) => return Err(refuse("`runs` is not an array")),
        None => return Err(refuse("it has no `runs` array")),
    };
    let mut parsed = Vec::with_capacity(runs.len());
    for (i, raw) in runs.iter().enumerate() {
        if !matches!(raw, Value::Object(_)) {
            return Err(refuse(&format!("run {} is not a JSON object", i + 1)));
        }
        parsed.push(Run {
            target_name: field::<String>(raw, "target_name").unwrap_or_default(),
            target: field::<String>(raw, "target").unwrap_or_default(),
            duration_s: field(raw, "duration_s"),
            partial: field(raw, "partial").unwrap_or(false),
            error: field(raw, "error"),
            bench_cpu_bound: field(raw, "bench_cpu_bound").unwrap_or(false),
            server_cpus: field(raw, "server_cpus"),
            scenario: field::<String>(raw, "scenario").unwrap_or_else(|| "unnamed".to_string()),
            raw: raw.clone(),
            source: 0,
        });
    }
    let versions = match json.get("versions") {
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(k, v)| (k.clone(), crate::table::cell(v)))
            .collect(),
        _ => Vec::new(),
    };
    Ok(ResultFile {
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        format: field(&json, "format"),
        command: field(&json, "command").unwrap_or_default(),
        started_at: field(&json, "started_at"),
        versions,
        machine: field(&json, "machine").unwrap_or_default(),
        runs: parsed,
    })
}

/// One field read leniently: missing or of another type reads as `None`.
fn field<T: DeserializeOwned>(object: &Value, key: &str) -> Option<T> {
    serde_json::from_value(object.get(key)?.clone()).ok()
}

/// Where a series comes from: one server, that is the runs of one target in one file
/// or, when the bench wrote one file per scenario, in several files.
#[derive(Debug, Clone)]
pub struct Source {
    /// The target name, or the file stem when the run has none (`default`); made unique.
    pub label: String,
    pub target_name: String,
    /// The first file it has runs in, by index: it names the source when the same
    /// server appears twice.
    first_file: usize,
    /// The scenarios it has runs of.
    scenarios: Vec<String>,
}

impl Source {
    /// Switchboard itself (by target name, or by file name when the run has none): the
    /// summary's baseline, and the server the project's goals are about.
    pub fn is_switchboard(&self) -> bool {
        self.target_name == "switchboard" || self.label == "switchboard"
    }

    /// The server's name: the target name, or the file stem when the run has none.
    /// Unlike `label`, the same for a server's runs in several files.
    pub fn server(&self) -> &str {
        if self.target_name.is_empty() || self.target_name == "default" {
            &self.label
        } else {
            &self.target_name
        }
    }
}

/// Whether the run's clients went `over` XMPP or an emulated link: the bench records
/// `xmpp` and `link` then.
fn over(run: &Run, what: &str) -> bool {
    run.raw.get(what).is_some_and(|v| !matches!(v, Value::Null))
}

/// Groups the runs of all files into sources, in order of appearance, and tags each run
/// with its source.
///
/// Each (file, target) is a series source. Sources with the same name join into one
/// server when they hold different scenarios (`switchboard-chat.json` and
/// `switchboard-broadcast.json`), so the summary has one column per server; the same
/// scenario twice (two runs of one server) stays apart, labelled by file name.
pub fn sources(files: &mut [ResultFile]) -> Vec<Source> {
    let mut sources: Vec<Source> = Vec::new();
    for (f, file) in files.iter_mut().enumerate() {
        let stem = Path::new(&file.name)
            .file_stem()
            .map_or_else(|| file.name.clone(), |s| s.to_string_lossy().into_owned());
        // The (file, target) pairs of this file and the scenarios each holds.
        let mut pairs: Vec<(String, Vec<String>)> = Vec::new();
        for run in &file.runs {
            match pairs.iter_mut().find(|(t, _)| *t == run.target_name) {
                Some((_, scenarios)) => scenarios.push(run.scenario.clone()),
                None => pairs.push((run.target_name.clone(), vec![run.scenario.clone()])),
            }
        }
        for (target_name, scenarios) in pairs {
            let named = !target_name.is_empty() && target_name != "default";
            let label = if named {
                target_name.clone()
            } else {
                stem.clone()
            };
            let joins = sources.iter().position(|s| {
                s.target_name == target_name
                    && s.label == label
                    && !scenarios.iter().any(|sc| s.scenarios.contains(sc))
            });
            let index = match joins {
                Some(i) => {
                    sources[i].scenarios.extend(scenarios);
                    i
                }
                None => {
                    sources.push(Source {
                        label,
                        target_name: target_name.clone(),
                        first_file: f,
                        scenarios,
                    });
                    sources.len() - 1
                }
            };
            for run in file
                .runs
                .iter_mut()
                .filter(|r| r.target_name == target_name)
            {
                run.source = index;
            }
        }
    }
    // Switchboard is the baseline of the summary: its column and colour come first.
    if let Some(i) = sources.iter().position(Source::is_switchboard) {
        let moved = sources.remove(i);
        sources.insert(0, moved);
        for run in files.iter_mut().flat_map(|f| f.runs.iter_mut()) {
            run.source = match run.source {
                s if s == i => 0,
                s if s < i => s + 1,
                s => s,
            };
        }
    }
    // The same server twice keeps its first file's name to tell the two apart, unless
    // one of them is the server's main measurement: the only one that ran the apps on
    // localhost, or else the only one with anything on localhost. That one keeps the
    // plain name (the shootout's XMPP and link files repeat a server's ping-pong, and
    // its series in every other chart should read "switchboard" or "ejabberd").
    let labels: Vec<String> = sources.iter().map(|s| s.label.clone()).collect();
    let has = |j: usize, wanted: fn(&Run) -> bool| {
        files.iter().flat_map(|f| f.runs.iter()).any(|r| r.source == j && wanted(r))
    };
    let plain: Vec<bool> = (0..sources.len())
        .map(|i| {
            let same: Vec<usize> = (0..sources.len()).filter(|&j| labels[j] == labels[i]).collect();
            let only = |wanted: fn(&Run) -> bool| has(i, wanted) && same.iter().filter(|&&j| has(j, wanted)).count() == 1;
            let apps: fn(&Run) -> bool = |r| !over(r, "xmpp") && !over(r, "link");
            let local: fn(&Run) -> bool = |r| !over(r, "link");
            let any_apps = same.iter().any(|&j| has(j, apps));
            same.len() == 1 || only(apps) || (!any_apps && only(local))
        })
        .collect();
    for (i, source) in sources.iter_mut().enumerate() {
        if !plain[i] {
            source.label = format!("{} ({})", labels[i], files[source.first_file].name);
        }
    }
    sources
}

/// A result file of runs (target name, scenario) with no figures, for tests.
#[cfg(test)]
pub(crate) fn test_file(name: &str, runs: &[(&str, &str)]) -> ResultFile {
    ResultFile {
        name: name.to_string(),
        format: None,
        command: Vec::new(),
        started_at: None,
        versions: Vec::new(),
        machine: Machine::default(),
        runs: runs
            .iter()
            .map(|(target, scenario)| Run {
                target_name: target.to_string(),
                target: String::new(),
                duration_s: None,
                partial: false,
                error: None,
                bench_cpu_bound: false,
                server_cpus: None,
                scenario: scenario.to_string(),
                raw: Value::Null,
                source: usize::MAX,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::test_file as file;
    use super::*;

    fn labels(files: &mut [ResultFile]) -> Vec<String> {
        sources(files).into_iter().map(|s| s.label).collect()
    }

    #[test]
    fn one_server_per_target_across_scenario_files() {
        let mut files = [
            file("sb-chat.json", &[("switchboard", "chat")]),
            file("sb-pingpong.json", &[("switchboard", "pingpong")]),
            file(
                "rival.json",
                &[("rival", "chat"), ("switchboard", "broadcast")],
            ),
        ];
        assert_eq!(labels(&mut files), ["switchboard", "rival"]);
        assert_eq!(files[2].runs[0].source, 1);
        assert_eq!(files[2].runs[1].source, 0);
    }

    #[test]
    fn switchboard_comes_first() {
        let mut files = [
            file("rival.json", &[("rival", "chat")]),
            file("a.json", &[("other", "chat"), ("switchboard", "chat")]),
        ];
        assert_eq!(labels(&mut files), ["switchboard", "rival", "other"]);
        assert_eq!(
            [
                files[0].runs[0].source,
                files[1].runs[0].source,
                files[1].runs[1].source
            ],
            [1, 2, 0]
        );
    }

    #[test]
    fn the_same_scenario_twice_stays_apart() {
        let mut files = [
            file("monday.json", &[("switchboard", "chat")]),
            file("tuesday.json", &[("switchboard", "chat")]),
        ];
        assert_eq!(
            labels(&mut files),
            ["switchboard (monday.json)", "switchboard (tuesday.json)"]
        );
    }

    #[test]
    fn the_apps_run_keeps_the_plain_name_beside_xmpp_and_link_runs() {
        let mut files = [
            file("sb-pingpong.json", &[("switchboard", "pingpong")]),
            file("sb-xmpp-local.json", &[("switchboard", "pingpong")]),
            file("sb-xmpp-remote.json", &[("switchboard", "pingpong")]),
        ];
        files[1].runs[0].raw = serde_json::from_str(r#"{"xmpp": {"domain": "localhost"}}"#).expect("json");
        files[2].runs[0].raw = serde_json::from_str(r#"{"xmpp": {}, "link": {"delay_us": 81000}}"#).expect("json");
        assert_eq!(
            labels(&mut files),
            [
                "switchboard",
                "switchboard (sb-xmpp-local.json)",
                "switchboard (sb-xmpp-remote.json)"
            ]
        );
        // A server with XMPP runs only: its runs on localhost keep the name.
        let mut files = [
            file("ej-idle.json", &[("ejabberd", "idle")]),
            file("ej-local.json", &[("ejabberd", "pingpong")]),
            file("ej-remote.json", &[("ejabberd", "pingpong")]),
        ];
        for f in &mut files[..2] {
            f.runs[0].raw = serde_json::from_str(r#"{"xmpp": {}}"#).expect("json");
        }
        files[2].runs[0].raw = serde_json::from_str(r#"{"xmpp": {}, "link": {}}"#).expect("json");
        assert_eq!(labels(&mut files), ["ejabberd", "ejabberd (ej-remote.json)"]);
    }

    #[test]
    fn unnamed_targets_take_the_file_name() {
        let mut files = [
            file("results/a.json", &[("default", "chat")]),
            file("b.json", &[("", "chat")]),
        ];
        files[0].name = "a.json".to_string();
        assert_eq!(labels(&mut files), ["a", "b"]);
    }
}

#[cfg(test)]
mod caveat_tests {
    use super::Caveats;

    #[test]
    fn caveat_text() {
        let c = Caveats {
            bench_cpu_bound: true,
            host_saturated: true,
            partial: true,
        };
        assert_eq!(c.text(), "⚠ bench CPU-bound, partial run · host saturated");
        let c = Caveats {
            host_saturated: true,
            ..Caveats::default()
        };
        assert_eq!(c.text(), "host saturated");
        assert!(!c.serious());
    }
}
