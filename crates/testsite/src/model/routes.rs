//! The fixed routes every host serves — redirects, errors, transient failures, binary files,
//! content-type lies, charsets, nofollow, compression — in one table that drives both the
//! router ([`Site::resolve`]) and the links of the hosts' root pages
//! ([`Site::special_links`]), so a route cannot be served without being linked or linked
//! without being served. Numbered routes (the chain, orphans) follow the table, then host 0's
//! hostile pages (`hostile.rs`).

use super::{Charset, Encoding, HostId, Html, Link, Resource, Site, Target};

/// What a route serves on host `h`.
type Serve = fn(&Site, HostId) -> Resource;

/// Whether, and how, the root pages link a route.
#[derive(Debug, Clone, Copy)]
enum Linked {
    /// Reached only through another page.
    No,
    /// Linked by its path.
    Yes,
    /// Linked by its path and with these queries too (the route answers any query).
    WithQueries(&'static [&'static str]),
}

/// One fixed route: its canonical path (no query), whether the root pages link it, and what
/// it serves.
struct Route {
    path: &'static str,
    linked: Linked,
    serve: Serve,
}

const fn route(path: &'static str, linked: Linked, serve: Serve) -> Route {
    Route {
        path,
        linked,
        serve,
    }
}

use Linked::{No, WithQueries, Yes};

/// Every fixed route, in the order the root pages link them.
const ROUTES: &[Route] = &[
    route("/robots.txt", No, |s, h| Resource::Robots(s.robots_kind(h))),
    route("/redirect/301", Yes, |s, h| {
        redirect_to(301, s.some_page(h, 0), false)
    }),
    route("/redirect/302", Yes, |s, h| {
        redirect_to(302, s.some_page(h, 1), true)
    }),
    route("/redirect/307", Yes, |s, h| {
        redirect_to(307, s.some_page(h, 2), false)
    }),
    route("/redirect/308", Yes, |s, h| {
        redirect_to(308, s.some_page(h, 3), true)
    }),
    route("/redirect/chain/3", Yes, |_, h| {
        redirect(302, h, "/redirect/chain/2", true)
    }),
    route("/redirect/chain/2", No, |_, h| {
        redirect(302, h, "/redirect/chain/1", false)
    }),
    route("/redirect/chain/1", No, |_, h| {
        redirect(301, h, "/redirect/chain-end", true)
    }),
    route("/redirect/chain-end", No, |_, _| {
        html("End of the redirect chain", vec![])
    }),
    route("/redirect/loop-a", Yes, |_, h| {
        redirect(301, h, "/redirect/loop-b", true)
    }),
    route("/redirect/loop-b", No, |_, h| {
        redirect(301, h, "/redirect/loop-a", true)
    }),
    route("/redirect/cross-host", Yes, |s, h| {
        redirect(301, (h + 1) % s.cfg.hosts, "/", false)
    }),
    route("/redirect/to-private", Yes, |_, h| {
        redirect(301, h, "/private/secret.html", true)
    }),
    route("/private/secret.html", No, |_, _| html("Secret", vec![])),
    route("/missing", Yes, |_, _| Resource::Status(404)),
    route("/gone", Yes, |_, _| Resource::Status(410)),
    route("/flaky", Yes, |_, _| {
        transient(500, None, "Flaky, now fine")
    }),
    route("/busy", Yes, |_, _| {
        transient(503, Some(1), "Busy, now fine")
    }),
    route("/slow-down", Yes, |_, _| {
        transient(429, Some(1), "Slowed down, now fine")
    }),
    route("/files/photo.png", Yes, |_, _| binary("image/png", 1, 2048)),
    route(
        "/files/report.pdf",
        WithQueries(&["download=1", "download=1&x=2"]),
        |_, _| binary("application/pdf", 2, 4096),
    ),
    route("/files/data.json", Yes, |_, _| {
        binary("application/json", 3, 0)
    }),
    route("/lie/html-as-image", Yes, |s, h| {
        let mut page = Html::new(
            "HTML served as an image",
            vec![s.link(h, "/lie/unreachable")],
        );
        page.content_type_lie = Some("image/png");
        Resource::Html(page)
    }),
    route("/lie/unreachable", No, |_, _| {
        html("Only linked from a page a crawler must not parse", vec![])
    }),
    route("/lie/binary-as-html", Yes, |_, _| {
        binary("text/html", 4, 3000)
    }),
    route("/enc/latin1", Yes, |s, h| {
        let mut page = Html::new("Latin-1 café", vec![s.link(h, "/enc/caf%C3%A9")]);
        page.charset = Charset::Latin1Header;
        Resource::Html(page)
    }),
    route("/enc/caf%C3%A9", No, |_, _| html("Café", vec![])),
    route("/enc/sjis", Yes, |s, h| {
        let mut page = Html::new(
            "Shift_JIS 日本語",
            vec![s.link(h, "/enc/%E6%97%A5%E6%9C%AC%E8%AA%9E")],
        );
        page.charset = Charset::ShiftJisMeta;
        Resource::Html(page)
    }),
    route("/enc/%E6%97%A5%E6%9C%AC%E8%AA%9E", No, |_, _| {
        html("日本語", vec![])
    }),
    route("/enc/bad-utf8", Yes, |s, h| {
        let mut page = Html::new("Broken UTF-8", vec![s.link(h, "/enc/ok")]);
        page.charset = Charset::BrokenUtf8;
        Resource::Html(page)
    }),
    route("/enc/ok", No, |_, _| {
        html("Reached through a page with invalid UTF-8", vec![])
    }),
    route("/nofollow", Yes, |s, h| {
        let hidden = Link {
            target: Target {
                host: h,
                path: "/nofollow/hidden".into(),
            },
            nofollow: true,
        };
        html(
            "A nofollow link",
            vec![hidden, s.link(h, "/nofollow/shown")],
        )
    }),
    route("/nofollow/hidden", No, |_, _| {
        html("Only linked with rel=nofollow", vec![])
    }),
    route("/nofollow/shown", No, |_, _| {
        html("Linked normally", vec![])
    }),
    route("/meta-nofollow", Yes, |s, h| {
        let mut page = Html::new(
            "Meta robots nofollow",
            vec![s.link(h, "/meta-nofollow/hidden")],
        );
        page.meta_nofollow = true;
        Resource::Html(page)
    }),
    route("/meta-nofollow/hidden", No, |_, _| {
        html("Only linked from a nofollow page", vec![])
    }),
    route("/compressed/gzip", Yes, |s, h| {
        compressed(s, h, "Gzip", "/compressed/gzip-target", Encoding::Gzip)
    }),
    route("/compressed/gzip-target", No, |_, _| {
        html("Linked from a gzip page", vec![])
    }),
    route("/compressed/br", Yes, |s, h| {
        compressed(s, h, "Brotli", "/compressed/br-target", Encoding::Brotli)
    }),
    route("/compressed/br-target", No, |_, _| {
        html("Linked from a brotli page", vec![])
    }),
    route("/chain/0", Yes, |s, h| s.chain_page(h, 0)),
];

