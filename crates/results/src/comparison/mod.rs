//! The one comparison of stored runs: runs grouped by step, sweep point and target, the
//! repetitions of a point combined, and the call-outs a brief makes from the points ("B: 59%
//! more ops/s than A at threads=64", "p99 54% lower"). The terminal table at the end of
//! `storlab run`, `comparison.json` in the study folder, the HTML and Markdown reports and
//! `storlab compare` are all made from it; rendering is the reports' business (this module
//! knows nothing of them).
//!
//! Repetitions of a point combine by MERGING HISTOGRAMS: each run's measured intervals are
//! read from its `histograms.hlog` (warm-up left out) and added, count by count, so a point's
//! percentiles are those of every operation measured at it; its ops/s is all operations over
//! all measured time. The spread between repetitions (min and max of per-repetition ops/s and
//! p99) is kept beside, never averaged into a percentile. When a run's histograms cannot be
//! read, the point says so (`latency-from`) and why.

pub mod callouts;
pub mod detect;
pub mod history;
pub mod sides;
pub mod systems;
pub mod uncertainty;

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use callouts::{Callout, CalloutKind};
pub use systems::SystemPoint;
pub use uncertainty::Uncertainty;

use crate::histograms::{self, Histograms, hlog_tag};
use crate::stored::{StoredRun, target_config_json, workload_json};
use crate::summary::{RunStatus, RunSummary, TargetResult};
use storlab_record::summary::LatencySummary;

/// Where a point's latency figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyFrom {
    /// The histograms of every repetition, added.
    MergedHistograms,
    /// One repetition whose histograms could not be read: its own summary (the same
    /// histogram, merged by the collector when it ran).
    RunSummary,
    /// Several repetitions, some without readable histograms: each percentile is the worst
    /// repetition's (an upper bound, not the point's percentile); the mean is weighted by
    /// operations.
    WorstRepetition,
}

/// The spread between the repetitions of a point (each repetition's own figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Spread {
    pub rate_ops_min: f64,
    pub rate_ops_max: f64,
    pub p99_latency_ns_min: u64,
    pub p99_latency_ns_max: u64,
}

/// One target at one sweep point, its repetitions combined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TargetPoint {
    pub target: String,
    /// Its type (`smb`) and client, as the run recorded them.
    #[serde(skip)]
    pub target_type: String,
    #[serde(skip)]
    pub client: String,
    /// All measured operations over all measured time of the repetitions.
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub mean_latency_ns: f64,
    pub p99_latency_ns: u64,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub measured_seconds: f64,
    /// Service latency (submission to completion) of the point.
    pub service_latency: LatencySummary,
    /// Latency from the intended start (open loop only).
    pub intended_latency: Option<LatencySummary>,
    pub latency_from: LatencyFrom,
    /// Why the histograms were not merged, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_note: Option<String>,
    pub repetitions: usize,
    pub run_indexes: Vec<usize>,
    /// Min and max over the repetitions, when there are several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// Some run of this point was partial or failed.
    pub incomplete: bool,
    /// How sure its figures are ([`uncertainty`]): from its repetitions, or from batches of
    /// its one run's intervals; None without histograms or with fewer than two groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// The target's position in its (first) run.
    #[serde(skip)]
    pub target_position: usize,
    /// The resolved workload (from the stored plan, or the summary's description of it).
    #[serde(skip)]
    pub workload: Option<serde_json::Value>,
    /// The target's configuration from the stored plan.
    #[serde(skip)]
    pub config: Option<serde_json::Value>,
}

/// One sweep point of a step, every target measured at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Point {
    /// The sweep values (e.g. threads = 64), as in the study.
    pub parameters: BTreeMap<String, String>,
    pub targets: Vec<TargetPoint>,
    /// The systems its targets make up ([`systems`]): a file server's shares added into one,
    /// every other target on its own. Written out when some system adds several targets.
    #[serde(default, skip_serializing_if = "no_replicas")]
    pub systems: Vec<SystemPoint>,
}

fn no_replicas(systems: &[SystemPoint]) -> bool {
    !systems::has_replicas(systems)
}

/// One step, its points and the call-outs between its targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepComparison {
    /// The study the step belongs to (reports may hold several).
    #[serde(skip)]
    pub study: String,
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

