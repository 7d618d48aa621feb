//! The bench over an emulated link (issue 5): `--link` on any scenario, and `bench link`
//! producing its four tables against the real `switchboard serve` with fast, short
//! links so it finishes in seconds. Times are checked against lower bounds the link
//! imposes, with generous upper bounds.

use clap::Parser;
use serde_json::Value;

use crate::support::{Behaviour, Serve, TestServer};
use crate::{Cli, json, measure};

#[tokio::test]
async fn link_flag_adds_the_links_delay_to_every_round_trip() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = [
        "pingpong", "--quiet", "--target", &server.url("echo"), "--count", "5", "--link", "rate=1mbit,delay=30ms",
        "--transport", "websocket,xhr-polling",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    assert_eq!(run["link"]["spec"], "rate=1mbit,delay=30ms");
    assert_eq!(run["link"]["rate_bps"], 1_000_000);
    assert_eq!(run["link"]["delay_us"], 30_000);
    assert_eq!(run["link"]["overhead_bytes"], 40);
    // The target is still named as given, and its pid still found from its port.
    assert_eq!(run["target"], server.url("echo"));
    assert_eq!(run["server_pid"], std::process::id());
    for r in run["results"].as_array().expect("results") {
        assert_eq!(r["count"], 5, "{r:#}");
        let min = r["round_trip"]["min_us"].as_u64().expect("min");
        let p50 = r["round_trip"]["p50_us"].as_u64().expect("p50");
        assert!(min >= 60_000, "{}: round trip {min}µs under the link's 2 × 30 ms", r["transport"]);
        assert!(p50 < 60_000 + 500_000, "{}: p50 {p50}µs far above 2 × 30 ms", r["transport"]);
        // Connecting crosses the link too: at least the TCP handshake's round trip.
        assert!(r["connect_us"].as_u64().expect("connect") >= 60_000, "{r:#}");
    }
}

#[tokio::test]
async fn runs_without_link_record_none() {
    let server = TestServer::start(Behaviour::default()).await;
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &server.url("echo"), "--count", "2"]).await;
    assert!(err.is_none(), "{err:?}");
    assert!(json(&file)["runs"][0].get("link").is_none());
}

#[test]
fn a_bad_link_is_a_clear_error_naming_the_flag() {
    for (value, says) in [
        ("rate=fast", "not a rate"),
        ("delay=5", "not a duration"),
        ("colour=red", "unknown link setting 'colour'"),
        ("loss=100%", "below 100%"),
    ] {
        let err = Cli::try_parse_from(["bench", "pingpong", "--link", value]).err().expect("must be refused");
        let text = err.to_string();
        assert!(text.contains("--link"), "{value}: {text}");
        assert!(text.contains(says), "{value}: {text}");
    }
    // bench link builds its own rate and delay.
    let argv = ["bench", "link", "--link", "rate=1mbit"];
    let plan = bench::Plan::from_args(Cli::parse_from(argv).args);
    let err = plan.expect_err("rate belongs to --rate");
    assert!(err.is_usage() && err.to_string().contains("--rates"), "{err}");
    let plan = bench::Plan::from_args(Cli::parse_from(["bench", "link", "--sizes", "0"]).args);
    assert!(plan.expect_err("empty message").is_usage());
}

fn u(row: &Value, key: &str) -> u64 {
    row[key].as_u64().unwrap_or_else(|| panic!("{key} in {row:#}"))
}

fn f(row: &Value, key: &str) -> f64 {
    row[key].as_f64().unwrap_or_else(|| panic!("{key} in {row:#}"))
}

