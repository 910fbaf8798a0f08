//! A fetch of a URL fetched before: the validators its last full response gave go back as
//! `If-None-Match` (the ETag byte-exact, as the server sent it) and `If-Modified-Since`, and
//! the fetch measures what the next one needs (the new validators and the payload's SHA-1,
//! taken in `lib.rs` while the body streams). Both are sent, as Heritrix does; RFC 9110 has
//! the server decide by If-None-Match when both come.

use std::time::Duration;

use hyper::header::{HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH};

/// A fetch of a URL whose history the crawl keeps: the validators to send (from its last
/// full response), and the measures to take (its validators, the payload's digest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revisit {
    /// Sent as `If-None-Match`: the last response's `ETag`, as the server sent it.
    pub etag: Option<String>,
    /// Sent as `If-Modified-Since`: the last response's `Last-Modified`, Unix seconds.
    pub last_modified: Option<u32>,
}

impl Revisit {
    /// Whether the request is conditional (a 304 may answer it).
    pub fn has_validators(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }

    /// `request` with the validators as headers.
    pub(crate) fn conditional(
        &self,
        mut request: hyper::http::request::Builder,
    ) -> hyper::http::request::Builder {
        // A stored tag that is not a header value (it was checked when kept) is not sent.
        if let Some(tag) = self
            .etag
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            request = request.header(IF_NONE_MATCH, tag);
        }
        if let Some(secs) = self.last_modified {
            let date = std::time::UNIX_EPOCH + Duration::from_secs(secs.into());
            if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(date)) {
                request = request.header(IF_MODIFIED_SINCE, v);
            }
        }
        request
    }
}

/// An HTTP date (`Last-Modified`) as Unix seconds; `None` when unreadable or outside what
/// 32 bits of seconds since 1970 hold.
pub(crate) fn unix_secs(value: &str) -> Option<u32> {
    let at = httpdate::parse_http_date(value.trim()).ok()?;
    let secs = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    u32::try_from(secs).ok()
}
