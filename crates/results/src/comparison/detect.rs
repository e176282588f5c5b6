//! How much a study must measure to tell a given change from the noise (`storlab plan
//! --detect 5%`): from the spread its stored runs showed, the repetitions per side that a
//! comparison needs so that a change of that size in ops/s or p99 is flagged at the
//! confidence asked for, with the power asked for (the chance of flagging it when it is
//! there).
//!
//! With two sides of n repetitions each and a run-to-run spread sd (of the figure's
//! logarithm), the ratio's error is sd x sqrt(2/n); a change d = |ln(1 - change)| is flagged
//! with the power asked for when (t_confidence + t_power) x sd x sqrt(2/n) <= d, t with 2n - 2
//! degrees of freedom. A point measured once has only its batches: the spread within one run,
//! which says how long a run must be for that noise alone, not how many runs the noise
//! between runs will need; that is said beside it.

use serde::Serialize;

use super::uncertainty::{Figure, GroupsFrom, t_quantile};
use super::{StepComparison, parameters_text};

/// The most repetitions recommended; a change that needs more is said to need more.
pub const MAX_REPETITIONS: usize = 1000;

/// What detecting the change needs at one point of one target.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Need {
    pub step: String,
    pub point: String,
    pub target: String,
    pub figure: Figure,
    /// What the spread was measured from.
    pub from: GroupsFrom,
    pub groups: usize,
    /// The spread of the figure's logarithm from one run to the next (repetitions), or of
    /// one run's figure (batches).
    pub spread_log: f64,
    /// Repetitions per side (from repetitions); None beyond [`MAX_REPETITIONS`] or from
    /// batches.
    pub repetitions: Option<usize>,
    /// From batches: how many times as long one run must be for its own noise to let the
    /// change be seen (1 or less: long enough already).
    pub run_length_factor: Option<f64>,
}

/// The repetitions per side that detect `change` (0.05: 5%) with a run-to-run spread
/// `spread_log`; None beyond [`MAX_REPETITIONS`].
pub fn repetitions_needed(
    spread_log: f64,
    change: f64,
    confidence: f64,
    power: f64,
) -> Option<usize> {
    let d = (1.0 - change).ln().abs();
    (2..=MAX_REPETITIONS).find(|&n| {
        let df = (2 * n - 2) as f64;
        let (Some(tc), Some(tp)) = (
            t_quantile(confidence, df),
            t_quantile(2.0 * power - 1.0, df),
        ) else {
            return false;
        };
        (tc + tp) * spread_log * (2.0 / n as f64).sqrt() <= d
    })
}

/// How many times as long a run must be for one run per side to detect `change`, from the
/// spread `se_log` of one run's figure over `groups` batches (the error of a figure falls
/// with the square root of the time it is measured over).
pub fn run_length_factor(
    se_log: f64,
    groups: usize,
    change: f64,
    confidence: f64,
    power: f64,
) -> Option<f64> {
    let d = (1.0 - change).ln().abs();
    let df = (2 * groups.saturating_sub(1)) as f64;
    let tc = t_quantile(confidence, df)?;
    let tp = t_quantile(2.0 * power - 1.0, df)?;
    Some(((tc + tp) * se_log * 2f64.sqrt() / d).powi(2))
}

/// What each target at each point of `steps` needs to detect `change` in ops/s and in p99.
pub fn needs(steps: &[StepComparison], change: f64, confidence: f64, power: f64) -> Vec<Need> {
    let mut out = Vec::new();
    for s in steps {
        for p in &s.points {
            for t in &p.targets {
                let Some(u) = &t.uncertainty else { continue };
                for figure in [Figure::RateOps, Figure::P99Latency] {
                    let Some(se) = u.spread(figure) else { continue };
                    let (spread_log, repetitions, run_length_factor) = match u.from {
                        GroupsFrom::Repetitions => {
                            let sd = se * (u.groups as f64).sqrt();
                            (sd, repetitions_needed(sd, change, confidence, power), None)
                        }
                        GroupsFrom::Batches => {
                            let f = run_length_factor(se, u.groups, change, confidence, power);
                            (se, None, f)
                        }
                    };
                    out.push(Need {
                        step: s.step.clone(),
                        point: parameters_text(&p.parameters),
                        target: t.target.clone(),
                        figure,
                        from: u.from,
                        groups: u.groups,
                        spread_log,
                        repetitions,
                        run_length_factor,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_noise_or_a_smaller_change_needs_more_repetitions() {
        // 2% run-to-run noise, 5% change, 95% confidence, 90% power: the textbook answer
        // with normal quantiles is 2 x ((1.96 + 1.28) x 0.02 / 0.0513)^2 = 3.2, t adds a bit.
        let n = repetitions_needed(0.02, 0.05, 0.95, 0.90).unwrap();
        assert_eq!(n, 5);
        assert!(repetitions_needed(0.04, 0.05, 0.95, 0.90).unwrap() > n);
        assert!(repetitions_needed(0.02, 0.02, 0.95, 0.90).unwrap() > n);
        assert_eq!(repetitions_needed(0.0001, 0.05, 0.95, 0.90), Some(2));
        assert_eq!(repetitions_needed(1.0, 0.001, 0.95, 0.90), None);
        // A run whose own noise is a quarter of what the change needs is long enough.
        let f = run_length_factor(0.002, 10, 0.05, 0.95, 0.90).unwrap();
        assert!(f < 0.1, "{f}");
        assert!(run_length_factor(0.05, 10, 0.05, 0.95, 0.90).unwrap() > 1.0);
    }
}
