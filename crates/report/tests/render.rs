//! `switchboard report` end to end on the fixtures (issue 4): every scenario renders,
//! strings from files are escaped, unknown scenarios become tables, bad files are
//! named in the error.

use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh directory under the system temp dir, removed when dropped.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("switchboard-report-{name}-"))
        .tempdir()
        .expect("temp dir")
}

fn edit(src: &Path, dst: &Path, f: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).expect("read")).expect("json");
    f(&mut v);
    std::fs::write(dst, serde_json::to_string_pretty(&v).expect("serialize")).expect("write");
    dst.to_path_buf()
}

/// Checks that each file follows crates/bench/schema.json, naming the file that does not.
fn assert_follow_the_schema(files: &[PathBuf]) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("bench schema"))
            .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    for file in files {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} does not match crates/bench/schema.json:\n{}",
            file.display(),
            errors.join("\n")
        );
    }
}

#[test]
fn fixtures_follow_the_bench_schema() {
    let files = fixtures();
    assert_eq!(files.len(), 8, "two servers × four scenarios");
    assert_follow_the_schema(&files);
}

/// Files written by the real `switchboard bench … --out` against `switchboard serve`
/// (debug build, two shared cores), so the reader is checked against the writer.
fn real_files() -> Vec<PathBuf> {
    ["pingpong", "countdown", "chat", "broadcast", "selftest"]
        .iter()
        .map(|s| fixture(&format!("real/{s}.json")))
        .collect()
}

#[test]
fn real_bench_files_render() {
    assert_follow_the_schema(&real_files());
    let r = report::generate(&real_files(), "Real").expect("renders");
    assert_eq!(
        r.sections,
        [
            "broadcast",
            "chat",
            "pingpong",
            "countdown",
            "selftest",
            "summary"
        ]
    );
    assert_eq!(r.charts.len(), 12, "{:?}", r.charts);
    assert_eq!(
        r.servers,
        ["switchboard", "selftest"],
        "selftest's target has no name: the file names it"
    );
    assert!(!r.html.contains("could not be read"));
    assert!(
        !r.html.contains("<th class=\"num\">selftest</th>"),
        "no summary column without figures"
    );
}

#[test]
fn fixtures_render_every_scenario() {
    let r = report::generate(&fixtures(), "Fixtures").expect("renders");
    assert_eq!(
        r.servers,
        ["switchboard", "sockjs-node"],
        "labelled by target name, switchboard first"
    );
    for id in ["broadcast", "chat", "pingpong", "countdown", "summary"] {
        assert!(
            r.sections.iter().any(|s| s == id),
            "section {id} in {:?}",
            r.sections
        );
        assert!(
            r.html.contains(&format!("<section id=\"{id}\">")),
            "section {id} in the page"
        );
    }
    // The answer leads: the summary first, each scenario, and the files last.
    let at = |id: &str| r.html.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("{id}"));
    assert!(at("summary") < at("broadcast"));
    assert!(["broadcast", "chat", "pingpong", "countdown"].iter().all(|&id| at(id) < at("files")));
    let expected = [
        "broadcast-rt",
        "chat-1r-latency",
        "chat-1r-cpu",
        "chat-1r-rss",
        "chat-2r-latency",
        "chat-2r-cpu",
        "chat-2r-rss",
        "chat-4r-latency",
        "chat-4r-cpu",
        "chat-4r-rss",
        "chat-bubble",
        "pingpong-mean",
        "pingpong-p99",
        "countdown-step",
    ];
    assert_eq!(r.charts, expected);
    for id in expected {
        assert!(
            r.html.contains(&format!("<canvas id=\"{id}\"")),
            "canvas {id}"
        );
    }
    // Self-contained: Chart.js inline, nothing fetched.
    assert!(r.html.contains("Chart.js v4"));
    for external in [
        "<script src",
        "<link",
        "@import",
        "url(",
        "src=\"http",
        "href=\"http",
        "<iframe",
        "<img",
    ] {
        assert!(!r.html.contains(external), "{external} in the page");
    }
    // The header names machine, versions, command and start time of each file.
    assert!(
        r.html
            .contains("AMD EPYC 7B13, 2 cores, linux 6.1.0-13-cloud-amd64, 8.0 GiB RAM")
    );
    assert!(
        r.html
            .contains("switchboard 0.1.0, format switchboard-bench/1")
    );
    assert!(r.html.contains("switchboard bench broadcast --target switchboard=http://127.0.0.1:8080/broadcast --levels 25,100,500 --out switchboard-broadcast.json"));
    assert!(r.html.contains("2026-01-12T09:05:00.000Z"));
    // Caveats are visible: the CPU-bound level and the partial chat run.
    assert!(r.html.contains("bench was CPU-bound"), "chart warning");
    assert!(r.html.contains(
        "<tr class=\"flagged\"><td>sockjs-node</td><td class=\"caveat\">⚠ bench CPU-bound · host saturated</td><td>websocket</td><td class=\"num\">500</td>"
    ));
    assert!(
        r.html
            .contains("⚠ sockjs-node: partial run, stopped early: connection reset by peer")
    );
    // One line per (server, level) in broadcast.
    for label in [
        "switchboard · 25 conns",
        "switchboard · 500 conns",
        "sockjs-node · 100 conns",
    ] {
        assert!(
            r.html.contains(&format!("\"label\":\"{label}\"")),
            "series {label}"
        );
    }
}

