//! The fetch against raw HTTP answers from a server on loopback.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::READ_BUFFER_MAX;
use super::{Fetcher, Keep};
use crate::config::CrawlConfig;

/// A server on 127.0.0.1 that reads each request's head, writes `response` and closes;
/// returns its URL.
async fn answering(response: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = socket.write_all(&response).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

fn fetcher() -> Fetcher {
    Fetcher::new(
        &CrawlConfig::default().fetch,
        "crawler-test",
        4,
        ["127.0.0.1".to_owned()],
    )
    .unwrap()
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
    let error = f.error.unwrap_or_default();
    assert!(error.contains("too large"), "{error}");
    assert!(!f.transient, "{error}");
}

#[tokio::test]
async fn only_http_and_https_are_fetched() {
    let f = fetcher().fetch("ftp://127.0.0.1/file", Keep::Always).await;
    assert_eq!(f.status, None);
    assert!(f.error.unwrap_or_default().contains("\"ftp\""));
    assert!(!f.transient);
}
