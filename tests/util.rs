//! Helpers to run the built `crawler` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn crawler() -> Command {
    Command::new(env!("CARGO_BIN_EXE_crawler"))
}

/// Runs `crawler args…`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = crawler()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crawler binary runs");
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    output
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/bloom/tests/fixtures/guava")
        .join(name)
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A `pages.jsonl` record as the test site's ground truth reads it.
pub fn recorded(p: &serde_json::Value) -> testsite::Recorded {
    testsite::Recorded {
        url: p["url"].as_str().unwrap_or_default().to_owned(),
        status: p["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
        error: p["error"].as_str().map(str::to_owned),
    }
}
