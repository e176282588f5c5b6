//! Targets side by side: a study's runs grouped by step and sweep point, with each target's
//! ops/s, average and p99 latency, and the call-outs a brief makes from them ("B: 59% more
//! ops/s than A at 64 threads", "p99 54% lower"). Computed from stored run summaries only and
//! written as `comparison.json` in the study folder.
//!
//! Definitions, as in the RocksDB brief (Micron 7500 technical brief, notes 8 and 9): the ops/s
//! ratio at a point is the best target's ops/s over the worst's; the p99 improvement at a point
//! is (worst p99 - best p99) / worst p99, where best is the lowest. The call-outs are the
//! largest of these over a step's points. Repetitions of a point are summed (operations over
//! total measured time), never averaged as percentiles: a point's p99 is the worst repetition's
//! p99 when there are several, and is marked so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::summary::{RunStatus, RunSummary};

/// One target at one sweep point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TargetPoint {
    pub target: String,
    pub rate_ops: f64,
    pub mean_latency_ns: f64,
    pub p99_latency_ns: u64,
    pub ops: u64,
    pub runs: usize,
    /// Some run of this point was partial or failed.
    pub incomplete: bool,
}

/// One sweep point of a step, every target measured at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Point {
    /// The sweep values (e.g. threads = 64), as in the study.
    pub parameters: BTreeMap<String, String>,
    pub targets: Vec<TargetPoint>,
}

/// A call-out: the largest difference between targets over a step's points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Callout {
    /// Where it occurs.
    pub parameters: BTreeMap<String, String>,
    /// The better target.
    pub best: String,
    /// The target it is compared with.
    pub worst: String,
    /// ops/s call-out: best/worst ops/s (1.59 = 59% more). p99 call-out: 1 - best/worst p99
    /// (0.54 = 54% lower).
    pub value: f64,
    pub best_value: f64,
    pub worst_value: f64,
    /// A sentence for reports.
    pub text: String,
}

/// One step compared across its targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepComparison {
    pub step: String,
    pub points: Vec<Point>,
    pub largest_ops_ratio: Option<Callout>,
    pub largest_p99_improvement: Option<Callout>,
}

/// Every step of a study that ran on two or more targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Comparison {
    pub study: String,
    pub steps: Vec<StepComparison>,
}

fn where_text(p: &BTreeMap<String, String>) -> String {
    if p.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = p.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!(" at {}", parts.join(", "))
}

