//! Fetching one URL: one shared pooled client ([`client`]: rustls, HTTP/2 when offered, a
//! capped read buffer), no automatic redirects (each hop goes back through the frontier),
//! three timeouts, and a body cap
//! applied while streaming — after content decoding, so a gzip bomb is cut at the cap like
//! any other long body. Content decoding is ours ([`decode`]), not the client's, so that
//! with `output.warc` the body as received can be archived ([`capture`]) while its decoded
//! form is parsed.
//!
//! A URL fetched before is fetched as a [`Revisit`]: the validators its last response gave
//! go back as `If-None-Match` and `If-Modified-Since`, and the payload as received (still
//! content-encoded, chunking removed — the bytes `WARC-Payload-Digest` covers) is hashed, so
//! that an unchanged page is known by a 304 or by its digest. A one-shot crawl asks for
//! neither and pays for neither.

pub mod addresses;
mod capture;
mod client;
pub mod decode;
mod error;
pub mod guard;
mod revisit;

pub use capture::{Capture, RevisitRecord, Spool, SPOOL_MEMORY};
pub use client::ClientError;
pub use error::{transient_status, FetchError};
pub use revisit::Revisit;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Body as _;
use hyper::header::{
    HeaderValue, ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONNECTION, CONTENT_ENCODING,
    CONTENT_TYPE, ETAG, LAST_MODIFIED, LOCATION, RETRY_AFTER, USER_AGENT,
};
use hyper_util::client::legacy::connect::HttpInfo;
use sha1::{Digest as _, Sha1};

use crate::guard::Guard;
use config::FetchSection;

/// Which bodies a fetch keeps in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Only a 200 response of a parsed (HTML) content type; others are read and counted.
    Html,
    /// Any 2xx body (robots.txt).
    Always,
}

/// Bytes of a kept body gathered before they are handed to [`Pieces`].
pub const PIECE_BYTES: usize = 128 * 1024;

/// Takes a kept body in pieces as it arrives, so that a long body is never held whole: the
/// fetch hands over what it has each time it holds `PIECE_BYTES`, and what is left at the
/// end stays in [`Fetched::body`].
pub trait Pieces: Send {
    /// Consumes `body` (the bytes read since the last piece), leaving it empty; may reuse its
    /// allocation.
    fn piece(
        &mut self,
        content_type: Option<&str>,
        body: &mut Vec<u8>,
    ) -> impl Future<Output = ()> + Send;
}

/// Bodies kept whole.
struct Whole;

impl Pieces for Whole {
    async fn piece(&mut self, _: Option<&str>, _: &mut Vec<u8>) {}
}

/// What a fetch produced.
#[derive(Debug, Default)]
pub struct Fetched {
    /// HTTP status, if a response arrived.
    pub status: Option<u16>,
    /// `Location` of a redirect, as sent.
    pub location: Option<String>,
    /// `Content-Type`, as sent.
    pub content_type: Option<String>,
    /// The body, kept only for content types that are parsed.
    pub body: Vec<u8>,
    /// Body bytes read (decompressed).
    pub bytes: u64,
    /// The body was longer than `max_body_bytes` and was cut.
    pub truncated: bool,
    /// `Retry-After` in seconds form.
    pub retry_after: Option<Duration>,
    /// What went wrong, if anything.
    pub error: Option<FetchError>,
    /// Time from request to last byte.
    pub elapsed: Duration,
    /// The request and response as sent and received, when archiving
    /// ([`Fetcher::archiving`]).
    pub capture: Option<Box<Capture>>,
    /// A [`Revisit`]'s measures: the response's `ETag`, as sent.
    pub etag: Option<String>,
    /// A [`Revisit`]'s measures: the response's `Last-Modified`, Unix seconds.
    pub last_modified: Option<u32>,
    /// A [`Revisit`]'s measures: the SHA-1 of the payload as received (of what was read,
    /// when the body was cut).
    pub digest: Option<[u8; 20]>,
}

impl Fetched {
    /// Whether fetching again later may succeed: a status that says so (429, 5xx) or a
    /// failure that may pass ([`FetchError::is_transient`]).
    pub fn is_transient(&self) -> bool {
        self.status.is_some_and(transient_status)
            || self.error.as_ref().is_some_and(FetchError::is_transient)
    }

    /// The failure as a record shows it.
    pub fn error_text(&self) -> Option<String> {
        self.error.as_ref().map(ToString::to_string)
    }
}

/// The HTTP side of the crawler.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: client::Http,
    cfg: Arc<FetchSection>,
    guard: Arc<Guard>,
    /// The resolver the client connects with (the seeds' names are resolved through it).
    names: Arc<client::Overrides>,
    /// Hosts' addresses for politeness per address ([`Fetcher::address`]).
    addresses: Arc<addresses::Addresses>,
    user_agent: HeaderValue,
    /// Archiving: where large payloads spool.
    spool: Option<Arc<std::path::Path>>,
}

