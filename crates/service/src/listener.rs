//! The API's accept loop: what keeps clients — slow, idle, many or hostile — from starving
//! the crawl that the API serves. The HTTP API serves its connections with HTTP/1.1
//! ([`serve_http1`]); the url-frontier gRPC listener (`crates/urlfrontier-service`) runs the
//! same loop with its own HTTP/2 connections.
//!
//! Design choices:
//! - **A cap on open connections** (`service.max_connections`): a connection beyond it is
//!   answered at once (HTTP: `503`) and closed, so the API never holds more file descriptors than the
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
pub struct ConnLimits {
    /// What the listener serves, for its warnings ("the API").
    pub name: &'static str,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest wait for a whole request head (and longest idle keep-alive).
    pub header_timeout: Duration,
    /// Longest time a write may make no progress.
    pub write_timeout: Duration,
    /// Written to a connection beyond the cap (if the socket takes it at once) before it is
    /// closed; empty: closed without a word.
    pub over_capacity: &'static [u8],
}

/// How many connections were refused for the cap (shown in the warning, and to tests).
#[derive(Debug, Default)]
pub struct ConnStats {
    /// Connections closed at once because the cap was reached.
    pub refused: AtomicU64,
}

/// The HTTP answer to a connection beyond the cap.
pub(crate) const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: 84\r\n\r\n\
{\"error\":\"too many connections to the API (service.max_connections); try again\"}\n";

/// Accepts connections on `listener` until `shutdown`, within `limits`, and runs
/// `serve(connection, shutdown)` for each on its own task; then waits for those tasks (each
/// ends its connection when `shutdown` fires).
pub async fn accept_loop<S, F>(
    listener: TcpListener,
    limits: ConnLimits,
    stats: Arc<ConnStats>,
    shutdown: CancellationToken,
    serve: S,
) where
    S: Fn(TcpStream, CancellationToken) -> F,
    F: Future<Output = ()> + Send + 'static,
{
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
                    tracing::warn!(error = %e, "{} cannot accept connections; retrying", limits.name);
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
                    "{} has as many connections open as service.max_connections; \
                     refusing more until some close",
                    limits.name
                );
                warned_full = true;
            }
            if !limits.over_capacity.is_empty() {
                let _ = stream.try_write(limits.over_capacity);
            }
            drop(stream);
            continue;
        };
        warned_full = false;
        warned_error = false;
        let _ = stream.set_nodelay(true);
        let connection = serve(stream, shutdown.clone());
        tracker.spawn(async move {
            connection.await;
            drop(slot);
        });
    }
    tracker.close();
    tracker.wait().await;
}

/// One connection: HTTP/1.1 with the header timeout, over [`Watched`] writes; on `shutdown`
/// the request in progress finishes and the connection closes.
pub(crate) async fn serve_http1(
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
pub struct Watched<S> {
    io: S,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Watched<S> {
    /// `io`, its writes failing after `limit` without progress.
    pub fn new(io: S, limit: Duration) -> Self {
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
