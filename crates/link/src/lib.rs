//! `switchboard link`: a constrained-link emulator. A TCP proxy that, in each
//! direction, serialises bytes at a bit rate with a per-packet overhead,
//! delays them by a one-way delay and jitter, and turns loss into the
//! retransmission stalls TCP would suffer — never reordering or dropping
//! bytes — so a satellite or radio link can be studied on one machine.
//!
//! - [`spec`]: what a link is and how it is written (`2400bit`, `500ms`, `0.5%`).
//! - [`Lane`]: the pure model of one direction, on explicit time.
//! - [`proxy`]: the TCP proxy that drives lanes with the real clock.
//! - [`LinkStats`]: bytes and packets on the wire, per direction.

pub mod lane;
pub mod proxy;
pub mod spec;
pub mod stats;

use std::{
    io,
    net::SocketAddr,
    num::NonZeroU32,
    sync::Arc,
    time::Duration,
};

use tokio::net::TcpListener;

pub use lane::{Lane, Transmission};
pub use proxy::{Proxy, ProxyConfig, serve, spawn};
pub use spec::{LinkSpec, Loss, ParseError, Rate, SpecError, parse_duration};
pub use stats::{DirectionCounts, DirectionStats, LinkCounts, LinkStats};

/// Flags of `switchboard link`. Each states its default; a test keeps the
/// text and the value in step.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Address to accept clients on. Default: 127.0.0.1:9000.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9000", hide_default_value = true)]
    pub listen: SocketAddr,

    /// Server to forward to, as host:port (resolved once at start). Required.
    #[arg(long, value_name = "HOST:PORT", value_parser = spec::parse_address)]
    pub upstream: String,

    /// Line rate of each direction: 2400bit, 19.2kbit, 1mbit (bit, kbit,
    /// mbit, gbit per second). Default: unlimited.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Option<Rate>,

    /// One-way delay of each direction: 500ms, 0.5s, 1m 30s (us, ms, s, m, h).
    /// Default: 0ms.
    #[arg(long, value_name = "TIME", default_value = "0ms", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub delay: Duration,

    /// Each packet's delay varies uniformly within ± this; bytes are never
    /// reordered. Default: 0ms.
    #[arg(long, value_name = "TIME", default_value = "0ms", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub jitter: Duration,

    /// Chance a packet is lost, e.g. 0.5%; emulated as the retransmission
    /// stall TCP would suffer, never as missing bytes. Default: 0%.
    #[arg(long, value_name = "PERCENT", default_value = "0%", hide_default_value = true, allow_hyphen_values = true)]
    pub loss: Loss,

    /// Bytes each packet costs on the line beyond its payload (40: IPv4 +
    /// TCP headers; add 12 for TCP timestamps, 8 for PPP framing).
    /// Default: 40.
    #[arg(long, value_name = "BYTES", default_value = "40", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_u32)]
    pub overhead: u32,

    /// Largest payload of one packet (TCP's MSS); each read is cut into
    /// packets of at most this size. Default: 1460.
    #[arg(long, value_name = "BYTES", default_value = "1460", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_mss)]
    pub mss: NonZeroU32,

    /// All connections share one link (their packets queue on one line,
    /// first in first out) instead of one link each. Default: off.
    #[arg(long)]
    pub shared: bool,

    /// Seed of the jitter and loss draws, so runs repeat. Default: 0.
    #[arg(long, value_name = "N", default_value = "0", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_u64)]
    pub seed: u64,

    /// Most bytes held in the link per connection and direction; reading
    /// stops at the bound, holding the sender back. Default: 1048576.
    #[arg(long, value_name = "BYTES", default_value = "1048576", hide_default_value = true, allow_hyphen_values = true,
          value_parser = parse_buffer)]
    pub buffer: usize,
}

fn parse_u32(s: &str) -> Result<u32, ParseError> {
    spec::parse_count(s, 0)
}

fn parse_u64(s: &str) -> Result<u64, ParseError> {
    spec::parse_count(s, 0)
}

fn parse_buffer(s: &str) -> Result<usize, ParseError> {
    spec::parse_count(s, 1)
}

fn parse_mss(s: &str) -> Result<NonZeroU32, ParseError> {
    let mss: u32 = spec::parse_count(s, 1)?;
    NonZeroU32::new(mss).ok_or(ParseError::TooSmall(1))
}

