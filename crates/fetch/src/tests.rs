//! The fetch against raw HTTP answers from a server on loopback.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::READ_BUFFER_MAX;
use super::{Fetcher, Keep};
use config::CrawlConfig;

/// A server on 127.0.0.1 that reads each request's head, writes `response` and closes;
/// returns its URL.
async fn answering(response: Vec<u8>) -> String {
    answering_and_keeping(response, Default::default()).await
}

/// [`answering`], keeping each request's head in `heads`.
async fn answering_and_keeping(
    response: Vec<u8>,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let response = response.clone();
            let heads = std::sync::Arc::clone(&heads);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                heads
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = socket.write_all(&response).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

/// A fetcher for the loopback servers of these tests (the SSRF guard off: its own tests
/// are `guard.rs`'s and `tests/guard.rs`).
fn fetcher() -> Fetcher {
    let mut cfg = CrawlConfig::default().fetch;
    cfg.allow_private = true;
    Fetcher::new(&cfg, "crawler-test", 4).unwrap()
}

/// A response whose head holds one header of `len` bytes.
fn with_header_of(len: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-long: {}\r\ncontent-length: 2\r\n\
         connection: close\r\n\r\nok",
        "a".repeat(len)
    )
    .into_bytes()
}

#[tokio::test]
async fn a_long_response_head_is_read_and_a_huge_one_refused() {
    let fetcher = fetcher();
    let url = answering(with_header_of(READ_BUFFER_MAX - 1024)).await;
    let f = fetcher.fetch(&url, Keep::Always).await;
    assert_eq!(f.status, Some(200), "{:?}", f.error);
    assert_eq!(f.body, b"ok");
    // hyper stops reading a head once its buffer holds the cap (a read may overshoot it,
    // so a head somewhat past the cap can still be read whole; 1 MB cannot).
    let url = answering(with_header_of(1 << 20)).await;
    let f = fetcher.fetch(&url, Keep::Always).await;
    assert_eq!(f.status, None);
    let error = f.error_text().unwrap_or_default();
    assert!(error.contains("too large"), "{error}");
    assert!(!f.is_transient(), "{error}");
}

#[tokio::test]
async fn only_http_and_https_are_fetched() {
    let f = fetcher().fetch("ftp://127.0.0.1/file", Keep::Always).await;
    assert_eq!(f.status, None);
    assert!(f.error_text().unwrap_or_default().contains("\"ftp\""));
    assert!(!f.is_transient());
}

#[tokio::test]
async fn credentials_in_the_url_go_as_basic_auth_and_not_in_the_host() {
    let heads = std::sync::Arc::default();
    let url = answering_and_keeping(with_header_of(1), std::sync::Arc::clone(&heads)).await;
    let url = url.replace("http://", "http://us%20er:p%40ss@");
    let f = fetcher().fetch(&url, Keep::Always).await;
    assert_eq!(f.status, Some(200), "{:?}", f.error);
    let heads = heads.lock().unwrap();
    let head = heads[0].to_ascii_lowercase();
    // base64("us er:p@ss")
    assert!(
        head.contains("authorization: basic dxmgzxi6cebzcw==\r\n"),
        "{head}"
    );
    assert!(
        !head.contains("us%20er") && !head.contains("p%40ss"),
        "{head}"
    );
}

#[test]
fn base64_as_rfc_4648_gives_it() {
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(super::client::base64(plain.as_bytes()), coded, "{plain}");
    }
    assert_eq!(super::client::base64(&[0xff, 0xfe, 0x00]), "//4A");
}

#[test]
fn a_user_name_alone_is_sent_with_an_empty_password() {
    let mut url = url::Url::parse("https://user@example.test/a?b").unwrap();
    let auth = super::client::take_credentials(&mut url).unwrap();
    assert_eq!(auth, "Basic dXNlcjo=");
    assert!(auth.is_sensitive());
    assert_eq!(url.as_str(), "https://example.test/a?b");
    let mut plain = url::Url::parse("https://example.test/").unwrap();
    assert!(super::client::take_credentials(&mut plain).is_none());
}

#[tokio::test]
async fn a_revisit_sends_its_validators_and_takes_a_304_without_a_body() {
    let heads = std::sync::Arc::default();
    let url = answering_and_keeping(
        b"HTTP/1.1 304 Not Modified\r\netag: \"5c11a604-eba\"\r\nconnection: close\r\n\r\n"
            .to_vec(),
        std::sync::Arc::clone(&heads),
    )
    .await;
    let revisit = super::Revisit {
        etag: Some("\"5c11a604-eba\"".into()),
        last_modified: Some(1_700_000_000),
    };
    assert!(revisit.has_validators());
    let parsed = url::Url::parse(&url).unwrap();
    let f = fetcher()
        .fetch_pieces(
            &parsed,
            Keep::Html,
            1 << 20,
            false,
            None::<&mut super::Whole>,
            Some(&revisit),
        )
        .await;
    assert_eq!(f.status, Some(304), "{:?}", f.error);
    assert_eq!((f.bytes, f.body.len(), f.error_text()), (0, 0, None));
    assert_eq!(f.etag.as_deref(), Some("\"5c11a604-eba\""));
    let head = heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.contains("if-none-match: \"5c11a604-eba\"\r\n"),
        "{head}"
    );
    assert!(
        head.contains("if-modified-since: tue, 14 nov 2023 22:13:20 gmt\r\n"),
        "{head}"
    );
}

#[tokio::test]
async fn a_revisit_hashes_the_payload_as_received() {
    use flate2::{write::GzEncoder, Compression};
    use sha1::{Digest as _, Sha1};
    use std::io::Write as _;
    let page = b"<html><body><a href=\"/a\">a</a></body></html>".repeat(50);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&page).unwrap();
    let gz = gz.finish().unwrap();
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-encoding: gzip\r\n\
         last-modified: Tue, 14 Nov 2023 22:13:20 GMT\r\netag: W/\"v1\"\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    response.extend_from_slice(&gz);
    let url = url::Url::parse(&answering(response).await).unwrap();
    let fetch = |revisit: Option<super::Revisit>| {
        let url = url.clone();
        async move {
            fetcher()
                .fetch_pieces(
                    &url,
                    Keep::Html,
                    1 << 20,
                    false,
                    None::<&mut super::Whole>,
                    revisit.as_ref(),
                )
                .await
        }
    };
    let f = fetch(Some(super::Revisit::default())).await;
    assert_eq!(f.status, Some(200), "{:?}", f.error);
    assert_eq!(f.body, page, "the body is decoded as ever");
    // The digest is of the gzip'd bytes, as WARC-Payload-Digest is.
    let want: [u8; 20] = Sha1::digest(&gz).into();
    assert_eq!(f.digest, Some(want));
    assert_eq!(
        (f.etag.as_deref(), f.last_modified),
        (Some("W/\"v1\""), Some(1_700_000_000))
    );
    // A one-shot fetch measures nothing.
    let plain = fetch(None).await;
    assert_eq!(
        (plain.digest, plain.etag, plain.last_modified),
        (None, None, None)
    );
    assert_eq!(plain.body, page);
}
