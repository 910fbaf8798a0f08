//! robots.txt: any bytes as a fetched body (parsed, matched, its `Crawl-delay` read), as a
//! response's `Location`, and as a stored verdict record: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use robots::{Kind, Rules};

fuzz_target!(|data: &[u8]| {
    let rules = Rules::of("crawler", Kind::Parsed, data);
    for url in [
        "http://a.example/",
        "http://a.example/a/b?c=d",
        "http://a.example/%7E/x$",
    ] {
        let _ = rules.allowed(&url::Url::parse(url).unwrap());
    }
    let _ = rules.crawl_delay();
    let location = String::from_utf8_lossy(data);
    let _ = robots::answer(
        "http://a.example/robots.txt",
        Some(301),
        Vec::new(),
        Some(&location),
        None,
    );
    if let Some((kind, _, body)) = robots::decode(data) {
        let _ = Rules::of("crawler", kind, body).state();
    }
});