/// One run as the comparison reads it.
pub struct RunFigures<'a> {
    pub summary: &'a RunSummary,
    /// The run's measured histograms by tag, or why they could not be read.
    pub histograms: Result<Histograms, String>,
    /// The run's stored plan, for the workload and target configuration.
    pub plan: Option<&'a serde_json::Value>,
    /// The run's measured intervals in batches, by tag (empty without histograms).
    pub batches: uncertainty::Batches,
}

impl<'a> RunFigures<'a> {
    pub fn of_stored(run: &'a StoredRun) -> RunFigures<'a> {
        let (histograms, batches) = measured(&run.summary, |f| run.each_latency_interval(f));
        RunFigures {
            summary: &run.summary,
            histograms,
            plan: run.plan.as_ref(),
            batches,
        }
    }
}

/// A run's measured histograms, summed and in batches, read in one pass over its intervals
/// (`each` calls its argument for each).
fn measured(
    summary: &RunSummary,
    each: impl FnOnce(
        &mut dyn FnMut(&str, (f64, f64), Histogram<u64>) -> Result<(), String>,
    ) -> Result<(), String>,
) -> (Result<Histograms, String>, uncertainty::Batches) {
    let mut sums: Histograms = BTreeMap::new();
    let mut batcher =
        uncertainty::Batcher::new(summary.measured_seconds, summary.clock_step_ns.unwrap_or(0));
    let read = each(&mut |tag, span, h| {
        batcher.add(tag, span, &h);
        histograms::add(&mut sums, tag, &h).map_err(|e| format!("interval log: {e}"))
    });
    match read {
        Ok(()) => (Ok(sums), batcher.finish()),
        Err(e) => (Err(e), BTreeMap::new()),
    }
}

/// `threads=64 block-size=4KiB`, or empty.
pub fn parameters_text(p: &BTreeMap<String, String>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A target's measured histograms in one run, all its kinds added: (service, intended).
fn target_histograms(
    hists: &Histograms,
    t: &TargetResult,
) -> Result<(Histogram<u64>, Option<Histogram<u64>>), String> {
    let mut sums: Histograms = BTreeMap::new();
    for (op, k) in &t.kinds {
        let tag = hlog_tag(&t.name, op);
        match hists.get(&tag) {
            Some(h) => histograms::add(&mut sums, "service", h)?,
            None if k.ops == 0 => {}
            None => return Err(format!("no measured intervals tagged `{tag}`")),
        }
        if let Some(h) = hists.get(&format!("{tag}.intended")) {
            histograms::add(&mut sums, "intended", h)?;
        }
    }
    let service = sums
        .remove("service")
        .unwrap_or_else(storlab_record::new_histogram);
    Ok((service, sums.remove("intended")))
}

/// A point's running sums while its repetitions are read.
struct Acc {
    target: String,
    target_type: String,
    client: String,
    target_position: usize,
    workload: Option<serde_json::Value>,
    config: Option<serde_json::Value>,
    ops: u64,
    bytes: u64,
    errors: u64,
    seconds: f64,
    run_indexes: Vec<usize>,
    incomplete: bool,
    /// Per repetition: (ops/s, p99, bytes/s) as the run stored them.
    per_rep: Vec<(f64, u64, f64)>,
    /// Merged histograms, or why they could not be merged.
    merged: Result<(Histogram<u64>, Option<Histogram<u64>>), String>,
    /// The repetitions' own summaries (for the fallback when histograms are missing).
    summaries: Vec<(u64, LatencySummary, Option<LatencySummary>)>,
    /// Per repetition: its batches of this target, all kinds added (empty: none stored).
    batches: Vec<Vec<uncertainty::Group>>,
}

impl Acc {
    fn add(&mut self, s: &RunSummary, t: &TargetResult, r: &RunFigures) {
        let (hists, batches) = (&r.histograms, &r.batches);
        self.ops += t.ops;
        self.bytes += t.bytes;
        self.errors += t.errors;
        self.seconds += s.measured_seconds;
        self.run_indexes.push(s.run_index);
        self.incomplete |= s.status != RunStatus::Complete;
        self.per_rep
            .push((t.rate_ops, t.service_latency.p99_ns, t.rate_bytes));
        self.summaries
            .push((t.ops, t.service_latency.clone(), t.intended_latency.clone()));
        self.batches.push(target_batches(batches, t));
        let run_hists = hists
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|h| target_histograms(h, t))
            .map_err(|e| format!("run {}: {e}", s.run_index));
        self.merged = match (
            std::mem::replace(&mut self.merged, Err(String::new())),
            run_hists,
        ) {
            (Err(e), _) if !e.is_empty() => Err(e),
            (Err(_), Ok(h)) => Ok(h),
            (Ok((mut a, ai)), Ok((b, bi))) => {
                let intended = match (ai, bi) {
                    (Some(mut x), Some(y)) => x.add(&y).map(|_| x).ok(),
                    (x, y) => x.or(y),
                };
                match a.add(&b) {
                    Ok(()) => Ok((a, intended)),
                    Err(e) => Err(format!("run {}: adding histograms: {e:?}", s.run_index)),
                }
            }
            (_, Err(e)) => Err(e),
        };
    }

    /// The point's figures, its merged service-latency histogram when it has one, and the
    /// groups its interval comes from.
    fn finish(self) -> (TargetPoint, Measured) {
        let secs = self.seconds;
        let repetitions = self.run_indexes.len();
        // One repetition: its rates as the run computed them (from the exact measured time,
        // not its rounding in summary.json); several: all operations over all measured time.
        let (rate_ops, rate_bytes) = match self.per_rep.as_slice() {
            [(ops_s, _, bytes_s)] => (*ops_s, *bytes_s),
            _ if secs > 0.0 => (self.ops as f64 / secs, self.bytes as f64 / secs),
            _ => (0.0, 0.0),
        };
        let mut histogram = None;
        let (service, intended, from, note) = match self.merged {
            Ok((s, i)) => {
                let summary = LatencySummary::from_histogram(&s);
                histogram = Some(s);
                (
                    summary,
                    i.as_ref().map(LatencySummary::from_histogram),
                    LatencyFrom::MergedHistograms,
                    None,
                )
            }
            Err(e) if repetitions == 1 => {
                let (_, s, i) = self.summaries.into_iter().next().unwrap_or_default();
                (s, i, LatencyFrom::RunSummary, Some(e))
            }
            Err(e) => {
                let (s, i) = worst_of(&self.summaries);
                (s, i, LatencyFrom::WorstRepetition, Some(e))
            }
        };
        let spread = (repetitions > 1).then(|| {
            let rates = self.per_rep.iter().map(|r| r.0);
            let p99s = self.per_rep.iter().map(|r| r.1);
            Spread {
                rate_ops_min: rates.clone().fold(f64::MAX, f64::min),
                rate_ops_max: rates.fold(f64::MIN, f64::max),
                p99_latency_ns_min: p99s.clone().min().unwrap_or(0),
                p99_latency_ns_max: p99s.max().unwrap_or(0),
            }
        });
        let groups = point_groups(&self.batches);
        let uncertainty = groups
            .as_ref()
            .and_then(|(from, g)| Uncertainty::of_groups(*from, g));
        let point = TargetPoint {
            uncertainty,
            target: self.target,
            target_type: self.target_type,
            client: self.client,
            rate_ops,
            rate_bytes,
            mean_latency_ns: service.mean_ns,
            p99_latency_ns: service.p99_ns,
            ops: self.ops,
            bytes: self.bytes,
            errors: self.errors,
            measured_seconds: secs,
            service_latency: service,
            intended_latency: intended,
            latency_from: from,
            latency_note: note,
            repetitions,
            run_indexes: self.run_indexes,
            spread,
            incomplete: self.incomplete,
            target_position: self.target_position,
            workload: self.workload,
            config: self.config,
        };
        (point, Measured { histogram, groups })
    }
}

/// A target's batches in one run: its kinds' batches added, batch by batch.
fn target_batches(batches: &uncertainty::Batches, t: &TargetResult) -> Vec<uncertainty::Group> {
    let mut out: Vec<uncertainty::Group> = Vec::new();
    for op in t.kinds.keys() {
        let Some(kind) = batches.get(&hlog_tag(&t.name, op)) else {
            continue;
        };
        out.resize(out.len().max(kind.len()), uncertainty::Group::default());
        for (sum, b) in out.iter_mut().zip(kind) {
            sum.add(b);
        }
    }
    out
}

/// What a target point keeps of its measurements for the systems it makes up.
pub struct Measured {
    /// Its service-latency histogram, all repetitions added (None: not read).
    pub histogram: Option<Histogram<u64>>,
    /// The groups its interval comes from.
    pub groups: Option<(uncertainty::GroupsFrom, Vec<uncertainty::Group>)>,
}

/// A point's groups: its repetitions when it has two or more (each repetition's batches
/// added into one group), else its one run's batches. None when some repetition has no
/// batches.
fn point_groups(
    reps: &[Vec<uncertainty::Group>],
) -> Option<(uncertainty::GroupsFrom, Vec<uncertainty::Group>)> {
    use uncertainty::{Group, GroupsFrom};
    if reps.iter().any(Vec::is_empty) {
        return None;
    }
    match reps {
        [] => None,
        [one] => Some((GroupsFrom::Batches, one.clone())),
        _ => {
            let groups: Vec<Group> = reps
                .iter()
                .map(|batches| {
                    let mut g = Group::default();
                    batches.iter().for_each(|b| g.add(b));
                    g
                })
                .collect();
            Some((GroupsFrom::Repetitions, groups))
        }
    }
}

/// The fallback when histograms are missing: each percentile the worst repetition's, the mean
/// weighted by operations, the count added.
fn worst_of(
    reps: &[(u64, LatencySummary, Option<LatencySummary>)],
) -> (LatencySummary, Option<LatencySummary>) {
    let worst = |ls: Vec<(u64, &LatencySummary)>| -> LatencySummary {
        let ops: u64 = ls.iter().map(|l| l.0).sum();
        let max = |f: fn(&LatencySummary) -> u64| ls.iter().map(|l| f(l.1)).max().unwrap_or(0);
        LatencySummary {
            count: ls.iter().map(|l| l.1.count).sum(),
            min_ns: ls.iter().map(|l| l.1.min_ns).min().unwrap_or(0),
            mean_ns: if ops > 0 {
                ls.iter().map(|l| l.1.mean_ns * l.0 as f64).sum::<f64>() / ops as f64
            } else {
                0.0
            },
            p50_ns: max(|l| l.p50_ns),
            p90_ns: max(|l| l.p90_ns),
            p95_ns: max(|l| l.p95_ns),
            p99_ns: max(|l| l.p99_ns),
            p99_9_ns: max(|l| l.p99_9_ns),
            p99_99_ns: max(|l| l.p99_99_ns),
            max_ns: max(|l| l.max_ns),
        }
    };
    let service = worst(reps.iter().map(|r| (r.0, &r.1)).collect());
    let intended: Vec<(u64, &LatencySummary)> = reps
        .iter()
        .filter_map(|r| r.2.as_ref().map(|i| (r.0, i)))
        .collect();
    let intended = (!intended.is_empty()).then(|| worst(intended));
    (service, intended)
}

/// Every step of the given runs (grouped by study and step, in run order), its points (in
/// the order the study ran them) with each target's repetitions combined, and the call-outs
/// of steps with two targets or more.
pub fn compare_all(runs: &[RunFigures]) -> Vec<StepComparison> {
    // (study, step) -> parameters -> accumulators per target.
    type Points = Vec<(BTreeMap<String, String>, Vec<Acc>)>;
    let mut steps: Vec<((String, String), Points)> = Vec::new();
    // Steps with a rate schedule: the schedule set each target's rate, so comparing targets
    // says nothing of them (no call-out).
    let mut scheduled: Vec<(String, String)> = Vec::new();
    for r in runs {
        let s = r.summary;
        let key = (s.study.clone(), s.step.clone());
        // Likewise a run whose targets ran different workloads (`target-workloads`): a
        // reader beside a writer is not a comparison of the targets.
        let mixed = s
            .targets
            .iter()
            .any(|t| t.workload != s.targets[0].workload);
        if (s.schedule.is_some() || mixed) && !scheduled.contains(&key) {
            scheduled.push(key.clone());
        }
        let si = match steps.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                steps.push((key, Vec::new()));
                steps.len() - 1
            }
        };
        let points = &mut steps[si].1;
        let pi = match points.iter().position(|(p, _)| *p == s.parameters) {
            Some(i) => i,
            None => {
                points.push((s.parameters.clone(), Vec::new()));
                points.len() - 1
            }
        };
        for (position, t) in s.targets.iter().enumerate() {
            let accs = &mut points[pi].1;
            let ai = match accs.iter().position(|a| a.target == t.name) {
                Some(i) => i,
                None => {
                    accs.push(Acc {
                        target: t.name.clone(),
                        target_type: t.target_type.clone(),
                        client: t.client.clone(),
                        target_position: position,
                        workload: workload_json(r.plan, position).cloned().or_else(|| {
                            Some(serde_json::json!({
                                "workload": t.workload, "threads": t.threads,
                                "queue-depth": t.queue_depth, "block-bytes": t.block_bytes
                            }))
                        }),
                        config: target_config_json(r.plan, position).cloned(),
                        ops: 0,
                        bytes: 0,
                        errors: 0,
                        seconds: 0.0,
                        run_indexes: Vec::new(),
                        incomplete: false,
                        per_rep: Vec::new(),
                        merged: Err(String::new()),
                        summaries: Vec::new(),
                        batches: Vec::new(),
                    });
                    accs.len() - 1
                }
            };
            accs[ai].add(s, t, r);
        }
    }
    let servers = file_servers(runs);
    let name = |k: &systems::SystemKey| systems::system_name(k, &servers);
    steps
        .into_iter()
        .map(|((study, step), points)| {
            let points: Vec<Point> = points
                .into_iter()
                .map(|(parameters, accs)| {
                    let (targets, measured): (Vec<TargetPoint>, Vec<_>) =
                        accs.into_iter().map(Acc::finish).unzip();
                    Point {
                        systems: systems::of_targets(&targets, &measured, &name),
                        parameters,
                        targets,
                    }
                })
                .collect();
            let (largest_ops_ratio, largest_p99_improvement) =
                if scheduled.contains(&(study.clone(), step.clone())) {
                    (None, None)
                } else {
                    callouts::of_points(&points, reference_of(runs, &study, &step))
                };
            StepComparison {
                study,
                step,
                points,
                largest_ops_ratio,
                largest_p99_improvement,
            }
        })
        .collect()
}

