//! The call-outs of a step: the largest ops/s ratio between two targets at one sweep point,
//! and the largest p99 improvement, with where they occur.
//!
//! Definitions, as in the RocksDB brief (Micron 7500 technical brief, notes 8 and 9): the ops/s
//! ratio at a point is the best target's ops/s over the worst's; the p99 improvement at a point
//! is (worst p99 - best p99) / worst p99, where best is the lowest. The call-outs are the
//! largest of these over a step's points; ties keep the first point (the study's order). Only
//! targets at the same sweep point are set against each other, from the points' combined
//! figures (repetitions merged, never averaged). What is set against each other is a point's
//! systems ([`super::systems`]): the shares of one file server are replicas of one system,
//! added up into it and never compared with each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::comparison::{Point, SystemPoint, parameters_text};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CalloutKind {
    /// The largest ops/s ratio between two targets at the same point.
    Throughput,
    /// The largest p99 latency reduction between two targets at the same point.
    P99,
}

/// A finding computed from the data, with where it occurs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Callout {
    pub kind: CalloutKind,
    /// Where it occurs.
    pub parameters: BTreeMap<String, String>,
    /// The better target.
    pub best: String,
    /// The target it is compared with.
    pub worst: String,
    /// ops/s call-out: best/worst ops/s (1.59 = 59% more). p99 call-out: 1 - best/worst p99
    /// (0.54 = 54% lower).
    pub value: f64,
    /// ops/s, or p99 in ns.
    pub best_value: f64,
    pub worst_value: f64,
    /// A sentence for reports: `7500: 59% more ops/s than A at threads=64`.
    pub text: String,
}

/// Percent as the reference brief rounds it: `59%`; with a decimal near 100% (`99.9%`), so
/// that a large improvement never reads as "100% lower".
pub fn percent(f: f64) -> String {
    let p = f * 100.0;
    if (99.5..100.0).contains(&p) {
        format!("{:.1}%", p.min(99.9))
    } else {
        format!("{p:.0}%")
    }
}

fn at(p: &BTreeMap<String, String>) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(" at {}", parameters_text(p))
    }
}

/// The largest ops/s ratio and the largest p99 improvement over the points, between systems.
pub fn of_points(points: &[Point]) -> (Option<Callout>, Option<Callout>) {
    let mut best_ratio: Option<Callout> = None;
    let mut best_p99: Option<Callout> = None;
    for p in points {
        let measured: Vec<&SystemPoint> = p.systems.iter().filter(|t| t.ops > 0).collect();
        if measured.len() < 2 {
            continue;
        }
        let by_rate = |a: &&&SystemPoint, b: &&&SystemPoint| a.rate_ops.total_cmp(&b.rate_ops);
        if let (Some(hi), Some(lo)) = (
            measured.iter().max_by(by_rate),
            measured.iter().min_by(by_rate),
        ) {
            let ratio = hi.rate_ops / lo.rate_ops;
            if lo.rate_ops > 0.0
                && ratio > 1.0
                && best_ratio.as_ref().is_none_or(|c| ratio > c.value)
            {
                let how = if ratio >= 2.0 {
                    format!("{ratio:.1}x the ops/s of")
                } else {
                    format!("{} more ops/s than", percent(ratio - 1.0))
                };
                best_ratio = Some(Callout {
                    kind: CalloutKind::Throughput,
                    parameters: p.parameters.clone(),
                    best: hi.system.clone(),
                    worst: lo.system.clone(),
                    value: ratio,
                    best_value: hi.rate_ops,
                    worst_value: lo.rate_ops,
                    text: format!("{}: {how} {}{}", hi.system, lo.system, at(&p.parameters)),
                });
            }
        }
        // Systems whose p99 is known (from merged histograms when several targets make one).
        let timed: Vec<(&SystemPoint, u64)> = measured
            .iter()
            .filter_map(|t| t.p99_latency_ns.filter(|p| *p > 0).map(|p| (*t, p)))
            .collect();
        if let (Some((fast, fast_p99)), Some((slow, slow_p99))) = (
            timed.iter().min_by_key(|t| t.1),
            timed.iter().max_by_key(|t| t.1),
        ) {
            let improvement = 1.0 - *fast_p99 as f64 / *slow_p99 as f64;
            if improvement > 0.0 && best_p99.as_ref().is_none_or(|c| improvement > c.value) {
                best_p99 = Some(Callout {
                    kind: CalloutKind::P99,
                    parameters: p.parameters.clone(),
                    best: fast.system.clone(),
                    worst: slow.system.clone(),
                    value: improvement,
                    best_value: *fast_p99 as f64,
                    worst_value: *slow_p99 as f64,
                    text: format!(
                        "{}: p99 {} lower than {}{}",
                        fast.system,
                        percent(improvement),
                        slow.system,
                        at(&p.parameters)
                    ),
                });
            }
        }
    }
    (best_ratio, best_p99)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents_never_read_100_for_less() {
        assert_eq!(
            (percent(0.9998), percent(0.994), percent(1.0)),
            ("99.9%".into(), "99%".into(), "100%".into())
        );
    }
}
