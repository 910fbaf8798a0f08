//! The SSRF guard end to end: a page on 127.0.0.1 (the seed's host, so allowed) links to
//! other loopback addresses, a name that resolves to loopback, a private and a link-local
//! address, and redirects to another loopback address; none of them is requested (the
//! servers' own log says so) and each has a record saying it was blocked. With
//! `fetch.allow_private` the loopback ones are fetched, so the test can fail.
//!
//! The guard decides on socket addresses: a trap listener on another port of the seed's
//! address is never contacted — not through an IP literal, not through a name that a
//! `fetch.resolve` wildcard points there, not as a seed added over the API — while another
//! name on the seed's own address and port is crawled.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::crawler;

type Log = Arc<Mutex<Vec<(String, String)>>>;

type Pages = Arc<dyn Fn(&str) -> (&'static str, String, String) + Send + Sync>;

/// A tiny HTTP server on `listener`: logs (local address, path) and answers from `page`.
fn serve(listener: TcpListener, log: Log, port: u16, outside: bool) {
    serve_pages(
        listener,
        log,
        Arc::new(move |path| page(path, port, outside)),
    );
}

/// A tiny HTTP server on `listener`: logs (local address, path) and answers from `pages`.
fn serve_pages(listener: TcpListener, log: Log, pages: Pages) {
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let local = s
                .local_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default();
            let log = Arc::clone(&log);
            let pages = Arc::clone(&pages);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                log.lock().unwrap().push((local, path.clone()));
                let (status, extra, body) = pages(&path);
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n{extra}\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
}

/// The pages; `outside` adds the links that leave loopback (served only while the guard is
/// on: with it off they would be fetched for real).
fn page(path: &str, port: u16, outside: bool) -> (&'static str, String, String) {
    match path {
        "/" => {
            let mut body = format!(
                "<a href=\"http://127.0.0.2:{port}/x\">x</a>\
                 <a href=\"http://[::1]:{port}/y\">y</a>\
                 <a href=\"http://localhost:{port}/z\">z</a>\
                 <a href=\"/r\">r</a><a href=\"/ok\">ok</a>"
            );
            if outside {
                body.push_str(
                    "<a href=\"http://10.0.0.5/admin\">a</a>\
                     <a href=\"http://169.254.169.254/latest/meta-data/\">m</a>",
                );
            }
            ("200 OK", String::new(), body)
        }
        "/r" => (
            "302 Found",
            format!("Location: http://127.0.0.2:{port}/redirected\r\n"),
            String::new(),
        ),
        "/robots.txt" => ("404 Not Found", String::new(), String::new()),
        _ => ("200 OK", String::new(), "<p>leaf</p>".into()),
    }
}

async fn crawl(allow_private: bool) -> (Vec<(String, String)>, Vec<serde_json::Value>) {
    let first = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = first.local_addr().unwrap().port();
    let log: Log = Arc::default();
    let outside = !allow_private;
    serve(first, Arc::clone(&log), port, outside);
    for other in ["127.0.0.2", "[::1]"] {
        let addr: SocketAddr = format!("{other}:{port}").parse().unwrap();
        if let Ok(l) = TcpListener::bind(addr).await {
            serve(l, Arc::clone(&log), port, outside);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("crawler.toml");
    std::fs::write(
        &config,
        format!(
            "[crawl]\nconcurrency = 4\n[politeness]\ndelay_ms = 0\n[fetch]\nmax_retries = 0\n\
             allow_private = {allow_private}\n[frontier]\nscope = \"any\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut cmd = crawler();
    cmd.args(["crawl", "--config", config.to_str().unwrap(), "--out"])
        .arg(&out)
        .args(["--seed", &format!("http://127.0.0.1:{port}/")]);
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pages = std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen = log.lock().unwrap().clone();
    (seen, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_redirects_into_private_networks_are_not_fetched() {
    // Before any crawl: the addresses outside loopback are refused by the very check the
    // fetcher makes, so a broken guard fails here instead of sending a packet there.
    let guard = engine::fetch::guard::Guard::new(false);
    guard.allow_origin(&url::Url::parse("http://127.0.0.1:8080/").unwrap());
    for outside in [
        "http://10.0.0.5/admin",
        "http://169.254.169.254/latest/meta-data/",
    ] {
        assert!(
            guard.check_url(&url::Url::parse(outside).unwrap()).is_err(),
            "{outside} would be fetched"
        );
    }

    let (seen, pages) = crawl(false).await;
    let mut requested: Vec<String> = seen
        .iter()
        .map(|(ip, path)| format!("{ip}{path}"))
        .collect();
    requested.sort();
    // `localhost` on the seed's port is the seed's socket address (127.0.0.1:port): it is
    // the same server, so its robots.txt, sitemap and page are fetched; `[::1]` is not.
    assert_eq!(
        requested,
        [
            "127.0.0.1/",
            "127.0.0.1/ok",
            "127.0.0.1/r",
            "127.0.0.1/robots.txt",
            "127.0.0.1/robots.txt",
            "127.0.0.1/sitemap.xml",
            "127.0.0.1/sitemap.xml",
            "127.0.0.1/z",
        ],
        "only the seed's socket address was requested"
    );
    let error_of = |url: &str| {
        pages
            .iter()
            .find(|p| p["url"] == url)
            .unwrap_or_else(|| panic!("no record of {url}: {pages:?}"))["error"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let seed = pages
        .iter()
        .find(|p| p["depth"] == 0)
        .and_then(|p| url::Url::parse(p["url"].as_str()?).ok())
        .expect("the seed's record");
    let port = seed.port().unwrap();
    for (url, ip) in [
        (format!("http://127.0.0.2:{port}/x"), "127.0.0.2"),
        (format!("http://[::1]:{port}/y"), "[::1]"),
        ("http://10.0.0.5/admin".to_owned(), "10.0.0.5"),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "169.254.169.254",
        ),
        (format!("http://127.0.0.2:{port}/redirected"), "127.0.0.2"),
    ] {
        let error = error_of(&url);
        assert!(
            error.contains(&format!("blocked address {ip}"))
                && error.contains("(fetch.allow_private)"),
            "{url}: {error}"
        );
        // IP literals are refused before anything else.
        assert!(error.starts_with("blocked address"), "{url}: {error}");
    }

    // With the guard off (and no link leaving loopback), the other loopback hosts are
    // fetched: the checks above can fail.
    let (seen, _) = crawl(true).await;
    assert!(
        seen.iter()
            .any(|(ip, path)| ip == "127.0.0.2" && path == "/x"),
        "{seen:?}"
    );
}

/// A listener that answers nothing and counts the connections it accepted.
fn trap(listener: TcpListener) -> Arc<std::sync::atomic::AtomicUsize> {
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(s);
        }
    });
    hits
}

fn records(out: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn error_of(pages: &[serde_json::Value], url: &str) -> String {
    pages
        .iter()
        .find(|p| p["url"] == url)
        .unwrap_or_else(|| panic!("no record of {url}: {pages:?}"))["error"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_port_of_the_seeds_address_is_never_contacted() {
    let trap_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let trap_port = trap_listener.local_addr().unwrap().port();
    let hits = trap(trap_listener);
    let site = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = site.local_addr().unwrap().port();
    let log: Log = Arc::default();
    serve_pages(
        site,
        Arc::clone(&log),
        Arc::new(move |path: &str| match path {
            "/" => (
                "200 OK",
                String::new(),
                format!(
                    "<a href=\"http://127.0.0.1:{trap_port}/secret\">literal</a>\
                     <a href=\"http://x.test:{trap_port}/secret\">wildcard</a>\
                     <a href=\"http://h0.test:{trap_port}/\">seed name, other port</a>\
                     <a href=\"http://h1.test:{port}/ok\">same socket, other name</a>\
                     <a href=\"/r\">redirect</a>"
                ),
            ),
            "/r" => (
                "302 Found",
                format!("Location: http://127.0.0.1:{trap_port}/redirected\r\n"),
                String::new(),
            ),
            "/robots.txt" => ("404 Not Found", String::new(), String::new()),
            _ => ("200 OK", String::new(), "<p>leaf</p>".into()),
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("crawler.toml");
    std::fs::write(
        &config,
        "[crawl]\nconcurrency = 4\nsitemaps = false\n[politeness]\ndelay_ms = 0\n\
         [fetch]\nmax_retries = 0\n[frontier]\nscope = \"any\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut cmd = crawler();
    cmd.args(["crawl", "--config", config.to_str().unwrap(), "--out"])
        .arg(&out)
        .args(["--seed", &format!("http://h0.test:{port}/")])
        .args(["--resolve", "*.test=127.0.0.1"]);
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pages = records(&out);
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{pages:?}"
    );
    let blocked = format!("blocked address 127.0.0.1:{trap_port} (fetch.allow_private)");
    for url in [
        format!("http://127.0.0.1:{trap_port}/secret"),
        format!("http://127.0.0.1:{trap_port}/redirected"),
    ] {
        assert_eq!(error_of(&pages, &url), blocked, "{url}");
    }
    // Names are refused when they resolve: at their robots.txt, which every URL of the host
    // then reports.
    for url in [
        format!("http://x.test:{trap_port}/secret"),
        format!("http://h0.test:{trap_port}/"),
    ] {
        let error = error_of(&pages, &url);
        assert!(error.contains(&blocked), "{url}: {error}");
    }
    let ok = format!("http://h1.test:{port}/ok");
    let record = pages.iter().find(|p| p["url"] == ok.as_str()).unwrap();
    assert_eq!(record["status"], 200, "{record}");
    assert!(log.lock().unwrap().iter().any(|(_, path)| path == "/ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_added_over_the_api_follows_the_guard() {
    let trap_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let trap_port = trap_listener.local_addr().unwrap().port();
    let hits = trap(trap_listener);
    let site = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = site.local_addr().unwrap().port();
    serve(site, Log::default(), port, false);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = crawler()
        .args(["serve", "--listen", "127.0.0.1:0", "--out"])
        .arg(&out)
        .args(["--seed", &format!("http://127.0.0.1:{port}/ok")])
        .env("RUST_LOG", "warn")
        .env("CRAWLER_POLITENESS_DELAY_MS", "0")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let api = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines.next().expect("serve printed its address").unwrap();
            if let Some(rest) = line.split("http://").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        addr
    })
    .await
    .unwrap();
    let trap_url = format!("http://127.0.0.1:{trap_port}/");
    let body = serde_json::json!({ "urls": [trap_url] }).to_string();
    let answer = crate::util::http(&api, "POST", "/api/v1/seeds", Some(&body), &[]);
    assert!(answer.contains("admitted"), "{answer}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let error = loop {
        if let Some(p) = records(&out)
            .into_iter()
            .find(|p| p["url"] == trap_url.as_str())
        {
            break p["error"].as_str().unwrap_or("").to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no record of {trap_url}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        error,
        format!("blocked address 127.0.0.1:{trap_port} (fetch.allow_private)")
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}
