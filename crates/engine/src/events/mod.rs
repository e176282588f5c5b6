//! Running a step's events (`[[steps.events]]`): those marked `before-step` in order before
//! the targets are prepared, the timed and counted ones on a thread of their own while the
//! workers run, each waiting for its time (`at`) or operation count (`after-ops`, read from
//! the workers' shared count, which they add to every few milliseconds, never per operation),
//! and those marked `after-step` in order once the workers have stopped; `sample` events run
//! their command through the whole step, each on a thread of its own (see [`sample`]). The
//! workers never wait for an event.
//!
//! Each event's start and end are read on the run's clock and stored relative to the start of
//! measurement; a failing event is recorded and, unless `on-failure = "continue"`, stops the
//! step: the workers are told to stop and the events after it are recorded as skipped. Its
//! [`Failure`] carries how far it reaches (`stop-step`: the study goes on with its next step;
//! `stop-study`: the study stops), for the run to act on.

pub mod power_off;
pub mod process;
pub mod sample;
pub mod started;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::worker::{Clock, Control};
pub use process::Processes;
use process::{Finish, run_to_end};
use storlab_results::events::{Event, EventOutcome, EventStatus};
use storlab_study::events::{Action, EventPlan, OnFailure, ProcessRef, Trigger};

/// What one event did, with its times on the run's clock.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub name: String,
    pub action: &'static str,
    pub status: EventStatus,
    /// Run clock, ns; None for an event that did not run.
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    pub exit_code: Option<i32>,
    pub pid: Option<i32>,
    pub attempts: Option<u32>,
    /// Processes a `power-off` event sent SIGKILL to.
    pub pids_killed: Option<u32>,
    pub stdout: String,
    pub stderr: String,
    pub detail: String,
    pub recovery: bool,
    /// What a `verify` event's pass found.
    pub verify: Option<Box<storlab_verify::Verified>>,
    /// What the event's failure does (the study's `on-failure`).
    pub on_failure: OnFailure,
}

/// An event that failed and stops its step.
#[derive(Debug, Clone)]
pub struct Failure {
    pub event: String,
    pub message: String,
    /// How far the failure reaches: `StopStep` or `StopStudy` (never `Continue`).
    pub scope: OnFailure,
}

/// What the events of a step see.
pub struct Context<'a> {
    pub clock: &'a Clock,
    /// The targets' workers' flags: `stop` is set when an event stops the step.
    pub control: &'a Control,
    /// Set once the targets' workers have all stopped: waiting events are not reached,
    /// running commands are cut off.
    pub step_over: &'a AtomicBool,
    /// Where started processes write their output.
    pub log_dir: PathBuf,
    pub run_index: usize,
    /// The metrics endpoint (`--metrics`): each event is marked on it as it starts.
    pub metrics: Option<&'a crate::metrics::Exporter>,
}

impl Context<'_> {
    fn over(&self) -> bool {
        self.step_over.load(Ordering::Relaxed) || self.control.interrupted.load(Ordering::Relaxed)
    }
}

fn not_run(e: &EventPlan, status: EventStatus, detail: String) -> Recorded {
    Recorded {
        name: e.name.clone(),
        action: e.action.name(),
        status,
        start_ns: None,
        end_ns: None,
        exit_code: None,
        pid: None,
        attempts: None,
        pids_killed: None,
        stdout: String::new(),
        stderr: String::new(),
        detail,
        recovery: false,
        verify: None,
        on_failure: e.on_failure,
    }
}

/// Runs the `before-step` events in order. Stops at the first failure that stops the step.
pub fn run_before(
    events: &[EventPlan],
    ctx: &Context,
    processes: &mut Processes,
) -> (Vec<Recorded>, Option<Failure>) {
    run_list(
        events.iter().filter(|e| e.trigger == Trigger::BeforeStep),
        ctx,
        processes,
        None,
    )
}

/// Runs the timed and counted events in order, each once its time or count has come;
/// `measure_start_ns` is the start of measurement on the run clock.
pub fn run_during(
    events: &[EventPlan],
    ctx: &Context,
    processes: &mut Processes,
    measure_start_ns: u64,
) -> (Vec<Recorded>, Option<Failure>) {
    run_list(
        events.iter().filter(|e| e.trigger.in_measurement()),
        ctx,
        processes,
        Some(measure_start_ns),
    )
}

