//! A URL's fetch history in the byte form both frontiers store: 37 bytes, then the ETag.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | flags: ETag form (2 bits: none, inline verbatim, inline hex, spilled), weak, has Last-Modified, body truncated, gone streak (3 bits) |
//! | 1 | 1 | schedule generation (wraps): a stale due entry is one whose generation differs |
//! | 2 | 2 | last status (0: no response) |
//! | 4 | 4 | last fetch, seconds |
//! | 8 | 4 | current interval, seconds |
//! | 12 | 4 | Last-Modified, Unix seconds (an IMF-fixdate has no finer part) |
//! | 16 | 6 | captured at: seconds (4) and milliseconds (2) of the last full response — the `WARC-Refers-To-Date` of a revisit |
//! | 22 | 8 | the first 64 bits of the payload's SHA-1, to compare with the next fetch's |
//! | 30 | 4 | body bytes of the last full response (what a 304 saves) |
//! | 34 | 1 | fetches counted (see [`History::count`]) |
//! | 35 | 1 | of them, fetches that found a change |
//! | 36 | 1 | ETag length `n` inline (0 when none or spilled) |
//! | 37 | n | the ETag inline, at most [`INLINE_ETAG`] bytes |
//!
//! Little-endian throughout. An ETag whose stored form is longer than [`INLINE_ETAG`] bytes
//! goes to a store of its own ([`Encoded::spill`]) so that the value stays at most 64 bytes —
//! the size under which Redis keeps a hash field in its compact listpack encoding. The sizes
//! were cut to what Redis measured (`cargo bench -p redis-frontier --bench history`): 64 bits
//! of digest only ever compare two payloads of one URL (a false "unchanged" once in 2⁶⁴), and
//! the counts are a window, halved when full, which is what a change-rate estimate wants.
//! [`History::decode`] checks every byte it reads: a stored value is input like any other.

use crate::etag::{Etag, Packed};

/// Bytes before the ETag.
pub const FIXED: usize = 37;
/// Longest ETag stored in the value itself; a longer one spills.
pub const INLINE_ETAG: usize = 64 - FIXED;
/// Bytes of the payload digest kept (for equality only).
pub const DIGEST: usize = 8;

const FORM_NONE: u8 = 0;
const FORM_VERBATIM: u8 = 1;
const FORM_HEX: u8 = 2;
const FORM_SPILLED: u8 = 3;
const WEAK: u8 = 1 << 2;
const HAS_LM: u8 = 1 << 3;
const TRUNCATED: u8 = 1 << 4;
const GONE_SHIFT: u8 = 5;
/// Longest run of 404/410 answers counted.
pub const MAX_GONE_STREAK: u8 = 7;

/// What is kept of one URL's fetches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Schedule generation: bumped when the URL is rescheduled out of turn (an API call), so
    /// that its older due entry is recognised as stale.
    pub generation: u8,
    /// Status of the last response (0: none came).
    pub status: u16,
    /// When it was last fetched, seconds (the frontier's clock).
    pub last_fetch: u32,
    /// The interval now in force, seconds.
    pub interval: u32,
    /// The last full response's `Last-Modified`, Unix seconds.
    pub last_modified: Option<u32>,
    /// When the last full response was captured: Unix seconds and milliseconds.
    pub captured_at: (u32, u16),
    /// The first bytes of the last full payload's SHA-1.
    pub digest: [u8; DIGEST],
    /// Body bytes of the last full response.
    pub body_bytes: u32,
    /// Whether that body was cut at the size limit (its digest is of what was read).
    pub truncated: bool,
    /// 404/410 answers in a row, up to [`MAX_GONE_STREAK`].
    pub gone_streak: u8,
    /// Fetches counted: the recent ones, up to 255 ([`History::count`]).
    pub fetches: u8,
    /// Of those, the ones that found the page changed (never more than `fetches`).
    pub changes: u8,
    /// The last full response's ETag.
    pub etag: Option<Etag>,
}

/// A history's stored bytes: the value, and the ETag's own bytes when they spill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// At most [`FIXED`] + [`INLINE_ETAG`] bytes.
    pub value: Vec<u8>,
    /// The ETag's stored form when it is longer than [`INLINE_ETAG`] bytes (the opaque tag
    /// verbatim), to keep beside the value.
    pub spill: Option<Vec<u8>>,
}