#[test]
fn summary_compares_to_switchboard() {
    let r = report::generate(&fixtures(), "Fixtures").expect("renders");
    let summary = &r.html[r.html.find("<section id=\"summary\">").expect("summary")..];
    let summary = &summary[..summary.find("</section>").expect("end")];
    assert!(
        summary.contains("switchboard (baseline)"),
        "switchboard is the baseline"
    );
    assert!(summary.contains("broadcast: max sustainable received msgs/s, 25 conns"));
    assert!(summary.contains("<td class=\"num\">218,947</td>"));
    assert!(summary.contains("97,310 (×0.44)"));
    assert!(summary.contains("best level"));
    assert!(
        summary.contains("chat at 4 rooms × 20 users: mean latency (ms)"),
        "heaviest load both servers ran"
    );
    // sockjs-node delivered 158,766 of 160,000 there: its figures say so.
    assert_eq!(summary.matches(" (99% delivered)</td>").count(), 4, "{summary}");
    assert!(summary.contains("pingpong: mean round trip, websocket (µs)"));
    assert!(summary.contains("countdown: time per step, http (µs)"));
}

#[test]
fn a_failed_server_appears_as_failed_in_the_summary() {
    // What the shootout writes for a peer that did not install or start (issue 6).
    let dir = temp_dir("failed");
    let failed = edit(
        &fixture("switchboard-broadcast.json"),
        &dir.path().join("tornado-failed.json"),
        |v| {
            let run = &mut v["runs"][0];
            run["target_name"] = "tornado".into();
            run["partial"] = true.into();
            run["error"] = "did not start: tornado: FAILED: not installed".into();
            run["levels"] = serde_json::json!([]);
            run["summary"] = serde_json::json!([]);
        },
    );
    let failed_chat = edit(
        &fixture("switchboard-chat.json"),
        &dir.path().join("tornado-chat-failed.json"),
        |v| {
            let run = &mut v["runs"][0];
            run["target_name"] = "tornado".into();
            run["partial"] = true.into();
            run["error"] = "did not start: tornado: FAILED: not installed".into();
            run["results"] = serde_json::json!([]);
        },
    );
    let mut files = fixtures();
    files.push(failed);
    files.push(failed_chat);
    let r = report::generate(&files, "Failed").expect("renders");
    let summary = &r.html[r.html.find("<section id=\"summary\">").expect("summary")..];
    let summary = &summary[..summary.find("</section>").expect("end")];
    assert!(
        summary.contains("<th>tornado</th>") || summary.contains(">tornado<"),
        "a column for the failed server"
    );
    assert!(summary.contains("failed (broadcast): did not start: tornado: FAILED: not installed"));
    assert!(
        summary.contains("chat at 4 rooms × 20 users"),
        "a failed server does not veto the load the others share"
    );
    assert!(
        summary.contains("<td class=\"num\">ok</td>") || summary.contains(">ok<"),
        "the others are ok"
    );
}

