//! `pages.jsonl` without WARC: the tasks that have records append their lines under the
//! output's lock. Each line is written at once (one `write(2)`), so a line whose URL is
//! reported done survives the process: a shared frontier (Redis) counts a URL done the
//! moment its lease is completed.
//!
//! With a local crawl state the lines are buffered instead
//! ([`Lines::UntilCheckpoints`](super::Lines::UntilCheckpoints)): a URL
//! is done only once a checkpoint commits it, and every checkpoint writes out and syncs the
//! buffer first ([`super::Sync`]), so a process killed with lines in the buffer loses only
//! lines whose URLs a resume fetches again. The buffer goes to the file with one `write(2)`
//! when 64 KiB wait, every 100 ms (the flusher thread), before each checkpoint and at the
//! close. A write per line cost 5% of the crawler's CPU on the 10^5-page test site
//! (BENCHMARKS §4).

use std::fs::File;
use std::io::{self, Write};
use std::time::Duration;

/// Buffered bytes that are written at once.
pub(super) const FLUSH_BYTES: usize = 64 * 1024;

/// How often the flusher thread writes what is buffered.
pub(super) const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// `pages.jsonl` and the lines not yet written to it.
#[derive(Debug, Default)]
pub(super) struct Direct {
    /// The file; taken at the close to be synced.
    file: Option<File>,
    /// Whole lines not yet written.
    buf: Vec<u8>,
    /// Appends are refused: the output was closed, or a write failed.
    closed: bool,
    /// The error a failed write gave (every later write gives it again).
    failed: Option<io::Error>,
    /// Lines accepted.
    lines: u64,
    /// Lines wait in `buf` (a crawl state's checkpoints write them out); otherwise each is
    /// written at once.
    buffered: bool,
}

impl Direct {
    /// `buffered`: lines wait in the buffer (see the module's header).
    pub(super) fn new(file: File, buffered: bool) -> Self {
        Self {
            file: Some(file),
            buf: Vec::with_capacity(if buffered { FLUSH_BYTES + 4096 } else { 4096 }),
            buffered,
            ..Self::default()
        }
    }

    /// Takes a whole line (ending in `\n`); `false`: refused (closed, or a write failed).
    pub(super) fn push(&mut self, line: &[u8]) -> bool {
        if self.closed || self.file.is_none() {
            return false;
        }
        self.buf.extend_from_slice(line);
        self.lines += 1;
        (self.buffered && self.buf.len() < FLUSH_BYTES) || self.write_out().is_ok()
    }

    /// Writes what is buffered with one `write`. After a failed write, every call fails
    /// with its error and appends are refused.
    pub(super) fn write_out(&mut self) -> io::Result<()> {
        if let Some(e) = &self.failed {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if self.buf.is_empty() {
            return Ok(());
        }
        match file.write_all(&self.buf) {
            Ok(()) => {
                self.buf.clear();
                Ok(())
            }
            Err(e) => {
                let again = io::Error::new(e.kind(), e.to_string());
                self.failed = Some(e);
                self.closed = true;
                Err(again)
            }
        }
    }

    /// Refuses appends from now on.
    pub(super) fn refuse(&mut self) {
        self.closed = true;
    }

    /// Closes: writes what is buffered and gives the file (to sync) and the lines accepted.
    pub(super) fn close(&mut self) -> io::Result<(Option<File>, u64)> {
        self.closed = true;
        self.write_out()?;
        Ok((self.file.take(), self.lines))
    }
}