/// Why stored bytes are not a history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the fixed part, or not as many as the ETag length says.
    #[error("a fetch history of {got} bytes where {want} were expected")]
    Length {
        /// Bytes expected.
        want: usize,
        /// Bytes given.
        got: usize,
    },
    /// The ETag is stored apart, and was not given.
    #[error("the fetch history's ETag is stored apart and was not found")]
    MissingSpill,
    /// The ETag's bytes are not a tag this crate stores.
    #[error("the fetch history's ETag is not a valid stored tag")]
    Etag,
    /// Flags that no encoder writes.
    #[error("the fetch history's flags ({0:#04x}) are inconsistent")]
    Flags(u8),
    /// More changes than fetches.
    #[error("the fetch history counts {changes} changes in {fetches} fetches")]
    Counts {
        /// Fetches counted.
        fetches: u8,
        /// Changes counted.
        changes: u8,
    },
}

impl History {
    /// The stored bytes.
    pub fn encode(&self) -> Encoded {
        let packed = self.etag.as_ref().map(Etag::pack);
        let (form, inline, spill) = match &packed {
            None => (FORM_NONE, &[][..], None),
            Some(p) if p.bytes.len() > INLINE_ETAG => {
                // Spilled tags are kept verbatim: one form to read back apart.
                let verbatim = self.etag.as_ref().map(|e| e.opaque().as_bytes().to_vec());
                (FORM_SPILLED, &[][..], verbatim)
            }
            Some(p) if p.hex => (FORM_HEX, &p.bytes[..], None),
            Some(p) => (FORM_VERBATIM, &p.bytes[..], None),
        };
        let mut flags = form | (self.gone_streak.min(MAX_GONE_STREAK) << GONE_SHIFT);
        if packed.as_ref().is_some_and(|p| p.weak) {
            flags |= WEAK;
        }
        if self.last_modified.is_some() {
            flags |= HAS_LM;
        }
        if self.truncated {
            flags |= TRUNCATED;
        }
        let mut v = Vec::with_capacity(FIXED + inline.len());
        v.push(flags);
        v.push(self.generation);
        v.extend_from_slice(&self.status.to_le_bytes());
        v.extend_from_slice(&self.last_fetch.to_le_bytes());
        v.extend_from_slice(&self.interval.to_le_bytes());
        v.extend_from_slice(&self.last_modified.unwrap_or(0).to_le_bytes());
        v.extend_from_slice(&self.captured_at.0.to_le_bytes());
        v.extend_from_slice(&self.captured_at.1.to_le_bytes());
        v.extend_from_slice(&self.digest);
        v.extend_from_slice(&self.body_bytes.to_le_bytes());
        v.push(self.fetches);
        v.push(self.changes.min(self.fetches));
        // `inline` is at most INLINE_ETAG (27) bytes: its length fits a byte.
        v.push(inline.len() as u8);
        v.extend_from_slice(inline);
        debug_assert!(v.len() <= FIXED + INLINE_ETAG);
        Encoded { value: v, spill }
    }

