//! The API's accept loop: what keeps clients — slow, idle, many or hostile — from starving
//! the crawl that the API serves.
//!
//! Design choices:
//! - **A cap on open connections** (`service.max_connections`): a connection beyond it is
//!   answered `503` at once and closed, so the API never holds more file descriptors than the
//!   cap, and the crawl's fetches, state and heartbeat keep theirs whatever clients do.
//!   Refusing the newest (rather than leaving it in the kernel's backlog) keeps the backlog
//!   empty: once the held connections time out, the next request is served at once.
//! - **Every connection is timed** by hyper's header read timeout
//!   (`service.header_timeout_secs`): a request head not received in full within it — a
//!   slowloris, or a keep-alive connection left idle — closes the connection. The handler's
//!   time (body included) is bounded by `service.request_timeout_secs` ([`crate::protect`]).
//! - **Writes that make no progress fail** after `service.write_timeout_secs`
//!   ([`Watched`]): a client that stops reading (an event stream nobody consumes, a response
//!   left in the socket) is dropped instead of held.
//! - **Accept errors do not spin**: when the process is out of file descriptors the loop
//!   waits a moment (and says so once) instead of retrying in a busy loop.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The connection limits of one listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    /// Most connections open at once.
    pub(crate) max_connections: usize,
    /// Longest wait for a whole request head (and longest idle keep-alive).
    pub(crate) header_timeout: Duration,
    /// Longest time a write may make no progress.
    pub(crate) write_timeout: Duration,
}

/// How many connections were refused for the cap (shown in the warning, and to tests).
#[derive(Debug, Default)]
pub(crate) struct ConnStats {
    pub(crate) refused: AtomicU64,
}

/// The answer to a connection beyond the cap: sent if the socket takes it at once, then
/// the connection is closed.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: 84\r\n\r\n\
{\"error\":\"too many connections to the API (service.max_connections); try again\"}\n";

/// Serves `app` on `listener` until `shutdown`, within `limits`; then lets open connections
/// finish their requests (at most `drain`).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    stats: Arc<ConnStats>,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let tracker = TaskTracker::new();
    let mut warned_full = false;
    let mut warned_error = false;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors (or memory): wait instead of spinning.
                if !warned_error {
                    tracing::warn!(error = %e, "the API cannot accept connections; retrying");
                    warned_error = true;
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                }
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            if !warned_full {
                tracing::warn!(
                    max = limits.max_connections,
                    "the API has as many connections open as service.max_connections; \
                     refusing more until some close"
                );
                warned_full = true;
            }
            let _ = stream.try_write(OVER_CAPACITY);
            drop(stream);
            continue;
        };
        warned_full = false;
        warned_error = false;
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            serve_connection(stream, app, limits, shutdown).await;
            drop(slot);
        });
    }
    tracker.close();
    tracker.wait().await;
}

/// One connection: HTTP/1.1 with the header timeout, over [`Watched`] writes; on `shutdown`
/// the request in progress finishes and the connection closes.
async fn serve_connection(
    stream: TcpStream,
    app: axum::Router,
    limits: ConnLimits,
    shutdown: CancellationToken,
) {
    let io = TokioIo::new(Watched::new(stream, limits.write_timeout));
    let service = TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = shutdown.cancelled() => conn.as_mut().graceful_shutdown(),
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
}

/// Errors of one connection that came and went before it was accepted: not the listener's.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A socket whose writes fail when they make no progress for `limit`: a peer that stops
/// reading is dropped instead of held. The timer is armed on the first write that cannot
/// proceed and disarmed by any write that does.
#[derive(Debug)]
pub(crate) struct Watched<S> {
    io: S,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Watched<S> {
    pub(crate) fn new(io: S, limit: Duration) -> Self {
        Self {
            io,
            limit,
            stalled: None,
        }
    }

    /// After a write returned `Pending`: an error once the stall has lasted `limit`.
    fn stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing for service.write_timeout_secs",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.stall(cx),
            done => {
                self.stalled = None;
                done
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.stall(cx),
            done => {
                self.stalled = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.stall(cx).map_ok(|_| ()),
            done => {
                self.stalled = None;
                done
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_that_makes_no_progress_fails_after_the_limit() {
        // A pipe whose reader never reads: writes stop once its buffer is full.
        let (writer, _reader) = tokio::io::duplex(1024);
        let mut w = Watched::new(writer, Duration::from_secs(10));
        let started = Instant::now();
        let e = w.write_all(&[0u8; 1 << 16]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(10));
    }

    #[tokio::test]
    async fn writes_that_progress_never_time_out() {
        let (writer, mut reader) = tokio::io::duplex(64);
        let reading = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut sink)
                .await
                .unwrap();
            sink.len()
        });
        let mut w = Watched::new(writer, Duration::from_millis(200));
        for _ in 0..100 {
            w.write_all(&[1u8; 100]).await.unwrap();
        }
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reading.await.unwrap(), 10_000);
    }
}
