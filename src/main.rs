//! The `switchboard` binary: parses flags and hands them to the crate that does the job.

use std::io::IsTerminal;

use clap::{Parser, Subcommand, ValueEnum};

// jemalloc's background thread returns freed pages to the system within its
// decay time (10 s), so RSS falls back after a flood; glibc's malloc keeps them.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "switchboard", version, about = "Real-time messaging server and the lab that measures it")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How log lines are written to standard error: `text` (coloured only on a terminal) or `json`, one object a line, for log collectors. `RUST_LOG` picks what is logged [default: text]
    #[arg(long, global = true, env = "SWITCHBOARD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, hide_default_value = true)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

// Parsed once at start-up; the variants' size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the real-time messaging server.
    Serve(server::Args),
    /// Drive a real-time server with a workload and measure it.
    Bench(bench::Args),
    /// Run a constrained-link emulator (rate, delay, jitter, loss) as a TCP proxy.
    Link(link::Args),
    /// Turn bench result files into one HTML report with charts.
    Report(report::Args),
    /// Add, remove, list the accounts in the server's store, or change a password.
    Account(server::AccountArgs),
    /// Copy everything the server's store keeps into a new database (from SQLite to PostgreSQL).
    Store(server::StoreArgs),
    /// Print an XMPP account's entry for the configuration file, from a password read on standard input.
    XmppAccount {
        /// The account's name (its JID's localpart).
        name: String,
    },
}

/// Runs the command; an error is printed as one line, its causes after it
/// (`Error: …: …`), with no backtrace whatever `RUST_BACKTRACE` says: it is
/// a message for the person who ran the command, not a crash.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Log lines that wait at most for standard error.
const LOG_LINES: usize = 10_000;

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Logs reach standard error through a thread of their own: written
    // where they were made, a pipe nobody read (or a stalled terminal)
    // stopped the server at the first line it had no room for. While that
    // thread cannot write, up to LOG_LINES wait and later ones are dropped.
    // `_written` waits (about a second at most) for what is left as `run`
    // ends.
    let (writer, _written) = tracing_appender::non_blocking::NonBlockingBuilder::default().buffered_lines_limit(LOG_LINES).lossy(true).finish(std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    match cli.log_format {
        // Colour codes only where a person reads them, not in a file or a pipe.
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => logs.json().init(),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => server::run_cli(args).await?,
            Command::Bench(args) => bench::run(args).await?,
            Command::Link(args) => link::run(args).await?,
            Command::Report(args) => report::run(args).await?,
            Command::Account(args) => print!("{}", server::run_account(args).await?),
            Command::Store(args) => print!("{}", server::run_store(args).await?),
            Command::XmppAccount { name } => print!("{}", server::xmpp_account_cli(&name)?),
        }
        Ok(())
    })
}
