//! Revisit records (WARC 1.1 §6.7): a capture that found what an earlier capture of the URL
//! holds, archived as the response's status line and headers and a pointer to that capture,
//! not its payload again.
//!
//! Two profiles, by how the sameness was learnt:
//! - **server-not-modified**: the server answered a conditional request with 304. No payload
//!   came, so the record has no `WARC-Payload-Digest` (warcio's tester prohibits one).
//! - **identical-payload-digest**: a full response came whose payload hashes to the earlier
//!   one's. `WARC-Payload-Digest` is this capture's digest (required); the payload itself is
//!   left out, which `WARC-Truncated: length` says.
//!
//! Both name the earlier capture: `WARC-Refers-To-Target-URI`, `WARC-Refers-To-Date` (the
//! `WARC-Date` of the original *response*, never of an earlier revisit) and, when known,
//! `WARC-Refers-To` (its record id).

use crate::{Kind, Record};

/// `WARC-Profile` of a revisit learnt from a 304.
pub const SERVER_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
/// `WARC-Profile` of a revisit learnt from an identical payload digest.
pub const IDENTICAL_PAYLOAD_DIGEST: &str =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// How a revisit knew the content was the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profile {
    /// A 304 to a conditional request.
    ServerNotModified,
    /// A full response whose payload digest (`sha1:…`, this capture's) equals the earlier one.
    IdenticalPayloadDigest {
        /// This capture's `WARC-Payload-Digest`.
        payload_digest: String,
    },
}

/// The earlier capture a revisit stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefersTo<'a> {
    /// Its `WARC-Target-URI`.
    pub target_uri: &'a str,
    /// Its `WARC-Date`.
    pub date: &'a str,
    /// Its `WARC-Record-ID` (`<urn:uuid:…>`), when known.
    pub record_id: Option<&'a str>,
}

impl<'a> Record<'a> {
    /// A revisit record of `target_uri` dated `date`, whose block is the response's status line
    /// and headers (`head`, ending with the empty line).
    pub fn revisit(
        date: String,
        target_uri: &'a str,
        head: &'a [u8],
        profile: &Profile,
        refers: RefersTo<'_>,
    ) -> Self {
        let mut r = Record::new(
            Kind::Revisit,
            date,
            "application/http; msgtype=response",
            head,
        );
        r.target_uri = Some(target_uri);
        let uri = match profile {
            Profile::ServerNotModified => SERVER_NOT_MODIFIED,
            Profile::IdenticalPayloadDigest { payload_digest } => {
                r.fields
                    .push(("WARC-Payload-Digest", payload_digest.clone()));
                r.truncated = Some("length");
                IDENTICAL_PAYLOAD_DIGEST
            }
        };
        r.fields.push(("WARC-Profile", uri.to_owned()));
        r.fields
            .push(("WARC-Refers-To-Target-URI", refers.target_uri.to_owned()));
        r.fields
            .push(("WARC-Refers-To-Date", refers.date.to_owned()));
        if let Some(id) = refers.record_id {
            r.fields.push(("WARC-Refers-To", id.to_owned()));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_profiles_name_what_they_refer_to() {
        let head = b"HTTP/1.1 304 Not Modified\r\nETag: \"a-1\"\r\n\r\n";
        let refers = RefersTo {
            target_uri: "http://h.test/",
            date: "2026-11-25T15:40:00.000Z",
            record_id: Some("<urn:uuid:00000000-0000-4000-8000-000000000000>"),
        };
        let r = Record::revisit(
            "2026-11-26T15:40:00.000Z".into(),
            "http://h.test/",
            head,
            &Profile::ServerNotModified,
            refers,
        );
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert!(text.contains("WARC-Type: revisit\r\n"));
        assert!(text.contains(&format!("WARC-Profile: {SERVER_NOT_MODIFIED}\r\n")));
        assert!(text.contains("WARC-Refers-To-Date: 2026-11-25T15:40:00.000Z\r\n"));
        assert!(text.contains("WARC-Refers-To: <urn:uuid:00000000-"));
        assert!(
            !text.contains("WARC-Payload-Digest"),
            "prohibited for a 304"
        );

        let digest = crate::sha1(b"the page");
        let r = Record::revisit(
            "2026-11-26T15:40:00.000Z".into(),
            "http://h.test/",
            b"HTTP/1.1 200 OK\r\n\r\n",
            &Profile::IdenticalPayloadDigest {
                payload_digest: digest.clone(),
            },
            RefersTo {
                record_id: None,
                ..refers
            },
        );
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert_eq!(text.matches("WARC-Payload-Digest: ").count(), 1, "{text}");
        assert!(text.contains(&format!("WARC-Payload-Digest: {digest}\r\n")));
        assert!(text.contains("WARC-Truncated: length\r\n"));
        assert!(
            !text.contains("WARC-Refers-To: "),
            "no id known: none written"
        );
    }
}
