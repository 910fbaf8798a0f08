//! What a page fetched before a crash leads to, read back from its archived response instead
//! of fetching it again: the same decisions as the fetch path (the engine's worker) —
//! a redirect's `Location`, or the links of a 200 HTML body decoded as it was (its
//! `Content-Encoding`, cut at `fetch.max_body_bytes`) — applied to the WARC record.
//!
//! A resume uses it for pages whose lines are after the last checkpoint while their URLs are
//! still pending in the state ([`crate::reconcile`]): their offers are made again and they
//! are marked done, so only the fetches in flight at the crash are repeated.

use std::io::Read;

use frontier::{Entry, Link};
use url::Url;

use fetch::decode::Decoder;
use fetch::PIECE_BYTES;
use link_extract::Extractor;

/// What the fetch path's settings decide about a body.
#[derive(Debug, Clone)]
pub struct Rules {
    /// `fetch.max_body_bytes`: the body as parsed was cut there.
    pub cap: u64,
    /// `crawl.respect_nofollow`.
    pub respect_nofollow: bool,
    /// `fetch.html_types` (lower case): the bodies parsed for links.
    pub html_types: Vec<String>,
}

impl Rules {
    /// The rules of a crawl's settings.
    pub fn of(cfg: &config::CrawlConfig) -> Self {
        Self {
            cap: cfg.fetch.max_body_bytes,
            respect_nofollow: cfg.crawl.respect_nofollow,
            html_types: cfg.fetch.html_types.clone(),
        }
    }

    fn is_html(&self, content_type: Option<&str>) -> bool {
        let Some(ct) = content_type else { return false };
        let mime = ct.split(';').next().unwrap_or("").trim();
        self.html_types.iter().any(|t| t.eq_ignore_ascii_case(mime))
    }
}

/// The offers of `entry`'s page from `member`, the gzip member holding its `response` (or
/// `metadata`: a fetch with no response, which offers nothing) record. An error means the
/// record cannot be read back: the page is fetched again.
pub fn offers(rules: &Rules, entry: &Entry, member: &[u8]) -> Result<Vec<Link>, String> {
    // The payload as received is at most a network read past the cap; the record's headers
    // are small.
    let limit = rules.cap.saturating_add(4 << 20);
    let mut record = Vec::new();
    flate2::read::GzDecoder::new(member)
        .take(limit)
        .read_to_end(&mut record)
        .map_err(|e| format!("the record does not inflate: {e}"))?;
    let (warc_head, block) = split_head(&record).ok_or("no WARC header")?;
    let kind = field(warc_head, "WARC-Type").ok_or("no WARC-Type")?;
    if kind.eq_ignore_ascii_case("metadata") {
        return Ok(Vec::new());
    }
    if !kind.eq_ignore_ascii_case("response") {
        return Err(format!("a {kind} record, not a response"));
    }
    let length: usize = field(warc_head, "Content-Length")
        .and_then(|v| v.parse().ok())
        .ok_or("no Content-Length")?;
    let block = block
        .get(..length)
        .ok_or("the record is shorter than its Content-Length")?;
    let (http_head, payload) = split_head(block).ok_or("no HTTP header")?;
    let status: u16 = http_head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status")?;
    let page = Url::parse(&entry.url).map_err(|e| e.to_string())?;
    match status {
        300..=399 => Ok(
            Link::redirect(entry, &page, status, field(http_head, "location"))
                .map_or_else(|_| Vec::new(), |link| vec![link]),
        ),
        200 if rules.is_html(field(http_head, "content-type")) => {
            let body = decode(field(http_head, "content-encoding"), payload, rules.cap);
            let mut extractor =
                Extractor::new(field(http_head, "content-type"), rules.respect_nofollow);
            for piece in body.chunks(PIECE_BYTES) {
                extractor.feed(piece);
            }
            let depth = entry.depth + 1;
            Ok(extractor
                .finish(&page)
                .links
                .into_iter()
                .map(|u| Link::new(u, depth))
                .collect())
        }
        _ => Ok(Vec::new()),
    }
}

