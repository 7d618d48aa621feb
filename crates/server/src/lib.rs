//! Placeholder while the server is written.

/// Flags of `switchboard serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not implemented yet")]
    NotImplemented,
}

/// Runs `switchboard serve`.
pub async fn run_cli(_args: Args) -> Result<(), Error> {
    Err(Error::NotImplemented)
}
