use std::io::Read;

use super::*;

fn writer(dir: &Path, max: u64) -> WarcWriter {
    WarcWriter::new(WarcConfig {
        dir: dir.join("warc"),
        prefix: "test".into(),
        max_file_bytes: max,
        info: vec![("software".into(), "crawler/0.1".into())],
        level: 6,
    })
    .unwrap()
}

/// The record in the gzip member at `offset` of `file`, inflated alone.
fn member_at(dir: &Path, p: &Position) -> String {
    let bytes = std::fs::read(dir.join("warc").join(&p.file)).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[p.offset as usize..])
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn every_record_is_its_own_member_after_a_warcinfo() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), 1 << 30);
    let request = b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n";
    let mut req = Record::new(
        Kind::Request,
        "2026-11-25T15:40:00.000Z".into(),
        "application/http; msgtype=request",
        request,
    );
    req.target_uri = Some("http://h.test/");
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let mut resp = Record::new(
        Kind::Response,
        "2026-11-25T15:40:00.000Z".into(),
        "application/http; msgtype=response",
        response,
    );
    resp.target_uri = Some("http://h.test/");
    resp.concurrent_to = Some(&req.id);
    resp.payload_at = Some(response.len() - 2);
    let at_req = w.write(&req).unwrap();
    let at_resp = w.write(&resp).unwrap();
    w.sync().unwrap();
    assert_eq!(at_req.file, at_resp.file);
    assert!(at_req.offset > 0, "the warcinfo record comes first");
    let first = member_at(
        dir.path(),
        &Position {
            file: at_req.file.clone(),
            offset: 0,
        },
    );
    assert!(first.contains("WARC-Type: warcinfo\r\n"));
    assert!(first.contains(&format!("WARC-Filename: {}\r\n", at_req.file)));
    assert!(first.contains("software: crawler/0.1\r\n"));
    let text = member_at(dir.path(), &at_resp);
    assert!(text.contains("WARC-Type: response\r\n"));
    assert!(text.contains(&format!("WARC-Concurrent-To: {}\r\n", req.id.as_str())));
    assert!(text.contains(&format!("WARC-Payload-Digest: {}\r\n", sha1(b"hi"))));
    assert!(text.contains(&format!("WARC-Block-Digest: {}\r\n", sha1(response))));
    assert!(member_at(dir.path(), &at_req).contains("WARC-Type: request\r\n"));
}

#[test]
fn files_rotate_at_the_size_limit_and_names_sort() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), 2_000);
    // Incompressible: each member is about as long as its record.
    let mut x = 1u32;
    let body: Vec<u8> = (0..4_000)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect();
    let mut files = Vec::new();
    for _ in 0..5 {
        let mut r = Record::new(Kind::Metadata, Utc::now().rfc3339(), "text/plain", &body);
        r.target_uri = Some("http://h.test/");
        let at = w.write(&r).unwrap();
        if files.last() != Some(&at.file) {
            files.push(at.file);
        }
    }
    w.close().unwrap();
    // A file is closed once it passes the limit: one record each here.
    assert_eq!(files.len(), 5, "{files:?}");
    assert!(files.windows(2).all(|p| p[0] < p[1]), "{files:?}");
    for f in &files {
        assert!(f.starts_with("test-") && f.ends_with(".warc.gz"), "{f}");
        let text = member_at(
            dir.path(),
            &Position {
                file: f.clone(),
                offset: 0,
            },
        );
        assert!(
            text.contains("WARC-Type: warcinfo"),
            "{f} starts with warcinfo"
        );
    }
}

#[test]
fn an_unwritable_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let err = WarcWriter::new(WarcConfig {
        dir: file.join("warc"),
        prefix: "x".into(),
        max_file_bytes: 1,
        info: vec![],
        level: 6,
    })
    .unwrap_err();
    assert!(err.to_string().contains("file/warc"), "{err}");
}

#[test]
fn a_spooled_payload_gives_the_same_record_as_one_in_memory() {
    use std::io::{Seek, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), 1 << 30);
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n";
    let payload: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let whole = [head.as_slice(), &payload].concat();
    let mut all = Record::new(
        Kind::Response,
        "2026-11-25T15:40:00.000Z".into(),
        "application/http; msgtype=response",
        &whole,
    );
    all.payload_at = Some(head.len());
    let mut split = all.clone();
    split.block = head;
    let mut spool = tempfile::tempfile().unwrap();
    spool.write_all(&payload).unwrap();
    spool.seek(std::io::SeekFrom::Start(7)).unwrap();
    let a = w.write(&all).unwrap();
    let b = w.write_with(&split, Rest::File(&mut spool)).unwrap();
    let c = w.write_with(&split, Rest::Bytes(&payload)).unwrap();
    w.sync().unwrap();
    let (a, b, c) = (
        member_at(dir.path(), &a),
        member_at(dir.path(), &b),
        member_at(dir.path(), &c),
    );
    let fields = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| {
                l.starts_with("WARC-Block")
                    || l.starts_with("WARC-Payload")
                    || l.starts_with("Content-Length")
            })
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(fields(&a), fields(&b));
    assert_eq!(fields(&a), fields(&c));
    assert!(fields(&a)[1].ends_with(&sha1(&payload)));
    assert_eq!(a.len(), b.len());
}
