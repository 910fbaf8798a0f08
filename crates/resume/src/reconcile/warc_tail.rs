//! The WARC files after the last checkpoint's mark: read whole members only, find the
//! records a `pages.jsonl` line names (by place, and its request by record id), and copy the
//! records to keep into the writer's new file. Everything is read into memory once per
//! resume: the tail is what a checkpoint interval wrote.

use std::collections::{HashMap, HashSet};
use std::io;

use warc::read::Member;
use warc::WarcWriter;

use super::{read_from, Line};

/// A WARC file of the tail: its name, its bytes from `start`, and their whole members.
pub(super) struct TailFile {
    pub(super) name: String,
    bytes: Vec<u8>,
    pub(super) start: u64,
    members: Vec<Member>,
}

impl std::fmt::Debug for TailFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailFile")
            .field("name", &self.name)
            .field("start", &self.start)
            .field("members", &self.members.len())
            .finish()
    }
}

impl TailFile {
    pub(super) fn member_bytes(&self, m: &Member) -> &[u8] {
        let at = (m.offset - self.start) as usize;
        &self.bytes[at..at + m.len as usize]
    }
}

/// The WARC files after `from` (the rest of its file, and every later file), except those
/// `writer` writes, with their whole members.
pub(super) fn tail_files(writer: &WarcWriter, from: &(String, u64)) -> io::Result<Vec<TailFile>> {
    let dir = writer.dir();
    let mine = writer.position().file;
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(output::archive::PREFIX) && n.ends_with(".warc.gz"))
            .filter(|n| n.as_str() >= from.0.as_str() && n.as_str() < mine.as_str())
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    names.sort();
    let mut files = Vec::new();
    for name in names {
        let start = if name == from.0 { from.1 } else { 0 };
        let bytes = read_from(&dir.join(&name), start)?;
        let members = warc::read::members(&bytes, start);
        files.push(TailFile {
            name,
            bytes,
            start,
            members,
        });
    }
    Ok(files)
}

/// The tail's records, found by place and by record id.
pub(super) struct Records<'a> {
    files: &'a [TailFile],
    /// (file, offset) → (file index, member index).
    at: HashMap<(&'a str, u64), (usize, usize)>,
    /// `WARC-Record-ID` → (file index, member index).
    ids: HashMap<&'a str, (usize, usize)>,
}

impl<'a> Records<'a> {
    pub(super) fn new(files: &'a [TailFile]) -> Self {
        let mut at = HashMap::new();
        let mut ids = HashMap::new();
        for (i, f) in files.iter().enumerate() {
            for (j, m) in f.members.iter().enumerate() {
                at.insert((f.name.as_str(), m.offset), (i, j));
                if let Some(id) = m.field("WARC-Record-ID") {
                    ids.insert(id, (i, j));
                }
            }
        }
        Self { files, at, ids }
    }

    /// The response (or metadata) record `line` names, if it is in the tail and is its
    /// URL's, with the request record it names (in the same file).
    pub(super) fn of(&self, line: &Line) -> Option<(&'a TailFile, &'a Member, Option<&'a Member>)> {
        let (file, offset) = line.warc.as_ref()?;
        let &(i, j) = self.at.get(&(file.as_str(), *offset))?;
        let (f, m) = (&self.files[i], &self.files[i].members[j]);
        if m.field("WARC-Target-URI") != line.url.as_deref() {
            return None;
        }
        let request = m
            .field("WARC-Concurrent-To")
            .and_then(|id| self.ids.get(id))
            .filter(|&&(k, _)| k == i)
            .map(|&(_, r)| &f.members[r]);
        Some((f, m, request))
    }
}

/// Copies the records of kept lines (with their requests) and robots.txt records of the
/// tail `files` into `writer`, and updates those lines.
pub(super) fn copy_records(
    writer: &mut WarcWriter,
    files: &[TailFile],
    lines: &mut [Line],
) -> io::Result<()> {
    let io = |e: warc::WarcError| io::Error::other(e.to_string());
    let records = Records::new(files);
    // The members lines name (a response, and the request it names), kept or not.
    let mut named = HashSet::new();
    for line in lines.iter_mut() {
        if line.warc.is_none() {
            continue;
        }
        let Some((f, response, request)) = records.of(line) else {
            if line.keep() {
                // Its URL is done, so its records were synced before that checkpoint: not
                // expected. The line stays, naming no record.
                tracing::warn!(
                    url = line.url.as_deref(),
                    "a kept line's WARC record is missing"
                );
                line.text = with_position(&line.text, None);
            }
            continue;
        };
        named.insert((f.name.as_str(), response.offset));
        if let Some(r) = request {
            named.insert((f.name.as_str(), r.offset));
        }
        if line.keep() {
            if let Some(r) = request {
                writer.write_member(f.member_bytes(r)).map_err(io)?;
            }
            let at = writer.write_member(f.member_bytes(response)).map_err(io)?;
            line.text = with_position(&line.text, Some((&at.file, at.offset)));
        }
    }
    // robots.txt fetches: no line names them.
    for f in files {
        for m in &f.members {
            let robots = m
                .field("WARC-Target-URI")
                .is_some_and(|u| u.ends_with("/robots.txt"));
            if robots && !named.contains(&(f.name.as_str(), m.offset)) {
                writer.write_member(f.member_bytes(m)).map_err(io)?;
            }
        }
    }
    writer.sync().map_err(io)?;
    Ok(())
}

/// `line` (a `pages.jsonl` record, whose last fields are `warc_file` and `warc_offset`)
/// naming `at` instead (or no record).
fn with_position(line: &str, at: Option<(&str, u64)>) -> String {
    let head = line
        .rfind(",\"warc_file\":")
        .map_or_else(|| line.trim_end_matches('}'), |i| &line[..i]);
    match at {
        Some((file, offset)) => format!(
            "{head},\"warc_file\":{},\"warc_offset\":{offset}}}",
            serde_json::Value::from(file)
        ),
        None => format!("{head}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_its_new_place() {
        let line = r#"{"url":"http://a.test/","error":null,"warc_file":"crawl-1-00001.warc.gz","warc_offset":123}"#;
        assert_eq!(
            with_position(line, Some(("crawl-2-00001.warc.gz", 9))),
            r#"{"url":"http://a.test/","error":null,"warc_file":"crawl-2-00001.warc.gz","warc_offset":9}"#
        );
        assert_eq!(
            with_position(line, None),
            r#"{"url":"http://a.test/","error":null}"#
        );
        let plain = r#"{"url":"http://a.test/","error":null}"#;
        assert_eq!(
            with_position(plain, Some(("f", 1))),
            r#"{"url":"http://a.test/","error":null,"warc_file":"f","warc_offset":1}"#
        );
    }
}
