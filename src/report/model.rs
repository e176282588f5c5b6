//! What a report says, computed from stored run summaries only: runs grouped by step
//! (workload), each group's swept parameter (the x axis of its charts), its series (a target,
//! plus any other swept parameter), one point per series and parameter value, the call-outs
//! ("B: 59% more ops/s than A at threads=64", "p99 54% lower") and the warnings.
//!
//! The grouping is generic over the sweep: several targets in one run (`together`) and targets
//! in separate runs with the same parameters both give one series per target.

use std::collections::BTreeMap;

use crate::results::summary::{RunStatus, RunSummary};

/// Parameters preferred on the x axis, in order, when several are swept.
const X_PREFERENCE: [&str; 5] = [
    "threads",
    "queue-depth",
    "rate-ops",
    "block-size",
    "read-share",
];

/// One series at one parameter value: the mean over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: String,
    pub series: String,
    pub target: String,
    /// The series' swept parameters other than the x axis (`block-size=4KiB`), or empty.
    pub others: String,
    /// Run indexes this point was measured in (several: repetitions).
    pub run_indexes: Vec<usize>,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub mean_latency_ns: f64,
    pub p99_latency_ns: f64,
}

/// The runs of one step.
#[derive(Debug, Clone)]
pub struct Group {
    pub study: String,
    pub step: String,
    /// The swept parameter on the x axis (`None`: nothing swept, one point per series).
    pub x_param: Option<String>,
    /// x values in the order the study runs them.
    pub x_values: Vec<String>,
    /// Series in order of first appearance.
    pub series: Vec<String>,
    pub points: Vec<Point>,
    /// Indexes (into the slice given to [`group_runs`]) of this group's runs.
    pub runs: Vec<usize>,
}

impl Group {
    pub fn point(&self, x: &str, series: &str) -> Option<&Point> {
        self.points.iter().find(|p| p.x == x && p.series == series)
    }

    /// ` at threads=64`, or nothing when nothing is swept.
    pub fn at(&self, x: &str) -> String {
        match &self.x_param {
            Some(p) => format!(" at {p}={x}"),
            None => String::new(),
        }
    }
}

/// Groups runs by (study, step); the x axis is the swept parameter.
pub fn group_runs(runs: &[RunSummary]) -> Vec<Group> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in runs {
        let k = (r.study.clone(), r.step.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(study, step)| {
            let idx: Vec<usize> = (0..runs.len())
                .filter(|i| runs[*i].study == study && runs[*i].step == step)
                .collect();
            build_group(study, step, idx, runs)
        })
        .collect()
}

