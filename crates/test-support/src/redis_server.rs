//! A private `redis-server` for tests and benchmarks: a free loopback port, its own temporary
//! directory, no persistence unless asked, stopped when dropped. Never the default port, never
//! a server this process did not start.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running private Redis.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts `redis-server` on a free port of 127.0.0.1 and waits until it answers PING.
    /// `extra` are more `--option value` arguments (e.g. `--appendonly yes`).
    pub fn start(extra: &[&str]) -> io::Result<Self> {
        // Bind to learn a free port, then give it to the server (retried if taken meanwhile).
        for _ in 0..5 {
            let dir = tempfile::tempdir()?;
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
                .local_addr()?
                .port();
            let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
            let child = spawn(port, dir.path(), &extra)?;
            let mut server = Self {
                child,
                port,
                dir,
                extra,
            };
            if server.wait_ready(Duration::from_secs(10)) {
                return Ok(server);
            }
        }
        Err(io::Error::other("redis-server did not answer PING"))
    }

    /// A private Redis for a test, or `None` (with a note on stderr) where `redis-server`
    /// cannot start and `REQUIRE_REDIS_TESTS` is not set — `scripts/test.sh` sets it after
    /// installing Debian's `redis-server`, so there a missing server fails the test.
    pub fn for_test(extra: &[&str]) -> Option<Self> {
        match Self::start(extra) {
            Ok(s) => Some(s),
            Err(e) if std::env::var_os("REQUIRE_REDIS_TESTS").is_none() => {
                eprintln!("skipped: no private redis-server ({e}); scripts/test.sh installs it");
                None
            }
            Err(e) => panic!("redis-server required (REQUIRE_REDIS_TESTS is set): {e}"),
        }
    }

    /// Stops the server gracefully (SIGTERM: it writes its AOF or RDB as configured), stays
    /// down for `down`, and starts it again on the same port with the same directory.
    pub fn restart(&mut self, down: Duration) -> io::Result<()> {
        self.stop(false)?;
        std::thread::sleep(down);
        self.start_again()
    }

    /// Kills the server (SIGKILL: what it had not written is lost), stays down for `down`,
    /// and starts it again on the same port with the same directory.
    pub fn crash_and_restart(&mut self, down: Duration) -> io::Result<()> {
        self.stop(true)?;
        std::thread::sleep(down);
        self.start_again()
    }

    /// Kills the server (SIGKILL) and leaves it down: a machine lost for good.
    pub fn kill(&mut self) -> io::Result<()> {
        self.stop(true)
    }

    /// Whether its process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn stop(&mut self, kill: bool) -> io::Result<()> {
        if kill {
            self.child.kill()?;
        } else {
            let status = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status()?;
            if !status.success() {
                return Err(io::Error::other("kill -TERM failed"));
            }
        }
        self.child.wait()?;
        Ok(())
    }

    fn start_again(&mut self) -> io::Result<()> {
        self.child = spawn(self.port, self.dir.path(), &self.extra)?;
        if self.wait_ready(Duration::from_secs(30)) {
            Ok(())
        } else {
            Err(io::Error::other("redis-server did not come back"))
        }
    }

    /// Stops the server in its tracks (SIGSTOP): connections stay open and calls wait, as
    /// when its machine stalls. [`resume`](Self::resume) lets it go on.
    pub fn pause(&self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, sig: &str) -> io::Result<()> {
        let status = Command::new("kill")
            .arg(sig)
            .arg(self.child.id().to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {sig} failed")))
        }
    }

    /// One command (e.g. `CONFIG SET maxmemory 2mb`), its reply as text: a status, an error
    /// (`-ERR …`), a number or a bulk string.
    pub fn command(&self, args: &[&str]) -> io::Result<String> {
        let mut s = TcpStream::connect_timeout(&self.addr(), Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes())?;
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if let Some(done) = whole_reply(&reply) {
                return Ok(done);
            }
        }
        Err(io::Error::other("redis-server closed the connection"))
    }

    /// The server's own directory (its AOF and RDB files).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if ping(self.addr()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

/// A private `redis-server` on `port` of 127.0.0.1, working in `dir`, persistence off unless
/// `extra` turns it on.
fn spawn(port: u16, dir: &std::path::Path, extra: &[String]) -> io::Result<Child> {
    Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
        ])
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// A whole simple reply (`+…`, `-…`, `:…`) or bulk string in `raw`, as text; `None` while
/// incomplete.
fn whole_reply(raw: &[u8]) -> Option<String> {
    let eol = raw.windows(2).position(|w| w == b"\r\n")?;
    let head = String::from_utf8_lossy(&raw[..eol]).into_owned();
    let Some(len) = head.strip_prefix('$') else {
        return Some(head);
    };
    let len: i64 = len.parse().ok()?;
    if len < 0 {
        return Some(String::new());
    }
    let body = raw.get(eol + 2..eol + 2 + len as usize)?;
    Some(String::from_utf8_lossy(body).into_owned())
}

fn ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 16];
    s.write_all(b"PING\r\n").is_ok()
        && s.read(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
