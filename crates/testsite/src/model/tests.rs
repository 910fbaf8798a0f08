//! The model's unit tests: paths, host names, determinism, robots policy, big pages.

use super::*;

fn site() -> Site {
    Site::new(SiteConfig::default(), 8080).unwrap()
}

#[test]
fn page_paths_round_trip() {
    let s = site();
    for p in 0..1000 {
        let t = s.page_target(p);
        assert_eq!(s.page_at(t.host, &t.path), Some(p), "{t:?}");
    }
    assert_eq!(s.page_at(0, "/s1/d2/p9999999.html"), None);
    assert_eq!(s.page_at(1, &s.page_path(10)), None, "wrong host");
}

#[test]
fn hosts_are_named_canonically() {
    let s = site();
    assert_eq!(s.host_id("h3.test:8080"), Some(3));
    assert_eq!(s.host_id("H3.TEST"), Some(3));
    assert_eq!(s.host_id("h03.test"), None);
    assert_eq!(s.host_id("h9.test"), None);
    assert_eq!(s.origin(2), "http://h2.test:8080");
    let ips = Site::new(
        SiteConfig {
            addressing: Addressing::Ips,
            ..SiteConfig::default()
        },
        80,
    )
    .unwrap();
    assert_eq!(ips.origin(2), "http://127.0.0.3");
    assert_eq!(ips.host_id("127.0.0.3:80"), Some(2));
    assert_eq!(ips.host_id("127.0.0.0"), None);
}

#[test]
fn generation_is_deterministic_and_seeded() {
    let a = site();
    let b = site();
    let c = Site::new(
        SiteConfig {
            seed: 2,
            ..SiteConfig::default()
        },
        8080,
    )
    .unwrap();
    for p in [0, 1, 17, 999] {
        assert_eq!(a.page_links(p), b.page_links(p));
    }
    assert!((0..50).any(|p| a.page_links(p) != c.page_links(p)));
}

#[test]
fn big_pages_are_spread_and_about_8_mb() {
    let s = Site::new(
        SiteConfig {
            pages: 10_000,
            big_pages: 100,
            ..SiteConfig::default()
        },
        8080,
    )
    .unwrap();
    let big: Vec<u64> = (0..10_000).filter(|&p| s.is_big(p)).collect();
    assert_eq!(big.len(), 100);
    assert_eq!(big[..2], [50, 150]);
    let t = s.page_target(50);
    let (body, _) = s.render_html(t.host, &t.path, &s.page_html(50));
    assert!(
        (7_500_000..8_500_000).contains(&body.len()),
        "{}",
        body.len()
    );
    assert_eq!(s.page_html(50).links, s.page_links(50), "the same links");
    assert!(!site().is_big(50), "none by default");
}

#[test]
fn robots_policy() {
    let s = site();
    assert!(s.is_disallowed(0, "/private/p7.html"));
    assert!(!s.is_disallowed(0, "/private/public/p17.html"));
    assert!(s.is_disallowed(0, "/files/report.pdf"));
    assert!(!s.is_disallowed(0, "/files/report.pdf?download=1"));
    assert!(
        !s.is_disallowed(1, "/private/p7.html"),
        "robots 404: allow all"
    );
    assert!(s.is_disallowed(2, "/"), "robots 500: disallow all");
    assert!(!s.is_disallowed(3, "/private/x"), "garbage: allow all");
}
