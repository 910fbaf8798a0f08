//! Slow clients cannot starve the crawl. `crawler serve` runs under `ulimit -n 1024` while a
//! paced crawl of the test site goes on; 1,100 connections open to its API, each sending half
//! a request head and then nothing. The API holds at most `service.max_connections` of them
//! (refusing the rest at once) and closes the held ones after `service.header_timeout_secs`;
//! meanwhile the crawl keeps fetching, `status.json` stays fresh, nothing logs "Too many open
//! files", and once the held connections are closed `/api/v1/status` answers within 2 s.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use testsite::{SiteConfig, TestSite};

use crate::util::{crawler, under_ulimit, CrawlDir};

/// Held connections.
const CLIENTS: usize = 1100;
/// The header timeout the service runs with here.
const HEADER_TIMEOUT_SECS: u64 = 3;

/// `status.json`'s pages and heartbeat time.
fn heartbeat(out: &std::path::Path) -> (u64, u64) {
    let text = std::fs::read_to_string(out.join("status.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    (
        v["pages"].as_u64().unwrap_or(0),
        v["updated_unix_ms"].as_u64().unwrap_or(0),
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `GET /api/v1/status` with a deadline: the status code, or why none came.
fn status_within(api: &str, limit: Duration) -> Result<u16, String> {
    let addr: std::net::SocketAddr = api.parse().unwrap();
    let mut s = TcpStream::connect_timeout(&addr, limit).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(
        format!("GET /api/v1/status HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&head);
    text[9..12].parse().map_err(|_| text.into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_half_requests_do_not_starve_the_crawl() {
    // This process holds the clients' ends: it needs more than 1,024 descriptors itself.
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let l = getrlimit(Resource::Nofile);
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: l.maximum,
                maximum: l.maximum,
            },
        );
    }
    let site = TestSite::start(SiteConfig {
        pages: 3000,
        hosts: 5,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    // A crawl paced to last well past the test (5 hosts at one fetch per 40 ms each).
    let dir = CrawlDir::new(
        "[crawl]\nstatus_secs = 1\nconcurrency = 16\n[politeness]\ndelay_ms = 40\n\
         max_per_host = 1\n[frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n",
    );
    let out = dir.out.clone();
    let mut serve = dir.serve();
    serve.args(["--seed", &site.site().seed_url()]).env(
        "CRAWLER_SERVICE_HEADER_TIMEOUT_SECS",
        HEADER_TIMEOUT_SECS.to_string(),
    );
    let mut child = under_ulimit("-n 1024", &serve)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (api, log) = crate::util::watch_serve(&mut child);
    let result = tokio::task::spawn_blocking({
        let api = api.clone();
        let out = out.clone();
        move || {
            // The crawl is under way.
            let deadline = Instant::now() + Duration::from_secs(30);
            while heartbeat(&out).0 < 50 {
                assert!(Instant::now() < deadline, "the crawl did not start");
                std::thread::sleep(Duration::from_millis(100));
            }
            // 1,100 half-sent requests, held.
            let addr: std::net::SocketAddr = api.parse().unwrap();
            let started = Instant::now();
            let mut held = Vec::with_capacity(CLIENTS);
            for _ in 0..CLIENTS {
                let mut s = TcpStream::connect(addr).expect("the kernel accepts the connection");
                let _ = s.write_all(
                    format!("GET /api/v1/status HTTP/1.1\r\nHost: {api}\r\nX-Slow: ").as_bytes(),
                );
                held.push(s);
            }
            // While they are held the crawl goes on and its heartbeat stays fresh: what
            // `crawler health` (the container's HEALTHCHECK) checks passes.
            let (pages_then, _) = heartbeat(&out);
            let mut checks = 0;
            while checks == 0 || started.elapsed() < Duration::from_secs(HEADER_TIMEOUT_SECS) {
                let health = crawler()
                    .args(["health", "--out"])
                    .arg(&out)
                    .output()
                    .unwrap();
                assert!(
                    health.status.success(),
                    "unhealthy while clients are held: {}",
                    String::from_utf8_lossy(&health.stderr)
                );
                checks += 1;
                std::thread::sleep(Duration::from_millis(250));
            }
            // The server closes every held connection: refused at once beyond the cap,
            // timed out within it. (Closed with the request unread, a socket may be reset
            // rather than ended.) The header timeout counts from when the server accepted
            // the connection, which on a loaded machine may be a while after the connect.
            for (i, s) in held.iter_mut().enumerate() {
                s.set_read_timeout(Some(Duration::from_secs(3 * HEADER_TIMEOUT_SECS)))
                    .unwrap();
                let mut sink = Vec::new();
                if let Err(e) = s.read_to_end(&mut sink) {
                    assert!(
                        !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ),
                        "held connection {i} is still open"
                    );
                }
            }
            // With them closed (this side still holding its ends), the API answers within 2 s.
            let answered = status_within(&api, Duration::from_secs(2));
            assert_eq!(
                answered,
                Ok(200),
                "the API once the held connections are closed"
            );
            drop(held);
            let (pages_now, at) = heartbeat(&out);
            assert!(
                pages_now > pages_then,
                "the crawl went on ({pages_then} -> {pages_now})"
            );
            // Fresh by `crawler health`'s rule (three heartbeats and 10 s).
            assert!(now_ms().saturating_sub(at) < 13_000);
        }
    })
    .await;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    let log = log.lock().unwrap().clone();
    result.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    assert!(status.success(), "{log}");
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(!log.contains("cannot write status.json"), "{log}");
    assert!(
        log.contains("service.max_connections"),
        "the cap was reached and said so: {log}"
    );
}
