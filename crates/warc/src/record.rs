//! One WARC 1.1 record: its named fields, its block, and the SHA-1 digests (base32, as
//! `sha1:…`) of the block and of the payload inside it.

use std::net::IpAddr;

/// `WARC-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// What the file holds and who wrote it (first in every file).
    Warcinfo,
    /// An HTTP request as sent.
    Request,
    /// An HTTP response as received.
    Response,
    /// Anything else about a fetch (an error with no response, say).
    Metadata,
    /// A fetch that found what an earlier capture holds ([`crate::revisit`]).
    Revisit,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Warcinfo => "warcinfo",
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Metadata => "metadata",
            Kind::Revisit => "revisit",
        }
    }
}

/// A `WARC-Record-ID`: `<urn:uuid:…>`, random (version 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordId(String);

impl RecordId {
    /// A new random id.
    pub fn new() -> Self {
        Self(format!("<urn:uuid:{}>", uuid::Uuid::new_v4()))
    }

    /// As written in the record, angle brackets included.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RecordId {
    fn default() -> Self {
        Self::new()
    }
}

/// A record to write.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub kind: Kind,
    pub id: RecordId,
    /// `WARC-Date` (RFC 3339, UTC): when the capture began.
    pub date: String,
    pub target_uri: Option<&'a str>,
    pub ip: Option<IpAddr>,
    pub concurrent_to: Option<&'a RecordId>,
    /// `Content-Type` of the block, e.g. `application/http; msgtype=response`.
    pub content_type: &'a str,
    /// Where the payload begins in the block (after an HTTP message's headers): the
    /// `WARC-Payload-Digest` covers the rest. `None`: no payload digest.
    pub payload_at: Option<usize>,
    /// `WARC-Truncated` (e.g. `length`: the body was cut at the crawl's cap).
    pub truncated: Option<&'a str>,
    /// Other named fields (e.g. `WARC-Filename` of a warcinfo record).
    pub fields: Vec<(&'a str, String)>,
    pub block: &'a [u8],
}

impl<'a> Record<'a> {
    /// A record of `kind` with `block`, dated `date`; the rest empty.
    pub fn new(kind: Kind, date: String, content_type: &'a str, block: &'a [u8]) -> Self {
        Self {
            kind,
            id: RecordId::new(),
            date,
            target_uri: None,
            ip: None,
            concurrent_to: None,
            content_type,
            payload_at: None,
            truncated: None,
            fields: Vec::new(),
            block,
        }
    }

    /// The record as written: the header, the block, and the two line ends after it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let payload = self
            .payload_at
            .map(|at| sha1(&self.block[at.min(self.block.len())..]));
        let head = self.head(
            self.block.len() as u64,
            &sha1(self.block),
            payload.as_deref(),
        );
        let mut out = Vec::with_capacity(head.len() + self.block.len() + 4);
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(self.block);
        out.extend_from_slice(END);
        out
    }

    /// The version line and the named fields, up to and including the empty line, for a block
    /// of `len` bytes with these digests (`sha1:…`).
    pub(crate) fn head(
        &self,
        len: u64,
        block_digest: &str,
        payload_digest: Option<&str>,
    ) -> String {
        let mut head = String::with_capacity(512);
        head.push_str("WARC/1.1\r\n");
        let mut field = |name: &str, value: &str| {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(&clean(value));
            head.push_str("\r\n");
        };
        field("WARC-Type", self.kind.name());
        field("WARC-Record-ID", self.id.as_str());
        field("WARC-Date", &self.date);
        if let Some(uri) = self.target_uri {
            field("WARC-Target-URI", uri);
        }
        if let Some(ip) = self.ip {
            field("WARC-IP-Address", &ip.to_string());
        }
        if let Some(to) = self.concurrent_to {
            field("WARC-Concurrent-To", to.as_str());
        }
        field("WARC-Block-Digest", block_digest);
        if let Some(digest) = payload_digest {
            field("WARC-Payload-Digest", digest);
        }
        if let Some(why) = self.truncated {
            field("WARC-Truncated", why);
        }
        for (name, value) in &self.fields {
            field(name, value);
        }
        field("Content-Type", self.content_type);
        field("Content-Length", &len.to_string());
        head.push_str("\r\n");
        head
    }
}

/// What ends every record, after its block.
pub(crate) const END: &[u8] = b"\r\n\r\n";

/// A header value on one line: control characters (a hostile URL's CR or LF) percent-encoded.
fn clean(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.chars().any(char::is_control) {
        return value.into();
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        if c.is_control() {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// `sha1:` and the SHA-1 of `bytes` in base32 (RFC 4648, upper case, no padding needed for
/// 20 bytes), as WARC readers compute it.
pub fn sha1(bytes: &[u8]) -> String {
    let mut hash = hasher();
    sha1::Digest::update(&mut hash, bytes);
    digest(hash)
}

/// `sha1:` and a SHA-1 already computed, in base32 (the `WARC-Payload-Digest` form).
pub fn sha1_label(hash: &[u8; 20]) -> String {
    format!("sha1:{}", base32(hash))
}

/// A SHA-1 in progress: RustCrypto's, which uses the CPU's SHA instructions where there are
/// some (every payload is hashed twice, for the block and payload digests; a portable SHA-1
/// was the largest cost of archiving: BENCHMARKS.md §4, "WARC on").
pub(crate) fn hasher() -> sha1::Sha1 {
    sha1::Digest::new()
}

/// `sha1:` and the hash, in base32.
pub(crate) fn digest(hash: sha1::Sha1) -> String {
    format!("sha1:{}", base32(&sha1::Digest::finalize(hash)))
}

fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(ALPHABET[(bits >> (35 - i * 5) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_and_sha1_as_warc_readers_write_them() {
        // RFC 4648's test vectors.
        for (input, want) in [
            ("", ""),
            ("f", "MY======"),
            ("fo", "MZXQ===="),
            ("foo", "MZXW6==="),
            ("foob", "MZXW6YQ="),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI======"),
        ] {
            assert_eq!(base32(input.as_bytes()), want);
        }
        // SHA-1 of the empty string, base32.
        assert_eq!(sha1(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }

    #[test]
    fn a_record_has_its_fields_digests_and_length() {
        let block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>";
        let mut r = Record::new(
            Kind::Response,
            "2026-11-25T15:40:00.000Z".into(),
            "application/http; msgtype=response",
            block,
        );
        r.target_uri = Some("http://h.test/a\r\nInjected: yes");
        r.payload_at = Some(block.len() - 9);
        r.truncated = Some("length");
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert!(text.starts_with("WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:"));
        assert!(text.contains("WARC-Target-URI: http://h.test/a%0D%0AInjected: yes\r\n"));
        assert!(text.contains(&format!("WARC-Payload-Digest: {}\r\n", sha1(b"<p>hi</p>"))));
        assert!(text.contains(&format!("Content-Length: {}\r\n\r\nHTTP/1.1", block.len())));
        assert!(text.contains("WARC-Truncated: length\r\n"));
        assert!(text.ends_with("<p>hi</p>\r\n\r\n"));
    }
}