    /// The history `value` holds; `spill` is the ETag stored apart, when the value says it
    /// spilled (ignored otherwise).
    pub fn decode(value: &[u8], spill: Option<&[u8]>) -> Result<History, DecodeError> {
        if value.len() < FIXED {
            return Err(DecodeError::Length {
                want: FIXED,
                got: value.len(),
            });
        }
        let n = usize::from(value[FIXED - 1]);
        if n > INLINE_ETAG || value.len() != FIXED + n {
            return Err(DecodeError::Length {
                want: FIXED + n.min(INLINE_ETAG),
                got: value.len(),
            });
        }
        let u16_at = |o: usize| u16::from_le_bytes([value[o], value[o + 1]]);
        let u32_at =
            |o: usize| u32::from_le_bytes([value[o], value[o + 1], value[o + 2], value[o + 3]]);
        let flags = value[0];
        let weak = flags & WEAK != 0;
        let form = flags & 0b11;
        let inline = &value[FIXED..];
        let etag = match form {
            FORM_NONE if n == 0 && !weak => None,
            FORM_VERBATIM | FORM_HEX if n > 0 || form == FORM_VERBATIM => {
                let packed = Packed {
                    weak,
                    hex: form == FORM_HEX,
                    bytes: inline.to_vec(),
                };
                Some(Etag::unpack(&packed).ok_or(DecodeError::Etag)?)
            }
            FORM_SPILLED if n == 0 => {
                let bytes = spill.ok_or(DecodeError::MissingSpill)?;
                let packed = Packed {
                    weak,
                    hex: false,
                    bytes: bytes.to_vec(),
                };
                Some(Etag::unpack(&packed).ok_or(DecodeError::Etag)?)
            }
            _ => return Err(DecodeError::Flags(flags)),
        };
        let has_lm = flags & HAS_LM != 0;
        let lm = u32_at(12);
        if !has_lm && lm != 0 {
            return Err(DecodeError::Flags(flags));
        }
        let mut digest = [0u8; DIGEST];
        digest.copy_from_slice(&value[22..22 + DIGEST]);
        let (fetches, changes) = (value[34], value[35]);
        if changes > fetches {
            return Err(DecodeError::Counts { fetches, changes });
        }
        Ok(History {
            generation: value[1],
            status: u16_at(2),
            last_fetch: u32_at(4),
            interval: u32_at(8),
            last_modified: has_lm.then_some(lm),
            captured_at: (u32_at(16), u16_at(20)),
            digest,
            body_bytes: u32_at(30),
            truncated: flags & TRUNCATED != 0,
            gone_streak: flags >> GONE_SHIFT,
            fetches,
            changes,
            etag,
        })
    }

    /// The kept part of a full SHA-1 digest.
    pub fn digest_of(sha1: &[u8; 20]) -> [u8; DIGEST] {
        let mut d = [0u8; DIGEST];
        d.copy_from_slice(&sha1[..DIGEST]);
        d
    }

    /// Counts a fetch that found the page `changed` or not. When the count is full the
    /// window halves first: both counts keep their ratio, the older fetches weigh less.
    pub fn count(&mut self, changed: bool) {
        if self.fetches == u8::MAX {
            self.fetches /= 2;
            self.changes /= 2;
        }
        self.fetches += 1;
        if changed {
            self.changes = (self.changes + 1).min(self.fetches);
        }
    }

    /// Whether a payload with this full SHA-1 is the one last stored (never before a full
    /// response was kept — its capture time says one was —, nor against a body that was cut).
    pub fn same_payload(&self, sha1: &[u8; 20]) -> bool {
        self.captured_at != (0, 0) && !self.truncated && self.digest == Self::digest_of(sha1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(etag: Option<&str>) -> History {
        History {
            generation: 3,
            status: 200,
            last_fetch: 1_795_000_000,
            interval: 86_400,
            last_modified: Some(1_794_000_000),
            captured_at: (1_795_000_000, 999),
            digest: [7; DIGEST],
            body_bytes: 12_345,
            truncated: false,
            gone_streak: 0,
            fetches: 4,
            changes: 1,
            etag: etag.map(|e| Etag::from_header(e).unwrap()),
        }
    }

    #[test]
    fn sizes_are_37_bytes_and_the_etag() {
        assert_eq!((FIXED, INLINE_ETAG), (37, 27));
        let cases = [
            (None, FIXED),
            (Some("\"5c11a604-eba\""), FIXED + 7), // nginx
            (Some("W/\"2aa6-531e1d5a8d440\""), FIXED + 10), // Apache, weak
            (Some("\"abcdefghijklmnopqrstuvwxyz0\""), FIXED + 27), // 27 verbatim: inline
        ];
        for (etag, len) in cases {
            let h = sample(etag);
            let e = h.encode();
            assert_eq!(e.value.len(), len, "{etag:?}");
            assert_eq!(e.spill, None);
            assert_eq!(History::decode(&e.value, None).unwrap(), h);
        }
        // 28 bytes: spilled, the value stays at the fixed part.
        let h = sample(Some("\"abcdefghijklmnopqrstuvwxyz01\""));
        let e = h.encode();
        assert_eq!(e.value.len(), FIXED);
        assert_eq!(
            e.spill.as_deref(),
            Some(&b"abcdefghijklmnopqrstuvwxyz01"[..])
        );
        assert_eq!(History::decode(&e.value, e.spill.as_deref()).unwrap(), h);
        assert_eq!(
            History::decode(&e.value, None),
            Err(DecodeError::MissingSpill)
        );
    }

    #[test]
    fn hostile_bytes_are_an_error_not_a_panic() {
        let good = sample(Some("\"5c11a604-eba\"")).encode().value;
        assert!(matches!(
            History::decode(&good[..FIXED - 1], None),
            Err(DecodeError::Length { .. })
        ));
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            History::decode(&long, None),
            Err(DecodeError::Length { .. })
        ));
        let mut lying_len = good.clone();
        lying_len[FIXED - 1] = 200;
        assert!(History::decode(&lying_len, None).is_err());
        let mut no_form = good.clone();
        no_form[0] &= !0b11; // "none", yet 7 bytes of tag follow
        assert!(matches!(
            History::decode(&no_form, None),
            Err(DecodeError::Flags(_))
        ));
        let mut lm_without_flag = sample(None).encode().value;
        lm_without_flag[0] &= !HAS_LM;
        assert!(History::decode(&lm_without_flag, None).is_err());
        let mut more_changes = sample(None).encode().value;
        more_changes[35] = more_changes[34] + 1;
        assert!(matches!(
            History::decode(&more_changes, None),
            Err(DecodeError::Counts { .. })
        ));
    }