/// Runs the `after-step` events in order, once the step's workers have stopped: the step
/// being over does not cut them off (only Ctrl-C does). Stops at the first failure that
/// reaches further than a warning (`on-failure = "stop-study"`).
pub fn run_after(
    events: &[EventPlan],
    ctx: &Context,
    processes: &mut Processes,
) -> (Vec<Recorded>, Option<Failure>) {
    let not_over = AtomicBool::new(false);
    let after = Context {
        clock: ctx.clock,
        control: ctx.control,
        step_over: &not_over,
        log_dir: ctx.log_dir.clone(),
        run_index: ctx.run_index,
        metrics: ctx.metrics,
    };
    run_list(
        events.iter().filter(|e| e.trigger == Trigger::AfterStep),
        &after,
        processes,
        None,
    )
}

fn run_list<'a>(
    events: impl Iterator<Item = &'a EventPlan>,
    ctx: &Context,
    processes: &mut Processes,
    measure_start_ns: Option<u64>,
) -> (Vec<Recorded>, Option<Failure>) {
    let mut out = Vec::new();
    let mut failure: Option<Failure> = None;
    for e in events {
        if let Some(f) = &failure {
            out.push(not_run(
                e,
                EventStatus::Skipped,
                format!("not run: event `{}` failed and stopped the step", f.event),
            ));
            continue;
        }
        if let Some(start) = measure_start_ns
            && !wait_for_trigger(&e.trigger, ctx, start)
        {
            out.push(not_run(
                e,
                EventStatus::NotReached,
                match &e.trigger {
                    Trigger::AfterOps(n) => format!(
                        "not run: the step ended after {} of the {n} operations it waited for",
                        ctx.control.completed_ops.load(Ordering::Relaxed)
                    ),
                    _ => "not run: the step ended before its time".to_string(),
                },
            ));
            continue;
        }
        let r = execute(e, ctx, processes);
        if r.status != EventStatus::Ok && e.on_failure != OnFailure::Continue {
            ctx.control.stop.store(true, Ordering::Relaxed);
            failure = Some(Failure {
                event: e.name.clone(),
                message: format!(
                    "event `{}` ({}) {}: {}",
                    e.name,
                    r.action,
                    r.status.name(),
                    r.detail
                ),
                scope: e.on_failure,
            });
        }
        out.push(r);
    }
    (out, failure)
}

/// Waits until the event's time or operation count has come; false if the step ended first.
fn wait_for_trigger(trigger: &Trigger, ctx: &Context, measure_start_ns: u64) -> bool {
    loop {
        if ctx.over() || ctx.control.stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = ctx.clock.now_ns();
        let wait_ns = match trigger {
            Trigger::BeforeStep | Trigger::AfterStep | Trigger::WholeStep => return true,
            Trigger::At(at) => {
                let due = measure_start_ns.saturating_add(at.0.as_nanos() as u64);
                if now >= due {
                    return true;
                }
                (due - now).min(2_000_000)
            }
            Trigger::AfterOps(n) => {
                if ctx.control.completed_ops.load(Ordering::Relaxed) >= *n {
                    return true;
                }
                1_000_000
            }
        };
        std::thread::sleep(Duration::from_nanos(wait_ns));
    }
}

/// Runs one event now.
fn execute(e: &EventPlan, ctx: &Context, processes: &mut Processes) -> Recorded {
    let mut r = not_run(e, EventStatus::Ok, String::new());
    r.recovery = e.recovery.is_some();
    r.start_ns = Some(ctx.clock.now_ns());
    if let Some(m) = ctx.metrics {
        m.mark(r.action, &e.name, std::time::SystemTime::now());
    }
    match &e.action {
        Action::Exec { command, timeout } => exec(&mut r, command, timeout, ctx),
        Action::Start { command, keep } => start(&mut r, e, command, *keep, ctx, processes),
        Action::Kill { process, signal } => {
            signal_event(&mut r, process, signal.number, signal.name, processes)
        }
        Action::Stop { process } => signal_event(&mut r, process, libc::SIGSTOP, "STOP", processes),
        Action::Cont { process } => signal_event(&mut r, process, libc::SIGCONT, "CONT", processes),
        Action::WaitFor {
            command,
            poll,
            timeout,
            outlive_step,
        } => wait_for(&mut r, command, poll.0, timeout, *outlive_step, ctx),
        Action::PowerOff {
            netns,
            netns_command,
            pid_files,
        } => power_off_event(&mut r, netns, netns_command, pid_files),
        Action::Verify { state } => verify_event(&mut r, state),
        // Not one of the events run in turn: its command runs through the whole step, on a
        // thread of its own (see `sample`).
        Action::Sample { .. } => {
            (r.status, r.detail) = (
                EventStatus::Failed,
                "a sample event runs through the whole step, on its own thread".into(),
            )
        }
    }
    r.end_ns = Some(ctx.clock.now_ns());
    r
}