#[test]
fn hostile_strings_are_escaped() {
    let dir = temp_dir("hostile");
    let evil = "</script><img src=x onerror=alert(1)>";
    let file = edit(
        &fixture("switchboard-pingpong.json"),
        &dir.path().join("evil.json"),
        |v| {
            v["runs"][0]["target_name"] = evil.into();
            v["runs"][0]["results"][0]["transport"] = evil.into();
            v["command"][2] = evil.into();
            v["machine"]["cpu_model"] = evil.into();
        },
    );
    let unknown = edit(
        &fixture("switchboard-countdown.json"),
        &dir.path().join("evil-scenario.json"),
        |v| {
            v["runs"][0]["scenario"] = evil.into();
            v["runs"][0]["target_name"] = "<!--<script>".into();
        },
    );
    let r = report::generate(&[file, unknown], evil).expect("renders");
    assert!(!r.html.contains("<img"), "no element from a file");
    assert!(!r.html.contains("<!--<script>"));
    assert!(
        r.html
            .contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;")
    );
    assert_eq!(
        r.html.matches("</script>").count(),
        3,
        "only our three script elements close"
    );
    assert!(
        r.html.contains("\\u003c/script\\u003e\\u003cimg"),
        "the data blob keeps the name, escaped"
    );
}

#[test]
fn unknown_scenarios_become_tables() {
    let r = report::generate(&[fixture("other/link.json")], "Link").expect("renders");
    assert_eq!(r.sections, ["link"]);
    assert!(r.charts.is_empty());
    assert_eq!(
        r.servers,
        ["switchboard", "sockjs-node"],
        "two targets in one file are two servers"
    );
    for text in [
        "switchboard · link: fields",
        "<td>settings.rate_bps</td><td>1000000</td>",
        "sockjs-node · results",
        "<th class=\"num\">payload_bytes</th>",
        "<th class=\"num\">round_trip.p99_us</th>",
        "<th class=\"num\">bytes_on_wire</th>",
        "<td class=\"num\">65536</td>",
    ] {
        assert!(r.html.contains(text), "{text}");
    }
    assert!(
        !r.html.contains("server_rss_bytes"),
        "resource samples are left out"
    );
}

#[test]
fn bad_files_are_named() {
    let dir = temp_dir("bad");
    let missing = dir.path().join("missing.json");
    let e = report::generate(&[fixture("switchboard-chat.json"), missing.clone()], "x")
        .expect_err("missing file");
    assert!(e.is_input());
    assert_eq!(e.path(), Some(missing.as_path()));
    assert!(e.to_string().contains("missing.json"), "{e}");

    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "{\"runs\": [").expect("write");
    let e = report::generate(&[malformed], "x").expect_err("malformed");
    assert!(
        e.to_string().starts_with(&format!(
            "result file {} is not valid JSON",
            dir.path().join("malformed.json").display()
        )),
        "{e}"
    );

    for (name, text, why) in [
        (
            "no-runs.json",
            "{\"format\":\"switchboard-bench/1\"}",
            "it has no `runs` array",
        ),
        ("array.json", "[1,2]", "the top level is not a JSON object"),
        (
            "other-format.json",
            "{\"format\":\"k6/1\",\"runs\":[]}",
            "its format is \"k6/1\"",
        ),
        (
            "bad-run.json",
            "{\"runs\":[3]}",
            "run 1 is not a JSON object",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let e = report::generate(std::slice::from_ref(&path), "x").expect_err(name);
        assert!(
            e.to_string().contains(name) && e.to_string().contains(why),
            "{e}"
        );
    }
}

#[test]
fn older_and_newer_files_still_render() {
    let dir = temp_dir("tolerant");
    // Newer: a format bump, new fields everywhere. Older: figures missing.
    let newer = edit(
        &fixture("switchboard-pingpong.json"),
        &dir.path().join("newer.json"),
        |v| {
            v["format"] = "switchboard-bench/2".into();
            v["versions"]["tokio"] = "1.48".into();
            v["runs"][0]["new_field"] = serde_json::json!({"a": [1, 2]});
            v["runs"][0]["results"][0]["jitter_us"] = 12.into();
        },
    );
    let older = edit(
        &fixture("switchboard-chat.json"),
        &dir.path().join("older.json"),
        |v| {
            let run = v["runs"][0].as_object_mut().expect("run");
            run.remove("bench_cpu_bound");
            run.remove("target_name");
            for r in run["results"].as_array_mut().expect("results") {
                r.as_object_mut().expect("result").remove("resources");
            }
        },
    );
    // A run whose figures have the wrong type is shown as tables, with a warning.
    let broken = edit(
        &fixture("switchboard-countdown.json"),
        &dir.path().join("broken.json"),
        |v| {
            v["runs"][0]["results"] = "not a list".into();
        },
    );
    let r = report::generate(&[newer, older, broken], "x").expect("renders");
    assert!(r.charts.iter().any(|c| c == "pingpong-mean"));
    assert!(r.charts.iter().any(|c| c == "chat-1r-latency"));
    assert!(
        !r.charts.iter().any(|c| c.ends_with("-rss") || c == "chat-bubble"),
        "no RSS figures, no RSS chart and no bubbles: {:?}",
        r.charts
    );
    assert!(r.html.contains("No bubble chart: no one-room run has latency, server CPU and RSS"));
    assert!(r.html.contains("No server RSS, peak (MiB) figures"));
    assert!(
        r.servers.contains(&"older".to_string()),
        "a run without target name is labelled by its file"
    );
    assert!(r.html.contains("tokio 1.48"));
    assert!(r.html.contains("this countdown run could not be read"));
    assert!(r.html.contains("<td>results</td><td>not a list</td>"));
}