impl Fetcher {
    /// A fetcher for `cfg`, sending `user_agent`, keeping up to `max_per_host` idle
    /// connections per host (`politeness.max_per_host`). The SSRF guard allows no private
    /// address until the operator's seeds are given ([`allow_seeds`](Self::allow_seeds)).
    pub fn new(
        cfg: &FetchSection,
        user_agent: &str,
        max_per_host: u32,
    ) -> Result<Self, ClientError> {
        let guard = Arc::new(Guard::new(cfg.allow_private));
        let names = Arc::new(client::Overrides::new(cfg, Arc::clone(&guard)));
        // As many idle connections per host as fetches of it may be in flight: with fewer,
        // the connections beyond them close after each response and the next fetch connects
        // again (9,207 connects for 21,616 fetches of one host at 64 in flight with 8). Hosts
        // with nothing left are closed by `Connection: close`.
        let client = client::build(cfg, max_per_host.max(1) as usize, Arc::clone(&names))?;
        if let Some(name) = client::PROXY_VARIABLES
            .iter()
            .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
        {
            tracing::warn!(
                "{name} is set but not used: the crawler connects directly (a proxy would \
                 resolve names past the SSRF guard)"
            );
        }
        let user_agent = HeaderValue::from_str(user_agent)
            .map_err(|_| ClientError::UserAgent(user_agent.to_owned()))?;
        Ok(Self {
            client,
            cfg: Arc::new(cfg.clone()),
            guard,
            names,
            addresses: Arc::default(),
            user_agent,
            spool: None,
        })
    }

    /// Allows the socket addresses the operator's `seeds` resolve to (an address the SSRF
    /// guard would refuse otherwise): IP literals at once, names resolved now and again
    /// whenever the client connects to their origin. A name that does not resolve yet is
    /// allowed once it does.
    pub async fn allow_seeds(&self, seeds: &[url::Url]) {
        if self.guard.allows_everything() {
            return;
        }
        for seed in seeds {
            self.guard.allow_origin(seed);
            if let Some(url::Host::Domain(name)) = seed.host() {
                let port = crate::guard::port_of(seed);
                if let Err(e) = self.names.resolve(name.to_ascii_lowercase(), port).await {
                    tracing::debug!(seed = %frontier::credentials::mask(seed.as_str()), error = %e, "a seed's name does not resolve yet");
                }
            }
        }
    }

    /// This fetcher, capturing every fetch's request and response for the archive
    /// ([`Fetched::capture`]); payloads past [`SPOOL_MEMORY`] spool to files in `spool_dir`.
    pub fn archiving(mut self, spool_dir: &std::path::Path) -> Self {
        self.spool = Some(spool_dir.into());
        self
    }

    /// The SSRF guard.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Whether bodies of `content_type` are parsed for links.
    pub fn is_html(&self, content_type: Option<&str>) -> bool {
        let Some(ct) = content_type else { return false };
        let mime = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        self.cfg
            .html_types
            .iter()
            .any(|t| t.eq_ignore_ascii_case(&mime))
    }

    /// Fetches `url` once (retries are the caller's: they go back through the frontier),
    /// reading at most `fetch.max_body_bytes` of its body.
    pub async fn fetch(&self, url: &str, keep: Keep) -> Fetched {
        self.fetch_with(url, keep, self.cfg.max_body_bytes, false)
            .await
    }

    /// [`fetch`](Self::fetch), reading at most `cap` body bytes (robots.txt reads only what
    /// it parses); `last` asks the server to close the connection after the response (the
    /// host's last queued URL: an idle pooled connection per host ever seen is what made a
    /// page linking 10,000 hosts cost 16 KB each).
    pub async fn fetch_with(&self, url: &str, keep: Keep, cap: u64, last: bool) -> Fetched {
        match url::Url::parse(url) {
            Ok(parsed) => {
                self.fetch_pieces(&parsed, keep, cap, last, None::<&mut Whole>, None)
                    .await
            }
            Err(e) => self.failed(
                url,
                FetchError::Unfetchable(format!("not a URL: {e}")),
                Instant::now(),
            ),
        }
    }

