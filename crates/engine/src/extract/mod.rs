//! Link extraction without a DOM: the page's bytes are decoded with the right charset and run
//! through an HTML5 tokenizer (`tokenizer.rs`) with the few tree-construction decisions that
//! change which links exist (`tree.rs`), and the link rules (`Links`) see every element a
//! scripting-off HTML5 parse would create, in document order. Nothing builds a tree, so memory
//! is bounded by the links on a page, not by its size or nesting, and a page can be read as it
//! arrives (`Extractor::feed`).
//!
//! Why a purpose-built tokenizer rather than lol_html or html5ever's tokenizer: both were
//! measured (BENCHMARKS.md, section 4) at under 2x the DOM extractor on the test site's pages;
//! lol_html reads `<noscript>` as raw text (scripting on) and leaves character references in
//! attributes undecoded, and html5ever's tokenizer copies every text run into tendrils.
//!
//! Pure and synchronous: the engine runs it on its parsing threads so parsing never stalls the
//! async reactor.

mod charref;
mod entities;
mod resolve;
mod tokenizer;
mod tree;

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

use url::Url;

use tokenizer::{Content, Tag, Tokenizer};
use tree::Tree;

/// Links found on a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// Absolute http(s) URLs to offer, each once, in the order of their first occurrence,
    /// parsed: the frontier canonicalises them without parsing them again. (A documentation
    /// page can link 20,000 times to a few hundred URLs — mostly its own anchors — and each
    /// copy would be a `Url`, a `Link` and a frontier lookup.)
    pub links: Vec<Url>,
    /// Links found, duplicates included: a record's `links_found`.
    pub found: usize,
    /// `<meta name="robots" content="nofollow">` was present (and honoured).
    pub meta_nofollow: bool,
    /// `rel="nofollow"` links skipped.
    pub nofollow_skipped: usize,
}

/// Bytes read before the charset must be decided (the HTML standard's prescan length).
const PRESCAN_BYTES: usize = 1024;

/// The charset `charset=` of a `Content-Type` header names, if any.
fn header_charset(content_type: Option<&str>) -> Option<&'static encoding_rs::Encoding> {
    content_type
        .and_then(|ct| {
            ct.to_ascii_lowercase()
                .split("charset=")
                .nth(1)
                .map(str::to_owned)
        })
        .and_then(|label| {
            let label = label.trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace());
            encoding_rs::Encoding::for_label(label.split(';').next()?.trim().as_bytes())
        })
}

/// The charset when the header names none: a byte-order mark, then a `<meta charset>` /
/// `<meta http-equiv>` in the first 1024 bytes, else UTF-8.
fn sniffed_charset(head: &[u8]) -> &'static encoding_rs::Encoding {
    encoding_rs::Encoding::for_bom(head)
        .map(|(e, _)| e)
        .or_else(|| meta_charset(&head[..head.len().min(PRESCAN_BYTES)]))
        .unwrap_or(encoding_rs::UTF_8)
}

/// Picks the character set: `charset=` of the `Content-Type` header, then a byte-order mark,
/// then a `<meta charset>` / `<meta http-equiv>` in the first 1024 bytes, else UTF-8.
pub fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let encoding = header_charset(content_type).unwrap_or_else(|| sniffed_charset(body));
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
    let mut extractor = Extractor::new(content_type, respect_nofollow);
    extractor.feed(body);
    extractor.finish(page)
}

/// Where the bytes stand: held until the charset is known, then decoded piece by piece.
#[derive(Debug)]
enum Decoding {
    Sniffing(Vec<u8>),
    Decoding(encoding_rs::Decoder),
}

/// Extraction from a body read in pieces: `feed` each piece as it arrives, then `finish`.
/// Holds at most the first 1024 bytes (to find the charset), one decoded piece, an unfinished
/// tag and the links found so far.
#[derive(Debug)]
pub struct Extractor {
    decoding: Decoding,
    /// Pieces are still read as UTF-8 where they lie.
    direct: bool,
    /// Some of the body has been read (a byte-order mark is only at the start).
    started: bool,
    text: String,
    tokenizer: Tokenizer,
    page: PageSink,
}

impl Extractor {
    /// An extractor for a body served with `content_type`.
    pub fn new(content_type: Option<&str>, respect_nofollow: bool) -> Self {
        let decoding = match header_charset(content_type) {
            Some(encoding) => Decoding::Decoding(encoding.new_decoder()),
            None => Decoding::Sniffing(Vec::new()),
        };
        Self {
            decoding,
            direct: true,
            started: false,
            text: String::new(),
            tokenizer: Tokenizer::new(),
            page: PageSink {
                tree: Tree::new(),
                links: Links::new(respect_nofollow),
            },
        }
    }

