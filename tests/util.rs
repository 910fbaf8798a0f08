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

/// `cmd` run by a shell that first sets `ulimit FLAGS` (`-n 1024`, `-Sn 512`) and then
/// becomes it (`exec`): the same program, arguments, environment and directory, under that
/// open-file limit. Standard streams are the caller's to set on the result.
pub fn under_ulimit(flags: &str, cmd: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("ulimit {flags} && exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => sh.env(key, v),
            None => sh.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    sh
}

/// A `pages.jsonl` record as the test site's ground truth reads it.
pub fn recorded(p: &serde_json::Value) -> testsite::Recorded {
    testsite::Recorded {
        url: p["url"].as_str().unwrap_or_default().to_owned(),
        status: p["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
        error: p["error"].as_str().map(str::to_owned),
    }
}

/// One HTTP/1.1 request to `addr` (`host:port`) over a plain socket, `Connection: close`:
/// the whole response as text (status line, headers, body). `Host` is `addr` unless
/// `headers` names one; a body is sent as JSON unless `headers` names a `Content-Type`.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).expect("the service accepts");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let named = |n: &str| headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !named("host") {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(b) = body {
        if !named("content-type") {
            req.push_str("Content-Type: application/json\r\n");
        }
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Stops a `crawler serve` with SIGTERM, as an operator would, and asserts that it exits 0
/// (drained and written out).
pub fn terminate(mut child: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(status.success(), "serve exited with {status}");
}

/// The stderr of a `crawler serve` (or `demo`) kept whole while it runs, and the address it
/// prints for its dashboard: (address, the log so far).
pub fn watch_serve(
    child: &mut std::process::Child,
) -> (String, std::sync::Arc<std::sync::Mutex<String>>) {
    use std::io::BufRead;
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let kept = std::sync::Arc::clone(&log);
    let stderr = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.split("dashboard on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_owned());
            }
            let mut l = kept.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let addr = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("serve printed its address");
    (addr, log)
}

/// A test crawl's directory: `crawler.toml` holding the given settings and `out/` beside it —
/// what every test that runs the binary on a file of settings starts from.
pub struct CrawlDir {
    dir: tempfile::TempDir,
    pub config: PathBuf,
    pub out: PathBuf,
}

impl CrawlDir {
    /// A new directory whose `crawler.toml` is `settings`.
    pub fn new(settings: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("crawler.toml");
        std::fs::write(&config, settings).unwrap();
        let out = dir.path().join("out");
        Self { dir, config, out }
    }

    /// `crawler SUBCOMMAND --config … --out …` with the test site's names (`*.test`) resolved
    /// to loopback and logs at `warn`.
    pub fn command(&self, subcommand: &str) -> Command {
        let mut cmd = crawler();
        cmd.args([subcommand, "--config", self.config.to_str().unwrap()])
            .args(["--out", self.out.to_str().unwrap()])
            .args(["--resolve", "*.test=127.0.0.1"])
            .env("RUST_LOG", "warn");
        cmd
    }

    /// `crawler crawl` from `seed`.
    pub fn crawl(&self, seed: &str) -> Command {
        let mut cmd = self.command("crawl");
        cmd.args(["--seed", seed]);
        cmd
    }

    /// `crawler serve` on a loopback port of the kernel's choosing, its stdout to nowhere
    /// and its stderr piped: spawn it and hand it to [`watch_serve`] for the address.
    pub fn serve(&self) -> Command {
        let mut cmd = self.command("serve");
        // Its stdout goes nowhere unless a test asks for it: a serve left running by a test
        // that failed holds no pipe of the test run's output open.
        cmd.args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// The directory itself (`crawler.toml` and `out/` are in it).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Runs `cmd` to its end off the async runtime (a test's other tasks — the test site — keep
/// serving meanwhile) and returns its output.
pub async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("the command's thread")
        .expect("the command runs")
}
