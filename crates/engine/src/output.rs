//! `pages.jsonl` and `stats.json`: one JSON object per fetched URL, written so that a killed
//! process leaves only whole lines, and a summary at the end. With `output.warc`, the same
//! writer thread archives each fetch's request and response first ([`crate::archive`]), so
//! a line can name where its response record is, and a line is never in the file before its
//! records are.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use warc::WarcWriter;

use crate::fetch::Capture;

/// One line of `pages.jsonl`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageRecord {
    /// The URL fetched (canonical).
    pub url: String,
    /// Where it ended up: the redirect target for a 3xx, else the URL itself.
    pub final_url: String,
    /// HTTP status (null when no response arrived).
    pub status: Option<u16>,
    /// Link depth (seeds are 0).
    pub depth: u32,
    /// The page that linked (or redirected) here, or the sitemap that listed it.
    pub parent: Option<String>,
    /// How the URL was found: `link`, `seed`, `redirect` or `sitemap`.
    pub via: &'static str,
    /// Set on the records of sitemap files (not pages): their entries are the links.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sitemap: bool,
    /// `<lastmod>` of the sitemap entry that listed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
    /// `Content-Type` as sent.
    pub content_type: Option<String>,
    /// Body bytes read (after decompression; at most `max_body_bytes`).
    pub bytes: u64,
    /// Links found on the page (0 unless parsed).
    pub links_found: u64,
    /// Of those, links the frontier admitted as new.
    pub links_new: u64,
    /// Time of the last attempt, request to last byte, in milliseconds.
    pub fetch_ms: u64,
    /// When the fetch finished (RFC 3339, UTC).
    pub fetched_at: String,
    /// Attempts made (retries included).
    pub attempts: u32,
    /// The body was cut at `max_body_bytes`.
    pub truncated: bool,
    /// What went wrong, or null.
    pub error: Option<String>,
    /// `output.warc`: the WARC file (in `<out_dir>/warc`) holding this fetch's response
    /// record (or, for a fetch that got no response, its metadata record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warc_file: Option<String>,
    /// Byte offset of that record's gzip member in `warc_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warc_offset: Option<u64>,
}

/// What goes to the writer: a page's record (with its capture when archiving) and who to
/// tell once its line is written, or a capture with no line (a robots.txt fetch).
#[derive(Debug)]
enum Item {
    /// A record, its capture, the admission number of its URL (0: none) and the ack.
    Page(
        Box<PageRecord>,
        Option<Box<Capture>>,
        u64,
        oneshot::Sender<()>,
    ),
    Capture(Box<Capture>),
}

/// `None` closes the file (see [`Output::close`]).
type Queued = Option<Item>;

/// Sends records to the writer task, which appends them to `pages.jsonl` (and archives their
/// fetches).
#[derive(Debug, Clone)]
pub struct Output {
    tx: mpsc::Sender<Queued>,
    marks: Arc<Mutex<Marks>>,
}

/// A position in the output: the length of `pages.jsonl` and where the WARC writer was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Mark {
    /// Bytes of `pages.jsonl`.
    pub pages: u64,
    /// The WARC file (or, before the first, a name sorting after every earlier file) and
    /// its length, when archiving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warc: Option<(String, u64)>,
}

/// Which lines are in the file but not yet reported done to the frontier: the crawl
/// state's checkpoints commit the output position before the first of them ([`Output::mark`]).
#[derive(Debug, Default)]
struct Marks {
    /// Where the output ends (after the last batch of lines written).
    end: Mark,
    /// Lines written whose URL is not yet complete, by admission number: where each begins
    /// (as many as fetches in flight; admission numbers are not in the order of the lines).
    open: std::collections::HashMap<u64, Mark>,
}

/// Makes what was written durable: the WARC file first, then `pages.jsonl` (a line never
/// outlives its records). The crawl state calls it before each checkpoint.
#[derive(Debug)]
pub struct Sync {
    pages: File,
    warc: Option<Arc<Mutex<WarcWriter>>>,
}

