//! Turns model resources into bytes: HTML with every link written one of many equivalent
//! ways, charsets, compression, binary files and robots.txt bodies.

use std::io::Write;

use crate::model::{mix, Charset, Encoding, HostId, Html, Link, RobotsKind, Site};

/// Percent-decodes a canonical path for charset pages, whose links are written as raw text in
/// the page's own encoding (as real sites in Latin-1 or Shift_JIS do).
fn decoded(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// The directory of a canonical path: everything up to and including the last `/`.
fn dir_of(path: &str) -> &str {
    let path = path.split('?').next().unwrap_or(path);
    &path[..=path.rfind('/').unwrap_or(0)]
}

/// A relative reference from directory `from_dir` to `to` (both canonical, same host).
pub fn relative(from_dir: &str, to: &str) -> String {
    let (to_path, query) = match to.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (to, None),
    };
    let from: Vec<&str> = from_dir
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let to_segments: Vec<&str> = to_path.trim_start_matches('/').split('/').collect();
    let (to_dirs, file) = to_segments.split_at(to_segments.len() - 1);
    let common = from
        .iter()
        .zip(to_dirs.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = "../".repeat(from.len() - common);
    for d in &to_dirs[common..] {
        out.push_str(d);
        out.push('/');
    }
    out.push_str(file[0]);
    if out.is_empty() {
        out.push_str("./");
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;")
}

impl Site {
    /// How link `j` of the page at `(host, path)` is written: one of ten equivalent forms.
    fn href(
        &self,
        host: HostId,
        dir: &str,
        j: u64,
        page_key: u64,
        link: &Link,
        raw_text: bool,
    ) -> String {
        let t = &link.target;
        let path = if raw_text {
            decoded(&t.path)
        } else {
            t.path.clone()
        };
        let absolute = format!("{}{}", self.origin(t.host), path);
        if self.config().plain_links {
            return absolute;
        }
        let same_host = t.host == host;
        match mix(self.config().seed, page_key, j) % 10 {
            0 => absolute,
            1 => absolute.trim_start_matches("http:").to_owned(),
            2 if same_host => path,
            3 if same_host => relative(dir, &path),
            4 if same_host => {
                let rel = relative(dir, &path);
                if rel.starts_with("../") || rel.starts_with("./") {
                    rel
                } else {
                    format!("./{rel}")
                }
            }
            5 => format!("{absolute}#section-{j}"),
            6 => format!(
                "HTTP://{}{}",
                self.origin(t.host)
                    .trim_start_matches("http://")
                    .to_ascii_uppercase(),
                path
            ),
            7 => format!("\n   {absolute} \t"),
            8 => {
                // %7E / %7e for `~`, or an encoded unreserved letter: both decode to the same URL.
                if path.contains('~') {
                    let enc = if j.is_multiple_of(2) { "%7E" } else { "%7e" };
                    format!("{}{}", self.origin(t.host), path.replace('~', enc))
                } else if let Some(pos) = path.rfind("/p") {
                    format!(
                        "{}{}/%70{}",
                        self.origin(t.host),
                        &path[..pos],
                        &path[pos + 2..]
                    )
                } else {
                    absolute
                }
            }
            9 if self.port() == 80 => format!("http://{}:80{}", self.host_name(t.host), path),
            _ => absolute,
        }
    }

    /// The bytes of an HTML page served at `(host, path)`, and its `Content-Type`.
    pub fn render_html(&self, host: HostId, path: &str, html: &Html) -> (Vec<u8>, String) {
        let raw_text = matches!(html.charset, Charset::Latin1Header | Charset::ShiftJisMeta);
        let page_key = mix(self.config().seed, fxhash(path), u64::from(host));
        let dir = html.base.as_deref().unwrap_or_else(|| dir_of(path));
        let mut s = String::with_capacity(256 + html.links.len() * 80);
        s.push_str("<!DOCTYPE html>\n<html><head>");
        match html.charset {
            Charset::ShiftJisMeta => s.push_str("<meta charset=\"Shift_JIS\">"),
            Charset::Utf8 | Charset::BrokenUtf8 => s.push_str("<meta charset=\"utf-8\">"),
            Charset::Latin1Header => {}
        }
        s.push_str("<title>");
        s.push_str(&escape_text(&html.title));
        s.push_str("</title>");
        if let Some(base) = &html.base {
            s.push_str(&format!("<base href=\"{}\">", escape_attr(base)));
        }
        if html.meta_nofollow {
            s.push_str("<meta name=\"robots\" content=\"nofollow, noindex\">");
        }
        s.push_str("</head>\n<body><h1>");
        s.push_str(&escape_text(&html.title));
        s.push_str("</h1>\n");
        if let Some(v) = html.version {
            s.push_str(&format!("<p>Version {v}</p>\n"));
        }
        for i in 0..html.filler {
            s.push_str(&format!(
                "<p>Paragraph {i}: a generated page of a deterministic test web, seed {}. \
                 Nothing here is real; every link is.</p>\n",
                self.config().seed
            ));
        }
        for i in 0..html.nesting {
            // Unclosed blocks, inline formatting and stray end tags, never closed.
            s.push_str(if i % 3 == 0 {
                "<div><span><b>"
            } else if i % 3 == 1 {
                "<p><i></x>"
            } else {
                "<table><td><font>"
            });
        }
        s.push_str("<!--BROKEN--><ul>\n");
        for (j, link) in html.links.iter().enumerate() {
            let href = self.href(host, dir, j as u64, page_key, link, raw_text);
            let rel = if link.nofollow {
                " rel=\"nofollow\""
            } else {
                ""
            };
            s.push_str(&format!(
                "<li><a{rel} href=\"{}\">link {j}</a></li>\n",
                escape_attr(&href)
            ));
        }
        s.push_str("</ul></body></html>\n");

        let (bytes, content_type) = match html.charset {
            Charset::Utf8 => (s.into_bytes(), "text/html; charset=utf-8".to_owned()),
            Charset::Latin1Header => {
                let (b, _, _) = encoding_rs::WINDOWS_1252.encode(&s);
                (b.into_owned(), "text/html; charset=ISO-8859-1".to_owned())
            }
            Charset::ShiftJisMeta => {
                let (b, _, _) = encoding_rs::SHIFT_JIS.encode(&s);
                (b.into_owned(), "text/html".to_owned())
            }
            Charset::BrokenUtf8 => (
                s.replace("<!--BROKEN-->", "<p>broken: \u{FFFD}</p>")
                    .into_bytes()
                    .into_iter()
                    .flat_map(|b| if b == 0xEF { vec![0xFF, 0xFE] } else { vec![b] })
                    .collect::<Vec<u8>>(),
                "text/html; charset=utf-8".to_owned(),
            ),
        };
        let content_type = html
            .content_type_lie
            .map(str::to_owned)
            .unwrap_or(content_type);
        (bytes, content_type)
    }

    /// A sitemap file: a `<sitemapindex>` or `<urlset>` of `entries`, absolute URLs escaped,
    /// with `<lastmod>` where given.
    pub fn render_sitemap(&self, index: bool, entries: &[crate::model::SitemapEntry]) -> Vec<u8> {
        let (root, item) = if index {
            ("sitemapindex", "sitemap")
        } else {
            ("urlset", "url")
        };
        let mut s = String::with_capacity(128 + entries.len() * 64);
        s.push_str(&format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{root} xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"
        ));
        for e in entries {
            s.push_str(&format!(
                "<{item}><loc>{}</loc>",
                escape_text(&self.url(&e.target))
            ));
            if let Some(l) = e.lastmod {
                s.push_str(&format!("<lastmod>{l}</lastmod>"));
            }
            s.push_str(&format!("</{item}>\n"));
        }
        s.push_str(&format!("</{root}>\n"));
        s.into_bytes()
    }

    /// The body of a robots.txt of `kind` (only [`RobotsKind::Rules`] and
    /// [`RobotsKind::Garbage`] have one; the others are status codes).
    pub fn render_robots(&self, host: HostId, kind: RobotsKind) -> Vec<u8> {
        match kind {
            RobotsKind::Rules => self.robots_rules(host).into_bytes(),
            _ => {
                let mut junk = b"\x00\xff\xfe<html><body>\x89PNG not a robots file".to_vec();
                junk.extend(pseudo_random_bytes(self.config().seed ^ 0xB0B, 2000));
                junk
            }
        }
    }
}

/// A stable 64-bit hash of a string (FNV-1a), for choosing link forms per page.
pub fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// `len` deterministic bytes; with the magic number of `content_type` in front.
pub fn binary_body(content_type: &str, seed: u64, len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = match content_type {
        "image/png" => b"\x89PNG\r\n\x1a\n".to_vec(),
        "application/pdf" => b"%PDF-1.4\n% <a href=\"/pdf-link\">not a link</a>\n".to_vec(),
        "application/json" => {
            return b"{\"note\": \"JSON is not HTML\", \"links\": [\"/json-link-1\", \"http://h0.test/json-link-2\"]}\n".to_vec()
        }
        _ => Vec::new(),
    };
    out.extend(pseudo_random_bytes(seed, len.saturating_sub(out.len())));
    out
}

fn pseudo_random_bytes(seed: u64, len: usize) -> Vec<u8> {
    (0..len.div_ceil(8) as u64)
        .flat_map(|i| mix(seed, i, 42).to_le_bytes())
        .take(len)
        .collect()
}

/// Compresses `body` as `encoding` (fast settings: the server must stay quick).
pub fn compress(body: &[u8], encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(body).expect("in-memory write");
            enc.finish().expect("in-memory write")
        }
        Encoding::Brotli => {
            let mut out = Vec::new();
            {
                let mut enc = brotli::CompressorWriter::new(&mut out, 4096, 1, 16);
                enc.write_all(body).expect("in-memory write");
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SiteConfig;
    use url::Url;

    #[test]
    fn relative_references_resolve_back() {
        let base = Url::parse("http://h.test/a/b/c.html").unwrap();
        for (dir, to) in [
            ("/a/b/", "/a/b/x.html"),
            ("/a/b/", "/a/x.html"),
            ("/a/b/", "/q/r/s.html"),
            ("/a/b/", "/"),
            ("/", "/"),
            ("/", "/x/y.html?q=1"),
            ("/a/b/", "/a/b/c/d.html"),
        ] {
            let from = base.join(dir).unwrap();
            let rel = relative(dir, to);
            assert_eq!(
                from.join(&rel).unwrap().path(),
                to.split('?').next().unwrap(),
                "{dir} -> {to} via {rel}"
            );
        }
    }

    #[test]
    fn plain_links_are_the_same_targets_written_absolutely() {
        let cfg = SiteConfig {
            plain_links: true,
            ..SiteConfig::default()
        };
        let site = Site::new(cfg, 8080).unwrap();
        for p in 0..100u64 {
            let t = site.page_target(p);
            let html = site.page_html(p);
            let (bytes, _) = site.render_html(t.host, &t.path, &html);
            let text = String::from_utf8(bytes).unwrap();
            let hrefs: Vec<String> = text
                .split("href=\"")
                .skip(1 + usize::from(html.base.is_some()))
                .map(|s| s[..s.find('"').unwrap()].replace("&amp;", "&"))
                .collect();
            let expected: Vec<String> = html.links.iter().map(|l| site.url(&l.target)).collect();
            assert_eq!(hrefs, expected, "page {p}");
        }
    }

    #[test]
    fn every_link_form_resolves_to_the_canonical_target() {
        let site = Site::new(SiteConfig::default(), 8080).unwrap();
        for p in 0..200u64 {
            let t = site.page_target(p);
            let html = site.page_html(p);
            let (bytes, _) = site.render_html(t.host, &t.path, &html);
            let text = String::from_utf8(bytes).unwrap();
            let mut base = Url::parse(&site.url(&t)).unwrap();
            if let Some(b) = &html.base {
                base = base.join(b).unwrap();
            }
            let hrefs: Vec<String> = text
                .split("href=\"")
                .skip(1)
                .map(|s| s[..s.find('"').unwrap()].replace("&amp;", "&"))
                .collect();
            let expected: Vec<String> = html.links.iter().map(|l| site.url(&l.target)).collect();
            let hrefs: Vec<String> = hrefs
                .into_iter()
                .skip(usize::from(html.base.is_some()))
                .collect();
            assert_eq!(hrefs.len(), expected.len());
            for (href, want) in hrefs.iter().zip(&expected) {
                let mut got = base.join(href.trim()).unwrap();
                got.set_fragment(None);
                // The `url` crate lower-cases hosts and resolves dots; decode unreserved %XX.
                let got = got
                    .as_str()
                    .replace("%7E", "~")
                    .replace("%7e", "~")
                    .replace("%70", "p");
                assert_eq!(&got, want, "page {p}: {href:?}");
            }
        }
    }
}
