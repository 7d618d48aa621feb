//! The page: one HTML file with everything inline — our CSS, Chart.js, the chart data as
//! a JSON blob and the small script that draws it — so it opens offline from a file.
//! Every string that comes from a result file goes through `escape` (text) or
//! `script_json` (the data blob).

use std::fmt::Write;

use serde::Serialize;

use crate::chart::Chart;
use crate::input::{ResultFile, Source};
use crate::scenario::Section;
use crate::table::{Table, num};

/// Chart.js, found by build.rs in web/node_modules (web/package.json pins the version).
const CHARTJS: &str = include_str!(env!("SWITCHBOARD_CHARTJS_PATH"));
pub const CHARTJS_VERSION: &str = env!("SWITCHBOARD_CHARTJS_VERSION");
const SCRIPT: &str = include_str!("../assets/report.js");
const STYLE: &str = include_str!("../assets/report.css");

/// Tables longer than this start folded, so the charts stay close together.
const FOLD_ROWS: usize = 20;

/// Text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` only occur inside JSON
/// strings, where `\u003c` and friends mean the same, so no `</script>` or `<!--` from
/// a file can end or derail the element.
pub fn script_json<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string());
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[derive(Serialize)]
struct Data<'a> {
    charts: Vec<&'a Chart>,
}

pub struct Page<'a> {
    pub title: &'a str,
    pub files: &'a [ResultFile],
    pub sources: &'a [Source],
    pub summary: Option<&'a Table>,
    pub sections: &'a [Section],
}

