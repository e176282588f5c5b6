//! What a report says, laid over the one comparison of runs ([`storlab_results::comparison`]):
//! runs grouped by step (workload), each group's swept parameter (the x axis of its charts), its
//! series (a target, plus any other swept parameter), one point per series and parameter value
//! (its repetitions combined by merging histograms, with their spread), the call-outs ("B: 59%
//! more ops/s than A at threads=64", "p99 54% lower") and the warnings. Nothing here computes a
//! figure of its own: the points and call-outs are the comparison's.
//!
//! The grouping is generic over the sweep: several targets in one run (`together`) and targets
//! in separate runs with the same parameters both give one series per target.

use std::collections::BTreeMap;

use storlab_results::comparison::{
    Callout, CalloutKind, LatencyFrom, RunFigures, StepComparison, SystemPoint, TargetPoint,
    compare_all,
};
use storlab_results::summary::{RunStatus, RunSummary};

/// Parameters preferred on the x axis, in order, when several are swept.
const X_PREFERENCE: [&str; 5] = [
    "threads",
    "queue-depth",
    "rate-ops",
    "block-size",
    "read-share",
];

/// One series at one parameter value: the comparison's point of its target there.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: String,
    pub series: String,
    /// The series' swept parameters other than the x axis (`block-size=4KiB`), or empty.
    pub others: String,
    /// The target's figures at this point, repetitions combined.
    pub figures: TargetPoint,
}

/// The systems at one parameter value (a file server's shares added into one; every other
/// target on its own): the comparison's.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemsAt {
    pub x: String,
    /// As [`Point::others`].
    pub others: String,
    /// Each system, with its first target's resolved workload.
    pub systems: Vec<(SystemPoint, Option<serde_json::Value>)>,
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
    /// Per parameter value, the systems its targets make up.
    pub systems: Vec<SystemsAt>,
    /// Indexes (into the slice given to [`group_runs`]) of this group's runs.
    pub runs: Vec<usize>,
    /// The step's call-outs (largest ops/s ratio, largest p99 improvement), when it has two
    /// targets or more.
    pub callouts: Vec<Callout>,
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

    /// The x value a call-out occurs at.
    pub fn x_of(&self, c: &Callout) -> String {
        match &self.x_param {
            Some(p) => c.parameters.get(p).cloned().unwrap_or_else(|| "-".into()),
            None => "all".into(),
        }
    }

    /// Whether any point combines several repetitions.
    pub fn has_repetitions(&self) -> bool {
        self.points.iter().any(|p| p.figures.repetitions > 1)
    }
}

/// Groups runs by (study, step); the x axis is the swept parameter.
pub fn group_runs(runs: &[RunFigures]) -> Vec<Group> {
    compare_all(runs)
        .into_iter()
        .map(|s| build_group(s, runs))
        .collect()
}