fn html(title: &str, links: Vec<Link>) -> Resource {
    Resource::Html(Html::new(title, links))
}

fn redirect_to(status: u16, location: Target, relative: bool) -> Resource {
    Resource::Redirect {
        status,
        location,
        relative,
    }
}

fn redirect(status: u16, host: HostId, to: &str, relative: bool) -> Resource {
    let location = Target {
        host,
        path: to.to_owned(),
    };
    redirect_to(status, location, relative)
}

fn transient(status: u16, retry_after: Option<u32>, then: &str) -> Resource {
    Resource::Transient {
        status,
        retry_after,
        then: Box::new(html(then, vec![])),
    }
}

fn binary(content_type: &'static str, seed: u64, len: usize) -> Resource {
    Resource::Binary {
        content_type,
        seed,
        len,
    }
}

fn compressed(s: &Site, h: HostId, title: &str, target: &str, encoding: Encoding) -> Resource {
    let mut page = Html::new(title, vec![s.link(h, target)]);
    page.encoding = Some(encoding);
    page.filler = 20;
    Resource::Html(page)
}

impl Site {
    /// The fixed routes the root pages link, in order (canonical paths with queries).
    pub fn special_links(&self) -> impl Iterator<Item = String> {
        ROUTES.iter().flat_map(|r| {
            let queries: &[&str] = match r.linked {
                No => return Vec::new(),
                Yes => &[],
                WithQueries(q) => q,
            };
            std::iter::once(r.path.to_owned())
                .chain(queries.iter().map(|q| format!("{}?{q}", r.path)))
                .collect()
        })
    }

    /// What canonical `path` (with query) on host `h` serves.
    pub fn resolve(&self, h: HostId, path: &str) -> Resource {
        if h >= self.cfg.hosts {
            // Hosts beyond the site's (the many-hosts mode links 10,000 of them) exist only
            // as names: they answer 404 to everything.
            return Resource::NotFound;
        }
        if let Some(p) = self.page_at(h, path) {
            return Resource::Html(self.page_html(p));
        }
        let (route, query) = match path.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (path, None),
        };
        let fixed = ROUTES
            .iter()
            .find(|r| r.path == route && (query.is_none() || matches!(r.linked, WithQueries(_))));
        match fixed {
            Some(r) => (r.serve)(self, h),
            None => self.resolve_numbered(h, route, query),
        }
    }

    /// Page `i` of host `h`'s chain (`/chain/0` → `/chain/1` → … up to the site's depth).
    fn chain_page(&self, h: HostId, i: u32) -> Resource {
        let links = if i + 1 < self.cfg.depth {
            vec![self.link(h, &format!("/chain/{}", i + 1))]
        } else {
            vec![]
        };
        Resource::Html(Html::new(format!("Chain {i}"), links))
    }

    /// Routes with a number in them: the chain, orphans, and host 0's hostile pages.
    fn resolve_numbered(&self, h: HostId, route: &str, query: Option<&str>) -> Resource {
        if let Some(i) = route
            .strip_prefix("/chain/")
            .and_then(|s| s.parse::<u32>().ok())
        {
            if i < self.cfg.depth.max(1) && route == format!("/chain/{i}") {
                return self.chain_page(h, i);
            }
        }
        if let Some(i) = route
            .strip_prefix("/orphan/")
            .and_then(|s| s.parse::<u32>().ok())
        {
            if i < self.cfg.orphans && route == format!("/orphan/{i}") && query.is_none() {
                return Resource::Html(Html::new(
                    format!("Orphan {i}: nothing links here"),
                    vec![],
                ));
            }
        }
        if query.is_none() {
            if let Some(r) = self
                .resolve_sitemap(h, route)
                .or_else(|| self.change_leaf(h, route))
            {
                return r;
            }
        }
        self.resolve_hostile(h, route, query)
            .unwrap_or(Resource::NotFound)
    }
}
