//! One gRPC connection: HTTP/2 without TLS ("prior knowledge", as gRPC clients speak it to
//! a plain `host:port`), under the HTTP API's limits.
//!
//! Design choices:
//! - **The client's first bytes must be the HTTP/2 preface, within
//!   `service.header_timeout_secs`**: a client that connects and sends nothing (a
//!   slowloris) is closed when the time is up, as on the HTTP port, instead of holding one
//!   of the capped connections for good. A client speaking HTTP/1 (curl, a browser, the
//!   HTTP API's port mistaken) gets a plain `400` naming the port's protocol.
//! - **Writes that make no progress fail** after `service.write_timeout_secs`
//!   ([`service::listener::Watched`]), and the server pings an idle connection
//!   ([`KEEPALIVE_INTERVAL`]), closing it when the ping goes unanswered within the same
//!   time: a vanished client is noticed.
//! - **At most [`MAX_STREAMS`] calls at once on one connection** (HTTP/2's
//!   `SETTINGS_MAX_CONCURRENT_STREAMS`), so one client cannot open unbounded streams, nor
//!   hold more than that many messages of `service.max_body_bytes` being decoded.
//! - **A connection without a call open for the idle time** (`service.request_timeout_secs`
//!   since the last call ended, its answer's stream included) **is closed** with `GOAWAY`:
//!   the token is checked per call, so without this anyone could hold every capped
//!   connection by connecting and sending nothing more. gRPC clients reconnect on their next
//!   call. (Counted from the last call's start, a client that made its next call as soon as a
//!   long one ended met the `GOAWAY` on its way.)
//! - **Shutdown** sends `GOAWAY`: calls under way may finish for 5 s, then the connection
//!   is cut.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use service::listener::{ConnLimits, Watched};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::codegen::Service;
use tonic::service::interceptor::InterceptedService;
use urlfrontier_proto::v2::url_frontier_server::UrlFrontierServer;

use crate::auth::Token;
use crate::node::Node;

/// The service every connection runs: the RPCs behind the token check.
pub(crate) type Rpc = InterceptedService<UrlFrontierServer<Node>, Token>;

/// What every HTTP/2 connection starts with (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Most calls open at once on one connection.
pub(crate) const MAX_STREAMS: u32 = 16;

/// How long a connection may be silent before the server pings it.
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);

/// The answer to a client that is not speaking HTTP/2.
fn not_grpc() -> Vec<u8> {
    let body = "{\"error\":\"this port speaks gRPC (HTTP/2 without TLS): the url-frontier API; \
                the HTTP API is on service.listen\"}\n";
    format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// How a connection began.
enum Start {
    /// The HTTP/2 preface, read.
    Http2,
    /// Bytes that are not the preface (HTTP/1, or anything else).
    NotHttp2,
    /// Closed, failed or too slow before the preface was whole.
    Gone,
}

/// Reads the preface (within `within`), or as much of it as shows it is not one.
async fn read_preface(stream: &mut TcpStream, within: Duration) -> Start {
    let deadline = Instant::now() + within;
    let mut got = [0u8; PREFACE.len()];
    let mut n = 0;
    while n < got.len() {
        match tokio::time::timeout_at(deadline, stream.read(&mut got[n..])).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Start::Gone,
            Ok(Ok(k)) => {
                n += k;
                if got[..n] != PREFACE[..n] {
                    return Start::NotHttp2;
                }
            }
        }
    }
    Start::Http2
}

/// What a connection is doing: its calls open, and when the last one started or ended.
#[derive(Debug)]
struct Activity {
    began: Instant,
    open: AtomicUsize,
    /// When a call last started or ended, in ms after `began`.
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            began: Instant::now(),
            open: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
        }
    }

    fn stamp(&self) {
        let ms = u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::SeqCst);
    }

    /// Since when the connection has had no call open (`None`: one is open).
    fn idle_since(&self) -> Option<Instant> {
        (self.open.load(Ordering::SeqCst) == 0)
            .then(|| self.began + Duration::from_millis(self.last_ms.load(Ordering::SeqCst)))
    }
}

/// A call open on a connection, until its answer (a stream too) is sent or dropped.
#[derive(Debug)]
struct OpenCall(Arc<Activity>);

impl OpenCall {
    fn new(activity: &Arc<Activity>) -> Self {
        activity.open.fetch_add(1, Ordering::SeqCst);
        activity.stamp();
        Self(Arc::clone(activity))
    }
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        self.0.stamp();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one connection until its client closes it, it idles for `idle`, or `shutdown`
/// (then 5 s more at most).
pub(crate) async fn serve(
    mut stream: TcpStream,
    rpc: Rpc,
    limits: ConnLimits,
    idle: Duration,
    shutdown: CancellationToken,
) {
    let start = tokio::select! {
        s = read_preface(&mut stream, limits.header_timeout) => s,
        _ = shutdown.cancelled() => return,
    };
    match start {
        Start::Http2 => {}
        Start::NotHttp2 => {
            let _ = tokio::time::timeout(limits.write_timeout, async {
                stream.write_all(&not_grpc()).await?;
                stream.shutdown().await
            })
            .await;
            return;
        }
        Start::Gone => return,
    }
    let io = TokioIo::new(Watched::new(Replayed::new(stream), limits.write_timeout));
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(KEEPALIVE_INTERVAL))
        .keep_alive_timeout(limits.write_timeout)
        .max_concurrent_streams(MAX_STREAMS);
    let activity = Arc::new(Activity::new());
    let svc = {
        let activity = Arc::clone(&activity);
        hyper::service::service_fn(move |req| {
            let call = OpenCall::new(&activity);
            let mut rpc = rpc.clone();
            async move {
                // The call stays open while its answer's body lives.
                rpc.call(req).await.map(|response| {
                    response.map(|body| {
                        body.map_frame(move |frame| {
                            let _open = &call;
                            frame
                        })
                    })
                })
            }
        })
    };
    let idle_until = || match activity.idle_since() {
        Some(since) => since + idle,
        None => Instant::now() + idle,
    };
    let conn = builder.serve_connection(io, svc);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep_until(idle_until()) => {
                if idle_until() > Instant::now() {
                    continue; // a call is open, or one started or ended meanwhile
                }
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    _ = conn.as_mut() => return,
                    _ = shutdown.cancelled() => {}
                }
                let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                return;
            }
        }
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
}

/// A socket whose first reads give back the preface already read from it.
#[derive(Debug)]
struct Replayed<S> {
    io: S,
    /// Bytes of [`PREFACE`] given back so far.
    replayed: usize,
}

impl<S> Replayed<S> {
    fn new(io: S) -> Self {
        Self { io, replayed: 0 }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Replayed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.replayed < PREFACE.len() {
            let rest = &PREFACE[self.replayed..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.replayed += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replayed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_preface_read_is_given_back_before_the_rest() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"after").await.unwrap();
        drop(client);
        let mut r = Replayed::new(server);
        let mut all = Vec::new();
        r.read_to_end(&mut all).await.unwrap();
        assert_eq!(&all[..24], PREFACE);
        assert_eq!(&all[24..], b"after");
    }
}
