//! Host 0's hostile pages — slow, dripping, endless, huge, a gzip bomb, 100,000 links, deep
//! nesting, spider traps, huge headers — each served and linked from the root page only while
//! its mode is on (one table drives both).

use super::{mix, HostileKind, Html, Link, Resource, Site, Target};

/// Whether a hostile mode is on.
type ModeOn = fn(&crate::config::Hostile) -> bool;

/// Host 0's hostile pages, each linked from its root page while its mode is on.
const HOSTILE: &[(&str, ModeOn)] = &[
    ("/hostile/slow-first-byte", |m| m.slow_first_byte),
    ("/hostile/drip", |m| m.drip),
    ("/hostile/endless", |m| m.endless),
    ("/hostile/huge", |m| m.huge),
    ("/hostile/gzip-bomb", |m| m.gzip_bomb),
    ("/hostile/many-links", |m| m.many_links),
    ("/hostile/nested", |m| m.nested),
    ("/hostile/trap/x", |m| m.trap),
    ("/hostile/calendar?month=0", |m| m.trap),
    ("/hostile/huge-headers", |m| m.huge_headers),
];

impl Site {
    /// Host 0's links to the hostile pages that are switched on.
    pub fn hostile_links(&self) -> Vec<&'static str> {
        let m = &self.cfg.hostile;
        HOSTILE
            .iter()
            .filter(|(_, on)| on(m))
            .map(|(path, _)| *path)
            .collect()
    }

    /// A hostile page of host 0, if `route` is one whose mode is on.
    pub(super) fn resolve_hostile(&self, route: &str, query: Option<&str>) -> Option<Resource> {
        let m = &self.cfg.hostile;
        let kind = match (route, query) {
            ("/hostile/slow-first-byte", None) if m.slow_first_byte => HostileKind::SlowFirstByte,
            ("/hostile/drip", None) if m.drip => HostileKind::Drip,
            ("/hostile/endless", None) if m.endless => HostileKind::Endless,
            ("/hostile/huge", None) if m.huge => HostileKind::Huge,
            ("/hostile/gzip-bomb", None) if m.gzip_bomb => HostileKind::GzipBomb,
            ("/hostile/huge-headers", None) if m.huge_headers => HostileKind::HugeHeaders,
            ("/hostile/many-links", None) if m.many_links => {
                // 100,000 links, all to pages that exist anyway: a dedup stress, no new work.
                let pages = self.cfg.pages;
                let links = (0..100_000u64)
                    .map(|i| Link {
                        target: self.page_target(mix(self.cfg.seed, i, 99) % pages),
                        nofollow: false,
                    })
                    .collect();
                return Some(Resource::Html(Html::new("100,000 links", links)));
            }
            ("/hostile/nested", None) if m.nested => {
                let mut page = Html::new(
                    "Deeply nested",
                    vec![self.link(0, "/hostile/nested-target")],
                );
                page.nesting = 100_000;
                return Some(Resource::Html(page));
            }
            ("/hostile/nested-target", None) if m.nested => {
                return Some(Resource::Html(Html::new(
                    "Found below 100,000 unclosed tags",
                    vec![],
                )))
            }
            (r, None) if m.trap && r.starts_with("/hostile/trap/x") => {
                let deeper = format!("{r}/x");
                return Some(Resource::Trap(Html::new(
                    "Ever deeper",
                    vec![self.link(0, &deeper)],
                )));
            }
            ("/hostile/calendar", Some(q)) if m.trap => {
                let month: u64 = q.strip_prefix("month=")?.parse().ok()?;
                let next = format!("/hostile/calendar?month={}", month + 1);
                return Some(Resource::Trap(Html::new(
                    format!("Calendar month {month}"),
                    vec![self.link(0, &next)],
                )));
            }
            _ => return None,
        };
        Some(Resource::Hostile(kind))
    }

    /// URL prefixes of spider traps: a crawler's fetches there are bounded by its trap guards,
    /// not listed one by one in the ground truth.
    pub fn trap_prefixes(&self) -> Vec<String> {
        if self.cfg.hostile.trap {
            vec![
                self.url(&Target {
                    host: 0,
                    path: "/hostile/trap/".into(),
                }),
                self.url(&Target {
                    host: 0,
                    path: "/hostile/calendar?".into(),
                }),
            ]
        } else {
            vec![]
        }
    }
}
