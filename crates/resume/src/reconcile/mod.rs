//! Resuming after a crash with every fetched URL recorded exactly once, in `pages.jsonl` and
//! in the WARC files, and only the fetches in flight at the crash repeated.
//!
//! Each checkpoint commits an output mark ([`output::Mark`]): a position before which
//! every line's URL is done in the committed state. After the mark (the *tail*), a line may
//! belong to a URL the state does not count as done — fetched after the checkpoint, or in a
//! batch that never committed. What happens to each tail line:
//! - its URL is done in the committed state: the line stays;
//! - its URL is pending and, archiving, its response is in the WARC tail: the page is *read
//!   back* ([`crate::replay`]) — what it leads to is offered again (the offers were lost with
//!   the batch), the line stays and the URL is marked done. Offers that admit a URL whose
//!   own line is in the tail (its admission lost too; the seeds are offered first for the
//!   same reason) are held out of the queue and read back in turn;
//! - otherwise (not admitted, no record, a sitemap file, not archiving): the line goes, with
//!   its records, and the resumed crawl fetches the URL again and writes it once.
//!
//! Crash-safe in steps, each of which leaves a state the next resume reconciles the same way:
//! the read-back offers are journaled (admissions only); the tail records to keep are copied
//! into a new WARC file (and synced); `pages.jsonl` is cut at the mark and the kept lines,
//! naming their records' new places, appended (and synced); the old tail is cut from the WARC
//! files; only then are the read-back URLs marked done, before any new output mark (which
//! would cover their lines) can be committed. A crash between steps leaves pending URLs whose
//! lines and records are still in the tail, or records no line names, which the next resume
//! drops as it drops any such record. robots.txt records, which no line names, are kept.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use frontier::{Entry, Resumable};
use serde::Deserialize;
use warc::WarcWriter;

use output::Mark;

mod warc_tail;

use warc_tail::{copy_records, tail_files, Records, TailFile};

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
    /// Its URL's entry, pending in the state and held out of the queue: its page is read
    /// back from its archived response ([`Tail::replay`]).
    held: Option<Entry>,
    /// Read back: its offers were made again and its URL is done.
    replayed: bool,
    /// `fetched_at`, Unix seconds (to tell the visits of a URL scheduled again apart).
    fetched_at: Option<u64>,
}

impl Line {
    fn keep(&self) -> bool {
        self.url.is_none() || self.replayed || (self.admitted && !self.pending)
    }
}

/// What [`Tail::replay`] settled.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Admissions read back from the archive: to mark done (each with a record) once
    /// [`Tail::apply`] has kept their lines.
    pub done: Vec<u64>,
    /// Entries held for a read-back whose record could not be read: to queue (fetched
    /// again).
    pub requeue: Vec<Entry>,
}

/// The fields of a line this needs.
#[derive(Deserialize)]
struct Fields {
    url: String,
    #[serde(default)]
    warc_file: Option<String>,
    #[serde(default)]
    warc_offset: Option<u64>,
    #[serde(default)]
    fetched_at: Option<String>,
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
    /// Pages of pending URLs may be read back from the archive (`output.warc` is on).
    replay: bool,
    /// The WARC files after the mark, once read ([`Tail::replay`] or [`Tail::apply`]).
    files: Option<Vec<TailFile>>,
}

/// What [`Tail::apply`] did (`stats.json` → `state`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TailSummary {
    /// Lines after the last checkpoint's mark whose URLs were done: kept.
    pub kept: u64,
    /// Lines whose URLs the resumed crawl fetches again: removed with their records.
    pub dropped: u64,
    /// Lines kept although their URLs were pending: their pages were read back from the
    /// archive (offers made again, URL marked done) instead of being fetched again.
    pub replayed: u64,
}

