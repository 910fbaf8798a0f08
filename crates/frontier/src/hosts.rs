//! What a frontier tells about its hosts, and the run-time controls an operator has over one
//! (url-frontier's `ListQueues`, `SetDelay` and `BlockQueueUntil`, Heritrix's per-queue view).
//!
//! Times are durations *from now* rather than instants: an implementation in another process
//! (Redis) has its own clock, and the service turns them into wall-clock times for people.
//! Listing is paginated with an opaque cursor so that a crawl of 10^5 hosts never answers
//! with all of them at once.

use std::time::Duration;

/// The order of [`HostQuery`]: descending by the figure, ties by host name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HostSort {
    /// URLs waiting (memory and disk).
    #[default]
    Queued,
    /// URLs finished.
    Done,
    /// Failed fetches (host errors and retries).
    Errors,
    /// The host name alone, ascending: an order that stays put while the crawl runs
    /// (url-frontier's ListQueues pages by offset).
    Name,
}

impl HostSort {
    /// The name used in the API (`sort=queued|done|errors`).
    pub fn as_str(self) -> &'static str {
        match self {
            HostSort::Queued => "queued",
            HostSort::Done => "done",
            HostSort::Errors => "errors",
            HostSort::Name => "name",
        }
    }

    /// The figure of `h` this order sorts by.
    pub fn key(self, h: &HostInfo) -> u64 {
        match self {
            HostSort::Queued => h.queued,
            HostSort::Done => h.done,
            HostSort::Errors => h.errors,
            HostSort::Name => 0,
        }
    }
}

/// One page of hosts to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostQuery {
    /// The order.
    pub sort: HostSort,
    /// Most hosts in the page.
    pub limit: usize,
    /// The `next` cursor of the page before (`None`: the first page).
    pub after: Option<String>,
    /// Hosts passed over before the page starts (after the cursor): paging by offset.
    pub skip: usize,
    /// Only hosts with URLs queued or leased, not blocked by an operator, and short of
    /// their limit of URLs finished ([`is_active`]).
    pub active_only: bool,
    /// Only this host (a politeness key): one host's figures.
    pub host: Option<String>,
}

/// One host's queue, as a frontier sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// The politeness key (`host`, or `host:port`).
    pub host: String,
    /// URLs waiting.
    pub queued: u64,
    /// Leases out.
    pub in_flight: u32,
    /// URLs finished (records written, or skipped).
    pub done: u64,
    /// Failed fetches (host errors and retries).
    pub errors: u64,
    /// URLs admitted for this host (what `max_pages` counts).
    pub admitted: u64,
    /// The gap between two fetch starts now in force: the largest of the delay, the
    /// robots.txt `Crawl-delay`, the latency term and the back-off.
    pub delay: Duration,
    /// The term that sets `delay`.
    pub delay_reason: crate::DelayReason,
    /// The latency term: `politeness.delay_factor ×` the last fetch's duration, at most
    /// `politeness.max_delay_ms` (zero: off, or nothing measured yet).
    pub latency_delay: Duration,
    /// The robots.txt `Crawl-delay` (zero: none).
    pub crawl_delay: Duration,
    /// The back-off after errors (zero: healthy).
    pub backoff: Duration,
    /// Time until the host may be fetched again (zero: now).
    pub ready_in: Duration,
    /// Time the host stays blocked by an operator (`None`: not blocked).
    pub blocked_for: Option<Duration>,
    /// Most leases out at once.
    pub max_in_flight: u32,
    /// The host's admission budget (`None`: no limit).
    pub max_pages: Option<u64>,
    /// Most URLs of the host finished, leases out counted (`None`: no limit): reached, the
    /// host hands out nothing more and its URLs stay queued (url-frontier's crawl limit).
    pub max_done: Option<u64>,
    /// Its address group ([`crate::AddressKey`]), with politeness per address on and once a
    /// fetcher resolved it.
    pub address: Option<String>,
    /// Hosts in that group.
    pub address_hosts: u32,
    /// Fetches in flight to that group.
    pub address_in_flight: u32,
}

/// A page of [`HostInfo`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPage {
    /// The hosts, in the query's order.
    pub hosts: Vec<HostInfo>,
    /// The cursor of the next page (`None`: this was the last).
    pub next: Option<String>,
    /// Hosts known in all (with [`HostQuery::host`]: 1 if it is known, else 0).
    pub total: u64,
}

/// Run-time controls of one host; `None` leaves a setting as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostControls {
    /// The gap between fetch starts (replaces `politeness.delay_ms` for this host; a
    /// `Crawl-delay` or back-off still wins when longer).
    pub delay: Option<Duration>,
    /// Most leases out at once (at least 1).
    pub max_in_flight: Option<u32>,
    /// Hand out nothing of this host for this long from now (zero: unblock).
    pub block_for: Option<Duration>,
    /// Most URLs admitted for this host.
    pub max_pages: Option<u64>,
    /// Most URLs of this host finished, leases out counted (0 clears it): reached, nothing
    /// more of it is handed out and its URLs stay queued.
    pub max_done: Option<u64>,
    /// The recrawl interval of this host's URLs, seconds, from each one's next completion
    /// (replaces `recrawl.interval_secs`, within the bounds; 0 clears it). The shared
    /// frontier reads it with a lease: it applies to URLs leased after the change.
    pub recrawl_secs: Option<u32>,
}

