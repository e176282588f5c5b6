//! `storlab compare A B [C...]`: the same workloads across stored results side by side. Each
//! side's runs are combined into points exactly as for a study's comparison (repetitions
//! merged by histograms), then matched against the first side's by step, sweep point and
//! target (or by position when they differ). A pair is comparable only when its resolved
//! workloads (from the stored plans) are equal; what differs is said plainly when they are not.

use serde::Serialize;

use crate::comparison::uncertainty::{Figure, RatioVerdict, Sides, Uncertainty, Verdict};
use crate::comparison::{RunFigures, TargetPoint, compare_all, parameters_text};
use crate::stored::StoredRun;

/// One side of a comparison: what the user named and the runs it holds.
pub struct Side {
    pub label: String,
    pub runs: Vec<StoredRun>,
}

/// The figures compared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Metrics {
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p99_9_ns: f64,
    pub max_ns: f64,
    pub errors: f64,
}

/// Metric names, whether higher is better, in the order of [`Metrics::values`].
pub const METRICS: [(&str, bool); 8] = [
    ("ops/s", true),
    ("MB/s", true),
    ("mean", false),
    ("p50", false),
    ("p99", false),
    ("p99.9", false),
    ("max", false),
    ("errors", false),
];

impl Metrics {
    fn of(t: &TargetPoint) -> Metrics {
        let l = &t.service_latency;
        Metrics {
            rate_ops: t.rate_ops,
            rate_bytes: t.rate_bytes,
            mean_ns: l.mean_ns,
            p50_ns: l.p50_ns as f64,
            p99_ns: l.p99_ns as f64,
            p99_9_ns: l.p99_9_ns as f64,
            max_ns: l.max_ns as f64,
            errors: t.errors as f64,
        }
    }

    /// The value of a figure that carries an interval.
    pub fn figure(&self, figure: Figure) -> f64 {
        match figure {
            Figure::RateOps => self.rate_ops,
            Figure::MeanLatency => self.mean_ns,
            Figure::P50Latency => self.p50_ns,
            Figure::P99Latency => self.p99_ns,
            Figure::P999Latency => self.p99_9_ns,
        }
    }

    /// ops/s, MB/s, then latencies in ns, then errors.
    pub fn values(&self) -> [f64; 8] {
        [
            self.rate_ops,
            self.rate_bytes / 1e6,
            self.mean_ns,
            self.p50_ns,
            self.p99_ns,
            self.p99_9_ns,
            self.max_ns,
            self.errors,
        ]
    }
}

/// One target at one point of one side.
#[derive(Debug, Clone)]
struct Entry {
    step: String,
    params: String,
    point: TargetPoint,
}

fn entries(side: &Side) -> Vec<Entry> {
    let figures: Vec<RunFigures> = side.runs.iter().map(RunFigures::of_stored).collect();
    let mut out = Vec::new();
    for s in compare_all(&figures) {
        for p in s.points {
            let params = parameters_text(&p.parameters);
            for t in p.targets {
                out.push(Entry {
                    step: s.step.clone(),
                    params: params.clone(),
                    point: t,
                });
            }
        }
    }
    out
}

/// Field-by-field differences of two JSON objects: `block-size: 4096 vs 65536`.
pub fn json_differences(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let (Some(ao), Some(bo)) = (a.as_object(), b.as_object()) else {
        return if a == b {
            vec![]
        } else {
            vec![format!("{a} vs {b}")]
        };
    };
    let mut keys: Vec<&String> = ao.keys().chain(bo.keys()).collect();
    keys.sort();
    keys.dedup();
    let text = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => "unset".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    keys.into_iter()
        .filter(|k| ao.get(*k) != bo.get(*k))
        .map(|k| format!("{k}: {} vs {}", text(ao.get(k)), text(bo.get(k))))
        .collect()
}

