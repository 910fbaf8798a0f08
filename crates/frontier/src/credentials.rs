//! Credentials in URLs (`https://user:password@host/`): how they are fetched with, and never
//! shown or keyed on.
//!
//! Design choices:
//! - **Masked where shown**: every output (records, events, logs, WARC metadata) writes
//!   `https://user:****@host/` — the user name kept, the password masked, as pip shows such
//!   URLs — and a lone user name (often a token) as `https://****@host/`.
//! - **Masked in the URL's identity**: the visited set keys a URL by its masked form
//!   ([`fingerprint`](crate::fingerprint), the filters, Redis), so the URL a record shows is
//!   the URL the crawl state knows — a resume matches `pages.jsonl` lines to the state by it —
//!   and one page under two passwords is one page. The queue keeps the URL whole: the fetch
//!   still sends the credentials.
//! - **Text, not just URLs**: error messages quote URLs, so [`mask`] finds every
//!   `scheme://…@` in a text; it is idempotent, and costs one byte search on text without `@`.

use std::borrow::Cow;

/// What replaces a password (or a lone user name).
pub const MASK: &str = "****";

/// `text` with the credentials of every URL in it masked (`user:****@`, or `****@` for a
/// user name alone).
pub fn mask(text: &str) -> Cow<'_, str> {
    if !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find("://") {
        let start = from + at + 3;
        let end = text[start..]
            .find(|c: char| {
                matches!(
                    c,
                    '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '\\' | ',' | ')' | ']'
                ) || c.is_whitespace()
            })
            .map_or(text.len(), |e| start + e);
        let authority = &text[start..end];
        if let Some(userinfo_end) = authority.rfind('@') {
            let userinfo = &authority[..userinfo_end];
            let masked: Cow<'_, str> = match userinfo.split_once(':') {
                Some((user, _)) if !user.is_empty() => format!("{user}:{MASK}").into(),
                _ => MASK.into(),
            };
            if userinfo != masked {
                out.push_str(&text[copied..start]);
                out.push_str(&masked);
                copied = start + userinfo_end;
            }
        }
        from = end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_lone_user_names_are_masked() {
        for (raw, shown) in [
            ("https://user:pass@h.test/a", "https://user:****@h.test/a"),
            ("https://tok3n@h.test/", "https://****@h.test/"),
            ("http://:pw@h.test", "http://****@h.test"),
            (
                "http://u:p%40ss@h.test:8080/x?a=b@c",
                "http://u:****@h.test:8080/x?a=b@c",
            ),
            ("https://h.test/a@b", "https://h.test/a@b"),
            ("mailto:someone@example.com", "mailto:someone@example.com"),
            ("https://h.test/", "https://h.test/"),
            (
                "redirect not followed: http://a:b@x.test/ and \"https://c:d@y.test/p\"",
                "redirect not followed: http://a:****@x.test/ and \"https://c:****@y.test/p\"",
            ),
        ] {
            assert_eq!(mask(raw), shown, "{raw}");
            // Masking what is masked changes nothing.
            assert_eq!(mask(shown), shown, "{shown}");
        }
        assert!(matches!(mask("https://h.test/"), Cow::Borrowed(_)));
        assert!(matches!(
            mask("https://user:****@h.test/"),
            Cow::Borrowed(_)
        ));
    }
}