#[test]
fn same_target_in_two_files_keeps_both_apart() {
    let dir = temp_dir("twice");
    let again = edit(
        &fixture("switchboard-pingpong.json"),
        &dir.path().join("again.json"),
        |_| {},
    );
    let r = report::generate(&[fixture("switchboard-pingpong.json"), again], "x").expect("renders");
    assert_eq!(
        r.servers,
        [
            "switchboard (switchboard-pingpong.json)",
            "switchboard (again.json)"
        ]
    );
}

#[tokio::test]
async fn run_writes_the_page() {
    let dir = temp_dir("run");
    let out = dir.path().join("report.html");
    let args = report::Args {
        files: fixtures(),
        out: out.clone(),
        title: "Switchboard bench report".to_string(),
    };
    report::run(args).await.expect("run");
    let html = std::fs::read_to_string(&out).expect("written");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));

    let args = report::Args {
        files: fixtures(),
        out: dir.path().join("no/such/dir/r.html"),
        title: String::new(),
    };
    let e = report::run(args).await.expect_err("unwritable");
    assert!(e.to_string().contains("no/such/dir/r.html"), "{e}");
}

#[test]
fn link_runs_get_their_charts_and_tables() {
    // Written by the real `switchboard bench link --transport all` with its defaults.
    let file = fixture("real/link.json");
    assert_follow_the_schema(std::slice::from_ref(&file));
    let r = report::generate(&[file], "Link").expect("renders");
    assert_eq!(r.sections, ["link"]);
    assert_eq!(
        r.charts,
        [
            "link-size",
            "link-first",
            "link-stable",
            "link-utilisation",
            "link-bytes"
        ]
    );
    for text in [
        "Constrained links",
        "theoretical minimum (payload bits both ways / rate + 2 × delay)",
        "(a) Round trip vs payload size",
        "(b) Round trip vs one-way delay",
        "(c) Throughput",
        "(d) Bytes on the wire",
        "switchboard · xhr-polling · 19.2 kbit/s",
        "40 B overhead per packet",
        // Two rows xhr-polling could not carry at 2400 bit/s are warnings.
        "(c) xhr-polling at 2.4 kbit/s, 500.00 ms delay, 1,024 B not measured",
    ] {
        assert!(r.html.contains(text), "{text}");
    }
    assert!(!r.html.contains("could not be read"));
}