impl Args {
    /// The proxy these flags describe.
    pub fn config(&self) -> ProxyConfig {
        ProxyConfig {
            link: LinkSpec {
                rate: self.rate,
                delay: self.delay,
                jitter: self.jitter,
                loss: self.loss,
                overhead: self.overhead,
                mss: self.mss,
                seed: self.seed,
            },
            shared: self.shared,
            buffer: self.buffer,
        }
    }
}

/// Errors of `switchboard link`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot resolve --upstream {upstream}: {source}")]
    Resolve { upstream: String, source: io::Error },
    #[error("--upstream {0} resolves to no address")]
    NoAddress(String),
    #[error("cannot listen on --listen {addr}: {source}")]
    Listen { addr: SocketAddr, source: io::Error },
}

/// Runs `switchboard link` until Ctrl-C.
pub async fn run(args: Args) -> Result<(), Error> {
    let upstream = resolve(&args.upstream).await?;
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|source| Error::Listen { addr: args.listen, source })?;
    proxy::fast_open(&listener);
    let listen = listener.local_addr().unwrap_or(args.listen);
    let config = args.config();
    println!(
        "switchboard link: listening on {listen}, forwarding to {} over {config}",
        args.upstream
    );
    let stats = Arc::new(LinkStats::default());
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            // Without the signal we serve until killed.
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    serve(listener, config, upstream, Arc::clone(&stats), ctrl_c).await;
    let counts = stats.snapshot();
    tracing::info!(
        connections = counts.connections,
        up_bytes = counts.up.payload_bytes,
        up_packets = counts.up.packets,
        up_wire_bytes = counts.up.wire_bytes,
        down_bytes = counts.down.payload_bytes,
        down_packets = counts.down.packets,
        down_wire_bytes = counts.down.wire_bytes,
        fast_opens = counts.fast_opens,
        "link stopped"
    );
    Ok(())
}

async fn resolve(upstream: &str) -> Result<SocketAddr, Error> {
    let mut addrs = tokio::net::lookup_host(upstream)
        .await
        .map_err(|source| Error::Resolve { upstream: upstream.to_owned(), source })?;
    addrs.next().ok_or_else(|| Error::NoAddress(upstream.to_owned()))
}

/// The flags as a Markdown table (flag, default, meaning), from the same
/// declarations clap uses, for docs/link.md.
pub fn flags_markdown() -> String {
    use clap::Args as _;
    let command = Args::augment_args(clap::Command::new("link"));
    let mut table = String::from("| flag | default | meaning |\n|---|---|---|\n");
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let value = Some(arg)
            .filter(|arg| arg.get_action().takes_values())
            .and_then(clap::Arg::get_value_names)
            .and_then(|names| names.first())
            .map(|name| format!(" <{name}>"))
            .unwrap_or_default();
        let help = help_of(arg);
        let (meaning, default) = help
            .rsplit_once(" Default: ")
            .map(|(meaning, default)| (meaning.to_owned(), default.to_owned()))
            .or_else(|| help.strip_suffix(" Required").map(|m| (m.to_owned(), "required".to_owned())))
            .unwrap_or((help.clone(), String::new()));
        table.push_str(&format!("| `--{long}{value}` | {default} | {meaning} |\n"));
    }
    table
}

/// An argument's help on one line, without the final full stop (which clap
/// may or may not have kept).
fn help_of(arg: &clap::Arg) -> String {
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    help.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    #[test]
    fn every_documented_default_is_the_real_one() {
        let command = Args::augment_args(clap::Command::new("link"));
        for arg in command.get_arguments() {
            let help = help_of(arg);
            assert!(
                help.contains(" Default: ") || help.ends_with(" Required"),
                "--{:?} does not document its default: {help}",
                arg.get_long()
            );
            for default in arg.get_default_values() {
                let default = default.to_string_lossy();
                assert!(
                    help.ends_with(&format!("Default: {default}")),
                    "--{:?} defaults to {default} but says: {help}",
                    arg.get_long()
                );
            }
        }
    }

    #[test]
    fn the_flags_table_lists_every_flag() {
        let table = flags_markdown();
        // `cargo test -p switchboard-link flags_table -- --nocapture` shows it.
        eprintln!("{table}");
        for flag in ["listen", "upstream", "rate", "delay", "jitter", "loss", "overhead", "mss", "shared", "seed", "buffer"] {
            assert!(table.contains(&format!("`--{flag}")), "{flag} missing:\n{table}");
        }
        assert!(table.contains("| `--rate <RATE>` | unlimited |"), "{table}");
        assert!(table.contains("| `--shared` | off |"), "{table}");
    }
}