/// The study's `reference-target`, from the first stored plan of the step's runs that names
/// one.
fn reference_of<'a>(runs: &'a [RunFigures], study: &str, step: &str) -> Option<&'a str> {
    runs.iter()
        .filter(|r| r.summary.study == study && r.summary.step == step)
        .find_map(|r| r.plan?.get("reference-target")?.as_str())
}

/// The file servers of the runs' targets (each once): what their names tell apart.
fn file_servers(runs: &[RunFigures]) -> Vec<systems::SystemKey> {
    let mut keys: Vec<systems::SystemKey> = Vec::new();
    for r in runs {
        for (i, t) in r.summary.targets.iter().enumerate() {
            let config = target_config_json(r.plan, i);
            if let Some(k) = systems::file_server_key(&t.target_type, config)
                && !keys.contains(&k)
            {
                keys.push(k);
            }
        }
    }
    keys
}

/// The steps that ran on two or more targets (what `comparison.json` holds).
pub fn compare(study: &str, runs: &[RunFigures]) -> Comparison {
    shared_steps(study, compare_all(runs))
}

fn shared_steps(study: &str, steps: Vec<StepComparison>) -> Comparison {
    Comparison {
        study: study.to_string(),
        steps: steps
            .into_iter()
            .filter(|s| s.points.iter().any(|p| p.targets.len() >= 2))
            .collect(),
    }
}

