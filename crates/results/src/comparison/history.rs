//! A target's figures run after run (`storlab results history`, `storlab serve`'s
//! `/history`): each run's ops/s and p99 with its interval, and the runs that are change
//! points against the runs before them.
//!
//! A series is one step and sweep point, its runs in the order they started. A run is a
//! change point when its figure falls outside the prediction interval of the runs of its
//! series since the last change point (up to [`WINDOW`] of them, at least [`MIN_BEFORE`]):
//! the same Student's t on the logarithm as `storlab compare`'s verdicts, where the earlier
//! runs are the repetitions of one side and the new run is one more draw from them, its spread
//! that of one run among them (mean +- t x sd x sqrt(1 + 1/n)). A run's figure is never taken
//! as surer than its own interval says: the spread of one run is at least the mean of the
//! earlier runs' own (within-run) variances, and the new run's at least its own, so three
//! earlier runs that happen to agree closely do not make an ordinary fourth a change point.
//! A change point begins a new segment: the runs after it are judged against it and what
//! follows, not against the level it left.

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
    /// The standard errors of the logarithms of ops/s and p99 within the run (None: the run
    /// has too few batches or repetitions to tell).
    #[serde(skip)]
    pub within_se: (Option<f64>, Option<f64>),
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
        let uncertainty = point.as_ref().and_then(|p| p.uncertainty.as_ref());
        let interval = |figure, value| uncertainty?.interval(figure, value, confidence);
        let se = |figure| uncertainty?.spread(figure);
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
            within_se: (se(Figure::RateOps), se(Figure::P99Latency)),
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
        let ops: Vec<Draw> = at
            .iter()
            .map(|&i| Draw::new(runs[i].rate_ops, runs[i].within_se.0))
            .collect();
        let p99: Vec<Draw> = at
            .iter()
            .map(|&i| Draw::new(runs[i].p99_ns as f64, runs[i].within_se.1))
            .collect();
        let ops = changes(&ops, true, confidence);
        let p99 = changes(&p99, false, confidence);
        for (k, &i) in at.iter().enumerate() {
            runs[i].rate_ops_change = ops[k];
            runs[i].p99_change = p99[k];
        }
    }
}

/// One run's figure and the standard error of its logarithm within the run, if known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    pub value: f64,
    pub within_se: Option<f64>,
}

impl Draw {
    pub fn new(value: f64, within_se: Option<f64>) -> Draw {
        Draw { value, within_se }
    }

    /// A figure with no interval of its own.
    pub fn bare(value: f64) -> Draw {
        Draw::new(value, None)
    }

    fn within_variance(&self) -> f64 {
        self.within_se.map_or(0.0, |se| se * se)
    }
}

/// How far from the earlier runs' mean (in logarithms) a new run may lie before it is a
/// change point: t x sqrt(run / n + new), where `run` is the variance of one run's figure
/// (the earlier runs' spread `sd`, at least their mean within-run variance) and `new` that of the
/// new run (at least `run`, and at least its own within-run variance).
fn prediction_half_width(before: &[Draw], sd: f64, new: &Draw, t: f64) -> f64 {
    let n = before.len() as f64;
    let within = before.iter().map(Draw::within_variance).sum::<f64>() / n;
    let run = (sd * sd).max(within);
    let new = run.max(new.within_variance());
    t * (run / n + new).sqrt()
}

/// For each run, whether it is a change point against the segment before it.
pub fn changes(values: &[Draw], higher_is_better: bool, confidence: f64) -> Vec<Option<Change>> {
    let mut out = vec![None; values.len()];
    let mut segment_start = 0;
    for (i, v) in values.iter().enumerate() {
        let from = segment_start.max(i.saturating_sub(WINDOW));
        let before = &values[from..i];
        if before.len() < MIN_BEFORE || v.value <= 0.0 || before.iter().any(|b| b.value <= 0.0) {
            continue;
        }
        let logs: Vec<f64> = before.iter().map(|b| b.value.ln()).collect();
        let (mean, sd) = mean_and_sd(&logs);
        let Some(t) = t_quantile(confidence, logs.len() as f64 - 1.0) else {
            continue;
        };
        let d = v.value.ln() - mean;
        if d.abs() <= prediction_half_width(before, sd, v, t) {
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
        let values: Vec<Draw> = values.into_iter().map(Draw::bare).collect();
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
            changes(&[1000.0, 1000.0, 500.0].map(Draw::bare), true, 0.99),
            [None, None, None]
        );
    }

    /// Three runs whose p99s happen to agree within 1.5% but whose own intervals say each is
    /// known to about 3%: a fourth 13% higher (70.7 ns, then 80 ns, as on a CI machine) is
    /// within the noise once a run counts as no surer than its own interval, and a
    /// change point if the three runs' agreement is taken at its word.
    #[test]
    fn a_run_is_no_surer_than_its_own_interval() {
        let before = [(71.0, 0.03), (70.0, 0.03), (71.0, 0.03)];
        let draws = |se: bool| -> Vec<Draw> {
            before
                .iter()
                .chain(&[(80.0, 0.006)])
                .map(|&(v, s)| Draw::new(v, se.then_some(s)))
                .collect()
        };
        assert_eq!(
            changes(&draws(false), false, 0.99)[3],
            Some(Change::Regression)
        );
        assert_eq!(changes(&draws(true), false, 0.99)[3], None);
        // A step well beyond the runs' own noise is still found.
        let mut far = draws(true);
        far[3].value = 120.0;
        assert_eq!(changes(&far, false, 0.99)[3], Some(Change::Regression));
    }
}