impl Sync {
    /// Flushes and fsyncs the output.
    pub fn sync(&self) -> io::Result<()> {
        if let Some(w) = &self.warc {
            lock(w).sync().map_err(io::Error::other)?;
        }
        self.pages.sync_data()
    }
}

impl Output {
    /// Opens `dir/pages.jsonl` for appending (the directory is created; `truncate` empties an
    /// existing file) and starts the writer; with `warc`, it also archives. Also returns the
    /// handle that syncs the output.
    pub fn open(
        dir: &Path,
        truncate: bool,
        warc: Option<WarcWriter>,
    ) -> io::Result<(Self, tokio::task::JoinHandle<io::Result<u64>>, Sync)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("pages.jsonl");
        if truncate {
            File::create(&path)?;
        } else {
            trim_partial_line(&path)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let marks = Arc::new(Mutex::new(Marks {
            end: Mark {
                pages: file.metadata()?.len(),
                warc: warc.as_ref().map(warc_position),
            },
            open: Default::default(),
        }));
        let warc = warc.map(|w| Arc::new(Mutex::new(w)));
        let sync = Sync {
            pages: file.try_clone()?,
            warc: warc.clone(),
        };
        let (tx, rx) = mpsc::channel(4096);
        let writer_marks = Arc::clone(&marks);
        let task = tokio::task::spawn_blocking(move || write_lines(file, warc, rx, &writer_marks));
        Ok((Self { tx, marks }, task, sync))
    }

    /// The output position before which every line's URL has been reported complete (the
    /// crawl state reads it before each checkpoint: see `store::Store::set_output_mark`).
    pub fn mark(&self) -> Mark {
        let m = lock(&self.marks);
        m.open
            .values()
            .min_by_key(|mark| mark.pages)
            .unwrap_or(&m.end)
            .clone()
    }

    /// The URL of admission `id` was reported complete after its line was written.
    pub fn completed(&self, id: u64) {
        if id != 0 {
            lock(&self.marks).open.remove(&id);
        }
    }

    /// Writes a record (archiving `capture` first): returns once its line is in the file (not
    /// yet synced: the state syncs the file before each checkpoint), so the URL may be
    /// reported done after it. `false`: the writer failed and the line was not written.
    /// `id`: the admission number of the record's URL; call [`Output::completed`] with it
    /// once the URL is reported complete.
    pub async fn record(&self, r: PageRecord, capture: Option<Box<Capture>>, id: u64) -> bool {
        let (ack, written) = oneshot::channel();
        self.tx
            .send(Some(Item::Page(Box::new(r), capture, id, ack)))
            .await
            .is_ok()
            && written.await.is_ok()
    }

    /// Archives a fetch that has no line of its own (robots.txt).
    pub async fn archive(&self, capture: Box<Capture>) {
        let _ = self.tx.send(Some(Item::Capture(capture))).await;
    }

    /// Ends the writer once the records sent before are written, even while other handles
    /// (a service's) are still alive: records sent after it are refused.
    pub async fn close(&self) {
        let _ = self.tx.send(None).await;
    }
}

