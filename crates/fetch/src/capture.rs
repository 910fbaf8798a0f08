//! What one fetch sent and received, kept for its WARC records when `output.warc` is on.
//!
//! - **The request as sent.** hyper does not hand back the bytes it wrote, so the head
//!   is written from the request it sends: the method and target, `Host` (which the client
//!   adds) and the request's headers (`User-Agent`, `Accept`, `Accept-Encoding`,
//!   `Connection`). A test compares it with what a server reads off the socket.
//! - **The response as received**: the status line, the headers (names in the lower case
//!   hyper keeps them in), and the payload *before content decoding* — a gzip'd page is
//!   stored gzip'd with its `Content-Encoding` and `Content-Length`, as Heritrix and wget
//!   store it and as replay tools expect. The one change: hyper removes the chunked framing,
//!   so a `Transfer-Encoding` header is kept as `X-Crawler-Transfer-Encoding` (Common Crawl's
//!   convention), else readers would try to de-chunk a payload that is not chunked.
//! - **Large payloads go to a file**: past [`SPOOL_MEMORY`] the payload is spooled to an
//!   anonymous temporary file in the WARC directory, so archiving keeps the memory of a
//!   crawl bounded by links, not by page size.

use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;

/// Payload bytes held in memory before a capture spools to a file.
pub const SPOOL_MEMORY: usize = 1 << 20;

/// One fetch's request and response (or failure), for the archive.
#[derive(Debug)]
pub struct Capture {
    /// When the request was sent (`WARC-Date`, RFC 3339).
    pub date: String,
    /// The URL fetched, its credentials masked (`WARC-Target-URI`; see
    /// [`frontier::credentials`]).
    pub url: String,
    /// The request head as sent (ends with the empty line).
    pub request: Vec<u8>,
    /// The server's address.
    pub ip: Option<IpAddr>,
    /// The status line and headers as received, ending with the empty line; `None` when no
    /// response arrived.
    pub response: Option<Vec<u8>>,
    /// The payload as received.
    pub payload: Spool,
    /// Why the payload is not all the server sent (`WARC-Truncated`): `length` (cut at
    /// `fetch.max_body_bytes`), `disconnect` (the connection failed), `unspecified` (the
    /// reading stopped on undecodable content).
    pub truncated: Option<&'static str>,
    /// Why there is no (whole) response.
    pub error: Option<String>,
    /// When the request was sent (`date`, as a time).
    pub at: std::time::SystemTime,
    /// A refetch that found what an earlier capture holds: archived as a `revisit` record
    /// standing for that capture, without the payload (set by the crawl, not the fetch).
    pub revisit: Option<RevisitRecord>,
}

/// What a capture's `revisit` record says (WARC 1.1 §6.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisitRecord {
    /// How the sameness was learnt.
    pub profile: warc::revisit::Profile,
    /// The `WARC-Date` of the earlier capture's response record.
    pub refers_to_date: String,
}

impl Capture {
    /// A capture of a request to `url` with `request` as its head, sent now.
    pub(crate) fn new(url: &str, request: Vec<u8>) -> Self {
        let at = std::time::SystemTime::now();
        Self {
            date: warc::Utc::of(at).rfc3339(),
            at,
            revisit: None,
            url: frontier::credentials::mask(url).into_owned(),
            request,
            ip: None,
            response: None,
            payload: Spool::default(),
            truncated: None,
            error: None,
        }
    }
}

/// A payload: in memory while small, then in an anonymous temporary file.
#[derive(Debug, Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
}

impl Spool {
    /// Room for a payload of `expected` bytes (`Content-Length`), as far as it stays in
    /// memory: one allocation instead of a doubling series.
    pub(crate) fn expect(&mut self, expected: u64) {
        let n = usize::try_from(expected)
            .unwrap_or(usize::MAX)
            .min(SPOOL_MEMORY);
        self.memory.reserve_exact(n);
    }

    /// Appends `bytes`, moving to a file in `dir` once past [`SPOOL_MEMORY`].
    pub(crate) fn push(&mut self, bytes: &[u8], dir: &Path) -> std::io::Result<()> {
        self.len += bytes.len() as u64;
        if let Some(f) = &mut self.file {
            return f.write_all(bytes);
        }
        if self.memory.len() + bytes.len() <= SPOOL_MEMORY {
            self.memory.extend_from_slice(bytes);
            return Ok(());
        }
        let mut f = tempfile::tempfile_in(dir)?;
        f.write_all(&self.memory)?;
        f.write_all(bytes)?;
        self.memory = Vec::new();
        self.file = Some(f);
        Ok(())
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The payload: in memory, or the file holding it.
    pub fn parts(&mut self) -> (&[u8], Option<&mut File>) {
        (&self.memory, self.file.as_mut())
    }
}

/// The request head as sent for `request` of `url` (the client adds `host`), but for the
/// credentials of an `Authorization` the URL's user name and password made (a sensitive
/// header): its value is written as `Basic ****`, so that no archive holds them.
pub(crate) fn request_head<B>(url: &url::Url, request: &hyper::Request<B>) -> Vec<u8> {
    let mut head = format!(
        "{} {}",
        request.method(),
        &url[url::Position::BeforePath..url::Position::AfterQuery]
    );
    head.push_str(" HTTP/1.1\r\nhost: ");
    head.push_str(&url[url::Position::BeforeHost..url::Position::AfterPort]);
    head.push_str("\r\n");
    let mut out = Vec::with_capacity(head.len() + 256);
    out.extend_from_slice(head.as_bytes());
    for (name, value) in request.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        if *name == hyper::header::AUTHORIZATION && value.is_sensitive() {
            out.extend_from_slice(b"Basic ");
            out.extend_from_slice(frontier::credentials::MASK.as_bytes());
        } else {
            out.extend_from_slice(value.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The status line and headers of `response` as received (see the module's notes).
pub(crate) fn response_head<B>(response: &hyper::Response<B>) -> Vec<u8> {
    let status = response.status();
    let version = match response.version() {
        hyper::Version::HTTP_09 => "HTTP/0.9",
        hyper::Version::HTTP_10 => "HTTP/1.0",
        hyper::Version::HTTP_2 => "HTTP/2",
        hyper::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(
        format!(
            "{version} {} {}\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .as_bytes(),
    );
    for (name, value) in response.headers() {
        if name == hyper::header::TRANSFER_ENCODING {
            out.extend_from_slice(b"x-crawler-transfer-encoding");
        } else {
            out.extend_from_slice(name.as_str().as_bytes());
        }
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_payload_moves_to_a_file_and_keeps_every_byte() {
        use std::io::{Read, Seek};
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::default();
        let piece = vec![7u8; 300 * 1024];
        for _ in 0..5 {
            s.push(&piece, dir.path()).unwrap();
        }
        assert_eq!(s.len(), 5 * 300 * 1024);
        let (memory, file) = s.parts();
        assert!(memory.is_empty());
        let file = file.expect("spooled");
        file.rewind().unwrap();
        let mut all = Vec::new();
        file.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 5 * 300 * 1024);
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "anonymous"
        );
    }
}
