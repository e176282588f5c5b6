//! A target's figures run after run (`storlab results history`, `storlab serve`'s
//! `/history`): each run's ops/s and p99 with its interval, and the runs that are change
//! points against the runs before them.
//!
//! A series is one step and sweep point, its runs in the order they started. A run is a
//! change point when its figure falls outside the prediction interval of the runs of its
//! series since the last change point (up to [`WINDOW`] of them, at least [`MIN_BEFORE`]):
//! the same Student's t on the logarithm as `storlab compare`'s verdicts, where the earlier
//! runs are the repetitions of one side and the new run is one more draw from them, its spread
//! that of one run among them (mean +- t x sd x sqrt(1 + 1/n)). A change point begins a new
//! segment: the runs after it are judged against it and what follows, not against the level
//! it left.

use serde::Serialize;

use super::uncertainty::{Figure, Interval, mean_and_sd, t_quantile};
use super::{RunFigures, compare_all, parameters_text};
use crate::store::{Store, StoreError};
use crate::stored::{LoadError, load_run_by_id};
use crate::summary::RunStatus;

/// The most earlier runs a run is judged against.
pub const WINDOW: usize = 10;
/// The fewest earlier runs of a segment for a run to be judged at all.
pub const MIN_BEFORE: usize = 3;

/// A change point: the figure is worse, or better, than the runs before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Regression,
    Improvement,
}

impl Change {
    pub fn name(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Improvement => "improvement",
        }
    }
}

/// One run of a target in its history.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct HistoryRun {
    pub run_id: String,
    pub step: String,
    /// The sweep point, `threads=8` (empty: none).
    pub parameters: String,
    pub status: String,
    pub started_at: String,
    /// Seconds since the Unix epoch.
    pub started_seconds: f64,
    pub rate_ops: f64,
    pub p99_ns: u64,
    /// The run's own intervals (from its repetitions' batches: within the run).
    pub rate_ops_interval: Option<Interval>,
    pub p99_interval: Option<Interval>,
    pub rate_ops_change: Option<Change>,
    pub p99_change: Option<Change>,
}

impl HistoryRun {
    /// `step threads=8`: its series.
    pub fn series(&self) -> String {
        format!("{} {}", self.step, self.parameters)
            .trim()
            .to_string()
    }
}

/// Target `target` of study `study` (one step, or all) run after run, oldest first, with
/// intervals at `confidence` and change points. Failed runs, runs without a summary and runs
/// without the target are left out; a run whose files cannot be read shows without
/// intervals.
pub fn load(
    store: &Store,
    study: &str,
    target: &str,
    step: Option<&str>,
    confidence: f64,
) -> Result<Vec<HistoryRun>, StoreError> {
    let mut runs = Vec::new();
    for row in store.list()? {
        if row.study != study || step.is_some_and(|s| s != row.step) {
            continue;
        }
        let run = match load_run_by_id(store, &row.run_id) {
            Ok(run) => run,
            Err(LoadError::Store(e)) => return Err(e),
            Err(_) => continue,
        };
        let s = &run.summary;
        let Some(t) = s.targets.iter().find(|t| t.name == target) else {
            continue;
        };
        let Ok(started) = humantime::parse_rfc3339(&s.started_at) else {
            continue;
        };
        if s.status == RunStatus::Failed {
            continue;
        }
        let point = compare_all(&[RunFigures::of_stored(&run)])
            .into_iter()
            .flat_map(|step| step.points)
            .flat_map(|p| p.targets)
            .find(|p| p.target == target);
        let interval = |figure, value| {
            let u = point.as_ref()?.uncertainty.as_ref()?;
            u.interval(figure, value, confidence)
        };
        let p99_ns = t.service_latency.p99_ns;
        runs.push(HistoryRun {
            run_id: row.run_id.clone(),
            step: s.step.clone(),
            parameters: parameters_text(&s.parameters),
            status: s.status.name().to_string(),
            started_at: s.started_at.clone(),
            started_seconds: started
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            rate_ops: t.rate_ops,
            p99_ns,
            rate_ops_interval: interval(Figure::RateOps, t.rate_ops),
            p99_interval: interval(Figure::P99Latency, p99_ns as f64),
            rate_ops_change: None,
            p99_change: None,
        });
    }
    runs.sort_by(|a, b| a.started_seconds.total_cmp(&b.started_seconds));
    mark_changes(&mut runs, confidence);
    Ok(runs)
}

/// Marks the change points of each series of `runs` (oldest first).
pub fn mark_changes(runs: &mut [HistoryRun], confidence: f64) {
    let mut names: Vec<String> = runs.iter().map(HistoryRun::series).collect();
    names.sort();
    names.dedup();
    for name in names {
        let at: Vec<usize> = (0..runs.len())
            .filter(|&i| runs[i].series() == name)
            .collect();
        let ops: Vec<f64> = at.iter().map(|&i| runs[i].rate_ops).collect();
        let p99: Vec<f64> = at.iter().map(|&i| runs[i].p99_ns as f64).collect();
        let ops = changes(&ops, true, confidence);
        let p99 = changes(&p99, false, confidence);
        for (k, &i) in at.iter().enumerate() {
            runs[i].rate_ops_change = ops[k];
            runs[i].p99_change = p99[k];
        }
    }
}

/// For each value, whether it is a change point against the segment before it.
pub fn changes(values: &[f64], higher_is_better: bool, confidence: f64) -> Vec<Option<Change>> {
    let mut out = vec![None; values.len()];
    let mut segment_start = 0;
    for (i, &v) in values.iter().enumerate() {
        let from = segment_start.max(i.saturating_sub(WINDOW));
        let before = &values[from..i];
        if before.len() < MIN_BEFORE || v <= 0.0 || before.iter().any(|b| *b <= 0.0) {
            continue;
        }
        let logs: Vec<f64> = before.iter().map(|b| b.ln()).collect();
        let n = logs.len() as f64;
        let (mean, sd) = mean_and_sd(&logs);
        let Some(t) = t_quantile(confidence, n - 1.0) else {
            continue;
        };
        let half = t * sd * (1.0 + 1.0 / n).sqrt();
        let d = v.ln() - mean;
        if d.abs() <= half {
            continue;
        }
        out[i] = Some(if (d > 0.0) == higher_is_better {
            Change::Improvement
        } else {
            Change::Regression
        });
        segment_start = i;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs at about 1000 ops/s with 1% noise, then a step down to 900: the first run at 900
    /// is a regression, the ones after it are judged against the new level.
    #[test]
    fn a_step_is_one_change_point_and_noise_none() {
        let noise = [1.0, -0.8, 0.5, -1.2, 0.9, -0.3, 1.1, -0.6];
        let mut values: Vec<f64> = noise.iter().map(|n| 1000.0 * (1.0 + n / 100.0)).collect();
        values.extend(noise.iter().map(|n| 900.0 * (1.0 + n / 100.0)));
        let found = changes(&values, true, 0.99);
        let at: Vec<(usize, Change)> = found
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (i, c)))
            .collect();
        assert_eq!(at, [(8, Change::Regression)], "{found:?}");
        // For a latency, higher is worse: the same step is an improvement.
        let found = changes(&values, false, 0.99);
        assert_eq!(found[8], Some(Change::Improvement));
        // Too few runs before: never judged.
        assert_eq!(
            changes(&[1000.0, 1000.0, 500.0], true, 0.99),
            [None, None, None]
        );
    }
}
