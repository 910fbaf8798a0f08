//! `pages.jsonl`: one JSON object per fetched URL, written so that a killed process leaves
//! only whole lines, and the marks the crawl state's checkpoints commit.
//!
//! How a line reaches the file is chosen once, at [`Output::open`] ([`Lines`]). Without
//! WARC, the task that has a record appends its line itself: serialized outside any lock,
//! then written under the lock that also keeps the marks ([`direct`]: at once, or with a
//! crawl state buffered and written in batches). Handing each line to a writer thread and
//! waiting for its ack cost two thread wake-ups per page (a fifth of the crawler's CPU in a
//! crawl of the 10^5-page test site, BENCHMARKS §4). With `output.warc`, a writer thread
//! archives each fetch's request and response first ([`crate::archive`]: compression, too
//! slow for the runtime's threads on a large page), so a line can name where its response
//! record is, and a line is never in the file before its records are ([`writer`]).

pub mod archive;
pub mod clock;
mod direct;
mod status;
pub mod sync;
mod writer;

pub use clock::{now_rfc3339, now_unix_ms};
pub use status::{write_stats, write_status, MemoryStatus, Status};

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use warc::WarcWriter;

use crate::sync::lock;
use fetch::Capture;

/// One line of `pages.jsonl`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
    /// `[recrawl]`: the SHA-1 of a 200's payload as received (`sha1:` and base32, the
    /// `WARC-Payload-Digest` form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `[recrawl]`: a fetch of a URL fetched before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refetch: bool,
    /// On a refetch that got a 304 or a 200: whether the page changed since its last full
    /// fetch (a 304, or a payload with the same digest, is `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// `output.warc`: the WARC file (in `<out_dir>/warc`) holding this fetch's response
    /// record (or, for a fetch that got no response, its metadata record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warc_file: Option<String>,
    /// Byte offset of that record's gzip member in `warc_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warc_offset: Option<u64>,
}

