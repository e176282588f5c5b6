//! What a training run measured (a `training` workload, MLPerf Storage's model run the way
//! the DLIO benchmark runs it): per emulated accelerator and epoch, the steps it took, the
//! time it computed and the time it waited for data; the accelerator utilization (AU) they
//! give and the rule's threshold. Plain data: the engine fills it, summary.json stores it,
//! the reports read it.

use serde::{Deserialize, Serialize};

/// One epoch of one emulated accelerator, as the accelerator saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct EpochSteps {
    /// The epoch, counted from 1.
    pub epoch: u32,
    /// Steps taken (batches computed).
    pub steps: u64,
    /// Steps counted in the utilization: all but the epoch's first (DLIO's
    /// `metric_exclude_start_steps` = 1).
    pub counted_steps: u64,
    /// From the start of the second step's data wait to the end of the last step's compute,
    /// ns: the time the counted steps took.
    pub counted_ns: u64,
    /// Emulated compute of the counted steps, ns.
    pub compute_ns: u64,
    /// Time the accelerator sat idle waiting for a batch in the counted steps, ns.
    pub wait_ns: u64,
    /// The longest single wait of a counted step, ns.
    pub max_wait_ns: u64,
}

impl EpochSteps {
    /// compute / time of the counted steps, percent (0 when none were counted).
    pub fn au_percent(&self) -> f64 {
        if self.counted_ns == 0 {
            return 0.0;
        }
        100.0 * self.compute_ns as f64 / self.counted_ns as f64
    }

    /// Samples per second over the counted steps.
    pub fn samples_per_second(&self, batch: u32) -> f64 {
        if self.counted_ns == 0 {
            return 0.0;
        }
        (self.counted_steps * u64::from(batch)) as f64 / (self.counted_ns as f64 / 1e9)
    }
}

/// What one accelerator did over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AcceleratorSteps {
    /// The accelerator, counted from 0 within its target.
    pub accelerator: u32,
    pub epochs: Vec<EpochSteps>,
    /// The run ended before the last epoch's last step (Ctrl-C, a duration, a reader's fatal
    /// error): the epochs hold what was computed.
    pub cut_short: bool,
}

/// The dataset a training run read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DatasetFacts {
    pub format: String,
    pub files: u64,
    pub samples_per_file: u32,
    /// Bytes of every file together.
    pub bytes: u64,
    /// The mean and the standard deviation of a sample's bytes on disk (framing included).
    pub sample_bytes_mean: f64,
    pub sample_bytes_stdev: f64,
    /// The files were written for this run (else found from an earlier one and checked).
    pub generated: bool,
    /// Seconds writing them took (0 when found).
    pub generation_seconds: f64,
    /// The memory the client could have cached the dataset in (rank 0's process), as the run
    /// found it; None in results from before it was recorded, or where it could not be read.
    #[serde(default)]
    pub client_memory: Option<ClientMemory>,
}

/// MLPerf Storage's rules ask for a dataset at least this many times the client's memory, so
/// that it is read from the storage and not from the page cache.
pub const DATASET_MEMORY_RULE: f64 = 5.0;

/// What bounded the memory a client could cache the dataset in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryBound {
    /// The host's memory (`MemTotal`).
    Host,
    /// A memory limit of the process's control group, lower than the host's memory: its page
    /// cache counts against it too.
    Cgroup,
}

/// The client's memory: the lower of the host's and its control groups' limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClientMemory {
    pub bytes: u64,
    pub bound: MemoryBound,
}

impl DatasetFacts {
    /// The dataset's bytes over the client's memory; None when the memory is unknown.
    pub fn memory_ratio(&self) -> Option<f64> {
        let m = self.client_memory?;
        (m.bytes > 0).then(|| self.bytes as f64 / m.bytes as f64)
    }

    /// The dataset is at least [`DATASET_MEMORY_RULE`] times the client's memory (None when
    /// the memory is unknown).
    pub fn meets_memory_rule(&self) -> Option<bool> {
        self.memory_ratio().map(|r| r >= DATASET_MEMORY_RULE)
    }
}

