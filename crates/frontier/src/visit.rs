//! Time on a known URL: its schedule ([`Visit`]: when it is due again, and the history its
//! fetches left) rides on its queue [`Entry`](crate::Entry), and what a fetch of it observed
//! ([`Visited`]) rides back on its [`Lease`](crate::Lease) to `complete`.
//!
//! Design choice: the schedule travels with the entry rather than living in a table of its
//! own. A URL with a schedule is never done: its completion replaces its queue row (same
//! admission id, so the admission log does not grow) with the entry carrying its next due
//! time, in the same checkpoint as any other completion — so a kill sees the old schedule or
//! the new one, never none. Frontiers that keep no schedule ignore both.

use recrawl::{History, Observation};

/// A known URL's schedule: when it is due again, and what its fetches left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visit {
    /// When it may be fetched again: Unix seconds.
    pub due: u64,
    /// What its fetches left (validators, digest, interval, counts).
    pub history: History,
}

/// What one fetch of a URL observed, for the frontier to schedule it by: the history as the
/// fetch left it (its interval still the one in force) and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visited {
    /// The history after this fetch; `last_fetch` is when its record was written.
    pub history: History,
    /// What the fetch saw.
    pub seen: Observation,
}

/// Why stored bytes are not a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadVisit;

impl Visit {
    /// Appends the binary form: due (u64 LE), the history's value (length byte, bytes), its
    /// spilled ETag (u16 LE length, `u16::MAX` for none, bytes).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let stored = self.history.encode();
        out.extend_from_slice(&self.due.to_le_bytes());
        // A history's value is at most 64 bytes.
        out.push(stored.value.len() as u8);
        out.extend_from_slice(&stored.value);
        match &stored.spill {
            // A spilled ETag is at most `recrawl::etag::MAX_ETAG` (256) bytes.
            Some(s) => {
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s);
            }
            None => out.extend_from_slice(&u16::MAX.to_le_bytes()),
        }
    }

    /// Reads the binary form from the front of `bytes`, advancing it.
    pub(crate) fn decode(bytes: &mut &[u8]) -> Result<Visit, BadVisit> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], BadVisit> {
            if b.len() < n {
                return Err(BadVisit);
            }
            let (head, rest) = b.split_at(n);
            *b = rest;
            Ok(head)
        }
        let due = u64::from_le_bytes(take(bytes, 8)?.try_into().map_err(|_| BadVisit)?);
        let len = take(bytes, 1)?[0] as usize;
        let value = take(bytes, len)?;
        let spill_len = u16::from_le_bytes(take(bytes, 2)?.try_into().map_err(|_| BadVisit)?);
        let spill = match spill_len {
            u16::MAX => None,
            n => Some(take(bytes, n as usize)?),
        };
        let history = History::decode(value, spill).map_err(|_| BadVisit)?;
        Ok(Visit { due, history })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recrawl::Etag;

    #[test]
    fn round_trip_with_inline_and_spilled_etags_and_refusals() {
        for tag in ["\"5c11a604-eba\"", &format!("\"{}\"", "x".repeat(40))] {
            let history = History {
                status: 200,
                last_fetch: 1_800_000_000,
                interval: 3_600,
                etag: Etag::from_header(tag),
                ..History::default()
            };
            let v = Visit {
                due: 1_800_003_600,
                history,
            };
            let mut buf = Vec::new();
            v.encode(&mut buf);
            let mut read = &buf[..];
            assert_eq!(Visit::decode(&mut read), Ok(v));
            assert!(read.is_empty());
            for cut in 0..buf.len() {
                assert_eq!(
                    Visit::decode(&mut &buf[..cut]),
                    Err(BadVisit),
                    "cut at {cut}"
                );
            }
        }
    }
}