fn warc_position(w: &WarcWriter) -> (String, u64) {
    let p = w.position();
    (p.file, p.offset)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cuts a partial last line (a process killed in the middle of a `write`, or a power loss
/// before the tail was synced) so that appended records start on a line of their own.
/// Returns the bytes cut.
pub fn trim_partial_line(path: &Path) -> io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            end = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    if end < len {
        file.set_len(end)?;
        file.sync_data()?;
        tracing::warn!(path = %path.display(), bytes = len - end, "cut a partial last line");
    }
    Ok(len - end)
}

/// Writes batches of whole lines with one `write` each, unbuffered: whatever has been written
/// when the process dies is a sequence of complete lines. A batch's WARC records are written
/// and flushed to the file before its lines, so every line's records are there too.
fn write_lines(
    mut file: File,
    warc: Option<Arc<Mutex<WarcWriter>>>,
    mut rx: mpsc::Receiver<Queued>,
    marks: &Mutex<Marks>,
) -> io::Result<u64> {
    let mut lines = 0;
    let mut written = lock(marks).end.pages;
    let mut batch = Vec::with_capacity(1 << 16);
    let mut acks = Vec::new();
    let mut opened = Vec::new();
    let mut closed = false;
    while let Some(Some(first)) = rx.blocking_recv() {
        batch.clear();
        let mut archive = warc.as_ref().map(|w| lock(w));
        let mut push = |item: Item, batch: &mut Vec<u8>| -> io::Result<()> {
            let (mut r, capture, id, ack) = match item {
                Item::Page(r, capture, id, ack) => (r, capture, id, ack),
                Item::Capture(mut c) => {
                    if let Some(w) = archive.as_deref_mut() {
                        crate::archive::write(w, &mut c).map_err(io::Error::other)?;
                    }
                    return Ok(());
                }
            };
            let mark = Mark {
                pages: written + batch.len() as u64,
                warc: archive.as_deref().map(warc_position),
            };
            if let (Some(w), Some(mut c)) = (archive.as_deref_mut(), capture) {
                let at = crate::archive::write(w, &mut c).map_err(io::Error::other)?;
                r.warc_file = Some(at.file);
                r.warc_offset = Some(at.offset);
            }
            serde_json::to_writer(&mut *batch, &r).expect("records serialize");
            batch.push(b'\n');
            acks.push(ack);
            opened.push((id, mark));
            lines += 1;
            Ok(())
        };
        push(first, &mut batch)?;
        while batch.len() < (1 << 16) {
            match rx.try_recv() {
                Ok(Some(item)) => push(item, &mut batch)?,
                Ok(None) => {
                    closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if let Some(w) = archive.as_deref_mut() {
            w.flush().map_err(io::Error::other)?;
        }
        let warc_end = archive.as_deref().map(warc_position);
        drop(archive);
        file.write_all(&batch)?;
        written += batch.len() as u64;
        {
            let mut m = lock(marks);
            for (id, mark) in opened.drain(..) {
                if id != 0 {
                    m.open.insert(id, mark);
                }
            }
            m.end = Mark {
                pages: written,
                warc: warc_end,
            };
        }
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
        if closed {
            break;
        }
    }
    if let Some(w) = &warc {
        lock(w).close().map_err(io::Error::other)?;
    }
    file.sync_data()?;
    Ok(lines)
}

/// Writes `value` as `dir/stats.json` (via a temporary file and a rename).
pub fn write_stats(dir: &Path, value: &impl Serialize) -> io::Result<()> {
    let tmp = dir.join("stats.json.tmp");
    let mut f = File::create(&tmp)?;
    serde_json::to_writer_pretty(&mut f, value)?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    std::fs::rename(tmp, dir.join("stats.json"))
}

/// What `status.json` holds: a heartbeat rewritten every `crawl.status_secs` while the crawl
/// runs, and once more when it ends. `crawler health` reads it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Default)]
pub struct Status {
    /// `running`, `paused`, `idle` or `draining` while the crawl runs, or how it ended
    /// (`finished`, `max_pages`, `max_duration`, `shutdown`).
    pub state: String,
    /// Process id of the crawler that wrote it.
    pub pid: u32,
    /// When it was written (RFC 3339, UTC).
    pub updated_at: String,
    /// The same instant in milliseconds since the Unix epoch (easy to compare).
    pub updated_unix_ms: u64,
    /// Seconds between heartbeats (`crawl.status_secs`).
    pub every_secs: u64,
    /// Pages written so far.
    pub pages: u64,
    /// Pages per second since the start.
    pub pages_per_sec: f64,
    /// URLs queued (memory and disk).
    pub queued: u64,
    /// Fetches in flight.
    pub in_flight: u64,
    /// Hosts known to the frontier.
    pub hosts: u64,
    /// Fraction of the visited-set filter's bits set.
    pub filter_fill: f64,
    /// The filter's estimated false-positive probability now.
    pub filter_fpp: f64,
    /// Admissions and completions not yet committed to the crawl state.
    #[serde(default)]
    pub state_backlog: u64,
    /// Seconds the frontier has been unreachable (a shared frontier's Redis is down: the
    /// workers wait and retry); absent while it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier_unavailable_secs: Option<f64>,
    /// Fetching waits for the crawl state's checkpoints to catch up (a slow or stalled disk).
    #[serde(default)]
    pub paused: bool,
    /// Seconds fetching has been paused so far (0 when not paused).
    #[serde(default)]
    pub paused_secs: u64,
    /// When the crawl started (RFC 3339, UTC).
    #[serde(default)]
    pub started_at: String,
    /// Of `queued`, held in memory.
    #[serde(default)]
    pub queued_memory: u64,
    /// Of `queued`, waiting on disk.
    #[serde(default)]
    pub queued_disk: u64,
    /// Records by HTTP status (`"error"`: no response).
    #[serde(default)]
    pub by_status: std::collections::BTreeMap<String, u64>,
    /// Body bytes read.
    #[serde(default)]
    pub bytes: u64,
    /// External fetchers' leases out.
    #[serde(default)]
    pub leases_out: u64,
}

/// Writes `status` as `dir/status.json` (via a temporary file and a rename, so a reader never
/// sees half of it).
pub fn write_status(dir: &Path, status: &Status) -> io::Result<()> {
    let tmp = dir.join("status.json.tmp");
    let mut f = File::create(&tmp)?;
    serde_json::to_writer_pretty(&mut f, status)?;
    f.write_all(b"\n")?;
    drop(f);
    std::fs::rename(tmp, dir.join("status.json"))
}

/// Milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Now as RFC 3339 UTC with milliseconds, e.g. `2026-11-22T20:50:44.123Z` (the same clock
/// text as a WARC record's `WARC-Date`).
pub fn now_rfc3339() -> String {
    warc::Utc::now().rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[10..11], "T");
    }

    fn page(url: &str) -> PageRecord {
        PageRecord {
            url: url.into(),
            final_url: url.into(),
            status: Some(200),
            depth: 0,
            parent: None,
            via: "link",
            sitemap: false,
            lastmod: None,
            content_type: None,
            bytes: 0,
            links_found: 0,
            links_new: 0,
            fetch_ms: 0,
            fetched_at: now_rfc3339(),
            attempts: 1,
            truncated: false,
            error: None,
            warc_file: None,
            warc_offset: None,
        }
    }

    /// The mark is where the earliest line of a URL not yet complete begins, whatever the
    /// order of admission numbers and completions.
    #[tokio::test]
    async fn the_mark_stops_at_the_first_line_not_yet_complete() {
        let dir = tempfile::tempdir().unwrap();
        let (out, writer, _sync) = Output::open(dir.path(), true, None).unwrap();
        for (id, url) in [
            (30, "http://a.test/x"),
            (10, "http://a.test/y"),
            (20, "http://a.test/z"),
        ] {
            assert!(out.record(page(url), None, id).await);
        }
        let text = std::fs::read_to_string(dir.path().join("pages.jsonl")).unwrap();
        let lens: Vec<u64> = text.lines().map(|l| l.len() as u64 + 1).collect();
        let (second, third, end) = (lens[0], lens[0] + lens[1], text.len() as u64);
        assert_eq!(out.mark().pages, 0, "all three open");
        out.completed(10);
        assert_eq!(out.mark().pages, 0, "the line of 30 comes first");
        out.completed(30);
        assert_eq!(out.mark().pages, third, "now the line of 20");
        out.completed(20);
        assert_eq!(out.mark().pages, end, "all complete: the end");
        assert!(second < third);
        out.close().await;
        writer.await.unwrap().unwrap();
    }

    #[test]
    fn a_partial_last_line_is_cut_and_whole_lines_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.jsonl");
        assert_eq!(trim_partial_line(&path).unwrap(), 0, "no file yet");
        let long = "x".repeat(100_000);
        std::fs::write(&path, format!("{{\"a\":1}}\n{{\"b\":\"{long}")).unwrap();
        assert_eq!(trim_partial_line(&path).unwrap(), 100_006);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert_eq!(trim_partial_line(&path).unwrap(), 0, "whole lines stay");
        std::fs::write(&path, "no newline at all").unwrap();
        trim_partial_line(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }
}
