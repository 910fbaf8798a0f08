//! The fetch over TLS, end to end: `crawler crawl` of an HTTPS server on loopback whose
//! certificate a test CA signed (`tests/tls/`, made by its `make.sh`). With that CA trusted
//! (`SSL_CERT_FILE`) the pages are fetched, over HTTP/2 as ALPN offers it; with another CA
//! trusted instead, the seed cannot be fetched and the crawler says the certificate's issuer
//! is unknown.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::crawl::read_pages;
use crate::util::{crawler, stderr};

fn tls_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls")
}

/// What the server saw: each request's path and HTTP version.
type Seen = Arc<Mutex<Vec<(String, Version)>>>;

/// An HTTPS server for `localhost` on 127.0.0.1 (HTTP/2 and HTTP/1.1): `/` links `/second`;
/// everything else but `/second` is 404. Returns its port.
async fn serve(seen: Seen) -> u16 {
    let dir = tls_dir();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join("localhost.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("localhost.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to serve.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let page = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let path = request.uri().path().to_owned();
                    seen.lock().unwrap().push((path.clone(), request.version()));
                    let (status, body) = match path.as_str() {
                        "/" => (200, "<a href=\"/second\">second</a>"),
                        "/second" => (200, "<p>the end</p>"),
                        _ => (404, "not here"),
                    };
                    let response = Response::builder()
                        .status(status)
                        .header("content-type", "text/html")
                        .body(Full::new(Bytes::from_static(body.as_bytes())))
                        .unwrap();
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), page)
                    .await;
            });
        }
    });
    port
}

/// Crawls `https://localhost:{port}/` trusting only the CA in `ca` (a file in `tests/tls/`).
async fn crawl(port: u16, ca: &str) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cmd = crawler();
    cmd.args(["crawl", "--seed", &format!("https://localhost:{port}/")])
        .args([
            "--out",
            out.to_str().unwrap(),
            "--resolve",
            "localhost=127.0.0.1",
        ])
        .env("SSL_CERT_FILE", tls_dir().join(ca))
        .env_remove("SSL_CERT_DIR")
        .env("CRAWLER_FETCH_MAX_RETRIES", "0")
        .env("RUST_LOG", "warn");
    let output = crate::util::output(cmd).await;
    (dir, output)
}

fn record<'a>(pages: &'a [serde_json::Value], url: &str) -> &'a serde_json::Value {
    pages
        .iter()
        .find(|p| p["url"] == url)
        .unwrap_or_else(|| panic!("no record for {url} in {pages:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_is_fetched_over_http2_when_the_certificate_is_trusted() {
    let seen = Seen::default();
    let port = serve(Arc::clone(&seen)).await;
    let (dir, output) = crawl(port, "ca.pem").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let pages = read_pages(&dir.path().join("out"));
    for path in ["/", "/second"] {
        let r = record(&pages, &format!("https://localhost:{port}{path}"));
        assert_eq!(r["status"], 200, "{r}");
    }
    let seen = seen.lock().unwrap();
    for path in ["/", "/second"] {
        assert!(
            seen.contains(&(path.to_owned(), Version::HTTP_2)),
            "{path} not fetched over HTTP/2: {seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_no_trusted_ca_signed_is_refused() {
    let seen = Seen::default();
    let port = serve(Arc::clone(&seen)).await;
    let (_dir, output) = crawl(port, "other-ca.pem").await;
    assert!(!output.status.success());
    let said = stderr(&output);
    assert!(
        said.lines()
            .any(|l| l.starts_with("crawler:") && l.contains("UnknownIssuer")),
        "{said}"
    );
    let seen = seen.lock().unwrap();
    assert!(seen.is_empty(), "{seen:?}");
}