impl Page<'_> {
    pub fn render(&self) -> String {
        let mut h = String::with_capacity(CHARTJS.len() + 64 * 1024);
        let title = escape(self.title);
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"switchboard report {}\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
            env!("CARGO_PKG_VERSION")
        );
        self.header(&mut h, &title);
        // The answer first (the summary, then each scenario's charts and
        // tables); where it comes from (files, commands, machine) last.
        h.push_str("<main>\n");
        if let Some(summary) = self.summary {
            h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
            table(&mut h, summary, false);
            h.push_str("</section>\n");
        }
        for section in self.sections {
            self.section(&mut h, section);
        }
        self.files_section(&mut h);
        h.push_str("</main>\n");
        let _ = writeln!(
            h,
            "<footer>Made by <code>switchboard report</code> {} with Chart.js {}, inlined: this file works offline.</footer>",
            escape(env!("CARGO_PKG_VERSION")),
            escape(CHARTJS_VERSION)
        );
        let data = Data {
            charts: self.sections.iter().flat_map(|s| s.charts.iter()).collect(),
        };
        let _ = writeln!(
            h,
            "<script type=\"application/json\" id=\"report-data\">{}</script>",
            script_json(&data)
        );
        let _ = writeln!(
            h,
            "<script>\n{CHARTJS}\n</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>"
        );
        h
    }

    fn header(&self, h: &mut String, title: &str) {
        let servers: Vec<String> = self.sources.iter().map(|s| escape(&s.label)).collect();
        let _ = write!(
            h,
            "<header>\n<h1>{title}</h1>\n<p class=\"lede\">{} from {}: {}.</p>\n<nav>",
            plural(self.sources.len(), "server", "servers"),
            plural(self.files.len(), "result file", "result files"),
            if servers.is_empty() {
                "no runs".to_string()
            } else {
                servers.join(", ")
            },
        );
        if self.summary.is_some() {
            h.push_str("<a href=\"#summary\">Summary</a> · ");
        }
        for s in self.sections {
            let _ = write!(
                h,
                "<a href=\"#{}\">{}</a> · ",
                escape(&s.id),
                escape(&s.title)
            );
        }
        h.push_str("<a href=\"#files\">Result files</a></nav>\n</header>\n");
    }

    /// One row per file: when it started, the exact command, its runs; the machine and
    /// versions once when every file shares them, else per file.
    fn files_section(&self, h: &mut String) {
        h.push_str("<section id=\"files\">\n<h2>Result files</h2>\n");
        let machines: Vec<String> = self.files.iter().map(machine).collect();
        let versions: Vec<String> = self.files.iter().map(versions).collect();
        let same_machine = machines.windows(2).all(|w| w[0] == w[1]);
        let same_versions = versions.windows(2).all(|w| w[0] == w[1]);
        if same_machine && !machines.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"common\"><b>Machine</b> {}</p>",
                escape(&machines[0])
            );
        }
        if same_versions && !versions.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"common\"><b>Versions</b> {}</p>",
                escape(&versions[0])
            );
        }
        h.push_str("<div class=\"table-wrap\"><table class=\"files\">\n<thead><tr><th>file</th><th>started</th>");
        if !same_machine {
            h.push_str("<th>machine</th>");
        }
        if !same_versions {
            h.push_str("<th>versions</th>");
        }
        h.push_str("<th>command</th><th>runs</th></tr></thead>\n<tbody>\n");
        for (i, file) in self.files.iter().enumerate() {
            let flagged = file.runs.iter().any(|r| r.partial || r.bench_cpu_bound);
            h.push_str(if flagged {
                "<tr class=\"flagged\">"
            } else {
                "<tr>"
            });
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td>",
                escape(&file.name),
                escape(file.started_at.as_deref().unwrap_or("unknown"))
            );
            if !same_machine {
                let _ = write!(h, "<td>{}</td>", escape(&machines[i]));
            }
            if !same_versions {
                let _ = write!(h, "<td>{}</td>", escape(&versions[i]));
            }
            let command = if file.command.is_empty() {
                "unknown".to_string()
            } else {
                shell_words(&file.command)
            };
            let _ = write!(h, "<td><code>{}</code></td><td>", escape(&command));
            for (k, run) in file.runs.iter().enumerate() {
                if k > 0 {
                    h.push_str("<br>");
                }
                let _ = write!(
                    h,
                    "{}: {} against {}",
                    escape(&self.sources[run.source].label),
                    escape(&run.scenario),
                    escape(&run.target)
                );
                if let Some(cpus) = &run.server_cpus {
                    let _ = write!(h, ", the server on CPUs {}", escape(cpus));
                }
                if let Some(d) = run.duration_s {
                    let _ = write!(h, ", {} s", num(Some(d), 1));
                }
                if run.partial {
                    let why = run
                        .error
                        .as_deref()
                        .map_or_else(String::new, |e| format!(" ({e})"));
                    let _ = write!(
                        h,
                        " <span class=\"caveat\">⚠ partial run{}</span>",
                        escape(&why)
                    );
                }
                if run.bench_cpu_bound {
                    h.push_str(" <span class=\"caveat\">⚠ bench CPU-bound in some windows</span>");
                }
            }
            h.push_str("</td></tr>\n");
        }
        h.push_str("</tbody>\n</table></div>\n</section>\n");
    }

    fn section(&self, h: &mut String, s: &Section) {
        let _ = writeln!(
            h,
            "<section id=\"{}\">\n<h2>{}</h2>",
            escape(&s.id),
            escape(&s.title)
        );
        if !s.about.is_empty() {
            let _ = writeln!(h, "<p class=\"about\">{}</p>", escape(&s.about));
        }
        for w in &s.warnings {
            let _ = writeln!(h, "<p class=\"warning\">{}</p>", escape(w));
        }
        for n in &s.notes {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(n));
        }
        if !s.charts.is_empty() {
            let wide = if s.charts.len() == 1 { " one" } else { "" };
            let _ = writeln!(h, "<div class=\"charts{wide}\">");
            for c in &s.charts {
                let _ = writeln!(
                    h,
                    "<figure class=\"chart\">\n<div class=\"canvas-box\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>",
                    escape(&c.id),
                    escape(&c.title)
                );
                for w in &c.warnings {
                    let _ = writeln!(
                        h,
                        "<figcaption class=\"warning\">{}</figcaption>",
                        escape(w)
                    );
                }
                h.push_str("</figure>\n");
            }
            h.push_str(
                "</div>\n<p class=\"hint\">Click a legend entry to hide or show its series.</p>\n",
            );
        }
        for t in &s.tables {
            table(h, t, t.rows.len() > FOLD_ROWS);
        }
        h.push_str("</section>\n");
    }
}

