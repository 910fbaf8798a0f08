//! `output.warc`: a crawl's WARC files, read back by our own reader and by warcio (PyPI),
//! agree with `pages.jsonl` record for record; the request record is what went over the wire.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Command;

use testsite::{SiteConfig, TestSite};

use crate::crawl::{crawl_site, read_pages};
use crate::util::{crawler, stderr};

/// warcio, or `None` (the test's warcio half is skipped) when it is not installed and
/// `REQUIRE_WARCIO` is not set (`scripts/test.sh` sets it after installing warcio).
///
/// Google's `brotli` module is hidden from it: warcio's `br` decoder is written for brotlipy
/// and fails on `brotli` (`'brotli.Decompressor' object has no attribute 'unused_data'`,
/// webrecorder/warcio#73), so with that module installed warcio can read no archived
/// `Content-Encoding: br` response at all. Hidden, it reads those bodies as archived, as it
/// does wherever no brotli module is installed.
pub(crate) fn warcio() -> Option<Command> {
    static NO_BROTLI: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    if Command::new("warcio").arg("--help").output().is_ok() {
        let shadow = NO_BROTLI.get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("warcio-no-brotli-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a directory for the brotli shadow");
            let hide = "raise ImportError('hidden from warcio by the tests')\n";
            std::fs::write(dir.join("brotli.py"), hide).expect("the brotli shadow");
            dir
        });
        let mut warcio = Command::new("warcio");
        warcio.env("PYTHONPATH", shadow);
        return Some(warcio);
    }
    assert!(
        std::env::var("REQUIRE_WARCIO").as_deref() != Ok("1"),
        "REQUIRE_WARCIO=1 but no warcio on PATH"
    );
    eprintln!("warcio not installed: its checks are skipped");
    None
}

/// One record read back: its WARC header fields (lower-case names) and its block.
struct Member {
    fields: BTreeMap<String, String>,
    block: Vec<u8>,
}

/// The record whose gzip member starts at `offset` of `file`, inflated alone (as a replay
/// tool seeking to an index entry does).
fn member_at(file: &Path, offset: u64) -> Member {
    let bytes = std::fs::read(file).unwrap();
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&bytes[offset as usize..])
        .read_to_end(&mut text)
        .unwrap();
    let end = text.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(text[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    assert_eq!(lines.next(), Some("WARC/1.1"));
    let fields: BTreeMap<String, String> = lines
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_ascii_lowercase(), v.to_owned())
        })
        .collect();
    let len: usize = fields["content-length"].parse().unwrap();
    let block = text[end + 4..end + 4 + len].to_vec();
    assert_eq!(&text[end + 4 + len..], b"\r\n\r\n", "one record per member");
    Member { fields, block }
}

