//! Resuming after a crash with every fetched URL recorded exactly once, in `pages.jsonl` and
//! in the WARC files.
//!
//! Each checkpoint commits an output mark ([`crate::output::Mark`]): a position before which
//! every line's URL is done in the committed state. After the mark (the *tail*), a line may
//! belong to a URL the state does not count as done — fetched after the checkpoint, or in a
//! batch that never committed — and the resumed crawl will fetch that URL again. Such a line
//! goes, with its WARC records; the re-fetch writes them once. A tail line stays when its URL
//! is admitted and done in the committed state: it will not be fetched again.
//!
//! Why not keep those lines and mark their URLs done instead: the links such a page led to
//! were admitted in the same lost batch, so marking it done would lose them, or they would
//! have to be re-extracted from the archive (and, without WARC, could not be). Re-fetching
//! costs at most the fetches of one checkpoint interval.
//!
//! Crash-safe in three steps, each of which leaves a state the next resume reconciles the
//! same way: the tail records to keep are copied into a new WARC file (and synced); then
//! `pages.jsonl` is cut at the mark and the kept lines, naming their records' new places,
//! appended (and synced); then the old tail is cut from the WARC files. A crash between steps
//! leaves records no line names, which the next resume drops as it drops any such record.
//! robots.txt records, which no line names, are kept.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use warc::read::Member;
use warc::WarcWriter;

use crate::output::Mark;

/// One `pages.jsonl` line after the mark.
#[derive(Debug)]
struct Line {
    text: String,
    url: Option<String>,
    warc: Option<(String, u64)>,
    /// Admitted in the committed state.
    admitted: bool,
    /// Not done in the committed state.
    pending: bool,
}

impl Line {
    fn keep(&self) -> bool {
        self.url.is_none() || (self.admitted && !self.pending)
    }
}

/// The fields of a line this needs.
#[derive(Deserialize)]
struct Fields {
    url: String,
    #[serde(default)]
    warc_file: Option<String>,
    #[serde(default)]
    warc_offset: Option<u64>,
}

/// What a resume found after the last checkpoint's mark.
#[derive(Debug, Default)]
pub struct Tail {
    /// Read from a resumed state (otherwise there is nothing to reconcile).
    active: bool,
    from: Mark,
    /// Whether a mark was committed (none: the whole output is the tail).
    marked: bool,
    lines: Vec<Line>,
    /// Line numbers by the URL's fingerprint.
    by_fp: HashMap<u128, Vec<usize>>,
    /// A problem reading the tail, reported by [`Tail::apply`].
    error: Option<io::Error>,
}

/// What [`Tail::apply`] did (`stats.json` → `state`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TailSummary {
    /// Lines after the last checkpoint's mark whose URLs were done: kept.
    pub kept: u64,
    /// Lines whose URLs the resumed crawl fetches again: removed with their records.
    pub dropped: u64,
}