/// A training workload's result on one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TrainingResult {
    pub target: String,
    /// The model the configuration emulates (`unet3d`, `resnet50`, `cosmoflow`, ...).
    pub model: String,
    pub accelerators: u32,
    pub batch_size: u32,
    pub read_threads: u32,
    /// Batches each accelerator's loader may hold ready (prefetch x readers).
    pub prefetch_batches: u32,
    pub compute_ns_per_step: u64,
    /// The rule's line: a run counts when its AU is at least this, percent.
    pub au_threshold_percent: f64,
    pub dataset: DatasetFacts,
    pub per_accelerator: Vec<AcceleratorSteps>,
}

impl TrainingResult {
    /// Every (accelerator, epoch) with counted steps.
    fn counted(&self) -> impl Iterator<Item = &EpochSteps> {
        self.per_accelerator
            .iter()
            .flat_map(|a| a.epochs.iter())
            .filter(|e| e.counted_ns > 0)
    }

    /// AU as DLIO states it: the mean, over epochs and accelerators, of each one's AU,
    /// percent; and their standard deviation.
    pub fn au_percent(&self) -> (f64, f64) {
        let values: Vec<f64> = self.counted().map(EpochSteps::au_percent).collect();
        mean_sd(&values)
    }

    /// The lowest AU of any accelerator's epoch, percent (0 when none was counted).
    pub fn au_min_percent(&self) -> f64 {
        let lowest = self
            .counted()
            .map(EpochSteps::au_percent)
            .fold(f64::INFINITY, f64::min);
        if lowest.is_finite() { lowest } else { 0.0 }
    }

    /// The run meets the rule: mean AU at least the threshold, and no accelerator cut short.
    pub fn meets_au(&self) -> bool {
        let (mean, _) = self.au_percent();
        self.counted().next().is_some()
            && mean >= self.au_threshold_percent
            && !self.per_accelerator.iter().any(|a| a.cut_short)
    }

    /// Samples per second of all accelerators together: each accelerator's mean rate over its
    /// epochs, summed.
    pub fn samples_per_second(&self) -> f64 {
        self.per_accelerator
            .iter()
            .map(|a| {
                let e: Vec<f64> = a
                    .epochs
                    .iter()
                    .filter(|e| e.counted_ns > 0)
                    .map(|e| e.samples_per_second(self.batch_size))
                    .collect();
                if e.is_empty() {
                    0.0
                } else {
                    e.iter().sum::<f64>() / e.len() as f64
                }
            })
            .sum()
    }

    /// Dataset bytes per second the samples/s stand for (the mean sample's bytes).
    pub fn bytes_per_second(&self) -> f64 {
        self.samples_per_second() * self.dataset.sample_bytes_mean
    }
}

/// One checkpoint written or read: when each rank of the run started and ended it, on the
/// run's checkpoint clock (ns from its origin; the ranks start together, after a barrier).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CheckpointPass {
    /// The checkpoint, counted from 1 (DLIO's `global_epoch1_stepN`).
    pub checkpoint: u32,
    /// Per rank: (start, end) ns; a rank that did not end it has none.
    pub ranks: Vec<Option<(u64, u64)>>,
}

impl CheckpointPass {
    /// Every rank ended the pass.
    pub fn whole(&self) -> bool {
        !self.ranks.is_empty() && self.ranks.iter().all(Option::is_some)
    }

    /// The slowest rank's time, ns (MLPerf Storage's duration: the maximum across ranks);
    /// None unless every rank ended it.
    pub fn slowest_rank_ns(&self) -> Option<u64> {
        if !self.whole() {
            return None;
        }
        self.ranks.iter().flatten().map(|(s, e)| e - s).max()
    }

    /// The fastest rank's time, ns.
    pub fn fastest_rank_ns(&self) -> Option<u64> {
        if !self.whole() {
            return None;
        }
        self.ranks.iter().flatten().map(|(s, e)| e - s).min()
    }
}