/// The content of `payload` as the fetch parsed it: decoded, at most `cap` bytes, what
/// decoded before an error (the fetch stopped there too).
fn decode(content_encoding: Option<&str>, payload: &[u8], cap: u64) -> Vec<u8> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut decoder = Decoder::new(content_encoding);
    let mut input = payload;
    let mut body = Vec::new();
    loop {
        let step = (cap - body.len()).min(PIECE_BYTES);
        let before = body.len();
        let stalled = input.len();
        if decoder.decode(&mut input, &mut body, step).is_err() {
            break;
        }
        let made = body.len() - before;
        if body.len() >= cap || (made < step && input.is_empty()) {
            break;
        }
        if made == 0 && input.len() == stalled {
            break;
        }
    }
    body
}

/// A message's header (as text) and what follows the blank line ending it.
fn split_head(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    Some((head, &bytes[end + 4..]))
}

/// The first value of header `name` in `head` (after its first line), as an HTTP client
/// reads it: `None` unless it is visible ASCII.
fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        let v = v.trim();
        (k.trim().eq_ignore_ascii_case(name)
            && v.bytes().all(|b| b == b'\t' || (32..127).contains(&b)))
        .then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn rules() -> Rules {
        Rules {
            cap: 1 << 20,
            respect_nofollow: true,
            html_types: vec!["text/html".into()],
        }
    }

    /// A gzip member holding a WARC record of `kind` whose block is `block`.
    fn member(kind: &str, block: &[u8]) -> Vec<u8> {
        let mut record = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: http://a.test/d/p\r\n\
             Content-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        record.extend_from_slice(block);
        record.extend_from_slice(b"\r\n\r\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&record).unwrap();
        gz.finish().unwrap()
    }

    fn entry() -> Entry {
        Entry::new("http://a.test/d/p".into(), 2, None)
    }

    fn urls(links: &[Link]) -> Vec<String> {
        links.iter().map(|l| l.url.to_string()).collect()
    }

    #[test]
    fn a_gzipped_html_response_gives_its_links_one_level_deeper() {
        let html = b"<a href=x>x</a><noscript><a href=/y>y</a></noscript>\
                     <a rel=nofollow href=z>z</a>";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(html).unwrap();
        let mut block = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\
                          content-encoding: gzip\r\n\r\n"
            .to_vec();
        block.extend(gz.finish().unwrap());
        let links = offers(&rules(), &entry(), &member("response", &block)).unwrap();
        assert_eq!(urls(&links), ["http://a.test/d/x", "http://a.test/y"]);
        assert!(links.iter().all(|l| l.depth == 3));
    }

    #[test]
    fn a_redirect_gives_its_target_and_other_answers_nothing() {
        let block = b"HTTP/1.1 301 Moved\r\nLocation: /new\r\n\r\n";
        let links = offers(&rules(), &entry(), &member("response", block)).unwrap();
        assert_eq!(urls(&links), ["http://a.test/new"]);
        assert_eq!((links[0].depth, links[0].hops), (2, 1));
        let no_location = b"HTTP/1.1 302 Found\r\n\r\n";
        assert!(offers(&rules(), &entry(), &member("response", no_location))
            .unwrap()
            .is_empty());
        let not_html = b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\n\r\n<a href=x>";
        assert!(offers(&rules(), &entry(), &member("response", not_html))
            .unwrap()
            .is_empty());
        let error = b"fetch-error: timed out\r\n";
        assert!(offers(&rules(), &entry(), &member("metadata", error))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_body_is_read_only_up_to_the_cap() {
        let mut block = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n".to_vec();
        block.extend(b"<a href=a>a</a>");
        block.extend(vec![b' '; 100]);
        block.extend(b"<a href=b>b</a>");
        let small = Rules { cap: 50, ..rules() };
        let links = offers(&small, &entry(), &member("response", &block)).unwrap();
        assert_eq!(urls(&links), ["http://a.test/d/a"]);
    }

    #[test]
    fn what_is_not_a_whole_response_record_is_an_error() {
        let e = entry();
        assert!(offers(&rules(), &e, b"not gzip at all").is_err());
        assert!(offers(&rules(), &e, &member("request", b"GET / HTTP/1.1\r\n\r\n")).is_err());
        assert!(offers(&rules(), &e, &member("response", b"HTTP/1.1 200 OK")).is_err());
        // A Content-Length past the record's end.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 999\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")
            .unwrap();
        assert!(offers(&rules(), &e, &gz.finish().unwrap()).is_err());
    }
}
