//! Placeholder: `switchboard report` is not built yet.

/// Flags of `switchboard report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Errors of `switchboard report`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("switchboard report is not implemented yet")]
    NotImplemented,
}

/// Runs `switchboard report`.
pub async fn run(_args: Args) -> Result<(), Error> {
    Err(Error::NotImplemented)
}
