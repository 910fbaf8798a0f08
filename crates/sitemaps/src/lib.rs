//! Sitemaps (sitemaps.org protocol): `<urlset>` files, `<sitemapindex>` files and plain-text
//! lists, gzip'd or not, and the `Sitemap:` lines of robots.txt.
//!
//! Design: a pull parser (quick-xml) over the whole body, which the fetch has already capped,
//! with the protocol's own limits enforced while reading — at most [`MAX_ENTRIES`] entries and
//! [`MAX_UNCOMPRESSED`] bytes after inflating — so a hostile file (a gzip bomb, a million
//! entries, a 10 MB `<loc>`, broken XML) costs bounded memory and ends in an error or a
//! `truncated` result, never a panic. Element names are matched by local name, so prefixed
//! and unprefixed namespaces both work; what a file holds beyond `loc` and `lastmod` is
//! ignored.

use std::io::Read;

use quick_xml::events::Event;
use quick_xml::Reader;

/// Most entries (URLs or child sitemaps) one sitemap file may list (the protocol's limit).
pub const MAX_ENTRIES: usize = 50_000;
/// Most bytes one sitemap file may have once inflated (the protocol's 50 MiB).
pub const MAX_UNCOMPRESSED: usize = 50 << 20;
/// Longest `<loc>` kept (the protocol asks for fewer than 2,048 characters).
pub const MAX_LOC: usize = 2048;
/// Longest `<lastmod>` kept (a W3C datetime is at most 35 characters).
const MAX_LASTMOD: usize = 64;

/// What a sitemap file lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Page URLs (`<urlset>`, or a plain-text list).
    Urls,
    /// Other sitemap files (`<sitemapindex>`).
    Index,
}

/// One entry of a sitemap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `<loc>`, trimmed, entities decoded (not yet resolved or canonicalised).
    pub loc: String,
    /// `<lastmod>` as written, if any.
    pub lastmod: Option<String>,
}

/// A parsed sitemap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitemap {
    /// URLs or child sitemaps.
    pub kind: Kind,
    /// The entries, in document order, at most [`MAX_ENTRIES`].
    pub entries: Vec<Entry>,
    /// More than [`MAX_ENTRIES`] entries, or malformed XML after some: the rest were not read.
    pub truncated: bool,
    /// What was malformed, when that is why the rest were not read.
    pub malformed: Option<String>,
    /// Entries dropped: no `<loc>`, or one longer than [`MAX_LOC`].
    pub skipped: u64,
}

impl Sitemap {
    fn empty(kind: Kind) -> Self {
        Self {
            kind,
            entries: Vec::new(),
            truncated: false,
            malformed: None,
            skipped: 0,
        }
    }
}

/// Why a sitemap file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapError {
    /// Inflated beyond [`MAX_UNCOMPRESSED`].
    #[error("sitemap larger than {MAX_UNCOMPRESSED} bytes uncompressed")]
    TooLarge,
    /// The gzip stream is corrupt.
    #[error("sitemap: bad gzip data: {0}")]
    Gzip(String),
    /// The XML is malformed before any entry could be read.
    #[error("sitemap: malformed XML at byte {position}: {message}")]
    Xml {
        /// Byte offset of the error.
        position: u64,
        /// What the parser said.
        message: String,
    },
    /// Neither `<urlset>` nor `<sitemapindex>`, nor a list of URLs.
    #[error("not a sitemap (root element <{0}>)")]
    NotASitemap(String),
}

/// Parses a sitemap file (gzip'd when it starts with gzip's magic bytes).
///
/// Malformed XML after some entries were read keeps those entries (as crawlers do with a
/// truncated download) and sets `truncated`.
pub fn parse(body: &[u8]) -> Result<Sitemap, SitemapError> {
    if body.starts_with(&[0x1f, 0x8b]) {
        let inflated = inflate(body)?;
        return parse_plain(&inflated);
    }
    if body.len() > MAX_UNCOMPRESSED {
        return Err(SitemapError::TooLarge);
    }
    parse_plain(body)
}

/// Inflates gzip data, failing past [`MAX_UNCOMPRESSED`] bytes (a bomb costs no more).
fn inflate(body: &[u8]) -> Result<Vec<u8>, SitemapError> {
    let mut out = Vec::new();
    let mut decoder = flate2::read::MultiGzDecoder::new(body).take(MAX_UNCOMPRESSED as u64 + 1);
    decoder
        .read_to_end(&mut out)
        .map_err(|e| SitemapError::Gzip(e.to_string()))?;
    if out.len() > MAX_UNCOMPRESSED {
        return Err(SitemapError::TooLarge);
    }
    Ok(out)
}

