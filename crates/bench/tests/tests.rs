//! Integration tests of `switchboard bench` (issue 4): every scenario with tiny
//! parameters, exact counts, and the failure paths made to happen on purpose.

mod support;

mod api;
mod broadcast;
mod chat;
mod countdown;
mod errors;
mod federated;
mod irc;
mod link;
mod login;
mod pingpong;
mod schema;
mod serve;
mod socketio;
mod sockjs;
mod targets;
mod xmpp;

use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: bench::Args,
}

/// Parses bench flags exactly as `switchboard bench …` would.
pub fn args(argv: &[&str]) -> bench::Args {
    Cli::parse_from(std::iter::once("bench").chain(argv.iter().copied())).args
}

/// Runs a plan through the library and returns the result file and any error.
pub async fn measure(argv: &[&str]) -> (bench::ResultFile, Option<bench::Error>) {
    let plan = bench::Plan::from_args(args(argv)).expect("valid flags");
    let command = argv.iter().map(|s| s.to_string()).collect();
    bench::measure(&plan, command, CancellationToken::new()).await
}

/// The result file as JSON, for assertions on exactly what `--out` would write.
pub fn json(file: &bench::ResultFile) -> serde_json::Value {
    serde_json::to_value(file).expect("serialisable")
}
