//! Resolving a page's link targets into `Url`s, with the origins of absolute links parsed once.
//!
//! Most links a crawler sees are absolute (`http://host:port/path`), and for those
//! `Url::join` parses the whole URL — scheme, authority, IDNA host processing, port — on every
//! link, although a page links to few origins and a parsing thread sees the same few thousand
//! hosts again and again. Measured on the test site's pages, the authority and host were a
//! third of the extractor's URL work.
//!
//! Design choice: an absolute http(s) link whose authority is plain (no tab or newline
//! anywhere, no userinfo, ended by `/`, `?`, `#` or the end) is split into its origin
//! (`scheme://authority/`) and the rest. The origin is parsed once and kept in a small cache
//! per parsing thread; the rest is joined to it. Joining a rest that begins with `/`, `?` or `#`
//! to a URL whose path is `/` is the same parse the whole URL would get after its authority, so
//! the result is identical — the unit test below and `tests/extract.rs` (against the DOM oracle) hold it to
//! `Url::join` on every kind of input. A scheme-relative link (`//authority/...`) on an
//! http(s) page is that absolute link with the page's scheme in front, and is split the same
//! way (+1% on the test site's pages, where a tenth of the links are written so). Anything
//! else (relative links, other schemes, a rest that starts `//` or `/\`, which would be read
//! as a new authority) takes `Url::join`.

use std::cell::RefCell;
use std::collections::HashMap;

use url::Url;

/// Origins kept per thread; the cache is emptied when it is full (a crawl of many hosts
/// refills it with the ones its current pages link to).
const ORIGINS: usize = 256;

thread_local! {
    static CACHE: RefCell<HashMap<Box<str>, Option<Url>, Seeded>> = RefCell::default();
    static PADDED: RefCell<String> = RefCell::default();
    static KEY: RefCell<String> = RefCell::default();
}

/// The cache is keyed with foldhash, seeded at random once per thread: a page cannot choose
/// origins that pile into one bucket without knowing the seed (and the table is bounded).
/// The same hasher as the page's own tables (`links.rs`); FNV before it measured the same.
type Seeded = foldhash::fast::RandomState;

/// `raw` (already trimmed) resolved against `base`, as `base.join(raw)` resolves it.
pub(crate) fn resolve(base: &Url, raw: &str) -> Option<Url> {
    if let Some((origin, rest)) = split_origin(raw) {
        return from_origin(origin, rest);
    }
    // A scheme-relative link (`//host/path`) takes the page's scheme: with it in front it is
    // an absolute link, split as one.
    if raw.starts_with("//") && matches!(base.scheme(), "http" | "https") {
        return KEY.with(|key| {
            let mut key = key.borrow_mut();
            key.clear();
            key.push_str(base.scheme());
            key.push(':');
            key.push_str(raw);
            match split_origin(&key) {
                Some((origin, rest)) => from_origin(origin, rest),
                None => join(base, raw),
            }
        });
    }
    join(base, raw)
}

/// `origin` (`http://authority/`) joined with `rest`, the origin parsed once per thread.
#[inline]
fn from_origin(origin: &str, rest: &str) -> Option<Url> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(parsed) = cache.get(origin) {
            return join(parsed.as_ref()?, rest);
        }
        if cache.len() >= ORIGINS {
            cache.clear();
        }
        let parsed = Url::parse(origin).ok();
        let url = parsed.as_ref().and_then(|o| join(o, rest));
        cache.insert(origin.into(), parsed);
        url
    })
}

/// `base.join(raw)`, with the new URL's string allocated once.
///
/// The parser sizes the string for the text it is given, then copies the base's scheme,
/// authority and (for a relative path) directory in front of it: one reallocation and copy
/// per link, 10% of the extractor on the test site's pages. The parser strips spaces at
/// either end of its input (the URL standard's first step), so `raw` followed by as many
/// spaces as the base's text up to its path's end parses to the same URL, into a string
/// that already has room for what is put in front.
#[inline]
fn join(base: &Url, raw: &str) -> Option<Url> {
    const SPACES: &str = "                                                                ";
    let room = base[..url::Position::AfterPath].len();
    PADDED.with(|padded| {
        let mut padded = padded.borrow_mut();
        padded.clear();
        padded.push_str(raw);
        for _ in 0..room / SPACES.len() {
            padded.push_str(SPACES);
        }
        padded.push_str(&SPACES[..room % SPACES.len()]);
        base.join(&padded).ok()
    })
}

