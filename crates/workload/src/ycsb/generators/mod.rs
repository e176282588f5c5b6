//! YCSB's number generators, rebuilt for storlab so that fed the same random stream they give
//! the same draws as YCSB 0.17.0's `site.ycsb.generator` classes (checked draw by draw against
//! YCSB's own classes by tests/ycsb_exact.rs): uniform, hotspot, sequential, exponential and a
//! discrete chooser here, the zipfian family in [`zipfian`], the shared counters in
//! [`counters`]. Counts are 64-bit: where YCSB casts a count to `int` (keys past 2^31 - 1, a hot
//! set of more than 2^31 - 1 keys) storlab keeps the full count.
//!
//! Randomness is consumed as YCSB consumes its `ThreadLocalRandom`: a `nextDouble()` is one
//! 64-bit draw's top 53 bits times 2^-53 (`unit_f64`), a `nextLong()` is one 64-bit draw.
//!
//! Each worker owns its generators (plain values that take `&mut R` for randomness), so drawing
//! touches no shared state and never allocates. The exceptions are the ones YCSB shares between
//! all client threads on purpose: the counters and the position of a [`Sequential`] generator,
//! atomics behind an `Arc`, never a lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;

pub mod counters;
mod fast_pow;
pub mod zipfian;

pub use counters::{ACK_WINDOW, AckError, AcknowledgedCounter, Counter};
pub use zipfian::{
    SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETA_099, ScrambledZipfian, SkewedLatest, ZIPFIAN_CONSTANT,
    Zipfian, ZipfianEta, zeta, zeta_approx, zeta_range,
};

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// A generator's parameters that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeneratorError {
    #[error("empty range: lower bound {lower} is above upper bound {upper}")]
    EmptyRange { lower: u64, upper: u64 },
    #[error("range {lower} to {upper} holds more items than a 64-bit count")]
    TooManyItems { lower: u64, upper: u64 },
    #[error("zipfian constant {theta} is outside (0, 1)")]
    Theta { theta: f64 },
    #[error("{what} {value} is outside [0, 1]")]
    Fraction { what: &'static str, value: f64 },
    #[error(
        "hotspot: {items} items with hot-data fraction {fraction} leave an empty hot or cold set \
         while operations go to both"
    )]
    HotspotEmptySet { items: u64, fraction: f64 },
    #[error("exponential: percentile {percentile} must be in (0, 100) and range {range} above 0")]
    Exponential { percentile: f64, range: f64 },
    #[error("discrete chooser: weights must be finite, not negative, and sum above 0")]
    Weights,
}

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 over the eight bytes of the number, low byte first, then
/// the absolute value of the result read as a signed 64-bit number. (Java's `Math.abs` leaves
/// `Long.MIN_VALUE` negative; here that one value comes back as 2^63.)
#[inline]
pub fn fnvhash64(value: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    let mut rest = value;
    for _ in 0..8 {
        hash ^= rest & 0xff;
        hash = hash.wrapping_mul(FNV_PRIME_64);
        rest >>= 8;
    }
    (hash as i64).wrapping_abs() as u64
}

/// A uniform double in [0, 1) with 53 random bits: Java's `nextDouble()`,
/// `(nextLong() >>> 11) * 0x1.0p-53`, over one 64-bit draw.
#[inline]
pub(crate) fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// YCSB's `Math.abs(random.nextLong()) % n` over one 64-bit draw. (Java's `Math.abs` leaves
/// `Long.MIN_VALUE` negative, so for that one draw in 2^64 YCSB's remainder is negative; here it
/// is the remainder of 2^63.) `n` must be above 0.
#[inline]
pub(crate) fn abs_long_mod<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    (rng.next_u64() as i64).unsigned_abs() % n
}

/// Uniform over [lower, upper], YCSB's `UniformLongGenerator`:
/// `Math.abs(nextLong()) % (upper - lower + 1) + lower`.
#[derive(Debug, Clone, PartialEq)]
pub struct Uniform {
    lower: u64,
    span: u64,
}

