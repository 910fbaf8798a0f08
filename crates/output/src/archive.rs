//! `output.warc`: each fetch's capture ([`Capture`]) as WARC records.
//!
//! - A fetch that got a response is a `request` record (the request as sent) and a
//!   `response` record (status line, headers and payload as received), the response naming
//!   the request in `WARC-Concurrent-To`; `pages.jsonl` points at the response.
//! - A refetch that found the page unchanged (a 304, or a payload with the digest of the
//!   last) is a `request` and a `revisit` record standing for the earlier capture
//!   (`server-not-modified` or `identical-payload-digest`), without the payload.
//! - A fetch that got none (refused, timed out, blocked by the SSRF guard) is one `metadata`
//!   record saying why, which its `pages.jsonl` line points at.
//! - What is archived is the attempt that got the line: an attempt that is retried later
//!   (a 503, a reset) leaves no record, so each line has exactly one fetch in the archive.
//!   robots.txt fetches are archived too, with no line of their own.

use warc::{Kind, Position, Record, Rest, WarcConfig, WarcError, WarcWriter};

use config::CrawlConfig;
use fetch::Capture;

/// The prefix of the WARC files' names.
pub const PREFIX: &str = "crawl";

/// The directory of a crawl's WARC files.
pub fn dir(cfg: &CrawlConfig) -> std::path::PathBuf {
    cfg.crawl.out_dir.join("warc")
}

/// Deletes the WARC files an earlier run wrote into `dir` (`--fresh` starts over: its
/// `pages.jsonl` is emptied too, and no line would name them).
pub fn remove_files(dir: &std::path::Path) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&format!("{PREFIX}-")) && name.ends_with(".warc.gz") {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// The writer's settings for `cfg`, with the `warcinfo` fields every file begins with.
pub fn config(cfg: &CrawlConfig) -> WarcConfig {
    let c = &cfg.crawl;
    let info = [
        ("software", format!("crawler/{}", env!("CARGO_PKG_VERSION"))),
        ("format", "WARC File Format 1.1".to_owned()),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                .to_owned(),
        ),
        // Who crawled: the user agent names the operator (and how to reach them).
        ("operator", c.user_agent.clone()),
        ("http-header-user-agent", c.user_agent.clone()),
        (
            "robots",
            if c.respect_robots { "obey" } else { "ignore" }.to_owned(),
        ),
        ("max-body-bytes", cfg.fetch.max_body_bytes.to_string()),
        ("politeness-delay-ms", cfg.politeness.delay_ms.to_string()),
        ("scope", cfg.frontier.scope.to_string()),
        (
            "seeds",
            frontier::credentials::mask(&c.seeds.join(" ")).into_owned(),
        ),
    ];
    WarcConfig {
        dir: dir(cfg),
        prefix: PREFIX.to_owned(),
        max_file_bytes: cfg.output.warc_max_mb.saturating_mul(1 << 20),
        info: info.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        level: cfg.output.warc_gzip_level,
    }
}

/// Writes `capture` as its records; returns where its response (or metadata) record is.
pub(crate) fn write(w: &mut WarcWriter, capture: &mut Capture) -> Result<Position, WarcError> {
    let Some(head) = capture.response.take() else {
        let block = format!(
            "fetch-error: {}\r\n",
            frontier::credentials::mask(capture.error.as_deref().unwrap_or("no response"))
        );
        let mut r = Record::new(
            Kind::Metadata,
            capture.date.clone(),
            "application/warc-fields",
            block.as_bytes(),
        );
        r.target_uri = Some(&capture.url);
        return w.write(&r);
    };
    let mut request = Record::new(
        Kind::Request,
        capture.date.clone(),
        "application/http; msgtype=request",
        &capture.request,
    );
    request.target_uri = Some(&capture.url);
    request.ip = capture.ip;
    w.write(&request)?;
    if let Some(revisit) = &capture.revisit {
        // The earlier capture stands for this one: status line and headers only.
        let mut record = Record::revisit(
            capture.date.clone(),
            &capture.url,
            &head,
            &revisit.profile,
            warc::revisit::RefersTo {
                target_uri: &capture.url,
                date: &revisit.refers_to_date,
                record_id: None,
            },
        );
        record.ip = capture.ip;
        record.concurrent_to = Some(&request.id);
        return w.write(&record);
    }
    let (memory, file) = capture.payload.parts();
    let mut response = Record::new(
        Kind::Response,
        capture.date.clone(),
        "application/http; msgtype=response",
        &head,
    );
    response.target_uri = Some(&capture.url);
    response.ip = capture.ip;
    response.concurrent_to = Some(&request.id);
    response.payload_at = Some(head.len());
    response.truncated = capture.truncated;
    w.write_with(
        &response,
        match file {
            Some(file) => Rest::File(file),
            None => Rest::Bytes(memory),
        },
    )
}
