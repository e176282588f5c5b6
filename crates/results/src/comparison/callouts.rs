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

use crate::comparison::uncertainty::{Figure, GroupsFrom, Sides, Verdict};
use crate::comparison::{Point, SystemPoint, parameters_text};

/// The confidence of a call-out's interval.
pub const CALLOUT_CONFIDENCE: f64 = 0.95;

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
    /// A sentence for reports: `7500: 59% more ops/s than A at threads=64 (95% CI 52-66%)`.
    pub text: String,
    /// How sure `value` is; None when a side has no interval (said in `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<CalloutInterval>,
}

/// A call-out's `value` at [`CALLOUT_CONFIDENCE`]: its low and high ends, whether it is
/// beyond the noise (the ratio's interval excludes 1), and whether a side's interval held the
/// noise within one run only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CalloutInterval {
    pub confidence: f64,
    pub low: f64,
    pub high: f64,
    pub beyond_noise: bool,
    pub within_one_run: bool,
}

impl CalloutInterval {
    /// Of `better` against `worse` for `figure`: ops/s as better/worse, p99 as the
    /// improvement 1 - better/worse.
    fn of(figure: Figure, better: (f64, &SystemPoint), worse: (f64, &SystemPoint)) -> Option<Self> {
        let sides = Sides {
            a_value: worse.0,
            a: worse.1.uncertainty.as_ref()?,
            b_value: better.0,
            b: better.1.uncertainty.as_ref()?,
        };
        let r = sides.ratio(figure, CALLOUT_CONFIDENCE)?;
        let (low, high) = match figure {
            Figure::RateOps => (r.ratio.low, r.ratio.high),
            _ => (1.0 - r.ratio.high, 1.0 - r.ratio.low),
        };
        Some(CalloutInterval {
            confidence: CALLOUT_CONFIDENCE,
            low,
            high,
            beyond_noise: r.verdict != Verdict::NoDifference,
            within_one_run: [sides.a, sides.b]
                .iter()
                .any(|u| u.from == GroupsFrom::Batches),
        })
    }

    /// ` (95% CI 52-66%)`, ` (95% CI 1.8-2.2x)`, or ` (no difference beyond the noise: 95%
    /// CI -3% to +6%)`, with `; within-run noise only` when so. `ratio`: the value is a
    /// ratio (ops/s), else a fraction (the p99 improvement).
    fn text(&self, ratio: bool) -> String {
        let c = format!("{:.0}% CI", self.confidence * 100.0);
        let range = if !self.beyond_noise {
            let signed = |v: f64| format!("{:+.0}%", v * 100.0);
            let shift = if ratio { 1.0 } else { 0.0 };
            format!(
                "no difference beyond the noise: {c} {} to {}",
                signed(self.low - shift),
                signed(self.high - shift)
            )
        } else if ratio && self.low >= 2.0 {
            format!("{c} {:.1}-{:.1}x", self.low, self.high)
        } else if ratio {
            format!("{c} {}-{}", bare(self.low - 1.0), percent(self.high - 1.0))
        } else {
            format!("{c} {}-{}", bare(self.low), percent(self.high))
        };
        let noise = if self.within_one_run {
            "; within-run noise only"
        } else {
            ""
        };
        format!(" ({range}{noise})")
    }
}

/// [`percent`] without its sign.
fn bare(f: f64) -> String {
    percent(f).trim_end_matches('%').to_string()
}

/// What a call-out says when a side has no interval (no histograms stored, or fewer than two
/// groups with operations).
const NO_INTERVAL: &str = " (no interval: too little measured to tell how sure)";

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

/// The largest ops/s ratio and the largest p99 improvement over the points. With a
/// `reference` (the study's `reference-target`), the reference against each other system at
/// each point, as a brief sets its product against each competitor: the largest may then be
/// below 1 (or negative), and is said so. Without one, the best system against the worst.
pub fn of_points(points: &[Point], reference: Option<&str>) -> (Option<Callout>, Option<Callout>) {
    let mut best_ratio: Option<Callout> = None;
    let mut best_p99: Option<Callout> = None;
    for p in points {
        let measured: Vec<&SystemPoint> = p.systems.iter().filter(|t| t.ops > 0).collect();
        if measured.len() < 2 {
            continue;
        }
        let pairs = Pairs::of(&measured, reference);
        // Best against worst: a tie is no call-out. The reference's largest is one whatever
        // its sign.
        let (ratio_above, p99_above) = match pairs.reference {
            true => (f64::NEG_INFINITY, f64::NEG_INFINITY),
            false => (1.0, 0.0),
        };
        let larger = |c: &Callout, above: f64, so_far: &Option<Callout>| {
            c.value > above && so_far.as_ref().is_none_or(|b| c.value > b.value)
        };
        for (ours, theirs) in pairs.throughput {
            if let Some(c) = throughput(ours, theirs, &p.parameters)
                && larger(&c, ratio_above, &best_ratio)
            {
                best_ratio = Some(c);
            }
        }
        for (ours, theirs) in pairs.p99 {
            if let Some(c) = p99(ours, theirs, &p.parameters)
                && larger(&c, p99_above, &best_p99)
            {
                best_p99 = Some(c);
            }
        }
    }
    (best_ratio, best_p99)
}