#[cfg(test)]
impl PageRecord {
    /// A record of `url` with `status` and `error`, the rest empty (tests).
    pub(crate) fn for_test(url: &str, status: Option<u16>, error: Option<&str>) -> Self {
        PageRecord {
            url: url.into(),
            final_url: url.into(),
            status,
            via: "link",
            fetched_at: now_rfc3339(),
            attempts: 1,
            error: error.map(str::to_owned),
            ..PageRecord::default()
        }
    }
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

/// How the lines of `pages.jsonl` are written (see the module's header).
#[derive(Debug)]
pub enum Lines {
    /// Each line is in the file when [`Output::record`] returns: for a crawl without a local
    /// state, and for a shared frontier, which counts a URL done as soon as its lease is
    /// completed.
    WriteThrough,
    /// Lines wait in a buffer: only for a local crawl state, which commits URLs as done at
    /// checkpoints that first call [`Sync::sync`] (it writes the buffer out).
    UntilCheckpoints,
    /// `output.warc`: the writer thread archives each fetch, then writes its line.
    Archived(Box<WarcWriter>),
}

/// Appends records to `pages.jsonl`, or with WARC, sends them to the writer thread, which
/// archives their fetches and then appends them.
#[derive(Debug, Clone)]
pub struct Output {
    marks: Arc<Mutex<Marks>>,
    sink: Sink,
}

/// Who writes the lines.
#[derive(Debug, Clone)]
enum Sink {
    /// Each caller appends its own line ([`Output::append`]); the channel only tells the
    /// flusher thread of the close.
    Callers(mpsc::Sender<Queued>),
    /// The WARC writer thread, which archives first.
    Archiver(mpsc::Sender<Queued>),
}

impl Sink {
    fn tx(&self) -> &mpsc::Sender<Queued> {
        match self {
            Sink::Callers(tx) | Sink::Archiver(tx) => tx,
        }
    }
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
    /// Without WARC, `pages.jsonl` itself, appended to by the callers of
    /// [`Output::record`].
    direct: direct::Direct,
}

/// Makes what was written durable: the WARC file first, then `pages.jsonl` (a line never
/// outlives its records). The crawl state calls it before each checkpoint.
#[derive(Debug)]
pub struct Sync {
    pages: File,
    /// What must be written before `pages.jsonl` is synced.
    first: Pending,
}

/// Written, but perhaps not yet in a file.
#[derive(Debug)]
enum Pending {
    /// The lines the callers buffered ([`direct`]).
    Lines(Arc<Mutex<Marks>>),
    /// The WARC records (their lines are written after them by the writer thread).
    Archive(Arc<Mutex<WarcWriter>>),
}

impl Sync {
    /// Writes out and fsyncs the output.
    pub fn sync(&self) -> io::Result<()> {
        match &self.first {
            Pending::Lines(m) => lock(m).direct.write_out()?,
            Pending::Archive(w) => lock(w).sync().map_err(io::Error::other)?,
        }
        self.pages.sync_data()
    }
}

impl Output {
    /// Opens `dir/pages.jsonl` for appending (the directory is created; `truncate` empties an
    /// existing file) and starts the thread that writes ([`Lines`]). Also returns the handle
    /// that syncs the output.
    pub fn open(
        dir: &Path,
        truncate: bool,
        lines: Lines,
    ) -> io::Result<(Self, tokio::task::JoinHandle<io::Result<u64>>, Sync)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("pages.jsonl");
        if truncate {
            File::create(&path)?;
        } else {
            trim_partial_line(&path)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let pages = file.try_clone()?;
        let mut marks = Marks {
            end: Mark {
                pages: file.metadata()?.len(),
                warc: None,
            },
            open: Default::default(),
            direct: Default::default(),
        };
        let (tx, rx) = mpsc::channel(4096);
        let (sink, marks, first, task) = match lines {
            Lines::Archived(w) => {
                marks.end.warc = Some(warc_position(&w));
                let marks = Arc::new(Mutex::new(marks));
                let w = Arc::new(Mutex::new(*w));
                let (writer_marks, archive) = (Arc::clone(&marks), Arc::clone(&w));
                let task = tokio::task::spawn_blocking(move || {
                    writer::write_lines(file, archive, rx, &writer_marks)
                });
                (Sink::Archiver(tx), marks, Pending::Archive(w), task)
            }
            Lines::WriteThrough | Lines::UntilCheckpoints => {
                let buffered = matches!(lines, Lines::UntilCheckpoints);
                marks.direct = direct::Direct::new(file, buffered);
                let marks = Arc::new(Mutex::new(marks));
                let writer_marks = Arc::clone(&marks);
                let task = tokio::task::spawn_blocking(move || {
                    writer::flush_until_closed(rx, &writer_marks, buffered)
                });
                let first = Pending::Lines(Arc::clone(&marks));
                (Sink::Callers(tx), marks, first, task)
            }
        };
        Ok((Self { marks, sink }, task, Sync { pages, first }))
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

    /// Writes a record (archiving `capture` first): returns once its line is in the file, or
    /// with [`Lines::UntilCheckpoints`] in the buffer in front of it (not yet synced either
    /// way: the state writes out and syncs the output before each checkpoint), so the URL
    /// may be reported done after it. `false`: the writer failed and the line was not
    /// written.
    /// `id`: the admission number of the record's URL; call [`Output::completed`] with it
    /// once the URL is reported complete.
    pub async fn record(&self, r: PageRecord, capture: Option<Box<Capture>>, id: u64) -> bool {
        let tx = match &self.sink {
            Sink::Callers(_) => return self.append(&r, id),
            Sink::Archiver(tx) => tx,
        };
        let (ack, written) = oneshot::channel();
        tx.send(Some(Item::Page(Box::new(r), capture, id, ack)))
            .await
            .is_ok()
            && written.await.is_ok()
    }

    /// Appends `r`'s line to `pages.jsonl` (buffered: see [`direct`]; no WARC to write
    /// first).
    fn append(&self, r: &PageRecord, id: u64) -> bool {
        let mut line = Vec::with_capacity(512);
        serde_json::to_writer(&mut line, r).expect("records serialize");
        line.push(b'\n');
        let mut m = lock(&self.marks);
        let mark = m.end.clone();
        if !m.direct.push(&line) {
            return false;
        }
        m.end.pages += line.len() as u64;
        if id != 0 {
            m.open.insert(id, mark);
        }
        true
    }

    /// Archives a fetch that has no line of its own (robots.txt).
    pub async fn archive(&self, capture: Box<Capture>) {
        if let Sink::Archiver(tx) = &self.sink {
            let _ = tx.send(Some(Item::Capture(capture))).await;
        }
    }

    /// Ends the writer once the records sent before are written, even while other handles
    /// (a service's) are still alive: records sent after it are refused.
    pub async fn close(&self) {
        if let Sink::Callers(_) = self.sink {
            lock(&self.marks).direct.refuse();
        }
        let _ = self.sink.tx().send(None).await;
    }
}

fn warc_position(w: &WarcWriter) -> (String, u64) {
    let p = w.position();
    (p.file, p.offset)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[10..11], "T");
    }

    fn page(url: &str) -> PageRecord {
        PageRecord::for_test(url, Some(200), None)
    }