pub(crate) fn warc_files(out: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(out.join("warc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_names_its_record_and_warcio_reads_the_same_crawl() {
    let site = TestSite::start(SiteConfig {
        pages: 2500,
        hosts: 3,
        hostile: testsite::Hostile::parse("huge,reset").unwrap(),
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    // A 1 MiB file size spreads the crawl over several files; the huge page is cut at
    // 3 MB, past what a capture holds in memory, so it is spooled.
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 8\n[fetch]\nmax_body_bytes = 3000000\nmax_retries = 1\n\
         retry_base_ms = 20\n[politeness]\ndelay_ms = 0\nmax_per_host = 4\nbackoff_base_ms = 20\n\
         [output]\nwarc = true\nwarc_max_mb = 1\n",
    )
    .await;
    let pages = read_pages(&out);
    let files = warc_files(&out);
    let sizes: Vec<_> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    assert!(
        files.len() >= 2,
        "rotated at 1 MiB: {files:?} {sizes:?} {}",
        read_pages(&out).len()
    );
    for f in &files {
        let first = member_at(f, 0);
        assert_eq!(first.fields["warc-type"], "warcinfo", "{f:?}");
        let info = String::from_utf8(first.block).unwrap();
        assert!(info.contains("software: crawler/"), "{info}");
    }

    // Every line names its record, which is about its URL and says its status.
    let mut responses = BTreeMap::new();
    for p in &pages {
        let url = p["url"].as_str().unwrap();
        if p["attempts"] == 0 {
            // Not fetched (its host's robots.txt could not be had): nothing to archive.
            assert!(p["status"].is_null() && p.get("warc_file").is_none(), "{p}");
            continue;
        }
        let file = out.join("warc").join(p["warc_file"].as_str().unwrap());
        let m = member_at(&file, p["warc_offset"].as_u64().unwrap());
        assert_eq!(m.fields["warc-target-uri"], url);
        match p["status"].as_u64() {
            Some(status) => {
                assert_eq!(m.fields["warc-type"], "response", "{p}");
                let status_line = m.block.split(|&b| b == b'\r').next().unwrap();
                let status_line = String::from_utf8_lossy(status_line);
                assert!(
                    status_line.starts_with(&format!("HTTP/1.1 {status} ")),
                    "{status_line}"
                );
                assert!(m.fields.contains_key("warc-concurrent-to"));
                assert!(m.fields.contains_key("warc-ip-address"));
                let truncated = m.fields.get("warc-truncated").map(String::as_str);
                if p["truncated"] == true {
                    assert_eq!(truncated, Some("length"), "{p}");
                } else if p["error"].is_null() {
                    assert_eq!(truncated, None, "{p}");
                }
                assert!(
                    responses.insert(url.to_owned(), status).is_none(),
                    "{url} twice"
                );
            }
            None => {
                assert_eq!(m.fields["warc-type"], "metadata", "{p}");
                assert!(String::from_utf8_lossy(&m.block).starts_with("fetch-error: "));
            }
        }
    }
    let huge = format!("{}/hostile/huge", site.site().origin(0));
    assert_eq!(
        pages.iter().find(|p| p["url"] == huge.as_str()).unwrap()["truncated"],
        true
    );

    let Some(_) = warcio() else { return };
    for f in &files {
        let check = warcio()
            .unwrap()
            .args(["check", "-v"])
            .arg(f)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "warcio check {f:?}: {said}");
        assert!(!said.contains("digest fail"), "{said}");
    }
    // warcio's index: (URL, status) of every response record, robots.txt aside, is exactly
    // pages.jsonl's, each once.
    let index = warcio()
        .unwrap()
        .args(["index", "-f", "warc-type,warc-target-uri,http:status"])
        .args(&files)
        .output()
        .unwrap();
    assert!(index.status.success());
    let mut indexed = BTreeMap::new();
    for line in index.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["warc-type"] != "response" {
            continue;
        }
        let url = v["warc-target-uri"].as_str().unwrap().to_owned();
        if url.ends_with("/robots.txt") {
            continue;
        }
        let status: u64 = v["http:status"].as_str().unwrap().parse().unwrap();
        assert!(
            indexed.insert(url.clone(), status).is_none(),
            "{url} archived twice"
        );
    }
    assert_eq!(indexed, responses);
}

/// Accepts connections on `listener`, answering `/robots.txt` with 404 and anything else
/// with a gzip'd page; sends each request head it read to `heads`.
fn raw_server(listener: std::net::TcpListener, heads: std::sync::mpsc::Sender<Vec<u8>>) {
    for stream in listener.incoming().take(4) {
        let Ok(mut stream) = stream else { return };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                break;
            }
            head.extend_from_slice(&line);
            if line == b"\r\n" {
                break;
            }
        }
        let robots = head.starts_with(b"GET /robots.txt ");
        let _ = heads.send(head);
        let response = if robots {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        } else {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(b"<html><body><p>archived</p></body></html>")
                .unwrap();
            let body = gz.finish().unwrap();
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend(body);
            r
        };
        let _ = stream.write_all(&response);
    }
}