fn parse_plain(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let start = body
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(body)
        .trim_ascii_start();
    if start.first() == Some(&b'<') {
        parse_xml(body)
    } else {
        Ok(parse_text(body))
    }
}

/// A plain-text sitemap: one absolute URL per line; other lines are skipped.
fn parse_text(body: &[u8]) -> Sitemap {
    let mut sitemap = Sitemap::empty(Kind::Urls);
    for line in body.split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(line.trim_ascii());
        if line.is_empty() {
            continue;
        }
        let lower = line.get(..8).unwrap_or(&line).to_ascii_lowercase();
        if line.len() > MAX_LOC || !(lower.starts_with("http://") || lower.starts_with("https://"))
        {
            sitemap.skipped += 1;
            continue;
        }
        if sitemap.entries.len() == MAX_ENTRIES {
            sitemap.truncated = true;
            break;
        }
        sitemap.entries.push(Entry {
            loc: line.into_owned(),
            lastmod: None,
        });
    }
    sitemap
}

/// Which text an XML event belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    None,
    Loc,
    Lastmod,
}

fn parse_xml(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let mut reader = Reader::from_reader(body);
    reader.config_mut().check_end_names = false;
    let mut kind = None;
    let mut sitemap = Sitemap::empty(Kind::Urls);
    // The entry being read (inside <url> or <sitemap>), and the field its text goes to.
    let mut current: Option<(String, String)> = None;
    let mut field = Field::None;
    let mut too_long = false;
    let mut depth = 0usize;
    loop {
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) if kind.is_some() => {
                // Keep what was read before the damage.
                sitemap.truncated = true;
                sitemap.malformed = Some(format!("byte {}: {e}", reader.error_position()));
                break;
            }
            Err(e) => {
                return Err(SitemapError::Xml {
                    position: reader.error_position(),
                    message: e.to_string(),
                })
            }
        };
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = e.local_name();
                let name: &str = name.as_ref();
                // The root (depth 1), its entries (2), and their own fields (3): a `<loc>`
                // deeper down (`<image:loc>`) is not the entry's.
                field = Field::None;
                match (depth, kind, name) {
                    (1, None, "urlset") => kind = Some(Kind::Urls),
                    (1, None, "sitemapindex") => kind = Some(Kind::Index),
                    (1, None, other) => {
                        return Err(SitemapError::NotASitemap(other.chars().take(64).collect()))
                    }
                    (2, Some(Kind::Urls), "url") | (2, Some(Kind::Index), "sitemap") => {
                        current = Some((String::new(), String::new()));
                        too_long = false;
                    }
                    (3, Some(_), "loc") if current.is_some() => field = Field::Loc,
                    (3, Some(_), "lastmod") if current.is_some() => field = Field::Lastmod,
                    _ => {}
                }
            }
            Event::End(_) => {
                field = Field::None;
                if depth == 2 {
                    if let Some((loc, lastmod)) = current.take() {
                        let loc = loc.trim();
                        if loc.is_empty() || too_long {
                            sitemap.skipped += 1;
                        } else if sitemap.entries.len() == MAX_ENTRIES {
                            sitemap.truncated = true;
                            break;
                        } else {
                            let lastmod = lastmod.trim();
                            sitemap.entries.push(Entry {
                                loc: loc.to_owned(),
                                lastmod: (!lastmod.is_empty()).then(|| lastmod.to_owned()),
                            });
                        }
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Event::Text(t) => push(&mut current, field, &t, &mut too_long),
            Event::CData(t) => push(&mut current, field, &t, &mut too_long),
            Event::GeneralRef(r) => {
                let text = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_predefined_entity(&r)
                        .unwrap_or_default()
                        .to_owned(),
                };
                push(&mut current, field, &text, &mut too_long);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match kind {
        Some(k) => {
            sitemap.kind = k;
            Ok(sitemap)
        }
        None => Err(SitemapError::NotASitemap(String::new())),
    }
}

/// Appends text to the current entry's field, within the field's length limit.
fn push(current: &mut Option<(String, String)>, field: Field, text: &str, too_long: &mut bool) {
    let Some((loc, lastmod)) = current else {
        return;
    };
    let (target, max) = match field {
        Field::Loc => (loc, MAX_LOC),
        Field::Lastmod => (lastmod, MAX_LASTMOD),
        Field::None => return,
    };
    if target.len() + text.len() > max {
        if field == Field::Loc {
            *too_long = true;
        }
        return;
    }
    target.push_str(text);
}

/// The `Sitemap:` lines of a robots.txt body (any group; the field is not group-bound),
/// at most `max` of them.
pub fn robots_sitemaps(robots: &[u8], max: usize) -> Vec<String> {
    String::from_utf8_lossy(robots)
        .lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("").trim();
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("sitemap")
                .then(|| value.trim().to_owned())
        })
        .filter(|v| !v.is_empty() && v.len() <= MAX_LOC)
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn urlset_with_entities_cdata_namespaces_and_lastmod() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:url><sm:loc> http://a.test/?x=1&amp;y=2 </sm:loc><sm:lastmod>2026-11-01</sm:lastmod></sm:url>
  <sm:url><sm:loc><![CDATA[http://a.test/c&d]]></sm:loc></sm:url>
  <sm:url><sm:lastmod>2026-11-02</sm:lastmod></sm:url>
  <sm:url><sm:loc>http://a.test/&#233;</sm:loc><image:image><image:loc>http://img.test/x.png</image:loc></image:image></sm:url>
</sm:urlset>"#;
        let s = parse(xml).unwrap();
        assert_eq!(s.kind, Kind::Urls);
        let locs: Vec<&str> = s.entries.iter().map(|e| e.loc.as_str()).collect();
        assert_eq!(
            locs,
            [
                "http://a.test/?x=1&y=2",
                "http://a.test/c&d",
                "http://a.test/é"
            ]
        );
        assert_eq!(s.entries[0].lastmod.as_deref(), Some("2026-11-01"));
        assert_eq!(s.skipped, 1, "an entry without <loc>");
        assert!(!s.truncated);
    }

    #[test]
    fn index_gzip_and_text() {
        let xml =
            b"<sitemapindex><sitemap><loc>http://a.test/s1.xml.gz</loc></sitemap></sitemapindex>";
        let s = parse(&gzip(xml)).unwrap();
        assert_eq!(s.kind, Kind::Index);
        assert_eq!(s.entries[0].loc, "http://a.test/s1.xml.gz");
        let text = parse(b"http://a.test/1\r\n\r\nnot a url\nhttps://a.test/2\n").unwrap();
        assert_eq!(text.entries.len(), 2);
        assert_eq!(text.skipped, 1);
    }

    #[test]
    fn hostile_files_are_bounded() {
        // A gzip bomb: 60 MiB of zeros in a few KiB.
        let bomb = gzip(&vec![b' '; 60 << 20]);
        assert!(bomb.len() < 1 << 20);
        assert_eq!(parse(&bomb), Err(SitemapError::TooLarge));
        // More entries than the protocol allows: the first 50,000 are kept.
        let mut xml = String::from("<urlset>");
        for i in 0..MAX_ENTRIES + 10 {
            xml.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let s = parse(xml.as_bytes()).unwrap();
        assert_eq!(s.entries.len(), MAX_ENTRIES);
        assert!(s.truncated);
        // A <loc> of 1 MB is dropped, not kept.
        let long = format!(
            "<urlset><url><loc>http://a.test/{}</loc></url></urlset>",
            "x".repeat(1 << 20)
        );
        let s = parse(long.as_bytes()).unwrap();
        assert!(s.entries.is_empty());
        assert_eq!(s.skipped, 1);
        // Broken XML after an entry keeps the entry; before any root, an error.
        let s =
            parse(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</lo")
                .unwrap();
        assert_eq!(s.entries.len(), 1);
        assert!(s.truncated);
        assert!(
            matches!(parse(b"<html><body>hi</body></html>"), Err(SitemapError::NotASitemap(n)) if n == "html")
        );
        assert!(parse(b"<").is_err());
        // Corrupt gzip.
        assert!(matches!(
            parse(&[0x1f, 0x8b, 8, 0, 0]),
            Err(SitemapError::Gzip(_))
        ));
    }

    #[test]
    fn sitemap_lines_of_robots_txt() {
        let robots = b"User-agent: *\nDisallow: /x\nSITEMAP: http://a.test/s.xml # main\n\nsitemap:http://b.test/t.xml\nSitemap:\n";
        assert_eq!(
            robots_sitemaps(robots, 10),
            ["http://a.test/s.xml", "http://b.test/t.xml"]
        );
        assert_eq!(robots_sitemaps(robots, 1).len(), 1);
    }
}
