//! What can go wrong in `switchboard report`: every error names the file it is about.
//!
//! The underlying I/O or JSON error is part of the message, not a `source`, so the
//! binary prints one line instead of repeating it under "Caused by".

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No result file was given.
    #[error("no result files given: switchboard report RESULT.json [RESULT.json …] -o report.html")]
    NoInput,
    /// A result file could not be read (missing, unreadable).
    #[error("cannot read result file {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A result file is not JSON.
    #[error("result file {} is not valid JSON: {error}", path.display())]
    Json {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// A result file is JSON but not a bench result (no `runs`, another format).
    #[error("{} is not a switchboard bench result file: {reason}", path.display())]
    Format { path: PathBuf, reason: String },
    /// The report could not be written.
    #[error("cannot write report {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl Error {
    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::NoInput => None,
            Error::Read { path, .. }
            | Error::Json { path, .. }
            | Error::Format { path, .. }
            | Error::Write { path, .. } => Some(path),
        }
    }

    /// True when an input file was missing, unreadable or not a result file.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            Error::Read { .. } | Error::Json { .. } | Error::Format { .. }
        )
    }
}