/// One compared target and sweep point across the sides.
#[derive(Debug, Clone)]
pub struct Row {
    pub step: String,
    pub params: String,
    /// Target name per side (`None`: missing on that side).
    pub targets: Vec<Option<String>>,
    pub metrics: Vec<Option<Metrics>>,
    /// Per side: repetitions combined at this point (0: missing).
    pub repetitions: Vec<usize>,
    /// Per side after the first: workload differences from A (empty: comparable).
    pub workload_differences: Vec<Vec<String>>,
    /// Per side after the first: other differences worth knowing (target configuration, step).
    pub notes: Vec<Vec<String>>,
    /// Per side: how sure its figures are (None: no histograms, or one group).
    pub uncertainty: Vec<Option<Uncertainty>>,
}

impl Row {
    /// Comparable with A on side `i` (>= 1).
    pub fn comparable(&self, i: usize) -> bool {
        self.metrics[0].is_some()
            && self.metrics[i].is_some()
            && self.workload_differences[i - 1].is_empty()
    }

    /// Side `i` (>= 1) against A, figure by figure, at `confidence`: the ratio's interval
    /// and the verdict, for the figures both sides have a spread for.
    pub fn verdicts(&self, i: usize, confidence: f64) -> Vec<RatioVerdict> {
        let (Some(a), Some(b)) = (self.metrics[0], self.metrics[i]) else {
            return Vec::new();
        };
        let (Some(ua), Some(ub)) = (&self.uncertainty[0], &self.uncertainty[i]) else {
            return Vec::new();
        };
        if !self.comparable(i) {
            return Vec::new();
        }
        Figure::ALL
            .into_iter()
            .filter_map(|f| {
                let sides = Sides {
                    a_value: a.figure(f),
                    a: ua,
                    b_value: b.figure(f),
                    b: ub,
                };
                sides.ratio(f, confidence)
            })
            .collect()
    }

    /// `step [point] target`, for messages.
    pub fn label(&self) -> String {
        format!(
            "{} [{}] {}",
            self.step,
            or_dash(&self.params),
            self.targets[0].clone().unwrap_or_default()
        )
    }
}

/// A figure worse on a side than on A beyond the noise, and by more than the threshold.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Regression {
    /// `step [point] target`.
    pub at: String,
    /// The side's label.
    pub side: String,
    #[serde(flatten)]
    pub verdict: RatioVerdict,
}

impl Regression {
    /// `B: fill [-] disk: ops/s 0.91x of A (95% CI 0.88-0.94x)`.
    pub fn text(&self, confidence: f64) -> String {
        let r = &self.verdict.ratio;
        format!(
            "{}: {}: {} {:.3}x of A ({:.0}% CI {:.3}-{:.3}x)",
            self.side,
            self.at,
            self.verdict.figure.name(),
            r.value,
            confidence * 100.0,
            r.low,
            r.high
        )
    }
}

/// The comparison of several sides against the first.
pub struct SidesComparison {
    pub labels: Vec<String>,
    pub rows: Vec<Row>,
}

impl SidesComparison {
    /// The figures worse than A beyond the noise at `confidence` and by more than
    /// `threshold` (0.05: ops/s below 0.95x, a latency above 1.05x).
    pub fn regressions(&self, confidence: f64, threshold: f64) -> Vec<Regression> {
        let mut out = Vec::new();
        for row in &self.rows {
            for i in 1..self.labels.len() {
                for v in row.verdicts(i, confidence) {
                    let r = v.ratio.value;
                    let beyond = if v.figure.higher_is_better() {
                        r < 1.0 - threshold
                    } else {
                        r > 1.0 + threshold
                    };
                    if v.verdict == Verdict::Worse && beyond {
                        out.push(Regression {
                            at: row.label(),
                            side: self.labels[i].clone(),
                            verdict: v,
                        });
                    }
                }
            }
        }
        out
    }

    /// Whether anything at all can be compared.
    pub fn any_comparable(&self) -> bool {
        self.rows
            .iter()
            .any(|r| (1..self.labels.len()).any(|i| r.comparable(i)))
    }
}

