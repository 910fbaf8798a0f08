//! An independent check of the ground truth: a deliberately simple breadth-first crawler,
//! written from the HTTP bytes up (its own HTTP/1.0 client, robots.txt matcher, link scanner
//! and URL normaliser — nothing shared with the site model), walks the served site. What it
//! fetches must equal `Site::ground_truth()` exactly.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testsite::{Addressing, Expected, SiteConfig, TestSite};
use url::Url;

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.0 GET (no compression asked for; the server closes the connection).
fn get(connect: SocketAddr, url: &Url) -> Reply {
    let mut stream = TcpStream::connect_timeout(&connect, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap()),
        None => url.host_str().unwrap().to_owned(),
    };
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: walker\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

/// Canonical form: what `url` gives (lower-case host, no default port, no dots), without the
/// fragment, with unreserved `%XX` decoded and other escapes upper-cased.
fn normalise(mut url: Url) -> String {
    url.set_fragment(None);
    let path = url.path().to_owned();
    let mut out = String::new();
    let b = path.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let v = u8::from_str_radix(&path[i + 1..i + 3], 16).unwrap();
            if v.is_ascii_alphanumeric() || b"-._~".contains(&v) {
                out.push(v as char);
            } else {
                out.push_str(&path[i..i + 3].to_ascii_uppercase());
            }
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    url.set_path(&out);
    url.to_string()
}

/// robots.txt rules for `*`: (allow, pattern) pairs, longest match wins, ties allow.
#[derive(Clone)]
enum Robots {
    AllowAll,
    DisallowAll,
    Rules(Vec<(bool, String)>),
}

fn parse_robots(text: &str) -> Robots {
    let mut rules = Vec::new();
    let mut in_star_group = false;
    let mut last_was_agent = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        match key.as_str() {
            "user-agent" => {
                if !last_was_agent {
                    in_star_group = false;
                }
                in_star_group |= value == "*";
                last_was_agent = true;
            }
            "allow" | "disallow" => {
                last_was_agent = false;
                if in_star_group && !value.is_empty() {
                    rules.push((key == "allow", value.to_owned()));
                }
            }
            _ => last_was_agent = false,
        }
    }
    Robots::Rules(rules)
}

fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    fn go(p: &[u8], s: &[u8], anchored: bool) -> bool {
        match p.first() {
            None => !anchored || s.is_empty(),
            Some(b'*') => (0..=s.len()).any(|i| go(&p[1..], &s[i..], anchored)),
            Some(c) => s.first() == Some(c) && go(&p[1..], &s[1..], anchored),
        }
    }
    go(pattern.as_bytes(), path.as_bytes(), anchored)
}

