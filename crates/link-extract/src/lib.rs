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
mod links;
mod resolve;
mod tokenizer;
mod tree;

pub use links::Links;

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

/// The charset `charset=` of a `Content-Type` header names, if any (up to a `;` or another
/// `charset=`, quotes and spaces around it ignored). Reads the header where it lies: this runs
/// once per page.
fn header_charset(content_type: Option<&str>) -> Option<&'static encoding_rs::Encoding> {
    let content_type = content_type?;
    let at = find_charset(content_type.as_bytes())? + CHARSET.len();
    let value = &content_type[at..];
    let value = &value[..find_charset(value.as_bytes()).unwrap_or(value.len())];
    let label = value.split(';').next()?;
    let label = label.trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace());
    encoding_rs::Encoding::for_label(label.as_bytes())
}

const CHARSET: &[u8] = b"charset=";

/// Where `charset=` (in any case) first is in `header`.
fn find_charset(header: &[u8]) -> Option<usize> {
    header
        .windows(CHARSET.len())
        .position(|w| w.eq_ignore_ascii_case(CHARSET))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("http://h.test/a/b.html").unwrap()
    }

    fn links(e: &Extracted) -> Vec<&str> {
        e.links.iter().map(Url::as_str).collect()
    }

    /// A value longer than `MAX_VALUE_BYTES` gives no link (a cut one would be a wrong
    /// link), whether it arrives whole or across pieces; one at the limit is kept, and the
    /// next attribute or tag is read as usual.
    #[test]
    fn attribute_values_past_the_limit_are_not_kept() {
        let at_limit = |pad: usize| {
            let head = "http://a.test/";
            format!("{head}{}", "x".repeat(pad - head.len()))
        };
        let kept = at_limit(tokenizer::MAX_VALUE_BYTES);
        let long = at_limit(tokenizer::MAX_VALUE_BYTES + 1);
        let html = format!(
            "<a href=\"{long}\">long</a><a href={long}>bare</a><a href=\"{kept}\">fits</a>\
             <a href=\"/after\">after</a>"
        );
        let want = vec![kept.as_str(), "http://h.test/after"];
        let whole = extract(html.as_bytes(), None, &page(), true);
        assert_eq!(links(&whole), want);
        let mut pieces = Extractor::new(None, true);
        for piece in html.as_bytes().chunks(1000) {
            pieces.feed(piece);
        }
        assert_eq!(links(&pieces.finish(&page())), want);
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
    fn the_header_names_the_charset() {
        let name = |ct: &str| header_charset(Some(ct)).map(encoding_rs::Encoding::name);
        assert_eq!(name("text/html; charset=ISO-8859-1"), Some("windows-1252"));
        assert_eq!(name("text/html;CHARSET=\"Shift_JIS\""), Some("Shift_JIS"));
        assert_eq!(name("text/html; Charset = utf-8"), None);
        assert_eq!(name("text/html; charset='utf-8' ; q=1"), Some("UTF-8"));
        assert_eq!(
            name("text/html; charset=utf-8charset=latin1"),
            Some("UTF-8")
        );
        assert_eq!(name("text/html; charset=bogus"), None);
        assert_eq!(name("text/html; charset=\u{e9}t\u{e9}"), None);
        assert_eq!(name("text/html"), None);
        assert_eq!(header_charset(None), None);
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