/// `storlab compare --json`: the sides, each row's figures and, per side against A, the
/// verdicts.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ComparisonJson<'a> {
    pub sides: &'a [String],
    pub confidence: f64,
    pub rows: Vec<RowJson<'a>>,
    /// With `--fail-on-regression`: what fails the comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regressions: Option<Vec<Regression>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RowJson<'a> {
    pub step: &'a str,
    pub point: &'a str,
    /// Per side (null: missing).
    pub targets: &'a [Option<String>],
    pub figures: &'a [Option<Metrics>],
    pub repetitions: &'a [usize],
    /// Per side: where its intervals come from (null: none).
    pub intervals_from: Vec<Option<String>>,
    /// Per side after A.
    pub against_a: Vec<AgainstA>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AgainstA {
    pub comparable: bool,
    pub workload_differences: Vec<String>,
    pub notes: Vec<String>,
    pub verdicts: Vec<RatioVerdict>,
}

impl SidesComparison {
    /// The JSON view at `confidence`, with the regressions when a threshold was given.
    pub fn json(
        &self,
        confidence: f64,
        regressions: Option<Vec<Regression>>,
    ) -> ComparisonJson<'_> {
        let rows = self
            .rows
            .iter()
            .map(|r| RowJson {
                step: &r.step,
                point: &r.params,
                targets: &r.targets,
                figures: &r.metrics,
                repetitions: &r.repetitions,
                intervals_from: r
                    .uncertainty
                    .iter()
                    .map(|u| u.as_ref().map(|u| u.from.describe(u.groups)))
                    .collect(),
                against_a: (1..self.labels.len())
                    .map(|i| AgainstA {
                        comparable: r.comparable(i),
                        workload_differences: r.workload_differences[i - 1].clone(),
                        notes: r.notes[i - 1].clone(),
                        verdicts: r.verdicts(i, confidence),
                    })
                    .collect(),
            })
            .collect();
        ComparisonJson {
            sides: &self.labels,
            confidence,
            rows,
            regressions,
        }
    }
}

pub fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// Matches the sides' points against the first side's.
pub fn compare_sides(sides: &[Side]) -> SidesComparison {
    let all: Vec<Vec<Entry>> = sides.iter().map(entries).collect();
    let Some(base) = all.first() else {
        return SidesComparison {
            labels: Vec::new(),
            rows: Vec::new(),
        };
    };
    let mut rows = Vec::new();
    let mut used: Vec<Vec<bool>> = all.iter().map(|e| vec![false; e.len()]).collect();
    for (bi, b) in base.iter().enumerate() {
        used[0][bi] = true;
        let mut row = Row {
            step: b.step.clone(),
            params: b.params.clone(),
            targets: vec![Some(b.point.target.clone())],
            metrics: vec![Some(Metrics::of(&b.point))],
            repetitions: vec![b.point.repetitions],
            workload_differences: Vec::new(),
            notes: Vec::new(),
            uncertainty: vec![b.point.uncertainty.clone()],
        };
        for (si, other) in all.iter().enumerate().skip(1) {
            // By step, sweep point and target name; else by step, sweep point and the
            // target's position in its run (a target renamed); else by position on the side.
            let free = |i: usize| !used[si][i];
            let same_point = |o: &Entry| o.step == b.step && o.params == b.params;
            let found = (0..other.len())
                .find(|&i| {
                    free(i) && same_point(&other[i]) && other[i].point.target == b.point.target
                })
                .or_else(|| {
                    (0..other.len()).find(|&i| {
                        free(i)
                            && same_point(&other[i])
                            && other[i].point.target_position == b.point.target_position
                    })
                })
                .or_else(|| (bi < other.len() && free(bi)).then_some(bi));
            match found {
                Some(oi) => {
                    used[si][oi] = true;
                    let o = &other[oi];
                    let mut wd = match (&b.point.workload, &o.point.workload) {
                        (Some(x), Some(y)) => json_differences(x, y),
                        _ => vec![],
                    };
                    if o.params != b.params {
                        wd.insert(
                            0,
                            format!(
                                "sweep point: {} vs {}",
                                or_dash(&b.params),
                                or_dash(&o.params)
                            ),
                        );
                    }
                    let mut notes = Vec::new();
                    if o.step != b.step {
                        notes.push(format!("step: {} vs {}", b.step, o.step));
                    }
                    if let (Some(x), Some(y)) = (&b.point.config, &o.point.config) {
                        notes.extend(
                            json_differences(x, y)
                                .into_iter()
                                .map(|d| format!("target {d}")),
                        );
                    }
                    row.targets.push(Some(o.point.target.clone()));
                    row.metrics.push(Some(Metrics::of(&o.point)));
                    row.repetitions.push(o.point.repetitions);
                    row.workload_differences.push(wd);
                    row.notes.push(notes);
                    row.uncertainty.push(o.point.uncertainty.clone());
                }
                None => {
                    row.targets.push(None);
                    row.metrics.push(None);
                    row.repetitions.push(0);
                    row.workload_differences.push(vec![format!(
                        "no run of step {} [{}] target {} in {}",
                        b.step,
                        or_dash(&b.params),
                        b.point.target,
                        sides[si].label
                    )]);
                    row.notes.push(vec![]);
                    row.uncertainty.push(None);
                }
            }
        }
        rows.push(row);
    }
    SidesComparison {
        labels: sides.iter().map(|s| s.label.clone()).collect(),
        rows,
    }
}