/// `exec`: runs the command to its end (or its timeout, or the step's end).
fn exec(r: &mut Recorded, command: &[String], timeout: &storlab_model::units::Dur, ctx: &Context) {
    let cut_off = || ctx.over();
    let ran = run_to_end(command, timeout.0, &cut_off);
    r.exit_code = ran.exit_code();
    let shown = command.join(" ");
    (r.status, r.detail) = match &ran.finish {
        Finish::Exited(s) if s.success() => (EventStatus::Ok, format!("`{shown}`: exit code 0")),
        Finish::Exited(s) => (
            EventStatus::Failed,
            format!("`{shown}`: {}", process::describe(s)),
        ),
        Finish::TimedOut => (
            EventStatus::TimedOut,
            format!("`{shown}` ran past its timeout of {timeout} and was killed"),
        ),
        Finish::CutOff => (
            EventStatus::CutOff,
            format!("`{shown}` was still running when the step ended, and was killed"),
        ),
        Finish::NotStarted(m) => (EventStatus::Failed, m.clone()),
    };
    r.stdout = ran.stdout;
    r.stderr = ran.stderr;
}

/// `start`: starts the command as a process of the study, its output in the log folder.
fn start(
    r: &mut Recorded,
    e: &EventPlan,
    command: &[String],
    keep: bool,
    ctx: &Context,
    processes: &mut Processes,
) {
    let log = ctx
        .log_dir
        .join(format!("{}-run{:03}.log", e.name, ctx.run_index));
    match processes.start(&e.name, command, keep, &log) {
        Ok(pid) => {
            r.pid = Some(pid);
            r.detail = format!(
                "started `{}` as pid {pid}{} (output: {})",
                command.join(" "),
                if keep { ", kept after the step" } else { "" },
                log.display()
            );
        }
        Err(m) => (r.status, r.detail) = (EventStatus::Failed, m),
    }
}

/// `wait-for`: runs the command every `poll` until it succeeds, its timeout passes or the
/// step ends (with `outlive-step`, only Ctrl-C cuts the wait short).
fn wait_for(
    r: &mut Recorded,
    command: &[String],
    poll: Duration,
    timeout: &storlab_model::units::Dur,
    outlive_step: bool,
    ctx: &Context,
) {
    let interrupted = || ctx.control.interrupted.load(Ordering::Relaxed);
    let cut_off = || {
        if outlive_step {
            interrupted()
        } else {
            ctx.over()
        }
    };
    let shown = command.join(" ");
    let start = ctx.clock.now_ns();
    let mut attempts = 0u32;
    loop {
        let elapsed = Duration::from_nanos(ctx.clock.now_ns() - start);
        let left = timeout.0.saturating_sub(elapsed);
        attempts += 1;
        let ran = run_to_end(command, left.max(Duration::from_millis(1)), &cut_off);
        r.exit_code = ran.exit_code();
        r.stdout = ran.stdout.clone();
        r.stderr = ran.stderr.clone();
        let elapsed = Duration::from_nanos(ctx.clock.now_ns() - start);
        if ran.succeeded() {
            r.detail = format!(
                "`{shown}` succeeded after {attempts} tries, {:.3} s{}",
                elapsed.as_secs_f64(),
                if ctx.over() {
                    " (after the step's load had ended: the wait outlived the step)"
                } else {
                    ""
                }
            );
            break;
        }
        if let Finish::NotStarted(m) = &ran.finish {
            (r.status, r.detail) = (EventStatus::Failed, m.clone());
            break;
        }
        if ran.finish == Finish::CutOff || cut_off() {
            (r.status, r.detail) = (
                EventStatus::CutOff,
                format!("`{shown}` had not succeeded after {attempts} tries when the step ended"),
            );
            break;
        }
        if elapsed + poll >= timeout.0 {
            (r.status, r.detail) = (
                EventStatus::TimedOut,
                format!("`{shown}` did not succeed within {timeout} ({attempts} tries)"),
            );
            break;
        }
        std::thread::sleep(poll);
    }
    r.attempts = Some(attempts);
}

/// `power-off`: kills every process of the network namespace (named, or named by a command)
/// at once.
fn power_off_event(
    r: &mut Recorded,
    netns: &Option<String>,
    netns_command: &[String],
    pid_files: &[std::path::PathBuf],
) {
    let named = if netns_command.is_empty() {
        Ok((netns.clone(), String::new()))
    } else {
        power_off::netns_named_by(netns_command).map(|(ns, how)| (Some(ns), format!("{how}; ")))
    };
    match named.and_then(|(ns, how)| {
        power_off::power_off(ns.as_deref(), pid_files).map(|done| (done, ns, how))
    }) {
        Ok((done, ns, how)) => {
            r.pids_killed = Some(done.killed.len() as u32);
            r.detail = format!("{how}{}", done.describe(ns.as_deref(), pid_files));
        }
        Err(m) => (r.status, r.detail) = (EventStatus::Failed, m),
    }
}

