//! The zipfian draw's `floor(n * x^alpha)` without libm's `pow` when the answer is provably
//! the same. YCSB's zipfian raises x to alpha = 1 / (1 - theta) on every draw; for the
//! thetas people use (0.99: alpha = 100 less 9e-14) alpha is an integer k plus a tiny d, and
//! x^alpha = x^k * x^d, with x^k by repeated squaring and x^d = 1 + d ln x (ln x roughly
//! suffices: d is below 1e-12). That approximation A is within a relative bound E of the
//! exact power; if `n * A * (1 - E)` and `n * A * (1 + E)` truncate to the same integer, so
//! does `n * pow(x, alpha)` (multiplication and truncation are monotonic), and that integer
//! is returned. Otherwise (a scaled value within E of an integer, rarely) the caller takes
//! the exact `pow`: every draw is YCSB's, bit for bit.

/// `floor(n * x^alpha)` by an integer power, for an alpha within 1e-12 of an integer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FastPow {
    k: i32,
    /// alpha - k.
    d: f64,
    /// The relative error bound of the approximation, rounding of its use included.
    bound: f64,
}

/// The largest absolute error of [`ln_rough`] that the bound allows for (it is below 0.01:
/// see the test).
const LN_ROUGH_ERROR: f64 = 0.05;

/// Below this, x^alpha times any item count storlab draws over (below 1e250) truncates to 0.
const TINY: f64 = 1e-280;

/// ln x from its exponent and a quadratic in its mantissa: within 0.01 for normal x > 0.
#[inline]
fn ln_rough(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52)) - 1.0;
    // log2(1 + m) for m in [0, 1): exact at both ends.
    let log2 = exponent as f64 + m * (1.3466 - 0.3466 * m);
    log2 * std::f64::consts::LN_2
}

impl FastPow {
    /// For `alpha` within 1e-12 of an integer from 1 to 1024; None otherwise.
    pub fn for_alpha(alpha: f64) -> Option<FastPow> {
        let k = alpha.round();
        let d = alpha - k;
        if !(1.0..=1024.0).contains(&k) || d.abs() > 1e-12 {
            return None;
        }
        // Repeated squaring: each rounding's error grows with the power it is raised to,
        // at most 2k roundings' worth in all; then d times ln's error, the second-order
        // term of x^d (|d ln x| < 1e-9 above TINY), the exact pow's own rounding and the
        // few roundings of the products here.
        let eps = f64::EPSILON;
        let bound = 2.0 * k * eps + d.abs() * LN_ROUGH_ERROR + 1e-18 + 8.0 * eps;
        Some(FastPow {
            k: k as i32,
            d,
            bound: 2.0 * bound,
        })
    }

    /// `floor(n * x^alpha)` if it is certain without `pow` (x in (0, 1], n below 1e250);
    /// None when the exact `pow` must decide.
    #[inline]
    pub fn floor_scaled(&self, x: f64, n: f64) -> Option<u64> {
        if !(x > 0.0 && x <= 1.0 && n < 1e250) {
            return None;
        }
        let a = x.powi(self.k) * (1.0 + self.d * ln_rough(x));
        if a < TINY {
            return Some(0);
        }
        let low = (n * (a * (1.0 - self.bound))) as u64;
        let high = (n * (a * (1.0 + self.bound))) as u64;
        (low == high).then_some(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_rough_is_within_its_stated_error() {
        let mut worst = 0.0f64;
        let mut x = 1e-300;
        while x < 1.0 {
            worst = worst.max((ln_rough(x) - x.ln()).abs());
            x *= 1.0009;
        }
        assert!(worst < 0.01, "{worst}");
        assert!(worst * 5.0 <= LN_ROUGH_ERROR);
    }

    #[test]
    fn only_alphas_near_an_integer_take_the_fast_path() {
        assert!(FastPow::for_alpha(1.0 / (1.0 - 0.99)).is_some());
        assert!(FastPow::for_alpha(2.0).is_some());
        assert!(FastPow::for_alpha(1.0 / (1.0 - 0.7)).is_none());
        assert!(FastPow::for_alpha(f64::NAN).is_none());
        assert!(FastPow::for_alpha(5000.0).is_none());
    }

    /// Every draw the fast path answers equals the exact `pow`'s, over 200,000 points per
    /// alpha and item count, and the exact path is rarely needed.
    #[test]
    fn the_fast_path_answers_exactly_what_pow_answers() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut unit = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for theta in [0.99, 0.5, 0.8, 0.9, 0.95, 0.999] {
            let alpha = 1.0 / (1.0 - theta);
            let f = FastPow::for_alpha(alpha).expect("near an integer");
            for n in [1000.0, 1e6, 1e10 + 1.0, 3e11] {
                let (mut fast, mut exact) = (0u64, 0u64);
                for i in 0..200_000u32 {
                    // Points spread over (0, 1], and some near 1 where the draws are large.
                    let u = unit();
                    let x = if i % 2 == 0 { u } else { 1.0 - u * 1e-3 };
                    let want = (n * x.powf(alpha)) as u64;
                    match f.floor_scaled(x, n) {
                        Some(v) => {
                            assert_eq!(v, want, "theta {theta}, n {n}, x {x:e}");
                            fast += 1;
                        }
                        None => exact += 1,
                    }
                }
                // Half the points sit near 1 (draws near n): there a scaled value is within
                // the bound of an integer about n * bound of the time (YCSB's largest n is
                // the scrambled zipfian's 1e10 + 1; beyond, only exactness is checked).
                assert!(
                    n > 1e11 || exact * 10 < fast,
                    "theta {theta}, n {n}: {exact} exact of {}",
                    fast + exact
                );
            }
        }
    }
}
