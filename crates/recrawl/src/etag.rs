//! An entity tag as the server sent it, and its compact stored form.
//!
//! The tag is kept as the header's value, byte for byte (`W/"…"` or `"…"`), because a
//! conditional request must send back what the server gave. Stored, it takes one of two
//! forms ([`Etag::pack`]):
//! - **hex**: an opaque tag of lower-case hex groups joined by `-` — what nginx
//!   (`"5c11a604-eba"`, mtime and size), Apache (`"2aa6-531e1d5a8d440"`) and S3 (an MD5) send —
//!   as a nibble stream: the group count, each group's length (one nibble for 1 to 15 digits;
//!   15 and two more nibbles for 16 to 271), then the digits. nginx's tag takes 7 bytes
//!   instead of 14, Apache's 10 instead of 19, an MD5's 18 instead of 32.
//! - **verbatim**: anything else, as it came.
//!
//! The weak flag (`W/`) is kept outside those bytes (a bit of the history's flags).

/// Longest ETag header value kept. A longer one is not stored: a refetch then sends
/// `If-Modified-Since` alone and the payload digest decides whether the page changed.
pub const MAX_ETAG: usize = 256;

/// Most hex groups a packed tag may have (the count is one nibble).
const MAX_GROUPS: usize = 15;
/// Most digits a group's length nibble says alone; longer lengths escape to a byte.
const SHORT_GROUP: usize = 15;
/// Most digits in one packed group.
const MAX_GROUP_DIGITS: usize = SHORT_GROUP + 1 + 255;

/// An entity tag: weak or strong, and its opaque tag (the characters between the quotes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Etag {
    weak: bool,
    opaque: String,
}

/// How an ETag is stored: the weak flag, and the bytes of one of two forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    /// `W/` before the tag.
    pub weak: bool,
    /// Whether `bytes` is the nibble form (else the opaque tag verbatim).
    pub hex: bool,
    /// The stored bytes.
    pub bytes: Vec<u8>,
}

impl Etag {
    /// The ETag of a response header value: `"tag"` or `W/"tag"`, whose tag is visible ASCII
    /// other than `"` (RFC 9110 §8.8.3, without obs-text). `None` for anything else, and for a
    /// value over [`MAX_ETAG`] bytes: a tag that is not kept is never sent back.
    pub fn from_header(value: &str) -> Option<Etag> {
        let value = value.trim_matches([' ', '\t']);
        if value.len() > MAX_ETAG {
            return None;
        }
        let (weak, rest) = match value.strip_prefix("W/") {
            Some(rest) => (true, rest),
            None => (false, value),
        };
        let opaque = rest.strip_prefix('"')?.strip_suffix('"')?;
        let valid = opaque
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b));
        valid.then(|| Etag {
            weak,
            opaque: opaque.to_owned(),
        })
    }

    /// The header value to send back (`If-None-Match`): exactly what the server sent.
    pub fn to_header(&self) -> String {
        format!("{}\"{}\"", if self.weak { "W/" } else { "" }, self.opaque)
    }

    /// Whether the server marked it weak (`W/`).
    pub fn is_weak(&self) -> bool {
        self.weak
    }

    /// The opaque tag, without quotes.
    pub fn opaque(&self) -> &str {
        &self.opaque
    }

    /// The stored form: nibble-packed when the tag is hex groups, else verbatim.
    pub fn pack(&self) -> Packed {
        match pack_hex(&self.opaque) {
            Some(bytes) => Packed {
                weak: self.weak,
                hex: true,
                bytes,
            },
            None => Packed {
                weak: self.weak,
                hex: false,
                bytes: self.opaque.as_bytes().to_vec(),
            },
        }
    }

    /// The ETag a [`Packed`] form stores; `None` when its bytes are not one.
    pub fn unpack(packed: &Packed) -> Option<Etag> {
        let opaque = if packed.hex {
            unpack_hex(&packed.bytes)?
        } else {
            String::from_utf8(packed.bytes.clone()).ok()?
        };
        let etag = Etag {
            weak: packed.weak,
            opaque,
        };
        // What was stored must be what `from_header` would have kept.
        (Etag::from_header(&etag.to_header()).as_ref() == Some(&etag)).then_some(etag)
    }
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// `opaque` as a nibble stream, if it is 1 to 15 groups of 1 to 271 lower-case hex digits
/// joined by `-`.
fn pack_hex(opaque: &str) -> Option<Vec<u8>> {
    let groups: Vec<&str> = opaque.split('-').collect();
    if groups.len() > MAX_GROUPS
        || groups
            .iter()
            .any(|g| g.is_empty() || g.len() > MAX_GROUP_DIGITS)
    {
        return None;
    }
    let mut nibbles = Vec::with_capacity(1 + groups.len() + opaque.len());
    nibbles.push(groups.len() as u8);
    for g in &groups {
        if g.len() <= SHORT_GROUP {
            nibbles.push((g.len() - 1) as u8);
        } else {
            let extra = (g.len() - SHORT_GROUP - 1) as u8;
            nibbles.extend([SHORT_GROUP as u8, extra >> 4, extra & 0x0f]);
        }
    }
    for g in &groups {
        for b in g.bytes() {
            nibbles.push(hex_digit(b)?);
        }
    }
    Some(
        nibbles
            .chunks(2)
            .map(|pair| pair[0] << 4 | pair.get(1).copied().unwrap_or(0))
            .collect(),
    )
}

