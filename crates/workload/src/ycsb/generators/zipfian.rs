//! YCSB's zipfian family, draw for draw as YCSB 0.17.0 computes it: the zipfian of Gray et al.
//! ([`Zipfian`], YCSB's `ZipfianGenerator`), the scrambled zipfian that YCSB workloads mean by
//! "zipfian" ([`ScrambledZipfian`]) and the skewed latest of workload D ([`SkewedLatest`]),
//! with zeta summed term by term in YCSB's order ([`zeta`], [`zeta_range`]).
//!
//! YCSB 0.17.0 has two quirks that storlab keeps by default, so that results compare with
//! published YCSB results:
//! - when the item count grows (workload D's latest, as inserts are acknowledged), YCSB adds
//!   the new terms to zeta but computes eta with the item count the generator was built with;
//!   [`ZipfianEta::CurrentCount`] (`zipfianeta=current-count`) recomputes eta for the current
//!   count as the formula says;
//! - the scrambled zipfian's inner generator is `ZipfianGenerator(0, 10^10)`: 10^10 + 1 items,
//!   with zeta(10^10) as YCSB's precomputed constant.

use rand::Rng;

use super::{GeneratorError, fnvhash64, unit_f64};

/// YCSB's default zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// `ScrambledZipfianGenerator.ITEM_COUNT`; its inner generator spans [0, ITEM_COUNT], i.e.
/// ITEM_COUNT + 1 ranks.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// YCSB's precomputed zeta(10^10, 0.99) (`ScrambledZipfianGenerator.ZETAN`), used as is.
pub const SCRAMBLED_ZETA_099: f64 = 26.469_028_201_783_02;

/// How a zipfian's eta follows a grown item count: the `zipfianeta` property
/// (`zipfian-eta` in studies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZipfianEta {
    /// YCSB 0.17.0 (the default): eta keeps the item count the generator was built with, while
    /// zeta grows with the count.
    #[default]
    InitialCount,
    /// Corrected: eta recomputed for the current item count, as Gray et al.'s formula says.
    CurrentCount,
}

impl ZipfianEta {
    /// The property's values, as written.
    pub const NAMES: [(&'static str, ZipfianEta); 2] = [
        ("initial-count", ZipfianEta::InitialCount),
        ("current-count", ZipfianEta::CurrentCount),
    ];

    pub fn name(self) -> &'static str {
        match self {
            ZipfianEta::InitialCount => "initial-count",
            ZipfianEta::CurrentCount => "current-count",
        }
    }
}

/// The most terms [`zeta`] sums one by one, as YCSB does: about 2.6 s at 26 ns a term on a
/// 2-core test machine. Past it zeta is [`zeta_approx`]'s, in microseconds and within 1e-12 of
/// the direct sum, where YCSB would sum every term (4.4e15 records under workload D's
/// `latest`: years).
pub const ZETA_EXACT_TERMS: u64 = 100_000_000;

/// zeta(n, theta) = sum over i = 1..=n of 1 / i^theta, summed as YCSB's `zetastatic` does
/// (from i = 1 up, each term as `1 / Math.pow(i, theta)`), so that it is bit for bit YCSB's,
/// up to [`ZETA_EXACT_TERMS`] terms; past it, [`zeta_approx`].
pub fn zeta(n: u64, theta: f64) -> f64 {
    if n > ZETA_EXACT_TERMS {
        return zeta_approx(n, theta);
    }
    zeta_range(0, n, theta, 0.0)
}

