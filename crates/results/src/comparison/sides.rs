//! `storlab compare A B [C...]`: the same workloads across stored results side by side. Each
//! side's runs are combined into points exactly as for a study's comparison (repetitions
//! merged by histograms), then matched against the first side's by step, sweep point and
//! target (or by position when they differ). A pair is comparable only when its resolved
//! workloads (from the stored plans) are equal; what differs is said plainly when they are not.

use crate::comparison::{RunFigures, TargetPoint, compare_all, parameters_text};
use crate::stored::StoredRun;

/// One side of a comparison: what the user named and the runs it holds.
pub struct Side {
    pub label: String,
    pub runs: Vec<StoredRun>,
}

/// The figures compared.
#[derive(Debug, Clone, Copy, PartialEq)]
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
}

impl Row {
    /// Comparable with A on side `i` (>= 1).
    pub fn comparable(&self, i: usize) -> bool {
        self.metrics[0].is_some()
            && self.metrics[i].is_some()
            && self.workload_differences[i - 1].is_empty()
    }
}

/// The comparison of several sides against the first.
pub struct SidesComparison {
    pub labels: Vec<String>,
    pub rows: Vec<Row>,
}

impl SidesComparison {
    /// Whether anything at all can be compared.
    pub fn any_comparable(&self) -> bool {
        self.rows
            .iter()
            .any(|r| (1..self.labels.len()).any(|i| r.comparable(i)))
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
}
