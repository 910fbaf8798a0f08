//! Guava's sizing formulas, reproduced operation for operation so that the same
//! `(expected_insertions, fpp)` gives the same bit count and hash count as
//! `BloomFilter.create` in Guava 31.1.

#![forbid(unsafe_code)]

use std::f64::consts::LN_2;

use crate::error::Error;

/// Guava's `optimalNumOfBits(n, p)`: `(long) (-n * ln(p) / (ln 2)^2)`, with `p == 0`
/// replaced by the smallest positive double. The cast truncates and saturates like Java's
/// `(long)`; a result that would be negative (only for `p > 1`) saturates to 0.
pub fn optimal_num_of_bits(expected_insertions: u64, fpp: f64) -> u64 {
    let fpp = if fpp == 0.0 { f64::from_bits(1) } else { fpp };
    // Guava negates the long first and then widens; negation is exact in both domains.
    let bits = -(expected_insertions as f64) * fpp.ln() / (LN_2 * LN_2);
    bits as u64
}

/// Guava's `optimalNumOfHashFunctions(n, m)`: `max(1, (int) Math.round(m / n * ln 2))`.
///
/// Java's corner cases are kept: `Math.round` rounds half up and saturates (`NaN` → 0,
/// `+inf` → `Long.MAX_VALUE`), and the `(int)` cast keeps the low 32 bits.
pub fn optimal_num_of_hash_functions(expected_insertions: u64, num_bits: u64) -> u32 {
    let ratio = num_bits as f64 / expected_insertions as f64 * LN_2;
    let rounded = java_round(ratio) as i32; // `(int)` of a long: keep the low 32 bits
    rounded.max(1) as u32
}

/// Java's `Math.round(double)`: nearest integer, ties towards positive infinity, saturating.
fn java_round(x: f64) -> i64 {
    let floor = x.floor();
    // `x - floor` is exact for every finite double, so the tie test is exact too (unlike
    // `(x + 0.5).floor()`, which rounds 0.49999999999999994 up).
    let rounded = if x - floor >= 0.5 { floor + 1.0 } else { floor };
    rounded as i64 // saturating; NaN → 0, as in Java
}

/// The shape `BloomFilter.create(funnel, n, fpp)` would give: bits (before rounding to
/// words) and hash functions. Arguments Guava rejects, and shapes its format cannot hold,
/// are errors.
pub fn shape_for(expected_insertions: u64, fpp: f64) -> Result<(u64, u32), Error> {
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(Error::InvalidFpp(fpp));
    }
    // Guava: "expectedInsertions == 0" is treated as 1 to avoid a 0-bit filter.
    let n = expected_insertions.max(1);
    let bits = optimal_num_of_bits(n, fpp);
    let hashes = optimal_num_of_hash_functions(n, bits);
    // Guava's order: the bit array is built (and refused) before the hash count is checked.
    if bits == 0 {
        return Err(Error::ZeroBits { bits });
    }
    if bits.div_ceil(64) > crate::bits::MAX_WORDS {
        return Err(Error::TooLarge { bits });
    }
    if hashes > 255 {
        return Err(Error::InvalidHashFunctionCount(u64::from(hashes)));
    }
    Ok((bits, hashes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_round_matches_java_semantics() {
        assert_eq!(java_round(0.49999999999999994), 0);
        assert_eq!(java_round(0.5), 1);
        assert_eq!(java_round(-0.5), 0);
        assert_eq!(java_round(-1.5), -1);
        assert_eq!(java_round(2.4), 2);
        assert_eq!(java_round(f64::NAN), 0);
        assert_eq!(java_round(f64::INFINITY), i64::MAX);
        assert_eq!(java_round(f64::NEG_INFINITY), i64::MIN);
    }

    #[test]
    fn textbook_figures() {
        // 1% needs ~9.59 bits per element and 7 hash functions.
        assert_eq!(optimal_num_of_bits(10_000_000, 0.01), 95_850_583);
        assert_eq!(optimal_num_of_hash_functions(10_000_000, 95_850_583), 7);
        // 0.1% needs ~14.4 bits and 10 hashes.
        let m = optimal_num_of_bits(1_000_000, 0.001);
        assert_eq!(m / 100_000, 143);
        assert_eq!(optimal_num_of_hash_functions(1_000_000, m), 10);
        // The articles' 10^10 URLs at 1%: ~9.59·10^10 bits ≈ 12 GB.
        let m = optimal_num_of_bits(10_000_000_000, 0.01);
        assert_eq!(m / 1_000_000_000, 95);
    }

    #[test]
    fn corner_cases_follow_guava() {
        // n = 0: 0 bits, NaN ratio → round(NaN) = 0 → max(1, 0).
        assert_eq!(optimal_num_of_bits(0, 0.01), 0);
        assert_eq!(optimal_num_of_hash_functions(0, 0), 1);
        // n = 0, m > 0: +inf → Long.MAX_VALUE → (int) = -1 → max(1, -1).
        assert_eq!(optimal_num_of_hash_functions(0, 10), 1);
        // p = 0 is replaced by Double.MIN_VALUE instead of producing infinity.
        assert_eq!(optimal_num_of_bits(1, 0.0), 1549);
    }

    #[test]
    fn shape_rejects_what_guava_rejects() {
        assert_eq!(shape_for(100, 0.0), Err(Error::InvalidFpp(0.0)));
        assert_eq!(shape_for(100, 1.0), Err(Error::InvalidFpp(1.0)));
        assert!(matches!(
            shape_for(100, f64::NAN),
            Err(Error::InvalidFpp(_))
        ));
        // 1 element at p = 0.9 needs 0.22 bits → 0 → Guava: "data length is zero!".
        assert_eq!(shape_for(1, 0.9), Err(Error::ZeroBits { bits: 0 }));
        // Tiny p needs more than 255 hash functions.
        assert!(matches!(
            shape_for(10, 1e-300),
            Err(Error::InvalidHashFunctionCount(_))
        ));
        // 10^12 at 1% needs ~9.6·10^12 bits, beyond 2^31-1 words.
        assert!(matches!(
            shape_for(1_000_000_000_000, 0.01),
            Err(Error::TooLarge { .. })
        ));
        // Zero expected insertions is treated as one.
        assert_eq!(shape_for(0, 0.5).unwrap(), shape_for(1, 0.5).unwrap());
        // More than 2^32 bits are fine.
        let (bits, _) = shape_for(1_000_000_000, 0.01).unwrap();
        assert!(bits > 1 << 32);
    }
}
