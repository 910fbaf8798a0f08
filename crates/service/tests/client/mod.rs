//! A minimal HTTP/1.1 client for the API tests: one request per connection, chunked bodies
//! decoded, and `Api`, the calls the tests make.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP/1.1 request with `Connection: close`; the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    // A state change is JSON even without a body (pause, resume), as the API requires.
    let body = body.or((method != "GET" && method != "HEAD").then_some(""));
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut raw))
        .await
        .expect("response in time")
        .unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 4 + size..];
    }
}

pub struct Api {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

impl Api {
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = Vec::new();
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        let text = body.map(|b| b.to_string());
        let (status, _, body) = http(
            self.addr,
            method,
            path,
            "127.0.0.1",
            &headers,
            text.as_deref(),
        )
        .await;
        let v = serde_json::from_slice(&body)
            .unwrap_or(Value::String(String::from_utf8_lossy(&body).into_owned()));
        (status, v)
    }

    pub async fn status(&self) -> Value {
        self.call("GET", "/api/v1/status", None).await.1
    }

    /// Waits until the crawl is idle with at least `pages` records.
    pub async fn idle_with(&self, pages: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let s = self.status().await;
            if s["state"] == "idle" && s["pages"].as_u64().unwrap() >= pages {
                return s;
            }
            assert!(Instant::now() < deadline, "not idle in time: {s}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