/// The systems a point sets against each other: (ours, theirs) for ops/s and for p99.
struct Pairs<'a> {
    /// Set against the reference (else the best against the worst).
    reference: bool,
    throughput: Vec<(&'a SystemPoint, &'a SystemPoint)>,
    p99: Vec<(&'a SystemPoint, &'a SystemPoint)>,
}

impl<'a> Pairs<'a> {
    fn of(measured: &[&'a SystemPoint], reference: Option<&str>) -> Pairs<'a> {
        let is_reference = |s: &SystemPoint| {
            reference.is_some_and(|r| s.system == r || s.targets.iter().any(|t| t == r))
        };
        if let Some(ours) = measured.iter().copied().find(|s| is_reference(s)) {
            let others: Vec<_> = measured
                .iter()
                .filter(|s| !is_reference(s))
                .map(|s| (ours, *s))
                .collect();
            return Pairs {
                reference: true,
                throughput: others.clone(),
                p99: others,
            };
        }
        let by_rate = |a: &&&SystemPoint, b: &&&SystemPoint| a.rate_ops.total_cmp(&b.rate_ops);
        let throughput = measured
            .iter()
            .max_by(by_rate)
            .zip(measured.iter().min_by(by_rate))
            .map(|(hi, lo)| (*hi, *lo))
            .into_iter()
            .collect();
        // Systems whose p99 is known (from merged histograms when several targets make one).
        let timed: Vec<(&SystemPoint, u64)> = measured
            .iter()
            .filter_map(|t| t.p99_latency_ns.filter(|p| *p > 0).map(|p| (*t, p)))
            .collect();
        let p99 = timed
            .iter()
            .min_by_key(|t| t.1)
            .zip(timed.iter().max_by_key(|t| t.1))
            .map(|(fast, slow)| (fast.0, slow.0))
            .into_iter()
            .collect();
        Pairs {
            reference: false,
            throughput,
            p99,
        }
    }
}

/// `ours` against `theirs` in ops/s; None when one has none.
fn throughput(
    ours: &SystemPoint,
    theirs: &SystemPoint,
    at_point: &BTreeMap<String, String>,
) -> Option<Callout> {
    if theirs.rate_ops <= 0.0 || ours.rate_ops <= 0.0 || ours.system == theirs.system {
        return None;
    }
    let ratio = ours.rate_ops / theirs.rate_ops;
    let how = if ratio >= 2.0 {
        format!("{ratio:.1}x the ops/s of")
    } else if ratio >= 1.0 {
        format!("{} more ops/s than", percent(ratio - 1.0))
    } else {
        format!("{} fewer ops/s than", percent(1.0 - ratio))
    };
    let interval = CalloutInterval::of(
        Figure::RateOps,
        (ours.rate_ops, ours),
        (theirs.rate_ops, theirs),
    );
    let sure = interval
        .as_ref()
        .map_or_else(|| NO_INTERVAL.to_string(), |i| i.text(true));
    Some(Callout {
        kind: CalloutKind::Throughput,
        parameters: at_point.clone(),
        best: ours.system.clone(),
        worst: theirs.system.clone(),
        value: ratio,
        best_value: ours.rate_ops,
        worst_value: theirs.rate_ops,
        text: format!(
            "{}: {how} {}{}{sure}",
            ours.system,
            theirs.system,
            at(at_point)
        ),
        interval,
    })
}

/// `ours` against `theirs` in p99 latency: 1 - ours/theirs; None without both p99s.
fn p99(
    ours: &SystemPoint,
    theirs: &SystemPoint,
    at_point: &BTreeMap<String, String>,
) -> Option<Callout> {
    let (fast_p99, slow_p99) = (
        ours.p99_latency_ns.filter(|p| *p > 0)?,
        theirs.p99_latency_ns.filter(|p| *p > 0)?,
    );
    if ours.system == theirs.system {
        return None;
    }
    let improvement = 1.0 - fast_p99 as f64 / slow_p99 as f64;
    let interval = CalloutInterval::of(
        Figure::P99Latency,
        (fast_p99 as f64, ours),
        (slow_p99 as f64, theirs),
    );
    let sure = interval
        .as_ref()
        .map_or_else(|| NO_INTERVAL.to_string(), |i| i.text(false));
    let how = if improvement >= 0.0 {
        format!("{} lower", percent(improvement))
    } else {
        format!("{} higher", percent(-improvement))
    };
    Some(Callout {
        kind: CalloutKind::P99,
        parameters: at_point.clone(),
        best: ours.system.clone(),
        worst: theirs.system.clone(),
        value: improvement,
        best_value: fast_p99 as f64,
        worst_value: slow_p99 as f64,
        text: format!(
            "{}: p99 {how} than {}{}{sure}",
            ours.system,
            theirs.system,
            at(at_point)
        ),
        interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(name: &str, rate_ops: f64, p99_ns: u64) -> SystemPoint {
        SystemPoint {
            system: name.into(),
            targets: vec![name.into()],
            clients: Vec::new(),
            file_server: false,
            rate_ops,
            rate_bytes: 0.0,
            ops: 1000,
            bytes: 0,
            errors: 0,
            mean_latency_ns: None,
            p99_latency_ns: Some(p99_ns),
            uncertainty: None,
            first: 0,
        }
    }

    fn point(threads: u32, systems: Vec<SystemPoint>) -> Point {
        Point {
            parameters: [("threads".to_string(), threads.to_string())].into(),
            targets: Vec::new(),
            systems,
        }
    }

    /// The brief's Figure 1 at 64 threads, and a point where a competitor is ahead: the best
    /// against the worst finds the competitor's lead; the reference, its own against each.
    #[test]
    fn a_reference_is_set_against_each_other_target() {
        let points = [
            point(
                8,
                vec![
                    system("a", 100.0, 400),
                    system("b", 300.0, 200),
                    system("c", 90.0, 600),
                ],
            ),
            point(
                64,
                vec![
                    system("a", 616_344.0, 240),
                    system("b", 388_751.0, 520),
                    system("c", 559_924.0, 500),
                ],
            ),
        ];
        let (ratio, p99) = of_points(&points, None);
        let (ratio, p99) = (ratio.unwrap(), p99.unwrap());
        assert_eq!((ratio.best.as_str(), ratio.worst.as_str()), ("b", "c"));
        assert!((ratio.value - 300.0 / 90.0).abs() < 1e-9, "{}", ratio.value);
        assert_eq!((p99.best.as_str(), p99.worst.as_str()), ("b", "c"));

        let (ratio, p99) = of_points(&points, Some("a"));
        let (ratio, p99) = (ratio.unwrap(), p99.unwrap());
        assert_eq!((ratio.best.as_str(), ratio.worst.as_str()), ("a", "b"));
        assert!((ratio.value - 616_344.0 / 388_751.0).abs() < 1e-9);
        assert!(
            ratio
                .text
                .starts_with("a: 59% more ops/s than b at threads=64"),
            "{}",
            ratio.text
        );
        assert!((p99.value - (1.0 - 240.0 / 520.0)).abs() < 1e-9);
        assert!(
            p99.text
                .starts_with("a: p99 54% lower than b at threads=64"),
            "{}",
            p99.text
        );

        // A reference behind everywhere: its largest is still its call-out, said as it is.
        let behind = [point(
            8,
            vec![system("a", 80.0, 500), system("b", 100.0, 400)],
        )];
        let (ratio, p99) = of_points(&behind, Some("a"));
        let (ratio, p99) = (ratio.unwrap(), p99.unwrap());
        assert!(
            ratio.text.starts_with("a: 20% fewer ops/s than b"),
            "{}",
            ratio.text
        );
        assert!(
            p99.text.starts_with("a: p99 25% higher than b"),
            "{}",
            p99.text
        );
        // A reference not measured at a point leaves that point out.
        assert_eq!(of_points(&behind, Some("z")).0.unwrap().best, "b");
    }

    #[test]
    fn percents_never_read_100_for_less() {
        assert_eq!(
            (percent(0.9998), percent(0.994), percent(1.0)),
            ("99.9%".into(), "99%".into(), "100%".into())
        );
    }

    #[test]
    fn a_callouts_interval_reads_as_the_brief_writes_it() {
        let i = |low, high, beyond_noise, within_one_run| CalloutInterval {
            confidence: 0.95,
            low,
            high,
            beyond_noise,
            within_one_run,
        };
        assert_eq!(i(1.52, 1.66, true, false).text(true), " (95% CI 52-66%)");
        assert_eq!(i(1.8, 2.25, true, false).text(true), " (95% CI 80-125%)");
        assert_eq!(
            i(2.1, 2.3, true, true).text(true),
            " (95% CI 2.1-2.3x; within-run noise only)"
        );
        assert_eq!(
            i(0.97, 1.06, false, false).text(true),
            " (no difference beyond the noise: 95% CI -3% to +6%)"
        );
        // A p99 improvement is a fraction: 48% to 59% lower.
        assert_eq!(i(0.48, 0.59, true, false).text(false), " (95% CI 48-59%)");
        assert_eq!(
            i(-0.02, 0.05, false, false).text(false),
            " (no difference beyond the noise: 95% CI -2% to +5%)"
        );
    }
}
