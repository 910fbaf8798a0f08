//! Hostile responses that need more than the model's data: slow and endless bodies, a gzip
//! bomb, huge headers, redirects out of the site, a year-long `Retry-After`, a 100 MiB
//! robots.txt (streamed), and a connection reset mid-body — for that one the connection is
//! wrapped so a handler can turn its close into a TCP reset.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{
    HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use hyper::Response;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::{full, simple, stream, ResponseBody, Shared};
use crate::model::{HostId, HostileKind};

/// The response of a hostile page of host `h` (`reset` cuts its connection when set).
pub(super) async fn respond(
    shared: &Shared,
    h: HostId,
    kind: HostileKind,
    reset: &ResetSwitch,
) -> Response<ResponseBody> {
    let html = HeaderValue::from_static("text/html; charset=utf-8");
    let mut r = match kind {
        HostileKind::SlowFirstByte => {
            tokio::time::sleep(Duration::from_secs(shared.site.config().slow_secs)).await;
            Response::new(full("<!DOCTYPE html><title>Finally</title><p>late</p>"))
        }
        HostileKind::Drip => Response::new(stream(None, |tx| async move {
            let _ = tx
                .send(Bytes::from_static(b"<!DOCTYPE html><title>Drip</title><p>"))
                .await;
            for _ in 0..1200 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if tx.send(Bytes::from_static(b"d")).await.is_err() {
                    return;
                }
            }
        })),
        HostileKind::Endless => Response::new(stream(None, |tx| async move {
            let chunk = Bytes::from("<p>more and more and more</p>\n".repeat(512));
            while tx.send(chunk.clone()).await.is_ok() {}
        })),
        HostileKind::Huge => {
            const LEN: u64 = 1 << 30;
            let mut r = Response::new(stream(Some(LEN), |tx| async move {
                let chunk = Bytes::from(vec![b' '; 1 << 16]);
                for _ in 0..LEN >> 16 {
                    if tx.send(chunk.clone()).await.is_err() {
                        return;
                    }
                }
            }));
            r.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(LEN));
            r
        }
        HostileKind::GzipBomb => {
            let mut r = Response::new(full(bomb(shared).await));
            r.headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            r
        }
        HostileKind::SitemapBomb => {
            // The same gigabyte, as a gzip'd file (no Content-Encoding): the reader inflates.
            let mut r = Response::new(full(bomb(shared).await));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/gzip"));
            return r;
        }
        HostileKind::SitemapBroken => {
            let mut r = Response::new(full(
                "<?xml version=\"1.0\"?><urlset><url><loc>/from-sitemap/0.html</loc></url>\
                 <url><loc>/x</loc></urlset></url><<<",
            ));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/xml"));
            return r;
        }
        HostileKind::HugeHeaders => {
            let mut r = Response::new(full("<!DOCTYPE html><title>Headers</title>"));
            let filler = HeaderValue::from_str(&"h".repeat(1024)).expect("ASCII");
            for i in 0..256 {
                let name =
                    hyper::header::HeaderName::from_bytes(format!("x-filler-{i}").as_bytes())
                        .expect("valid name");
                r.headers_mut().insert(name, filler.clone());
            }
            r
        }
        HostileKind::RedirectPrivate => {
            redirect("http://169.254.169.254/latest/meta-data/".to_owned())
        }
        HostileKind::RedirectSpiral(n) => redirect(shared.site.spiral_next(h, n)),
        HostileKind::RetryAfterYear => {
            let mut r = simple(503, "come back next year");
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(365 * 24 * 3600u32));
            return r;
        }
        HostileKind::Reset => {
            const LEN: u64 = 1 << 20;
            let reset = reset.clone();
            let mut r = Response::new(stream(Some(LEN), |tx| async move {
                let sent = tx.send(Bytes::from(vec![b' '; 64 << 10])).await;
                if sent.is_ok() {
                    // Let the 64 KiB leave, then end short of the length: hyper drops the
                    // connection, and the switch makes the close a reset.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    reset.trip();
                }
            }));
            r.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(LEN));
            r
        }
    };
    r.headers_mut().insert(CONTENT_TYPE, html);
    r
}

/// The gzip bomb's bytes, made once per site.
async fn bomb(shared: &Shared) -> Bytes {
    match shared.gzip_bomb.get() {
        Some(b) => b.clone(),
        None => {
            let b = tokio::task::spawn_blocking(gzip_bomb)
                .await
                .unwrap_or_default();
            shared.gzip_bomb.get_or_init(|| b).clone()
        }
    }
}

fn redirect(to: String) -> Response<ResponseBody> {
    let mut r = simple(302, "moved");
    r.headers_mut().insert(
        LOCATION,
        HeaderValue::from_str(&to).expect("ASCII location"),
    );
    r
}

/// Host 0's robots.txt in the huge-robots mode: its rules, then 100 MiB of comments, then
/// `Disallow: /` for everyone — streamed, so the server holds one chunk at a time.
pub(super) fn huge_robots(rules: Vec<u8>) -> Response<ResponseBody> {
    const PADDING: u64 = 100 << 20;
    const CHUNK: usize = 64 << 10;
    const TAIL: &[u8] = b"\nUser-agent: *\nDisallow: /\n";
    let len = rules.len() as u64 + PADDING + TAIL.len() as u64;
    let mut r = Response::new(stream(Some(len), |tx| async move {
        if tx.send(Bytes::from(rules)).await.is_err() {
            return;
        }
        let mut comments = b"# padding\n".repeat(CHUNK / 10);
        comments.resize(CHUNK, b'\n');
        let comments = Bytes::from(comments);
        for _ in 0..PADDING / CHUNK as u64 {
            if tx.send(comments.clone()).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Bytes::from_static(TAIL)).await;
    }));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(len));
    r
}

/// Set by a handler to make its connection's close a TCP reset.
#[derive(Debug, Clone, Default)]
pub(super) struct ResetSwitch(Arc<AtomicBool>);

impl ResetSwitch {
    fn trip(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A connection whose close becomes a reset (`SO_LINGER` 0) once its switch is tripped.
pub(super) struct Resettable {
    stream: TcpStream,
    switch: ResetSwitch,
}

impl Resettable {
    pub(super) fn new(stream: TcpStream) -> (Self, ResetSwitch) {
        let switch = ResetSwitch::default();
        (
            Self {
                stream,
                switch: switch.clone(),
            },
            switch,
        )
    }
}

impl Drop for Resettable {
    fn drop(&mut self) {
        if self.switch.0.load(Ordering::Relaxed) {
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for Resettable {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Resettable {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// 1 GiB of spaces, gzipped to about 1 MiB.
fn gzip_bomb() -> Bytes {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let block = vec![b' '; 1 << 20];
    for _ in 0..1024 {
        enc.write_all(&block).expect("in-memory write");
    }
    Bytes::from(enc.finish().expect("in-memory write"))
}