/// `http://authority/` (with its trailing slash, the scheme as written) and the rest of an
/// absolute http(s) link, when the fast path gives the same result as a full parse.
fn split_origin(raw: &str) -> Option<(&str, &str)> {
    let bytes = raw.as_bytes();
    let scheme = if bytes.len() >= 7 && bytes[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if bytes.len() >= 8 && bytes[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return None;
    };
    // The parser drops tabs and newlines anywhere: `/\n/x` would become `//x`.
    if memchr::memchr3(b'\t', b'\n', b'\r', bytes).is_some() {
        return None;
    }
    let authority_len = bytes[scheme..]
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#' | b'\\'))
        .unwrap_or(bytes.len() - scheme);
    let end = scheme + authority_len;
    let authority = &bytes[scheme..end];
    if authority.is_empty() || authority.contains(&b'@') {
        return None;
    }
    let rest = &raw[end..];
    let first_two = rest.as_bytes().get(..2);
    if rest.starts_with('\\') || matches!(first_two, Some([b'/', b'/' | b'\\'])) {
        return None;
    }
    // `?q`, `#f` or nothing after the authority (the path is `/`) are rare: a full parse.
    rest.starts_with('/').then(|| (&raw[..end + 1], rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(base: &str, raw: &str) {
        let base = Url::parse(base).unwrap();
        assert_eq!(
            resolve(&base, raw),
            base.join(raw).ok(),
            "{raw:?} against {base}"
        );
    }

    #[test]
    fn fast_path_resolves_as_a_full_parse() {
        let base = "http://h0.test:8080/a/b.html";
        for raw in [
            "http://h1.test:8080/",
            "http://h1.test:8080/x/../y/./z?q=1#f",
            "HTTP://H5.TEST:8080/~u0/p135.html",
            "https://H5.test:443/a%20b/ c",
            "http://h.test:80/x",
            "http://h.test:/x",
            "http://xn--nxasmq6b.test/x",
            "http://ÉXAMPLE.test/ü",
            "http://[::1]:8080/x",
            "http://127.0.0.1/x",
            "http://0x7f.1/x",
            "http://h.test",
            "http://h.test?q",
            "http://h.test#f",
            "http://h.test//evil.test/x",
            "http://h.test/\\evil.test/x",
            "http://h.test\\x",
            "http://h.test/\n/evil.test",
            "http://h.te\nst/x",
            "http://u:p@h.test/x",
            "http:///x",
            "http:/x",
            "http://a b/x",
            "http://h.test:99999/x",
            "http://%41.test/x",
            "http://h.test/x?a=b c&d=é#frag ment",
            "http://h.test/%2e%2E/x",
            "http://h.test/./../x",
            "http:// h.test/x",
            "http://h.test /x",
            "https://h.test/",
            "ftp://h.test/x",
            "//h.test/x",
            "//H.test:8080/x/../y#f",
            "//h.test",
            "//h.test//x",
            "//u@h.test/x",
            "///x",
            "/x/y",
            "x/y",
            "?q",
            "#f",
            "",
        ] {
            same(base, raw);
            same("http://u:p@h0.test/a/", raw);
            same("https://h0.test/a/", raw);
            same("ftp://h0.test/a/", raw);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_link_resolves_as_a_full_parse(
            scheme in "(http:|HTTPS:|https:|Http:|ftp:|)//",
            rest in "[a-zA-Z0-9/\\\\?#@:.%\t\n \\[\\]é-]{0,24}",
        ) {
            let base = Url::parse("http://h0.test/a/b").unwrap();
            let raw = format!("{scheme}{rest}");
            proptest::prop_assert_eq!(resolve(&base, &raw), base.join(&raw).ok());
        }
    }

    #[test]
    fn a_full_cache_starts_again() {
        let base = Url::parse("http://h0.test/").unwrap();
        for n in 0..ORIGINS * 2 + 3 {
            let raw = format!("http://h{n}.test/p/{n}");
            assert_eq!(resolve(&base, &raw), base.join(&raw).ok());
        }
        CACHE.with(|c| assert!(c.borrow().len() <= ORIGINS));
    }
}
