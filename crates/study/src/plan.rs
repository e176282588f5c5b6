//! The validated plan: every run of a study expanded (steps x sweep points x repetitions), each
//! with its targets, workload values and bounds. Nothing runs until a study is a plan.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use storlab_model::units::Dur;
use storlab_targets::TargetConfig;
use storlab_workload::Workload;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Plan {
    pub study: String,
    pub description: Option<String>,
    pub source_path: Option<PathBuf>,
    /// The study file as given.
    #[serde(skip)]
    pub source_text: String,
    pub runs: Vec<RunPlan>,
    /// The array's geometry (`[raid]`), for the efficiency table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid: Option<storlab_model::raid::Geometry>,
    /// The brief's published figures (`baseline = "FILE"`), for the report to put beside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<storlab_model::baseline::Baseline>,
    /// The target call-outs set against each other target (`reference-target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_target: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunPlan {
    /// 1-based position in the study.
    pub index: usize,
    pub step: String,
    pub repetition: u32,
    /// The sweep point: parameter to value, as written in the study.
    pub parameters: BTreeMap<String, String>,
    pub warmup: Dur,
    pub duration: Option<Dur>,
    /// The step's `quick-duration`: its measurement under `--quick` (quick mode's own when
    /// None).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick_duration: Option<Dur>,
    /// Measured operations per target (split among its threads).
    pub ops: Option<u64>,
    pub stop_on_error: bool,
    /// Write back and drop the page cache before the run (needs root; recorded as an event).
    pub drop_caches: bool,
    /// A distributed run (under mpirun) stops every rank when the first has finished its
    /// operations (IOR's stonewall); `storlab run --stonewall` sets it on every run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stonewall: bool,
    /// Events run during the run (`[[steps.events]]`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<super::events::EventPlan>,
    /// Length of one timeline interval.
    pub interval: Dur,
    /// The step's rate schedule (`[steps.schedule]`): tenant groups and their shares per phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<super::schedule::Schedule>,
    /// Stop as soon as steady state is reached (`steady-state`); `duration` is then the
    /// longest the run lasts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<super::steady::SteadyPlan>,
    /// The study's `reference-target`, in every run (a step's targets usually run apart): the
    /// target its call-outs set against each other (a brief's product against each competitor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_target: Option<String>,
    /// Targets driven at the same time in this run.
    pub targets: Vec<RunTarget>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunTarget {
    pub name: String,
    pub config: TargetConfig,
    /// The client host whose connections the target uses (IOmeter's manager): the target's
    /// `client`, by default this machine's host name.
    pub client: String,
    /// The network namespace its client's threads run in (`[clients.NAME] netns`): prepare,
    /// every worker's session and the verify pass enter it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<PathBuf>,
    /// Where its workers run in a distributed run (`[clients.NAME] rank` or `host`); by
    /// default split evenly over every rank.
    #[serde(skip_serializing_if = "super::clients::Pin::is_none")]
    pub pin: super::clients::Pin,
    pub workload_name: String,
    pub workload: Workload,
    /// This run's seed ([`Workload::run_seed`]): thread i draws from
    /// [`storlab_workload::thread_seed`]`(seed, i)`, readwhilewriting's writer from
    /// [`storlab_workload::writer_seed`]`(seed)`.
    pub seed: u64,
}

impl Plan {
    /// Every run carries the study's `reference-target`: the call-outs are computed from the
    /// stored runs alone.
    pub(crate) fn name_the_reference(&mut self) {
        for run in &mut self.runs {
            run.reference_target.clone_from(&self.reference_target);
        }
    }
}

impl RunPlan {
    /// A one-line description: step, targets and sweep point.
    pub fn label(&self) -> String {
        let targets: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        let mut s = format!("{} on {}", self.step, targets.join("+"));
        if !self.parameters.is_empty() {
            let p: Vec<String> = self
                .parameters
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            s.push_str(&format!(" [{}]", p.join(" ")));
        }
        if self.repetition > 1 {
            s.push_str(&format!(" (repetition {})", self.repetition));
        }
        s
    }

    /// Expected length, for the ETA: warm-up plus duration plus the longest start delay
    /// (op-bounded runs: unknown).
    pub fn expected_seconds(&self) -> Option<f64> {
        self.measured_length()
            .map(|d| (d + self.warmup.0).as_secs_f64())
    }

    /// How long a time-bounded run measures: its duration after the longest start delay of
    /// its targets' workloads (`start-delay`: a delayed target measures its whole duration
    /// after its delay). None: bounded by operations.
    pub fn measured_length(&self) -> Option<std::time::Duration> {
        let delay = self
            .targets
            .iter()
            .map(|t| t.workload.start_delay())
            .max()
            .unwrap_or_default();
        self.duration.map(|d| d.0 + delay)
    }
}

impl Plan {
    /// Seconds the whole plan is expected to take, if every run is bounded by time.
    pub fn expected_seconds(&self) -> Option<f64> {
        self.runs.iter().map(|r| r.expected_seconds()).sum()
    }
}
