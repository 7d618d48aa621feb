//! Bad flags give a clear error naming the flag and a non-zero exit; good
//! ones become the link they describe. Through `Args` as the binary parses it.

use std::{num::NonZeroU32, time::Duration};

use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: link::Args,
}

fn parse(flags: &[&str]) -> Result<link::Args, clap::Error> {
    let argv = ["link", "--upstream", "127.0.0.1:8080"].iter().chain(flags);
    Cli::try_parse_from(argv).map(|cli| cli.args)
}

/// The error for `flags`, checked to name `flag` and the bad `value`.
fn rejects(flags: &[&str], flag: &str, value: &str, reason: &str) {
    let err = parse(flags).expect_err("bad flag is rejected");
    let message = err.to_string();
    assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{message}");
    assert!(
        message.contains(&format!("invalid value '{value}' for '{flag}")),
        "does not name {flag}: {message}"
    );
    assert!(message.contains(reason), "does not say why: {message}");
    assert_ne!(err.exit_code(), 0);
}

#[test]
fn unparsable_values_name_the_flag() {
    rejects(&["--rate", "24oo"], "--rate <RATE>", "24oo", "e.g. 2400bit, 19.2kbit or 1mbit");
    rejects(&["--rate", "2400"], "--rate <RATE>", "2400", "units: bit, kbit, mbit, gbit");
    rejects(&["--rate", "0bit"], "--rate <RATE>", "0bit", "above 0");
    rejects(&["--delay", "500"], "--delay <TIME>", "500", "e.g. 500ms, 0.5s or 1m 30s");
    rejects(&["--delay", "half"], "--delay <TIME>", "half", "units: us, ms, s, m, h");
    rejects(&["--delay", "1.0001ns"], "--delay <TIME>", "1.0001ns", "not a duration");
    rejects(&["--jitter", "-3ms"], "--jitter <TIME>", "-3ms", "not a duration");
    rejects(&["--loss", "0.5"], "--loss <PERCENT>", "0.5", "e.g. 0.5%");
    rejects(&["--loss", "100%"], "--loss <PERCENT>", "100%", "below 100%");
    rejects(&["--overhead", "-1"], "--overhead <BYTES>", "-1", "not a whole number");
    rejects(&["--mss", "0"], "--mss <BYTES>", "0", "at least 1");
    rejects(&["--buffer", "0"], "--buffer <BYTES>", "0", "at least 1");
    rejects(&["--seed", "x"], "--seed <N>", "x", "not a whole number");
    rejects(&["--listen", "nowhere"], "--listen <ADDR>", "nowhere", "");
    let err = Cli::try_parse_from(["link", "--upstream", "localhost"]).expect_err("no port");
    assert!(err.to_string().contains("invalid value 'localhost' for '--upstream <HOST:PORT>'"), "{err}");
}

#[test]
fn the_upstream_is_required() {
    let err = Cli::try_parse_from(["link"]).expect_err("no upstream");
    assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    assert!(err.to_string().contains("--upstream"), "{err}");
    assert_ne!(err.exit_code(), 0);
}

#[test]
fn good_flags_describe_the_link() {
    let args = parse(&[
        "--rate", "2400bit", "--delay", "500ms", "--jitter", "20ms", "--loss", "0.5%",
        "--overhead", "48", "--mss", "536", "--shared", "--seed", "9",
    ])
    .expect("valid flags");
    let config = args.config();
    assert_eq!(config.link.rate.map(|r| r.bps()), Some(2400));
    assert_eq!(config.link.delay, Duration::from_millis(500));
    assert_eq!(config.link.jitter, Duration::from_millis(20));
    assert_eq!(config.link.loss.per_million(), 5_000);
    assert_eq!(config.link.overhead, 48);
    assert_eq!(config.link.mss, NonZeroU32::new(536).expect("non-zero"));
    assert_eq!(config.link.seed, 9);
    assert!(config.shared);
    assert_eq!(
        config.to_string(),
        "2.4 kbit/s, 500ms one-way delay ± 20ms jitter, 0.5% loss (as retransmission stalls), \
         48 B overhead per packet of up to 536 B, seed 9; one link shared by all connections"
    );
}

#[test]
fn defaults_are_an_unshaped_link_per_connection() {
    let args = parse(&[]).expect("valid flags");
    assert_eq!(args.listen.to_string(), "127.0.0.1:9000");
    let config = args.config();
    assert_eq!(config, link::ProxyConfig::default());
    assert!(!config.link.is_shaping());
}

#[tokio::test]
async fn run_reports_what_it_cannot_do() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("address").port();
    let listen = format!("127.0.0.1:{port}");
    let args = Cli::try_parse_from(["link", "--listen", &listen, "--upstream", "127.0.0.1:1"])
        .expect("valid flags")
        .args;
    let err = link::run(args).await.expect_err("port in use");
    assert!(err.to_string().starts_with(&format!("cannot listen on --listen {listen}")), "{err}");

    let args = Cli::try_parse_from(["link", "--upstream", "no-such-host.invalid:80"])
        .expect("valid flags")
        .args;
    let err = link::run(args).await.expect_err("unresolvable");
    assert!(err.to_string().starts_with("cannot resolve --upstream no-such-host.invalid:80"), "{err}");
}