impl Tail {
    /// Nothing to reconcile (a new crawl).
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads the lines of `out_dir/pages.jsonl` after `mark` (the state's committed output
    /// mark; `None`: the state committed none, so every line is in the tail).
    pub fn read(out_dir: &Path, mark: Option<&[u8]>) -> Self {
        let (from, marked) = match mark.map(serde_json::from_slice::<Mark>) {
            Some(Ok(m)) => (m, true),
            Some(Err(e)) => {
                return Self {
                    error: Some(io::Error::other(format!(
                        "the crawl state's output mark is unreadable: {e}"
                    ))),
                    ..Self::default()
                }
            }
            None => (Mark::default(), false),
        };
        let mut tail = Self {
            active: true,
            from,
            marked,
            ..Self::default()
        };
        match read_from(&out_dir.join("pages.jsonl"), tail.from.pages) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                // A partial last line (cut by the crash) is not a line.
                let whole = text.rfind('\n').map_or("", |end| &text[..end]);
                for text in whole.split('\n').filter(|l| !l.is_empty()) {
                    tail.push(text.to_owned());
                }
            }
            Err(e) => tail.error = Some(e),
        }
        tail
    }

    fn push(&mut self, text: String) {
        let fields = serde_json::from_str::<Fields>(&text).ok();
        let i = self.lines.len();
        if let Some(f) = &fields {
            self.by_fp
                .entry(frontier::fingerprint(&f.url))
                .or_default()
                .push(i);
        }
        self.lines.push(Line {
            warc: fields
                .as_ref()
                .and_then(|f| Some((f.warc_file.clone()?, f.warc_offset?))),
            url: fields.map(|f| f.url),
            text,
            admitted: false,
            pending: false,
        });
    }

    /// Whether any line is in the tail (the restore need not watch otherwise).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The restore saw fingerprint `fp` admitted in the committed state.
    pub fn admitted(&mut self, fp: u128) {
        if let Some(lines) = self.by_fp.get(&fp) {
            for &i in lines {
                self.lines[i].admitted = true;
            }
        }
    }

    /// The restore saw fingerprint `fp` pending (queued or in flight) in the committed state.
    pub fn pending(&mut self, fp: u128) {
        if let Some(lines) = self.by_fp.get(&fp) {
            for &i in lines {
                self.lines[i].pending = true;
            }
        }
    }

    /// Makes the output agree with the committed state (see the module's notes). `warc`: the
    /// crawl's writer, when archiving; the kept tail records are copied into its first file.
    pub fn apply(self, out_dir: &Path, warc: Option<&mut WarcWriter>) -> io::Result<TailSummary> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut summary = TailSummary::default();
        if !self.active {
            return Ok(summary);
        }
        let mut lines = self.lines;
        // The WARC files' tail: from the mark (or all, with no mark), when archiving.
        let archive = match (warc, self.marked, &self.from.warc) {
            (Some(w), false, _) => Some((w, (String::new(), 0))),
            (Some(w), true, Some(at)) => Some((w, at.clone())),
            _ => None,
        };
        let mut cut = Vec::new();
        if let Some((writer, from)) = archive {
            cut = copy_records(writer, &from, &mut lines)?;
        }
        let path = out_dir.join("pages.jsonl");
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)?;
        file.set_len(self.from.pages)?;
        file.seek(SeekFrom::End(0))?;
        let mut text = String::new();
        for line in &lines {
            if line.keep() {
                text.push_str(&line.text);
                text.push('\n');
                summary.kept += 1;
            } else {
                summary.dropped += 1;
            }
        }
        file.write_all(text.as_bytes())?;
        file.sync_data()?;
        for (path, len) in cut {
            match len {
                Some(len) => {
                    let f = OpenOptions::new().write(true).open(&path)?;
                    f.set_len(len)?;
                    f.sync_data()?;
                }
                None => std::fs::remove_file(&path)?,
            }
        }
        if summary.dropped > 0 || summary.kept > 0 {
            tracing::info!(
                kept = summary.kept,
                dropped = summary.dropped,
                "output after the last checkpoint: lines of URLs the state counts as done \
                 kept, the others removed with their records (fetched again)"
            );
        }
        Ok(summary)
    }
}