    /// Reads the next piece of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.decode(bytes, false);
    }

    /// The body ended: the links of the page at `page`.
    pub fn finish(mut self, page: &Url) -> Extracted {
        self.decode(&[], true);
        self.tokenizer.finish(&mut self.page);
        self.page.links.finish(page)
    }

    fn decode(&mut self, bytes: &[u8], last: bool) {
        let held: Vec<u8>;
        let mut bytes = bytes;
        if let Decoding::Sniffing(head) = &mut self.decoding {
            if head.len() + bytes.len() < PRESCAN_BYTES && !last {
                head.extend_from_slice(bytes);
                return;
            }
            if !head.is_empty() {
                head.extend_from_slice(bytes);
                held = std::mem::take(head);
                bytes = &held;
            }
            self.decoding = Decoding::Decoding(sniffed_charset(bytes).new_decoder());
        }
        let Decoding::Decoding(decoder) = &mut self.decoding else {
            return;
        };
        // Valid UTF-8 (the common case) is read where it lies, not copied through the decoder;
        // from the first piece that is not (a character split between pieces, a bad byte)
        // the decoder takes over.
        if self.direct && decoder.encoding() == encoding_rs::UTF_8 {
            let piece = match self.started {
                true => bytes,
                false => bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes),
            };
            // simdutf8: std's validation was 6.5% of the extractor on the test site's pages.
            if let Ok(text) = simdutf8::basic::from_utf8(piece) {
                self.started |= !bytes.is_empty();
                self.tokenizer.feed(text, &mut self.page);
                return;
            }
            self.direct = false;
            if self.started {
                *decoder = encoding_rs::UTF_8.new_decoder_without_bom_handling();
            }
        }
        Self::run(
            decoder,
            &mut self.text,
            bytes,
            last,
            &mut self.tokenizer,
            &mut self.page,
        );
    }

    /// Decodes `bytes` into `text` and tokenizes it, a bounded piece at a time.
    fn run(
        decoder: &mut encoding_rs::Decoder,
        text: &mut String,
        mut bytes: &[u8],
        last: bool,
        tokenizer: &mut Tokenizer,
        page: &mut PageSink,
    ) {
        const PIECE: usize = 64 * 1024;
        loop {
            text.clear();
            let take = bytes.len().min(PIECE);
            let end = last && take == bytes.len();
            text.reserve(
                decoder
                    .max_utf8_buffer_length(take)
                    .unwrap_or(take * 3 + 16),
            );
            let (_, read, _) = decoder.decode_to_string(&bytes[..take], text, end);
            tokenizer.feed(text, page);
            bytes = &bytes[read..];
            if bytes.is_empty() {
                return;
            }
        }
    }
}

/// The tokenizer's sink: tree construction decides, the link rules collect.
#[derive(Debug)]
struct PageSink {
    tree: Tree,
    links: Links,
}

impl tokenizer::Sink for PageSink {
    fn wants_attributes(&self, name: &[u8]) -> bool {
        matches!(
            name,
            b"a" | b"area"
                | b"link"
                | b"frame"
                | b"iframe"
                | b"base"
                | b"meta"
                | b"font"
                | b"input"
                | b"annotation-xml"
        )
    }

    fn start_tag(&mut self, tag: &Tag<'_>) -> Content {
        let in_body = self.tree.in_body();
        let insert = self.tree.start_tag(tag);
        if !in_body && self.tree.in_body() {
            self.links.body_starts();
        }
        if insert.body_dropped {
            self.links.drop_body();
        }
        if insert.element {
            self.links.element(tag.name, |name| {
                tag.raw_attr(name).map(charref::attribute_value)
            });
        }
        insert.content
    }

    fn end_tag(&mut self, name: &str) {
        let in_body = self.tree.in_body();
        self.tree.end_tag(name);
        if !in_body && self.tree.in_body() {
            self.links.body_starts();
        }
    }

    fn wants_text(&self) -> bool {
        self.tree.wants_text()
    }

    fn text(&mut self, only_nul: bool) {
        if !self.tree.in_body() {
            self.links.body_starts();
        }
        self.tree.text(only_nul);
    }

    fn cdata_allowed(&self) -> bool {
        self.tree.cdata_allowed()
    }
}

/// The link rules, applied to a page's elements in document order — by the tokenizer in a
/// crawl, by a DOM walk in the tests that check the tokenizer against a tree builder.
#[derive(Debug)]
pub struct Links {
    respect_nofollow: bool,
    /// The first `<base href>`.
    base: Option<String>,
    /// Link targets as written (attribute values decoded), resolved at the end against the
    /// base, which may come after them.
    raw: RawLinks,
    meta_nofollow: bool,
    nofollow_skipped: usize,
    /// What had been found when the body started, to go back to if a frameset replaces it.
    at_body: Option<(usize, bool, bool, usize)>,
}

