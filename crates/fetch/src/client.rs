//! The HTTP client under [`Fetcher`](super::Fetcher): hyper-util's pooled client over
//! hyper-rustls and hyper-util's TCP connector, put together here rather than taken whole
//! from reqwest for one setting reqwest does not expose — the cap on a connection's read
//! buffer. hyper grows an HTTP/1 connection's buffer while reads fill it, up to about 400 KB;
//! on a fast link every connection of a crawl of large pages gets there and keeps it while
//! pooled (64 connections: 25.7 MB of a 54.8 MB heap peak, BENCHMARKS.md §4).
//! [`READ_BUFFER_MAX`] caps it.
//!
//! Also here, as reqwest had them: the resolver (fixed addresses from `fetch.resolve`; the
//! SSRF guard on every other name), the connect timeout (per address, and over TCP and TLS
//! together), TCP keepalive and user timeout, TLS (rustls with ring, the platform's verifier,
//! ALPN `h2` and `http/1.1`), credentials in a URL sent as basic auth, and which failures are
//! worth a retry. There are no redirects (each hop goes back through the frontier), no
//! content decoding (ours, after capture) and no proxy from the environment: a proxy resolves
//! names itself, past the SSRF guard (`Fetcher::new` warns when `HTTP_PROXY` and the like are
//! set).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::header::HeaderValue;
use hyper::Uri;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tower_service::Service;

use crate::guard::Guard;
use config::FetchSection;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The most a connection's read buffer grows to (hyper's default is about 400 KB). A read
/// of a large body on loopback fills any buffer. On the rust-doc crawl (64 connections,
/// 4 alternating runs each) the peak RSS was 65 / 67 / 71 / 83 MB with 32 / 64 / 128 /
/// 400 KB, in the same time within the runs' spread; 64 KB keeps reads large. hyper also
/// stops reading a response head once the buffer holds this much.
pub(crate) const READ_BUFFER_MAX: usize = 64 * 1024;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// TCP keepalive on every connection (a peer gone silent is noticed on a pooled one).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Unacknowledged data older than this fails the connection (Linux's `TCP_USER_TIMEOUT`).
#[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
const USER_TIMEOUT: Duration = Duration::from_secs(30);

/// The proxy variables reqwest (which this client replaced) read; they are not used.
pub(crate) const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// The client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// TLS could not be set up (the platform's certificate verifier).
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// `user_agent` is not a valid header value.
    #[error("user agent {0:?} is not a valid header value")]
    UserAgent(String),
}

/// The pooled client a [`Fetcher`](super::Fetcher) sends through.
pub(crate) type Http = hyper_util::client::legacy::Client<Connector, Empty<Bytes>>;

/// Builds the client for `cfg`: up to `max_idle_per_host` idle connections per host, names
/// resolved by `names`.
pub(crate) fn build(
    cfg: &FetchSection,
    max_idle_per_host: usize,
    names: Arc<Overrides>,
) -> Result<Http, ClientError> {
    let tcp = GuardedTcp { names };

    // ring builds without a C++ toolchain; the verifier is the platform's (on Linux the
    // system's roots, or `SSL_CERT_FILE`), as reqwest's was.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp);
    let connector = Connector {
        inner: https,
        limit: Duration::from_millis(cfg.connect_timeout_ms),
    };
    Ok(
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(max_idle_per_host)
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .http1_max_buf_size(READ_BUFFER_MAX)
            .build(connector),
    )
}

/// The TCP and TLS connector with one timeout over both (hyper-util's covers TCP only).
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    inner: hyper_rustls::HttpsConnector<GuardedTcp>,
    limit: Duration,
}

/// TCP connections through [`Overrides`]: hyper-util's connector asks its resolver for a
/// name alone, but the SSRF guard decides on the address *and port* connected to, so each
/// connection gets a connector whose resolver knows the URL's port ([`Resolver`]).
#[derive(Debug, Clone)]
pub(crate) struct GuardedTcp {
    names: Arc<Overrides>,
}

impl GuardedTcp {
    /// A TCP connector for one connection to `port`.
    fn connector(&self, port: u16) -> HttpConnector<Resolver> {
        let mut tcp = HttpConnector::new_with_resolver(Resolver {
            names: Arc::clone(&self.names),
            port,
        });
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        // The connect timeout is [`Connector`]'s, over TCP and TLS; hyper-util shares it
        // among a name's addresses (a dead first one leaves time for the next).
        tcp.set_connect_timeout(Some(self.names.connect_timeout));
        tcp.set_keepalive(Some(KEEPALIVE));
        tcp.set_keepalive_interval(Some(KEEPALIVE));
        tcp.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        tcp.set_tcp_user_timeout(Some(USER_TIMEOUT));
        tcp
    }
}

impl Service<Uri> for GuardedTcp {
    type Response = hyper_util::rt::TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        let mut tcp = self.connector(port);
        Box::pin(async move { tcp.call(uri).await.map_err(BoxError::from) })
    }
}

