//! Link extraction alone, in MB of HTML per second on one thread: the test site's pages and
//! large documentation-like pages (generated), and optionally every `.html` file under
//! `EXTRACT_CORPUS` (a directory, e.g. an HTML documentation package).
//!
//!   cargo bench -p link-extract --bench extract
//!   EXTRACT_CORPUS=/usr/share/doc/valgrind/html cargo bench -p link-extract --bench extract
//!
//! `EXTRACT_ONLY=streaming` (any part of a row's name) measures only the rows that name it;
//! `EXTRACT_PASSES=200` runs exactly that many passes (more, for `perf record`).
//!
//! Prints one TSV row per corpus: pages, MB, links found, seconds (the best pass of at least
//! 3 and of a second's worth), MB/s.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use link_extract::extract;

/// The crawler's allocator (src/main.rs), so extraction is measured as a crawl runs it.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod dom_shipped;
#[path = "../tests/oracle/mod.rs"]
mod oracle;
use testsite::{Site, SiteConfig};
use url::Url;

struct Page {
    url: Url,
    body: Vec<u8>,
    content_type: String,
}

/// 2,000 pages of the default test site (numeric pages and the root pages' specials).
fn test_site_pages() -> Vec<Page> {
    let site = Site::new(SiteConfig::default(), 8080).expect("default config");
    (0..2000u64)
        .map(|p| {
            let t = site.page_target(p);
            let html = site.page_html(p);
            let (body, content_type) = site.render_html(t.host, &t.path, &html);
            Page {
                url: Url::parse(&site.url(&t)).expect("site URL"),
                body,
                content_type,
            }
        })
        .collect()
}

/// Documentation-like pages of about 2 MB: a navigation list, sections of prose with inline
/// markup, code blocks, tables, a script and a style, and a link every ~400 bytes.
fn large_pages() -> Vec<Page> {
    (0..8)
        .map(|n| {
            let mut s = String::from(
                "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Manual</title>\
                 <link rel=\"stylesheet\" href=\"/static/site.css\">\
                 <style>body{font:14px sans-serif}.x>a{color:red}</style>\
                 <script>var nav = '<a href=\"/not-a-link\">';</script></head><body>\
                 <nav><ul>",
            );
            for i in 0..200 {
                s.push_str(&format!(
                    "<li><a href=\"../ch{i}/index.html\">Chapter {i}</a></li>"
                ));
            }
            s.push_str("</ul></nav><main>");
            let mut k = 0;
            while s.len() < 2 << 20 {
                k += 1;
                s.push_str(&format!(
                    "<h2 id=\"s{k}\">Section {k}</h2><p>The <em>quick</em> brown fox &amp; the \
                     <code>lazy_dog()</code> function, see <a href=\"ref{n}-{k}.html#anchor\">the \
                     reference</a> and <a href=\"https://example.org/spec/{k}\">the spec</a>. \
                     Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod \
                     tempor incididunt ut labore et dolore magna aliqua.</p>\
                     <pre><code>fn main() {{ println!(\"&lt;a href=x&gt;\"); }}</code></pre>\
                     <table><tr><th>Key</th><th>Value</th></tr><tr><td>{k}</td>\
                     <td><a href=\"/api/{k}\">api</a></td></tr></table>"
                ));
            }
            s.push_str("</main></body></html>");
            Page {
                url: Url::parse(&format!("http://docs.test/manual/part{n}/page.html"))
                    .expect("URL"),
                body: s.into_bytes(),
                content_type: "text/html; charset=utf-8".into(),
            }
        })
        .collect()
}

/// Every `.html` file below `dir`.
fn corpus(dir: &Path) -> Vec<Page> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html" || x == "htm") {
                if let (Ok(body), Ok(url)) = (std::fs::read(&p), Url::from_file_path(&p)) {
                    let url = Url::parse(&format!("http://docs.test{}", url.path())).unwrap_or(url);
                    out.push(Page {
                        url,
                        body,
                        content_type: "text/html".into(),
                    });
                }
            }
        }
    }
    out
}

