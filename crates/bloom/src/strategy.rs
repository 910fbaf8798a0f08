//! Guava's two hashing strategies: how one 128-bit hash becomes `k` bit indices.
//!
//! Both use the Kirsch–Mitzenmacher construction ("Less Hashing, Same Performance"): index
//! `i` comes from `h1 + i·h2`, so one Murmur3 call serves all `k` probes.
//! - `MURMUR128_MITZ_64` (ordinal 1, Guava's default since 2012): 64-bit `h1`/`h2` from the
//!   two halves of the hash; index = `(combined & i64::MAX) % bit_size` for i in `0..k`.
//! - `MURMUR128_MITZ_32` (ordinal 0, older Guava): 32-bit halves of the lower 64 bits;
//!   `combined = h1 + i·h2` for i in `1..=k`, bit-inverted when negative, `% bit_size`.
//!   Kept so that files written by old Java services can be read and queried.

#![forbid(unsafe_code)]

use crate::funnel::Hash128;

/// Which of Guava's `BloomFilterStrategies` maps hashes to bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// `MURMUR128_MITZ_32`, ordinal 0.
    Murmur128Mitz32,
    /// `MURMUR128_MITZ_64`, ordinal 1 — the default.
    #[default]
    Murmur128Mitz64,
}

impl Strategy {
    /// The ordinal byte Guava writes in its serialized form.
    pub fn ordinal(self) -> u8 {
        match self {
            Strategy::Murmur128Mitz32 => 0,
            Strategy::Murmur128Mitz64 => 1,
        }
    }

    /// The strategy with Guava ordinal `ordinal`, if there is one.
    pub fn from_ordinal(ordinal: u8) -> Option<Self> {
        match ordinal {
            0 => Some(Strategy::Murmur128Mitz32),
            1 => Some(Strategy::Murmur128Mitz64),
            _ => None,
        }
    }

    /// Guava's enum constant name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Murmur128Mitz32 => "MURMUR128_MITZ_32",
            Strategy::Murmur128Mitz64 => "MURMUR128_MITZ_64",
        }
    }

    /// The bit indices of `hash` in an array of `bit_size` bits.
    #[inline]
    pub fn indices(self, hash: Hash128, num_hashes: u32, bit_size: u64) -> Indices {
        match self {
            Strategy::Murmur128Mitz64 => Indices::Mitz64 {
                combined: hash.h1,
                step: hash.h2,
                left: num_hashes,
                bit_size,
            },
            Strategy::Murmur128Mitz32 => Indices::Mitz32 {
                h1: hash.h1 as i32,
                h2: (hash.h1 >> 32) as i32,
                i: 1,
                k: num_hashes as i32,
                bit_size,
            },
        }
    }
}

/// The `k` indices of one item, produced lazily so `might_contain` can stop at the first 0.
#[derive(Debug, Clone)]
pub enum Indices {
    #[doc(hidden)]
    Mitz64 {
        combined: u64,
        step: u64,
        left: u32,
        bit_size: u64,
    },
    #[doc(hidden)]
    Mitz32 {
        h1: i32,
        h2: i32,
        i: i32,
        k: i32,
        bit_size: u64,
    },
}

impl Iterator for Indices {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        match self {
            Indices::Mitz64 {
                combined,
                step,
                left,
                bit_size,
            } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let index = (*combined & i64::MAX as u64) % *bit_size;
                *combined = combined.wrapping_add(*step);
                Some(index)
            }
            Indices::Mitz32 {
                h1,
                h2,
                i,
                k,
                bit_size,
            } => {
                if *i > *k {
                    return None;
                }
                let mut combined = h1.wrapping_add(i.wrapping_mul(*h2));
                if combined < 0 {
                    combined = !combined;
                }
                *i += 1;
                Some(combined as u64 % *bit_size)
            }
        }
    }
}
