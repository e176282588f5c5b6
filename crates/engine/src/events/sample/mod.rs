//! `sample` events: a command the study names, started when the step's load starts (the
//! warm-up's start, else the measurement's) and stopped when the step ends (after any
//! `outlive-step` wait, before the `after-step` events), whose stdout is read line by line on a
//! thread of its own, never a worker's (see `line` for the protocol). Each sample is stamped
//! on the run's clock when its line is read and written at once to the run folder's
//! `samples.csv`; each span the command reports becomes a `reported` event of the run.
//!
//! The command runs in a process group of its own, recorded in the started list (see
//! `started`) while it runs, its stderr appended to the study folder's `processes/`. At the
//! step's end its group gets SIGTERM, what it still prints is read until it exits, SIGKILL
//! after [`STOP_GRACE`]. Its leader is only reaped once its group has been signalled for the
//! last time, so that the group's id is never another's. A command that exits before the
//! step ends, or prints nothing, is a failure of the event (a warning by default).

mod line;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::process::{command, describe, open_log, signal_group};
use super::{Context, Failure, Recorded, not_run};
use crate::RunError;
use line::Line;
use storlab_results::events::{Event, EventStatus};
use storlab_results::samples::{SAMPLES_FILE, SAMPLES_HEADER, Sample};
use storlab_results::summary::RunSummary;
use storlab_study::events::{Action, EventPlan, OnFailure};
use storlab_study::plan::RunPlan;

/// How long a sample command has to exit after SIGTERM at its step's end, before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long its output is still read after SIGKILL (a process that left its group may hold
/// it open: it is not waited for).
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(1);
/// How long a read waits for output before the process and the step are looked at again.
const POLL_MS: i32 = 10;
/// A line longer than this is read as it is so far (no sample or span is that long).
const LONGEST_LINE: usize = 64 * 1024;
/// Characters of a line that is not of the protocol quoted in the run's warning.
const QUOTED_CHARS: usize = 200;

/// The run folder's `samples.csv`, shared by a step's sample events.
struct Sink {
    file: BufWriter<File>,
    path: PathBuf,
    /// Each series' unit, as it first came.
    units: BTreeMap<String, String>,
    /// The first write that failed (the samples after it are lost).
    error: Option<String>,
}

impl Sink {
    fn create(path: PathBuf) -> Result<Sink, RunError> {
        let io = |source| RunError::Results {
            path: path.clone(),
            source,
        };
        let mut file = BufWriter::new(File::create(&path).map_err(io)?);
        writeln!(file, "{SAMPLES_HEADER}").map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Sink {
            file,
            path,
            units: BTreeMap::new(),
            error: None,
        })
    }

    /// Writes a sample of `series` in `unit`; refused (with why) when the series came in
    /// another unit before.
    fn write(&mut self, sample: &Sample) -> Result<(), String> {
        match self.units.get(&sample.series) {
            Some(unit) if *unit != sample.unit => {
                return Err(format!(
                    "series `{}` came in `{unit}` before, not `{}`",
                    sample.series, sample.unit
                ));
            }
            Some(_) => {}
            None => {
                self.units
                    .insert(sample.series.clone(), sample.unit.clone());
            }
        }
        if self.error.is_none()
            && let Err(e) = self.file.write_all(sample.csv_line().as_bytes())
        {
            self.error = Some(format!("{}: {e}", self.path.display()));
        }
        Ok(())
    }

    fn flush(&mut self) {
        if self.error.is_none()
            && let Err(e) = self.file.flush()
        {
            self.error = Some(format!("{}: {e}", self.path.display()));
        }
    }
}

/// A step's sample events: their commands, the file their samples go to and the flag that
/// ends them.
pub struct Sampling<'a> {
    events: Vec<(&'a EventPlan, &'a [String])>,
    /// None when the step has no sample event (no file is made).
    sink: Option<Mutex<Sink>>,
    stop: AtomicBool,
}

