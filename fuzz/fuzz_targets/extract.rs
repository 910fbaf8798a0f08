//! Link extraction from any bytes, with any declared charset: never panics, and every link
//! it returns is an absolute http(s) URL.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let page = url::Url::parse("http://example.com/dir/page.html").unwrap();
    let (ct, body) = match data.split_first() {
        Some((0, rest)) => (Some("text/html; charset=shift_jis"), rest),
        Some((1, rest)) => (Some("text/html; charset=utf-16le"), rest),
        Some((2, rest)) => (None, rest),
        _ => (Some("text/html"), data),
    };
    for nofollow in [true, false] {
        let got = engine::extract::extract(body, ct, &page, nofollow);
        for link in got.links {
            assert!(matches!(link.scheme(), "http" | "https"), "{link}");
        }
    }
});