impl Links {
    /// Rules for one page.
    pub fn new(respect_nofollow: bool) -> Self {
        Self {
            respect_nofollow,
            base: None,
            raw: RawLinks::default(),
            meta_nofollow: false,
            nofollow_skipped: 0,
            at_body: None,
        }
    }

    fn body_starts(&mut self) {
        self.at_body = Some((
            self.raw.ends.len(),
            self.base.is_some(),
            self.meta_nofollow,
            self.nofollow_skipped,
        ));
    }

    /// A frameset replaced the body: what was found in it is gone.
    fn drop_body(&mut self) {
        if let Some((links, base, meta_nofollow, skipped)) = self.at_body {
            self.raw.truncate(links);
            if !base {
                self.base = None;
            }
            self.meta_nofollow = meta_nofollow;
            self.nofollow_skipped = skipped;
        }
    }

    /// An element named `name` (lower case), with `attr` giving its decoded attribute values.
    pub fn element<'a>(&mut self, name: &str, attr: impl Fn(&str) -> Option<Cow<'a, str>>) {
        let target = match name {
            "a" | "area" => attr("href"),
            "frame" | "iframe" => attr("src"),
            "link" => {
                // Only links that name other pages, not stylesheets or icons.
                let rel = attr("rel").unwrap_or_default().to_ascii_lowercase();
                let wanted = rel
                    .split_ascii_whitespace()
                    .any(|r| matches!(r, "canonical" | "alternate" | "next" | "prev"));
                if !wanted {
                    return;
                }
                attr("href")
            }
            "base" => {
                if self.base.is_none() {
                    self.base = attr("href").map(Cow::into_owned);
                }
                return;
            }
            "meta" => {
                self.meta(&attr);
                return;
            }
            _ => return,
        };
        let Some(target) = target else { return };
        if self.respect_nofollow
            && attr("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("nofollow"))
            })
        {
            self.nofollow_skipped += 1;
            return;
        }
        self.raw.push(&target);
    }

    fn meta<'a>(&mut self, attr: &impl Fn(&str) -> Option<Cow<'a, str>>) {
        let content = attr("content");
        if self.respect_nofollow
            && attr("name").is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            && content.as_ref().is_some_and(|c| {
                c.to_ascii_lowercase()
                    .split(',')
                    .any(|t| matches!(t.trim(), "nofollow" | "none"))
            })
        {
            self.meta_nofollow = true;
        }
        if attr("http-equiv").is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh")) {
            if let Some(url) = content.as_deref().and_then(refresh_url) {
                self.raw.push(url);
            }
        }
    }

    /// The links, resolved against the base (or `page`).
    pub fn finish(self, page: &Url) -> Extracted {
        if self.meta_nofollow {
            return Extracted {
                meta_nofollow: true,
                ..Extracted::default()
            };
        }
        let base = self
            .base
            .and_then(|href| page.join(href.trim()).ok())
            .unwrap_or_else(|| page.clone());
        let mut links = Unique::default();
        let mut found = 0;
        // A target written again (a type's page named in every signature of a documentation
        // page) resolves as it did the first time: only whether it gave a link is kept.
        let mut written = Written::default();
        for raw in self.raw.iter() {
            let raw = raw.trim();
            if let Some(gave) = written.get(raw) {
                found += usize::from(gave);
                continue;
            }
            let link = link(&base, raw);
            written.insert(raw, link.is_some());
            if let Some(u) = link {
                found += 1;
                links.push(u);
            }
        }
        Extracted {
            links: links.urls,
            found,
            meta_nofollow: false,
            nofollow_skipped: self.nofollow_skipped,
        }
    }
}

/// The http(s) URL a link target written as `raw` (trimmed) leads to from `base`, without its
/// fragment.
fn link(base: &Url, raw: &str) -> Option<Url> {
    let starts = |p: &str| {
        raw.as_bytes()
            .get(..p.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(p.as_bytes()))
    };
    if starts("javascript:") || starts("mailto:") || starts("data:") || starts("tel:") {
        return None;
    }
    let mut u = resolve::resolve(base, raw)?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    u.set_fragment(None);
    Some(u)
}

/// Link targets as written on one page, and whether each gave a link: a few are scanned,
/// more are looked up (std's randomly keyed hasher: a page cannot make them collide).
#[derive(Default)]
struct Written<'a> {
    few: Vec<(&'a str, bool)>,
    many: HashMap<&'a str, bool>,
}

impl<'a> Written<'a> {
    fn get(&self, raw: &str) -> Option<bool> {
        if self.many.is_empty() {
            self.few
                .iter()
                .find(|(r, _)| *r == raw)
                .map(|(_, gave)| *gave)
        } else {
            self.many.get(raw).copied()
        }
    }