impl<'a> Sampling<'a> {
    /// The run's sample events; with any, their `samples.csv` made in the run's `folder`.
    pub fn open(run: &'a RunPlan, folder: &Path) -> Result<Sampling<'a>, RunError> {
        let events: Vec<(&EventPlan, &[String])> = run
            .events
            .iter()
            .filter_map(|e| match &e.action {
                Action::Sample { command } => Some((e, command.as_slice())),
                _ => None,
            })
            .collect();
        let sink = if events.is_empty() {
            None
        } else {
            Some(Mutex::new(Sink::create(folder.join(SAMPLES_FILE))?))
        };
        Ok(Sampling {
            events,
            sink,
            stop: AtomicBool::new(false),
        })
    }

    /// Starts each sample event's command on a thread of its own, when the run's load has
    /// `started`; `measure_start_ns` is the start of measurement on the run clock.
    pub fn spawn<'scope>(
        &'scope self,
        scope: &'scope Scope<'scope, '_>,
        ctx: &'scope Context<'scope>,
        started: bool,
        measure_start_ns: u64,
    ) -> Result<Samplers<'scope>, RunError> {
        let mut handles = Vec::new();
        if let (true, Some(sink)) = (started, &self.sink) {
            for &(event, command) in &self.events {
                let s = Sampler {
                    event,
                    command,
                    ctx,
                    sink,
                    stop: &self.stop,
                    measure_start_ns,
                };
                let h = std::thread::Builder::new()
                    .name("storlab-sample".into())
                    .spawn_scoped(scope, move || s.run())
                    .map_err(RunError::Thread)?;
                handles.push(h);
            }
        }
        Ok(Samplers {
            sampling: self,
            handles,
        })
    }
}

/// The threads of a step's sample events, running. Dropped without [`Samplers::stop`] (the
/// run's threads ending on an error), they are told to stop all the same.
pub struct Samplers<'scope> {
    sampling: &'scope Sampling<'scope>,
    handles: Vec<ScopedJoinHandle<'scope, One>>,
}

impl Samplers<'_> {
    /// Stops every sample command (the step has ended) and gathers what they did.
    pub fn stop(mut self) -> Result<Sampled, RunError> {
        self.sampling.stop.store(true, Ordering::Relaxed);
        let mut ones = Vec::new();
        for h in std::mem::take(&mut self.handles) {
            ones.push(h.join().map_err(|_| {
                RunError::Thread(std::io::Error::other("a sample event's thread panicked"))
            })?);
        }
        let (file, write_error) = match &self.sampling.sink {
            Some(sink) => {
                let sink = sink.lock().unwrap_or_else(|e| e.into_inner());
                (Some(sink.path.clone()), sink.error.clone())
            }
            None => (None, None),
        };
        Ok(Sampled {
            ones,
            file,
            write_error,
        })
    }
}

impl Drop for Samplers<'_> {
    fn drop(&mut self) {
        self.sampling.stop.store(true, Ordering::Relaxed);
    }
}

/// What one sample event did.
struct One {
    recorded: Recorded,
    /// The spans its command reported, as events of the run.
    reported: Vec<Event>,
    /// Lines that were not of the protocol, and the first, quoted, with why.
    bad: u64,
    first_bad: Option<(String, String)>,
    failure: Option<Failure>,
}

/// What a step's sample events did, for its run's results.
#[derive(Default)]
pub struct Sampled {
    ones: Vec<One>,
    /// The samples file, when the step had sample events.
    file: Option<PathBuf>,
    /// A write to it that failed.
    write_error: Option<String>,
}

impl Sampled {
    /// Adds to the run: each sample event's row to `recorded`, the spans its command
    /// reported to the summary's events, a warning per event that printed lines not of the
    /// protocol (and for a samples file that could not be written), and per series the
    /// figures over the measurement, read back from the stored `samples.csv`. Returns the
    /// first failure that reaches beyond a warning.
    pub fn add_to(self, summary: &mut RunSummary, recorded: &mut Vec<Recorded>) -> Option<Failure> {
        let mut failure = None;
        for one in self.ones {
            if let Some((line, why)) = &one.first_bad {
                summary.warnings.push(format!(
                    "event `{}` (sample): {} line{} not a sample or a span, the first: `{line}` ({why})",
                    one.recorded.name,
                    one.bad,
                    if one.bad == 1 { " was" } else { "s were" },
                ));
            }
            summary.events.extend(one.reported);
            recorded.push(one.recorded);
            failure = failure.or(one.failure);
        }
        if let Some(e) = self.write_error {
            summary
                .warnings
                .push(format!("samples not all stored: writing {e}"));
        }
        if let Some(path) = self.file {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let samples = storlab_results::samples::parse_samples(&text);
                    summary.samples =
                        storlab_results::samples::summarize(&samples, summary.measured_seconds);
                }
                Err(e) => summary
                    .warnings
                    .push(format!("samples not summarized: {}: {e}", path.display())),
            }
        }
        failure
    }
}

