//! The error that stops the server.

/// An error that stops the server: bad configuration, a socket that
/// cannot be bound, or a store that cannot be opened.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    Config,
    Io,
    Store,
}

impl Error {
    pub(crate) fn config(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Config, message: message.into() }
    }

    pub(crate) fn io(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Io, message: message.into() }
    }

    pub(crate) fn store(e: store::Error) -> Error {
        Error { kind: ErrorKind::Store, message: e.to_string() }
    }

    /// Whether the configuration was invalid.
    pub fn is_config(&self) -> bool {
        self.kind == ErrorKind::Config
    }

    /// Whether a socket operation failed.
    pub fn is_io(&self) -> bool {
        self.kind == ErrorKind::Io
    }

    /// Whether the store could not be opened or failed.
    pub fn is_store(&self) -> bool {
        self.kind == ErrorKind::Store
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            ErrorKind::Config => write!(f, "configuration: {}", self.message),
            ErrorKind::Io | ErrorKind::Store => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<base::ConfigError> for Error {
    fn from(e: base::ConfigError) -> Error {
        Error::config(e.0)
    }
}