fn build_group(study: String, step: String, idx: Vec<usize>, runs: &[RunSummary]) -> Group {
    // Parameters whose value differs between the group's runs.
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for i in &idx {
        for (k, v) in &runs[*i].parameters {
            let vs = values.entry(k).or_default();
            if !vs.contains(&v.as_str()) {
                vs.push(v);
            }
        }
    }
    let swept: Vec<&str> = values
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| *k)
        .collect();
    let x_param = X_PREFERENCE
        .iter()
        .find(|p| swept.contains(p))
        .copied()
        .or_else(|| swept.iter().max_by_key(|k| values[*k].len()).copied())
        .map(str::to_string);
    let mut x_values: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    // (x, series) -> (target, runs, sums)
    // (x, series, target, other parameters, runs, sums of ops/s, B/s, mean and p99 latency)
    type Acc = (String, String, String, String, Vec<usize>, [f64; 4]);
    let mut acc: Vec<Acc> = Vec::new();
    for i in &idx {
        let r = &runs[*i];
        let x = match &x_param {
            Some(p) => r.parameters.get(p).cloned().unwrap_or_else(|| "-".into()),
            None => "all".into(),
        };
        if !x_values.contains(&x) {
            x_values.push(x.clone());
        }
        let others: Vec<String> = swept
            .iter()
            .filter(|k| Some(**k) != x_param.as_deref())
            .filter_map(|k| r.parameters.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        for t in &r.targets {
            let name = if others.is_empty() {
                t.name.clone()
            } else {
                format!("{} {}", t.name, others.join(" "))
            };
            if !series.contains(&name) {
                series.push(name.clone());
            }
            let v = [
                t.rate_ops,
                t.rate_bytes,
                t.service_latency.mean_ns,
                t.service_latency.p99_ns as f64,
            ];
            match acc.iter_mut().find(|a| a.0 == x && a.1 == name) {
                Some(a) => {
                    a.4.push(r.run_index);
                    for (s, v) in a.5.iter_mut().zip(v) {
                        *s += v;
                    }
                }
                None => acc.push((
                    x.clone(),
                    name,
                    t.name.clone(),
                    others.join(" "),
                    vec![r.run_index],
                    v,
                )),
            }
        }
    }
    let points = acc
        .into_iter()
        .map(|(x, series, target, others, run_indexes, sums)| {
            let n = run_indexes.len() as f64;
            Point {
                x,
                series,
                target,
                others,
                run_indexes,
                rate_ops: sums[0] / n,
                rate_bytes: sums[1] / n,
                mean_latency_ns: sums[2] / n,
                p99_latency_ns: sums[3] / n,
            }
        })
        .collect();
    Group {
        study,
        step,
        x_param,
        x_values,
        series,
        points,
        runs: idx,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalloutKind {
    /// The largest ops/s ratio between two series at the same parameter value.
    Throughput,
    /// The largest p99 latency reduction between two series at the same parameter value.
    P99,
}

/// A finding computed from the data, with where it occurs.
#[derive(Debug, Clone, PartialEq)]
pub struct Callout {
    pub kind: CalloutKind,
    pub better: String,
    pub worse: String,
    /// The x value where it occurs.
    pub x: String,
    /// Throughput: better ops/s over worse ops/s. P99: better p99 over worse p99 (< 1).
    pub ratio: f64,
    pub better_value: f64,
    pub worse_value: f64,
    pub text: String,
}

/// Percent as the reference brief rounds it: `59%`; with a decimal near 100% (`99.9%`), so
/// that a large improvement never reads as "100% lower".
fn percent(f: f64) -> String {
    let p = f * 100.0;
    if (99.5..100.0).contains(&p) {
        format!("{:.1}%", p.min(99.9))
    } else {
        format!("{p:.0}%")
    }
}

/// The call-outs of a group: the largest ops/s ratio between two targets and where, and the
/// largest p99 improvement and where. Only series that differ in their target alone are set
/// against each other (a 4 KiB and a 64 KiB series of one target are not a finding). Ties keep
/// the first x value (the study's order). Needs two targets or more; returns nothing otherwise.
pub fn callouts(group: &Group) -> Vec<Callout> {
    let mut best_rate: Option<Callout> = None;
    let mut best_p99: Option<Callout> = None;
    for x in &group.x_values {
        let pts: Vec<&Point> = group.points.iter().filter(|p| &p.x == x).collect();
        for a in &pts {
            for b in &pts {
                if a.target == b.target || a.others != b.others {
                    continue;
                }
                if b.rate_ops > 0.0 && a.rate_ops > b.rate_ops {
                    let ratio = a.rate_ops / b.rate_ops;
                    if best_rate.as_ref().is_none_or(|c| ratio > c.ratio) {
                        let how = if ratio >= 2.0 {
                            format!("{ratio:.1}x the ops/s of")
                        } else {
                            format!("{} more ops/s than", percent(ratio - 1.0))
                        };
                        best_rate = Some(Callout {
                            kind: CalloutKind::Throughput,
                            better: a.series.clone(),
                            worse: b.series.clone(),
                            x: x.clone(),
                            ratio,
                            better_value: a.rate_ops,
                            worse_value: b.rate_ops,
                            text: format!("{}: {how} {}{}", a.series, b.series, group.at(x)),
                        });
                    }
                }
                if a.p99_latency_ns > 0.0 && a.p99_latency_ns < b.p99_latency_ns {
                    let ratio = a.p99_latency_ns / b.p99_latency_ns;
                    if best_p99.as_ref().is_none_or(|c| ratio < c.ratio) {
                        best_p99 = Some(Callout {
                            kind: CalloutKind::P99,
                            better: a.series.clone(),
                            worse: b.series.clone(),
                            x: x.clone(),
                            ratio,
                            better_value: a.p99_latency_ns,
                            worse_value: b.p99_latency_ns,
                            text: format!(
                                "{}: p99 {} lower than {}{}",
                                a.series,
                                percent(1.0 - ratio),
                                b.series,
                                group.at(x)
                            ),
                        });
                    }
                }
            }
        }
    }
    best_rate.into_iter().chain(best_p99).collect()
}

/// The best ops/s of each series, for the headline figures: (series, point).
pub fn peaks(group: &Group) -> Vec<(&str, &Point)> {
    group
        .series
        .iter()
        .filter_map(|s| {
            let best = group
                .points
                .iter()
                .filter(|p| &p.series == s)
                .max_by(|a, b| a.rate_ops.total_cmp(&b.rate_ops))?;
            Some((s.as_str(), best))
        })
        .collect()
}

/// The warnings a report must show: partial or failed runs, storlab saturated, and every
/// warning the run stored. One line per run and warning, `run N (step ...): ...`.
pub fn warnings(runs: &[RunSummary]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        let at = format!("run {} ({})", r.run_index, r.step);
        match r.status {
            RunStatus::Partial => out.push(format!(
                "{at}: PARTIAL run ({:?}): only what was measured before it stopped is shown",
                r.end_reason
            )),
            RunStatus::Failed => out.push(format!("{at}: FAILED: nothing was measured")),
            RunStatus::Complete => {}
        }
        if r.client.saturated {
            out.push(format!(
                "{at}: storlab itself was SATURATED (busiest worker {:.0}% on CPU, {:.1} of {} CPUs busy): the figures measure the client, not the target",
                r.client.worker_busy_max * 100.0,
                r.client.cpu_cores_used,
                r.client.logical_cpus
            ));
        }
        for w in &r.warnings {
            // The partial and saturated warnings are already said above in the same words.
            out.push(format!("{at}: {w}"));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::summary::TargetResult;

    /// A summary with one target per (name, ops/s, p99 ns).
    pub(crate) fn summary(
        index: usize,
        step: &str,
        params: &[(&str, &str)],
        targets: &[(&str, f64, u64)],
    ) -> RunSummary {
        let mut s: RunSummary = serde_json::from_value(serde_json::json!({
            "run-id": format!("s-r{index:03}"), "study": "s", "step": step,
            "run-index": index, "run-count": 1, "repetition": 1, "parameters": {},
            "status": "complete", "end-reason": "duration", "started-at": "", "ended-at": "",
            "warmup-seconds": 0.0, "measured-seconds": 1.0, "targets": [],
            "total": TargetResult::default(),
            "client": crate::results::summary::ClientUsage::default(), "warnings": [], "events": [],
            "error-samples": []
        }))
        .expect("summary");
        s.parameters = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s.targets = targets
            .iter()
            .map(|(n, rate, p99)| {
                let mut t = TargetResult {
                    name: n.to_string(),
                    rate_ops: *rate,
                    rate_bytes: rate * 4096.0,
                    ..Default::default()
                };
                t.service_latency.p99_ns = *p99;
                t
            })
            .collect();
        s
    }

    /// The RocksDB brief's Figure 1 and 2 numbers at 16 and 64 threads.
    fn micron() -> Vec<RunSummary> {
        let mut runs = Vec::new();
        let data = [
            (
                "16",
                [
                    ("7500", 400_000.0, 240_000),
                    ("A", 300_000.0, 520_000),
                    ("B", 350_000.0, 300_000),
                ],
            ),
            (
                "64",
                [
                    ("7500", 616_344.0, 400_000),
                    ("A", 388_751.0, 600_000),
                    ("B", 559_924.0, 500_000),
                ],
            ),
        ];
        // Targets in separate runs with the same parameters (as a scaling study per SSD).
        for (threads, targets) in data {
            for t in targets {
                let i = runs.len() + 1;
                runs.push(summary(i, "readrandom", &[("threads", threads)], &[t]));
            }
        }
        runs
    }

    #[test]
    fn reference_brief_callouts() {
        let groups = group_runs(&micron());
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.x_param.as_deref(), Some("threads"));
        assert_eq!(g.x_values, ["16", "64"]);
        assert_eq!(g.series, ["7500", "A", "B"]);
        let c = callouts(g);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].kind, CalloutKind::Throughput);
        assert_eq!(
            (c[0].better.as_str(), c[0].worse.as_str(), c[0].x.as_str()),
            ("7500", "A", "64")
        );
        assert_eq!(c[0].text, "7500: 59% more ops/s than A at threads=64");
        assert_eq!(c[1].kind, CalloutKind::P99);
        assert_eq!(c[1].text, "7500: p99 54% lower than A at threads=16");
        assert!((c[1].ratio - 0.24 / 0.52).abs() < 1e-9);
        assert_eq!(
            (percent(0.9998), percent(0.994), percent(1.0)),
            ("99.9%".into(), "99%".into(), "100%".into())
        );
    }

    #[test]
    fn together_runs_and_ratios_over_two() {
        // Both targets in one run; B at 2.1x A.
        let runs = vec![
            summary(
                1,
                "rww",
                &[("threads", "96")],
                &[("A", 300_000.0, 720_000), ("M", 630_000.0, 370_000)],
            ),
            summary(
                2,
                "rww",
                &[("threads", "128")],
                &[("A", 300_580.0, 700_000), ("M", 616_223.0, 500_000)],
            ),
        ];
        let g = &group_runs(&runs)[0];
        assert_eq!(g.series, ["A", "M"]);
        let c = callouts(g);
        assert_eq!(c[0].text, "M: 2.1x the ops/s of A at threads=96");
        assert_eq!(c[1].text, "M: p99 49% lower than A at threads=96");
        // One series: no call-outs, but peaks.
        let one = vec![
            summary(1, "x", &[("queue-depth", "1")], &[("f", 10.0, 5)]),
            summary(2, "x", &[("queue-depth", "4")], &[("f", 30.0, 9)]),
        ];
        let g = &group_runs(&one)[0];
        assert!(callouts(g).is_empty());
        assert_eq!(peaks(g)[0].1.x, "4");
    }

    #[test]
    fn two_swept_parameters_and_repetitions() {
        let mut runs = Vec::new();
        for (bs, qd, rate) in [
            ("4KiB", "1", 10.0),
            ("4KiB", "4", 20.0),
            ("64KiB", "1", 5.0),
            ("64KiB", "4", 8.0),
        ] {
            let i = runs.len() + 1;
            runs.push(summary(
                i,
                "qd",
                &[("block-size", bs), ("queue-depth", qd)],
                &[("f", rate, 1000)],
            ));
        }
        runs.push(summary(5, "tog", &[], &[("a", 100.0, 10), ("b", 50.0, 20)]));
        runs.push(summary(6, "tog", &[], &[("a", 200.0, 30), ("b", 50.0, 20)]));
        let groups = group_runs(&runs);
        let g = &groups[0];
        assert_eq!(g.x_param.as_deref(), Some("queue-depth"));
        assert_eq!(g.series, ["f block-size=4KiB", "f block-size=64KiB"]);
        assert_eq!(g.point("4", "f block-size=64KiB").unwrap().rate_ops, 8.0);
        let t = &groups[1];
        assert_eq!(
            (t.x_param.clone(), t.x_values.clone()),
            (None, vec!["all".to_string()])
        );
        let a = t.point("all", "a").unwrap();
        assert_eq!(
            (a.rate_ops, a.p99_latency_ns, a.run_indexes.clone()),
            (150.0, 20.0, vec![5, 6])
        );
        assert_eq!(callouts(t)[0].text, "a: 3.0x the ops/s of b");
    }

    #[test]
    fn warnings_name_partial_and_saturated_runs() {
        let mut r = summary(3, "w", &[], &[("f", 1.0, 1)]);
        r.status = RunStatus::Partial;
        r.client.saturated = true;
        r.warnings.push("something else".into());
        let w = warnings(&[r]);
        assert_eq!(w.len(), 3);
        assert!(w[0].contains("run 3 (w): PARTIAL"));
        assert!(w[1].contains("SATURATED"));
        assert_eq!(w[2], "run 3 (w): something else");
    }
}