/// [`compare`] of stored runs.
pub fn compare_stored(study: &str, runs: &[StoredRun]) -> Comparison {
    let figures: Vec<RunFigures> = runs.iter().map(RunFigures::of_stored).collect();
    compare(study, &figures)
}

/// [`compare_all`] of a study's runs as they finish: the summaries in hand, the histograms
/// and timelines read from their folders (`run-NNN` under the study folder).
pub fn compare_all_in_folder(study_folder: &Path, summaries: &[RunSummary]) -> Vec<StepComparison> {
    let folder_of = |s: &RunSummary| study_folder.join(format!("run-{:03}", s.run_index));
    // Each run's stored plan gives its workloads and target configurations.
    let plans: Vec<Option<serde_json::Value>> = summaries
        .iter()
        .map(|s| {
            let text = std::fs::read_to_string(folder_of(s).join("plan.json")).ok()?;
            serde_json::from_str(&text).ok()
        })
        .collect();
    let figures: Vec<RunFigures> = summaries
        .iter()
        .zip(&plans)
        .map(|(s, plan)| {
            let folder = folder_of(s);
            let timeline = std::fs::read_to_string(folder.join("timeline.csv"))
                .map(|t| crate::timeline::parse_timeline(&t))
                .map_err(|e| format!("{}: {e}", folder.join("timeline.csv").display()));
            let (histograms, batches) = measured(s, |f| {
                let rows = timeline?.rows;
                histograms::read_each_measured_interval(&folder, &rows, f)
            });
            RunFigures {
                summary: s,
                histograms,
                plan: plan.as_ref(),
                batches,
            }
        })
        .collect();
    compare_all(&figures)
}

