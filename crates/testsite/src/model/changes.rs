//! Pages that change: when each numeric page gets a new version, and what each version
//! serves — all a function of the seed and the time since the site started, so a test can
//! say which version of a page was current at any instant.
//!
//! Page `p` changes at rate λ_p, log-uniform between the configured bounds; its changes are a
//! Poisson process whose gaps are drawn from `mix(seed, p, k)`, so version `v` begins at
//! `T_v` (`T_0 = 0`) and the version at `t` is the number of changes up to `t`. Each version
//! shows its number and links one leaf page of its own (`/c/p{p}-v{v}.html`), so a changed
//! page brings a new link. Validators follow the version, but not on every page: like the
//! web, some pages send an ETag and a Last-Modified, some only one of them, some neither
//! (then only the payload tells a change).

use super::{HostId, Html, Link, Resource, Site, Target};

/// Salt of the rate draw.
const SALT_RATE: u64 = 0x7261_7465;
/// Salt of the gap draws (added to the change's number).
const SALT_GAP: u64 = 0x6761_7000_0000;

/// Which validators a changing page sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validators {
    /// `ETag: "{p:x}-{v:x}"`.
    pub etag: bool,
    /// `Last-Modified` at the version's start.
    pub last_modified: bool,
}

/// A uniform draw in `[0, 1)` from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl Site {
    /// The numeric page at `path` on host `h`, if pages change on this site.
    pub fn changing_page(&self, h: HostId, path: &str) -> Option<u64> {
        self.cfg.changing?;
        self.page_at(h, path)
    }

    /// Page `p`'s changes per second (0 when pages do not change).
    pub fn change_rate(&self, p: u64) -> f64 {
        let Some(c) = self.cfg.changing else {
            return 0.0;
        };
        let u = unit(super::mix(self.cfg.seed, p, SALT_RATE));
        let per_day = c.min_per_day * (c.max_per_day / c.min_per_day).powf(u);
        per_day / c.day_secs
    }

    /// When page `p`'s changes happen, in seconds since the site started: `T_1, T_2, …`.
    pub fn changes(&self, p: u64) -> impl Iterator<Item = f64> + '_ {
        let rate = self.change_rate(p);
        let seed = self.cfg.seed;
        let mut t = 0.0;
        (1u64..).map_while(move |k| {
            if rate <= 0.0 {
                return None;
            }
            // An exponential gap; 1 - u is in (0, 1], so the log is finite.
            t += -(1.0 - unit(super::mix(seed, p, SALT_GAP + k))).ln() / rate;
            Some(t)
        })
    }

    /// Page `p`'s version at `t` seconds after the site started: its changes up to `t`.
    pub fn version_at(&self, p: u64, t: f64) -> u64 {
        self.changes(p).take_while(|&c| c <= t).count() as u64
    }

    /// When version `v` of page `p` began, in seconds since the site started (0 for 0).
    pub fn change_time(&self, p: u64, v: u64) -> f64 {
        match v.checked_sub(1) {
            None => 0.0,
            Some(k) => self.changes(p).nth(k as usize).unwrap_or(f64::INFINITY),
        }
    }

    /// Which validators page `p` sends: ETag and Last-Modified on six pages in ten, only
    /// Last-Modified on two, only an ETag on one, none on one.
    pub fn validators(&self, p: u64) -> Validators {
        let (etag, last_modified) = match p % 10 {
            0..=5 => (true, true),
            6 | 7 => (false, true),
            8 => (true, false),
            _ => (false, false),
        };
        Validators {
            etag,
            last_modified,
        }
    }

    /// The ETag of version `v` of page `p` (hex groups, as nginx writes its tags).
    pub fn etag(&self, p: u64, v: u64) -> String {
        format!("\"{p:x}-{v:x}\"")
    }

    /// Version `v` of page `p`: its usual links, then the leaf its version adds.
    pub fn page_html_at(&self, p: u64, v: u64) -> Html {
        let mut html = self.page_html(p);
        html.version = Some(v);
        if v > 0 {
            html.links.push(Link {
                target: Target {
                    host: self.page_host(p),
                    path: format!("/c/p{p}-v{v}.html"),
                },
                nofollow: false,
            });
        }
        html
    }

    /// A version's leaf page (`/c/p{p}-v{v}.html` on page `p`'s host), if `route` is one.
    pub(super) fn change_leaf(&self, h: HostId, route: &str) -> Option<Resource> {
        self.cfg.changing?;
        let (p, v) = route
            .strip_prefix("/c/p")?
            .strip_suffix(".html")?
            .split_once("-v")?;
        let (p, v): (u64, u64) = (p.parse().ok()?, v.parse().ok()?);
        let canonical = format!("/c/p{p}-v{v}.html") == route;
        (canonical && v > 0 && p < self.cfg.pages && self.page_host(p) == h).then(|| {
            Resource::Html(Html::new(
                format!("Page {p} changed: version {v}"),
                Vec::new(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Changing, SiteConfig};
    use crate::model::Site;

    fn site(seed: u64) -> Site {
        Site::new(
            SiteConfig {
                pages: 200,
                seed,
                changing: Some(Changing {
                    day_secs: 60.0,
                    min_per_day: 0.1,
                    max_per_day: 100.0,
                }),
                ..SiteConfig::default()
            },
            8080,
        )
        .unwrap()
    }

    #[test]
    fn versions_are_deterministic_monotone_and_spread() {
        let (a, b, other) = (site(1), site(1), site(2));
        let mut differs = false;
        for p in 0..200 {
            let mut last = 0;
            for step in 0..50 {
                let t = f64::from(step) * 60.0;
                let v = a.version_at(p, t);
                assert_eq!(v, b.version_at(p, t), "same seed, same version");
                assert!(v >= last, "versions never go back");
                last = v;
            }
            differs |= a.version_at(p, 3000.0) != other.version_at(p, 3000.0);
            // The version begins when its change happens.
            let v = a.version_at(p, 600.0);
            assert!(a.change_time(p, v) <= 600.0 && a.change_time(p, v + 1) > 600.0);
        }
        assert!(differs, "another seed, other changes");
        // Rates span the three orders of magnitude configured (per 60 s day).
        let rates: Vec<f64> = (0..200).map(|p| a.change_rate(p) * 60.0).collect();
        let (lo, hi) = rates
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
        assert!((0.1..0.3).contains(&lo), "{lo}");
        assert!(hi <= 100.0 && hi > 30.0, "{hi}");
    }

    #[test]
    fn each_version_links_its_own_leaf_which_is_served() {
        let s = site(1);
        let p = 57;
        let html = s.page_html_at(p, 3);
        let leaf = &html.links.last().unwrap().target;
        assert_eq!(leaf.path, format!("/c/p{p}-v3.html"));
        assert!(matches!(
            s.resolve(leaf.host, &leaf.path),
            crate::model::Resource::Html(_)
        ));
        assert!(s
            .page_html_at(p, 0)
            .links
            .iter()
            .all(|l| !l.target.path.starts_with("/c/")));
        // Not a leaf: version 0, another host, a non-canonical spelling.
        assert!(matches!(
            s.resolve(leaf.host, &format!("/c/p{p}-v0.html")),
            crate::model::Resource::NotFound
        ));
        assert!(matches!(
            s.resolve(leaf.host, &format!("/c/p{p}-v03.html")),
            crate::model::Resource::NotFound
        ));
        assert!(matches!(
            s.resolve((leaf.host + 1) % 5, &leaf.path),
            crate::model::Resource::NotFound
        ));
    }
}
