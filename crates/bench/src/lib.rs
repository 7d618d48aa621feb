//! Placeholder: `switchboard bench` is not built yet.

/// Flags of `switchboard bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Errors of `switchboard bench`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("switchboard bench is not implemented yet")]
    NotImplemented,
}

/// Runs `switchboard bench`.
pub async fn run(_args: Args) -> Result<(), Error> {
    Err(Error::NotImplemented)
}
