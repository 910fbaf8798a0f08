//! The memory governor (`crawl.max_memory_mb`): keeps the process's resident memory under a
//! budget by acting *before* memory is used, not by freeing it after.
//!
//! Design choice: it measures resident memory (`VmRSS`) every 100 ms — what the budget and an
//! operator's cgroup see, the allocator returning freed pages within 50 ms — and moves two
//! levers: how many queued URLs the frontier keeps in memory (the rest spill to disk), and
//! how many fetches may *start*, through a [`Gate`] each built-in worker passes before it
//! takes a URL. A fetch already under way is never paused mid-body: its wait would count
//! against `fetch.total_timeout_ms`, and the server's own timeouts. Fetches start gradually
//! (an eighth of `crawl.concurrency`, more each tick while memory is low), so a burst of big
//! pages cannot outrun the first sample. Decrease is multiplicative and increase additive, so
//! the limit settles instead of oscillating. At the floor one fetch still runs: the crawl
//! slows, never stops, and a budget below what cannot be shed (the visited set, the state's
//! cache, the code) shows as `floor`.
//!
//! External fetchers' leases are not gated: they cost this process a table entry each, and
//! `crawl.concurrency` bounds them already.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use frontier::Frontier;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often resident memory is read.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// Fewest queued URLs memory keeps under pressure.
const QUEUE_FLOOR: usize = 1024;

/// A limit on how many holders may be inside at once, which can change while they are: a
/// lowered limit takes effect as holders leave.
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    room: Notify,
}

#[derive(Debug)]
struct GateState {
    limit: usize,
    inside: usize,
}

/// A place inside a [`Gate`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    gate: Arc<Gate>,
}

impl Gate {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(GateState {
                limit: limit.max(1),
                inside: 0,
            }),
            room: Notify::new(),
        })
    }

    /// Waits for room, then takes a place.
    pub(crate) async fn enter(self: &Arc<Self>) -> Turn {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            // Registered before the check, so a place given back in between wakes it.
            room.as_mut().enable();
            {
                let mut s = crate::sync::lock(&self.state);
                if s.inside < s.limit {
                    s.inside += 1;
                    return Turn {
                        gate: Arc::clone(self),
                    };
                }
            }
            room.await;
        }
    }

    /// Whether a holder should leave rather than go on (more are inside than the limit).
    pub(crate) fn crowded(&self) -> bool {
        let s = crate::sync::lock(&self.state);
        s.inside > s.limit
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        let raised = {
            let mut s = crate::sync::lock(&self.state);
            let raised = limit > s.limit;
            s.limit = limit.max(1);
            raised
        };
        if raised {
            self.room.notify_waiters();
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        crate::sync::lock(&self.gate.state).inside -= 1;
        self.gate.room.notify_one();
    }
}

/// How hard the governor holds back, by the share of the budget in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Throttle {
    /// Below 75%: nothing held back (or being restored, below 70%).
    None,
    /// From 75%: queues spill sooner.
    Spill,
    /// From 90%: fewer fetches start.
    Fetches,
    /// At or over the budget: one fetch at a time.
    Floor,
}

impl Throttle {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Throttle::None => "none",
            Throttle::Spill => "spill",
            Throttle::Fetches => "fetches",
            Throttle::Floor => "floor",
        }
    }
}

/// The levers' settings, decided from one sample at a time (no clock, no I/O: unit-tested).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Controller {
    budget: u64,
    max_fetches: usize,
    max_queue: usize,
    pub(crate) fetches: usize,
    pub(crate) queue: usize,
    pub(crate) throttle: Throttle,
}

impl Controller {
    /// At start: fetches at an eighth of `max_fetches` (the governed start), queue as
    /// configured.
    pub(crate) fn new(budget: u64, max_fetches: usize, max_queue: usize) -> Self {
        let max_fetches = max_fetches.max(1);
        Self {
            budget: budget.max(1),
            max_fetches,
            max_queue,
            fetches: Self::step_of(max_fetches),
            queue: max_queue,
            throttle: Throttle::None,
        }
    }

    fn step_of(max: usize) -> usize {
        (max / 8).max(1)
    }

    fn queue_floor(&self) -> usize {
        QUEUE_FLOOR.min(self.max_queue)
    }