#[tokio::test]
async fn bench_link_produces_all_four_tables_against_serve() {
    let serve = Serve::start().await;
    let dir = std::env::temp_dir().join(format!("bench-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let out = dir.join("link.json");
    let target = serve.url("echo");
    let argv = [
        "link", "--quiet", "--target", &target, "--transport", "all", "--rate", "1mbit", "--delay", "20ms",
        "--sizes", "2,300", "--rates", "1mbit,4mbit", "--delays", "0ms,20ms", "--payload", "50", "--round-trips",
        "2", "--stream-sizes", "100,2000", "--stream-time", "300ms", "--link", "overhead=52", "--out",
        out.to_str().expect("utf-8"),
    ];
    let started = std::time::Instant::now();
    bench::run(crate::args(&argv)).await.expect("bench link runs");
    assert!(started.elapsed().as_secs() < 120, "tiny settings took {:?}", started.elapsed());
    let v = crate::schema::assert_valid(&out);
    let _ = std::fs::remove_dir_all(&dir);
    let run = &v["runs"][0];
    assert_eq!(run["scenario"], "link");
    assert_eq!(run["partial"], false, "{run:#}");
    assert_eq!(run["transports"], serde_json::json!(["websocket", "xhr-streaming", "xhr-polling"]));
    assert_eq!(run["settings"]["link"]["overhead_bytes"], 52);
    assert_eq!(run["settings"]["link"]["shared"], true);

    // (a) Round trip vs size: never under the minimum; WebSocket's exact bytes.
    let size = run["round_trip_vs_size"].as_array().expect("size table");
    assert_eq!(size.len(), 3 * 2);
    for r in size {
        let payload = u(r, "payload_bytes") as f64;
        assert!(u(r, "round_trip_min_us") >= u(r, "min_payload_us"), "{r:#}");
        assert!(u(r, "min_payload_us") >= 40_000, "{r:#}");
        assert!(f(r, "round_trip_mean_us") < 40_000.0 + 2_000_000.0, "{r:#}");
        assert!(f(r, "wire_up_bytes") > payload && f(r, "wire_down_bytes") > payload, "{r:#}");
        if r["transport"] == "websocket" {
            assert!(u(r, "round_trip_min_us") >= u(r, "min_wire_us"), "{r:#}");
            // One masked frame up (2 + 4 header bytes, 4 more for 126+), one frame down, 52 B each.
            let (up, down) = if payload < 126.0 { (6.0, 2.0) } else { (8.0, 4.0) };
            assert_eq!(f(r, "wire_up_bytes"), payload + up + 52.0, "{r:#}");
            assert_eq!(f(r, "wire_down_bytes"), payload + down + 52.0, "{r:#}");
        }
    }

    // (b) Round trip vs delay: the first from cold costs more than a stable one.
    let delay = run["round_trip_vs_delay"].as_array().expect("delay table");
    assert_eq!(delay.len(), 3 * 2 * 2);
    for r in delay {
        let d = u(r, "delay_us");
        assert!(u(r, "first_round_trip_us") >= u(r, "connect_us"), "{r:#}");
        assert!(u(r, "first_round_trip_us") >= u(r, "stable_round_trip_min_us"), "{r:#}");
        assert!(u(r, "stable_round_trip_min_us") >= u(r, "min_payload_us"), "{r:#}");
        // TCP handshake, then the request and its answer: two round trips before open.
        assert!(u(r, "connect_us") >= 4 * d, "{r:#}");
        assert_eq!(u(r, "stable_round_trips"), 2);
    }

    // (c) Throughput: some of the line, never more than all of it.
    let throughput = run["throughput"].as_array().expect("throughput table");
    assert_eq!(throughput.len(), 3 * 2);
    for r in throughput {
        let pct = f(r, "utilisation_pct");
        assert!(pct > 0.0 && pct <= 100.0, "{r:#}");
        assert!(u(r, "messages") >= 2, "{r:#}");
        assert!(f(r, "wire_up_bytes") > u(r, "payload_bytes") as f64, "{r:#}");
    }
    let ws_big = throughput.iter().find(|r| r["transport"] == "websocket" && r["payload_bytes"] == 2000);
    // 2000 B plus 8 B of framing and 52 B per packet: well under all of the line is payload.
    let pct = f(ws_big.expect("websocket 2000 B row"), "utilisation_pct");
    assert!(pct > 50.0 && pct < 99.0, "websocket streaming 2000 B used {pct}% of the line");

    // (d) Bytes on the wire: set-up and messages cost more than their payload.
    let bytes = run["wire_bytes"].as_array().expect("bytes table");
    assert_eq!(bytes.len(), 3);
    for r in bytes {
        assert!(u(r, "setup_wire_up_bytes") > 52 && u(r, "setup_wire_down_bytes") > 52, "{r:#}");
        assert!(f(r, "message_wire_up_bytes") > 50.0 && f(r, "message_wire_down_bytes") > 50.0, "{r:#}");
        assert!(f(r, "message_overhead_bytes") > 0.0, "{r:#}");
    }
    let ws = bytes.iter().find(|r| r["transport"] == "websocket").expect("websocket row");
    assert_eq!(f(ws, "message_wire_up_bytes"), 50.0 + 6.0 + 52.0, "{ws:#}");
    assert_eq!(f(ws, "message_wire_down_bytes"), 50.0 + 2.0 + 52.0, "{ws:#}");
    // SYN, the upgrade request: at least two packets up; SYN-ACK and the 101 down.
    assert!(u(ws, "setup_packets_up") >= 2 && u(ws, "setup_packets_down") >= 2, "{ws:#}");
    let polling = bytes.iter().find(|r| r["transport"] == "xhr-polling").expect("polling row");
    assert!(f(polling, "message_overhead_bytes") > f(ws, "message_overhead_bytes") * 3.0, "{polling:#}");
    assert_eq!(run["failures"], serde_json::json!([]));
}

#[tokio::test]
async fn a_row_that_fails_is_recorded_and_the_table_goes_on() {
    // switchboard serve closes a connection whose message is over 64 KiB (1009).
    let serve = Serve::start().await;
    let target = serve.url("echo");
    let argv = [
        "link", "--quiet", "--target", &target, "--tables", "size", "--rate", "10mbit", "--delay", "5ms", "--sizes",
        "70000,2", "--round-trips", "1",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    assert_eq!(run["partial"], false);
    let failures = run["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(failures[0]["table"], "size");
    assert_eq!(failures[0]["payload_bytes"], 70_000);
    assert!(failures[0]["error"].as_str().expect("error").contains("closed"), "{failures:#?}");
    // The next size is measured on a fresh connection.
    let rows = run["round_trip_vs_size"].as_array().expect("rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["payload_bytes"], 2);
}

#[tokio::test]
async fn the_bytes_table_shows_what_permessage_deflate_saves() {
    let serve = Serve::start().await;
    let target = serve.url("echo");
    let argv = [
        "link", "--quiet", "--target", &target, "--transport", "websocket,websocket-deflate", "--tables", "bytes",
        "--rate", "10mbit", "--delay", "5ms", "--payload", "1000", "--round-trips", "3", "--link", "overhead=52",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    assert_eq!(run["failures"], serde_json::json!([]), "{run:#}");
    let rows = run["wire_bytes"].as_array().expect("bytes table");
    let row = |t: &str| rows.iter().find(|r| r["transport"] == t).unwrap_or_else(|| panic!("{t} row in {rows:#?}")).clone();
    let (plain, deflated) = (row("websocket"), row("websocket-deflate"));
    // Uncompressed: the payload, a frame header (masked up: 2 + 2 + 4) and one packet's 52 B.
    assert_eq!(f(&plain, "message_wire_up_bytes"), 1000.0 + 8.0 + 52.0, "{plain:#}");
    assert_eq!(f(&plain, "message_wire_down_bytes"), 1000.0 + 4.0 + 52.0, "{plain:#}");
    // Compressed both ways, and every echo came back as sent (the scenario checks each).
    for key in ["message_wire_up_bytes", "message_wire_down_bytes"] {
        let (p, d) = (f(&plain, key), f(&deflated, key));
        assert!(d > 52.0 && d < p * 0.8, "{key}: {d} deflated against {p}\n{deflated:#}");
    }
    // The offer and its answer make the upgrade longer.
    assert!(u(&deflated, "setup_wire_up_bytes") > u(&plain, "setup_wire_up_bytes"), "{deflated:#}");
}

#[tokio::test]
async fn a_server_that_declines_permessage_deflate_is_a_clear_error() {
    let mut config = server::Config::default();
    config.server.permessage_deflate = false;
    let serve = Serve::with(config).await;
    let target = serve.url("echo");
    let (_, err) = measure(&["pingpong", "--quiet", "--target", &target, "--transport", "websocket-deflate", "--count", "3"]).await;
    let err = err.expect("refused").to_string();
    assert!(err.contains("declined permessage-deflate"), "{err}");
}