/// [`compare`] of a study's runs as they finish (see [`compare_all_in_folder`]).
pub fn compare_in_folder(study: &str, study_folder: &Path, summaries: &[RunSummary]) -> Comparison {
    shared_steps(study, compare_all_in_folder(study_folder, summaries))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fixtures::{figures, summary};
    use crate::histograms::tests::log_of;

    /// Each run's figures from its interval log (`logs[i]` is run i's), without a plan.
    pub(crate) fn figures_of<'a>(runs: &'a [RunSummary], logs: &[Vec<u8>]) -> Vec<RunFigures<'a>> {
        runs.iter()
            .zip(logs)
            .map(|(s, log)| {
                let (histograms, batches) = measured(s, |f| {
                    crate::histograms::each_measured_interval(log, &[], f)
                });
                RunFigures {
                    summary: s,
                    histograms,
                    plan: None,
                    batches,
                }
            })
            .collect()
    }

    /// The brief's own figures: readrandom at 64 threads, 616,344 vs 388,751 ops/s (59%), and
    /// p99 0.24 ms vs 0.52 ms (54% better).
    #[test]
    fn reproduces_the_rocksdb_briefs_callouts() {
        let rows = [
            ("readrandom", "32", "micron", 500_000.0, 240_000),
            ("readrandom", "32", "competitor-a", 400_000.0, 300_000),
            ("readrandom", "32", "competitor-b", 450_000.0, 280_000),
            ("readrandom", "64", "micron", 616_344.0, 240_000),
            ("readrandom", "64", "competitor-a", 388_751.0, 520_000),
            ("readrandom", "64", "competitor-b", 559_924.0, 300_000),
        ];
        let runs: Vec<RunSummary> = rows
            .iter()
            .enumerate()
            .map(|(i, (step, threads, target, rate, p99))| {
                summary(
                    i + 1,
                    step,
                    &[("threads", threads)],
                    &[(target, *rate, *p99)],
                )
            })
            .collect();
        let c = compare("s", &figures(&runs));
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
        assert!(p.text.contains("p99 54% lower"), "{}", p.text);
        let micron = &s.points[1].targets[0];
        assert_eq!(
            (micron.rate_ops, micron.latency_from),
            (616_344.0, LatencyFrom::RunSummary)
        );
    }

    #[test]
    fn single_target_steps_are_not_compared() {
        let runs = [summary(1, "fill", &[("threads", "1")], &[("a", 10.0, 5)])];
        assert!(compare("s", &figures(&runs)).steps.is_empty());
        assert_eq!(compare_all(&figures(&runs)).len(), 1);
    }

    /// Two repetitions with very different latency distributions: the point's p99 is the p99
    /// of the merged histogram, neither the mean nor the larger of the two p99s; the spread
    /// keeps each repetition's own figures.
    #[test]
    fn repetitions_merge_histograms_and_keep_their_spread() {
        // Repetition 1: 1000 operations at 100 us. Repetition 2: 980 at 100 us and 20 at
        // 10 ms: its own p99 is 10 ms, the merged p99 (rank 1980 of 2000) is 100 us.
        let reps: [&[(u64, u64)]; 2] = [&[(100_000, 1000)], &[(100_000, 980), (10_000_000, 20)]];
        let mut runs = Vec::new();
        let mut logs = Vec::new();
        for (i, values) in reps.iter().enumerate() {
            let mut h = storlab_record::new_histogram::<u64>();
            for (v, n) in *values {
                h.record_n(*v, *n).unwrap();
            }
            let mut s = summary(i + 1, "r", &[("threads", "8")], &[("a", 0.0, 0)]);
            s.measured_seconds = if i == 0 { 1.0 } else { 2.0 };
            s.repetition = i as u32 + 1;
            let t = &mut s.targets[0];
            t.ops = h.len();
            t.rate_ops = h.len() as f64 / s.measured_seconds;
            t.service_latency = LatencySummary::from_histogram(&h);
            t.kinds.insert(
                "read".into(),
                crate::summary::KindResult {
                    ops: h.len(),
                    ..Default::default()
                },
            );
            runs.push(s);
            logs.push(log_of(&[(0, "a.read", values)]));
        }
        assert_eq!(runs[0].targets[0].service_latency.p99_ns, 100_031);
        assert!(runs[1].targets[0].service_latency.p99_ns >= 10_000_000);
        let figures = figures_of(&runs, &logs);
        let steps = compare_all(&figures);
        let t = &steps[0].points[0].targets[0];
        assert_eq!(t.latency_from, LatencyFrom::MergedHistograms);
        assert_eq!(t.repetitions, 2);
        assert_eq!(t.ops, 2000);
        assert_eq!(t.rate_ops, 2000.0 / 3.0, "all operations over all time");
        let p99s = [
            runs[0].targets[0].service_latency.p99_ns,
            runs[1].targets[0].service_latency.p99_ns,
        ];
        assert_eq!(t.p99_latency_ns, 100_031, "the merged histogram's p99");
        assert_ne!(t.p99_latency_ns, (p99s[0] + p99s[1]) / 2, "not the mean");
        assert_ne!(t.p99_latency_ns, p99s[1], "not the worst");
        let spread = t.spread.as_ref().unwrap();
        assert_eq!((spread.rate_ops_min, spread.rate_ops_max), (500.0, 1000.0));
        assert_eq!(
            (spread.p99_latency_ns_min, spread.p99_latency_ns_max),
            (p99s[0], p99s[1])
        );
        // Without histograms the fallback is said, and is the worst repetition, not a mean.
        let steps = compare_all(&super::tests::figures(&runs));
        let t = &steps[0].points[0].targets[0];
        assert_eq!(t.latency_from, LatencyFrom::WorstRepetition);
        assert_eq!(t.p99_latency_ns, p99s[1]);
        assert!(t.latency_note.as_deref().unwrap().contains("not stored"));
    }

    /// A run of ten 1-second intervals: its point's interval comes from ten batches; two
    /// repetitions of it: from the two repetitions. A run without histograms has none.
    #[test]
    fn a_points_uncertainty_comes_from_its_batches_or_its_repetitions() {
        let log_of_run = |slow: u64| {
            let per_second: Vec<Vec<(u64, u64)>> = (0..10)
                .map(|i| vec![(100_000 + i * 1_000, 1000 + i * 10), (slow, 10)])
                .collect();
            let intervals: Vec<_> = per_second
                .iter()
                .enumerate()
                .map(|(i, v)| (i as i64, "a.read", v.as_slice()))
                .collect();
            log_of(&intervals)
        };
        let run = |i: usize| {
            let mut s = summary(i, "r", &[], &[("a", 1000.0, 100_000)]);
            s.measured_seconds = 10.0;
            s.repetition = i as u32;
            s.targets[0].kinds.insert(
                "read".into(),
                crate::summary::KindResult {
                    ops: 10_000,
                    ..Default::default()
                },
            );
            s
        };
        let one = [run(1)];
        let logs = [log_of_run(5_000_000)];
        let steps = compare_all(&figures_of(&one, &logs));
        let u = steps[0].points[0].targets[0].uncertainty.as_ref().unwrap();
        assert_eq!((u.from, u.groups), (uncertainty::GroupsFrom::Batches, 10));
        assert!(u.spread(uncertainty::Figure::RateOps).unwrap() > 0.0);
        let two = [run(1), run(2)];
        let logs = [log_of_run(5_000_000), log_of_run(9_000_000)];
        let steps = compare_all(&figures_of(&two, &logs));
        let t = &steps[0].points[0].targets[0];
        let u = t.uncertainty.as_ref().unwrap();
        assert_eq!(
            (u.from, u.groups),
            (uncertainty::GroupsFrom::Repetitions, 2)
        );
        // Same rates, different tails: no spread of ops/s, a spread of p99.9.
        assert_eq!(u.spread(uncertainty::Figure::RateOps), Some(0.0));
        assert!(u.spread(uncertainty::Figure::P999Latency).unwrap() > 0.1);
        let interval = u
            .interval(
                uncertainty::Figure::P999Latency,
                t.service_latency.p99_9_ns as f64,
                0.95,
            )
            .unwrap();
        assert!(interval.low < interval.value && interval.value < interval.high);
        let steps = compare_all(&super::tests::figures(&two));
        assert!(steps[0].points[0].targets[0].uncertainty.is_none());
    }
}