fn table(h: &mut String, t: &Table, fold: bool) {
    if fold {
        let _ = writeln!(
            h,
            "<details>\n<summary>{} ({} rows)</summary>",
            escape(&t.caption),
            t.rows.len()
        );
    }
    h.push_str("<div class=\"table-wrap\"><table>\n");
    if !fold {
        let _ = writeln!(h, "<caption>{}</caption>", escape(&t.caption));
    }
    h.push_str("<thead><tr>");
    for c in &t.columns {
        let class = if c.numeric { " class=\"num\"" } else { "" };
        let _ = write!(h, "<th{class}>{}</th>", escape(&c.title));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str(if row.flagged {
            "<tr class=\"flagged\">"
        } else {
            "<tr>"
        });
        for (i, cell) in row.cells.iter().enumerate() {
            let class = match t.columns.get(i) {
                Some(c) if c.numeric => " class=\"num\"",
                Some(c) if c.title == "caveats" => " class=\"caveat\"",
                _ => "",
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n");
    if fold {
        h.push_str("</details>\n");
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "switchboard 0.1.0, format switchboard-bench/1".
fn versions(file: &ResultFile) -> String {
    if file.versions.is_empty() {
        return file.format.clone().unwrap_or_else(|| "unknown".to_string());
    }
    file.versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "Intel Xeon …, 2 cores, linux 6.1.0, 7.8 GiB".
fn machine(file: &ResultFile) -> String {
    let m = &file.machine;
    let mut parts = Vec::new();
    if let Some(cpu) = &m.cpu_model {
        parts.push(cpu.clone());
    }
    match (m.cores, &m.bench_cpus) {
        (Some(cores), Some(cpus)) => parts.push(format!("{} cores (the bench on CPUs {cpus})", num(Some(cores), 0))),
        (Some(cores), None) => parts.push(format!("{} cores", num(Some(cores), 0))),
        (None, _) => {}
    }
    match (&m.os, &m.kernel) {
        (Some(os), Some(k)) => parts.push(format!("{os} {k}")),
        (Some(os), None) => parts.push(os.clone()),
        (None, Some(k)) => parts.push(k.clone()),
        (None, None) => {}
    }
    if let Some(bytes) = m.memory_bytes {
        parts.push(format!(
            "{} GiB RAM",
            num(Some(bytes / (1024.0 * 1024.0 * 1024.0)), 1)
        ));
    }
    if parts.is_empty() {
        "unknown".to_string()
    } else {
        parts.join(", ")
    }
}

/// The command as a person would type it: words with spaces or quotes are quoted.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_text() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn data_blob_cannot_close_its_script() {
        let json = script_json(&vec!["</script><!--<script>", "a&b"]);
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'));
        let back: Vec<String> = serde_json::from_str(&json).expect("still JSON");
        assert_eq!(back, ["</script><!--<script>", "a&b"]);
    }

    #[test]
    fn inlined_scripts_cannot_close_their_element() {
        for script in [CHARTJS, SCRIPT] {
            let lower = script.to_ascii_lowercase();
            assert!(!lower.contains("</script") && !lower.contains("<!--"));
        }
        assert!(CHARTJS.contains("Chart.js v4"), "Chart.js 4 is inlined");
    }

    #[test]
    fn commands_are_quoted_like_a_shell() {
        let words: Vec<String> = [
            "switchboard",
            "bench",
            "chat",
            "--target",
            "a b=http://x/chat",
            "it's",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shell_words(&words),
            r#"switchboard bench chat --target 'a b=http://x/chat' 'it'\''s'"#
        );
    }
}