/// The cursor after `h` in `sort` order: the figure, a dot, the host name.
pub fn cursor(sort: HostSort, h: &HostInfo) -> String {
    format!("{}.{}", sort.key(h), h.host)
}

/// Whether `h` comes after `cursor` in `sort` order (descending figure, ascending name). A
/// cursor that does not parse starts from the beginning.
pub fn is_after(sort: HostSort, h: &HostInfo, cursor: &str) -> bool {
    let Some((key, host)) = cursor
        .split_once('.')
        .and_then(|(k, h)| Some((k.parse::<u64>().ok()?, h)))
    else {
        return true;
    };
    let mine = sort.key(h);
    mine < key || (mine == key && h.host.as_str() > host)
}

/// Whether `h` has URLs queued or leased, is not blocked by an operator, and has not
/// reached its limit of URLs finished.
pub fn is_active(h: &HostInfo) -> bool {
    h.queued + u64::from(h.in_flight) > 0
        && h.blocked_for.is_none()
        && h.max_done.is_none_or(|max| h.done < max)
}

/// Sorts `all` in `query` order and cuts out the page it asks for. `total` counts the hosts
/// given (the one asked for, if any) before the other filters.
pub fn paginate(mut all: Vec<HostInfo>, query: &HostQuery) -> HostPage {
    let sort = query.sort;
    if let Some(only) = &query.host {
        all.retain(|h| h.host == *only);
    }
    let total = all.len() as u64;
    if query.active_only {
        all.retain(is_active);
    }
    if let Some(after) = &query.after {
        all.retain(|h| is_after(sort, h, after));
    }
    let limit = query.limit.max(1);
    let end = query.skip.saturating_add(limit);
    let order =
        |a: &HostInfo, b: &HostInfo| sort.key(b).cmp(&sort.key(a)).then(a.host.cmp(&b.host));
    // Only the page (and what it skips) is sorted in full: a partial selection first keeps
    // 10^5 hosts cheap.
    let more = all.len() > end;
    if more {
        all.select_nth_unstable_by(end - 1, order);
        all.truncate(end);
    }
    all.sort_unstable_by(order);
    all.drain(..query.skip.min(all.len()));
    let next = if more {
        all.last().map(|h| cursor(sort, h))
    } else {
        None
    };
    HostPage {
        hosts: all,
        next,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, queued: u64) -> HostInfo {
        HostInfo {
            host: name.into(),
            queued,
            ..HostInfo::default()
        }
    }

    #[test]
    fn pages_follow_each_other_without_gaps_or_repeats() {
        let all: Vec<HostInfo> = (0..25)
            .map(|i| host(&format!("h{i}.test"), (i % 4) as u64))
            .collect();
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let q = HostQuery {
                sort: HostSort::Queued,
                limit: 7,
                after: after.clone(),
                ..HostQuery::default()
            };
            let page = paginate(all.clone(), &q);
            assert_eq!(page.total, 25);
            assert!(page.hosts.len() <= 7);
            seen.extend(page.hosts.iter().map(|h| (h.queued, h.host.clone())));
            match page.next {
                Some(c) => after = Some(c),
                None => break,
            }
        }
        let mut want: Vec<(u64, String)> = all.iter().map(|h| (h.queued, h.host.clone())).collect();
        want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(seen, want);
    }

    #[test]
    fn a_bad_cursor_starts_over() {
        let all = vec![host("a", 1), host("b", 2)];
        let q = HostQuery {
            sort: HostSort::Queued,
            limit: 10,
            after: Some("nonsense".into()),
            ..HostQuery::default()
        };
        assert_eq!(paginate(all, &q).hosts.len(), 2);
    }

    #[test]
    fn offsets_page_by_name_and_filters_apply_first() {
        let mut all: Vec<HostInfo> = (0..10).map(|i| host(&format!("h{i}"), i % 3)).collect();
        all[4].blocked_for = Some(Duration::from_secs(9));
        let names = |q: &HostQuery| -> Vec<String> {
            paginate(all.clone(), q)
                .hosts
                .into_iter()
                .map(|h| h.host)
                .collect()
        };
        let by_name = |skip, limit| HostQuery {
            sort: HostSort::Name,
            limit,
            skip,
            ..HostQuery::default()
        };
        assert_eq!(names(&by_name(0, 3)), ["h0", "h1", "h2"]);
        assert_eq!(names(&by_name(8, 3)), ["h8", "h9"]);
        assert!(names(&by_name(20, 3)).is_empty());
        let page = paginate(all.clone(), &by_name(3, 3));
        assert_eq!(page.next.as_deref(), Some("0.h5"));
        // Active: queued and not blocked (h0, h3, h6, h9 have none queued; h4 is blocked).
        let active = HostQuery {
            active_only: true,
            ..by_name(1, 3)
        };
        assert_eq!(names(&active), ["h2", "h5", "h7"]);
        let one = HostQuery {
            host: Some("h7".into()),
            ..by_name(0, 1)
        };
        let page = paginate(all.clone(), &one);
        assert_eq!((page.hosts.len(), page.total), (1, 1));
        assert_eq!(page.hosts[0].queued, 1);
    }
}