    /// Moves the levers for a reading of `rss` bytes.
    pub(crate) fn sample(&mut self, rss: u64) {
        let permille = rss.saturating_mul(1000) / self.budget;
        let floor = self.queue_floor();
        if permille >= 1000 {
            self.throttle = Throttle::Floor;
            self.fetches = 1;
            self.queue = floor;
        } else if permille >= 900 {
            self.throttle = Throttle::Fetches;
            self.fetches = (self.fetches * 3 / 4).max(1);
            self.queue = (self.queue / 2).max(floor);
        } else if permille >= 750 && self.max_queue > 0 {
            self.throttle = Throttle::Spill;
            self.queue = (self.queue / 2).max(floor);
        } else if permille < 700 {
            self.throttle = Throttle::None;
            self.fetches = (self.fetches + Self::step_of(self.max_fetches)).min(self.max_fetches);
            self.queue = self.queue.saturating_mul(2).min(self.max_queue);
        }
        // 70–75%: everything stays as it is.
    }
}

/// What the governor did last, for status, metrics and the dashboard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub(crate) rss_bytes: u64,
    pub(crate) budget_bytes: u64,
    pub(crate) throttle: Throttle,
    pub(crate) fetches: usize,
    pub(crate) queue_capacity: usize,
    pub(crate) throttled: Duration,
}

impl Reading {
    pub(crate) fn reason(&self) -> String {
        format!(
            "resident {}% of {} MB",
            self.rss_bytes.saturating_mul(100) / self.budget_bytes.max(1),
            self.budget_bytes / (1024 * 1024)
        )
    }

    pub(crate) fn status(&self) -> output::MemoryStatus {
        output::MemoryStatus {
            rss_bytes: self.rss_bytes,
            budget_bytes: self.budget_bytes,
            throttle: self.throttle.name().to_owned(),
            reason: self.reason(),
            fetch_slots: self.fetches as u64,
            queue_capacity: self.queue_capacity as u64,
            throttled_secs: self.throttled.as_secs_f64(),
        }
    }
}

/// One crawl's governor: the gate its workers pass and the last reading.
#[derive(Debug)]
pub(crate) struct Governor {
    pub(crate) gate: Arc<Gate>,
    reading: Mutex<Reading>,
}

impl Governor {
    /// A governor for `budget_mb` MiB, or none when it is 0 or resident memory cannot be
    /// read here (off Linux: a warning, and the crawl runs ungoverned).
    pub(crate) fn new(budget_mb: u64, concurrency: usize) -> Option<Arc<Self>> {
        if budget_mb == 0 {
            return None;
        }
        if resident_bytes().is_none() {
            tracing::warn!(
                "crawl.max_memory_mb: this system does not report resident memory \
                 (/proc/self/status); the memory governor is off"
            );
            return None;
        }
        let budget = budget_mb.saturating_mul(1024 * 1024);
        let start = Controller::new(budget, concurrency, 0);
        Some(Arc::new(Self {
            gate: Gate::new(start.fetches),
            reading: Mutex::new(Reading {
                rss_bytes: 0,
                budget_bytes: budget,
                throttle: Throttle::None,
                fetches: start.fetches,
                queue_capacity: 0,
                throttled: Duration::ZERO,
            }),
        }))
    }

    pub(crate) fn reading(&self) -> Reading {
        crate::sync::lock(&self.reading).clone()
    }

    /// Samples every [`TICK`] and moves the levers until `stop`.
    pub(crate) async fn run(
        self: Arc<Self>,
        frontier: Arc<dyn Frontier>,
        concurrency: usize,
        queue_capacity: usize,
        stop: CancellationToken,
    ) {
        let budget = self.reading().budget_bytes;
        // A frontier that keeps no queue here (Redis) has no queue lever: 0.
        let spills = set_capacity(&frontier, queue_capacity).await;
        let queue_capacity = if spills { queue_capacity } else { 0 };
        let mut control = Controller::new(budget, concurrency, queue_capacity);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = Instant::now();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let Some(rss) = resident_bytes() else {
                continue;
            };
            let (queue_before, throttle_before) = (control.queue, control.throttle);
            control.sample(rss);
            self.gate.set_limit(control.fetches);
            if control.queue != queue_before {
                set_capacity(&frontier, control.queue).await;
            }
            if control.throttle != throttle_before {
                tracing::debug!(
                    throttle = control.throttle.name(),
                    fetches = control.fetches,
                    queue = control.queue,
                    rss,
                    "memory governor"
                );
            }
            let now = Instant::now();
            let mut r = crate::sync::lock(&self.reading);
            if control.throttle > Throttle::None {
                r.throttled += now - last;
            }
            last = now;
            r.rss_bytes = rss;
            r.throttle = control.throttle;
            r.fetches = control.fetches;
            r.queue_capacity = control.queue;
        }
    }
}

