//! Files this crate writes, read by a tool nobody here wrote: warcio (Webrecorder, PyPI).
//! `warcio check` verifies every block and payload digest; `warcio index` lists the records
//! with their offsets, which must be the positions the writer returned. Skipped when warcio is
//! missing unless REQUIRE_WARCIO=1 (scripts/test.sh installs it and sets it).

use std::process::Command;

use warc::{Kind, Record, Utc, WarcConfig, WarcWriter};

fn warcio() -> Option<Command> {
    let found = Command::new("warcio").arg("--help").output().is_ok();
    if !found {
        assert!(
            std::env::var("REQUIRE_WARCIO").as_deref() != Ok("1"),
            "REQUIRE_WARCIO=1 but no warcio on PATH"
        );
        eprintln!("warcio not installed: skipped");
        return None;
    }
    Some(Command::new("warcio"))
}

fn writer(dir: &std::path::Path, info: Vec<(String, String)>) -> WarcWriter {
    WarcWriter::new(WarcConfig {
        dir: dir.to_owned(),
        prefix: "crawl".into(),
        max_file_bytes: 1 << 30,
        level: 6,
        info,
    })
    .unwrap()
}

/// The one file the writer made in `dir`.
fn only_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.pop().unwrap()
}

/// `warcio check -v FILE`: whether it passed, and what it said.
fn check(file: &std::path::Path) -> (bool, String) {
    let out = warcio()
        .unwrap()
        .args(["check", "-v"])
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn warcio_checks_digests_and_indexes_every_record_where_the_writer_said() {
    let Some(_) = warcio() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(
        dir.path(),
        vec![
            ("software".into(), "crawler/0.1".into()),
            ("format".into(), "WARC File Format 1.1".into()),
        ],
    );
    let mut expected = Vec::new();
    let pages: [(&str, &[u8], bool); 3] = [
        (
            "http://h.test/",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<p>hello</p>\n",
            false,
        ),
        (
            "http://h.test/gone",
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (
            "http://h.test/big",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n<p>cut",
            true,
        ),
    ];
    for (url, response, cut) in pages {
        let path = &url["http://h.test".len()..];
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: h.test\r\nUser-Agent: crawler/0.1\r\n\r\n");
        let date = Utc::now().rfc3339();
        let mut req = Record::new(
            Kind::Request,
            date.clone(),
            "application/http; msgtype=request",
            request.as_bytes(),
        );
        req.target_uri = Some(url);
        req.payload_at = Some(request.len());
        let mut resp = Record::new(
            Kind::Response,
            date,
            "application/http; msgtype=response",
            response,
        );
        resp.target_uri = Some(url);
        resp.ip = Some("127.0.0.1".parse().unwrap());
        resp.concurrent_to = Some(&req.id);
        let head = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        resp.payload_at = Some(head);
        resp.truncated = cut.then_some("length");
        let at = w.write(&req).unwrap();
        expected.push(("request", url, at.offset));
        let at = w.write(&resp).unwrap();
        expected.push(("response", url, at.offset));
    }
    w.close().unwrap();
    let file = only_file(dir.path());

    let (passed, said) = check(&file);
    assert!(
        passed,
        "warcio check failed:
{said}"
    );
    // One line a record, block and payload digests both verified.
    assert_eq!(said.matches("digest pass").count(), 7, "{said}");
    assert!(!said.contains("fail"), "{said}");

    let index = warcio()
        .unwrap()
        .args([
            "index",
            "-f",
            "warc-type,warc-target-uri,offset,http:status",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(index.status.success());
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&index.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let field = |r: &serde_json::Value, key: &str| match &r[key] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    assert_eq!(field(&rows[0], "warc-type"), "warcinfo");
    let got: Vec<(String, String, u64)> = rows[1..]
        .iter()
        .map(|r| {
            (
                field(r, "warc-type"),
                field(r, "warc-target-uri"),
                field(r, "offset").parse().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(t, u, o)| (t.to_string(), u.to_string(), *o))
        .collect();
    assert_eq!(got, want);
    let statuses: Vec<String> = rows.iter().map(|r| field(r, "http:status")).collect();
    assert_eq!(statuses, ["", "", "200", "", "404", "", "200"]);
}

#[test]
fn warcio_check_fails_a_wrong_payload_digest() {
    // The check above can fail: a payload digest taken over the HTTP headers too is caught.
    let Some(_) = warcio() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), vec![]);
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let mut resp = Record::new(
        Kind::Response,
        Utc::now().rfc3339(),
        "application/http; msgtype=response",
        response,
    );
    resp.target_uri = Some("http://h.test/");
    resp.payload_at = Some(0);
    w.write(&resp).unwrap();
    w.close().unwrap();
    let file = only_file(dir.path());
    let (passed, said) = check(&file);
    assert!(!passed, "{said}");
    assert!(said.contains("payload digest failed"), "{said}");
}

/// What warcio's own revisit rules ask, checked with warcio's reader: each revisit's profile,
/// `WARC-Payload-Digest` required for identical-payload-digest and prohibited for
/// server-not-modified, and `WARC-Refers-To-Date` equal to the original response's
/// `WARC-Date`. (PyPI's warcio has no `warcio test` command; these are its tester's rules.)
const REVISIT_RULES: &str = r#"
import json, sys
from warcio.archiveiterator import ArchiveIterator
dates, out = {}, []
with open(sys.argv[1], "rb") as f:
    for r in ArchiveIterator(f):
        h = r.rec_headers
        if r.rec_type == "response":
            dates[h.get_header("WARC-Record-ID")] = h.get_header("WARC-Date")
        if r.rec_type == "revisit":
            r.content_stream().read()
            out.append({
                "profile": h.get_header("WARC-Profile"),
                "payload_digest": h.get_header("WARC-Payload-Digest"),
                "refers_to_date": h.get_header("WARC-Refers-To-Date"),
                "original_date": dates.get(h.get_header("WARC-Refers-To")),
                "status": r.http_headers.get_statuscode() if r.http_headers else None,
            })
print(json.dumps(out))
"#;

#[test]
fn revisit_records_of_both_profiles_pass_warcio() {
    use warc::revisit::{Profile, RefersTo, IDENTICAL_PAYLOAD_DIGEST, SERVER_NOT_MODIFIED};
    let Some(_) = warcio() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), vec![("software".into(), "crawler/0.1".into())]);
    let url = "http://h.test/";
    let request = b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n";
    let capture = |w: &mut WarcWriter, date: &str| {
        let mut req = Record::new(
            Kind::Request,
            date.to_owned(),
            "application/http; msgtype=request",
            request,
        );
        req.target_uri = Some(url);
        req.ip = Some("127.0.0.1".parse().unwrap());
        w.write(&req).unwrap();
        req.id
    };
    // The original capture.
    let first = "2026-11-25T15:40:00.000Z";
    capture(&mut w, first);
    let response =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"a-1\"\r\nContent-Length: 6\r\n\r\n<p>hi\n";
    let mut resp = Record::new(
        Kind::Response,
        first.to_owned(),
        "application/http; msgtype=response",
        response,
    );
    resp.target_uri = Some(url);
    resp.ip = Some("127.0.0.1".parse().unwrap());
    resp.payload_at = Some(response.len() - 6);
    w.write(&resp).unwrap();
    let refers = RefersTo {
        target_uri: url,
        date: first,
        record_id: Some(resp.id.as_str()),
    };
    // A 304 a day later, and a 200 with the same payload the day after.
    for (date, head, profile) in [
        (
            "2026-11-26T15:40:00.000Z",
            &b"HTTP/1.1 304 Not Modified\r\nETag: \"a-1\"\r\n\r\n"[..],
            Profile::ServerNotModified,
        ),
        (
            "2026-11-27T15:40:00.000Z",
            &response[..response.len() - 6],
            Profile::IdenticalPayloadDigest {
                payload_digest: warc::sha1(b"<p>hi\n"),
            },
        ),
    ] {
        let request_id = capture(&mut w, date);
        let mut r = Record::revisit(date.to_owned(), url, head, &profile, refers);
        r.ip = Some("127.0.0.1".parse().unwrap());
        r.concurrent_to = Some(&request_id);
        w.write(&r).unwrap();
    }
    w.close().unwrap();
    let file = only_file(dir.path());
    let (passed, said) = check(&file);
    assert!(passed, "warcio check failed:\n{said}");
    assert!(!said.contains("fail"), "{said}");

    let out = Command::new("python3")
        .args(["-c", REVISIT_RULES])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let revisits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(revisits.len(), 2, "{revisits:?}");
    let (not_modified, identical) = (&revisits[0], &revisits[1]);
    assert_eq!(not_modified["profile"], SERVER_NOT_MODIFIED);
    assert_eq!(not_modified["payload_digest"], serde_json::Value::Null);
    assert_eq!(not_modified["status"], "304");
    assert_eq!(identical["profile"], IDENTICAL_PAYLOAD_DIGEST);
    assert_eq!(identical["payload_digest"], warc::sha1(b"<p>hi\n").as_str());
    assert_eq!(identical["status"], "200");
    for r in &revisits {
        assert_eq!(r["refers_to_date"], first, "{r}");
        assert_eq!(
            r["original_date"], first,
            "WARC-Refers-To names the response: {r}"
        );
    }
}