#[test]
fn satellite_runs_are_placed_on_the_study_grid_beside_its_figures() {
    // Written by the real bench through `shootout/satellite.sh` (see fixtures/README.md).
    let files: Vec<PathBuf> = ["starttls-2400-0s", "zero-2400-0s", "zero-2400-500ms", "prosody-2400-0s", "irc-ngircd-2400-0s", "login-2400-500ms"]
        .iter()
        .map(|name| fixture(&format!("real/satellite-{name}.json")))
        .collect();
    assert_follow_the_schema(&files);
    let r = report::generate(&files, "Satellite").expect("renders");
    assert_eq!(r.sections, ["federated", "login"]);
    assert_eq!(r.charts, ["federated-first", "federated-stable", "federated-utilisation", "login-time"]);
    // One line per server through its two files, the study's beside it.
    for label in ["zero · 2.4 kbit/s", "starttls · 2.4 kbit/s", "study · optimised S2S · 2.4 kbit/s", "study · standard S2S, compressed, random bytes · 2.4 kbit/s", "switchboard · 2.4 kbit/s, 0.5 s"] {
        assert!(r.html.contains(&format!(r#""label":"{label}""#)), "{label}");
    }
    let grid = table_cells(&r.html, "Round trips beside the study&#39;s (2-byte payload)");
    let zero_half = grid.iter().find(|row| row[0] == "zero" && row[2] == "0.5").expect("zero at 0.5 s");
    assert_eq!(zero_half[5..], ["2.3 / 57", "1.8 / 4.9"]);
    // A peer is a line like any server; two linked IRC servers have no first
    // round trip (they link as they start) and none of the study's XMPP figures.
    let prosody = grid.iter().find(|row| row[0] == "prosody").expect("prosody");
    assert_eq!(prosody[5..], ["1.2 / 36.3", "0.7 / 2.9"]);
    let irc = grid.iter().find(|row| row[0] == "irc-ngircd").expect("irc");
    assert_eq!((irc[4].as_str(), &irc[5..]), ("–", &["–".to_string(), "–".to_string()][..]));
    // Its line is in the stable chart and not in the first one.
    let first_chart = &r.html[r.html.find(r#""id":"federated-first""#).expect("first chart")..r.html.find(r#""id":"federated-stable""#).expect("stable chart")];
    assert!(!first_chart.contains("irc-ngircd") && first_chart.contains("prosody"), "{first_chart}");
    let streams = table_cells(&r.html, "Throughput: messages one way back to back");
    let irc_10 = streams.iter().find(|row| row[0] == "irc-ngircd" && row[2] == "10").expect("irc at 10 B");
    assert_eq!(irc_10[7], "1.6");
    let logins = table_cells(&r.html, "Logins by style");
    let fast = row_of(&logins, 2, "fast");
    assert_eq!((fast[4].as_str(), fast[1].as_str()), ("3", "2.4 kbit/s, 0.5 s"));
    assert!(!r.html.contains("could not be read"));
}

#[test]
fn a_muc_sweep_is_drawn_as_a_broadcast_is() {
    let dir = temp_dir("muc");
    let muc = edit(
        &fixture("switchboard-broadcast.json"),
        &dir.path().join("muc.json"),
        |v| {
            for run in v["runs"].as_array_mut().expect("runs") {
                run["scenario"] = "muc".into();
            }
        },
    );
    let r = report::generate(&[muc], "x").expect("renders");
    assert!(r.charts.iter().any(|c| c == "muc-rt"), "{:?}", r.charts);
    assert!(r.html.contains("MUC: broadcast through an XMPP room"));
}

/// The cells of the table captioned `caption` (header row first), as text.
fn table_cells(html: &str, caption: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<caption>{caption}</caption>"))
        .unwrap_or_else(|| panic!("no table {caption}"));
    let table = &html[start..start + html[start..].find("</table>").expect("table ends")];
    table
        .split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<t")
                .skip(1)
                .filter_map(|cell| {
                    let text = cell.split_once('>')?.1;
                    Some(text[..text.find("</t")?].to_string())
                })
                .collect()
        })
        .collect()
}

/// The study's table in the page.
const STUDY_TOTALS: &str =
    "Total for 100 pings (ms); †: scaled to 100 pings; ⚠: the bench was CPU-bound";
const STUDY_LOGIN: &str =
    "Login before the pings (ms): connection, stream, SASL, stream restart and resource binding";

/// The XMPP pingpong files written by the real bench (20 pings each).
fn study_files() -> [PathBuf; 3] {
    ["local", "remote", "failed"].map(|f| fixture(&format!("real/xmpp-study-{f}.json")))
}

/// The row of `rows` whose cell `column` is `key`.
fn row_of<'a>(rows: &'a [Vec<String>], column: usize, key: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r.get(column).is_some_and(|c| c == key))
        .unwrap_or_else(|| panic!("no row {key} in {rows:?}"))
}

/// The section `id` of the page.
fn section_of<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    &html[start..start + html[start..].find("</section>").expect("section ends")]
}