/// The tag a nibble stream holds; `None` when it is not one [`pack_hex`] writes.
fn unpack_hex(bytes: &[u8]) -> Option<String> {
    let mut nibbles = bytes.iter().flat_map(|b| [b >> 4, b & 0x0f]);
    let count = usize::from(nibbles.next()?);
    if count == 0 {
        return None;
    }
    let mut length_nibbles = 0;
    let lengths: Vec<usize> = (0..count)
        .map(|_| {
            let n = usize::from(nibbles.next()?);
            length_nibbles += 1;
            if n < SHORT_GROUP {
                return Some(n + 1);
            }
            let (hi, lo) = (nibbles.next()?, nibbles.next()?);
            length_nibbles += 2;
            Some(SHORT_GROUP + 1 + usize::from(hi << 4 | lo))
        })
        .collect::<Option<_>>()?;
    let digits: usize = lengths.iter().sum();
    // The stream is exactly as long as its contents (a last odd nibble is padding, 0).
    let used = 1 + length_nibbles + digits;
    if bytes.len() != used.div_ceil(2) {
        return None;
    }
    let mut out = String::with_capacity(digits + count);
    for (i, len) in lengths.iter().enumerate() {
        if i > 0 {
            out.push('-');
        }
        for _ in 0..*len {
            let n = nibbles.next()?;
            out.push(char::from_digit(u32::from(n), 16)?);
        }
    }
    if used % 2 == 1 && nibbles.next() != Some(0) {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_common_servers_tags_pack_small() {
        let nginx = Etag::from_header("\"5c11a604-eba\"").unwrap();
        let packed = nginx.pack();
        assert!(packed.hex);
        assert_eq!(packed.bytes.len(), 7);
        assert_eq!(
            Etag::unpack(&packed).unwrap().to_header(),
            "\"5c11a604-eba\""
        );
        let apache = Etag::from_header("\"2aa6-531e1d5a8d440\"").unwrap();
        assert_eq!(apache.pack().bytes.len(), 10);
        let weak = Etag::from_header("W/\"2aa6-531e1d5a8d440\"").unwrap();
        assert!(weak.is_weak());
        assert_eq!(
            Etag::unpack(&weak.pack()).unwrap().to_header(),
            "W/\"2aa6-531e1d5a8d440\""
        );
        // S3's MD5: one group of 32 digits.
        let s3 = Etag::from_header("\"d41d8cd98f00b204e9800998ecf8427e\"").unwrap();
        assert_eq!(s3.pack().bytes.len(), 18);
        assert_eq!(Etag::unpack(&s3.pack()).unwrap(), s3);
        // Upper case, or 16 groups: kept verbatim, still exact.
        let many = format!("\"{}\"", ["a"; 16].join("-"));
        for tag in [
            "\"5C11A604-EBA\"",
            many.as_str(),
            "\"00000000000000000\"",
            "\"abc\"",
            "\"\"",
        ] {
            let e = Etag::from_header(tag).unwrap();
            assert_eq!(Etag::unpack(&e.pack()).unwrap().to_header(), tag);
        }
    }

    #[test]
    fn what_is_not_an_etag_is_not_kept() {
        for bad in [
            "5c11a604-eba",
            "\"a\"b\"",
            "W/5c",
            "\"tab\there\"",
            "\"new\r\nline\"",
            "w/\"lower-case-w\"",
            "\"é\"",
        ] {
            assert_eq!(Etag::from_header(bad), None, "{bad:?}");
        }
        let longest = format!("\"{}\"", "x".repeat(MAX_ETAG - 2));
        assert!(Etag::from_header(&longest).is_some());
        let over = format!("\"{}\"", "x".repeat(MAX_ETAG - 1));
        assert_eq!(Etag::from_header(&over), None);
    }

    #[test]
    fn a_hostile_packed_form_is_refused_not_misread() {
        for bytes in [
            vec![],
            vec![0x00],
            vec![0x10],             // one group, its length nibble missing
            vec![0x11, 0x23, 0x40], // one group of 2 digits, a byte too many
            vec![0x10, 0x55],       // padding nibble not 0
        ] {
            let p = Packed {
                weak: false,
                hex: true,
                bytes,
            };
            assert_eq!(Etag::unpack(&p), None, "{p:?}");
        }
        let p = Packed {
            weak: false,
            hex: false,
            bytes: b"quote\"inside".to_vec(),
        };
        assert_eq!(Etag::unpack(&p), None);
    }

    proptest! {
        #[test]
        fn every_kept_tag_comes_back_byte_exact(
            weak in any::<bool>(),
            opaque in "[!#-~]{0,60}",
        ) {
            let header = format!("{}\"{opaque}\"", if weak { "W/" } else { "" });
            let e = Etag::from_header(&header).unwrap();
            prop_assert_eq!(Etag::unpack(&e.pack()).unwrap().to_header(), header);
        }

        #[test]
        fn hex_groups_pack_to_half_their_digits(
            groups in prop_oneof![
                proptest::collection::vec("[0-9a-f]{1,40}", 1..=6),
                proptest::collection::vec("[0-9a-f]{1,12}", 1..=15),
            ],
        ) {
            let header = format!("\"{}\"", groups.join("-"));
            let e = Etag::from_header(&header).unwrap();
            let packed = e.pack();
            prop_assert!(packed.hex);
            let digits: usize = groups.iter().map(String::len).sum();
            let lengths: usize = groups.iter().map(|g| if g.len() <= 15 { 1 } else { 3 }).sum();
            prop_assert_eq!(packed.bytes.len(), (1 + lengths + digits).div_ceil(2));
            prop_assert_eq!(Etag::unpack(&packed).unwrap().to_header(), header);
        }
    }
}