/// A checkpoint workload's result on one target: the model's checkpoint as this run's ranks
/// hold it, and each checkpoint written and read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CheckpointResult {
    pub target: String,
    /// The model (`llama3-8b`, ...).
    pub model: String,
    /// Ranks (processes, emulated GPUs) that ran, and the ranks of the whole model's
    /// parallelism (tensor x pipeline x data); fewer is MLPerf Storage's subset mode.
    pub ranks: u32,
    pub world_ranks: u32,
    /// Bytes one checkpoint of this run's ranks holds (DLIO's `checkpoint_size`), and of the
    /// whole model's ranks.
    pub checkpoint_bytes: u64,
    pub world_checkpoint_bytes: u64,
    /// The model is its preset's, whose published checkpoint size applies (else smaller, as
    /// `--quick` makes it, or changed by the study).
    #[serde(default)]
    pub preset_model: bool,
    /// Files of one checkpoint (of this run's ranks).
    pub files: u64,
    pub fsync: bool,
    /// The emulated training between two checkpoints, ns.
    pub time_between_ns: u64,
    /// The largest write or read a rank issues, bytes.
    pub io_bytes: u64,
    pub writes: Vec<CheckpointPass>,
    pub reads: Vec<CheckpointPass>,
}

/// Checkpoint sizes the MLPerf Storage submission guidelines publish per model (Table 2 of
/// mlcommons/storage's Submission_guidelines.md), as written there.
pub const PUBLISHED_CHECKPOINT_SIZES: &[(&str, &str)] = &[
    ("llama3-8b", "105 GB"),
    ("llama3-70b", "912 GB"),
    ("llama3-405b", "5.29 TB"),
    ("llama3-1t", "18 TB"),
];

/// Mean and standard deviation (population, as DLIO's `np.std`) of `values`; (0, 0) for none.
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

impl CheckpointResult {
    /// Seconds of each whole pass (its slowest rank).
    pub fn seconds(passes: &[CheckpointPass]) -> Vec<f64> {
        passes
            .iter()
            .filter_map(CheckpointPass::slowest_rank_ns)
            .map(|ns| ns as f64 / 1e9)
            .collect()
    }

    /// Throughput of each whole pass, GiB/s: the checkpoint's bytes over the slowest rank's
    /// time (MLPerf Storage's lowest throughput across ranks; DLIO's "GB" are GiB).
    pub fn gib_per_second(&self, passes: &[CheckpointPass]) -> Vec<f64> {
        Self::seconds(passes)
            .into_iter()
            .filter(|s| *s > 0.0)
            .map(|s| self.checkpoint_bytes as f64 / (1u64 << 30) as f64 / s)
            .collect()
    }

    /// A pass that some rank did not end (the run was stopped, a rank failed).
    pub fn cut_short(&self) -> bool {
        self.writes.iter().chain(&self.reads).any(|p| !p.whole())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(compute: u64, counted: u64) -> EpochSteps {
        EpochSteps {
            epoch: 1,
            steps: 11,
            counted_steps: 10,
            counted_ns: counted,
            compute_ns: compute,
            wait_ns: counted - compute,
            max_wait_ns: 0,
        }
    }

    fn result(epochs: Vec<Vec<EpochSteps>>) -> TrainingResult {
        TrainingResult {
            batch_size: 4,
            au_threshold_percent: 90.0,
            per_accelerator: epochs
                .into_iter()
                .enumerate()
                .map(|(i, epochs)| AcceleratorSteps {
                    accelerator: i as u32,
                    epochs,
                    cut_short: false,
                })
                .collect(),
            ..TrainingResult::default()
        }
    }

    #[test]
    fn au_is_the_mean_of_each_accelerators_epochs_and_the_rule_reads_it() {
        let r = result(vec![
            vec![epoch(95, 100), epoch(85, 100)],
            vec![epoch(100, 100), epoch(80, 100)],
        ]);
        let (mean, sd) = r.au_percent();
        assert!((mean - 90.0).abs() < 1e-9, "{mean}");
        assert!((sd - 7.905_694).abs() < 1e-5, "{sd}");
        assert!(r.meets_au());
        assert_eq!(r.au_min_percent(), 80.0);
        let low = result(vec![vec![epoch(89, 100)]]);
        assert!(!low.meets_au());
    }

    #[test]
    fn samples_per_second_adds_the_accelerators_and_a_cut_run_fails_the_rule() {
        // 10 counted steps of 4 samples in 1 s each: 40 samples/s per accelerator.
        let mut r = result(vec![
            vec![epoch(950_000_000, 1_000_000_000)],
            vec![epoch(950_000_000, 1_000_000_000)],
        ]);
        assert!((r.samples_per_second() - 80.0).abs() < 1e-9);
        assert!(r.meets_au());
        r.per_accelerator[1].cut_short = true;
        assert!(!r.meets_au());
        assert!(!result(vec![vec![]]).meets_au(), "nothing counted");
    }
}