fn build_group(s: StepComparison, runs: &[RunFigures]) -> Group {
    let idx: Vec<usize> = (0..runs.len())
        .filter(|i| runs[*i].summary.study == s.study && runs[*i].summary.step == s.step)
        .collect();
    // Parameters whose value differs between the group's runs.
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for i in &idx {
        for (k, v) in &runs[*i].summary.parameters {
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
    let mut points = Vec::new();
    let mut systems = Vec::new();
    for p in &s.points {
        let x = match &x_param {
            Some(xp) => p.parameters.get(xp).cloned().unwrap_or_else(|| "-".into()),
            None => "all".into(),
        };
        if !x_values.contains(&x) {
            x_values.push(x.clone());
        }
        let others: Vec<String> = swept
            .iter()
            .filter(|k| Some(**k) != x_param.as_deref())
            .filter_map(|k| p.parameters.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        systems.push(SystemsAt {
            x: x.clone(),
            others: others.join(" "),
            systems: p
                .systems
                .iter()
                .map(|s| {
                    (
                        s.clone(),
                        p.targets.get(s.first).and_then(|t| t.workload.clone()),
                    )
                })
                .collect(),
        });
        for t in &p.targets {
            let name = if others.is_empty() {
                t.target.clone()
            } else {
                format!("{} {}", t.target, others.join(" "))
            };
            if !series.contains(&name) {
                series.push(name.clone());
            }
            points.push(Point {
                x: x.clone(),
                series: name,
                others: others.join(" "),
                figures: t.clone(),
            });
        }
    }
    let callouts = s
        .largest_ops_ratio
        .into_iter()
        .chain(s.largest_p99_improvement)
        .collect();
    Group {
        study: s.study,
        step: s.step,
        x_param,
        x_values,
        series,
        points,
        systems,
        runs: idx,
        callouts,
    }
}

/// The call-outs of a group: the largest ops/s ratio between two targets and where, and the
/// largest p99 improvement and where (the comparison's). None with fewer than two targets.
pub fn callouts(group: &Group) -> &[Callout] {
    &group.callouts
}

/// The group's call-out of a kind.
pub fn callout(group: &Group, kind: CalloutKind) -> Option<&Callout> {
    group.callouts.iter().find(|c| c.kind == kind)
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
                .max_by(|a, b| a.figures.rate_ops.total_cmp(&b.figures.rate_ops))?;
            Some((s.as_str(), best))
        })
        .collect()
}

/// Points whose latency could not come from merged histograms: one line each saying what was
/// shown instead and why.
pub fn latency_fallbacks(groups: &[Group]) -> Vec<String> {
    let mut out = Vec::new();
    for g in groups {
        for p in &g.points {
            let f = &p.figures;
            let what = match f.latency_from {
                LatencyFrom::MergedHistograms => continue,
                LatencyFrom::RunSummary => "latency from the run's summary",
                LatencyFrom::WorstRepetition => {
                    "latency percentiles are the WORST repetition's (an upper bound), not merged"
                }
            };
            out.push(format!(
                "{} {}{}: {what}: histograms not read ({})",
                g.step,
                p.series,
                g.at(&p.x),
                f.latency_note.as_deref().unwrap_or("no reason given")
            ));
        }
    }
    out
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
    use storlab_results::fixtures::{figures, summary};

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
        let runs = micron();
        let groups = group_runs(&figures(&runs));
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.x_param.as_deref(), Some("threads"));
        assert_eq!(g.x_values, ["16", "64"]);
        assert_eq!(g.series, ["7500", "A", "B"]);
        let c = callouts(g);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].kind, CalloutKind::Throughput);
        assert_eq!(
            (
                c[0].best.as_str(),
                c[0].worst.as_str(),
                g.x_of(&c[0]).as_str()
            ),
            ("7500", "A", "64")
        );
        assert_eq!(
            c[0].text,
            "7500: 59% more ops/s than A at threads=64 (no interval: too little measured to tell how sure)"
        );
        assert_eq!(c[1].kind, CalloutKind::P99);
        assert_eq!(
            c[1].text,
            "7500: p99 54% lower than A at threads=16 (no interval: too little measured to tell how sure)"
        );
        assert!((c[1].value - (1.0 - 0.24 / 0.52)).abs() < 1e-9);
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
        let g = &group_runs(&figures(&runs))[0];
        assert_eq!(g.series, ["A", "M"]);
        let c = callouts(g);
        assert_eq!(
            c[0].text,
            "M: 2.1x the ops/s of A at threads=96 (no interval: too little measured to tell how sure)"
        );
        assert_eq!(
            c[1].text,
            "M: p99 49% lower than A at threads=96 (no interval: too little measured to tell how sure)"
        );
        // One series: no call-outs, but peaks.
        let one = vec![
            summary(1, "x", &[("queue-depth", "1")], &[("f", 10.0, 5)]),
            summary(2, "x", &[("queue-depth", "4")], &[("f", 30.0, 9)]),
        ];
        let g = &group_runs(&figures(&one))[0];
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
        let groups = group_runs(&figures(&runs));
        let g = &groups[0];
        assert_eq!(g.x_param.as_deref(), Some("queue-depth"));
        assert_eq!(g.series, ["f block-size=4KiB", "f block-size=64KiB"]);
        assert_eq!(
            g.point("4", "f block-size=64KiB").unwrap().figures.rate_ops,
            8.0
        );
        let t = &groups[1];
        assert_eq!(
            (t.x_param.clone(), t.x_values.clone()),
            (None, vec!["all".to_string()])
        );
        // Repetitions: all operations over all measured time; without stored histograms the
        // p99 is the worst repetition's (said so), never the mean of 10 and 30.
        let a = &t.point("all", "a").unwrap().figures;
        assert_eq!(
            (a.rate_ops, a.p99_latency_ns, a.run_indexes.clone()),
            (150.0, 30, vec![5, 6])
        );
        assert_eq!(a.latency_from, LatencyFrom::WorstRepetition);
        let spread = a.spread.as_ref().unwrap();
        assert_eq!((spread.rate_ops_min, spread.rate_ops_max), (100.0, 200.0));
        assert!(
            latency_fallbacks(&groups)
                .iter()
                .any(|l| l.starts_with("tog a: latency percentiles are the WORST repetition's"))
        );
        assert_eq!(
            callouts(t)[0].text,
            "a: 3.0x the ops/s of b (no interval: too little measured to tell how sure)"
        );
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
