//! Guava's serialized form of a filter (`BloomFilter.writeTo` / `readFrom`): strategy byte,
//! hash-count byte, big-endian word count, big-endian words. Reading validates the header and
//! allocates only as fast as real bytes arrive, so hostile bytes are errors, never big
//! allocations.

#![forbid(unsafe_code)]

use std::io::{self, Read, Write};

use crate::bits::{BitArray, MAX_WORDS};
use crate::error::ReadError;
use crate::raw::RawFilter;
use crate::strategy::Strategy;

/// Bytes of Guava's header: strategy ordinal, hash count, word count (big-endian i32).
const HEADER_LEN: usize = 6;

/// Words read per step when deserialising, so that a header claiming 2^31 words allocates
/// only as fast as real bytes arrive.
const READ_CHUNK_WORDS: usize = 1 << 16;

impl RawFilter {
    /// Number of bytes [`write_to`](Self::write_to) produces.
    pub fn serialized_len(&self) -> u64 {
        HEADER_LEN as u64 + self.bits.word_count() as u64 * 8
    }

    /// Guava's `writeTo`: ordinal byte, hash-count byte, big-endian word count, big-endian
    /// words. Concurrent `put`s while writing may or may not be included.
    pub fn write_to<W: Write>(&self, mut out: W) -> io::Result<()> {
        let mut header = [0u8; HEADER_LEN];
        header[0] = self.strategy.ordinal();
        header[1] = self.num_hashes as u8; // 1..=255, checked at construction
        header[2..].copy_from_slice(&(self.bits.word_count() as i32).to_be_bytes());
        out.write_all(&header)?;
        // Buffer a chunk of words at a time: one `write_all` per word is slow on raw files.
        let mut buf = Vec::with_capacity(8 * 4096.min(self.bits.word_count()));
        for chunk_start in (0..self.bits.word_count()).step_by(4096) {
            buf.clear();
            let end = (chunk_start + 4096).min(self.bits.word_count());
            for i in chunk_start..end {
                buf.extend_from_slice(&self.bits.word(i).to_be_bytes());
            }
            out.write_all(&buf)?;
        }
        Ok(())
    }

    /// Guava's `readFrom`: reads exactly one filter, leaving any following bytes unread.
    /// Hostile input yields an error; memory grows only with bytes actually read.
    pub fn read_from<R: Read>(mut input: R) -> Result<Self, ReadError> {
        let mut header = [0u8; HEADER_LEN];
        let got = read_full(&mut input, &mut header)?;
        if got < HEADER_LEN {
            return Err(ReadError::Truncated {
                expected: HEADER_LEN as u64,
                found: got as u64,
            });
        }
        let ordinal = header[0] as i8;
        let strategy = u8::try_from(ordinal)
            .ok()
            .and_then(Strategy::from_ordinal)
            .ok_or(ReadError::UnknownStrategy(ordinal))?;
        let num_hashes = u32::from(header[1]);
        if num_hashes == 0 {
            return Err(ReadError::ZeroHashFunctions);
        }
        let word_count = i32::from_be_bytes([header[2], header[3], header[4], header[5]]);
        if word_count <= 0 {
            return Err(ReadError::BadWordCount(word_count));
        }
        let word_count = word_count as usize;
        debug_assert!(word_count as u64 <= MAX_WORDS);
        let expected = HEADER_LEN as u64 + word_count as u64 * 8;

        let mut words: Vec<u64> = Vec::with_capacity(word_count.min(READ_CHUNK_WORDS));
        let mut chunk = vec![0u8; 8 * word_count.min(READ_CHUNK_WORDS)];
        while words.len() < word_count {
            let want = (word_count - words.len()).min(READ_CHUNK_WORDS) * 8;
            let got = read_full(&mut input, &mut chunk[..want])?;
            words.extend(
                chunk[..got - got % 8]
                    .chunks_exact(8)
                    .map(|b| u64::from_be_bytes(b.try_into().expect("8-byte chunk"))),
            );
            if got < want {
                return Err(ReadError::Truncated {
                    expected,
                    found: HEADER_LEN as u64 + (words.len() * 8 + got % 8) as u64,
                });
            }
        }
        let bits = BitArray::from_words(words).map_err(|_| ReadError::BadWordCount(0))?;
        Self::from_parts(bits, num_hashes, strategy).map_err(|_| ReadError::ZeroHashFunctions)
    }

    /// Reads a filter that must fill `bytes` exactly.
    pub fn from_slice(mut bytes: &[u8]) -> Result<Self, ReadError> {
        let filter = Self::read_from(&mut bytes)?;
        if !bytes.is_empty() {
            return Err(ReadError::TrailingBytes(bytes.len() as u64));
        }
        Ok(filter)
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full<R: Read>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::tests::sample;

    #[test]
    fn round_trips_through_guava_format() {
        let f = sample();
        let mut bytes = Vec::new();
        f.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, f.serialized_len());
        assert_eq!(bytes[0], 1, "MURMUR128_MITZ_64 ordinal");
        assert_eq!(bytes[1], 7, "k for 1%");
        assert_eq!(&bytes[2..6], &(f.bits().word_count() as i32).to_be_bytes());
        let g = RawFilter::from_slice(&bytes).unwrap();
        assert_eq!(g.bits().to_words(), f.bits().to_words());
        assert_eq!(g.bits().bit_count(), f.bits().bit_count());
        assert!(g.is_compatible(&f));
    }

    #[test]
    fn hostile_headers_are_errors_not_allocations() {
        // Claims 2^31-1 words (16 GiB) but carries 3 bytes of them.
        let bytes = [1u8, 7, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3];
        match RawFilter::from_slice(&bytes) {
            Err(ReadError::Truncated { expected, found }) => {
                assert_eq!(expected, 6 + (i32::MAX as u64) * 8);
                assert_eq!(found, 9);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0xff, 0xff, 0xff, 0xff]),
            Err(ReadError::BadWordCount(-1))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0, 0, 0, 0]),
            Err(ReadError::BadWordCount(0))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::ZeroHashFunctions)
        ));
        assert!(matches!(
            RawFilter::from_slice(&[2, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::UnknownStrategy(2))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[0xff, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::UnknownStrategy(-1))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7]),
            Err(ReadError::Truncated {
                expected: 6,
                found: 2
            })
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            Err(ReadError::TrailingBytes(1))
        ));
    }
}
