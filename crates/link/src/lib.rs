//! Placeholder: `switchboard link` is not built yet.

/// Flags of `switchboard link`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Errors of `switchboard link`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("switchboard link is not implemented yet")]
    NotImplemented,
}

/// Runs `switchboard link`.
pub async fn run(_args: Args) -> Result<(), Error> {
    Err(Error::NotImplemented)
}