/// Builds the comparison from a study's stored summaries (in run order).
pub fn compare(study: &str, summaries: &[RunSummary]) -> Comparison {
    // step -> parameters -> target -> (ops, secs, mean*ops, worst p99, runs, incomplete)
    type Acc = (u64, f64, f64, u64, usize, bool);
    let mut steps: Vec<(
        String,
        Vec<(BTreeMap<String, String>, BTreeMap<String, Acc>)>,
    )> = Vec::new();
    for s in summaries {
        let si = match steps.iter().position(|(n, _)| *n == s.step) {
            Some(i) => i,
            None => {
                steps.push((s.step.clone(), Vec::new()));
                steps.len() - 1
            }
        };
        let points = &mut steps[si].1;
        let pi = match points.iter().position(|(p, _)| *p == s.parameters) {
            Some(i) => i,
            None => {
                points.push((s.parameters.clone(), BTreeMap::new()));
                points.len() - 1
            }
        };
        for t in &s.targets {
            let a = points[pi]
                .1
                .entry(t.name.clone())
                .or_insert((0, 0.0, 0.0, 0, 0, false));
            a.0 += t.ops;
            a.1 += s.measured_seconds;
            a.2 += t.service_latency.mean_ns * t.ops as f64;
            a.3 = a.3.max(t.service_latency.p99_ns);
            a.4 += 1;
            a.5 |= s.status != RunStatus::Complete;
        }
    }
    let mut out = Vec::new();
    for (step, points) in steps {
        let points: Vec<Point> = points
            .into_iter()
            .map(|(parameters, targets)| Point {
                parameters,
                targets: targets
                    .into_iter()
                    .map(
                        |(target, (ops, secs, mean_sum, p99, runs, incomplete))| TargetPoint {
                            target,
                            rate_ops: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
                            mean_latency_ns: if ops > 0 { mean_sum / ops as f64 } else { 0.0 },
                            p99_latency_ns: p99,
                            ops,
                            runs,
                            incomplete,
                        },
                    )
                    .collect(),
            })
            .collect();
        if !points.iter().any(|p| p.targets.len() >= 2) {
            continue;
        }
        let mut best_ratio: Option<Callout> = None;
        let mut best_p99: Option<Callout> = None;
        for p in &points {
            let measured: Vec<&TargetPoint> = p.targets.iter().filter(|t| t.ops > 0).collect();
            let by_rate = |a: &&&TargetPoint, b: &&&TargetPoint| a.rate_ops.total_cmp(&b.rate_ops);
            let (Some(hi), Some(lo), Some(fast), Some(slow)) = (
                measured.iter().max_by(by_rate),
                measured.iter().min_by(by_rate),
                measured.iter().min_by_key(|t| t.p99_latency_ns),
                measured.iter().max_by_key(|t| t.p99_latency_ns),
            ) else {
                continue;
            };
            if measured.len() < 2 {
                continue;
            }
            if lo.rate_ops > 0.0 {
                let ratio = hi.rate_ops / lo.rate_ops;
                if best_ratio.as_ref().is_none_or(|c| ratio > c.value) {
                    best_ratio = Some(Callout {
                        parameters: p.parameters.clone(),
                        best: hi.target.clone(),
                        worst: lo.target.clone(),
                        value: ratio,
                        best_value: hi.rate_ops,
                        worst_value: lo.rate_ops,
                        text: format!(
                            "{step}: {} has {:.0}% more ops/s than {}{} ({:.0} vs {:.0} ops/s)",
                            hi.target,
                            (ratio - 1.0) * 100.0,
                            lo.target,
                            where_text(&p.parameters),
                            hi.rate_ops,
                            lo.rate_ops
                        ),
                    });
                }
            }
            if slow.p99_latency_ns > 0 {
                let improvement = 1.0 - fast.p99_latency_ns as f64 / slow.p99_latency_ns as f64;
                if best_p99.as_ref().is_none_or(|c| improvement > c.value) {
                    best_p99 = Some(Callout {
                        parameters: p.parameters.clone(),
                        best: fast.target.clone(),
                        worst: slow.target.clone(),
                        value: improvement,
                        best_value: fast.p99_latency_ns as f64,
                        worst_value: slow.p99_latency_ns as f64,
                        text: format!(
                            "{step}: {} has a {:.0}% lower p99 latency than {}{} ({} vs {})",
                            fast.target,
                            improvement * 100.0,
                            slow.target,
                            where_text(&p.parameters),
                            crate::units::format_ns(fast.p99_latency_ns as f64),
                            crate::units::format_ns(slow.p99_latency_ns as f64)
                        ),
                    });
                }
            }
        }
        out.push(StepComparison {
            step,
            points,
            largest_ops_ratio: best_ratio,
            largest_p99_improvement: best_p99,
        });
    }
    Comparison {
        study: study.to_string(),
        steps: out,
    }
}

