//! The server's behaviours, seen from a client: determinism, compression, politeness
//! statistics and each hostile mode.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use testsite::{Hostile, SiteConfig, TestSite};

/// Sends a GET and returns the raw response head and up to `limit` body bytes read within
/// `timeout` (a hostile body may never end).
fn fetch(
    addr: SocketAddr,
    host: &str,
    path: &str,
    extra: &str,
    limit: usize,
    timeout: Duration,
) -> (String, Vec<u8>, Duration) {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut first_byte = None;
    while raw.len() < limit && start.elapsed() < timeout {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                first_byte.get_or_insert_with(|| start.elapsed());
                raw.extend_from_slice(&buf[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(raw.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    (head, raw[split..].to_vec(), first_byte.unwrap_or(timeout))
}

/// Sends a GET and reads until the connection ends: the body bytes after the head, and the
/// error that ended it (`None` for a clean end of stream).
fn read_to_end_or_error(
    addr: SocketAddr,
    host: &str,
    path: &str,
) -> (usize, Option<std::io::ErrorKind>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let error = loop {
        match s.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e.kind()),
        }
    };
    let head = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(raw.len(), |p| p + 4);
    (raw.len() - head, error)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_config_same_bytes() {
    let a = TestSite::start(SiteConfig::default()).await.unwrap();
    let b = TestSite::start(SiteConfig::default()).await.unwrap();
    let (aa, ba) = (a.addr(), b.addr());
    let path = a.site().page_target(42).path;
    let (ha, pa) = (format!("h2.test:{}", aa.port()), path.clone());
    let (hb, pb) = (format!("h2.test:{}", ba.port()), path);
    let body_a =
        blocking(move || fetch(aa, &ha, &pa, "", usize::MAX, Duration::from_secs(5)).1).await;
    let body_b =
        blocking(move || fetch(ba, &hb, &pb, "", usize::MAX, Duration::from_secs(5)).1).await;
    // Only the port differs between the two sites' URLs.
    let norm = |b: Vec<u8>, port: u16| {
        String::from_utf8(b)
            .unwrap()
            .replace(&port.to_string(), "PORT")
    };
    assert!(!body_a.is_empty());
    assert_eq!(norm(body_a, aa.port()), norm(body_b, ba.port()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_pages_decode_to_the_plain_page() {
    let site = TestSite::start(SiteConfig::default()).await.unwrap();
    let addr = site.addr();
    let host = format!("h0.test:{}", addr.port());
    let (plain_head, plain, _) = {
        let host = host.clone();
        blocking(move || {
            fetch(
                addr,
                &host,
                "/compressed/gzip",
                "",
                usize::MAX,
                Duration::from_secs(5),
            )
        })
        .await
    };
    assert!(!plain_head.to_ascii_lowercase().contains("content-encoding"));
    let (head, gz, _) = {
        let host = host.clone();
        blocking(move || {
            fetch(
                addr,
                &host,
                "/compressed/gzip",
                "Accept-Encoding: gzip, br\r\n",
                usize::MAX,
                Duration::from_secs(5),
            )
        })
        .await
    };
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, plain);
    let (head, br, _) = blocking(move || {
        fetch(
            addr,
            &host,
            "/compressed/br",
            "Accept-Encoding: br\r\n",
            usize::MAX,
            Duration::from_secs(5),
        )
    })
    .await;
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: br"),
        "{head}"
    );
    let mut decoded = Vec::new();
    brotli::Decompressor::new(&br[..], 4096)
        .read_to_end(&mut decoded)
        .unwrap();
    assert!(String::from_utf8(decoded)
        .unwrap()
        .contains("/compressed/br-target"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_sees_concurrency_and_gaps_per_host() {
    let cfg = SiteConfig {
        hostile: Hostile {
            slow_first_byte: true,
            ..Hostile::default()
        },
        // Long enough for all three to overlap at the server on a busy machine.
        slow_secs: 3,
        ..SiteConfig::default()
    };
    let site = TestSite::start(cfg).await.unwrap();
    let addr = site.addr();
    // Three slow requests to h0 at once, one to h1.
    let mut tasks = Vec::new();
    for host in ["h0", "h0", "h0", "h1"] {
        let h = format!("{host}.test:{}", addr.port());
        let path = if host == "h0" {
            "/hostile/slow-first-byte"
        } else {
            "/"
        };
        tasks.push(tokio::task::spawn_blocking(move || {
            (
                path,
                fetch(addr, &h, path, "", usize::MAX, Duration::from_secs(10)),
            )
        }));
    }
    let mut slow = 0;
    for t in tasks {
        let (path, (head, body, first)) = t.await.unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        if path == "/hostile/slow-first-byte" {
            // The server sleeps `slow_secs` before its first byte, and the clock started
            // before the request was sent: a lower bound no slow machine can break.
            assert!(String::from_utf8_lossy(&body).contains("Finally"));
            assert!(
                first >= Duration::from_secs(3),
                "first byte after {first:?}"
            );
            slow += 1;
        }
    }
    assert_eq!(slow, 3);
    let stats = site.observer().host_stats();
    let h0 = &stats.iter().find(|(h, _)| h == "h0.test").unwrap().1;
    assert_eq!(h0.requests, 3);
    assert_eq!(h0.max_concurrent, 3);
    assert_eq!(h0.in_flight, 0);
    assert!(h0.min_gap.unwrap() < Duration::from_millis(2900));
    let log = site.observer().log();
    assert_eq!(log.len(), 4);
    assert!(log
        .iter()
        .filter(|r| r.host == "h0.test")
        .any(|r| r.concurrent >= 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_modes_behave_as_advertised() {
    let cfg = SiteConfig {
        hostile: Hostile::all(),
        slow_secs: 1,
        // Links written as they are, so the root page can be searched for them.
        plain_links: true,
        ..SiteConfig::default()
    };
    let site = TestSite::start(cfg).await.unwrap();
    let addr = site.addr();
    let host = format!("h0.test:{}", addr.port());
    // `secs` caps a read that does not end by itself (EOF or `limit`); generous except
    // where the test is about time (drip).
    let get = |path: &'static str, extra: &'static str, limit: usize, secs: u64| {
        let host = host.clone();
        blocking(move || fetch(addr, &host, path, extra, limit, Duration::from_secs(secs)))
    };

    // Root page links to every mode.
    let (_, root, _) = get("/", "", usize::MAX, 60).await;
    let root = String::from_utf8_lossy(&root);
    for path in [
        "slow-first-byte",
        "drip",
        "endless",
        "huge",
        "gzip-bomb",
        "many-links",
        "nested",
        "trap/x",
        "calendar?month=0",
        "huge-headers",
        "redirect-private",
        "redirect-loop",
        "redirect-spiral",
        "many-hosts",
        "retry-after-year",
        "reset",
    ] {
        assert!(
            root.contains(&format!("/hostile/{path}")),
            "root lacks {path}"
        );
    }

    // Drip: the page starts at once and then trickles (1,200 bytes over 10 minutes), so a
    // reader that gives up after 2 s has some of it and not all.
    let (head, body, _) = get("/hostile/drip", "", usize::MAX, 2).await;
    assert!(head.starts_with("HTTP/1.1 200"));
    let prefix = b"<!DOCTYPE html><title>Drip</title><p>";
    assert!(body.windows(prefix.len()).any(|w| w == prefix), "{body:?}");
    // Chunked: each byte comes with its chunk's framing (about 6 bytes more).
    assert!(body.len() < 8 * 1200, "{} bytes in 2 s", body.len());

    // Endless: keeps sending far past any sane page size.
    let (_, body, _) = get("/hostile/endless", "", 8 << 20, 60).await;
    assert!(body.len() >= 8 << 20);

    // Huge: announces 1 GiB.
    let (head, _, _) = get("/hostile/huge", "", 1 << 20, 60).await;
    assert!(
        head.to_ascii_lowercase()
            .contains("content-length: 1073741824"),
        "{head}"
    );

    // Gzip bomb: about 1 MiB on the wire, inflating far beyond 100 MiB.
    let (head, gz, _) = get("/hostile/gzip-bomb", "", usize::MAX, 60).await;
    assert!(head.to_ascii_lowercase().contains("content-encoding: gzip"));
    assert!(gz.len() < 8 << 20, "{} compressed bytes", gz.len());
    let mut inflated = 0u64;
    let mut dec = flate2::read::GzDecoder::new(&gz[..]);
    let mut buf = vec![0u8; 1 << 20];
    while inflated < 200 << 20 {
        match dec.read(&mut buf).unwrap() {
            0 => break,
            n => inflated += n as u64,
        }
    }
    assert!(inflated >= 200 << 20);

    // Many links: 100,000 anchors.
    let (_, body, _) = get("/hostile/many-links", "", usize::MAX, 60).await;
    assert_eq!(
        String::from_utf8_lossy(&body).matches("<a ").count(),
        100_000
    );

    // Huge headers.
    let (head, _, _) = get("/hostile/huge-headers", "", 1 << 20, 60).await;
    assert!(head.len() > 200_000, "{} header bytes", head.len());

    // Trap: every page links one level deeper; the calendar never ends.
    let (_, body, _) = get("/hostile/trap/x/x", "", usize::MAX, 60).await;
    assert!(String::from_utf8_lossy(&body).contains("trap/x/x/x"));
    let (_, body, _) = get("/hostile/calendar?month=41", "", usize::MAX, 60).await;
    assert!(String::from_utf8_lossy(&body).contains("month=42"));

    // Slow first byte.
    let (_, _, first) = get("/hostile/slow-first-byte", "", usize::MAX, 60).await;
    assert!(first >= Duration::from_millis(900), "{first:?}");

    // Redirects: a chain into the cloud metadata address, a loop between hosts 0 and 1, and
    // a spiral of new URLs alternating between them.
    let port = addr.port();
    let location = |head: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix("location: "))
            .unwrap_or_else(|| panic!("no location in {head}"))
            .trim()
            .to_owned()
    };
    let (head, _, _) = get("/hostile/redirect-private", "", usize::MAX, 60).await;
    assert_eq!(location(&head), "/hostile/redirect-private/next");
    let (head, _, _) = get("/hostile/redirect-private/next", "", usize::MAX, 60).await;
    assert_eq!(location(&head), "http://169.254.169.254/latest/meta-data/");
    let (head, _, _) = get("/hostile/redirect-loop", "", usize::MAX, 60).await;
    assert_eq!(
        location(&head),
        format!("http://h1.test:{port}/hostile/redirect-loop")
    );
    let on_host_1 = |path: &'static str| {
        let host = format!("h1.test:{port}");
        blocking(move || fetch(addr, &host, path, "", usize::MAX, Duration::from_secs(60)))
    };
    let (head, _, _) = on_host_1("/hostile/redirect-loop").await;
    assert_eq!(
        location(&head),
        format!("http://h0.test:{port}/hostile/redirect-loop")
    );
    let (head, _, _) = get("/hostile/redirect-spiral", "", usize::MAX, 60).await;
    assert_eq!(
        location(&head),
        format!("http://h1.test:{port}/hostile/redirect-spiral/1")
    );
    let (head, _, _) = on_host_1("/hostile/redirect-spiral/1").await;
    assert_eq!(
        location(&head),
        format!("http://h0.test:{port}/hostile/redirect-spiral/2")
    );

    // 10,000 distinct hosts on one page, each answering 404.
    let (_, body, _) = get("/hostile/many-hosts", "", usize::MAX, 60).await;
    let body = String::from_utf8_lossy(&body);
    let hosts: std::collections::HashSet<&str> = body
        .split("//")
        .skip(1)
        .filter_map(|s| s.split(['/', ':', '"']).next())
        .filter(|h| h.ends_with(".test"))
        .collect();
    assert_eq!(hosts.len(), testsite::MANY_HOSTS as usize, "{body:.300}");
    let (head, _, _) = blocking(move || {
        fetch(
            addr,
            &format!("h9999.test:{port}"),
            "/",
            "",
            usize::MAX,
            Duration::from_secs(60),
        )
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    // robots.txt of 100 MiB: the rules first, streamed (a reader may stop at any point).
    let (head, body, _) = get("/robots.txt", "", 1 << 20, 60).await;
    let length: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(length > 100 << 20, "{head}");
    assert!(String::from_utf8_lossy(&body).contains("Disallow: /private/"));

    // A year-long Retry-After.
    let (head, _, _) = get("/hostile/retry-after-year", "", usize::MAX, 60).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.contains("retry-after: 31536000"), "{head}");

    // A reset: part of the promised 1 MiB, then ECONNRESET (not a clean end of stream).
    let (read, error) =
        blocking(move || read_to_end_or_error(addr, &format!("h0.test:{port}"), "/hostile/reset"))
            .await;
    assert_eq!(
        error,
        Some(std::io::ErrorKind::ConnectionReset),
        "{read} bytes"
    );
    assert!(read < 1 << 20, "{read} bytes");
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_then_success_and_unknown_hosts() {
    let site = TestSite::start(SiteConfig::default()).await.unwrap();
    let addr = site.addr();
    let host = format!("h1.test:{}", addr.port());
    for (path, first) in [("/flaky", "500"), ("/busy", "503"), ("/slow-down", "429")] {
        let h = host.clone();
        let (head1, _, _) =
            blocking(move || fetch(addr, &h, path, "", usize::MAX, Duration::from_secs(5))).await;
        assert!(head1.starts_with(&format!("HTTP/1.1 {first}")), "{head1}");
        if first != "500" {
            assert!(
                head1.to_ascii_lowercase().contains("retry-after: 1"),
                "{head1}"
            );
        }
        let h = host.clone();
        let (head2, _, _) =
            blocking(move || fetch(addr, &h, path, "", usize::MAX, Duration::from_secs(5))).await;
        assert!(head2.starts_with("HTTP/1.1 200"), "{head2}");
    }
    let (head, _, _) = blocking(move || {
        fetch(
            addr,
            "evil.example",
            "/",
            "",
            usize::MAX,
            Duration::from_secs(5),
        )
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 404"));
    // %7E and ~ name the same page.
    let target = site.site().page_target(14);
    let path = target.path.replace('~', "%7e");
    assert!(path.contains("%7e"), "{path}");
    let h = format!("h{}.test:{}", target.host, addr.port());
    let (head, _, _) =
        blocking(move || fetch(addr, &h, &path, "", usize::MAX, Duration::from_secs(5))).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}
