//! The API tried as a hostile user would: a page on another site (a cross-site form, a
//! rebound name), malformed bodies, out-of-range values, unknown routes and methods, a flood
//! of event streams. Every refusal is JSON, and nothing refused changes the crawl.

use serde_json::{json, Value};
use testsite::{SiteConfig, TestSite};

use super::client::http;
use super::{start, start_with};

async fn small_site() -> TestSite {
    TestSite::start(SiteConfig {
        pages: 20,
        hosts: 1,
        ..SiteConfig::default()
    })
    .await
    .unwrap()
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_site_cannot_drive_the_api() {
    let site = small_site().await;
    let svc = start(&site, None, "").await;
    let addr = svc.api.addr;
    let own = format!("127.0.0.1:{}", addr.port());

    // A cross-site HTML form: form-encoded, with the attacker's Origin.
    let (code, _, body) = http(
        addr,
        "POST",
        "/api/v1/pause",
        &own,
        &[
            ("Origin", "http://attacker.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        None,
    )
    .await;
    assert_eq!(code, 403, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json_of(&body)["field"], "Origin");
    // The same without an Origin (an old browser, a form from a file): not JSON, refused.
    let (code, _, body) = raw_post(addr, &own, "/api/v1/pause", "text/plain", "x=1").await;
    assert_eq!(code, 415, "{}", String::from_utf8_lossy(&body));
    // JSON from another origin (what fetch() would send after a preflight we never grant).
    let (code, _, _) = http(
        addr,
        "POST",
        "/api/v1/seeds",
        &own,
        &[("Origin", "http://attacker.example")],
        Some(r#"{"urls": ["http://h0.test/"]}"#),
    )
    .await;
    assert_eq!(code, 403);
    let (code, _, _) = http(
        addr,
        "POST",
        "/api/v1/pause",
        &own,
        &[("Sec-Fetch-Site", "cross-site")],
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        svc.api.status().await["state"],
        "idle",
        "nothing was paused"
    );

    // DNS rebinding: the attacker's name pointed at this machine.
    for host in [
        "attacker.example",
        "attacker.example:8700",
        "localhost.attacker.example",
    ] {
        let (code, _, body) = http(addr, "GET", "/api/v1/status", host, &[], None).await;
        assert_eq!(code, 421, "{host}");
        assert_eq!(json_of(&body)["field"], "Host");
        let (code, _, _) = http(addr, "GET", "/", host, &[], None).await;
        assert_eq!(code, 421, "the dashboard too, for {host}");
    }
    // The service's own names pass.
    for host in [own.as_str(), "localhost", "[::1]:1"] {
        let (code, _, _) = http(addr, "GET", "/api/v1/status", host, &[], None).await;
        assert_eq!(code, 200, "{host}");
    }
    // The same origin may change state.
    let (code, _, body) = http(
        addr,
        "POST",
        "/api/v1/pause",
        &own,
        &[("Origin", &format!("http://{own}"))],
        None,
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json_of(&body)["state"], "paused");
    svc.stop().await;
}

/// A POST with a body of `content_type`.
async fn raw_post(
    addr: std::net::SocketAddr,
    host: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: \
         {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (code, headers, body.as_bytes().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_is_json_and_out_of_range_values_are_refused() {
    let site = small_site().await;
    let svc = start(&site, None, "").await;
    let api = &svc.api;
    let addr = api.addr;
    let seed = site.site().seed_url();
    api.call("POST", "/api/v1/seeds", Some(json!({ "urls": [seed] })))
        .await;
    api.idle_with(1).await;
    let host = seed
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();

    // Unknown paths and methods: JSON, with `Allow` on a 405.
    for (method, path, code) in [
        ("GET", "/nope", 404),
        ("GET", "/api/v1/", 404),
        ("GET", "/api/v2", 404),
        ("DELETE", "/api/v1/status", 405),
        ("GET", "/api/v1/pause", 405),
        ("POST", "/metrics", 405),
    ] {
        let (got, headers, body) = http(addr, method, path, "127.0.0.1", &[], None).await;
        assert_eq!(got, code, "{method} {path}");
        let e = json_of(&body);
        assert!(e["error"].is_string(), "{method} {path}: {e}");
        if code == 405 {
            assert!(headers.iter().any(|(k, _)| k == "allow"), "{method} {path}");
        }
    }

    // Bodies that are not objects, and fields out of range: 400 naming the field.
    let put = |body: &'static str| {
        let path = format!("/api/v1/hosts/{host}");
        async move { http(addr, "PUT", &path, "127.0.0.1", &[], Some(body)).await }
    };
    for body in ["[]", "[null,null]", "null", "7"] {
        let (code, _, b) = put(body).await;
        assert_eq!(code, 400, "{body}");
        assert_eq!(json_of(&b)["field"], "body", "{body}");
    }
    for (body, field) in [
        (r#"{"blocked_until": 9223372036854775807}"#, "blocked_until"),
        (r#"{"blocked_until": 4102444800001}"#, "blocked_until"),
        (r#"{"delay_ms": -1}"#, "delay_ms"),
        (r#"{"max_in_flight": 0}"#, "max_in_flight"),
        (r#"{"paused": true}"#, "paused"),
    ] {
        let (code, _, b) = put(body).await;
        assert_eq!(code, 400, "{body}");
        assert_eq!(json_of(&b)["field"], field, "{body}");
    }
    let (code, _, _) = put(r#"{"blocked_until": 4102444800000}"#).await;
    assert_eq!(code, 200, "the latest time taken is taken");
    let (code, e) = api
        .call(
            "POST",
            "/api/v1/leases/complete",
            Some(json!({"results": [{"lease_id": "1", "status": 99}]})),
        )
        .await;
    assert_eq!(
        (code, e["field"].as_str()),
        (400, Some("results[0].status"))
    );
    let (code, e) = api
        .call("POST", "/api/v1/pause", Some(json!({"now": true})))
        .await;
    assert_eq!((code, e["field"].as_str()), (400, Some("now")), "{e}");
    let (code, e) = api
        .call(
            "POST",
            "/api/v1/seeds",
            Some(json!({"urls": "http://a.test/"})),
        )
        .await;
    assert_eq!((code, e["field"].as_str()), (400, Some("urls")), "{e}");

    // A token scheme in any case is the same scheme (no token set here: both pass).
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_are_capped_and_the_last_errors_are_kept() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let site = small_site().await;
    let svc = start(&site, None, "").await;
    let api = &svc.api;
    let seed = site.site().seed_url();
    // A URL the site answers 404: an error record.
    let missing = format!("{}no-such-page", seed);
    api.call(
        "POST",
        "/api/v1/seeds",
        Some(json!({ "urls": [seed, missing] })),
    )
    .await;
    api.idle_with(2).await;
    let (code, errors) = api.call("GET", "/api/v1/errors?limit=5", None).await;
    assert_eq!(code, 200, "{errors}");
    let records = errors["records"].as_array().unwrap();
    assert!(
        records.iter().any(|r| r["url"] == missing.as_str()),
        "{errors}"
    );
    assert!(records.len() <= 5);
    let (code, _) = api.call("GET", "/api/v1/errors?limit=0", None).await;
    assert_eq!(code, 400);

    // The cap (service.max_event_streams, 16 by default): the 17th is refused, and a closed
    // stream frees its slot.
    let mut open = Vec::new();
    for _ in 0..16 {
        let mut s = tokio::net::TcpStream::connect(api.addr).await.unwrap();
        s.write_all(b"GET /api/v1/events?records=none HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        open.push(s);
    }
    let (code, _, body) = http(api.addr, "GET", "/api/v1/events", "127.0.0.1", &[], None).await;
    assert_eq!(code, 503);
    assert!(json_of(&body)["error"]
        .as_str()
        .unwrap()
        .contains("service.max_event_streams"));
    drop(open.pop());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut s = tokio::net::TcpStream::connect(api.addr).await.unwrap();
        s.write_all(b"GET /api/v1/events?records=none HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.unwrap();
        if &head == b"HTTP/1.1 200" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was not freed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(open);
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_is_taken_in_any_case() {
    let site = small_site().await;
    let svc = start(&site, None, "a-token-of-16-chars").await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let auth = format!("{scheme} a-token-of-16-chars");
        let (code, _, _) = http(
            svc.api.addr,
            "GET",
            "/api/v1/status",
            "127.0.0.1",
            &[("Authorization", &auth)],
            None,
        )
        .await;
        assert_eq!(code, 200, "{scheme}");
    }
    // The OpenAPI document says so when a token is set.
    let (_, doc) = svc.api.call("GET", "/openapi.json", None).await;
    assert_eq!(doc["security"][0]["bearer"], json!([]));
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_large_or_too_slow_is_refused_in_json() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let site = small_site().await;
    let svc = start_with(&site, None, "", |cfg| {
        cfg.service.max_body_bytes = 4096;
        cfg.service.request_timeout_secs = 1;
    })
    .await;
    let addr = svc.api.addr;
    let own = format!("127.0.0.1:{}", addr.port());

    // Over service.max_body_bytes: 413, as JSON, and no seed taken.
    let big = format!(r#"{{"urls": ["http://h0.test/{}"]}}"#, "a".repeat(5000));
    let (code, _, body) = raw_post(addr, &own, "/api/v1/seeds", "application/json", &big).await;
    assert_eq!(code, 413, "{}", String::from_utf8_lossy(&body));
    assert!(json_of(&body)["error"].is_string());

    // A body that never finishes: the request ends at service.request_timeout_secs with 503,
    // as JSON, and the connection is not held beyond it.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/seeds HTTP/1.1\r\nHost: {own}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"urls\": ["
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), s.read_to_end(&mut raw))
        .await
        .expect("the slow body is cut off, not held")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        json_of(body.as_bytes())["error"]
            .as_str()
            .unwrap()
            .contains("service.request_timeout_secs"),
        "{text}"
    );
    assert_eq!(svc.api.status().await["state"], "idle", "no seed was taken");
    svc.stop().await;
}