/// A candidate the streaming extractor was chosen over:
/// html5ever's tokenizer without its tree builder, switching to the raw-text states a
/// scripting-off parse uses, collecting `href`/`src` of the link elements and resolving them.
mod tokenizer_only {
    use std::cell::RefCell;

    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::states::RawKind;
    use html5ever::tokenizer::{
        BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
    };
    use url::Url;

    #[derive(Default)]
    struct Sink {
        found: RefCell<Vec<String>>,
        base: RefCell<Option<String>>,
    }

    impl TokenSink for Sink {
        type Handle = ();

        fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
            let Token::TagToken(tag) = token else {
                return TokenSinkResult::Continue;
            };
            if tag.kind != TagKind::StartTag {
                return TokenSinkResult::Continue;
            }
            let attr = |name: &str| {
                tag.attrs
                    .iter()
                    .find(|a| &*a.name.local == name)
                    .map(|a| a.value.to_string())
            };
            let found = |v: Option<String>| {
                if let Some(v) = v {
                    self.found.borrow_mut().push(v);
                }
            };
            match &*tag.name {
                "a" | "area" | "link" => found(attr("href")),
                "frame" => found(attr("src")),
                "iframe" => {
                    found(attr("src"));
                    return TokenSinkResult::RawData(RawKind::Rawtext);
                }
                "base" => {
                    let mut base = self.base.borrow_mut();
                    if base.is_none() {
                        *base = attr("href");
                    }
                }
                "script" => return TokenSinkResult::RawData(RawKind::ScriptData),
                "style" | "xmp" | "noembed" | "noframes" => {
                    return TokenSinkResult::RawData(RawKind::Rawtext)
                }
                "textarea" | "title" => return TokenSinkResult::RawData(RawKind::Rcdata),
                "plaintext" => return TokenSinkResult::Plaintext,
                _ => {}
            }
            TokenSinkResult::Continue
        }
    }

    pub fn links(text: &str, page: &Url) -> Vec<Url> {
        let tok = Tokenizer::new(Sink::default(), TokenizerOpts::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from(text));
        let _ = tok.feed(&input);
        tok.end();
        let base = tok
            .sink
            .base
            .borrow()
            .as_deref()
            .and_then(|b| page.join(b).ok())
            .unwrap_or_else(|| page.clone());
        let found = tok.sink.found.take();
        found
            .iter()
            .filter_map(|h| base.join(h.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .collect()
    }
}

/// The other candidate: Cloudflare's lol_html streaming rewriter, selectors on the link
/// elements, the body fed as bytes (it decodes the charset itself). Measured as it is: it
/// reads `<noscript>` as raw text (scripting on) and leaves entities in attribute values.
mod lol {
    use std::cell::RefCell;

    use lol_html::{element, HtmlRewriter, Settings};
    use url::Url;

    pub fn links(body: &[u8], page: &Url) -> Vec<Url> {
        let (found, base) = raw(body);
        let base = base
            .as_deref()
            .and_then(|b| page.join(b).ok())
            .unwrap_or_else(|| page.clone());
        found
            .iter()
            .filter_map(|h| base.join(h.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .collect()
    }

    /// The attribute values and `<base href>` as written, unresolved.
    pub fn raw(body: &[u8]) -> (Vec<String>, Option<String>) {
        let found: RefCell<Vec<String>> = RefCell::default();
        let base: RefCell<Option<String>> = RefCell::default();
        {
            let settings = Settings::new()
                .append_element_content_handler(element!("a[href], area[href], link[href]", |el| {
                    if let Some(h) = el.get_attribute("href") {
                        found.borrow_mut().push(h);
                    }
                    Ok(())
                }))
                .append_element_content_handler(element!("frame[src], iframe[src]", |el| {
                    if let Some(h) = el.get_attribute("src") {
                        found.borrow_mut().push(h);
                    }
                    Ok(())
                }))
                .append_element_content_handler(element!("base[href]", |el| {
                    let mut b = base.borrow_mut();
                    if b.is_none() {
                        *b = el.get_attribute("href");
                    }
                    Ok(())
                }));
            let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
            let _ = rewriter.write(body);
            let _ = rewriter.end();
        }
        (found.take(), base.take())
    }
}

/// Times `extract` over every page (the best of at least 3 passes and a second of them, or
/// of `EXTRACT_PASSES`) and prints the corpus' row.
fn measure(name: &str, pages: &[Page], extract: impl Fn(&Page) -> usize) {
    let only = std::env::var("EXTRACT_ONLY").unwrap_or_default();
    if pages.is_empty() || !name.contains(&only) {
        return;
    }
    let bytes: usize = pages.iter().map(|p| p.body.len()).sum();
    let mut best = Duration::MAX;
    let mut links = 0;
    let passes: Option<u32> = std::env::var("EXTRACT_PASSES")
        .ok()
        .and_then(|p| p.parse().ok());
    let started = Instant::now();
    let mut done = 0;
    // At least 3 passes and a second of them (a pass over the test site's pages is ~10 ms,
    // and the best of 3 such moved by 10% from run to run), or `EXTRACT_PASSES` exactly.
    while match passes {
        Some(n) => done < n,
        None => done < 3 || started.elapsed() < Duration::from_secs(1),
    } {
        let start = Instant::now();
        links = pages.iter().map(|p| black_box(extract(p))).sum();
        best = best.min(start.elapsed());
        done += 1;
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "{name}\t{}\t{mb:.1}\t{links}\t{:.3}\t{:.1}",
        pages.len(),
        best.as_secs_f64(),
        mb / best.as_secs_f64()
    );
}

/// The crawl's streaming extractor (and its tokenizer alone, without resolving the links it
/// collects), the DOM extractor it replaced (walked through today's link
/// rules, the tests' oracle; and as it shipped, `dom_shipped`) and the two candidates it was chosen over (the last one also without resolving links).
fn run(name: &str, pages: &[Page]) {
    measure(&format!("{name} (streaming)"), pages, |p| {
        extract(&p.body, Some(&p.content_type), &p.url, true)
            .links
            .len()
    });
    measure(&format!("{name} (streaming, tokenize only)"), pages, |p| {
        let mut e = link_extract::Extractor::new(Some(&p.content_type), true);
        e.feed(&p.body);
        black_box(&e);
        1
    });
    measure(&format!("{name} (DOM)"), pages, |p| {
        oracle::extract(&p.body, Some(&p.content_type), &p.url, true)
            .links
            .len()
    });
    measure(&format!("{name} (DOM as shipped, 8812394)"), pages, |p| {
        dom_shipped::extract(&p.body, Some(&p.content_type), &p.url, true)
            .links
            .len()
    });
    measure(&format!("{name} (tokenizer only)"), pages, |p| {
        let text = link_extract::decode(&p.body, Some(&p.content_type));
        tokenizer_only::links(&text, &p.url).len()
    });
    measure(&format!("{name} (lol_html)"), pages, |p| {
        lol::links(&p.body, &p.url).len()
    });
    measure(&format!("{name} (lol_html, unresolved)"), pages, |p| {
        lol::raw(&p.body).0.len()
    });
}

fn main() {
    println!("corpus\tpages\tmb\tlinks\tseconds\tmb_per_s");
    let mut corpora = vec![
        ("test-site".to_owned(), test_site_pages()),
        ("large-2mb".to_owned(), large_pages()),
    ];
    if let Some(dir) = std::env::var_os("EXTRACT_CORPUS") {
        let name = format!("dir:{}", Path::new(&dir).display());
        corpora.push((name, corpus(Path::new(&dir))));
    }
    for (name, pages) in &corpora {
        run(name, pages);
    }
}