/// `path` from byte `from` to its end (empty if it does not exist).
fn read_from(path: &Path, from: u64) -> io::Result<Vec<u8>> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The WARC files after `from` (the rest of its file, and every later file): copies the
/// records of kept lines (with their requests) and robots.txt records into `writer`, updates
/// those lines, and returns how to cut the old tail afterwards (a file's new length, or
/// `None`: remove it).
fn copy_records(
    writer: &mut WarcWriter,
    from: &(String, u64),
    lines: &mut [Line],
) -> io::Result<Vec<(PathBuf, Option<u64>)>> {
    let dir = writer.dir().to_owned();
    let mine = writer.position().file;
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(crate::archive::PREFIX) && n.ends_with(".warc.gz"))
            .filter(|n| n.as_str() >= from.0.as_str() && n.as_str() < mine.as_str())
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    names.sort();
    let mut cut = Vec::new();
    // Every tail member, by file, with its bytes.
    let mut files: Vec<(String, Vec<u8>, u64, Vec<Member>)> = Vec::new();
    for name in names {
        let start = if name == from.0 { from.1 } else { 0 };
        let path = dir.join(&name);
        let bytes = read_from(&path, start)?;
        let members = warc::read::members(&bytes, start);
        cut.push((path, (start > 0).then_some(start)));
        files.push((name, bytes, start, members));
    }
    let member_bytes = |f: &(String, Vec<u8>, u64, Vec<Member>), m: &Member| {
        let at = (m.offset - f.2) as usize;
        f.1[at..at + m.len as usize].to_vec()
    };
    let io = |e: warc::WarcError| io::Error::other(e.to_string());
    // The members lines name (a response, and the request it names), kept or not.
    let mut named = std::collections::HashSet::new();
    for line in lines.iter_mut() {
        let Some((file, offset)) = line.warc.clone() else {
            continue;
        };
        let found = files.iter().find(|f| f.0 == file).and_then(|f| {
            let m = f.3.iter().find(|m| m.offset == offset)?;
            (m.field("WARC-Target-URI") == line.url.as_deref()).then_some((f, m))
        });
        let Some((f, response)) = found else {
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
        let request = response
            .field("WARC-Concurrent-To")
            .and_then(|id| f.3.iter().find(|m| m.field("WARC-Record-ID") == Some(id)));
        named.insert((file.clone(), offset));
        if let Some(r) = request {
            named.insert((file.clone(), r.offset));
        }
        if line.keep() {
            if let Some(r) = request {
                writer.write_member(&member_bytes(f, r)).map_err(io)?;
            }
            let at = writer
                .write_member(&member_bytes(f, response))
                .map_err(io)?;
            line.text = with_position(&line.text, Some((&at.file, at.offset)));
        }
    }
    // robots.txt fetches: no line names them.
    for f in &files {
        for m in &f.3 {
            let robots = m
                .field("WARC-Target-URI")
                .is_some_and(|u| u.ends_with("/robots.txt"));
            if robots && !named.contains(&(f.0.clone(), m.offset)) {
                writer.write_member(&member_bytes(f, m)).map_err(io)?;
            }
        }
    }
    writer.sync().map_err(io)?;
    Ok(cut)
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

    #[test]
    fn tail_lines_stay_only_when_their_urls_are_done() {
        let dir = tempfile::tempdir().unwrap();
        let head = "{\"url\":\"http://a.test/0\"}\n";
        let body = "{\"url\":\"http://a.test/1\"}\n{\"url\":\"http://a.test/2\"}\n\
                    {\"url\":\"http://a.test/3\"}\n{\"url\":\"http://a.test/4\"";
        std::fs::write(dir.path().join("pages.jsonl"), format!("{head}{body}")).unwrap();
        let mark = serde_json::to_vec(&Mark {
            pages: head.len() as u64,
            warc: None,
        })
        .unwrap();
        let mut tail = Tail::read(dir.path(), Some(&mark));
        assert_eq!(tail.lines.len(), 3, "the partial last line is not one");
        let fp = |n: u32| frontier::fingerprint(&format!("http://a.test/{n}"));
        // 1: done. 2: admitted, still pending. 3: never admitted (a lost batch).
        for n in [0, 1, 2] {
            tail.admitted(fp(n));
        }
        tail.pending(fp(2));
        let s = tail.apply(dir.path(), None).unwrap();
        assert_eq!((s.kept, s.dropped), (1, 2));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pages.jsonl")).unwrap(),
            format!("{head}{{\"url\":\"http://a.test/1\"}}\n")
        );
    }
}