impl Uniform {
    /// Both bounds are inclusive.
    pub fn new(lower: u64, upper: u64) -> Result<Self, GeneratorError> {
        if lower > upper {
            return Err(GeneratorError::EmptyRange { lower, upper });
        }
        Ok(Uniform {
            lower,
            // 0 stands for the full 2^64 span.
            span: (upper - lower).wrapping_add(1),
        })
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if self.span == 0 {
            rng.next_u64()
        } else {
            self.lower + abs_long_mod(rng, self.span)
        }
    }
}

/// YCSB's `HotspotIntegerGenerator` over [lower, upper]: the first `hot_data_fraction` of the
/// range gets `hot_opn_fraction` of the draws, each part uniform inside: a `nextDouble()`
/// chooses the part, then `Math.abs(nextLong()) % size` the key in it, as YCSB.
#[derive(Debug, Clone, PartialEq)]
pub struct Hotspot {
    lower: u64,
    hot_items: u64,
    cold_items: u64,
    hot_opn_fraction: f64,
}

impl Hotspot {
    pub fn new(
        lower: u64,
        upper: u64,
        hot_data_fraction: f64,
        hot_opn_fraction: f64,
    ) -> Result<Self, GeneratorError> {
        if lower > upper {
            return Err(GeneratorError::EmptyRange { lower, upper });
        }
        for (what, value) in [
            ("hot-data fraction", hot_data_fraction),
            ("hot-operation fraction", hot_opn_fraction),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(GeneratorError::Fraction { what, value });
            }
        }
        let items = upper - lower + 1;
        let hot_items = (items as f64 * hot_data_fraction) as u64;
        let cold_items = items - hot_items;
        // YCSB divides by zero here (an ArithmeticException mid-run); refuse it up front.
        if (hot_items == 0 && hot_opn_fraction > 0.0) || (cold_items == 0 && hot_opn_fraction < 1.0)
        {
            return Err(GeneratorError::HotspotEmptySet {
                items,
                fraction: hot_data_fraction,
            });
        }
        Ok(Hotspot {
            lower,
            hot_items,
            cold_items,
            hot_opn_fraction,
        })
    }

    /// The hot set is [lower, lower + hot_items()).
    pub fn hot_items(&self) -> u64 {
        self.hot_items
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if unit_f64(rng) < self.hot_opn_fraction {
            self.lower + abs_long_mod(rng, self.hot_items)
        } else {
            self.lower + self.hot_items + abs_long_mod(rng, self.cold_items)
        }
    }
}

/// YCSB's `SequentialGenerator`: start, start+1, ..., end, start, ... The position is shared by
/// every clone (an atomic, as YCSB shares one generator between its threads), so all workers
/// together walk the range once per lap.
#[derive(Debug, Clone)]
pub struct Sequential {
    start: u64,
    items: u64,
    position: Arc<AtomicU64>,
}

impl Sequential {
    /// Both bounds are inclusive.
    pub fn new(start: u64, end: u64) -> Result<Self, GeneratorError> {
        if start > end || end - start == u64::MAX {
            return Err(GeneratorError::EmptyRange {
                lower: start,
                upper: end,
            });
        }
        Ok(Sequential {
            start,
            items: end - start + 1,
            position: Arc::new(AtomicU64::new(0)),
        })
    }

    #[inline]
    pub fn next(&self) -> u64 {
        self.start + self.position.fetch_add(1, Ordering::Relaxed) % self.items
    }
}