    /// The mark is where the earliest line of a URL not yet complete begins, whatever the
    /// order of admission numbers and completions.
    #[tokio::test]
    async fn the_mark_stops_at_the_first_line_not_yet_complete() {
        let dir = tempfile::tempdir().unwrap();
        let (out, writer, sync) = Output::open(dir.path(), true, Lines::WriteThrough).unwrap();
        for (id, url) in [
            (30, "http://a.test/x"),
            (10, "http://a.test/y"),
            (20, "http://a.test/z"),
        ] {
            assert!(out.record(page(url), None, id).await);
        }
        sync.sync().unwrap();
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

    /// Without WARC the callers append their own lines: many at once still give whole
    /// lines, each once, and the marks end where the file ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn lines_appended_at_once_by_many_tasks_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (out, writer, _sync) = Output::open(dir.path(), true, Lines::WriteThrough).unwrap();
        let tasks: Vec<_> = (0..8u64)
            .map(|t| {
                let out = out.clone();
                tokio::spawn(async move {
                    for i in 0..250u64 {
                        let url = format!(
                            "http://a.test/{t}/{i}/{}",
                            "x".repeat((i % 7) as usize * 300)
                        );
                        assert!(out.record(page(&url), None, t * 1000 + i + 1).await);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        out.close().await;
        assert_eq!(
            writer.await.unwrap().unwrap(),
            2000,
            "the writer counts every line"
        );
        let text = std::fs::read_to_string(dir.path().join("pages.jsonl")).unwrap();
        let mut urls: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["url"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), 2000);
        assert_eq!(
            out.mark().pages,
            0,
            "nothing completed: the first line's start"
        );
        for id in (0..8u64).flat_map(|t| (0..250u64).map(move |i| t * 1000 + i + 1)) {
            out.completed(id);
        }
        assert_eq!(out.mark().pages, text.len() as u64);
    }

    /// Without a crawl state's checkpoints (a shared frontier counts a URL done as soon as
    /// its lease is completed), a line is in the file when `record` returns, and a full
    /// disk refuses the record itself.
    #[tokio::test]
    async fn without_checkpoints_a_line_is_in_the_file_when_record_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.jsonl");
        let (out, writer, _sync) = Output::open(dir.path(), true, Lines::WriteThrough).unwrap();
        for i in 1..=3u64 {
            assert!(
                out.record(page(&format!("http://a.test/{i}")), None, i)
                    .await
            );
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.lines().count() as u64, i);
        }
        out.close().await;
        assert_eq!(writer.await.unwrap().unwrap(), 3);
        #[cfg(target_os = "linux")]
        {
            let dir = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink("/dev/full", dir.path().join("pages.jsonl")).unwrap();
            let (out, writer, _sync) =
                Output::open(dir.path(), false, Lines::WriteThrough).unwrap();
            assert!(!out.record(page("http://a.test/1"), None, 1).await);
            out.close().await;
            assert!(writer.await.unwrap().is_err());
        }
    }

    /// After the close, a record is refused, not written behind the synced end.
    #[tokio::test]
    async fn a_record_after_the_close_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (out, writer, _sync) = Output::open(dir.path(), true, Lines::WriteThrough).unwrap();
        assert!(out.record(page("http://a.test/1"), None, 1).await);
        out.close().await;
        assert!(!out.record(page("http://a.test/2"), None, 2).await);
        assert_eq!(writer.await.unwrap().unwrap(), 1);
        let text = std::fs::read_to_string(dir.path().join("pages.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 1);
    }

    /// A write that fails (a full disk) fails the checkpoint's sync, refuses every later
    /// record, and the writer's result is the error.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_failed_write_fails_the_sync_refuses_records_and_ends_with_the_error() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.path().join("pages.jsonl")).unwrap();
        let (out, writer, sync) = Output::open(dir.path(), false, Lines::UntilCheckpoints).unwrap();
        assert!(
            out.record(page("http://a.test/1"), None, 1).await,
            "buffered"
        );
        let err = sync.sync().unwrap_err();
        assert!(err.to_string().contains("space"), "{err}");
        assert!(!out.record(page("http://a.test/2"), None, 2).await);
        out.close().await;
        let err = writer.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("space"), "{err}");
    }

    /// Buffered lines reach the file on a checkpoint's sync at once, and without one within
    /// the flush interval.
    #[tokio::test]
    async fn buffered_lines_reach_the_file_on_a_sync_and_on_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.jsonl");
        let (out, writer, sync) = Output::open(dir.path(), true, Lines::UntilCheckpoints).unwrap();
        let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
        assert!(out.record(page("http://a.test/1"), None, 1).await);
        assert_eq!(lines(&path), 0, "buffered");
        sync.sync().unwrap();
        assert_eq!(lines(&path), 1, "the sync wrote the buffer");
        assert!(out.record(page("http://a.test/2"), None, 2).await);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while lines(&path) < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the line never reached the file"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out.close().await;
        assert_eq!(writer.await.unwrap().unwrap(), 2);
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
