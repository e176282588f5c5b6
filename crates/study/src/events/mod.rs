//! Events in a step (`[[steps.events]]`): commands run, processes started, signalled and
//! waited for at a time from the start of measurement, after a number of operations, before
//! the step's targets are prepared, or after its workers have stopped, and commands sampling
//! the system under test through the whole step (`sample`). This file validates
//! them into the plan's [`EventPlan`]s, every problem with file, line and key; `run::events`
//! runs them.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

pub use super::signal::Signal;
use super::{Source, StudyError};
use storlab_model::units::Dur;

mod reader;
use reader::EventReader;

/// Default time an `exec` or `wait-for` event may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time between two tries of a `wait-for` command.
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);
/// Default window before an event whose mean throughput is the baseline of its recovery.
pub const DEFAULT_BASELINE: Duration = Duration::from_secs(10);
/// Default time throughput must stay back near the baseline to count as recovered.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(3);
/// Default share of the baseline below which throughput has not recovered.
pub const DEFAULT_RECOVERED_WITHIN: f64 = 0.05;

/// When an event runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// Before the step's targets are prepared (a server the step's workload needs).
    BeforeStep,
    /// At this time from the start of measurement.
    At(Dur),
    /// Once the step's workers (all of them) have completed this many measured operations.
    AfterOps(u64),
    /// Once the step's measurement has ended and its workers have stopped (and what they
    /// wrote was read back), before the processes its events started are stopped and before
    /// the next step.
    AfterStep,
    /// Through the whole step: from the start of its load (the warm-up's, else the
    /// measurement's) until the step ends (after any `outlive-step` wait, before its
    /// `after-step` events). A `sample` event's, which takes no trigger key.
    WholeStep,
}

impl Trigger {
    /// The event runs while the workers run (`at`, `after-ops`), on the events' thread.
    pub fn in_measurement(&self) -> bool {
        matches!(self, Trigger::At(_) | Trigger::AfterOps(_))
    }
}

/// A process an event signals: from a pid file, or started by an earlier `start` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessRef {
    PidFile(PathBuf),
    /// The `name` of a `start` event.
    Process(String),
}

/// What an event does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// Runs a command (an argv, no shell) to its end, at most `timeout`.
    Exec { command: Vec<String>, timeout: Dur },
    /// Starts a command in the background, known to the study by the event's name.
    Start { command: Vec<String>, keep: bool },
    /// Sends a signal.
    Kill { process: ProcessRef, signal: Signal },
    /// Sends SIGSTOP.
    Stop { process: ProcessRef },
    /// Sends SIGCONT.
    Cont { process: ProcessRef },
    /// Runs a command every `poll` until it exits 0, at most `timeout`; its duration is the
    /// event's result. With `outlive-step`, a wait still going when the step's load ends goes
    /// on (up to its timeout) instead of being cut off: the step ends when it does, and its
    /// result says it finished after the load.
    WaitFor {
        command: Vec<String>,
        poll: Dur,
        timeout: Dur,
        #[serde(rename = "outlive-step")]
        outlive_step: bool,
    },
    /// Powers a node off abruptly: every interface of network namespace `netns` set down, then
    /// SIGKILL to the processes of `pid-files` and to every process in `netns`. With
    /// `netns-command`, the namespace is the first line that command prints when the event
    /// fires (the node leading a cluster at that moment: `cluster.sh leader-netns DIR`).
    PowerOff {
        netns: Option<String>,
        netns_command: Vec<String>,
        pid_files: Vec<PathBuf>,
    },
    /// Runs the verify pass of a saved verify state (`verify-state` of an earlier run, as
    /// `storlab verify`): fails when a block is damaged.
    Verify { state: std::path::PathBuf },
    /// Runs a command through the whole step and reads what it prints, line by line: the
    /// series it samples (`sample SERIES VALUE UNIT`) and what the system did by itself
    /// (`span START END NAME ...`). See docs/events.md.
    Sample { command: Vec<String> },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Exec { .. } => "exec",
            Action::Start { .. } => "start",
            Action::Kill { .. } => "kill",
            Action::Stop { .. } => "stop",
            Action::Cont { .. } => "cont",
            Action::WaitFor { .. } => "wait-for",
            Action::Verify { .. } => "verify",
            Action::PowerOff { .. } => "power-off",
            Action::Sample { .. } => "sample",
        }
    }
}

/// What a failing event does (`on-failure`): how far its failure reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Stop the step (its measurement ends, its results are kept with the failure recorded)
    /// and go on with the study's next step; the study exits non-zero at its end. The default,
    /// except for `after-step` events (whose step is over): theirs is `continue`.
    StopStep,
    /// Stop the step and the rest of the study with the event's error. `stop`, the spelling
    /// before `stop-step` existed, means this, so older study files keep their meaning.
    #[serde(alias = "stop")]
    StopStudy,
    /// Record the failure (a warning) and go on.
    Continue,
}

impl OnFailure {
    /// Reads an `on-failure` value; `stop` is `stop-study`.
    pub fn parse(text: &str) -> Option<OnFailure> {
        match text {
            "stop-step" => Some(OnFailure::StopStep),
            "stop-study" | "stop" => Some(OnFailure::StopStudy),
            "continue" => Some(OnFailure::Continue),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OnFailure::StopStep => "stop-step",
            OnFailure::StopStudy => "stop-study",
            OnFailure::Continue => "continue",
        }
    }
}

/// How the recovery after an event is measured (see `results::recovery`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RecoveryPlan {
    /// Window before the event whose mean ops/s is the baseline.
    pub baseline: Dur,
    /// Throughput is back once it is at least (1 - this) x the baseline...
    pub recovered_within: f64,
    /// ...and stays there this long.
    pub settle: Dur,
}