    /// [`fetch_with`](Self::fetch_with) of a URL already parsed, handing a kept body to
    /// `pieces` as it arrives; with `revisit`, conditional and measured ([`Revisit`]).
    pub async fn fetch_pieces<P: Pieces>(
        &self,
        parsed: &url::Url,
        keep: Keep,
        cap: u64,
        last: bool,
        pieces: Option<&mut P>,
        revisit: Option<&Revisit>,
    ) -> Fetched {
        let started = Instant::now();
        let url = parsed.as_str();
        if !matches!(parsed.scheme(), "http" | "https") {
            let why = format!(
                "scheme {:?} is not fetched (http and https are)",
                parsed.scheme()
            );
            return self.failed(url, FetchError::Unfetchable(why), started);
        }
        if let Err(why) = self.guard.check_url(parsed) {
            return self.failed(url, FetchError::Refused(why), started);
        }
        let total = Duration::from_millis(self.cfg.total_timeout_ms);
        let mut out = match tokio::time::timeout(
            total,
            self.fetch_inner(parsed, keep, cap, last, pieces, revisit),
        )
        .await
        {
            Ok(f) => f,
            Err(_) => {
                let why = format!("timed out after {} ms", self.cfg.total_timeout_ms);
                return self.failed(url, FetchError::Timeout(why), started);
            }
        };
        out.elapsed = started.elapsed();
        if self.spool.is_some() && out.capture.is_none() {
            out.capture = Some(Box::new(failure(url, out.error_text())));
        }
        out
    }

    /// A fetch that got no response, with its capture when archiving.
    fn failed(&self, url: &str, why: FetchError, started: Instant) -> Fetched {
        Fetched {
            capture: self
                .spool
                .is_some()
                .then(|| Box::new(failure(url, Some(why.to_string())))),
            error: Some(why),
            elapsed: started.elapsed(),
            ..Fetched::default()
        }
    }