/// [`Frontier::set_memory_capacity`] off the reactor (lowering it writes queues to disk).
async fn set_capacity(frontier: &Arc<dyn Frontier>, entries: usize) -> bool {
    let frontier = Arc::clone(frontier);
    tokio::task::spawn_blocking(move || frontier.set_memory_capacity(entries))
        .await
        .unwrap_or(false)
}

/// The process's resident set now (`VmRSS` of `/proc/self/status`), where Linux tells it.
pub(crate) fn resident_bytes() -> Option<u64> {
    crate::report::proc_status_kib("VmRSS:").map(|kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    #[test]
    fn starts_gradually_and_grows_while_memory_is_low() {
        let mut c = Controller::new(100 * MB, 64, 100_000);
        assert_eq!(c.fetches, 8, "an eighth at start");
        c.sample(10 * MB);
        assert_eq!(c.fetches, 16);
        for _ in 0..10 {
            c.sample(10 * MB);
        }
        assert_eq!(c.fetches, 64, "never past the configured concurrency");
        assert_eq!(c.throttle, Throttle::None);
    }

    #[test]
    fn levers_act_in_order_and_recover() {
        let mut c = Controller::new(100 * MB, 64, 100_000);
        for _ in 0..8 {
            c.sample(0);
        }
        c.sample(72 * MB);
        assert_eq!((c.fetches, c.queue), (64, 100_000), "70–75%: held");
        c.sample(80 * MB);
        assert_eq!(c.throttle, Throttle::Spill);
        assert_eq!((c.fetches, c.queue), (64, 50_000), "75%: queues first");
        c.sample(95 * MB);
        assert_eq!(c.throttle, Throttle::Fetches);
        assert_eq!((c.fetches, c.queue), (48, 25_000), "90%: fetches ×¾ too");
        c.sample(101 * MB);
        assert_eq!(c.throttle, Throttle::Floor);
        assert_eq!((c.fetches, c.queue), (1, 1024), "over: the floor");
        c.sample(95 * MB);
        assert_eq!(c.fetches, 1, "never below one fetch");
        c.sample(72 * MB);
        assert_eq!((c.fetches, c.queue), (1, 1024), "no recovery above 70%");
        c.sample(50 * MB);
        assert_eq!(c.throttle, Throttle::None);
        assert_eq!((c.fetches, c.queue), (9, 2048), "recovery: +⅛, ×2");
        for _ in 0..20 {
            c.sample(50 * MB);
        }
        assert_eq!((c.fetches, c.queue), (64, 100_000), "fully restored");
    }

    #[test]
    fn without_a_queue_lever_only_fetches_move() {
        let mut c = Controller::new(100 * MB, 64, 0);
        for _ in 0..8 {
            c.sample(0);
        }
        c.sample(80 * MB);
        assert_eq!((c.throttle, c.fetches, c.queue), (Throttle::None, 64, 0));
        c.sample(95 * MB);
        assert_eq!((c.throttle, c.fetches, c.queue), (Throttle::Fetches, 48, 0));
    }

    #[test]
    fn a_small_queue_is_not_raised_by_the_floor() {
        let mut c = Controller::new(100 * MB, 4, 100);
        c.sample(200 * MB);
        assert_eq!((c.fetches, c.queue), (1, 100));
    }

    #[tokio::test]
    async fn a_gate_admits_up_to_its_limit_and_follows_changes() {
        let gate = Gate::new(2);
        let a = gate.enter().await;
        let b = gate.enter().await;
        let third = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!third.is_finished(), "full at 2");
        gate.set_limit(1);
        drop(a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!third.is_finished(), "lowered to 1: one is still inside");
        assert!(!gate.crowded());
        gate.set_limit(3);
        let c = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .expect("raised: room at once")
            .unwrap();
        gate.set_limit(1);
        assert!(gate.crowded(), "two inside a gate of one");
        drop((b, c));
        let _d = tokio::time::timeout(Duration::from_secs(5), gate.enter())
            .await
            .expect("room once both left");
    }
}