/// `initial` plus the terms 1 / i^theta for i = from+1 ..= to, added in increasing i one by one
/// (YCSB's `zetastatic(st, n, theta, initialsum)`). Growing zeta in steps therefore gives the
/// same bits as summing it at once.
pub fn zeta_range(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// Terms summed one by one before [`zeta_approx`] switches to Euler-Maclaurin.
const ZETA_DIRECT_TERMS: u64 = 1 << 16;

/// zeta(n, theta) in microseconds for counts YCSB would take minutes over: the first 2^16
/// terms summed directly (smallest first), the rest by the Euler-Maclaurin formula, whose error
/// at 2^16 is far below f64 rounding. Only the scrambled zipfian with a constant other than
/// 0.99 (a storlab extension; YCSB would sum 10^10 + 1 terms) uses it.
pub fn zeta_approx(n: u64, theta: f64) -> f64 {
    let direct_end = n.min(ZETA_DIRECT_TERMS);
    let mut sum = 0.0;
    let mut i = direct_end;
    while i > 0 {
        sum += (i as f64).powf(-theta);
        i -= 1;
    }
    if direct_end < n {
        sum += euler_maclaurin_tail(direct_end, n, theta);
    }
    sum
}

/// Sum of i^-s for i = a+1 ..= b by Euler-Maclaurin around the interval [a, b].
fn euler_maclaurin_tail(a: u64, b: u64, s: f64) -> f64 {
    let (af, bf) = (a as f64, b as f64);
    let f = |x: f64| x.powf(-s);
    // Derivatives of x^-s: f' = -s x^(-s-1), f''' = -s(s+1)(s+2) x^(-s-3),
    // f^(5) = -s(s+1)(s+2)(s+3)(s+4) x^(-s-5).
    let d1 = |x: f64| -s * x.powf(-s - 1.0);
    let c3 = s * (s + 1.0) * (s + 2.0);
    let d3 = |x: f64| -c3 * x.powf(-s - 3.0);
    let c5 = c3 * (s + 3.0) * (s + 4.0);
    let d5 = |x: f64| -c5 * x.powf(-s - 5.0);
    let one_minus_s = 1.0 - s;
    let log_ratio = (bf / af).ln();
    let integral = if one_minus_s.abs() < 1e-12 {
        log_ratio
    } else {
        af.powf(one_minus_s) * (one_minus_s * log_ratio).exp_m1() / one_minus_s
    };
    // Sum over a..=b, minus f(a) because a itself is excluded.
    integral + (f(bf) - f(af)) / 2.0 + (d1(bf) - d1(af)) / 12.0 - (d3(bf) - d3(af)) / 720.0
        + (d5(bf) - d5(af)) / 30240.0
}

fn check_theta(theta: f64) -> Result<(), GeneratorError> {
    if theta > 0.0 && theta < 1.0 {
        Ok(())
    } else {
        Err(GeneratorError::Theta { theta })
    }
}

/// Zipfian over [base, base + items), the most popular item being `base`, by the rejection-free
/// method of Gray et al. (SIGMOD 1994), exactly as YCSB's `ZipfianGenerator` computes it: one
/// uniform double u per draw; `base` when u * zeta(n) < 1, `base + 1` when it is below
/// 1 + 0.5^theta, else `base + (long) (n * (eta * u - eta + 1)^alpha)`.
///
/// Asked for more items than its zeta covers ([`Zipfian::next_for_count`]), it adds the new
/// terms to zeta, as YCSB does; eta then follows [`ZipfianEta`]. A shrinking count keeps the
/// larger zeta, as YCSB does by default. As in YCSB, rounding may in principle return
/// `base + item_count` (one past the range) when the power rounds to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Zipfian {
    base: u64,
    /// The item count the generator was built with (YCSB's `items`).
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
    /// 1 + 0.5^theta (YCSB computes it on every call).
    second_bound: f64,
    /// The item count `zetan` was computed for (YCSB's `countforzeta`).
    count_for_zeta: u64,
    eta_count: ZipfianEta,
    /// The draw's power without `pow` where provably the same (alpha near an integer).
    fast_pow: Option<super::fast_pow::FastPow>,
}

impl Zipfian {
    /// Zipfian over [min, max] (inclusive) with constant `theta` in (0, 1), YCSB's
    /// `ZipfianGenerator(min, max, theta)`.
    pub fn new(min: u64, max: u64, theta: f64) -> Result<Self, GeneratorError> {
        if min > max {
            return Err(GeneratorError::EmptyRange {
                lower: min,
                upper: max,
            });
        }
        check_theta(theta)?;
        let items = item_count(min, max)?;
        Self::with_zeta(min, items, theta, zeta(items, theta))
    }

    /// Zipfian over `items` items from `base` with a precomputed zeta(items, theta), YCSB's
    /// `ZipfianGenerator(base, base + items - 1, theta, zetan)`.
    pub fn with_zeta(
        base: u64,
        items: u64,
        theta: f64,
        zetan: f64,
    ) -> Result<Self, GeneratorError> {
        check_theta(theta)?;
        let zeta2 = zeta(2, theta);
        let mut z = Zipfian {
            base,
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2,
            zetan,
            eta: 0.0,
            second_bound: 1.0 + 0.5f64.powf(theta),
            count_for_zeta: items,
            eta_count: ZipfianEta::InitialCount,
            fast_pow: super::fast_pow::FastPow::for_alpha(1.0 / (1.0 - theta)),
        };
        z.eta = z.eta_for(items);
        Ok(z)
    }

    /// The same generator with eta following `eta_count` once the item count grows.
    pub fn with_eta(mut self, eta_count: ZipfianEta) -> Self {
        self.eta_count = eta_count;
        self
    }

    /// YCSB: (1 - (2 / items)^(1 - theta)) / (1 - zeta(2) / zeta(n)).
    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// The item count the generator was built with.
    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// zeta over the largest item count seen.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// How eta follows a grown item count.
    pub fn eta_count(&self) -> ZipfianEta {
        self.eta_count
    }

