//! Link extraction: decode the bytes with the right charset, parse them as HTML5 (scraper /
//! html5ever, which survives any malformed or deeply nested markup), and return every
//! followable link resolved to an absolute URL.
//!
//! Pure and synchronous: the engine runs it on its parsing threads so parsing never stalls the
//! async reactor.

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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// Absolute http(s) URLs to offer, in document order (duplicates included), parsed:
    /// the frontier canonicalises them without parsing them again.
    pub links: Vec<Url>,
    /// `<meta name="robots" content="nofollow">` was present (and honoured).
    pub meta_nofollow: bool,
    /// `rel="nofollow"` links skipped.
    pub nofollow_skipped: usize,
}

/// Picks the character set: `charset=` of the `Content-Type` header, then a byte-order mark,
/// then a `<meta charset>` / `<meta http-equiv>` in the first 1024 bytes, else UTF-8.
pub fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let from_header = content_type
        .and_then(|ct| {
            ct.to_ascii_lowercase()
                .split("charset=")
                .nth(1)
                .map(str::to_owned)
        })
        .and_then(|label| {
            let label = label.trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace());
            encoding_rs::Encoding::for_label(label.split(';').next()?.trim().as_bytes())
        });
    let encoding = from_header
        .or_else(|| encoding_rs::Encoding::for_bom(body).map(|(e, _)| e))
        .or_else(|| meta_charset(&body[..body.len().min(1024)]))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

fn meta_charset(head: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = text.find("<meta")?;
    let rest = &text[at..];
    let idx = rest.find("charset=")? + "charset=".len();
    let label: String = rest[idx..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    encoding_rs::Encoding::for_label(label.as_bytes())
}

/// Extracts links from `body` served at `page` with `content_type`.
pub fn extract(
    body: &[u8],
    content_type: Option<&str>,
    page: &Url,
    respect_nofollow: bool,
) -> Extracted {
    let text = decode(body, content_type);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("http://h.test/a/b.html").unwrap()
    }

    fn links(e: &Extracted) -> Vec<&str> {
        e.links.iter().map(Url::as_str).collect()
    }

    #[test]
    fn finds_every_kind_of_link_and_resolves_them() {
        let html = br#"<html><head><base href="/base/"><link rel="canonical" href="canon">
            <link rel="stylesheet" href="style.css"></head><body>
            <a href="x">x</a> <a href=" /y#f ">y</a> <area href="//other.test/z">
            <iframe src="frame.html"></iframe><a href="javascript:void(0)">js</a>
            <a href="mailto:a@b">m</a><a href="data:text/html,x">d</a>
            <a rel="nofollow" href="hidden">h</a></body></html>"#;
        let e = extract(html, Some("text/html"), &page(), true);
        assert_eq!(
            links(&e),
            vec![
                "http://h.test/base/canon",
                "http://h.test/base/x",
                "http://h.test/y",
                "http://other.test/z",
                "http://h.test/base/frame.html",
            ]
        );
        assert_eq!(e.nofollow_skipped, 1);
        let all = extract(html, Some("text/html"), &page(), false);
        assert!(links(&all).contains(&"http://h.test/base/hidden"));
    }

    #[test]
    fn meta_robots_nofollow_stops_everything() {
        let html = br#"<meta name="ROBOTS" content="noindex, NoFollow"><a href="x">x</a>"#;
        let e = extract(html, None, &page(), true);
        assert!(e.meta_nofollow && e.links.is_empty());
    }

    #[test]
    fn charsets_from_header_meta_and_bom() {
        let latin1 = b"<a href=\"/caf\xe9\">x</a>";
        let e = extract(latin1, Some("text/html; charset=ISO-8859-1"), &page(), true);
        assert_eq!(links(&e), vec!["http://h.test/caf%C3%A9"]);
        let (sjis, _, _) =
            encoding_rs::SHIFT_JIS.encode("<meta charset=\"Shift_JIS\"><a href=\"/日本\">x</a>");
        let e = extract(&sjis, Some("text/html"), &page(), true);
        assert_eq!(links(&e), vec!["http://h.test/%E6%97%A5%E6%9C%AC"]);
        let bom = b"\xef\xbb\xbf<a href=\"/\xc3\xa9\">x</a>";
        assert_eq!(
            links(&extract(bom, None, &page(), true)),
            vec!["http://h.test/%C3%A9"]
        );
        let broken = b"<p>\xff\xfe</p><a href=\"/ok\">x</a>";
        assert_eq!(
            links(&extract(
                broken,
                Some("text/html; charset=utf-8"),
                &page(),
                true
            )),
            vec!["http://h.test/ok"]
        );
    }

    #[test]
    fn survives_hostile_markup() {
        let mut deep = "<div><span><b>".repeat(50_000);
        deep.push_str("<a href=\"/bottom\">x</a>");
        let e = extract(deep.as_bytes(), None, &page(), true);
        assert_eq!(links(&e), vec!["http://h.test/bottom"]);
        let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let _ = extract(&garbage, Some("text/html"), &page(), true);
    }
}