    fn insert(&mut self, raw: &'a str, gave: bool) {
        if self.many.is_empty() && self.few.len() < Unique::SCAN {
            self.few.push((raw, gave));
            return;
        }
        if self.many.is_empty() {
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(raw, gave);
    }
}

/// A page's links, each once, in the order of first occurrence. Few links are compared with
/// each other directly; past [`Unique::SCAN`] an FNV hash of each URL points to its place (a
/// hash that matches another URL keeps both: only equal strings are dropped). The table
/// itself places those hashes with std's randomly keyed hasher, so a page cannot choose URLs
/// that pile into one bucket.
#[derive(Default)]
struct Unique {
    urls: Vec<Url>,
    first: HashMap<u64, usize>,
}

impl Unique {
    /// Up to this many links a scan is cheaper than hashing each one.
    const SCAN: usize = 32;

    fn push(&mut self, url: Url) {
        if self.urls.len() < Self::SCAN {
            if !self.urls.iter().any(|u| u.as_str() == url.as_str()) {
                self.urls.push(url);
            }
            return;
        }
        if self.first.is_empty() {
            for (at, u) in self.urls.iter().enumerate() {
                self.first.entry(hash(u)).or_insert(at);
            }
        }
        match self.first.entry(hash(&url)) {
            Entry::Occupied(at) if self.urls[*at.get()].as_str() == url.as_str() => {}
            Entry::Occupied(_) => self.urls.push(url),
            Entry::Vacant(at) => {
                at.insert(self.urls.len());
                self.urls.push(url);
            }
        }
    }
}

fn hash(url: &Url) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = resolve::Fnv.build_hasher();
    h.write(url.as_str().as_bytes());
    h.finish()
}

/// Link targets as written, in one buffer (not a string each).
#[derive(Debug, Default)]
struct RawLinks {
    text: String,
    ends: Vec<usize>,
}

impl RawLinks {
    fn push(&mut self, link: &str) {
        self.text.push_str(link);
        self.ends.push(self.text.len());
    }

    fn truncate(&mut self, links: usize) {
        self.ends.truncate(links);
        self.text.truncate(self.ends.last().copied().unwrap_or(0));
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(from, &to)| &self.text[from..to])
    }
}

/// The URL of a `<meta http-equiv="refresh" content="5; url=...">`, read as the HTML
/// standard's shared declarative refresh steps read it; `None` for a plain reload or a
/// malformed value.
fn refresh_url(content: &str) -> Option<&str> {
    let is_space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let s = content.trim_start_matches(is_space);
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 && !s.starts_with('.') {
        return None;
    }
    let s = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if s.is_empty() {
        return None;
    }
    let first = s.chars().next()?;
    if !(first == ';' || first == ',' || is_space(first)) {
        return None;
    }
    let s = s.trim_start_matches(is_space);
    let s = s
        .strip_prefix([';', ','])
        .unwrap_or(s)
        .trim_start_matches(is_space);
    let url = match s.get(..3) {
        // `url =` then a quoted or bare URL; `u` not followed by `rl =` is the URL itself.
        Some(p) if p.eq_ignore_ascii_case("url") => {
            match s[3..].trim_start_matches(is_space).strip_prefix('=') {
                Some(value) => unquote(value.trim_start_matches(is_space)),
                None => s,
            }
        }
        _ if s.starts_with(['u', 'U']) => s,
        _ => unquote(s),
    };
    (!url.is_empty()).then_some(url)
}

/// A refresh URL in quotes ends at the closing quote (or the value's end).
fn unquote(url: &str) -> &str {
    match url.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let inner = &url[1..];
            inner.find(q).map_or(inner, |end| &inner[..end])
        }
        _ => url,
    }
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
    fn each_link_once_in_the_order_first_found_and_every_copy_counted() {
        // Anchors of the page itself, repeats before and after the scan limit.
        let mut html = String::from("<a href=\"#top\">t</a><a href=\"/a\">a</a>");
        for n in 0..100 {
            html.push_str(&format!(
                "<a href=\"/p{n}\">p</a><a href=\"#s{n}\">s</a><a href=\"/a#x\">a</a>"
            ));
        }
        html.push_str("<a href=\"/p0\">again</a><a href=\"/P0\">case</a>");
        let e = extract(html.as_bytes(), None, &page(), true);
        assert_eq!(e.found, 2 + 300 + 2);
        let got: Vec<&str> = e.links.iter().map(Url::as_str).collect();
        let mut want = vec!["http://h.test/a/b.html", "http://h.test/a"];
        let pages: Vec<String> = (0..100).map(|n| format!("http://h.test/p{n}")).collect();
        want.extend(pages.iter().map(String::as_str));
        want.push("http://h.test/P0");
        assert_eq!(got, want);
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
