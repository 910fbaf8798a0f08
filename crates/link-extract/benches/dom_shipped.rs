//! The benchmark's second baseline: the DOM extractor as the crawl shipped it when issue 24
//! was filed (`crates/engine/src/extract.rs` at commit 8812394, its tests left out): the body
//! decoded to a `String` (by today's `decode`, the same work: its charset sniffing is the one
//! change since), scraper's `Html::parse_document` (html5ever, scripting on), CSS selectors,
//! `Url::join` for every link. The other DOM row (`tests/oracle/`) walks
//! html5ever's tree through today's link rules (each URL once per page, origins parsed once),
//! so it is faster than this and is the harder baseline.

use std::sync::LazyLock;

use scraper::{Html, Selector};
use url::Url;

/// The selectors, parsed once (not per page).
fn selector(css: &'static str) -> Selector {
    Selector::parse(css).expect("static selector")
}
static METAS: LazyLock<Selector> = LazyLock::new(|| selector("meta[name]"));
static BASE: LazyLock<Selector> = LazyLock::new(|| selector("base[href]"));
static LINKS: LazyLock<Selector> =
    LazyLock::new(|| selector("a[href], area[href], link[href], frame[src], iframe[src]"));

/// Links found on a page.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Absolute http(s) URLs, in document order, duplicates included.
    pub links: Vec<Url>,
    /// `<meta name="robots" content="nofollow">` was present (and honoured).
    pub meta_nofollow: bool,
    /// `rel="nofollow"` links skipped.
    pub nofollow_skipped: usize,
}

/// Extracts links from `body` served at `page` with `content_type`.
pub fn extract(
    body: &[u8],
    content_type: Option<&str>,
    page: &Url,
    respect_nofollow: bool,
) -> Extracted {
    let text = link_extract::decode(body, content_type);
    let doc = Html::parse_document(&text);
    let mut out = Extracted::default();

    if respect_nofollow {
        out.meta_nofollow = doc.select(&METAS).any(|m| {
            let v = m.value();
            v.attr("name")
                .is_some_and(|n| n.eq_ignore_ascii_case("robots"))
                && v.attr("content").is_some_and(|c| {
                    c.to_ascii_lowercase()
                        .split(',')
                        .any(|t| matches!(t.trim(), "nofollow" | "none"))
                })
        });
        if out.meta_nofollow {
            return out;
        }
    }
    let base = doc
        .select(&BASE)
        .next()
        .and_then(|b| page.join(b.value().attr("href")?.trim()).ok())
        .unwrap_or_else(|| page.clone());

    for el in doc.select(&LINKS) {
        let v = el.value();
        let rel = v.attr("rel").unwrap_or("").to_ascii_lowercase();
        let raw = match v.name() {
            "frame" | "iframe" => v.attr("src"),
            "link" => {
                // Only links that name other pages, not stylesheets or icons.
                let wanted = rel
                    .split_ascii_whitespace()
                    .any(|r| matches!(r, "canonical" | "alternate" | "next" | "prev"));
                if !wanted {
                    continue;
                }
                v.attr("href")
            }
            _ => v.attr("href"),
        };
        let Some(raw) = raw else { continue };
        if respect_nofollow && rel.split_ascii_whitespace().any(|r| r == "nofollow") {
            out.nofollow_skipped += 1;
            continue;
        }
        let raw = raw.trim();
        let lower = raw.get(..11).unwrap_or(raw).to_ascii_lowercase();
        if lower.starts_with("javascript:")
            || lower.starts_with("mailto:")
            || lower.starts_with("data:")
            || lower.starts_with("tel:")
        {
            continue;
        }
        if let Ok(mut u) = base.join(raw) {
            if matches!(u.scheme(), "http" | "https") {
                u.set_fragment(None);
                out.links.push(u);
            }
        }
    }
    out
}