/// One validated event of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct EventPlan {
    /// The event's `name`, or `ACTION-N` (N: its position in the step).
    pub name: String,
    pub trigger: Trigger,
    #[serde(flatten)]
    pub action: Action,
    pub on_failure: OnFailure,
    /// None: no recovery metrics for this event.
    pub recovery: Option<RecoveryPlan>,
}

const KEYS: [&str; 23] = [
    "name",
    "action",
    "at",
    "after-ops",
    "before-step",
    "after-step",
    "command",
    "timeout",
    "poll",
    "keep",
    "signal",
    "pid-file",
    "process",
    "state",
    "netns",
    "netns-command",
    "pid-files",
    "on-failure",
    "recovery",
    "baseline",
    "recovered-within",
    "settle",
    "outlive-step",
];

const ACTIONS: [&str; 9] = [
    "exec",
    "start",
    "kill",
    "stop",
    "cont",
    "wait-for",
    "verify",
    "power-off",
    "sample",
];

/// The keys an action takes besides the common ones.
fn action_keys(action: &str) -> &'static [&'static str] {
    match action {
        "exec" => &["command", "timeout"],
        "sample" => &["command"],
        "start" => &["command", "keep"],
        "kill" => &["signal", "pid-file", "process"],
        "stop" | "cont" => &["pid-file", "process"],
        "wait-for" => &["command", "poll", "timeout", "outlive-step"],
        "verify" => &["state"],
        "power-off" => &["netns", "netns-command", "pid-files"],
        _ => &[],
    }
}

/// Processes that `start` events of earlier steps left running (`keep = true`), by name.
#[derive(Default)]
pub(super) struct KeptProcesses(pub Vec<String>);

/// Reads the step's event tables. `duration` and `ops` are the step's bounds (an `at` past
/// the duration can never run); `targets` the number of targets it drives.
pub(super) fn parse_events(
    src: &Source,
    step_key: &str,
    tables: &[Spanned<toml::Table>],
    duration: Option<Dur>,
    kept: &mut KeptProcesses,
    errors: &mut Vec<StudyError>,
) -> Vec<EventPlan> {
    let mut out: Vec<EventPlan> = Vec::new();
    let mut started_here: Vec<(String, bool)> = Vec::new();
    let (mut timed_seen, mut after_seen) = (false, false);
    for (i, table) in tables.iter().enumerate() {
        let key = format!("{step_key}.events[{}]", i + 1);
        let span = table.span();
        let before = errors.len();
        let mut e = EventReader {
            src,
            key: &key,
            span: &span,
            table: table.get_ref(),
            errors,
        };
        let Some(event) = e.event(i + 1, duration, kept, &started_here) else {
            continue;
        };
        if errors.len() > before {
            continue;
        }
        if out.iter().any(|o| o.name == event.name) {
            errors.push(src.error(
                src.locate_in(&span, "name"),
                format!("{key}.name"),
                format!("two events of this step are named `{}`", event.name),
            ));
            continue;
        }
        match &event.trigger {
            // Runs beside the others, whatever their order.
            Trigger::WholeStep => {}
            Trigger::BeforeStep if timed_seen => errors.push(src.error(
                src.locate_in(&span, "before-step"),
                format!("{key}.before-step"),
                "events run in the order written: a `before-step` event must come before the step's timed (`at`), counted (`after-ops`) and `after-step` events",
            )),
            Trigger::BeforeStep => {}
            Trigger::AfterStep => (timed_seen, after_seen) = (true, true),
            t if after_seen => {
                let k = if matches!(t, Trigger::At(_)) { "at" } else { "after-ops" };
                errors.push(src.error(
                    src.locate_in(&span, k),
                    format!("{key}.{k}"),
                    "events run in the order written: the step's `after-step` events come after its timed (`at`) and counted (`after-ops`) events",
                ));
            }
            _ => timed_seen = true,
        }
        if let Action::Start { keep, .. } = event.action {
            started_here.push((event.name.clone(), keep));
        }
        out.push(event);
    }
    for (name, keep) in started_here {
        if keep && !kept.0.contains(&name) {
            kept.0.push(name);
        }
    }
    out
}

/// Scales the times of a step's events for a run shortened by `factor` (quick mode): `at`,
/// the recovery windows. Timeouts and poll periods stay as written.
pub fn scale_events(events: &mut [EventPlan], factor: f64) {
    let scale = |d: &mut Dur| *d = Dur(d.0.mul_f64(factor));
    for e in events {
        if let Trigger::At(at) = &mut e.trigger {
            scale(at);
        }
        if let Some(r) = &mut e.recovery {
            scale(&mut r.baseline);
            scale(&mut r.settle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_scaling_shrinks_times_not_timeouts() {
        let mut e = vec![EventPlan {
            name: "x".into(),
            trigger: Trigger::At(Dur(Duration::from_secs(10))),
            action: Action::Exec {
                command: vec!["true".into()],
                timeout: Dur(Duration::from_secs(30)),
            },
            on_failure: OnFailure::StopStudy,
            recovery: Some(RecoveryPlan {
                baseline: Dur(Duration::from_secs(10)),
                recovered_within: 0.05,
                settle: Dur(Duration::from_secs(3)),
            }),
        }];
        scale_events(&mut e, 0.1);
        assert_eq!(e[0].trigger, Trigger::At(Dur(Duration::from_secs(1))));
        let r = e[0].recovery.unwrap();
        assert_eq!(r.settle.0, Duration::from_millis(300));
        assert!(
            matches!(&e[0].action, Action::Exec { timeout, .. } if timeout.0 == Duration::from_secs(30))
        );
    }
}