fn allowed(robots: &Robots, path: &str) -> bool {
    match robots {
        Robots::AllowAll => true,
        Robots::DisallowAll => false,
        Robots::Rules(rules) => {
            let best = rules
                .iter()
                .filter(|(_, p)| pattern_matches(p, path))
                .max_by_key(|(allow, p)| (p.len(), *allow));
            best.is_none_or(|(allow, _)| *allow)
        }
    }
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(&tag[at..at + tag[at..].find('"')?])
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Decodes a page with the charset of its header, else of its `<meta charset>`, else UTF-8.
fn decode(reply: &Reply) -> String {
    let from_header = reply
        .header("content-type")
        .and_then(|ct| ct.split("charset=").nth(1))
        .map(|c| c.trim().to_owned());
    let head = String::from_utf8_lossy(&reply.body[..reply.body.len().min(1024)]).into_owned();
    let from_meta = attr(&head, "<meta charset").or_else(|| {
        head.find("<meta charset=\"").map(|i| {
            let rest = &head[i + 15..];
            &rest[..rest.find('"').unwrap()]
        })
    });
    let label = from_header
        .or(from_meta.map(str::to_owned))
        .unwrap_or_else(|| "utf-8".into());
    let encoding = encoding_rs::Encoding::for_label(label.as_bytes()).unwrap_or(encoding_rs::UTF_8);
    encoding.decode(&reply.body).0.into_owned()
}

/// The walk: returns every fetched URL with its final status.
fn walk(seed: &str, connect: impl Fn(&Url) -> SocketAddr) -> BTreeMap<String, u16> {
    let mut robots: HashMap<String, Robots> = HashMap::new();
    let mut sitemap_files: HashSet<String> = HashSet::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue = VecDeque::new();
    let mut fetched = BTreeMap::new();
    seen.insert(seed.to_owned());
    queue.push_back(seed.to_owned());
    while let Some(url_text) = queue.pop_front() {
        let url = Url::parse(&url_text).unwrap();
        let origin = url.origin().ascii_serialization();
        if !robots.contains_key(&origin) {
            let r = get(connect(&url), &url.join("/robots.txt").unwrap());
            let text = String::from_utf8_lossy(&r.body).into_owned();
            robots.insert(
                origin.clone(),
                match r.status {
                    200 => parse_robots(&text),
                    400..=499 => Robots::AllowAll,
                    _ => Robots::DisallowAll,
                },
            );
            // First contact: the host's sitemaps (its robots.txt's Sitemap: lines, and
            // /sitemap.xml) join the queue — unless its robots.txt failed.
            let failed = r.status >= 500;
            let mut files: Vec<String> = text
                .lines()
                .filter(|_| r.status == 200)
                .filter_map(|l| l.strip_prefix("Sitemap:"))
                .map(|v| v.trim().to_owned())
                .collect();
            files.push(url.join("/sitemap.xml").unwrap().to_string());
            for f in files.into_iter().filter(|_| !failed) {
                sitemap_files.insert(f.clone());
                if seen.insert(f.clone()) {
                    queue.push_back(f);
                }
            }
        }
        let rules = robots[&origin].clone();
        let path_query = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        if matches!(rules, Robots::DisallowAll) {
            // The robots.txt failed: not fetched, but reported (as status 0 here).
            fetched.insert(url_text.clone(), 0);
            continue;
        }
        if !allowed(&rules, &path_query) {
            continue;
        }
        let mut reply = get(connect(&url), &url);
        for _ in 0..3 {
            if reply.status >= 500 || reply.status == 429 {
                reply = get(connect(&url), &url);
            }
        }
        fetched.insert(url_text.clone(), reply.status);
        let mut found = Vec::new();
        if (300..400).contains(&reply.status) {
            if let Some(loc) = reply.header("location") {
                found.push(url.join(loc).unwrap());
            }
        }
        if reply.status == 200 && sitemap_files.contains(&url_text) {
            let mut xml = reply.body.clone();
            if xml.starts_with(&[0x1f, 0x8b]) {
                let mut plain = Vec::new();
                flate2::read::GzDecoder::new(&reply.body[..])
                    .read_to_end(&mut plain)
                    .unwrap();
                xml = plain;
            }
            let xml = String::from_utf8(xml).unwrap();
            let index = xml.contains("<sitemapindex");
            for piece in xml.split("<loc>").skip(1) {
                let loc = unescape(&piece[..piece.find("</loc>").unwrap()]);
                let u = url.join(&loc).unwrap();
                // A sitemap lists its own host's URLs only.
                if u.origin() != url.origin() {
                    continue;
                }
                if index {
                    sitemap_files.insert(normalise(u.clone()));
                }
                found.push(u);
            }
        }
        let is_html = reply
            .header("content-type")
            .is_some_and(|ct| ct.starts_with("text/html"));
        if reply.status == 200 && is_html {
            let text = decode(&reply);
            let nofollow_page = text.contains("<meta name=\"robots\" content=\"nofollow");
            let base = text
                .find("<base ")
                .and_then(|i| attr(&text[i..i + text[i..].find('>').unwrap()], "href"))
                .map(|b| url.join(&unescape(b)).unwrap())
                .unwrap_or_else(|| url.clone());
            for piece in text.split("<a ").skip(1) {
                let tag = &piece[..piece.find('>').unwrap_or(piece.len())];
                if nofollow_page || attr(tag, "rel").is_some_and(|r| r.contains("nofollow")) {
                    continue;
                }
                if let Some(href) = attr(tag, "href") {
                    if let Ok(u) = base.join(unescape(href).trim()) {
                        found.push(u);
                    }
                }
            }
        }
        for u in found {
            if u.scheme() != "http" {
                continue;
            }
            let n = normalise(u);
            if seen.insert(n.clone()) {
                queue.push_back(n);
            }
        }
    }
    fetched
}

fn expected_statuses(site: &testsite::Site) -> BTreeMap<String, u16> {
    site.ground_truth()
        .urls
        .into_iter()
        .map(|(u, e)| match e {
            Expected::Status(s) => (u, s),
            Expected::Hostile(_) => panic!("no hostile modes in this test"),
            Expected::RobotsUnavailable => (u, 0),
        })
        .collect()
}

fn assert_same(walked: &BTreeMap<String, u16>, truth: &BTreeMap<String, u16>) {
    let missing: Vec<_> = truth
        .keys()
        .filter(|u| !walked.contains_key(*u))
        .take(10)
        .collect();
    let extra: Vec<_> = walked
        .keys()
        .filter(|u| !truth.contains_key(*u))
        .take(10)
        .collect();
    let differ: Vec<_> = truth
        .iter()
        .filter(|(u, s)| walked.get(*u).is_some_and(|w| w != *s))
        .take(10)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && differ.is_empty(),
        "walk ≠ ground truth\nmissing: {missing:?}\nextra: {extra:?}\ndifferent status: {differ:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_walk_equals_ground_truth_by_host_name() {
    let server = TestSite::start(SiteConfig::default()).await.unwrap();
    let addr = server.addr();
    let seed = server.site().seed_url();
    let walked = tokio::task::spawn_blocking(move || walk(&seed, |_| addr))
        .await
        .unwrap();
    let truth = expected_statuses(server.site());
    assert!(truth.len() > 900, "{} URLs", truth.len());
    assert_same(&walked, &truth);
    // The orphans exist but were never requested.
    assert!(!server
        .observer()
        .log()
        .iter()
        .any(|r| r.path.starts_with("/orphan/")));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_walk_equals_ground_truth_by_address() {
    let cfg = SiteConfig {
        pages: 300,
        hosts: 4,
        seed: 7,
        addressing: Addressing::Ips,
        ..SiteConfig::default()
    };
    let server = TestSite::start(cfg).await.unwrap();
    let port = server.addr().port();
    let seed = server.site().seed_url();
    let walked = tokio::task::spawn_blocking(move || {
        walk(&seed, |u: &Url| {
            SocketAddr::new(u.host_str().unwrap().parse().unwrap(), port)
        })
    })
    .await
    .unwrap();
    assert_same(&walked, &expected_statuses(server.site()));
    server.stop().await;
}
