//! Exact `a % d` for a fixed 64-bit divisor without a division instruction (Lemire, Kaser,
//! Kurz, "Faster Remainder by Direct Computation", 2019).
//!
//! Guava maps each probe to a bit with `(combined & Long.MAX_VALUE) % bitSize`; the result
//! must be bit-exact, so multiply-shift range reduction (what fastbloom uses) is not an option.
//! A hardware 64-bit `div` costs tens of cycles and a `put` needs `k` of them; the divisor is
//! fixed per filter, so we precompute `M = ⌈2^128 / d⌉` once and get the exact remainder
//! from three 64×64 multiplications. Exact for every 64-bit `a` and every `d ≥ 2`.

/// A precomputed divisor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastMod {
    m: u128,
    d: u64,
}

impl FastMod {
    /// Prepares division by `d` (≥ 2; filters have at least 64 bits).
    pub(crate) fn new(d: u64) -> Self {
        assert!(d >= 2, "FastMod needs a divisor of at least 2");
        Self {
            m: (u128::MAX / u128::from(d)).wrapping_add(1),
            d,
        }
    }

    /// `a % d`, exactly.
    #[inline(always)]
    pub(crate) fn rem(self, a: u64) -> u64 {
        let low = self.m.wrapping_mul(u128::from(a));
        let bottom = ((low as u64 as u128) * u128::from(self.d)) >> 64;
        let top = (low >> 64) * u128::from(self.d);
        ((bottom + top) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_hardware_remainder() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            // splitmix64
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let divisors = [
            2,
            3,
            63,
            64,
            65,
            9600,
            7_298_496,
            95_850_624,
            (i32::MAX as u64) * 64,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
        ];
        let random: Vec<u64> = (0..200)
            .map(|_| {
                let shift = next() % 60;
                next() >> shift
            })
            .collect();
        for d in divisors.into_iter().chain(random) {
            if d < 2 {
                continue;
            }
            let f = FastMod::new(d);
            for a in [0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, i64::MAX as u64] {
                assert_eq!(f.rem(a), a % d, "{a} % {d}");
            }
            for _ in 0..2000 {
                let a = next();
                assert_eq!(f.rem(a), a % d, "{a} % {d}");
            }
        }
    }
}
