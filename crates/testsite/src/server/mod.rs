//! The HTTP server: hyper over tokio, one service for every virtual host, with a request log
//! and per-host politeness statistics that tests read from the server's side.
//!
//! Like mini-redis' `server::run`, [`serve`] takes its listeners and a shutdown future, so a
//! test binds `127.0.0.1:0`, starts the site, reads the address and stops it when done
//! ([`TestSite`] wraps exactly that).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{
    HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, HOST, LOCATION, RETRY_AFTER,
    USER_AGENT,
};
use hyper::{Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::config::{Addressing, SiteConfig};
use crate::model::{Encoding, HostId, Resource, RobotsKind, Site};
use crate::observer::{InFlight, Observer, RequestRecord};
use crate::render::{binary_body, compress};

pub(super) type ResponseBody = BoxBody<Bytes, Infallible>;

/// A body that keeps its request counted as in flight until it is done.
struct Tracked {
    inner: ResponseBody,
    _guard: InFlight,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A streamed body fed by a task through a bounded channel (backpressure: the task waits for
/// a slow reader, and stops when the client goes away).
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
    exact_len: Option<u64>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        self.exact_len.map(SizeHint::with_exact).unwrap_or_default()
    }
}

pub(super) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into()).boxed()
}

pub(super) fn simple(status: u16, text: &str) -> Response<ResponseBody> {
    let mut r = Response::new(full(format!("{status} {text}\n")));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

mod conditional;
mod hostile;
mod path;
pub use path::canonical_path;

/// Shared state of one running site.
#[derive(Debug)]
struct Shared {
    site: Site,
    observer: Arc<Observer>,
    gzip_bomb: OnceLock<Bytes>,
}

/// Serves `site` on every listener until `shutdown` completes.
pub async fn serve(
    listeners: Vec<TcpListener>,
    site: Site,
    observer: Arc<Observer>,
    shutdown: impl Future<Output = ()>,
) {
    let shared = Arc::new(Shared {
        site,
        observer,
        gzip_bomb: OnceLock::new(),
    });
    let mut accept_tasks = tokio::task::JoinSet::new();
    for listener in listeners {
        let shared = Arc::clone(&shared);
        accept_tasks.spawn(accept_loop(listener, shared));
    }
    shutdown.await;
    accept_tasks.shutdown().await;
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().ok();
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            let (io, reset) = hostile::Resettable::new(stream);
            let io = hyper_util::rt::TokioIo::new(io);
            let service = hyper::service::service_fn(move |req| {
                let shared = Arc::clone(&shared);
                let reset = reset.clone();
                async move { Ok::<_, Infallible>(handle(shared, local, &reset, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(io, service)
                .await;
        });
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
}

async fn handle(
    shared: Arc<Shared>,
    local: Option<SocketAddr>,
    reset: &hostile::ResetSwitch,
    req: Request<Incoming>,
) -> Response<ResponseBody> {
    let site = &shared.site;
    let host_id = match site.config().addressing {
        Addressing::Names => req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()))
            .and_then(|h| site.host_id(h)),
        Addressing::Ips => local.and_then(|a| site.host_id(&a.ip().to_string())),
    };
    let host_name = host_id.map_or_else(|| "?".to_owned(), |h| site.host_name(h));
    let raw_path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let user_agent = req
        .headers()
        .get(USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let accepts = req
        .headers()
        .get(ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();

    let arrived = shared.observer.start.elapsed();
    let concurrent = shared.observer.arrive(&host_name);
    let guard = InFlight {
        observer: Arc::clone(&shared.observer),
        host: host_name.clone(),
    };
    let response = match host_id {
        None => simple(404, "unknown host"),
        Some(h) => {
            let asked = Asked {
                accepts: &accepts,
                headers: req.headers(),
                arrived,
            };
            respond(&shared, h, &canonical_path(&raw_path), &asked, reset).await
        }
    };
    let observer = &shared.observer;
    if observer.log.is_some() || observer.sink.is_some() {
        let record = RequestRecord {
            at_ms: arrived.as_secs_f64() * 1000.0,
            host: host_name,
            path: raw_path,
            concurrent,
            status: response.status().as_u16(),
            user_agent,
            version: response
                .extensions()
                .get::<conditional::Served>()
                .map(|s| s.0),
        };
        if let Some(sink) = &observer.sink {
            let _ = sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .send(record.clone());
        }
        if let Some(log) = &observer.log {
            log.lock().unwrap_or_else(|e| e.into_inner()).push(record);
        }
    }
    response.map(|inner| {
        Tracked {
            inner,
            _guard: guard,
        }
        .boxed()
    })
}

/// An HTML page's response: rendered, compressed when the page is and the client accepts it.
fn html_response(
    site: &Site,
    h: HostId,
    path: &str,
    html: &crate::model::Html,
    accepts: &str,
) -> Response<ResponseBody> {
    let (body, content_type) = site.render_html(h, path, html);
    let encoding = html.encoding.filter(|e| match e {
        Encoding::Gzip => accepts.contains("gzip"),
        Encoding::Brotli => accepts.contains("br"),
    });
    let mut r = match encoding {
        Some(e) => {
            let mut r = Response::new(full(compress(&body, e)));
            let name = if e == Encoding::Gzip { "gzip" } else { "br" };
            r.headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static(name));
            r
        }
        None => Response::new(full(body)),
    };
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_str(&content_type).expect("ASCII content type"),
    );
    r
}

/// What a request asks beyond its path: the encodings it accepts and its conditions.
struct Asked<'a> {
    accepts: &'a str,
    headers: &'a hyper::HeaderMap,
    /// When it arrived, since the site started (a changing page's version is the one then).
    arrived: Duration,
}

async fn respond(
    shared: &Shared,
    h: HostId,
    path: &str,
    asked: &Asked<'_>,
    reset: &hostile::ResetSwitch,
) -> Response<ResponseBody> {
    let site = &shared.site;
    let accepts = asked.accepts;
    // `host_latency_ms` slows every answer of the host (a slow server); `latency_ms` its
    // HTML pages (a far-away site).
    let (latency, every) = (
        site.latency_of(h),
        !site.config().host_latency_ms.is_empty(),
    );
    let wait = || async move {
        if latency > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
        }
    };
    if every {
        wait().await;
    }
    if let Some(p) = site.changing_page(h, path) {
        if !every {
            wait().await;
        }
        return conditional::respond(site, h, path, p, asked, shared.observer.start_wall);
    }
    let resource = site.resolve(h, path);
    match resource {
        Resource::Html(html) | Resource::Trap(html) => {
            if !every {
                wait().await;
            }
            html_response(site, h, path, &html, accepts)
        }
        Resource::Redirect {
            status,
            location,
            relative,
        } => {
            let to = if relative {
                location.path.clone()
            } else {
                site.url(&location)
            };
            let mut r = simple(status, "moved");
            r.headers_mut().insert(
                LOCATION,
                HeaderValue::from_str(&to).expect("ASCII location"),
            );
            r
        }
        Resource::Status(s) => simple(s, "status"),
        Resource::Transient {
            status,
            retry_after,
            then,
        } => {
            if shared.observer.hit(h, path) == 0 {
                let mut r = simple(status, "try again later");
                if let Some(secs) = retry_after {
                    r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
                }
                r
            } else {
                match *then {
                    Resource::Html(html) => {
                        let (body, ct) = site.render_html(h, path, &html);
                        let mut r = Response::new(full(body));
                        r.headers_mut()
                            .insert(CONTENT_TYPE, HeaderValue::from_str(&ct).expect("ASCII"));
                        r
                    }
                    _ => simple(200, "ok"),
                }
            }
        }
        Resource::Binary {
            content_type,
            seed,
            len,
        } => {
            let mut r = Response::new(full(binary_body(content_type, seed, len)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
        Resource::Robots(kind) => match kind {
            RobotsKind::Missing => simple(404, "no robots.txt here"),
            RobotsKind::ServerError => simple(500, "robots.txt is broken"),
            RobotsKind::Rules if h == 0 && site.config().hostile.huge_robots => {
                hostile::huge_robots(site.render_robots(h, kind))
            }
            RobotsKind::Rules | RobotsKind::Garbage => {
                let mut r = Response::new(full(site.render_robots(h, kind)));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
                r
            }
        },
        Resource::Hostile(kind) => hostile::respond(shared, h, kind, reset).await,
        Resource::Sitemap {
            index,
            gzip,
            entries,
        } => {
            let xml = site.render_sitemap(index, &entries);
            let (body, ct) = if gzip {
                (compress(&xml, Encoding::Gzip), "application/gzip")
            } else {
                (xml, "application/xml")
            };
            let mut r = Response::new(full(body));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
            r
        }
        Resource::NotFound => simple(404, "not found"),
    }
}

/// Spawns a task producing `chunks` into a streamed body.
pub(super) fn stream<F, Fut>(exact_len: Option<u64>, produce: F) -> ResponseBody
where
    F: FnOnce(mpsc::Sender<Bytes>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(produce(tx));
    ChannelBody { rx, exact_len }.boxed()
}

/// A site running in the background on loopback, for tests: start, read the address and the
/// ground truth, inspect what the server saw, stop.
#[derive(Debug)]
pub struct TestSite {
    addr: SocketAddr,
    site: Site,
    observer: Arc<Observer>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestSite {
    /// Binds `127.0.0.1:0` (and, with [`Addressing::Ips`], `127.0.0.2..` on the same port),
    /// keeps the full request log, and serves `cfg` until [`stop`](Self::stop) or drop.
    pub async fn start(cfg: SiteConfig) -> io::Result<Self> {
        let (listeners, port) = bind(&cfg, IpAddr::V4(Ipv4Addr::LOCALHOST), 0).await?;
        let site =
            Site::new(cfg, port).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let observer = Arc::new(Observer::new(true));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(
            listeners,
            site.clone(),
            Arc::clone(&observer),
            async {
                let _ = stopped.await;
            },
        ));
        Ok(Self {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            site,
            observer,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The listening address (host 0's, with [`Addressing::Ips`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The site model (URLs, ground truth).
    pub fn site(&self) -> &Site {
        &self.site
    }

    /// What the server observed.
    pub fn observer(&self) -> &Observer {
        &self.observer
    }

    /// Stops serving and waits for the listeners to close.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Binds the listeners a config needs: one on `ip:port`, or with [`Addressing::Ips`] one per
/// host on `127.0.0.{i+1}` sharing one port (retrying a few ports if one is taken).
pub async fn bind(cfg: &SiteConfig, ip: IpAddr, port: u16) -> io::Result<(Vec<TcpListener>, u16)> {
    match cfg.addressing {
        Addressing::Names => {
            let l = TcpListener::bind((ip, port)).await?;
            let port = l.local_addr()?.port();
            Ok((vec![l], port))
        }
        Addressing::Ips => {
            let mut last_err = None;
            for _ in 0..20 {
                let first = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 1), port)).await?;
                let chosen = first.local_addr()?.port();
                let mut all = vec![first];
                let mut ok = true;
                for h in 1..cfg.hosts {
                    match TcpListener::bind((Ipv4Addr::new(127, 0, 0, (h + 1) as u8), chosen)).await
                    {
                        Ok(l) => all.push(l),
                        Err(e) => {
                            last_err = Some(e);
                            ok = false;
                            break;
                        }
                    }
                }
                if ok {
                    return Ok((all, chosen));
                }
                if port != 0 {
                    break;
                }
            }
            Err(last_err.unwrap_or_else(|| io::Error::other("could not bind every host address")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_log_lines_are_json() {
        let path = std::env::temp_dir().join(format!("testsite-log-{}.jsonl", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let (observer, writer) = Observer::with_log_writer(file);
        let record = RequestRecord {
            at_ms: 1.5,
            host: "h0.test".into(),
            path: "/a?b=\"c\"".into(),
            concurrent: 2,
            status: 200,
            user_agent: "bot\\1\n".into(),
            version: None,
        };
        observer
            .sink
            .as_ref()
            .unwrap()
            .lock()
            .unwrap()
            .send(record)
            .unwrap();
        drop(observer);
        writer.join().unwrap().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "{\"at_ms\":1.500,\"host\":\"h0.test\",\"path\":\"/a?b=\\\"c\\\"\",\"concurrent\":2,\"status\":200,\"user_agent\":\"bot\\\\1\\u000a\"}\n"
        );
    }
}
