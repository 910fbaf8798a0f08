//! Credentials in URLs: sent with the request, never written out. A service crawls a site
//! seeded as `http://user:PASSWORD@127.0.0.1:PORT/` with WARC output and debug logs; its
//! pages link on (relative links keep the credentials) and to a page under another password
//! and a 404. The server sees the basic-auth header; the password (and its base64 form) is
//! in none of `pages.jsonl`, `stats.json`, `status.json`, the WARC files (but the pages'
//! own content, archived as received), the log, the event stream, `/metrics`,
//! `/api/v1/errors` or `/api/v1/status`, and the records show `user:****@`.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::{crawler, http};

const PASSWORD: &str = "s3cr3t-pa55";
const OTHER_PASSWORD: &str = "0ther-pa55";

/// A server that keeps every request head and answers a small site once `open` is set (the
/// test's event stream is connected, so it sees every record).
fn site(listener: TcpListener, heads: Arc<Mutex<Vec<String>>>, port: u16, open: Arc<AtomicBool>) {
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let heads = Arc::clone(&heads);
            let open = Arc::clone(&open);
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(30);
                while !open.load(Ordering::Acquire) && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                heads.lock().unwrap().push(text);
                let (status, body) = match path.as_str() {
                    "/" => (
                        "200 OK",
                        format!(
                            "<a href=\"/a\">a</a><a href=\"/missing\">m</a>\
                             <a href=\"http://other:{OTHER_PASSWORD}@127.0.0.1:{port}/b\">b</a>"
                        ),
                    ),
                    "/robots.txt" | "/missing" => ("404 Not Found", String::new()),
                    _ => ("200 OK", "<p>leaf</p>".to_owned()),
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
}

fn base64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &x)| n | u32::from(x) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

/// What the crawler wrote into the WARC files: every record but the content of responses,
/// which is the server's, archived as received (a page may quote a URL with credentials).
fn warc_text(dir: &std::path::Path) -> String {
    let mut all = String::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        let mut d = flate2::read::MultiGzDecoder::new(&bytes[..]);
        let mut out = Vec::new();
        d.read_to_end(&mut out).unwrap();
        all.push_str(&String::from_utf8_lossy(&out));
    }
    all.split("WARC/1.1\r\n")
        .map(|record| {
            if record.contains("WARC-Type: response") {
                record.split("\r\n\r\n").next().unwrap_or("").to_owned()
            } else {
                record.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_sent_and_never_written_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let open = Arc::new(AtomicBool::new(false));
    site(listener, Arc::clone(&heads), port, Arc::clone(&open));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seed = format!("http://user:{PASSWORD}@127.0.0.1:{port}/");
    let mut child = crawler()
        .args(["serve", "--listen", "127.0.0.1:0", "--warc", "--out"])
        .arg(&out)
        .args(["--seed", &seed])
        .env("RUST_LOG", "debug")
        .env("CRAWLER_POLITENESS_DELAY_MS", "0")
        .env("CRAWLER_CRAWL_SITEMAPS", "false")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (api, log) = crate::util::watch_serve(&mut child);
    // The event stream from the start (all records).
    let events = Arc::new(Mutex::new(String::new()));
    {
        let events = Arc::clone(&events);
        let api = api.clone();
        let open = Arc::clone(&open);
        std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(&api).unwrap();
            std::io::Write::write_all(
                &mut s,
                format!("GET /api/v1/events?records=all HTTP/1.1\r\nHost: {api}\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                events
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                // The stream's head arrived: it is subscribed, the site may answer.
                open.store(true, Ordering::Release);
            }
        });
    }
    // The crawl: the seed, /a, /missing, /b, each once.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut answers = String::new();
    loop {
        let status = http(&api, "GET", "/api/v1/status", None, &[]);
        let lines = std::fs::read_to_string(out.join("pages.jsonl"))
            .unwrap_or_default()
            .lines()
            .count();
        if status.contains("\"state\":\"idle\"") && lines >= 4 {
            answers.push_str(&status);
            break;
        }
        assert!(Instant::now() < deadline, "the crawl did not end: {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    answers.push_str(&http(&api, "GET", "/metrics", None, &[]));
    answers.push_str(&http(&api, "GET", "/api/v1/errors", None, &[]));
    answers.push_str(&http(&api, "GET", "/api/v1/hosts", None, &[]));
    std::thread::sleep(Duration::from_millis(1500));
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());

    // The request carried the credentials.
    let sent = heads.lock().unwrap().join("\n");
    assert!(
        sent.contains(&format!("Basic {}", base64(&format!("user:{PASSWORD}")))),
        "{sent}"
    );
    assert!(sent.contains(&format!(
        "Basic {}",
        base64(&format!("other:{OTHER_PASSWORD}"))
    )));

    let pages = std::fs::read_to_string(out.join("pages.jsonl")).unwrap();
    assert!(
        pages.contains(&format!("\"url\":\"http://user:****@127.0.0.1:{port}/a\"")),
        "{pages}"
    );
    assert!(pages.contains(&format!("http://other:****@127.0.0.1:{port}/b")));
    let outputs = [
        ("pages.jsonl", pages),
        (
            "stats.json",
            std::fs::read_to_string(out.join("stats.json")).unwrap(),
        ),
        (
            "status.json",
            std::fs::read_to_string(out.join("status.json")).unwrap(),
        ),
        ("WARC files", warc_text(&out.join("warc"))),
        ("log", log.lock().unwrap().clone()),
        ("event stream", events.lock().unwrap().clone()),
        ("API answers", answers),
    ];
    let secrets = [
        PASSWORD.to_owned(),
        OTHER_PASSWORD.to_owned(),
        base64(&format!("user:{PASSWORD}")),
        base64(&format!("other:{OTHER_PASSWORD}")),
    ];
    for (what, text) in &outputs {
        assert!(!text.is_empty(), "{what} is empty");
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{secret} in {what}:\n{text}"
            );
        }
    }
    assert!(outputs[3].1.contains("authorization: Basic ****"));
    assert!(
        outputs[5].1.contains("user:****@"),
        "the stream carried the records"
    );
}
