//! The events of a stored run: the marks on its timeline (phase changes) and the study's
//! events with what each did. Plain data, read by the summary that holds them and by the
//! figures computed around them ([`crate::phases`], [`crate::recovery`], [`crate::schedule`]).

use serde::{Deserialize, Serialize};

/// A timed mark on the run's timeline: a phase change (`warmup-start`, `measure-start`...),
/// or an event of the study (`[[steps.events]]`), which also carries its outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Event {
    /// Seconds from the start of measurement (negative during warm-up); a study event's start.
    pub time_seconds: f64,
    /// The phase change, or the study event's action (`exec`, `start`, `kill`...).
    pub kind: String,
    pub detail: String,
    /// What a study event did; None for phase marks.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<EventOutcome>,
}

/// The kind of a `sample` event's own row: its command ran through the whole step (no phase
/// boundary, no mark on a timeline: what it read is drawn beside them).
pub const SAMPLE_KIND: &str = "sample";
/// The kind of a span a `sample` event's command reported (`span START END NAME ...`).
pub const REPORTED_KIND: &str = "reported";

impl Event {
    /// A `sample` event's own row, which spans the whole step.
    pub fn is_sample(&self) -> bool {
        self.kind == SAMPLE_KIND
    }

    /// Something the system under test did by itself from `start_ns` to `end_ns` (ns from
    /// the start of measurement), as a `sample` event's command reported it: a `reported`
    /// event, with the bytes it says it moved and their rate over its duration.
    pub fn reported(
        name: &str,
        detail: String,
        (start_ns, end_ns): (i64, i64),
        bytes: Option<u64>,
    ) -> Event {
        let outcome = EventOutcome::ran(name, EventStatus::Ok, (start_ns, end_ns));
        let rate_bytes = bytes
            .filter(|_| end_ns > start_ns)
            .map(|b| b as f64 / outcome.duration_seconds);
        Event {
            time_seconds: start_ns as f64 / 1e9,
            kind: REPORTED_KIND.to_string(),
            detail,
            outcome: Some(EventOutcome {
                bytes,
                rate_bytes,
                ..outcome
            }),
        }
    }

    /// A phase mark.
    pub fn mark(time_seconds: f64, kind: &str, detail: impl Into<String>) -> Event {
        Event {
            time_seconds,
            kind: kind.to_string(),
            detail: detail.into(),
            outcome: None,
        }
    }
}

/// How a study event ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventStatus {
    /// Done: the command exited 0, the process started, the signal was delivered.
    Ok,
    /// The command exited non-zero, could not start, the pid file was missing...
    Failed,
    /// The command ran past its `timeout` (and was killed), or `wait-for` never succeeded.
    TimedOut,
    /// The step ended before the event's time or operation count came.
    NotReached,
    /// The step ended while the event's command was running; it was killed.
    CutOff,
    /// An earlier event failed and stopped the step before this one ran.
    Skipped,
}

impl EventStatus {
    pub fn name(self) -> &'static str {
        match self {
            EventStatus::Ok => "ok",
            EventStatus::Failed => "failed",
            EventStatus::TimedOut => "timed-out",
            EventStatus::NotReached => "not-reached",
            EventStatus::CutOff => "cut-off",
            EventStatus::Skipped => "skipped",
        }
    }
}

/// What a study event did, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct EventOutcome {
    /// The event's `name`.
    pub name: String,
    pub status: EventStatus,
    /// Start and end, ns from the start of measurement (the timeline's origin; negative
    /// before it). An event that did not run has both at the end of measurement.
    pub start_ns: i64,
    pub end_ns: i64,
    /// End less start: for `wait-for`, how long until the command succeeded.
    pub duration_seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The process a `start` event started, or the one a signal went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Times a `wait-for` command ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Processes a `power-off` event sent SIGKILL to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids_killed: Option<u32>,
    /// The first bytes of the command's output (of its last try, for `wait-for`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Recovery metrics are computed around this event.
    #[serde(default)]
    pub recovery: bool,
    /// What a `verify` event's pass found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Box<storlab_verify::Verified>>,
    /// What the event's failure did or would do: `stop-step`, `stop-study` or `continue`
    /// (None in results stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<storlab_study::events::OnFailure>,
    /// What a `reported` span (a line a `sample` event's command printed) says it moved
    /// (`bytes=N`), and those bytes over its duration (none for a span of no duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bytes: Option<f64>,
}

impl EventOutcome {
    /// An event `name` that ran from `start_ns` to `end_ns` (ns from the start of
    /// measurement) and ended `status`, with nothing else said of it.
    pub fn ran(name: &str, status: EventStatus, (start_ns, end_ns): (i64, i64)) -> EventOutcome {
        EventOutcome {
            name: name.to_string(),
            status,
            start_ns,
            end_ns,
            duration_seconds: (end_ns - start_ns) as f64 / 1e9,
            exit_code: None,
            pid: None,
            attempts: None,
            pids_killed: None,
            stdout: String::new(),
            stderr: String::new(),
            recovery: false,
            verify: None,
            on_failure: None,
            bytes: None,
            rate_bytes: None,
        }
    }
}

/// What the figures computed after a run (its phases and its recovery) read of it: its events,
/// its targets' names and how long it was measured. Taken from a [`crate::summary::RunSummary`]
/// by its `outline`, so that those figures need not know the summary.
#[derive(Debug, Clone)]
pub struct RunOutline<'a> {
    pub events: &'a [Event],
    pub target_names: Vec<String>,
    pub measured_seconds: f64,
}