impl Comparison {
    /// Terminal text: per step, a table of targets by point, then the call-outs.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            let mut names: Vec<&str> = Vec::new();
            for p in &s.points {
                for t in &p.targets {
                    if !names.contains(&t.target.as_str()) {
                        names.push(&t.target);
                    }
                }
            }
            let mut header = vec!["point".to_string()];
            for n in &names {
                header.push(format!("{n} ops/s"));
                header.push(format!("{n} mean"));
                header.push(format!("{n} p99"));
            }
            let rows: Vec<Vec<String>> = s
                .points
                .iter()
                .map(|p| {
                    let label: Vec<String> = p
                        .parameters
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    let mut row = vec![if label.is_empty() {
                        "-".into()
                    } else {
                        label.join(" ")
                    }];
                    for n in &names {
                        match p.targets.iter().find(|t| t.target == *n) {
                            Some(t) => {
                                row.push(format!("{:.0}", t.rate_ops));
                                row.push(crate::units::format_ns(t.mean_latency_ns));
                                row.push(crate::units::format_ns(t.p99_latency_ns as f64));
                            }
                            None => row.extend(["-".into(), "-".into(), "-".into()]),
                        }
                    }
                    row
                })
                .collect();
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            out.push_str(&format!("step {}\n", s.step));
            out.push_str(&crate::report::table::render(&header_refs, &rows));
            for c in [&s.largest_ops_ratio, &s.largest_p99_improvement]
                .into_iter()
                .flatten()
            {
                out.push_str(&format!("  call-out: {}\n", c.text));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::summary::TargetResult;
    use crate::run::worker::EndReason;

    fn run(step: &str, threads: u32, target: &str, rate: f64, p99_ns: u64) -> RunSummary {
        let mut t = TargetResult {
            name: target.into(),
            ops: (rate * 10.0) as u64,
            rate_ops: rate,
            ..Default::default()
        };
        t.service_latency.p99_ns = p99_ns;
        t.service_latency.mean_ns = p99_ns as f64 / 2.0;
        RunSummary {
            run_id: String::new(),
            study: "s".into(),
            step: step.into(),
            run_index: 1,
            run_count: 1,
            repetition: 1,
            parameters: [("threads".to_string(), threads.to_string())].into(),
            status: RunStatus::Complete,
            end_reason: EndReason::Duration,
            started_at: String::new(),
            ended_at: String::new(),
            warmup_seconds: 0.0,
            measured_seconds: 10.0,
            targets: vec![t],
            total: TargetResult::default(),
            background: Vec::new(),
            software: BTreeMap::new(),
            client: Default::default(),
            warnings: Vec::new(),
            events: Vec::new(),
            error_samples: Vec::new(),
        }
    }

    /// The brief's own figures: readrandom at 64 threads, 616,344 vs 388,751 ops/s (59%), and
    /// p99 0.24 ms vs 0.52 ms (54% better).
    #[test]
    fn reproduces_the_rocksdb_briefs_callouts() {
        let runs = vec![
            run("readrandom", 32, "micron", 500_000.0, 240_000),
            run("readrandom", 32, "competitor-a", 400_000.0, 300_000),
            run("readrandom", 32, "competitor-b", 450_000.0, 280_000),
            run("readrandom", 64, "micron", 616_344.0, 240_000),
            run("readrandom", 64, "competitor-a", 388_751.0, 520_000),
            run("readrandom", 64, "competitor-b", 559_924.0, 300_000),
        ];
        let c = compare("s", &runs);
        assert_eq!(c.steps.len(), 1);
        let s = &c.steps[0];
        assert_eq!(s.points.len(), 2);
        let r = s.largest_ops_ratio.as_ref().unwrap();
        assert_eq!(r.parameters["threads"], "64");
        assert_eq!(
            (r.best.as_str(), r.worst.as_str()),
            ("micron", "competitor-a")
        );
        assert!((r.value - 1.5854).abs() < 1e-3, "{}", r.value);
        assert!(r.text.contains("59% more ops/s"), "{}", r.text);
        let p = s.largest_p99_improvement.as_ref().unwrap();
        assert_eq!(p.parameters["threads"], "64");
        assert!((p.value - 0.5385).abs() < 1e-3, "{}", p.value);
        assert!(p.text.contains("54% lower p99"), "{}", p.text);
        let text = c.to_text();
        assert!(text.contains("616344"), "{text}");
    }

    #[test]
    fn single_target_steps_are_not_compared() {
        let c = compare("s", &[run("fill", 1, "a", 10.0, 5)]);
        assert!(c.steps.is_empty());
    }
}