type Stream = hyper_rustls::MaybeHttpsStream<hyper_util::rt::TokioIo<tokio::net::TcpStream>>;

impl Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let limit = self.limit;
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(connected) => connected,
                Err(_) => Err(format!("connect timed out after {} ms", limit.as_millis()).into()),
            }
        })
    }
}

/// Takes the user name and password out of `url` and returns them as a basic `Authorization`
/// value (percent-decoded, as browsers and reqwest send them); `None` without credentials.
pub(crate) fn take_credentials(url: &mut url::Url) -> Option<HeaderValue> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut plain = decode(url.username());
    plain.push(b':');
    plain.extend(url.password().map(decode).unwrap_or_default());
    // Cannot fail: a URL with a user name or password has a host.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut value = HeaderValue::from_str(&format!("Basic {}", base64(&plain))).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Standard base64 with padding (RFC 4648 §4).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether a request that got no response is worth another try: the connection could not
/// be made (or timed out: it may be a moment's congestion), or an HTTP/2 server refused the
/// stream or was shutting down gracefully (`REFUSED_STREAM`, `GOAWAY` with `NO_ERROR`:
/// nothing was processed). Anything else (a malformed response, a refused certificate,
/// a reset mid-response) would fail the same way again.
pub(crate) fn worth_retrying(e: &hyper_util::client::legacy::Error) -> bool {
    if e.is_connect() {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        if let Some(h2) = c.downcast_ref::<h2::Error>() {
            let reason = h2.reason();
            if reason == Some(h2::Reason::REFUSED_STREAM)
                || (h2.is_go_away() && h2.is_remote() && reason == Some(h2::Reason::NO_ERROR))
            {
                return true;
            }
        }
        cause = c.source();
    }
    false
}

/// [`Overrides`] as the resolver of one connection's connector, to `port`.
#[derive(Debug, Clone)]
pub(crate) struct Resolver {
    names: Arc<Overrides>,
    port: u16,
}

impl Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let names = Arc::clone(&self.names);
        let host = name.as_str().to_ascii_lowercase();
        let port = self.port;
        Box::pin(async move { Ok(names.resolve(host, port).await?.into_iter()) })
    }
}

/// Resolves configured host patterns to fixed addresses, everything else through the system
/// resolver: the C library's `getaddrinfo`, or with the `hickory-dns` feature a pure-Rust DNS
/// client configured from `/etc/resolv.conf` and `/etc/hosts` (what a static binary needs).
#[derive(Debug)]
pub(crate) struct Overrides {
    rules: Vec<(String, IpAddr)>,
    /// Every name keeps only the socket addresses the SSRF guard allows.
    guard: Arc<Guard>,
    /// Each connection's connect timeout.
    connect_timeout: Duration,
    #[cfg(feature = "hickory-dns")]
    dns: std::sync::OnceLock<Result<hickory_resolver::TokioResolver, String>>,
}

impl Overrides {
    /// The names of `cfg.resolve` and the system's resolver, through `guard`.
    pub(crate) fn new(cfg: &FetchSection, guard: Arc<Guard>) -> Self {
        let rules = cfg
            .resolve
            .iter()
            .filter_map(|(p, ip)| Some((p.to_ascii_lowercase(), ip.parse().ok()?)))
            .collect();
        Self {
            rules,
            guard,
            connect_timeout: Duration::from_millis(cfg.connect_timeout_ms),
            #[cfg(feature = "hickory-dns")]
            dns: std::sync::OnceLock::new(),
        }
    }

    fn lookup(&self, host: &str) -> Option<IpAddr> {
        self.rules.iter().find_map(|(pattern, ip)| {
            let hit = match pattern.strip_prefix("*.") {
                Some(suffix) => host.ends_with(&format!(".{suffix}")) || host == suffix,
                None => host.eq_ignore_ascii_case(pattern),
            };
            hit.then_some(*ip)
        })
    }

    /// The addresses to connect to for `host` (lowercase) on `port`: a `fetch.resolve`
    /// override or the resolver's answer, either way through the SSRF guard.
    pub(crate) async fn resolve(
        &self,
        host: String,
        port: u16,
    ) -> Result<Vec<SocketAddr>, BoxError> {
        if let Some(ip) = self.lookup(&host) {
            return Ok(self.guard.filter(&host, port, [ip])?);
        }
        #[cfg(not(feature = "hickory-dns"))]
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
        #[cfg(feature = "hickory-dns")]
        let found: Vec<SocketAddr> = {
            let dns = self
                .dns
                .get_or_init(|| {
                    hickory_resolver::TokioResolver::builder_tokio()
                        .map(|b| b.build())
                        .map_err(|e| format!("DNS resolver configuration: {e}"))
                })
                .clone()?;
            dns.lookup_ip(host.as_str())
                .await?
                .iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect()
        };
        Ok(self
            .guard
            .filter(&host, port, found.into_iter().map(|a| a.ip()))?)
    }
}