/// Header lines of a request head, names lower-cased, in a set (hyper may order them its way).
fn header_set(head: &[u8]) -> (String, std::collections::BTreeSet<String>) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().to_owned();
    let set = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            format!("{}: {}", k.to_ascii_lowercase(), v.trim())
        })
        .collect();
    (first, set)
}

#[test]
fn the_request_record_is_what_the_server_read_and_the_payload_is_as_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, heads) = std::sync::mpsc::channel();
    std::thread::spawn(move || raw_server(listener, tx));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seed = format!("http://127.0.0.1:{port}/page?q=1");
    let run = crawler()
        .args(["crawl", "--seed", &seed, "--warc", "--out"])
        .arg(&out)
        .env("CRAWLER_FETCH_ALLOW_PRIVATE", "true")
        .env("CRAWLER_CRAWL_SITEMAPS", "false")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let read: Vec<Vec<u8>> = heads.try_iter().collect();
    assert_eq!(read.len(), 2, "robots.txt and the page");
    let page = read_pages(&out);
    assert_eq!(page.len(), 1);
    let file = out
        .join("warc")
        .join(page[0]["warc_file"].as_str().unwrap());
    // The request record is the member before the response: find it by walking the file.
    let bytes = std::fs::read(&file).unwrap();
    let mut offset = 0u64;
    let mut requests = Vec::new();
    while (offset as usize) < bytes.len() {
        let m = member_at(&file, offset);
        if m.fields["warc-type"] == "request" {
            requests.push(m.block);
        }
        // The next member starts where this one's compressed bytes ended.
        offset = next_member(&bytes, offset);
    }
    assert_eq!(requests.len(), 2);
    for (sent, archived) in read.iter().zip(&requests) {
        assert_eq!(
            header_set(sent),
            header_set(archived),
            "{}",
            String::from_utf8_lossy(sent)
        );
    }
    // The payload is stored as received (gzip'd), with its Content-Encoding.
    let response = member_at(&file, page[0]["warc_offset"].as_u64().unwrap());
    let block = String::from_utf8_lossy(&response.block).into_owned();
    assert!(
        block
            .to_ascii_lowercase()
            .contains("content-encoding: gzip"),
        "{block}"
    );
    let at = response
        .block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap()
        + 4;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&response.block[at..])
        .read_to_string(&mut text)
        .unwrap();
    assert!(text.contains("archived"));
    assert_eq!(
        page[0]["bytes"],
        text.len(),
        "bytes counts the decoded body"
    );
}

/// Where the gzip member after the one at `offset` starts.
fn next_member(bytes: &[u8], offset: u64) -> u64 {
    let mut d = flate2::bufread::GzDecoder::new(&bytes[offset as usize..]);
    std::io::copy(&mut d, &mut std::io::sink()).unwrap();
    let left = d.into_inner().len();
    (bytes.len() - left) as u64
}

/// Every WARC file of `out` is whole and valid (warcio, when installed), and the fetches it
/// archives are `pages.jsonl`'s, each once: one response or metadata record per line of a
/// fetched URL, where the line says, and none for anything else (robots.txt aside).
pub(crate) fn each_fetched_url_archived_once(out: &Path) {
    let pages = read_pages(out);
    let mut want = BTreeMap::new();
    for p in pages.iter().filter(|p| p["attempts"] != 0) {
        let at = (
            p["warc_file"].as_str().unwrap().to_owned(),
            p["warc_offset"].as_u64().unwrap(),
        );
        assert!(
            want.insert(p["url"].as_str().unwrap().to_owned(), at)
                .is_none(),
            "{p}"
        );
    }
    let mut archived: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for file in warc_files(out) {
        let bytes = std::fs::read(&file).unwrap();
        let members = warc_members(&bytes);
        assert_eq!(
            members.iter().map(|m| m.1).sum::<usize>(),
            bytes.len(),
            "{file:?} is whole members only"
        );
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        for (offset, _, fields) in members {
            let kind = &fields["warc-type"];
            if kind != "response" && kind != "metadata" {
                continue;
            }
            let url = fields["warc-target-uri"].clone();
            if url.ends_with("/robots.txt") && !want.contains_key(&url) {
                continue;
            }
            archived
                .entry(url)
                .or_default()
                .push((name.clone(), offset as u64));
        }
        if let Some(mut check) = warcio() {
            let run = check.args(["check"]).arg(&file).output().unwrap();
            assert!(run.status.success(), "warcio check {file:?}: {run:?}");
        }
    }
    for (url, at) in &want {
        assert_eq!(archived.get(url), Some(&vec![at.clone()]), "{url}");
    }
    let unrecorded: Vec<_> = archived.keys().filter(|u| !want.contains_key(*u)).collect();
    assert!(
        unrecorded.is_empty(),
        "archived without a line: {unrecorded:?}"
    );
}

