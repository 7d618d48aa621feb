//! The one error type of `switchboard bench`. It is opaque (hyper style): callers ask
//! `is_*()` questions, and the message names the URL and what was expected, because a
//! person comparing servers must be able to tell "my server is down" from "the bench is
//! wrong" at a glance.

use std::fmt;

/// Why a bench run could not be carried out.
pub struct Error {
    kind: Kind,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Flags that cannot be turned into a plan.
    Usage,
    /// TCP connect failed: nothing listens at the target.
    Connect,
    /// The server answered, but the app (or transport) is not mounted there.
    NotFound,
    /// A reply that the scenario did not expect, or a broken protocol frame.
    UnexpectedReply,
    /// The server went quiet for longer than the configured timeout.
    Timeout,
    /// The connection closed while the scenario still needed it.
    Closed,
    /// The server turned the bench's client away: credentials it does not accept
    /// (SASL failure), or an XMPP stream error such as an unknown domain.
    Refused,
    /// Local I/O: the result file, /proc, the open-file limit.
    Io,
    /// Ctrl-C: the run stopped early; what was measured is still written.
    Cancelled,
}

impl Error {
    fn new(kind: Kind, detail: impl Into<String>) -> Error {
        Error { kind, detail: detail.into() }
    }
    pub(crate) fn usage(detail: impl Into<String>) -> Error {
        Error::new(Kind::Usage, detail)
    }
    pub(crate) fn connect(detail: impl Into<String>) -> Error {
        Error::new(Kind::Connect, detail)
    }
    pub(crate) fn not_found(detail: impl Into<String>) -> Error {
        Error::new(Kind::NotFound, detail)
    }
    pub(crate) fn unexpected(detail: impl Into<String>) -> Error {
        Error::new(Kind::UnexpectedReply, detail)
    }
    pub(crate) fn timeout(detail: impl Into<String>) -> Error {
        Error::new(Kind::Timeout, detail)
    }
    pub(crate) fn closed(detail: impl Into<String>) -> Error {
        Error::new(Kind::Closed, detail)
    }
    pub(crate) fn refused(detail: impl Into<String>) -> Error {
        Error::new(Kind::Refused, detail)
    }
    pub(crate) fn cancelled() -> Error {
        Error::new(Kind::Cancelled, "stopped by Ctrl-C")
    }
    pub(crate) fn io(detail: impl Into<String>) -> Error {
        Error::new(Kind::Io, detail)
    }

    /// The flags do not describe a runnable plan.
    pub fn is_usage(&self) -> bool {
        self.kind == Kind::Usage
    }
    /// Nothing accepted a TCP connection at the target.
    pub fn is_connect(&self) -> bool {
        self.kind == Kind::Connect
    }
    /// The target answered but has no such app or transport (e.g. HTTP 404).
    pub fn is_not_found(&self) -> bool {
        self.kind == Kind::NotFound
    }
    /// The target answered something the scenario does not expect.
    pub fn is_unexpected_reply(&self) -> bool {
        self.kind == Kind::UnexpectedReply
    }
    /// The target did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }
    /// The target closed a connection the scenario still needed.
    pub fn is_closed(&self) -> bool {
        self.kind == Kind::Closed
    }
    /// The target turned the client away (wrong password, unknown domain …).
    pub fn is_refused(&self) -> bool {
        self.kind == Kind::Refused
    }
    /// The run was stopped (Ctrl-C) before it finished.
    pub fn is_cancelled(&self) -> bool {
        self.kind == Kind::Cancelled
    }
    /// A local I/O failure (result file, /proc).
    pub fn is_io(&self) -> bool {
        self.kind == Kind::Io
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            Kind::Usage => "invalid flags",
            Kind::Connect => "cannot reach the target",
            Kind::NotFound => "app not found at the target",
            Kind::UnexpectedReply => "unexpected reply",
            Kind::Timeout => "timed out",
            Kind::Closed => "connection closed",
            Kind::Refused => "refused by the target",
            Kind::Io => "i/o error",
            Kind::Cancelled => "interrupted",
        };
        write!(f, "{what}: {}", self.detail)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error").field("kind", &self.kind).field("detail", &self.detail).finish()
    }
}

impl std::error::Error for Error {}
