//! Attribute values as an HTML5 parser delivers them: character references decoded (named,
//! decimal, hexadecimal, with the spec's replacements), U+0000 replaced by U+FFFD and carriage
//! returns normalised to line feeds.
//!
//! The tokenizer keeps a value raw and decodes it here once the value is complete. That gives
//! the same result as decoding while tokenizing: decoded text is never scanned again, and a
//! reference never spans the value's end (the attribute-specific rule looks at the character
//! after a legacy reference; at the value's end there is none, as there is none of `=` or an
//! alphanumeric after it in the stream).

use std::borrow::Cow;

use super::entities::ENTITIES;

/// The value `raw` stands for. Borrowed when there is nothing to decode (the common case).
pub(super) fn attribute_value(raw: &str) -> Cow<'_, str> {
    // Every byte looked at, without stopping at the first special one: the compiler turns
    // this into vector compares (a loop that stops early goes a byte at a time, and was 3% of
    // the extractor on the test site's pages).
    let special = raw
        .bytes()
        .fold(false, |any, b| any | matches!(b, b'&' | b'\0' | b'\r'));
    if !special {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['&', '\0', '\r']) {
        out.push_str(&rest[..at]);
        let special = rest.as_bytes()[at];
        rest = &rest[at + 1..];
        match special {
            b'\0' => out.push('\u{FFFD}'),
            b'\r' => {
                out.push('\n');
                rest = rest.strip_prefix('\n').unwrap_or(rest);
            }
            _ => match reference(rest) {
                Some((first, second, used)) => {
                    out.push(first);
                    out.extend(second);
                    rest = &rest[used..];
                }
                None => out.push('&'),
            },
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Decodes the reference `after` starts with (the text after an `&` in an attribute value):
/// the one or two characters and how many bytes of `after` they replace, or `None` when the
/// `&` is text.
fn reference(after: &str) -> Option<(char, Option<char>, usize)> {
    let b = after.as_bytes();
    if b.first() == Some(&b'#') {
        let (hex, start) = match b.get(1) {
            Some(b'x' | b'X') => (true, 2),
            _ => (false, 1),
        };
        let digits = b[start..]
            .iter()
            .take_while(|d| {
                if hex {
                    d.is_ascii_hexdigit()
                } else {
                    d.is_ascii_digit()
                }
            })
            .count();
        if digits == 0 {
            return None;
        }
        let mut value: u32 = 0;
        for &d in &b[start..start + digits] {
            let digit = (d as char).to_digit(16).unwrap_or(0);
            // Saturates: anything past U+10FFFF becomes U+FFFD below.
            value = value
                .saturating_mul(if hex { 16 } else { 10 })
                .saturating_add(digit);
        }
        let mut used = start + digits;
        if b.get(used) == Some(&b';') {
            used += 1;
        }
        return Some((numeric(value), None, used));
    }
    let name = named(after)?;
    let (name, first, second) = ENTITIES[name];
    let len = name.len();
    // Legacy references without `;` followed by `=` or an alphanumeric stay as written.
    if !name.ends_with(';')
        && b.get(len)
            .is_some_and(|c| *c == b'=' || c.is_ascii_alphanumeric())
    {
        return None;
    }
    Some((first, (second != '\0').then_some(second), len))
}

/// The index in `ENTITIES` of the longest name `after` starts with.
fn named(after: &str) -> Option<usize> {
    let b = after.as_bytes();
    let run = b
        .iter()
        .take(32)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if run == 0 {
        return None;
    }
    let longest = if b.get(run) == Some(&b';') {
        run + 1
    } else {
        run
    };
    (1..=longest.min(32)).rev().find_map(|len| {
        ENTITIES
            .binary_search_by(|e| e.0.as_bytes().cmp(&b[..len]))
            .ok()
    })
}

/// The character a numeric reference stands for, with the spec's replacements.
fn numeric(value: u32) -> char {
    /// Code points 0x80..=0x9F read as windows-1252, as browsers do.
    const C1: [u32; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    let value = match value {
        0 => 0xFFFD,
        0x80..=0x9F => C1[(value - 0x80) as usize],
        v => v,
    };
    char::from_u32(value).unwrap_or('\u{FFFD}')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated table (`scripts/gen-entities.py`) is web_atoms' — the map html5ever
    /// decodes with —, entry for entry, and sorted for the binary search.
    #[test]
    fn the_entity_table_is_the_maintained_one() {
        let named: Vec<_> = web_atoms::NAMED_ENTITIES
            .entries()
            .filter(|(_, (first, _))| *first != 0)
            .collect();
        assert_eq!(ENTITIES.len(), named.len());
        for (name, first, second) in ENTITIES.iter() {
            let (a, b) = web_atoms::NAMED_ENTITIES
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not a named reference"));
            let second = if *second == '\0' {
                0
            } else {
                u32::from(*second)
            };
            assert_eq!((u32::from(*first), second), (*a, *b), "{name}");
        }
        assert!(ENTITIES
            .windows(2)
            .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes()));
    }

    #[test]
    fn named_numeric_and_legacy_references() {
        let cases = [
            ("a&amp;b", "a&b"),
            ("?x=1&amp=2", "?x=1&amp=2"),
            ("?x=1&ampy", "?x=1&ampy"),
            ("&amp", "&"),
            ("&amp!", "&!"),
            ("&notit;", "&notit;"),
            ("&not &notit", "¬ &notit"),
            ("&notin;", "∉"),
            ("&#38;&#x26;&#X26", "&&&"),
            ("&#0;&#x110000;&#xD800;&#128;", "\u{FFFD}\u{FFFD}\u{FFFD}€"),
            ("&#99999999999999999999;", "\u{FFFD}"),
            ("&#;&#x;&;&nosuch;", "&#;&#x;&;&nosuch;"),
            ("&NotEqualTilde;", "\u{2242}\u{338}"),
            ("a\0b\r\nc\rd", "a\u{FFFD}b\nc\nd"),
        ];
        for (raw, want) in cases {
            assert_eq!(attribute_value(raw), want, "{raw}");
        }
        assert!(matches!(attribute_value("/plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        assert!(ENTITIES.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
