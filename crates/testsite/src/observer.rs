//! What the server saw, for tests to read from the server's side: a log of every request
//! (optionally written as JSON lines) and per-host statistics — requests, most in flight at
//! once, the shortest gap between two request starts.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::model::HostId;

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// When the request arrived (its headers were read), in milliseconds since the server
    /// started.
    pub at_ms: f64,
    /// The virtual host's name (or `?` for an unknown one).
    pub host: String,
    /// Path and query as requested (not decoded).
    pub path: String,
    /// Requests to this host in flight when this one arrived, itself included.
    pub concurrent: usize,
    /// Status sent.
    pub status: u16,
    /// `User-Agent` header.
    pub user_agent: String,
    /// The version of a changing page served (or, with a 304, confirmed current).
    pub version: Option<u64>,
}

impl RequestRecord {
    /// One JSON object: `{"at_ms":…,"host":…,"path":…,"concurrent":…,"status":…,"user_agent":…}`.
    /// `"version"` is there only for a changing page.
    pub fn to_json(&self) -> String {
        let version = self
            .version
            .map_or_else(String::new, |v| format!(",\"version\":{v}"));
        format!(
            "{{\"at_ms\":{:.3},\"host\":{},\"path\":{},\"concurrent\":{},\"status\":{},\"user_agent\":{}{version}}}",
            self.at_ms,
            json_string(&self.host),
            json_string(&self.path),
            self.concurrent,
            self.status,
            json_string(&self.user_agent)
        )
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Per-host politeness as observed by the server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostStats {
    /// Requests received.
    pub requests: u64,
    /// Most requests in flight at once.
    pub max_concurrent: usize,
    /// Shortest time between two consecutive request arrivals.
    pub min_gap: Option<Duration>,
    /// Requests in flight now.
    pub in_flight: usize,
    last_arrival: Option<Instant>,
}

/// What the server observed: statistics always, the full request log when asked for.
#[derive(Debug)]
pub struct Observer {
    pub(crate) start: Instant,
    /// The wall-clock time of `start`: changing pages' `Last-Modified` dates count from it.
    pub(crate) start_wall: std::time::SystemTime,
    pub(crate) hosts: DashMap<String, HostStats>,
    pub(crate) log: Option<Mutex<Vec<RequestRecord>>>,
    /// Streams records to a writer thread (the binary's `--request-log FILE`).
    pub(crate) sink: Option<Mutex<std::sync::mpsc::Sender<RequestRecord>>>,
    /// How often each (host, path) was requested: transient failures answer the first time.
    pub(crate) hits: DashMap<(HostId, String), AtomicU32>,
    /// Requests in flight now, every host together (one server's view).
    in_flight_all: AtomicUsize,
    /// The most of them at once.
    max_in_flight_all: AtomicUsize,
}

impl Observer {
    /// `keep_log`: keep every request in memory (tests); statistics are kept regardless.
    pub fn new(keep_log: bool) -> Self {
        Self {
            start: Instant::now(),
            start_wall: std::time::SystemTime::now(),
            hosts: DashMap::new(),
            log: keep_log.then(|| Mutex::new(Vec::new())),
            sink: None,
            hits: DashMap::new(),
            in_flight_all: AtomicUsize::new(0),
            max_in_flight_all: AtomicUsize::new(0),
        }
    }

    /// Statistics, plus every request appended to `out` as one JSON object per line, by a
    /// writer thread (a slow disk never stalls a response). The thread flushes and ends when
    /// the observer is dropped.
    pub fn with_log_writer(
        out: impl Write + Send + 'static,
    ) -> (Self, std::thread::JoinHandle<io::Result<()>>) {
        let (tx, rx) = std::sync::mpsc::channel::<RequestRecord>();
        let writer = std::thread::spawn(move || {
            let mut out = io::BufWriter::new(out);
            for r in rx {
                writeln!(out, "{}", r.to_json())?;
            }
            out.flush()
        });
        let mut observer = Self::new(false);
        observer.sink = Some(Mutex::new(tx));
        (observer, writer)
    }

    pub(crate) fn arrive(&self, host: &str) -> usize {
        let now = Instant::now();
        let all = self.in_flight_all.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight_all.fetch_max(all, Ordering::SeqCst);
        let mut s = self.hosts.entry(host.to_owned()).or_default();
        s.requests += 1;
        s.in_flight += 1;
        s.max_concurrent = s.max_concurrent.max(s.in_flight);
        if let Some(last) = s.last_arrival {
            let gap = now.duration_since(last);
            s.min_gap = Some(s.min_gap.map_or(gap, |g| g.min(gap)));
        }
        s.last_arrival = Some(now);
        s.in_flight
    }

    pub(crate) fn depart(&self, host: &str) {
        self.in_flight_all.fetch_sub(1, Ordering::SeqCst);
        if let Some(mut s) = self.hosts.get_mut(host) {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
    }

    pub(crate) fn hit(&self, host: HostId, path: &str) -> u32 {
        self.hits
            .entry((host, path.to_owned()))
            .or_insert_with(|| AtomicU32::new(0))
            .fetch_add(1, Ordering::Relaxed)
    }

    /// A copy of the request log (empty unless kept).
    pub fn log(&self) -> Vec<RequestRecord> {
        self.log
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default()
    }

    /// Statistics of every host that received a request.
    pub fn host_stats(&self) -> Vec<(String, HostStats)> {
        let mut v: Vec<_> = self
            .hosts
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The wall-clock time the site started: changing pages' versions count from it.
    pub fn started_at(&self) -> std::time::SystemTime {
        self.start_wall
    }

    /// The most requests in flight at once, every host together: what one server behind
    /// all the site's names saw.
    pub fn max_concurrent_all(&self) -> usize {
        self.max_in_flight_all.load(Ordering::SeqCst)
    }

    /// Total requests received.
    pub fn total_requests(&self) -> u64 {
        self.hosts.iter().map(|e| e.requests).sum()
    }
}

/// Decrements the host's in-flight count when the response body is finished or dropped.
pub(crate) struct InFlight {
    pub(crate) observer: Arc<Observer>,
    pub(crate) host: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.observer.depart(&self.host);
    }
}
