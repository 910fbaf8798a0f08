//! Every host's sitemaps: `/sitemap.xml`, an index of a plain URL set and a gzip'd one, and
//! (named only by the robots.txt of hosts with rules) `/sitemaps/listed.xml`. They list pages
//! that links also reach, one URL of another host (which a crawler must ignore), and pages
//! reachable *only* from them (`/from-sitemap/{i}.html`). With the `sitemap-bomb` hostile
//! mode, host 0's index (and host 1's, for the nested indexes) also names hostile files
//! (`/hostile/sitemap/…`).

use super::{HostId, Html, Resource, RobotsKind, Site, Target};

/// Pages only sitemaps lead to: 0 in `pages.xml`, 1 in the gzip'd `more.xml.gz`, 2 in
/// `listed.xml` (so only on hosts whose robots.txt names it).
pub const FROM_SITEMAP: u32 = 3;

/// One `<url>` or `<sitemap>` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapEntry {
    /// Where it points.
    pub target: Target,
    /// `<lastmod>`, if written.
    pub lastmod: Option<&'static str>,
}

/// The prefix of host 0's hostile sitemap files.
pub const HOSTILE_SITEMAPS: &str = "/hostile/sitemap/";

impl Site {
    fn entry(&self, host: HostId, path: &str, lastmod: Option<&'static str>) -> SitemapEntry {
        SitemapEntry {
            target: Target {
                host,
                path: path.to_owned(),
            },
            lastmod,
        }
    }

    /// Sitemap paths robots.txt of host `h` names (`Sitemap:` lines).
    pub fn robots_sitemaps(&self, h: HostId) -> Vec<String> {
        if self.robots_kind(h) == RobotsKind::Rules {
            vec!["/sitemaps/listed.xml".into()]
        } else {
            vec![]
        }
    }

    /// The sitemap route `route` of host `h`, if it is one.
    pub(super) fn resolve_sitemap(&self, h: HostId, route: &str) -> Option<Resource> {
        let sitemap = |index, gzip, entries| {
            Some(Resource::Sitemap {
                index,
                gzip,
                entries,
            })
        };
        match route {
            "/sitemap.xml" => {
                let mut entries = vec![
                    self.entry(h, "/sitemaps/pages.xml", Some("2026-11-20")),
                    self.entry(h, "/sitemaps/more.xml.gz", None),
                ];
                if self.cfg.hostile.sitemap_bomb {
                    // The nested indexes live on the loop partner (host 1), so host 0's
                    // per-host file limit, which many.xml exhausts, does not decide them.
                    let mut names = Vec::new();
                    if h == 0 {
                        names.extend(["bomb.xml.gz", "huge.xml", "broken.xml", "many.xml"]);
                    }
                    if h == self.loop_partner(0) {
                        names.push("nest/1.xml");
                    }
                    for name in names {
                        entries.push(self.entry(h, &format!("{HOSTILE_SITEMAPS}{name}"), None));
                    }
                }
                sitemap(true, false, entries)
            }
            "/sitemaps/pages.xml" => {
                let other = (h + 1) % self.cfg.hosts;
                sitemap(
                    false,
                    false,
                    vec![
                        self.entry(h, "/", None),
                        SitemapEntry {
                            target: self.some_page(h, 0),
                            lastmod: Some("2026-11-01"),
                        },
                        self.entry(h, "/from-sitemap/0.html", Some("2026-11-24T10:00:00+00:00")),
                        // Another host's URL: not this sitemap's to list.
                        self.entry(other, "/from-sitemap/0.html", None),
                    ],
                )
            }
            "/sitemaps/more.xml.gz" => sitemap(
                false,
                true,
                vec![self.entry(h, "/from-sitemap/1.html", Some("2026-11-02"))],
            ),
            "/sitemaps/listed.xml" => sitemap(
                false,
                false,
                vec![self.entry(h, "/from-sitemap/2.html", None)],
            ),
            _ => {
                let i: u32 = route
                    .strip_prefix("/from-sitemap/")?
                    .strip_suffix(".html")?
                    .parse()
                    .ok()?;
                (i < FROM_SITEMAP && route == format!("/from-sitemap/{i}.html"))
                    .then(|| Resource::Html(Html::new(format!("Found in a sitemap ({i})"), vec![])))
            }
        }
    }
}
