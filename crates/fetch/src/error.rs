//! How a fetch fails, typed: the text a record shows and whether a later attempt may succeed,
//! and the one rule for statuses that ask to come back later.

/// A status that asks to come back later: 429, or any 5xx. The one rule, for built-in fetches
/// and external fetchers' reports alike.
pub fn transient_status(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// Why a fetch failed, or what went wrong with its body: the text a record shows (each
/// variant's message as it was measured and written) and whether a later attempt may succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL cannot be fetched as written (not a URL, a scheme other than http(s), a
    /// request the client cannot send). Final.
    #[error("{0}")]
    Unfetchable(String),
    /// The SSRF guard refused the address. Final.
    #[error("{0}")]
    Refused(String),
    /// No response headers within `fetch.first_byte_timeout_ms`, or no whole response within
    /// `fetch.total_timeout_ms`. Transient.
    #[error("{0}")]
    Timeout(String),
    /// The connection failed before a response (refused, reset, TLS); `retryable` as the
    /// client judges the cause.
    #[error("{message}")]
    Connection {
        /// What failed, as the client describes it.
        message: String,
        /// Whether another attempt may get through.
        retryable: bool,
    },
    /// The connection failed mid-body (a reset, a close short of the length). Transient.
    #[error("{0}")]
    Disconnected(String),
    /// The body was longer than `fetch.max_body_bytes` and was cut there. Final.
    #[error("{0}")]
    TooLong(String),
    /// The body's content coding could not be decoded. Final.
    #[error("{0}")]
    Decoding(String),
    /// The body could not be archived (`output.warc`). Final for this fetch.
    #[error("{0}")]
    Archive(String),
}

impl FetchError {
    /// Whether fetching again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Timeout(_) | FetchError::Disconnected(_) => true,
            FetchError::Connection { retryable, .. } => *retryable,
            _ => false,
        }
    }
}