    async fn fetch_inner<P: Pieces>(
        &self,
        url: &url::Url,
        keep: Keep,
        cap: u64,
        last: bool,
        mut pieces: Option<&mut P>,
        revisit: Option<&Revisit>,
    ) -> Fetched {
        let first_byte = Duration::from_millis(self.cfg.first_byte_timeout_ms);
        // Credentials in the URL go as basic auth, never on the wire in the authority (HTTP/2
        // would copy them into `:authority`).
        let mut target = url.clone();
        let auth = client::take_credentials(&mut target);
        let mut request = hyper::Request::get(target.as_str())
            .header(USER_AGENT, self.user_agent.clone())
            .header(ACCEPT, HeaderValue::from_static("*/*"))
            .header(
                ACCEPT_ENCODING,
                HeaderValue::from_static(decode::ACCEPT_ENCODING),
            );
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth);
        }
        if last {
            request = request.header(CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(r) = revisit {
            request = r.conditional(request);
        }
        let request = match request.body(Empty::new()) {
            Ok(r) => r,
            Err(e) => {
                return Fetched {
                    error: Some(FetchError::Unfetchable(format!(
                        "not a URL the client can send: {}",
                        describe(&e)
                    ))),
                    ..Fetched::default()
                }
            }
        };
        let mut capture = self.spool.as_ref().map(|_| {
            Box::new(Capture::new(
                url.as_str(),
                capture::request_head(url, &request),
            ))
        });
        let response = match tokio::time::timeout(first_byte, self.client.request(request)).await {
            Err(_) => {
                return Fetched {
                    error: Some(FetchError::Timeout(format!(
                        "no response headers within {} ms",
                        self.cfg.first_byte_timeout_ms
                    ))),
                    ..Fetched::default()
                }
            }
            Ok(Err(e)) => {
                let message = describe(&e);
                // A refusal of the SSRF guard is final, not a network hiccup.
                let error = if message.contains(crate::guard::BLOCKED) {
                    FetchError::Refused(message)
                } else {
                    FetchError::Connection {
                        message,
                        retryable: client::worth_retrying(&e),
                    }
                };
                return Fetched {
                    error: Some(error),
                    ..Fetched::default()
                };
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(CONTENT_TYPE);
        let location = header(LOCATION);
        let retry_after = header(RETRY_AFTER).and_then(|v| parse_retry_after(&v));
        let mut decoder = decode::Decoder::new(header(CONTENT_ENCODING).as_deref());
        // `Content-Length`, as the body counts it (none for a chunked or HTTP/2 body without).
        let content_length = response.body().size_hint().exact();
        if let Some(c) = capture.as_mut() {
            c.ip = response
                .extensions()
                .get::<HttpInfo>()
                .map(|i| i.remote_addr().ip());
            c.response = Some(capture::response_head(&response));
            c.payload
                .expect(content_length.unwrap_or(16 * 1024).min(cap));
        }
        let keep_body = match keep {
            Keep::Html => status == 200 && self.is_html(content_type.as_deref()),
            Keep::Always => (200..300).contains(&status),
        };
        let mut out = Fetched {
            status: Some(status),
            location,
            content_type,
            retry_after,
            ..Fetched::default()
        };
        let mut payload_hash = None;
        if revisit.is_some() {
            out.etag = header(ETAG);
            out.last_modified = header(LAST_MODIFIED).and_then(|v| revisit::unix_secs(&v));
            payload_hash = Some(Sha1::new());
        }
        if keep_body && decoder.is_identity() {
            // Sized once from `Content-Length` (at most a piece; a lie only costs a regrowth):
            // growing by doubling copied the page up to five times and left half-empty
            // capacity behind — the allocator's churn, and RSS, on a crawl of many pages.
            if let Some(len) = content_length {
                let len = len.min(cap.saturating_add(1)).min(PIECE_BYTES as u64);
                out.body
                    .reserve_exact(usize::try_from(len).unwrap_or(PIECE_BYTES));
            }
        }
        let mut body = response.into_body();
        // Decoded bytes of a body that is not kept: counted, then dropped.
        let mut scratch = Vec::new();
        let mut ended = false;
        let mut cut = None;
        'read: loop {
            let chunk = match body.frame().await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    // Trailers: not part of the body.
                    Err(_) => continue,
                },
                None => {
                    ended = true;
                    break;
                }
                Some(Err(e)) => {
                    // The connection failed mid-body (a reset, a close short of the length):
                    // a network failure, retried like one.
                    out.error = Some(FetchError::Disconnected(format!("body: {}", describe(&e))));
                    cut = Some("disconnect");
                    break;
                }
            };
            if let Some(h) = payload_hash.as_mut() {
                h.update(&chunk);
            }
            if let (Some(c), Some(dir)) = (capture.as_mut(), self.spool.as_ref()) {
                if let Err(e) = c.payload.push(&chunk, dir) {
                    out.error = Some(FetchError::Archive(format!("archiving the body: {e}")));
                    cut = Some("unspecified");
                    break;
                }
            }
            let mut input = &chunk[..];
            loop {
                // One byte past the cap tells a body that is longer from one that fits.
                let room = cap.saturating_sub(out.bytes).saturating_add(1);
                let mut step = usize::try_from(room).unwrap_or(usize::MAX).min(PIECE_BYTES);
                if keep_body && pieces.is_some() {
                    // A piece is handed over when full, so it never outgrows PIECE_BYTES and
                    // its buffer (reused for the next piece) stays that size.
                    step = step.min(PIECE_BYTES.saturating_sub(out.body.len()).max(1));
                }
                let sink = if keep_body {
                    &mut out.body
                } else {
                    &mut scratch
                };
                let before = sink.len();
                let stalled = input.len();
                if let Err(e) = decoder.decode(&mut input, sink, step) {
                    out.error = Some(FetchError::Decoding(format!(
                        "body: content decoding failed ({e})"
                    )));
                    cut = Some("unspecified");
                    break 'read;
                }
                let made = (sink.len() - before) as u64;
                if out.bytes + made > cap {
                    sink.truncate(before + (cap - out.bytes) as usize);
                    out.bytes = cap;
                    out.truncated = true;
                    out.error = Some(FetchError::TooLong(format!(
                        "body longer than {cap} bytes; cut"
                    )));
                    cut = Some("length");
                    break 'read;
                }
                out.bytes += made;
                scratch.clear();
                if keep_body && out.body.len() >= PIECE_BYTES {
                    if let Some(pieces) = pieces.as_deref_mut() {
                        pieces
                            .piece(out.content_type.as_deref(), &mut out.body)
                            .await;
                    }
                }
                if (made as usize) < step && input.is_empty() {
                    // All of the chunk is out (a decoder that filled `step` may hold more).
                    break;
                }
                if made == 0 && input.len() == stalled {
                    // The decoder holds the rest for more input (a header split across chunks).
                    break;
                }
            }
        }
        if ended && out.error.is_none() {
            if let Err(e) = decoder.finish() {
                out.error = Some(FetchError::Decoding(format!(
                    "body: content decoding failed ({e})"
                )));
            }
        }
        if let Some(c) = capture.as_mut() {
            c.truncated = cut;
            c.error = out.error_text();
        }
        out.capture = capture;
        out.digest = payload_hash.map(|h| h.finalize().into());
        out
    }
}

/// The capture of a fetch that got no response.
fn failure(url: &str, error: Option<String>) -> Capture {
    Capture {
        error: error.map(|e| frontier::credentials::mask(&e).into_owned()),
        ..Capture::new(url, Vec::new())
    }
}

/// `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3); a date in the past is
/// no wait, anything else unreadable is ignored.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// A one-line description of an error with its causes.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod retry_after_tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(parse_retry_after(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("31536000"),
            Some(Duration::from_secs(31_536_000))
        );
        let in_a_day = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(86_400));
        let wait = parse_retry_after(&in_a_day).unwrap();
        assert!(
            wait > Duration::from_secs(86_000) && wait <= Duration::from_secs(86_400),
            "{wait:?}"
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO),
            "past"
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-5"), None);
    }
}