#[test]
fn xmpp_study_sets_our_totals_beside_the_study() {
    assert_follow_the_schema(&study_files());
    let [local, remote, _] = study_files();
    let r = report::generate(&[local, remote], "Study").expect("renders");
    // XMPP ping-pong runs are the study's: no ping-pong section of their own.
    assert_eq!(r.sections, ["xmpp-study", "summary"]);
    assert_eq!(
        r.charts,
        ["xmpp-study-localhost", "xmpp-study-remote"]
    );
    let rows = table_cells(&r.html, STUDY_TOTALS);
    // Local and remote are told apart by the run's link, not by the file.
    assert_eq!(
        rows[0],
        [
            "study",
            "ours",
            "study: localhost",
            "study: remote, 162 ms round trip",
            "switchboard · localhost",
            "switchboard · link: 5 ms each way, 10 ms round trip"
        ]
    );
    // 20 pings: 18,102 µs × 100 ÷ 20 = 90.5 ms, and so on.
    #[rustfmt::skip]
    let expected: [[&str; 6]; 9] = [
        ["websocket", "xmpp-websocket", "98", "19,126", "90.5 †", "1,387.3 †"],
        ["xhr-streaming", "xmpp-xhr-streaming", "3,190", "24,270", "94.7 †", "1,487.8 †"],
        ["xhr-polling", "xmpp-xhr-polling", "3,181", "37,980", "120.8 †", "1,599.8 †"],
        ["jsonp-polling", "xmpp-jsonp-polling", "10,884", "42,173", "141.1 †", "1,457.0 †"],
        ["BOSH", "bosh", "21,471", "47,905", "113.4 †", "1,459.2 †"],
        ["–", "xmpp-tcp", "–", "–", "37.4 †", "–"],
        ["–", "xmpp-sockjs-websocket", "–", "–", "49.5 †", "1,419.5 †"],
        ["–", "xmpp-eventsource", "–", "–", "135.8 †", "1,483.3 †"],
        ["BOSH ÷ websocket", "bosh ÷ xmpp-websocket", "219×", "2.50×", "1.25×", "1.05×"],
    ];
    assert_eq!(rows[1..], expected);
    assert_eq!(
        row_of(&table_cells(&r.html, STUDY_LOGIN), 0, "bosh"),
        ["bosh", "6.85", "79.34"]
    );
    let section = section_of(&r.html, "xmpp-study");
    for text in [
        "compare shapes and ratios with ours, not milliseconds",
        "Goal: switchboard&#39;s BOSH total on localhost at most 3× its xmpp-websocket total (the study&#39;s: 219×). Here: 1.25×, the goal holds.",
        "scaled to it (total × 100 ÷ pings), in the tables and the charts: switchboard · localhost (20 pings), switchboard · link: 5 ms each way, 10 ms round trip (20 pings).",
        "xmpp-tcp has no figures through a link",
    ] {
        assert!(section.contains(text), "{text}");
    }
    assert!(!section.contains("warning"), "nothing failed");
    // The study's 98 to 21,471 ms need a log axis; the remote figures do not.
    assert!(r.html.contains(r#""id":"xmpp-study-localhost","kind":"bar","title":"XMPP study: 100 pings on localhost","subtitle":null,"x":{"title":"transport","log":false},"y":{"title":"total for 100 pings (ms)","log":true},"categories":["xmpp-websocket","xmpp-xhr-streaming","xmpp-xhr-polling","xmpp-jsonp-polling","bosh","xmpp-tcp","xmpp-sockjs-websocket","xmpp-eventsource"],"series":[{"label":"the study","color":"hsl(0 0% 55%)","point_style":"rect","points":[{"y":98.0},{"y":3190.0},{"y":3181.0},{"y":10884.0},{"y":21471.0},{"y":null},{"y":null},{"y":null}]}"#));
    assert!(r.html.contains(r#""y":{"title":"total for 100 pings (ms)","log":false},"categories":["xmpp-websocket","xmpp-xhr-streaming","xmpp-xhr-polling","xmpp-jsonp-polling","bosh","xmpp-sockjs-websocket","xmpp-eventsource"],"series":[{"label":"the study · 162 ms round trip""#));
    assert!(
        r.html
            .contains(r#""label":"switchboard · link: 5 ms each way, 10 ms round trip""#)
    );
    assert!(r.html.contains(r#""flag":"scaled to 100 pings from 20""#));
    let summary = section_of(&r.html, "summary");
    assert!(summary.contains("<tr><td>XMPP study: BOSH ÷ xmpp-websocket total for 100 pings on localhost (goal for switchboard: at most 3×; the study&#39;s: 219×)</td><td class=\"num\">1.25×: the goal holds</td><td class=\"num\">–</td></tr>"), "{summary}");
}

/// `run` with only the results (and asked transports) named in `keep`.
fn keep_transports(run: &mut serde_json::Value, keep: &[&str]) {
    let kept = |t: &serde_json::Value| keep.iter().any(|k| t == k);
    run["results"]
        .as_array_mut()
        .expect("results")
        .retain(|r| kept(&r["transport"]));
    run["transports"]
        .as_array_mut()
        .expect("transports")
        .retain(kept);
}

/// Sets the total of `transport`'s result.
fn set_total(run: &mut serde_json::Value, transport: &str, total_us: u64) {
    for r in run["results"].as_array_mut().expect("results") {
        if r["transport"] == transport {
            r["total_us"] = total_us.into();
        }
    }
}

#[test]
fn xmpp_study_servers_without_a_transport_show_a_dash() {
    let dir = temp_dir("study-peers");
    let [local, remote, _] = study_files();
    // The study's count: no scaling. The link: the study's 162 ms round trip.
    let hundred = |v: &mut serde_json::Value| {
        let run = &mut v["runs"][0];
        run["settings"]["count"] = 100.into();
        for r in run["results"].as_array_mut().expect("results") {
            r["count"] = 100.into();
        }
        set_total(run, "xmpp-websocket", 98_000);
        set_total(run, "bosh", 350_000);
    };
    let far = |v: &mut serde_json::Value| {
        v["runs"][0]["link"]["delay_us"] = 81_000.into();
    };
    let peer = |v: &mut serde_json::Value, keep: &[&str]| {
        v["runs"][0]["target_name"] = "ejabberd".into();
        keep_transports(&mut v["runs"][0], keep);
    };
    let files = [
        edit(&local, &dir.path().join("sb-local.json"), hundred),
        edit(&remote, &dir.path().join("sb-remote.json"), far),
        edit(&local, &dir.path().join("ej-local.json"), |v| {
            hundred(v);
            peer(v, &["xmpp-tcp", "xmpp-websocket", "bosh"]);
            set_total(&mut v["runs"][0], "bosh", 150_000);
        }),
        edit(&remote, &dir.path().join("ej-remote.json"), |v| {
            far(v);
            peer(v, &["xmpp-websocket", "bosh"]);
        }),
    ];
    let r = report::generate(&files, "Peers").expect("renders");
    let rows = table_cells(&r.html, STUDY_TOTALS);
    let link = "link: 81 ms each way, 162 ms round trip";
    assert_eq!(
        rows[0][4..],
        [
            "switchboard · localhost".to_string(),
            format!("switchboard · {link}"),
            "ejabberd · localhost".to_string(),
            format!("ejabberd · {link}"),
        ]
    );
    let row = |key: &str| row_of(&rows, 1, key)[2..].to_vec();
    assert_eq!(
        row("xmpp-websocket"),
        ["98", "19,126", "98.0", "1,387.3 †", "98.0", "1,387.3 †"]
    );
    assert_eq!(
        row("xmpp-xhr-streaming"),
        ["3,190", "24,270", "18.9", "1,487.8 †", "–", "–"]
    );
    assert_eq!(
        row("bosh"),
        [
            "21,471",
            "47,905",
            "350.0",
            "1,459.2 †",
            "150.0",
            "1,459.2 †"
        ]
    );
    assert_eq!(row("xmpp-tcp"), ["–", "–", "7.5", "–", "7.5", "–"]);
    assert_eq!(
        row("bosh ÷ xmpp-websocket"),
        ["219×", "2.50×", "3.57×", "1.05×", "1.53×", "1.05×"]
    );
    let section = section_of(&r.html, "xmpp-study");
    assert!(section.contains("Here: 3.57×, the goal is missed."));
    assert!(
        section.contains(&format!(
            "switchboard · {link} (20 pings), ejabberd · {link} (20 pings)."
        )),
        "only the remote runs are scaled"
    );
    let summary = section_of(&r.html, "summary");
    assert!(summary.contains("<td class=\"num\">3.57×: the goal is missed</td>"));
    assert!(
        summary.contains("<td class=\"num\">1.53×</td>"),
        "no verdict for a peer"
    );
}

#[test]
fn xmpp_study_shows_failed_and_partial_runs() {
    let dir = temp_dir("study-failed");
    let [local, _, failed] = study_files();
    // Stopped at the 8th ping over xhr-streaming: the transports after it never ran.
    let stopped = edit(&local, &dir.path().join("prosody.json"), |v| {
        let run = &mut v["runs"][0];
        run["target_name"] = "prosody".into();
        run["partial"] = true.into();
        run["error"] = "timed out waiting for a ping result".into();
        let results = run["results"].as_array_mut().expect("results");
        results.truncate(3);
        results[2]["count"] = 7.into();
    });
    let r = report::generate(&[stopped, failed], "Failed").expect("renders");
    let rows = table_cells(&r.html, STUDY_TOTALS);
    assert_eq!(rows[0][4..], ["prosody · localhost", "peer · localhost"]);
    let row = |key: &str| row_of(&rows, 1, key)[4..].to_vec();
    assert_eq!(row("xmpp-tcp"), ["37.4 †", "failed"]);
    assert_eq!(row("xmpp-websocket"), ["90.5 †", "36.5 †"]);
    assert_eq!(row("xmpp-xhr-streaming"), ["failed after 7 pings", "–"]);
    assert_eq!(row("xmpp-xhr-polling"), ["not run", "–"]);
    assert_eq!(row("bosh"), ["not run", "123.1 †"]);
    assert_eq!(row("bosh ÷ xmpp-websocket"), ["–", "3.37×"]);
    let section = section_of(&r.html, "xmpp-study");
    assert!(section.contains("<tr class=\"flagged\"><td>xhr-streaming</td>"));
    assert!(
        section
            .contains("⚠ prosody: partial run, stopped early: timed out waiting for a ping result")
    );
    assert!(section.contains(
        "⚠ peer: partial run, stopped early: cannot reach the target: xmpp://127.0.0.1:1"
    ));
    // It had logged in before its pings failed.
    assert_eq!(
        row_of(&table_cells(&r.html, STUDY_LOGIN), 0, "xmpp-xhr-streaming"),
        ["xmpp-xhr-streaming", "12.55", "–"]
    );
    assert!(!section.contains("Goal:"), "no switchboard, no goal");
}

#[test]
fn no_xmpp_study_without_its_transports() {
    let r = report::generate(&fixtures(), "Native").expect("renders");
    assert!(!r.sections.iter().any(|s| s == "xmpp-study"));
    assert!(!r.html.contains("XMPP study"));
    // XMPP over TCP alone is not one of the study's transports.
    let dir = temp_dir("study-tcp");
    let tcp = edit(
        &fixture("real/xmpp-study-local.json"),
        &dir.path().join("tcp.json"),
        |v| keep_transports(&mut v["runs"][0], &["xmpp-tcp"]),
    );
    let r = report::generate(&[tcp], "TCP").expect("renders");
    assert_eq!(r.sections, ["pingpong", "summary"]);
    assert!(!r.html.contains("XMPP study"));
}

#[test]
fn xmpp_study_keeps_two_runs_of_one_server_apart() {
    let dir = temp_dir("study-twice");
    let [local, ..] = study_files();
    let monday = edit(&local, &dir.path().join("monday.json"), |_| {});
    let tuesday = edit(&local, &dir.path().join("tuesday.json"), |v| {
        set_total(&mut v["runs"][0], "bosh", 40_000);
    });
    let r = report::generate(&[monday, tuesday], "Twice").expect("renders");
    let rows = table_cells(&r.html, STUDY_TOTALS);
    assert_eq!(
        rows[0][4..],
        [
            "switchboard (monday.json) · localhost",
            "switchboard (tuesday.json) · localhost"
        ]
    );
    assert_eq!(row_of(&rows, 1, "bosh")[4..], ["113.4 †", "200.0 †"]);
}

#[test]
fn the_cores_of_bench_and_server_are_named() {
    let dir = temp_dir("cores");
    let file = edit(
        &fixture("switchboard-chat.json"),
        &dir.path().join("pinned.json"),
        |v| {
            v["machine"]["bench_cpus"] = "1".into();
            v["runs"][0]["server_cpus"] = "0".into();
        },
    );
    let r = report::generate(&[file], "x").expect("renders");
    assert!(r.html.contains("2 cores (the bench on CPUs 1)"), "the machine line names the bench's CPUs");
    assert!(r.html.contains("against http://127.0.0.1:"), "the run line");
    assert!(r.html.contains(", the server on CPUs 0"), "the run line names the server's CPUs");
}