impl Tail {
    /// Nothing to reconcile (a new crawl).
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads the lines of `out_dir/pages.jsonl` after `mark` (the state's committed output
    /// mark; `None`: the state committed none, so every line is in the tail). `replay`: the
    /// crawl archives, so pages with records may be read back instead of fetched again.
    pub fn read(out_dir: &Path, mark: Option<&[u8]>, replay: bool) -> Self {
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
            replay,
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
            fetched_at: fields
                .as_ref()
                .and_then(|f| unix_secs(f.fetched_at.as_deref()?)),
            url: fields.map(|f| f.url),
            text,
            admitted: false,
            pending: false,
            held: None,
            replayed: false,
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

    /// The restore found `entry` pending (queued or in flight) in the committed state.
    /// Returns it to be queued, or `None` when it is held for a read-back: its page has a
    /// line and an archived record after the mark ([`Tail::replay`] settles it).
    pub fn pending(&mut self, entry: Entry) -> Option<Entry> {
        let Some(lines) = self.by_fp.get(&frontier::fingerprint(&entry.url)) else {
            return Some(entry);
        };
        if let Some(visit) = &entry.visit {
            // Scheduled again (`[recrawl]`): judged per visit. A line of a fetch the state
            // holds (at or before its last fetch, whole seconds as both are written) stays;
            // a later one goes, and the URL, due since, is fetched again at once.
            let committed = u64::from(visit.history.last_fetch);
            for &i in lines {
                if self.lines[i].fetched_at.is_none_or(|t| t > committed) {
                    self.lines[i].pending = true;
                }
            }
            return Some(entry);
        }
        for &i in lines {
            self.lines[i].pending = true;
        }
        match lines.iter().rev().find(|&&i| self.lines[i].warc.is_some()) {
            // Sitemap files are read for the URLs they list, not archived pages: fetched
            // again.
            Some(&i) if self.replay && entry.sitemap == 0 && self.lines[i].held.is_none() => {
                self.lines[i].held = Some(entry);
                None
            }
            _ => Some(entry),
        }
    }

    /// Reads back the pages held by [`Tail::pending`]: offers what each leads to again
    /// (from its archived response, with `rules`) into `frontier`, which journals them. A
    /// page so offered may admit a URL whose own line is in the tail, its admission lost
    /// with the batch: that one is held and read back too — and so are the crawl's `seeds`,
    /// offered first, when a crash lost their admission. Returns the admissions to mark done
    /// after [`Tail::apply`], and those to queue because their record is unreadable.
    pub fn replay(
        &mut self,
        frontier: &dyn Resumable,
        rules: &crate::replay::Rules,
        warc: &WarcWriter,
        seeds: Vec<frontier::Link>,
    ) -> Replayed {
        let mut out = Replayed::default();
        if !self.replay || self.lines.is_empty() {
            return out;
        }
        let mut work: VecDeque<usize> = (0..self.lines.len())
            .filter(|&i| self.lines[i].held.is_some())
            .collect();
        frontier.offer_links_holding(None, seeds, &mut |new| {
            hold(&mut self.lines, &self.by_fp, &mut work, new)
        });
        if work.is_empty() {
            return out;
        }
        if let Err(e) = self.load_files(warc) {
            // Reported by `apply`; the held entries are fetched again.
            self.error = Some(e);
        }
        let files = self.files.take().unwrap_or_default();
        let records = Records::new(&files);
        while let Some(i) = work.pop_front() {
            let Some(entry) = self.lines[i].held.take() else {
                continue;
            };
            let derived = records
                .of(&self.lines[i])
                .ok_or_else(|| "its record is not in the archive".to_owned())
                .and_then(|(f, m, _)| crate::replay::offers(rules, &entry, f.member_bytes(m)));
            let links = match derived {
                Ok(links) => links,
                Err(why) => {
                    tracing::warn!(url = %frontier::credentials::mask(&entry.url), why, "a page after the last checkpoint cannot be read back; fetching it again");
                    out.requeue.push(entry);
                    continue;
                }
            };
            frontier.offer_links_holding(Some(&entry.url), links, &mut |new| {
                hold(&mut self.lines, &self.by_fp, &mut work, new)
            });
            self.lines[i].replayed = true;
            out.done.push(entry.id);
        }
        drop(records);
        self.files = Some(files);
        out
    }

    /// Reads the WARC files' tail (once): from the mark, or all of them with no mark; the
    /// files `writer` writes are not part of it.
    fn load_files(&mut self, writer: &WarcWriter) -> io::Result<()> {
        if self.files.is_some() {
            return Ok(());
        }
        let from = match (self.marked, &self.from.warc) {
            (false, _) => (String::new(), 0),
            (true, Some(at)) => at.clone(),
            (true, None) => {
                self.files = Some(Vec::new());
                return Ok(());
            }
        };
        self.files = Some(tail_files(writer, &from)?);
        Ok(())
    }

    /// Makes the output agree with the committed state (see the module's notes). `warc`: the
    /// crawl's writer, when archiving; the kept tail records are copied into its first file.
    pub fn apply(
        mut self,
        out_dir: &Path,
        warc: Option<&mut WarcWriter>,
    ) -> io::Result<TailSummary> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut summary = TailSummary::default();
        if !self.active {
            return Ok(summary);
        }
        let mut cut = Vec::new();
        // The WARC files' tail, when archiving now and then (a mark naming no WARC position
        // was committed by a run that did not archive).
        let archived = !self.marked || self.from.warc.is_some();
        if let (Some(writer), true) = (warc, archived) {
            self.load_files(writer)?;
            let files = self.files.take().unwrap_or_default();
            copy_records(writer, &files, &mut self.lines)?;
            cut = files
                .iter()
                .map(|f| (writer.dir().join(&f.name), (f.start > 0).then_some(f.start)))
                .collect();
        }
        let lines = self.lines;
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
                if line.replayed {
                    summary.replayed += 1;
                } else {
                    summary.kept += 1;
                }
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
        if summary.dropped > 0 || summary.kept > 0 || summary.replayed > 0 {
            tracing::info!(
                kept = summary.kept,
                replayed = summary.replayed,
                dropped = summary.dropped,
                "output after the last checkpoint: lines of URLs the state counts as done \
                 kept, pages read back from the archive kept, the others removed with their \
                 records (fetched again)"
            );
        }
        Ok(summary)
    }
}

/// Unix seconds of an RFC 3339 UTC time as records write it (`2026-11-25T15:40:00.123Z`).
fn unix_secs(text: &str) -> Option<u64> {
    let at = warc::Utc::parse_rfc3339(text)?;
    Some(at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
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

/// A new admission made while reading back (`new`) whose URL has a line in the tail that
/// the committed state did not admit: the line's page is read back too (queued in `work`)
/// and the entry held out of the frontier's queue. Sitemap files are fetched again.
fn hold(
    lines: &mut [Line],
    by_fp: &HashMap<u128, Vec<usize>>,
    work: &mut VecDeque<usize>,
    new: &Entry,
) -> bool {
    let line = by_fp
        .get(&frontier::fingerprint(&new.url))
        .and_then(|ls| ls.iter().rev().find(|&&j| lines[j].warc.is_some()));
    match line {
        Some(&j) if new.sitemap == 0 && !lines[j].admitted => {
            let line = &mut lines[j];
            line.admitted = true;
            line.pending = true;
            line.held = Some(new.clone());
            work.push_back(j);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut tail = Tail::read(dir.path(), Some(&mark), false);
        assert_eq!(tail.lines.len(), 3, "the partial last line is not one");
        let fp = |n: u32| frontier::fingerprint(&format!("http://a.test/{n}"));
        // 1: done. 2: admitted, still pending. 3: never admitted (a lost batch).
        for n in [0, 1, 2] {
            tail.admitted(fp(n));
        }
        assert!(tail
            .pending(frontier::Entry::new("http://a.test/2".into(), 1, None))
            .is_some());
        let s = tail.apply(dir.path(), None).unwrap();
        assert_eq!((s.kept, s.dropped), (1, 2));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pages.jsonl")).unwrap(),
            format!("{head}{{\"url\":\"http://a.test/1\"}}\n")
        );
    }
}