/// One sample event's command, run on its thread.
struct Sampler<'s> {
    event: &'s EventPlan,
    command: &'s [String],
    ctx: &'s Context<'s>,
    sink: &'s Mutex<Sink>,
    stop: &'s AtomicBool,
    measure_start_ns: u64,
}

/// How a sample command ended.
struct Ended {
    /// It exited before the step ended: when (run clock, ns).
    early_ns: Option<u64>,
    /// Its exit status, once reaped.
    status: Option<std::process::ExitStatus>,
    /// It had to be killed (it did not exit within [`STOP_GRACE`] of SIGTERM).
    killed: bool,
}

impl Sampler<'_> {
    /// Starts the command, reads it until the step ends, stops it: the event's row.
    fn run(self) -> One {
        let e = self.event;
        let mut r = not_run(e, EventStatus::Ok, String::new());
        r.start_ns = Some(self.ctx.clock.now_ns());
        let log = self
            .ctx
            .log_dir
            .join(format!("{}-run{:03}.log", e.name, self.ctx.run_index));
        let mut reader = Reader::new(&self);
        let ended = match start(self.command, &log) {
            Ok((mut child, mut out)) => {
                r.pid = Some(child.id() as i32);
                self.watch(&mut child, &mut out, &mut reader)
            }
            Err(m) => {
                (r.status, r.detail) = (EventStatus::Failed, m);
                r.end_ns = r.start_ns;
                return self.one(r, reader);
            }
        };
        r.end_ns = Some(ended.early_ns.unwrap_or_else(|| self.ctx.clock.now_ns()));
        r.exit_code = ended.status.and_then(|s| s.code());
        let shown = self.command.join(" ");
        let read = reader.counts();
        let how = match ended.status {
            Some(s) if ended.killed => format!(
                "did not exit within {} s of SIGTERM: killed ({})",
                STOP_GRACE.as_secs(),
                describe(&s)
            ),
            Some(s) => describe(&s),
            None => "not reaped".to_string(),
        };
        (r.status, r.detail) = if ended.early_ns.is_some() {
            let detail = format!("`{shown}` exited before the step ended ({how}) after {read}");
            (EventStatus::Failed, detail)
        } else if reader.samples == 0 && reader.reported.is_empty() {
            let detail = format!(
                "`{shown}` printed no sample or span in the whole step ({read}; stopped at the step's end: {how})"
            );
            (EventStatus::Failed, detail)
        } else {
            let detail = format!("`{shown}`: {read}; stopped at the step's end: {how}");
            (EventStatus::Ok, detail)
        };
        r.detail = format!("{} (stderr: {})", r.detail, log.display());
        self.one(r, reader)
    }

    /// The event's row and what it read, with its failure when it reaches beyond a warning.
    fn one(&self, recorded: Recorded, reader: Reader) -> One {
        let failure = (recorded.status != EventStatus::Ok
            && self.event.on_failure != OnFailure::Continue)
            .then(|| Failure {
                event: self.event.name.clone(),
                message: format!(
                    "event `{}` (sample) {}: {}",
                    self.event.name,
                    recorded.status.name(),
                    recorded.detail
                ),
                scope: self.event.on_failure,
            });
        One {
            recorded,
            reported: reader.reported,
            bad: reader.bad,
            first_bad: reader.first_bad,
            failure,
        }
    }

    /// Reads the command's output until the step ends, then stops it: SIGTERM to its group,
    /// its output read until it exits, SIGKILL after [`STOP_GRACE`]. A command that exits
    /// before the step ends stops the step unless its `on-failure` is `continue`.
    fn watch(&self, child: &mut Child, out: &mut ChildStdout, reader: &mut Reader) -> Ended {
        let pid = child.id() as i32;
        let mut buf = [0u8; 8192];
        let (mut eof, mut exited) = (false, false);
        let (mut grace_over, mut killed) = (false, false);
        let mut early_ns = None;
        let mut stopping: Option<Instant> = None;
        loop {
            if eof {
                std::thread::sleep(Duration::from_millis(POLL_MS as u64));
            } else if readable(out, POLL_MS) {
                match out.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        eof = true;
                        reader.finish();
                    }
                    Ok(n) => reader.feed(&buf[..n]),
                }
            }
            if !exited && leader_exited(pid) {
                exited = true;
                if stopping.is_none() {
                    early_ns = Some(self.ctx.clock.now_ns());
                    if self.event.on_failure != OnFailure::Continue {
                        self.ctx.control.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
            match stopping {
                None if self.stop.load(Ordering::Relaxed) => {
                    // The leader is not reaped yet: the group's id is still its own.
                    signal_group(pid, libc::SIGTERM);
                    signal_group(pid, libc::SIGCONT);
                    stopping = Some(Instant::now());
                }
                None => {}
                Some(_) if exited && eof => break,
                Some(at) => {
                    if !grace_over && at.elapsed() >= STOP_GRACE {
                        (grace_over, killed) = (true, !exited);
                        signal_group(pid, libc::SIGKILL);
                    }
                    if at.elapsed() >= STOP_GRACE + DRAIN_AFTER_KILL {
                        break;
                    }
                }
            }
        }
        // What is left of its group goes with it; then the leader is reaped.
        signal_group(pid, libc::SIGKILL);
        let status = child.wait().ok();
        super::started::unregister(pid);
        Ended {
            early_ns,
            status,
            killed,
        }
    }
}

