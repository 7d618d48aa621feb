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

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("switchboard-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn edit(src: &Path, dst: &Path, f: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).expect("read")).expect("json");
    f(&mut v);
    std::fs::write(dst, serde_json::to_string_pretty(&v).expect("serialize")).expect("write");
    dst.to_path_buf()
}

#[test]
fn fixtures_follow_the_bench_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("bench schema"))
            .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let files = fixtures();
    assert_eq!(files.len(), 8, "two servers × four scenarios");
    for file in files {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
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
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("bench schema"))
            .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    for file in real_files() {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
        assert!(
            validator.is_valid(&v),
            "{} matches the schema",
            file.display()
        );
    }
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
    assert_eq!(r.charts.len(), 9, "{:?}", r.charts);
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
        "chat-mean",
        "chat-p99",
        "chat-cpu",
        "chat-rss",
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
    assert!(summary.contains("pingpong: mean round trip, websocket (µs)"));
    assert!(summary.contains("countdown: time per step, http (µs)"));
}

#[test]
fn a_failed_server_appears_as_failed_in_the_summary() {
    // What the shootout writes for a peer that did not install or start (issue 6).
    let dir = temp_dir("failed");
    let failed = edit(
        &fixture("switchboard-broadcast.json"),
        &dir.join("tornado-failed.json"),
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
        &dir.join("tornado-chat-failed.json"),
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
        &dir.join("evil.json"),
        |v| {
            v["runs"][0]["target_name"] = evil.into();
            v["runs"][0]["results"][0]["transport"] = evil.into();
            v["command"][2] = evil.into();
            v["machine"]["cpu_model"] = evil.into();
        },
    );
    let unknown = edit(
        &fixture("switchboard-countdown.json"),
        &dir.join("evil-scenario.json"),
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
    let missing = dir.join("missing.json");
    let e = report::generate(&[fixture("switchboard-chat.json"), missing.clone()], "x")
        .expect_err("missing file");
    assert!(e.is_input());
    assert_eq!(e.path(), Some(missing.as_path()));
    assert!(e.to_string().contains("missing.json"), "{e}");

    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, "{\"runs\": [").expect("write");
    let e = report::generate(&[malformed], "x").expect_err("malformed");
    assert!(
        e.to_string().starts_with(&format!(
            "result file {} is not valid JSON",
            dir.join("malformed.json").display()
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
        let path = dir.join(name);
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
        &dir.join("newer.json"),
        |v| {
            v["format"] = "switchboard-bench/2".into();
            v["versions"]["tokio"] = "1.48".into();
            v["runs"][0]["new_field"] = serde_json::json!({"a": [1, 2]});
            v["runs"][0]["results"][0]["jitter_us"] = 12.into();
        },
    );
    let older = edit(
        &fixture("switchboard-chat.json"),
        &dir.join("older.json"),
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
        &dir.join("broken.json"),
        |v| {
            v["runs"][0]["results"] = "not a list".into();
        },
    );
    let r = report::generate(&[newer, older, broken], "x").expect("renders");
    assert!(r.charts.iter().any(|c| c == "pingpong-mean"));
    assert!(r.charts.iter().any(|c| c == "chat-mean"));
    assert!(
        !r.charts.iter().any(|c| c == "chat-rss"),
        "no RSS figures, no RSS chart"
    );
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
        &dir.join("again.json"),
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
    let out = dir.join("report.html");
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
        out: dir.join("no/such/dir/r.html"),
        title: String::new(),
    };
    let e = report::run(args).await.expect_err("unwritable");
    assert!(e.to_string().contains("no/such/dir/r.html"), "{e}");
}

#[test]
fn link_runs_get_their_charts_and_tables() {
    // Written by the real `switchboard bench link --transport all` with its defaults.
    let file = fixture("real/link.json");
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("bench schema"))
            .expect("schema is JSON");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
    assert!(
        jsonschema::validator_for(&schema)
            .expect("schema")
            .is_valid(&v)
    );
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
fn a_muc_sweep_is_drawn_as_a_broadcast_is() {
    let dir = temp_dir("muc");
    let muc = edit(
        &fixture("switchboard-broadcast.json"),
        &dir.join("muc.json"),
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