/// Every gzip member of `bytes`: (offset, length, the record's fields by lower-case name).
fn warc_members(bytes: &[u8]) -> Vec<(usize, usize, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let mut d = flate2::bufread::GzDecoder::new(&bytes[at..]);
        let mut text = Vec::new();
        if d.read_to_end(&mut text).is_err() {
            break;
        }
        let len = bytes.len() - at - d.into_inner().len();
        let end = text.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let fields = String::from_utf8_lossy(&text[..end])
            .split("\r\n")
            .skip(1)
            .map(|l| {
                let (k, v) = l.split_once(": ").unwrap();
                (k.to_ascii_lowercase(), v.to_owned())
            })
            .collect();
        out.push((at, len, fields));
        at += len;
    }
    out
}

/// A file-size limit stands in for a full disk (`ulimit -f`, with SIGXFSZ ignored so that a
/// write past it fails with EFBIG instead of killing the process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_crawl_with_74_and_a_resume_records_each_url_once() {
    let site = TestSite::start(SiteConfig {
        pages: 1500,
        hosts: 5,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = dir.path().join("crawler.toml");
    std::fs::write(
        &config,
        "[crawl]\nconcurrency = 8\ncheckpoint_ms = 200\n[politeness]\ndelay_ms = 0\nmax_per_host = 4\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n[output]\nwarc = true\n",
    )
    .unwrap();
    let args = |cmd: &mut Command| {
        cmd.args(["crawl", "--config", config.to_str().unwrap()])
            .args([
                "--seed",
                &site.site().seed_url(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args(["--resolve", "*.test=127.0.0.1"])
            .env("RUST_LOG", "error");
    };
    // 300 KiB: the WARC file (about 1 KB a page) reaches it first, a few hundred pages in.
    let mut limited = Command::new("bash");
    limited
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 300; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_crawler"));
    args(&mut limited);
    let full = tokio::task::spawn_blocking(move || limited.output())
        .await
        .unwrap()
        .unwrap();
    let said = stderr(&full);
    assert_eq!(full.status.code(), Some(74), "{said}");
    assert!(
        said.contains("File too large") && said.contains(".warc.gz"),
        "names the file and why: {said}"
    );
    let mut again = crawler();
    args(&mut again);
    let resumed = tokio::task::spawn_blocking(move || again.output())
        .await
        .unwrap()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let pages = read_pages(&out);
    if let Err(e) = site
        .site()
        .ground_truth()
        .check(pages.iter().map(crate::util::recorded))
    {
        panic!("{e}");
    }
    each_fetched_url_archived_once(&out);
}

#[test]
fn an_output_directory_that_cannot_be_made_is_74_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = file.join("out");
    let run = crawler()
        .args(["crawl", "--seed", "http://127.0.0.1:9/", "--warc", "--out"])
        .arg(&out)
        .env("CRAWLER_CRAWL_PERSIST", "false")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(74));
    let said = stderr(&run);
    assert!(
        said.contains(&out.join("warc").display().to_string()),
        "{said}"
    );
    assert!(said.contains("Not a directory"), "{said}");
}
