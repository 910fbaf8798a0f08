//! How a queued entry is stored in the `queue` table: one format byte, then the frontier's
//! entry encoding ([`Entry::encode`]). The byte lets a later encoding be read beside this
//! one; states written before it existed (no `queue_format` in `meta`) are migrated when
//! they are opened, so every row has it.

use frontier::Entry;

/// The format byte of rows written now (entry format 6: with the admission time).
pub(crate) const FORMAT: u8 = 6;
/// Rows of entry format 5 (with a client's queue key): format-6 bytes without a time.
const FORMAT_5: u8 = 5;
/// Rows of entry format 4 (with a client's string and metadata): format-5 bytes without a
/// queue key.
const FORMAT_4: u8 = 4;
/// Rows of entry format 3 (with the recrawl schedule): format-5 bytes without client fields.
const FORMAT_3: u8 = 3;
/// Rows of entry format 2 (with via, sitemap level, lastmod).
const FORMAT_2: u8 = 2;
/// Rows of entry format 1.
const FORMAT_1: u8 = 1;

/// The `meta` key that says every queue row carries a format byte.
pub(crate) const META_KEY: &str = "queue_format";

/// The stored form of `entry`.
pub(crate) fn encode(entry: &Entry) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(32 + entry.url.len());
    bytes.push(FORMAT);
    entry.encode(&mut bytes);
    bytes
}

/// The entry a row holds; `None` if the row is not a whole entry of a known format.
pub(crate) fn decode(bytes: &[u8]) -> Option<Entry> {
    match bytes.split_first()? {
        (&FORMAT | &FORMAT_5 | &FORMAT_4 | &FORMAT_3, rest) => Entry::decode_all(rest, 1)?.pop(),
        (&FORMAT_2, rest) => Entry::decode_all_v2(rest, 1)?.pop(),
        (&FORMAT_1, rest) => decode_legacy(rest),
        _ => None,
    }
}

/// A row of entry format 1 without its format byte (as written before the byte existed).
pub(crate) fn decode_legacy(bytes: &[u8]) -> Option<Entry> {
    Entry::decode_all_v1(bytes, 1)?.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_byte_round_trip_and_refusals() {
        let mut e = Entry::new("http://a.test/x".into(), 3, Some("http://a.test/".into()));
        e.id = 7;
        let row = encode(&e);
        assert_eq!(row[0], FORMAT);
        assert_eq!(decode(&row), Some(e.clone()));
        assert_eq!(
            decode(&row[1..]),
            None,
            "a legacy row is not read as versioned"
        );
        // Format 1 rows (with or without their byte) are still read.
        let mut v1 = Vec::new();
        e.encode(&mut v1);
        v1.truncate(v1.len() - 7); // without via, sitemap level, lastmod and visit (none)
        assert_eq!(decode_legacy(&v1), Some(e.clone()));
        v1.insert(0, FORMAT_1);
        assert_eq!(decode(&v1), Some(e.clone()));
        // Format 2 rows: without the visit marker.
        let mut v2 = row.clone();
        v2.pop();
        v2[0] = FORMAT_2;
        assert_eq!(decode(&v2), Some(e));
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[9, 1, 2]), None, "unknown format");
    }
}