/// `verify`: reads back what a state file says was written.
fn verify_event(r: &mut Recorded, state: &std::path::Path) {
    match crate::verify::verify_state_file(state) {
        Ok(v) => {
            let (checked, unit) = match &v {
                storlab_verify::Verified::Block(b) => (b.blocks_checked, "blocks"),
                storlab_verify::Verified::KeyValue(k) => (k.keys_checked, "keys"),
            };
            let head = format!(
                "verify of `{}` (target `{}`): {checked} {unit} checked",
                state.display(),
                v.target()
            );
            (r.status, r.detail) = if v.damaged() == 0 {
                (EventStatus::Ok, format!("{head}, all intact"))
            } else {
                let classes: Vec<String> = v
                    .class_rows()
                    .into_iter()
                    .filter(|(class, n, _)| *n > 0 && *class != "intact")
                    .map(|(class, n, _)| format!("{class} {n}"))
                    .collect();
                (
                    EventStatus::Failed,
                    format!("{head}, {} damaged ({})", v.damaged(), classes.join(", ")),
                )
            };
            r.verify = Some(Box::new(v));
        }
        Err(e) => (r.status, r.detail) = (EventStatus::Failed, format!("verify: {e}")),
    }
}

fn signal_event(
    r: &mut Recorded,
    process: &ProcessRef,
    signal: i32,
    signal_name: &str,
    processes: &mut Processes,
) {
    let pid = match process {
        ProcessRef::PidFile(path) => process::read_pid_file(path),
        ProcessRef::Process(name) => processes.pid_of(name),
    };
    let target = match process {
        ProcessRef::PidFile(path) => format!("pid file {}", path.display()),
        ProcessRef::Process(name) => format!("process `{name}`"),
    };
    match pid.and_then(|pid| process::send_signal(pid, signal).map(|()| pid)) {
        Ok(pid) => {
            r.pid = Some(pid);
            r.detail = format!("sent SIG{signal_name} to pid {pid} ({target})");
        }
        Err(m) => (r.status, r.detail) = (EventStatus::Failed, m),
    }
}

/// Whether the step crashed something before its verify pass: a `power-off` event, or a
/// `kill` with SIGKILL, that ran. Only then may a write acknowledged but not synced be lost
/// (`lost-unsynced`); otherwise such a loss is `lost-while-up`.
pub fn crash_before(run: &storlab_study::plan::RunPlan, recorded: &[Recorded]) -> bool {
    use storlab_study::events::Action;
    let ran = |name: &str| {
        recorded
            .iter()
            .any(|r| r.name == name && r.status == storlab_results::events::EventStatus::Ok)
    };
    run.events.iter().any(|e| {
        let crash = match &e.action {
            Action::PowerOff { .. } => true,
            Action::Kill { signal, .. } => signal.number == libc::SIGKILL,
            _ => false,
        };
        crash && ran(&e.name)
    })
}

/// The events of a run as stored: start and end relative to `measure_start_ns` (run clock);
/// events that did not run are placed at `end_seconds`, the end of measurement.
pub fn to_summary(recorded: &[Recorded], measure_start_ns: u64, end_seconds: f64) -> Vec<Event> {
    let rel = |ns: u64| ns as i64 - measure_start_ns as i64;
    let end_ns = (end_seconds * 1e9) as i64;
    recorded
        .iter()
        .map(|r| {
            let start = r.start_ns.map_or(end_ns, rel);
            let end = r.end_ns.map_or(end_ns, rel);
            Event {
                time_seconds: start as f64 / 1e9,
                kind: r.action.to_string(),
                detail: r.detail.clone(),
                outcome: Some(EventOutcome {
                    name: r.name.clone(),
                    status: r.status,
                    start_ns: start,
                    end_ns: end,
                    duration_seconds: (end - start) as f64 / 1e9,
                    exit_code: r.exit_code,
                    pid: r.pid,
                    attempts: r.attempts,
                    pids_killed: r.pids_killed,
                    stdout: r.stdout.clone(),
                    stderr: r.stderr.clone(),
                    recovery: r.recovery,
                    verify: r.verify.clone(),
                    on_failure: Some(r.on_failure),
                    bytes: None,
                    rate_bytes: None,
                }),
            }
        })
        .collect()
}
