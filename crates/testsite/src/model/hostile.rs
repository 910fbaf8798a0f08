//! Host 0's hostile pages — slow, dripping, endless, huge, a gzip bomb, 100,000 links, deep
//! nesting, spider traps, huge headers, redirects into private addresses and in loops across
//! hosts, 10,000 hosts on one page, a year-long `Retry-After`, a reset mid-body, a 304 nobody
//! asked for (with a `Location`) — each served
//! and linked from the root page only while its mode is on (one table drives both). The huge
//! robots.txt is the server's (it streams what the model's rules say).

use super::{mix, HostId, HostileKind, Html, Link, Resource, Site, Target};

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
    ("/hostile/redirect-private", |m| m.redirect_private),
    ("/hostile/redirect-loop", |m| m.redirect_loop),
    ("/hostile/redirect-spiral", |m| m.redirect_loop),
    ("/hostile/many-hosts", |m| m.many_hosts),
    ("/hostile/retry-after-year", |m| m.retry_after_year),
    ("/hostile/reset", |m| m.reset),
    ("/hostile/not-modified", |m| m.not_modified),
];

/// Links on the many-hosts page, each to a different host.
pub const MANY_HOSTS: u32 = 10_000;

/// The spiral's steps after the first: `/hostile/redirect-spiral/{n}`.
const SPIRAL_STEP: &str = "/hostile/redirect-spiral/";

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

    /// The other host of the redirect loops (host 0 itself on a one-host site).
    pub fn loop_partner(&self, h: HostId) -> HostId {
        if h == 0 {
            1 % self.cfg.hosts
        } else {
            0
        }
    }

    /// A hostile page, if `route` on host `h` is one whose mode is on.
    pub(super) fn resolve_hostile(
        &self,
        h: HostId,
        route: &str,
        query: Option<&str>,
    ) -> Option<Resource> {
        let m = &self.cfg.hostile;
        if m.redirect_loop && (h == 0 || h == self.loop_partner(0)) && query.is_none() {
            let step = if route == "/hostile/redirect-spiral" {
                Some(0)
            } else {
                route
                    .strip_prefix(SPIRAL_STEP)
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|n| *n >= 1 && route == format!("{SPIRAL_STEP}{n}"))
            };
            if let Some(n) = step {
                return Some(Resource::Hostile(HostileKind::RedirectSpiral(n)));
            }
            if route == "/hostile/redirect-loop" {
                return Some(Resource::Redirect {
                    status: 302,
                    location: Target {
                        host: self.loop_partner(h),
                        path: route.to_owned(),
                    },
                    relative: false,
                });
            }
        }
        if let (Some(name), None, true) = (
            route.strip_prefix(super::HOSTILE_SITEMAPS),
            query,
            m.sitemap_bomb,
        ) {
            return match (name.starts_with("nest/"), h) {
                (true, h) if h == self.loop_partner(0) => self.hostile_sitemap(h, name),
                (false, 0) => self.hostile_sitemap(0, name),
                _ => None,
            };
        }
        if h != 0 {
            return None;
        }
        let kind = match (route, query) {
            ("/hostile/slow-first-byte", None) if m.slow_first_byte => HostileKind::SlowFirstByte,
            ("/hostile/drip", None) if m.drip => HostileKind::Drip,
            ("/hostile/endless", None) if m.endless => HostileKind::Endless,
            ("/hostile/huge", None) if m.huge => HostileKind::Huge,
            ("/hostile/gzip-bomb", None) if m.gzip_bomb => HostileKind::GzipBomb,
            ("/hostile/huge-headers", None) if m.huge_headers => HostileKind::HugeHeaders,
            ("/hostile/redirect-private", None) if m.redirect_private => {
                return Some(Resource::Redirect {
                    status: 302,
                    location: Target {
                        host: 0,
                        path: "/hostile/redirect-private/next".into(),
                    },
                    relative: true,
                });
            }
            ("/hostile/redirect-private/next", None) if m.redirect_private => {
                HostileKind::RedirectPrivate
            }
            ("/hostile/retry-after-year", None) if m.retry_after_year => {
                HostileKind::RetryAfterYear
            }
            ("/hostile/reset", None) if m.reset => HostileKind::Reset,
            ("/hostile/not-modified", None) if m.not_modified => {
                return Some(Resource::Redirect {
                    status: 304,
                    location: Target {
                        host: 0,
                        path: "/orphan/0".into(),
                    },
                    relative: true,
                });
            }
            ("/hostile/many-hosts", None) if m.many_hosts => {
                // Hosts past the site's own: each a name that answers 404 to everything.
                let links = (0..MANY_HOSTS)
                    .map(|i| Link {
                        target: Target {
                            host: self.cfg.hosts + i,
                            path: "/".into(),
                        },
                        nofollow: false,
                    })
                    .collect();
                return Some(Resource::Html(Html::new("10,000 hosts", links)));
            }
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
    /// not listed one by one in the ground truth. Changing pages' leaves are listed here too:
    /// which of them a crawl meets depends on when it fetched each page.
    pub fn trap_prefixes(&self) -> Vec<String> {
        let mut prefixes = if self.cfg.hostile.trap {
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
        };
        if self.cfg.hostile.sitemap_bomb {
            let mut hosts = vec![0, self.loop_partner(0)];
            hosts.dedup();
            prefixes.extend(hosts.into_iter().map(|host| {
                self.url(&Target {
                    host,
                    path: super::HOSTILE_SITEMAPS.into(),
                })
            }));
        }
        if self.cfg.hostile.redirect_loop {
            let mut hosts = vec![0, self.loop_partner(0)];
            hosts.dedup();
            prefixes.extend(hosts.into_iter().map(|host| {
                self.url(&Target {
                    host,
                    path: SPIRAL_STEP.into(),
                })
            }));
        }
        if self.cfg.changing.is_some() {
            prefixes.extend((0..self.cfg.hosts).map(|host| {
                self.url(&Target {
                    host,
                    path: "/c/".into(),
                })
            }));
        }
        prefixes
    }

    /// Hostile sitemap `name` of host `h` (under [`super::HOSTILE_SITEMAPS`]).
    fn hostile_sitemap(&self, h: HostId, name: &str) -> Option<Resource> {
        let file = |i: String| super::SitemapEntry {
            target: Target {
                host: h,
                path: format!("{}{i}", super::HOSTILE_SITEMAPS),
            },
            lastmod: None,
        };
        let sitemap = |index, gzip, entries| {
            Some(Resource::Sitemap {
                index,
                gzip,
                entries,
            })
        };
        match name {
            "bomb.xml.gz" => Some(Resource::Hostile(HostileKind::SitemapBomb)),
            "broken.xml" => Some(Resource::Hostile(HostileKind::SitemapBroken)),
            // 60,000 entries (the protocol allows 50,000), all on a host that is not this
            // one: a crawler reads what the limits allow and follows none.
            "huge.xml" => sitemap(
                false,
                true,
                (0..60_000)
                    .map(|i| super::SitemapEntry {
                        target: Target {
                            host: self.cfg.hosts,
                            path: format!("/{i}"),
                        },
                        lastmod: None,
                    })
                    .collect(),
            ),
            "nest/1.xml" => sitemap(true, false, vec![file("nest/2.xml".into())]),
            "nest/2.xml" => sitemap(true, false, vec![file("nest/3.xml".into())]),
            "nest/3.xml" => sitemap(false, false, vec![]),
            "many.xml" => sitemap(
                true,
                false,
                (0..1500).map(|i| file(format!("child/{i}.xml"))).collect(),
            ),
            _ => {
                let i: u32 = name
                    .strip_prefix("child/")?
                    .strip_suffix(".xml")?
                    .parse()
                    .ok()?;
                (i < 1500 && name == format!("child/{i}.xml")).then_some(Resource::Sitemap {
                    index: false,
                    gzip: false,
                    entries: vec![],
                })
            }
        }
    }

    /// Where step `n` of the redirect spiral on host `h` sends the client.
    pub fn spiral_next(&self, h: HostId, n: u32) -> String {
        self.url(&Target {
            host: self.loop_partner(h),
            path: format!("{SPIRAL_STEP}{}", n.saturating_add(1)),
        })
    }
}