/// Starts `argv` in a process group of its own, recorded in the started list, its stdout
/// piped, its stderr appended to `log`.
fn start(argv: &[String], log: &Path) -> Result<(Child, ChildStdout), String> {
    let err = open_log(log)?;
    let mut child = command(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", argv[0]))?;
    let pid = child.id() as i32;
    let registered = super::started::register(pid, argv);
    match (registered, child.stdout.take()) {
        (Ok(()), Some(out)) => Ok((child, out)),
        (registered, _) => {
            signal_group(pid, libc::SIGKILL);
            let _ = child.wait();
            super::started::unregister(pid);
            Err(registered
                .err()
                .unwrap_or_else(|| format!("`{}`: its output cannot be read", argv[0])))
        }
    }
}

/// Whether `out` has something to read (or is closed) within `timeout_ms`.
fn readable(out: &ChildStdout, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: out.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, and its count.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    n > 0 && p.revents != 0
}

/// Whether the child `pid` has exited, leaving it to be reaped (WNOWAIT): until it is, its
/// pid, and so its group's id, is nobody else's.
fn leader_exited(pid: i32) -> bool {
    // SAFETY: siginfo_t is plain data, all zeroes being "no child changed state".
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: waitid writes into `info` alone.
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: after a successful waitid, si_pid is the field it filled (0: no change yet).
    r == 0 && unsafe { info.si_pid() } != 0
}

/// What a sample command printed, line by line.
struct Reader<'s> {
    sampler: &'s Sampler<'s>,
    /// The part of a line read so far.
    pending: Vec<u8>,
    samples: u64,
    series: BTreeSet<String>,
    reported: Vec<Event>,
    bad: u64,
    first_bad: Option<(String, String)>,
}

