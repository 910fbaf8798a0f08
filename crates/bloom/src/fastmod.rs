//! Guava's probe reduction `(combined & Long.MAX_VALUE) % bitSize`, exactly, without a
//! division instruction.
//!
//! The result must be bit-exact, so multiply-shift range reduction (what fastbloom uses) is
//! not an option; but the divisor is fixed per filter and the dividend has only 63 bits, and
//! for such dividends a 64-bit reciprocal is exact (Granlund and Montgomery, "Division by
//! Invariant Integers using Multiplication", 1994, Theorem 4.2): with
//! `2^(ℓ-1) < d ≤ 2^ℓ` and `m = ⌈2^(63+ℓ) / d⌉`,
//!
//! ```text
//! ⌊x / d⌋ = ⌊x · m / 2^(63+ℓ)⌋   for every 0 ≤ x < 2^63,
//! ```
//!
//! because `2^(63+ℓ) ≤ m·d ≤ 2^(63+ℓ) + d - 1 < 2^(63+ℓ) + 2^ℓ` — the condition of the
//! theorem — and `m ≤ 2^(63+ℓ) / (2^(ℓ-1) + 1) + 1 < 2^64` (`m = 2^63` for `d = 2`), so `m`
//! is one register. The remainder then costs one widening and one
//! ordinary multiplication (`x - ⌊x / d⌋ · d`) where a hardware 64-bit `div` costs tens of
//! cycles on many cores, and `k` of them are paid per key. (An earlier version used Lemire's
//! `⌈2^128 / d⌉`, which works for full 64-bit dividends but needs five multiplications;
//! BENCHMARKS.md §1 has the comparison.)

#![forbid(unsafe_code)]

/// A precomputed divisor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastMod {
    /// `⌈2^(63+ℓ) / d⌉`.
    magic: u64,
    /// `ℓ - 1`: the product's high word is shifted right by this.
    shift: u32,
    d: u64,
}

impl FastMod {
    /// Prepares division by `d` (≥ 2; filters have at least 64 bits).
    pub(crate) fn new(d: u64) -> Self {
        assert!(d >= 2, "FastMod needs a divisor of at least 2");
        let l = u64::BITS - (d - 1).leading_zeros(); // ⌈log2 d⌉, 1..=64
        let magic = (1u128 << (63 + l)).div_ceil(u128::from(d));
        Self {
            magic: u64::try_from(magic).expect("the reciprocal of d ≥ 2 fits in 64 bits"),
            shift: l - 1,
            d,
        }
    }

    /// `(combined & i64::MAX) % d`, exactly: Guava's bit index for a combined hash.
    #[inline(always)]
    pub(crate) fn reduce(self, combined: u64) -> u64 {
        let x = combined & i64::MAX as u64;
        let high = ((u128::from(x) * u128::from(self.magic)) >> 64) as u64;
        x - (high >> self.shift) * self.d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_hardware_remainder_of_the_masked_value() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            // splitmix64
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut divisors = vec![
            2,
            3,
            5,
            7,
            63,
            64,
            65,
            9600,
            7_298_496,
            95_850_624,
            958_505_856,
            (i32::MAX as u64) * 64,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX,
            u64::MAX - 1,
        ];
        // Every power of two and its neighbours: ℓ changes there.
        for l in 1..64 {
            divisors.extend([(1u64 << l) - 1, 1 << l, (1 << l) + 1]);
        }
        // Filter sizes as Guava makes them: whole words.
        divisors.extend((1..2000).map(|w| w * 64));
        divisors.extend((0..300).map(|_| {
            let shift = next() % 60;
            next() >> shift
        }));
        let max = i64::MAX as u64;
        for d in divisors {
            if d < 2 {
                continue;
            }
            let f = FastMod::new(d);
            let edges = [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                max - 1,
                max,
                max + 1,
                u64::MAX,
            ];
            let near_multiples = (1..4).flat_map(|q| {
                let base = (max / d).saturating_sub(q) * d;
                [base.wrapping_sub(1), base, base + 1]
            });
            for c in edges.into_iter().chain(near_multiples) {
                assert_eq!(f.reduce(c), (c & max) % d, "{c} % {d}");
            }
            for _ in 0..2000 {
                let c = next();
                assert_eq!(f.reduce(c), (c & max) % d, "{c} % {d}");
            }
        }
    }
}