    /// The smallest value drawn.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// A draw over the item count the generator was built with (YCSB's `nextValue`).
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_for_count(rng, self.items)
    }

    /// A draw over [base, base + item_count), growing zeta first if `item_count` is larger than
    /// any count seen before (YCSB's `nextLong(itemcount)`).
    #[inline]
    pub fn next_for_count<R: Rng + ?Sized>(&mut self, rng: &mut R, item_count: u64) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta_range(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = match self.eta_count {
                ZipfianEta::InitialCount => self.eta_for(self.items),
                ZipfianEta::CurrentCount => self.eta_for(item_count),
            };
        }
        let u = unit_f64(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < self.second_bound {
            return self.base + 1;
        }
        let x = self.eta * u - self.eta + 1.0;
        let n = item_count as f64;
        if let Some(v) = self.fast_pow.and_then(|f| f.floor_scaled(x, n)) {
            return self.base + v;
        }
        // Java's (long) cast of a double, as `as u64` here: truncation, saturating, NaN to 0.
        self.base + (n * x.powf(self.alpha)) as u64
    }
}

/// Scrambled zipfian over [min, max], YCSB's `ScrambledZipfianGenerator` (what YCSB workloads
/// mean by "zipfian"): a zipfian rank from YCSB's inner `ZipfianGenerator(0, 10^10)` (10^10 + 1
/// ranks), hashed with [`fnvhash64`] and reduced modulo the item count, so popular keys are
/// scattered over the key space.
///
/// For theta 0.99 zeta is YCSB's constant [`SCRAMBLED_ZETA_099`]; for any other theta (a
/// storlab extension: YCSB's core workload fixes 0.99) it is [`zeta_approx`] of 10^10 + 1.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrambledZipfian {
    min: u64,
    item_count: u64,
    zipf: Zipfian,
}

/// The items in [min, max]: an error where that is 2^64 (0 to u64::MAX).
fn item_count(min: u64, max: u64) -> Result<u64, GeneratorError> {
    (max - min)
        .checked_add(1)
        .ok_or(GeneratorError::TooManyItems {
            lower: min,
            upper: max,
        })
}

impl ScrambledZipfian {
    pub fn new(min: u64, max: u64, theta: f64) -> Result<Self, GeneratorError> {
        if min > max {
            return Err(GeneratorError::EmptyRange {
                lower: min,
                upper: max,
            });
        }
        check_theta(theta)?;
        let zetan = if theta == ZIPFIAN_CONSTANT {
            SCRAMBLED_ZETA_099
        } else {
            zeta_approx(SCRAMBLED_ITEM_COUNT + 1, theta)
        };
        Ok(ScrambledZipfian {
            min,
            item_count: item_count(min, max)?,
            zipf: Zipfian::with_zeta(0, SCRAMBLED_ITEM_COUNT + 1, theta, zetan)?,
        })
    }

    /// The number of keys drawn over.
    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// The inner zipfian over ranks.
    pub fn ranks(&self) -> &Zipfian {
        &self.zipf
    }

    /// The key that zipfian rank `rank` (0 = hottest) lands on.
    #[inline]
    pub fn key_of_rank(&self, rank: u64) -> u64 {
        self.min + fnvhash64(rank) % self.item_count
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let rank = self.zipf.next(rng);
        self.key_of_rank(rank)
    }
}

/// YCSB's `SkewedLatestGenerator`: `max - zipfian.nextLong(max)` where `max` is the latest
/// acknowledged insert, so the most recent records are the most popular. The zipfian is built
/// over the latest key when the run starts (YCSB's `ZipfianGenerator(lastValue)`) and grows its
/// zeta as `max` grows. The result lies in [1, max] (key 0 is never drawn; with max 0 the
/// answer is 0), except where rounding makes the zipfian return `max` itself: then 0, as YCSB.
#[derive(Debug, Clone, PartialEq)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// `initial_max`: the latest acknowledged key when the run starts (recordcount - 1).
    pub fn new(
        initial_max: u64,
        theta: f64,
        eta_count: ZipfianEta,
    ) -> Result<Self, GeneratorError> {
        let items = initial_max.max(1);
        Ok(SkewedLatest {
            zipf: Zipfian::with_zeta(0, items, theta, zeta(items, theta))?.with_eta(eta_count),
        })
    }

    /// The inner zipfian.
    pub fn zipfian(&self) -> &Zipfian {
        &self.zipf
    }

    /// A draw relative to `max`, the latest acknowledged key.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        // The zipfian returns at most `max` (its power is at most 1).
        max.saturating_sub(self.zipf.next_for_count(rng, max))
    }
}

#[cfg(test)]
#[path = "zipfian_tests.rs"]
mod tests;