impl<'s> Reader<'s> {
    fn new(sampler: &'s Sampler<'s>) -> Reader<'s> {
        Reader {
            sampler,
            pending: Vec::new(),
            samples: 0,
            series: BTreeSet::new(),
            reported: Vec::new(),
            bad: 0,
            first_bad: None,
        }
    }

    /// `N samples of M series, K spans reported[, B other lines]`.
    fn counts(&self) -> String {
        let n =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut s = format!(
            "{} of {}, {} reported",
            n(self.samples as usize, "sample", "samples"),
            n(self.series.len(), "series", "series"),
            n(self.reported.len(), "span", "spans"),
        );
        if self.bad > 0 {
            s.push_str(&format!(
                ", {}",
                n(self.bad as usize, "other line", "other lines")
            ));
        }
        s
    }

    /// Output as read: each whole line handled, the rest kept for the next read.
    fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        while let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=i).collect();
            self.line(&String::from_utf8_lossy(&line));
        }
        if self.pending.len() > LONGEST_LINE {
            self.finish();
        }
        self.flush();
    }

    /// The end of the output: a last line without its newline is a line.
    fn finish(&mut self) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&String::from_utf8_lossy(&line));
        }
        self.flush();
    }

    fn flush(&self) {
        self.sampler
            .sink
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .flush();
    }

    /// One line, stamped now on the run's clock.
    fn line(&mut self, text: &str) {
        let s = self.sampler;
        let now_ns = s.ctx.clock.now_ns() as i64;
        let t_ns = now_ns - s.measure_start_ns as i64;
        match line::parse(text) {
            Ok(Line::Nothing) => {}
            Ok(Line::Sample {
                series,
                value,
                unit,
            }) => {
                let sample = Sample {
                    t_ns,
                    series: series.to_string(),
                    value,
                    unit: unit.to_string(),
                };
                let written = s
                    .sink
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .write(&sample);
                match written {
                    Ok(()) => {
                        self.samples += 1;
                        self.series.insert(sample.series);
                    }
                    Err(why) => self.not_a_line(text, why),
                }
            }
            Ok(Line::Span(span)) => {
                // This host's clock now against the run's: the span's Unix times onto the
                // timeline (read at each span, so that the two clocks never drift apart).
                let unix_now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as i64);
                let on_timeline = |unix_ns: i64| unix_ns - unix_now + t_ns;
                let times = (
                    on_timeline(span.start_unix_ns),
                    on_timeline(span.end_unix_ns),
                );
                self.reported
                    .push(Event::reported(span.name, span.detail, times, span.bytes));
            }
            Err(why) => self.not_a_line(text, why.to_string()),
        }
    }

    fn not_a_line(&mut self, text: &str, why: String) {
        self.bad += 1;
        if self.first_bad.is_none() {
            let quoted: String = text.trim_end().chars().take(QUOTED_CHARS).collect();
            self.first_bad = Some((quoted, why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threads::Flags;
    use std::sync::Arc;

    /// A null-target step with two sample events: one deaf to SIGTERM (it prints one sample
    /// first), one that prints nothing.
    const STUDY: &str = r#"name = "t"
[targets.disk]
type = "null"
[workloads.rr]
block-size = "4KiB"
[[steps]]
workload = "rr"
targets = ["disk"]
duration = "1s"
[[steps.events]]
name = "deaf"
action = "sample"
command = ["sh", "-c", "trap '' TERM; echo 'sample a 1.5 x'; while :; do sleep 0.05; done"]
[[steps.events]]
name = "silent"
action = "sample"
command = ["sleep", "30"]
"#;

    #[test]
    fn a_command_deaf_to_sigterm_is_killed_and_a_silent_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let plan = storlab_study::parse("s.toml", STUDY).unwrap();
        let flags = Flags::new(Arc::new(AtomicBool::new(false)));
        let ctx = Context {
            clock: &flags.clock,
            control: &flags.control,
            step_over: &flags.step_over,
            log_dir: dir.path().join("processes"),
            run_index: 1,
            metrics: None,
        };
        let sampling = Sampling::open(&plan.runs[0], dir.path()).unwrap();
        let (sampled, stopping) = std::thread::scope(|scope| {
            let samplers = sampling.spawn(scope, &ctx, true, 0).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            let at = Instant::now();
            (samplers.stop().unwrap(), at.elapsed())
        });
        assert!(
            stopping >= STOP_GRACE && stopping < STOP_GRACE + Duration::from_secs(2),
            "{stopping:?}"
        );
        let [deaf, silent] = &sampled.ones[..] else {
            panic!("two events")
        };
        let r = &deaf.recorded;
        assert_eq!(r.status, EventStatus::Ok, "{}", r.detail);
        assert!(r.detail.contains("1 sample of 1 series"), "{}", r.detail);
        assert!(
            r.detail
                .contains("did not exit within 2 s of SIGTERM: killed"),
            "{}",
            r.detail
        );
        let r = &silent.recorded;
        assert_eq!(r.status, EventStatus::Failed, "{}", r.detail);
        assert!(
            r.detail.contains("printed no sample or span"),
            "{}",
            r.detail
        );
        assert!(silent.failure.is_none(), "on-failure is continue");
        let csv = std::fs::read_to_string(dir.path().join(SAMPLES_FILE)).unwrap();
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len(), 1, "{csv}");
        assert!(rows[0].ends_with(",a,1.5,x"), "{csv}");
    }
}