    #[test]
    fn the_same_payload_is_recognised_by_its_digest() {
        let mut sha = [9u8; 20];
        let mut h = sample(None);
        h.digest = History::digest_of(&sha);
        assert!(h.same_payload(&sha));
        sha[0] = 8;
        assert!(!h.same_payload(&sha));
        sha[0] = 9;
        h.truncated = true;
        assert!(!h.same_payload(&sha), "a cut body proves nothing");
        h.truncated = false;
        h.fetches = 0;
        assert!(h.same_payload(&sha), "a first fetch is no count, but kept");
        h.captured_at = (0, 0);
        assert!(!h.same_payload(&sha), "nothing was kept yet");
    }

    #[test]
    fn counts_are_a_window_that_keeps_the_change_ratio() {
        let mut h = History::default();
        for i in 0..1_000u32 {
            h.count(i % 4 == 0);
            assert!(h.changes <= h.fetches);
        }
        let ratio = f64::from(h.changes) / f64::from(h.fetches);
        assert!((ratio - 0.25).abs() < 0.05, "{h:?}");
        assert!(h.fetches >= 128, "halved, not reset: {h:?}");
    }

    proptest! {
        #[test]
        fn every_history_round_trips(
            generation in any::<u8>(),
            status in any::<u16>(),
            last_fetch in any::<u32>(),
            interval in any::<u32>(),
            last_modified in any::<Option<u32>>(),
            captured_at in any::<(u32, u16)>(),
            digest in any::<[u8; DIGEST]>(),
            body_bytes in any::<u32>(),
            truncated in any::<bool>(),
            gone_streak in 0..=MAX_GONE_STREAK,
            (fetches, changes) in any::<u8>().prop_flat_map(|f| (Just(f), 0..=f)),
            etag in proptest::option::of("(W/)?\"[!#-~]{0,40}\""),
        ) {
            let h = History {
                generation, status, last_fetch, interval, last_modified, captured_at, digest,
                body_bytes, truncated, gone_streak, fetches, changes,
                etag: etag.as_deref().map(|e| Etag::from_header(e).unwrap()),
            };
            let e = h.encode();
            prop_assert!(e.value.len() <= FIXED + INLINE_ETAG);
            prop_assert_eq!(History::decode(&e.value, e.spill.as_deref()).unwrap(), h);
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(
            value in proptest::collection::vec(any::<u8>(), 0..80),
            spill in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        ) {
            if let Ok(h) = History::decode(&value, spill.as_deref()) {
                // What decodes re-encodes to a value that decodes to the same history.
                let e = h.encode();
                prop_assert_eq!(History::decode(&e.value, e.spill.as_deref()).unwrap(), h);
            }
        }
    }
}
