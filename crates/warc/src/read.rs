//! Reading back what a writer wrote: the whole gzip members of a file and the named fields
//! of the record in each — what a resume needs to find where a crash cut a file and which
//! records it keeps. Not a general WARC reader: it reads one-record-per-member files.

use std::io::Read;

/// Decoded bytes of a member read for its header (a record's named fields fit easily).
const HEAD_BYTES: usize = 64 * 1024;

/// One whole gzip member and the record in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Where it starts in the file.
    pub offset: u64,
    /// Its length in the file (compressed).
    pub len: u64,
    /// The record's named fields, in order (names as written).
    pub fields: Vec<(String, String)>,
}

impl Member {
    /// The value of field `name` (compared without case).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The whole members at the start of `bytes`, which begins at `base` in its file. Stops at
/// the first member that is cut short, corrupt, or holds no WARC record: what follows it is
/// not whole (a crash mid-write).
pub fn members(bytes: &[u8], base: u64) -> Vec<Member> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let mut gz = flate2::bufread::GzDecoder::new(rest);
        let mut head = Vec::new();
        if (&mut gz)
            .take(HEAD_BYTES as u64)
            .read_to_end(&mut head)
            .is_err()
            || std::io::copy(&mut gz, &mut std::io::sink()).is_err()
        {
            break;
        }
        let left = gz.into_inner().len();
        let len = rest.len() - left;
        let Some(fields) = parse_head(&head) else {
            break;
        };
        if len == 0 {
            break;
        }
        out.push(Member {
            offset: base + at as u64,
            len: len as u64,
            fields,
        });
        at += len;
    }
    out
}

/// The named fields of a record whose start is `head`; `None` if it is not one.
fn parse_head(head: &[u8]) -> Option<Vec<(String, String)>> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&head[..end]).ok()?;
    let mut lines = text.split("\r\n");
    if !lines.next()?.starts_with("WARC/") {
        return None;
    }
    lines
        .map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, Record, WarcConfig, WarcWriter};

    fn writer(dir: &std::path::Path, prefix: &str) -> WarcWriter {
        WarcWriter::new(WarcConfig {
            dir: dir.to_owned(),
            prefix: prefix.into(),
            max_file_bytes: 1 << 30,
            info: vec![],
            level: 6,
        })
        .unwrap()
    }

    #[test]
    fn whole_members_up_to_where_the_file_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = writer(dir.path(), "t");
        let mut at = Vec::new();
        for i in 0..3 {
            let block = format!("record {i}");
            let mut r = Record::new(
                Kind::Metadata,
                "2026-11-25T15:40:00.000Z".into(),
                "text/plain",
                block.as_bytes(),
            );
            r.target_uri = Some("http://h.test/");
            at.push(w.write(&r).unwrap());
        }
        let end = w.position();
        w.close().unwrap();
        let bytes = std::fs::read(dir.path().join(&end.file)).unwrap();
        assert_eq!(bytes.len() as u64, end.offset);
        let all = members(&bytes, 0);
        assert_eq!(all.len(), 4, "warcinfo and three");
        assert_eq!(all[0].field("warc-type"), Some("warcinfo"));
        assert_eq!(
            all[1..].iter().map(|m| m.offset).collect::<Vec<_>>(),
            at.iter().map(|p| p.offset).collect::<Vec<_>>()
        );
        assert_eq!(all[3].field("WARC-Target-URI"), Some("http://h.test/"));
        // Cut in the middle of the last member: the first three are whole.
        let cut = &bytes[..bytes.len() - 5];
        assert_eq!(members(cut, 0).len(), 3);
        // From an offset, and garbage after.
        let mut tail = bytes[at[1].offset as usize..].to_vec();
        tail.extend(b"not gzip");
        let from = members(&tail, at[1].offset);
        assert_eq!(from.len(), 2);
        assert_eq!(from[0].offset, at[1].offset);
        // A rewritten member lands where the writer says.
        let mut w2 = writer(dir.path(), "u");
        let m = &all[2];
        let moved = w2
            .write_member(&bytes[m.offset as usize..(m.offset + m.len) as usize])
            .unwrap();
        w2.close().unwrap();
        let again = std::fs::read(dir.path().join(&moved.file)).unwrap();
        let read = members(&again, 0);
        assert_eq!(read[1].offset, moved.offset);
        assert_eq!(read[1].fields, m.fields);
    }
}
