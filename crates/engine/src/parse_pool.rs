//! A fixed pool of OS threads for HTML parsing: parsing is CPU-bound and must not run on
//! the async reactor's threads. Compared with `tokio::task::spawn_blocking` (which hands
//! each job to a pool that grows to hundreds of threads and parks them again), a pool of one
//! thread per core keeps the threads busy and cuts the context switches per page (see
//! BENCHMARKS.md, section 4). [`ExtractPieces`] feeds a page to the extractor here piece by
//! piece as its body arrives.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use crate::fetch::Pieces;

type Job = Box<dyn FnOnce() + Send>;

/// Pages up to this size are parsed on the fetching task's own thread ([`ParsePool::run_sized`]).
/// The extractor reads 150-250 MB/s, so this is at most ~50 µs of the reactor's time.
pub const INLINE_BYTES: usize = 8 * 1024;

/// Parsing threads fed by one queue. The queue is unbounded, but holds at most one job per
/// fetch worker (each waits for its own result), so its size is bounded by the concurrency.
#[derive(Debug)]
pub struct ParsePool {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
}

/// The pool stopped before the job ran (a panic in the job, or shutdown).
#[derive(Debug, thiserror::Error)]
#[error("the parsing pool dropped the job")]
pub struct Dropped;

impl ParsePool {
    /// Starts `threads` (at least one) parsing threads.
    pub fn new(threads: usize) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("parse-{i}"))
                .spawn(move || loop {
                    let job = {
                        let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
                        rx.recv()
                    };
                    match job {
                        // A panicking job only loses its own result (the caller sees
                        // `Dropped`); the thread keeps serving.
                        Ok(job) => {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                        }
                        Err(_) => return, // every sender gone: shut down
                    }
                })?;
        }
        Ok(Self {
            tx: Mutex::new(Some(tx)),
        })
    }

    /// Runs `f` where it costs least: on the calling thread when the job is a page (or last
    /// piece) of at most [`INLINE_BYTES`] — tens of microseconds, less than the two thread
    /// wake-ups a hand-over costs — else on a parsing thread like [`run`](Self::run). A panic
    /// in `f` is caught either way.
    pub async fn run_sized<T: Send + 'static>(
        &self,
        bytes: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Dropped> {
        if bytes <= INLINE_BYTES {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| Dropped)
        } else {
            self.run(f).await
        }
    }

    /// Runs `f` on a parsing thread and waits for its result without blocking the reactor.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Dropped> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(f());
        });
        {
            let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            tx.as_ref().ok_or(Dropped)?.send(job).map_err(|_| Dropped)?;
        }
        result.await.map_err(|_| Dropped)
    }
}

impl Drop for ParsePool {
    fn drop(&mut self) {
        // Closing the queue ends the threads once they finish what is queued.
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A page's body read by the extractor piece by piece as it arrives, on the parsing threads:
/// a fetch holds at most `fetch::PIECE_BYTES` of it, whatever the page's size.
pub(crate) struct ExtractPieces<'a> {
    pub(crate) pool: &'a ParsePool,
    pub(crate) respect: bool,
    pub(crate) extractor: Option<link_extract::Extractor>,
    pub(crate) failed: Option<Dropped>,
}

impl ExtractPieces<'_> {
    /// The page's extractor so far, or a new one for its first piece.
    pub(crate) fn resume(
        extractor: Option<link_extract::Extractor>,
        content_type: Option<&str>,
        respect: bool,
    ) -> link_extract::Extractor {
        extractor.unwrap_or_else(|| link_extract::Extractor::new(content_type, respect))
    }
}

impl Pieces for ExtractPieces<'_> {
    async fn piece(&mut self, content_type: Option<&str>, body: &mut Vec<u8>) {
        let respect = self.respect;
        let extractor = self.extractor.take();
        let content_type = content_type.map(str::to_owned);
        let bytes = std::mem::take(body);
        let job = move || {
            let mut extractor = Self::resume(extractor, content_type.as_deref(), respect);
            extractor.feed(&bytes);
            (extractor, bytes)
        };
        match self.pool.run(job).await {
            Ok((extractor, mut bytes)) => {
                // The allocation is reused for the next piece.
                bytes.clear();
                *body = bytes;
                self.extractor = Some(extractor);
            }
            Err(e) => self.failed = Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_survives_a_panicking_one() {
        let pool = ParsePool::new(2).unwrap();
        for i in 0..32u32 {
            assert_eq!(pool.run(move || i * 2).await.unwrap(), i * 2);
        }
        let panicked = pool.run(|| -> u32 { panic!("boom") }).await;
        assert!(panicked.is_err());
        assert_eq!(pool.run(|| 7).await.unwrap(), 7, "still serving");
    }
}
