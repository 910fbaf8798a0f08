//! Sitemap files (XML urlset/sitemapindex, plain text, gzip'd) and robots.txt `Sitemap:` lines:
//! never panics, and what is returned stays within the protocol's limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemaps::{parse, robots_sitemaps, MAX_ENTRIES, MAX_LOC};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = parse(data) {
        assert!(s.entries.len() <= MAX_ENTRIES);
        for e in &s.entries {
            assert!(!e.loc.trim().is_empty() && e.loc.len() <= MAX_LOC, "{e:?}");
        }
    }
    for loc in robots_sitemaps(data, 100) {
        assert!(!loc.is_empty() && loc.len() <= MAX_LOC);
    }
});
