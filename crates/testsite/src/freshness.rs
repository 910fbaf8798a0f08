//! How fresh a crawl kept a changing site, computed exactly from the request log: the site
//! knows which version of each page was current at every instant, and the log says which
//! version each fetch got.
//!
//! A page's copy is the version its last fetch (a 200, or a 304 confirming the version then
//! current) got. The copy is *fresh* while it is the current version; its *age* is 0 while
//! fresh and, once stale, the time since the first change it missed (Cho & Garcia-Molina's
//! two measures). Both are averaged over time in `[from, to]` and over the pages fetched at
//! least once; a page with no copy yet counts as stale, aged from `from`.

use std::collections::BTreeMap;

use crate::model::Site;
use crate::observer::RequestRecord;
use crate::server::canonical_path;

/// Freshness of a crawl over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Freshness {
    /// Changing pages fetched at least once (in the whole log).
    pub pages: u64,
    /// Fetches of those pages within the window.
    pub fetches: u64,
    /// Of them, answered 304.
    pub not_modified: u64,
    /// Time- and page-averaged share of fresh copies, 0 to 1.
    pub fresh: f64,
    /// Time- and page-averaged age, seconds.
    pub mean_age_secs: f64,
}

impl Site {
    /// The freshness `log` (a changing site's request log) kept over `[from, to]`, seconds
    /// since the site started. Fetches after `to` are ignored; those before `from` give the
    /// copies the window starts with.
    pub fn freshness(&self, log: &[RequestRecord], from: f64, to: f64) -> Freshness {
        // Each changing page's fetches: (time, version got), in time order.
        let mut fetches: BTreeMap<u64, Vec<(f64, u64)>> = BTreeMap::new();
        let mut not_modified = 0;
        for r in log {
            let (Some(v), 200 | 304) = (r.version, r.status) else {
                continue;
            };
            if r.status == 304 && (from..=to).contains(&(r.at_ms / 1000.0)) {
                not_modified += 1;
            }
            let Some(h) = self.host_id(&r.host) else {
                continue;
            };
            if let Some(p) = self.changing_page(h, &canonical_path(&r.path)) {
                fetches.entry(p).or_default().push((r.at_ms / 1000.0, v));
            }
        }
        let span = (to - from).max(f64::MIN_POSITIVE);
        let (mut fresh_time, mut age_time, mut in_window) = (0.0, 0.0, 0);
        for (&p, list) in &mut fetches {
            list.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (f, a) = self.page_freshness(p, list, from, to);
            fresh_time += f;
            age_time += a;
            in_window += list.iter().filter(|(t, _)| (from..=to).contains(t)).count() as u64;
        }
        let pages = fetches.len() as u64;
        let denominator = span * pages.max(1) as f64;
        Freshness {
            pages,
            fetches: in_window,
            not_modified,
            fresh: fresh_time / denominator,
            mean_age_secs: age_time / denominator,
        }
    }

    /// Page `p`'s fresh time and integrated age over `[from, to]`, given its fetches in
    /// time order.
    fn page_freshness(&self, p: u64, fetches: &[(f64, u64)], from: f64, to: f64) -> (f64, f64) {
        let mut copy = fetches
            .iter()
            .take_while(|f| f.0 <= from)
            .last()
            .map(|f| f.1);
        let mut next_fetch = fetches.iter().skip_while(|f| f.0 <= from).peekable();
        let mut current = self.version_at(p, from);
        let mut changes = self.changes(p).skip(current as usize).peekable();
        let (mut fresh, mut age) = (0.0, 0.0);
        let mut t = from;
        loop {
            let fetch_at = next_fetch.peek().map_or(f64::INFINITY, |f| f.0);
            let change_at = changes.peek().copied().unwrap_or(f64::INFINITY);
            let until = fetch_at.min(change_at).min(to);
            if copy == Some(current) {
                fresh += until - t;
            } else {
                // Stale since the first change after the copy (or since `from`, without one).
                let since = copy.map_or(from, |c| self.change_time(p, c + 1).max(from));
                age += (until - t) * ((t + until) / 2.0 - since);
            }
            if until >= to {
                return (fresh, age);
            }
            if fetch_at <= change_at {
                copy = next_fetch.next().map(|f| f.1);
            } else {
                changes.next();
                current += 1;
            }
            t = until;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Changing, SiteConfig};
    use crate::model::Site;
    use crate::observer::RequestRecord;

    fn site() -> Site {
        Site::new(
            SiteConfig {
                pages: 50,
                changing: Some(Changing {
                    day_secs: 100.0,
                    min_per_day: 1.0,
                    max_per_day: 10.0,
                }),
                ..SiteConfig::default()
            },
            8080,
        )
        .unwrap()
    }

    fn fetch(s: &Site, p: u64, at: f64, status: u16) -> RequestRecord {
        let t = s.page_target(p);
        RequestRecord {
            at_ms: at * 1000.0,
            host: s.host_name(t.host),
            path: t.path,
            concurrent: 1,
            status,
            user_agent: String::new(),
            version: Some(s.version_at(p, at)),
        }
    }

    #[test]
    fn a_page_fetched_at_each_change_is_always_fresh_and_one_never_refetched_ages() {
        let s = site();
        let p = 12;
        let changes: Vec<f64> = s.changes(p).take_while(|&c| c < 100.0).collect();
        assert!(changes.len() >= 2, "{changes:?}");
        // Fetched at 0 and the instant of each change: fresh throughout.
        let mut log = vec![fetch(&s, p, 0.0, 200)];
        log.extend(changes.iter().map(|&c| fetch(&s, p, c, 304)));
        let f = s.freshness(&log, 0.0, 100.0);
        assert_eq!((f.pages, f.fetches), (1, 1 + changes.len() as u64));
        assert_eq!(f.not_modified, changes.len() as u64);
        assert!((f.fresh - 1.0).abs() < 1e-9, "{f:?}");
        assert!(f.mean_age_secs.abs() < 1e-9, "{f:?}");

        // Fetched once at 0: fresh until the first change, then aging from it.
        let f = s.freshness(&[fetch(&s, p, 0.0, 200)], 0.0, 100.0);
        let first = changes[0];
        assert!((f.fresh - first / 100.0).abs() < 1e-9, "{f:?}");
        // Age grows linearly from the first change: ∫ (t - first) dt over [first, 100].
        let want = (100.0 - first).powi(2) / 2.0 / 100.0;
        assert!((f.mean_age_secs - want).abs() < 1e-6, "{f:?} {want}");
    }

    #[test]
    fn fetches_of_other_urls_and_failures_do_not_count() {
        let s = site();
        let mut other = fetch(&s, 3, 1.0, 200);
        other.path = "/robots.txt".into();
        other.version = None;
        let failed = fetch(&s, 3, 2.0, 500);
        let f = s.freshness(&[other, failed], 0.0, 10.0);
        assert_eq!((f.pages, f.fetches), (0, 0));
    }
}
