//! The changing site seen from a client: validators that follow the version, 304s to
//! conditional requests (If-None-Match deciding before If-Modified-Since), a changed page with
//! its new leaf link, and the request log saying which version each answer gave.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime};

use testsite::{Changing, Site, SiteConfig, TestSite};

/// A GET with extra header lines: (status, headers in lower case, body).
fn get(addr: SocketAddr, host: &str, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let header = |name: &str| {
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    Reply {
        status,
        etag: header("etag"),
        last_modified: header("last-modified"),
        body: body.to_owned(),
    }
}

#[derive(Debug)]
struct Reply {
    status: u16,
    etag: Option<String>,
    last_modified: Option<String>,
    body: String,
}

/// Seconds since the site started.
fn site_time(site: &TestSite) -> f64 {
    SystemTime::now()
        .duration_since(site.observer().started_at())
        .unwrap()
        .as_secs_f64()
}

/// A non-root page with `p % 10 == digit` whose first change is after `after` seconds (or,
/// with `first`, the earliest such page changing after `after`).
fn page_with(site: &Site, digit: u64, after: f64, first: bool) -> u64 {
    let candidates =
        (5..site.config().pages).filter(|p| p % 10 == digit && !site.page_disallowed(*p));
    let later = candidates.filter(|&p| site.change_time(p, 1) > after);
    if first {
        later
            .min_by(|&a, &b| site.change_time(a, 1).total_cmp(&site.change_time(b, 1)))
            .unwrap()
    } else {
        later
            .max_by(|&a, &b| site.change_time(a, 1).total_cmp(&site.change_time(b, 1)))
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_requests_get_304_until_the_page_changes() {
    let site = TestSite::start(SiteConfig {
        pages: 400,
        changing: Some(Changing {
            day_secs: 10.0,
            min_per_day: 0.05,
            max_per_day: 5.0,
        }),
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let model = site.site().clone();
    let addr = site.addr();
    tokio::task::spawn_blocking({
        let site_time = site_time(&site);
        move || {
            let at = |p: u64| {
                let t = model.page_target(p);
                (model.host_name(t.host), t.path)
            };
            // A page that keeps version 0 for the whole test (its first change is minutes away).
            let stable = page_with(&model, 3, site_time + 120.0, false);
            let (host, path) = at(stable);
            let first = get(addr, &host, &path, &[]);
            assert_eq!(first.status, 200);
            assert!(first.body.contains("Version 0"), "{}", first.body);
            let etag = first.etag.clone().expect("an ETag");
            let lm = first.last_modified.clone().expect("a Last-Modified");
            assert_eq!(etag, model.etag(stable, 0));
            let r = get(addr, &host, &path, &[("If-None-Match", &etag)]);
            assert_eq!((r.status, r.body.as_str()), (304, ""));
            assert_eq!(r.etag.as_deref(), Some(etag.as_str()));
            let weak = format!("W/{etag}");
            assert_eq!(
                get(addr, &host, &path, &[("If-None-Match", &weak)]).status,
                304
            );
            assert_eq!(
                get(addr, &host, &path, &[("If-Modified-Since", &lm)]).status,
                304
            );
            // If-None-Match decides alone: another tag is a 200, whatever the date says.
            let r = get(
                addr,
                &host,
                &path,
                &[("If-None-Match", "\"other\""), ("If-Modified-Since", &lm)],
            );
            assert_eq!(r.status, 200);

            // Last-Modified only; neither.
            let (host, path) = at(page_with(&model, 6, site_time + 120.0, false));
            let r = get(addr, &host, &path, &[]);
            assert!(r.etag.is_none() && r.last_modified.is_some(), "{r:?}");
            let lm = r.last_modified.unwrap();
            assert_eq!(
                get(addr, &host, &path, &[("If-Modified-Since", &lm)]).status,
                304
            );
            let (host, path) = at(page_with(&model, 9, site_time + 120.0, false));
            let r = get(addr, &host, &path, &[]);
            assert!(r.etag.is_none() && r.last_modified.is_none(), "{r:?}");
            assert_eq!(
                get(addr, &host, &path, &[("If-Modified-Since", &lm)]).status,
                200
            );

            // A page about to change: its old tag gets the new version, with its leaf.
            let soon = page_with(&model, 1, site_time + 1.0, true);
            let (host, path) = at(soon);
            let old = get(addr, &host, &path, &[]).etag.unwrap();
            let wait = model.change_time(soon, 1) - site_time + 0.5;
            assert!(wait < 30.0, "the earliest change is {wait} s away");
            std::thread::sleep(Duration::from_secs_f64(wait.max(0.0)));
            let r = get(addr, &host, &path, &[("If-None-Match", &old)]);
            assert_eq!(r.status, 200, "{r:?}");
            assert_ne!(r.etag.as_deref(), Some(old.as_str()));
            let leaf = format!("/c/p{soon}-v1.html");
            assert!(r.body.contains("Version ") && !r.body.contains("Version 0"));
            assert!(r.body.contains(&format!("p{soon}-v")), "{}", r.body);
            assert_eq!(get(addr, &host, &leaf, &[]).status, 200);
        }
    })
    .await
    .unwrap();
    // The log gives each page answer's version: 0 for the stable pages, more for the changed.
    let log = site.observer().log();
    let versions: Vec<Option<u64>> = log.iter().map(|r| r.version).collect();
    assert!(log
        .iter()
        .filter(|r| !r.path.starts_with("/c/"))
        .all(|r| r.version.is_some()));
    assert!(
        log.iter().any(|r| r.version.is_some_and(|v| v >= 1)),
        "{versions:?}"
    );
    assert!(log
        .iter()
        .filter(|r| r.status == 304)
        .all(|r| r.version == Some(0)));
    site.stop().await;
}