/// YCSB's `ExponentialGenerator`: draws of -ln(u) / gamma with
/// gamma = -ln(1 - percentile/100) / range, so that `percentile` percent of the draws fall
/// below `range`. YCSB's defaults: percentile 95, range = recordcount * 0.8571428571.
#[derive(Debug, Clone, PartialEq)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    pub fn new(percentile: f64, range: f64) -> Result<Self, GeneratorError> {
        if !(percentile > 0.0 && percentile < 100.0 && range > 0.0 && range.is_finite()) {
            return Err(GeneratorError::Exponential { percentile, range });
        }
        Ok(Exponential {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        })
    }

    pub fn mean(&self) -> f64 {
        1.0 / self.gamma
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        // As YCSB: -ln(u) / gamma with u in [0, 1); u = 0 gives infinity, which the key
        // chooser redraws.
        -unit_f64(rng).ln() / self.gamma
    }
}

/// YCSB's `DiscreteGenerator`: picks one of a few values with given weights (normalised by
/// their sum), in the order they were added, as YCSB does: u = `nextDouble()`, then for each
/// value in turn, return it if u < weight / sum, else subtract weight / sum from u. (Should
/// rounding leave u past the last value, YCSB throws an `AssertionError`; here the last value is
/// returned.) Allocates once when built, never when drawing.
#[derive(Debug, Clone, PartialEq)]
pub struct Discrete<T: Copy> {
    /// (weight / sum of weights, value), in the order given.
    choices: Vec<(f64, T)>,
}

impl<T: Copy> Discrete<T> {
    /// Values with weight 0 are left out (as YCSB's CoreWorkload does).
    pub fn new(weights: &[(f64, T)]) -> Result<Self, GeneratorError> {
        if weights.iter().any(|(w, _)| !w.is_finite() || *w < 0.0) {
            return Err(GeneratorError::Weights);
        }
        let kept: Vec<(f64, T)> = weights.iter().copied().filter(|(w, _)| *w > 0.0).collect();
        // Summed in order, as YCSB sums the values it holds.
        let mut sum = 0.0;
        for (w, _) in &kept {
            sum += w;
        }
        if kept.is_empty() || sum <= 0.0 || !sum.is_finite() {
            return Err(GeneratorError::Weights);
        }
        Ok(Discrete {
            choices: kept.into_iter().map(|(w, v)| (w / sum, v)).collect(),
        })
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> T {
        let mut u = unit_f64(rng);
        for &(share, value) in &self.choices {
            if u < share {
                return value;
            }
            u -= share;
        }
        self.choices[self.choices.len() - 1].1
    }
}

/// A length or count generator as YCSB configures field lengths and scan lengths:
/// `ConstantIntegerGenerator`, `UniformLongGenerator` or `ZipfianGenerator` over [min, max].
#[derive(Debug, Clone, PartialEq)]
pub enum LengthGenerator {
    Constant(u64),
    Uniform(Uniform),
    Zipfian(Zipfian),
}

impl LengthGenerator {
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        match self {
            LengthGenerator::Constant(n) => *n,
            LengthGenerator::Uniform(u) => u.next(rng),
            LengthGenerator::Zipfian(z) => z.next(rng),
        }
    }

    /// The largest value of its range. (A zipfian may in principle return one more, as YCSB's
    /// can; see [`Zipfian`].)
    pub fn max(&self) -> u64 {
        match self {
            LengthGenerator::Constant(n) => *n,
            LengthGenerator::Uniform(u) => u.lower + u.span.wrapping_sub(1),
            LengthGenerator::Zipfian(z) => z.base() + z.items() - 1,
        }
    }
}

#[cfg(test)]
pub(crate) mod test_rng {
    use std::convert::Infallible;

    /// SplitMix64: the stream tests/ycsb_exact.rs feeds YCSB's generators (in place of their
    /// `ThreadLocalRandom`), so that expected draws here are the ones YCSB printed.
    pub struct SplitMix64(pub u64);

    impl rand::TryRng for SplitMix64 {
        type Error = Infallible;

        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            self.try_next_u64().map(|x| x as u32)
        }

        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            Ok(z ^ (z >> 31))
        }

        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
            for chunk in dst.chunks_mut(8) {
                let x = self.try_next_u64()?.to_le_bytes();
                chunk.copy_from_slice(&x[..chunk.len()]);
            }
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
