//! Link extraction from any bytes, with any declared charset: never panics, every link it
//! returns is an absolute http(s) URL, and reading the body in pieces (split where the input
//! says) finds exactly what reading it whole does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let page = url::Url::parse("http://example.com/dir/page.html").unwrap();
    let Some((&split, data)) = data.split_first() else {
        return;
    };
    let (ct, body) = match data.split_first() {
        Some((0, rest)) => (Some("text/html; charset=shift_jis"), rest),
        Some((1, rest)) => (Some("text/html; charset=utf-16le"), rest),
        Some((2, rest)) => (None, rest),
        _ => (Some("text/html"), data),
    };
    for nofollow in [true, false] {
        let got = link_extract::extract(body, ct, &page, nofollow);
        for link in &got.links {
            assert!(matches!(link.scheme(), "http" | "https"), "{link}");
        }
        // Three pieces: cut at two points the first byte picks.
        let a = (usize::from(split) * body.len() / 255).min(body.len());
        let b = (a + (body.len() - a) / 2).min(body.len());
        let mut pieces = link_extract::Extractor::new(ct, nofollow);
        pieces.feed(&body[..a]);
        pieces.feed(&body[a..b]);
        pieces.feed(&body[b..]);
        assert_eq!(pieces.finish(&page), got);
    }
});
