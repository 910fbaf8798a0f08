//! Link extraction alone, in MB of HTML per second on one thread: the test site's pages and
//! large documentation-like pages (generated), and optionally every `.html` file under
//! `EXTRACT_CORPUS` (a directory, e.g. an HTML documentation package).
//!
//!   cargo bench -p engine --bench extract
//!   EXTRACT_CORPUS=/usr/share/doc/valgrind/html cargo bench -p engine --bench extract
//!
//! Prints one TSV row per corpus: pages, MB, links found, seconds (best of 3), MB/s.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use engine::extract::extract;
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

fn run(name: &str, pages: &[Page]) {
    if pages.is_empty() {
        return;
    }
    let bytes: usize = pages.iter().map(|p| p.body.len()).sum();
    let mut best = Duration::MAX;
    let mut links = 0;
    for _ in 0..3 {
        let start = Instant::now();
        links = 0;
        for p in pages {
            let e = extract(&p.body, Some(&p.content_type), &p.url, true);
            links += black_box(e).links.len();
        }
        best = best.min(start.elapsed());
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "{name}\t{}\t{mb:.1}\t{links}\t{:.3}\t{:.1}",
        pages.len(),
        best.as_secs_f64(),
        mb / best.as_secs_f64()
    );
}

fn main() {
    println!("corpus\tpages\tmb\tlinks\tseconds\tmb_per_s");
    run("test-site", &test_site_pages());
    run("large-2mb", &large_pages());
    if let Some(dir) = std::env::var_os("EXTRACT_CORPUS") {
        run(
            &format!("dir:{}", Path::new(&dir).display()),
            &corpus(Path::new(&dir)),
        );
    }
}
