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
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
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
        h.push_str("<main>\n");
        self.files_section(&mut h);
        if let Some(summary) = self.summary {
            h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
            table(&mut h, summary, false);
            h.push_str("</section>\n");
        }
        for section in self.sections {
            self.section(&mut h, section);
        }
        h.push_str("</main>\n");
        let _ = write!(
            h,
            "<footer>Made by <code>switchboard report</code> {} with Chart.js {}, inlined: this file works offline.</footer>\n",
            escape(env!("CARGO_PKG_VERSION")),
            escape(CHARTJS_VERSION)
        );
        let data = Data { charts: self.sections.iter().flat_map(|s| s.charts.iter()).collect() };
        let _ = write!(h, "<script type=\"application/json\" id=\"report-data\">{}</script>\n", script_json(&data));
        let _ = write!(h, "<script>\n{CHARTJS}\n</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
        h
    }

    fn header(&self, h: &mut String, title: &str) {
        let servers: Vec<String> = self.sources.iter().map(|s| escape(&s.label)).collect();
        let _ = write!(
            h,
            "<header>\n<h1>{title}</h1>\n<p class=\"lede\">{} from {} result {}: {}.</p>\n<nav><a href=\"#files\">Result files</a>",
            plural(self.sources.len(), "server", "servers"),
            self.files.len(),
            if self.files.len() == 1 { "file" } else { "files" },
            if servers.is_empty() { "no runs".to_string() } else { servers.join(", ") },
        );
        if self.summary.is_some() {
            h.push_str(" · <a href=\"#summary\">Summary</a>");
        }
        for s in self.sections {
            let _ = write!(h, " · <a href=\"#{}\">{}</a>", escape(&s.id), escape(&s.title));
        }
        h.push_str("</nav>\n</header>\n");
    }

    fn files_section(&self, h: &mut String) {
        h.push_str("<section id=\"files\">\n<h2>Result files</h2>\n");
        for file in self.files {
            let _ = write!(h, "<article class=\"file\">\n<h3>{}</h3>\n<dl>\n", escape(&file.name));
            let started = file.started_at.as_deref().unwrap_or("unknown");
            let _ = write!(h, "<dt>started</dt><dd>{}</dd>\n", escape(started));
            let command = if file.command.is_empty() { "unknown".to_string() } else { shell_words(&file.command) };
            let _ = write!(h, "<dt>command</dt><dd><code>{}</code></dd>\n", escape(&command));
            let versions: Vec<String> = file.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let versions = if versions.is_empty() { file.format.clone().unwrap_or_else(|| "unknown".to_string()) } else { versions.join(", ") };
            let _ = write!(h, "<dt>versions</dt><dd>{}</dd>\n", escape(&versions));
            let _ = write!(h, "<dt>machine</dt><dd>{}</dd>\n</dl>\n", escape(&machine(file)));
            let mut runs = Table::new("Runs", &["server", "target", "scenario", "started", "#duration (s)", "caveats"]);
            for run in &file.runs {
                let mut caveats = Vec::new();
                if run.partial {
                    caveats.push("⚠ partial run".to_string());
                }
                if run.bench_cpu_bound {
                    caveats.push("⚠ bench CPU-bound in some windows".to_string());
                }
                if let Some(e) = &run.error {
                    caveats.push(format!("error: {e}"));
                }
                runs.push(
                    vec![
                        self.sources[run.source].label.clone(),
                        run.target.clone(),
                        run.scenario.clone(),
                        run.started_at.clone().unwrap_or_default(),
                        num(run.duration_s, 1),
                        caveats.join("; "),
                    ],
                    run.partial || run.bench_cpu_bound,
                );
            }
            if !runs.rows.is_empty() {
                table(h, &runs, false);
            }
            h.push_str("</article>\n");
        }
        h.push_str("</section>\n");
    }

    fn section(&self, h: &mut String, s: &Section) {
        let _ = write!(h, "<section id=\"{}\">\n<h2>{}</h2>\n", escape(&s.id), escape(&s.title));
        if !s.about.is_empty() {
            let _ = write!(h, "<p class=\"about\">{}</p>\n", escape(&s.about));
        }
        for w in &s.warnings {
            let _ = write!(h, "<p class=\"warning\">{}</p>\n", escape(w));
        }
        for n in &s.notes {
            let _ = write!(h, "<p class=\"note\">{}</p>\n", escape(n));
        }
        if !s.charts.is_empty() {
            let wide = if s.charts.len() == 1 { " one" } else { "" };
            let _ = write!(h, "<div class=\"charts{wide}\">\n");
            for c in &s.charts {
                let _ = write!(
                    h,
                    "<figure class=\"chart\">\n<div class=\"canvas-box\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n",
                    escape(&c.id),
                    escape(&c.title)
                );
                for w in &c.warnings {
                    let _ = write!(h, "<figcaption class=\"warning\">{}</figcaption>\n", escape(w));
                }
                h.push_str("</figure>\n");
            }
            h.push_str("</div>\n<p class=\"hint\">Click a legend entry to hide or show its series.</p>\n");
        }
        for t in &s.tables {
            table(h, t, t.rows.len() > FOLD_ROWS);
        }
        h.push_str("</section>\n");
    }
}

fn table(h: &mut String, t: &Table, fold: bool) {
    if fold {
        let _ = write!(h, "<details>\n<summary>{} ({} rows)</summary>\n", escape(&t.caption), t.rows.len());
    }
    h.push_str("<div class=\"table-wrap\"><table>\n");
    if !fold {
        let _ = write!(h, "<caption>{}</caption>\n", escape(&t.caption));
    }
    h.push_str("<thead><tr>");
    for c in &t.columns {
        let class = if c.numeric { " class=\"num\"" } else { "" };
        let _ = write!(h, "<th{class}>{}</th>", escape(&c.title));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str(if row.flagged { "<tr class=\"flagged\">" } else { "<tr>" });
        for (i, cell) in row.cells.iter().enumerate() {
            let class = if t.columns.get(i).is_some_and(|c| c.numeric) { " class=\"num\"" } else { "" };
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

/// "Intel Xeon …, 2 cores, linux 6.1.0, 7.8 GiB".
fn machine(file: &ResultFile) -> String {
    let m = &file.machine;
    let mut parts = Vec::new();
    if let Some(cpu) = &m.cpu_model {
        parts.push(cpu.clone());
    }
    if let Some(cores) = m.cores {
        parts.push(format!("{} cores", num(Some(cores), 0)));
    }
    match (&m.os, &m.kernel) {
        (Some(os), Some(k)) => parts.push(format!("{os} {k}")),
        (Some(os), None) => parts.push(os.clone()),
        (None, Some(k)) => parts.push(k.clone()),
        (None, None) => {}
    }
    if let Some(bytes) = m.memory_bytes {
        parts.push(format!("{} GiB RAM", num(Some(bytes / (1024.0 * 1024.0 * 1024.0)), 1)));
    }
    if parts.is_empty() { "unknown".to_string() } else { parts.join(", ") }
}

/// The command as a person would type it: words with spaces or quotes are quoted.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain { w.clone() } else { format!("'{}'", w.replace('\'', "'\\''")) }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_text() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
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
        let words: Vec<String> = ["switchboard", "bench", "chat", "--target", "a b=http://x/chat", "it's"].map(String::from).to_vec();
        assert_eq!(shell_words(&words), r#"switchboard bench chat --target 'a b=http://x/chat' 'it'\''s'"#);
    }
}
