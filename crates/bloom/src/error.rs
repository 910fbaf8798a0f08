//! Errors of the bloom crate: one enum for bad parameters, one for bad serialized input.

#![forbid(unsafe_code)]

use std::io;

/// A filter could not be created or combined as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The false-positive probability is not strictly between 0 and 1 (or is NaN).
    #[error("false-positive probability must be strictly between 0 and 1, got {0}")]
    InvalidFpp(f64),
    /// Guava stores the hash-function count in one unsigned byte.
    #[error("{0} hash functions would be needed; Guava's format allows 1 to 255")]
    InvalidHashFunctionCount(u64),
    /// The bit array would be empty (Guava refuses this too: "data length is zero").
    #[error("a filter of {bits} bits has no 64-bit word to hold them")]
    ZeroBits {
        /// The number of bits asked for.
        bits: u64,
    },
    /// Guava addresses words with a signed 32-bit count; larger filters cannot be written.
    #[error("a filter of {bits} bits needs more than 2^31-1 words of 64 bits")]
    TooLarge {
        /// The number of bits asked for.
        bits: u64,
    },
    /// `put_all` was given a filter of another shape.
    #[error("filters are not compatible: {0}")]
    Incompatible(String),
    /// A variant was configured with parameters outside its valid range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name as the caller spells it.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// Serialized filter bytes could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The underlying reader failed (other than by ending early).
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    /// The input ended before the header or the words it announced.
    #[error("truncated filter: expected {expected} bytes, found {found}")]
    Truncated {
        /// How many bytes the header promised (header included).
        expected: u64,
        /// How many were there.
        found: u64,
    },
    /// The strategy byte names no strategy Guava has.
    #[error("unknown hashing strategy ordinal {0} (Guava knows 0 = MURMUR128_MITZ_32, 1 = MURMUR128_MITZ_64)")]
    UnknownStrategy(i8),
    /// The header announces zero hash functions.
    #[error("the filter header announces 0 hash functions")]
    ZeroHashFunctions,
    /// The header announces zero or a negative number of words.
    #[error("the filter header announces {0} words; it must be at least 1")]
    BadWordCount(i32),
    /// Bytes follow the filter where none were expected.
    #[error("{0} unexpected bytes after the filter")]
    TrailingBytes(u64),
}