/// Ratio and percent difference of `v` against base `a`: (`1.05x`, `+5.3%`).
pub fn ratio_and_diff(a: f64, v: f64) -> (String, String) {
    if a == 0.0 {
        return ("-".into(), if v == 0.0 { "0%".into() } else { "-".into() });
    }
    let r = v / a;
    (format!("{r:.2}x"), format!("{:+.1}%", (r - 1.0) * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_differences_name_fields() {
        let a = serde_json::json!({"block-size": "4KiB", "threads": 1, "rate-ops": null});
        let b = serde_json::json!({"block-size": "64KiB", "threads": 1, "rate-ops": 5.0});
        assert_eq!(
            json_differences(&a, &b),
            ["block-size: 4KiB vs 64KiB", "rate-ops: unset vs 5.0"]
        );
        assert!(json_differences(&a, &a).is_empty());
    }

    #[test]
    fn ratios() {
        assert_eq!(
            ratio_and_diff(100.0, 159.0),
            ("1.59x".into(), "+59.0%".into())
        );
        assert_eq!(ratio_and_diff(0.52, 0.24).1, "-53.8%");
        assert_eq!(ratio_and_diff(0.0, 1.0).0, "-");
    }

    /// A figure worse beyond the noise counts as a regression only past the threshold; one
    /// within the noise never.
    #[test]
    fn regressions_are_worse_beyond_the_noise_and_past_the_threshold() {
        use crate::comparison::uncertainty::{FigureSpread, GroupsFrom};
        let spread = |se| Uncertainty {
            from: GroupsFrom::Repetitions,
            groups: 10,
            figures: vec![FigureSpread {
                figure: Figure::RateOps,
                log_standard_error: se,
            }],
        };
        let metrics = |rate_ops| Metrics {
            rate_ops,
            rate_bytes: 0.0,
            mean_ns: 0.0,
            p50_ns: 0.0,
            p99_ns: 0.0,
            p99_9_ns: 0.0,
            max_ns: 0.0,
            errors: 0.0,
        };
        let comparison = |b_rate, se| SidesComparison {
            labels: vec!["a".into(), "b".into()],
            rows: vec![Row {
                step: "s".into(),
                params: String::new(),
                targets: vec![Some("t".into()), Some("t".into())],
                metrics: vec![Some(metrics(1000.0)), Some(metrics(b_rate))],
                repetitions: vec![10, 10],
                workload_differences: vec![vec![]],
                notes: vec![vec![]],
                uncertainty: vec![Some(spread(se)), Some(spread(se))],
            }],
        };
        // 8% fewer ops/s with 1% noise: a regression past 5%, not past 10%.
        let c = comparison(920.0, 0.01);
        assert_eq!(c.regressions(0.95, 0.05).len(), 1);
        assert!(c.regressions(0.95, 0.10).is_empty());
        let text = c.regressions(0.95, 0.05)[0].text(0.95);
        assert!(
            text.starts_with("b: s [-] t: ops/s 0.920x of A (95% CI 0."),
            "{text}"
        );
        // The same 8% within 10% noise: no verdict of worse, so no regression.
        assert!(comparison(920.0, 0.10).regressions(0.95, 0.05).is_empty());
        // Faster is never a regression.
        assert!(comparison(1200.0, 0.01).regressions(0.95, 0.0).is_empty());
    }
}
