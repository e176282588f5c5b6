//! fio's jobs as a storlab study: each job's file a `file` target, its I/O pattern a block
//! workload, each stonewall group one step (its jobs' targets driven together), so that a job
//! file runs through the same plan, engine and results store as any study.
//!
//! fio's rules kept: a job without `filename` gets a file per clone, `JOBNAME.N.0` in its
//! `directory`; with a `filename` its `numjobs` clones share it (storlab: threads on one
//! target). Without `time_based` a job transfers `size` bytes (per clone), bounded also by
//! `runtime` when given; `ramp_time` is the warm-up. Jobs of one group run at the same time in
//! fio, and so they do here: on different files, each with its own workload when its I/O
//! differs from the group's first job (the step's `target-workloads`); a group is bounded
//! once, so its jobs must share size, runtime and ramp_time.

use std::path::{Path, PathBuf};

use storlab_model::fio_jobs::{FioGroup, FioJob, FioJobs};

use super::engines::Runner;
use super::job::Job;
use super::parse::LineError;
use super::workload::workload_table;

/// One group of jobs (fio's `groupid`), one step.
#[derive(Debug, Clone)]
pub struct Group {
    pub id: usize,
    pub step: String,
    /// Indices into [`FioPlan::jobs`].
    pub jobs: Vec<usize>,
}

/// A job's targets: one (clones as threads) or one per clone.
#[derive(Debug, Clone)]
pub struct JobTargets {
    pub names: Vec<String>,
    pub paths: Vec<PathBuf>,
}

/// Job files made into a study.
#[derive(Debug, Clone)]
pub struct FioPlan {
    pub files: Vec<String>,
    pub jobs: Vec<Job>,
    pub targets: Vec<JobTargets>,
    pub groups: Vec<Group>,
    /// `[global]` options as written, of every file (fio's "global options").
    pub global_options: Vec<(String, String)>,
    /// Substitutions and changes storlab made, printed and recorded with the results.
    pub notes: Vec<String>,
    pub study_text: String,
}

impl FioPlan {
    /// What fio's outputs need of the jobs, to be stored with the results and read back by
    /// the reports (never this live plan).
    pub fn job_model(&self) -> FioJobs {
        let jobs = self
            .jobs
            .iter()
            .zip(&self.targets)
            .map(|(j, t)| FioJob {
                name: j.name.clone(),
                own_options: j.own_options.clone(),
                numjobs: j.numjobs,
                group_reporting: j.group_reporting,
                iodepth: j.iodepth,
                bs: j.bs,
                latency_report: j.latency_report.clone(),
                logs: j.logs.clone(),
                targets: t.names.clone(),
                trims: j.trim.is_some(),
                clat_only: matches!(j.engine.runs_on(), Runner::FileOps(e) if e.on_set()),
            })
            .collect();
        let groups = self
            .groups
            .iter()
            .map(|g| FioGroup {
                id: g.id,
                jobs: g.jobs.clone(),
            })
            .collect();
        FioJobs {
            files: self.files.clone(),
            global_options: self.global_options.clone(),
            notes: self.notes.clone(),
            jobs,
            groups,
        }
    }
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "job".into() } else { s }
}

fn err(job: &Job, message: String) -> LineError {
    LineError {
        file: job.file.clone(),
        line: job.line,
        message,
    }
}

/// The job's step bounds: (warm-up, duration, ops per target).
fn bounds(job: &Job, size: Option<u64>) -> Result<(String, Option<String>, Option<u64>), String> {
    let warmup = format!("{}ms", job.ramp.as_millis());
    let duration = job.runtime.map(|d| format!("{}ms", d.as_millis()));
    if job.time_based {
        if duration.is_none() {
            return Err("time_based needs a runtime".into());
        }
        return Ok((warmup, duration, None));
    }
    let Some(size) = size else {
        return Err("the job needs a size (or a filename that exists), as fio needs one".into());
    };
    let threads = if job.clones_as_threads() {
        job.numjobs as u64
    } else {
        1
    };
    let transfers = super::sizes::transfers(job, size);
    Ok((
        warmup,
        duration,
        Some((transfers + super::files::syncs(job, transfers)) * threads),
    ))
}

/// A job's steady state as step keys: `steady-state`, its window and ramp in seconds, or
/// None without `ss`. fio's `ss_dur` of 0 (its default) turns detection off: storlab asks
/// for it instead, and for a `runtime`, the longest the job runs.
fn steady(job: &Job) -> Result<Option<(String, f64, f64)>, String> {
    let Some(ss) = &job.ss else {
        return Ok(None);
    };
    let Some(window) = job.ss_dur else {
        return Err(format!(
            "ss={ss} needs ss_dur (the window judged; fio's default of 0 turns steady state off)"
        ));
    };
    if job.runtime.is_none() {
        return Err(format!(
            "ss={ss} needs a runtime: the longest the job runs when steady state is not reached"
        ));
    }
    let secs = window.as_secs_f64();
    if secs < 2.0 || secs.fract() != 0.0 {
        return Err(format!(
            "ss_dur={secs} s: storlab judges steady state on 1-second intervals, so ss_dur is a whole number of seconds, 2 or more"
        ));
    }
    Ok(Some((ss.clone(), secs, job.ss_ramp.as_secs_f64())))
}

/// A job file: its name, its jobs and its `[global]` options as written.
pub type JobFile = (String, Vec<Job>, Vec<(String, String)>);

/// Builds the study from the jobs of `files` (each file's first job starts a group).
pub fn build(files: Vec<JobFile>) -> Result<FioPlan, Vec<LineError>> {
    let mut jobs = Vec::new();
    let mut starts = Vec::new();
    let mut global_options = Vec::new();
    let names: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    for (_, js, g) in files {
        starts.push(jobs.len());
        jobs.extend(js);
        global_options.extend(g);
    }
    // randrepeat=0: one new seed for this invocation, recorded in the study and its notes.
    let seed = super::control::fresh_seed() >> 1;
    for j in jobs.iter_mut().filter(|j| !j.control.randrepeat) {
        j.control.seed = Some(seed);
    }
    let (mut errors, wait_notes) = super::control::settle_wait_for(&mut jobs, &starts);
    let targets = job_targets(&jobs);
    let mut notes = substitution_notes(&jobs);
    notes.extend(wait_notes);
    notes.extend(jobs.iter().flat_map(super::files::notes));
    notes.extend(super::fileops::notes(&jobs));
    notes.extend(jobs.iter().flat_map(super::sizes::notes));
    notes.extend(jobs.iter().flat_map(super::zones::notes));
    notes.extend(jobs.iter().flat_map(super::prio::notes));
    notes.extend(jobs.iter().flat_map(super::buffers::notes));
    notes.extend(jobs.iter().flat_map(super::numa::notes));
    let groups = groups(&jobs, &starts);
    let mut doc = StudyDoc::default();
    for g in &groups {
        let step = doc.group_step(g, &jobs, &targets, &mut errors);
        doc.steps.push(toml::Value::Table(step));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    notes.append(&mut doc.notes);
    // rate_min is judged per rate_cycle on the timeline and fio's logs are written per
    // log_avg_msec / log_hist_msec window: intervals that make each window whole intervals.
    let windows: Vec<u64> = jobs
        .iter()
        .filter(|j| j.rates.has_min())
        .map(|j| j.rates.cycle.as_millis() as u64)
        .chain(jobs.iter().flat_map(|j| j.logs.windows_ms()))
        .collect();
    let interval_ms = super::logs::study_interval_ms(&windows);
    doc.interval_ms = interval_ms.map(|ms| ms as i64);
    for j in &jobs {
        notes.extend(super::logs::notes(
            j,
            interval_ms.unwrap_or(super::logs::DEFAULT_INTERVAL_MS),
        ));
    }
    let study_text = doc.text(&names, &notes);
    Ok(FioPlan {
        files: names,
        jobs,
        targets,
        groups,
        global_options,
        notes,
        study_text,
    })
}

/// Each job's targets: its `filename` (under `directory`), or one file per `numjobs` clone
/// named as fio names them; target names unique across all jobs.
fn job_targets(jobs: &[Job]) -> Vec<JobTargets> {
    let mut targets: Vec<JobTargets> = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for j in jobs {
        let base = sanitize(&j.name);
        let mut unique = |n: String| {
            let mut name = n.clone();
            let mut k = 2;
            while !used.insert(name.clone()) {
                name = format!("{n}-{k}");
                k += 1;
            }
            name
        };
        let dir = j.directory.clone().map(PathBuf::from);
        let t = match &j.filename {
            // offset_increment: a target per clone on the one file, each at its offset.
            Some(f) if j.offset_increment.is_some() && j.numjobs > 1 => {
                let p = PathBuf::from(f);
                let path = match &dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p,
                };
                JobTargets {
                    names: (0..j.numjobs)
                        .map(|c| unique(format!("{base}.{c}")))
                        .collect(),
                    paths: vec![path; j.numjobs as usize],
                }
            }
            Some(f) => {
                let p = PathBuf::from(f);
                let path = match &dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p,
                };
                JobTargets {
                    names: vec![unique(base.clone())],
                    paths: vec![path],
                }
            }
            None => {
                let d = dir.unwrap_or_else(|| PathBuf::from("."));
                let names = (0..j.numjobs)
                    .map(|c| {
                        unique(if j.numjobs > 1 {
                            format!("{base}.{c}")
                        } else {
                            base.clone()
                        })
                    })
                    .collect();
                let paths = (0..j.numjobs)
                    .map(|c| d.join(format!("{}.{c}.0", j.name)))
                    .collect();
                JobTargets { names, paths }
            }
        };
        targets.push(t);
    }
    targets
}

/// What runs otherwise than fio would run it, job by job.
fn substitution_notes(jobs: &[Job]) -> Vec<String> {
    let mut notes = Vec::new();
    for j in jobs {
        let (fio, on) = (j.engine.fio_name(), j.engine.runs_on());
        if j.engine.substituted() {
            notes.push(format!(
                "job `{}`: ioengine={fio} ran on {} (storlab has no {fio} engine)",
                j.name,
                on.name()
            ));
        }
        if on.one_at_a_time() && j.iodepth > 1 {
            notes.push(format!(
                "job `{}`: ioengine={fio} runs one I/O at a time: iodepth={} is 1, as in fio",
                j.name, j.iodepth
            ));
        }
        if let Some(n) = j.rates.note(j) {
            notes.push(n);
        }
        if let Some(seed) = j.control.seed {
            notes.push(format!(
                "job `{}`: randrepeat=0: offsets drawn from seed {seed}, new for this invocation",
                j.name
            ));
        }
        if !j.measurement_off.is_empty() {
            notes.push(format!(
                "job `{}`: {}=1 taken, but storlab measures every I/O's latency and the bandwidth anyway",
                j.name,
                j.measurement_off.join("=1, ")
            ));
        }
        if j.invalidate && !j.direct && on != Runner::Null {
            notes.push(format!(
                "job `{}`: invalidate=1 drops the whole page cache before its group (needs root)",
                j.name
            ));
        }
    }
    notes
}

/// Groups: each file's first job (at `starts`) and every stonewall job start one.
fn groups(jobs: &[Job], starts: &[usize]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if !j.stonewall && !starts.contains(&i) => g.jobs.push(i),
            _ => {
                let id = groups.len();
                groups.push(Group {
                    id,
                    step: format!("group-{id}"),
                    jobs: vec![i],
                });
            }
        }
    }
    groups
}

/// How a job's file may be shared with other jobs of its group running at the same time, as
/// fio's jobs share a `filename` (examples/flow.fio: one writes, one reads): each job is a
/// target of its own on the path, laid out once (the targets are prepared one after
/// another). Not with verify (each target keeps its own table of written blocks) nor a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// fio's file engines: with each other.
    FileOps,
    /// Plain reads and writes of one file.
    Plain,
    No,
}

impl Sharing {
    fn of(j: &Job) -> Sharing {
        if matches!(j.engine.runs_on(), Runner::FileOps(_)) {
            Sharing::FileOps
        } else if j.verify || j.files.set() {
            Sharing::No
        } else {
            Sharing::Plain
        }
    }
}

/// The warm-up, duration and operations that bound a job (see [`bounds`]).
type Bounds = (String, Option<String>, Option<u64>);

/// The study being written: its targets, workloads and steps.
#[derive(Default)]
struct StudyDoc {
    targets: toml::Table,
    workloads: toml::Table,
    steps: Vec<toml::Value>,
    /// What the groups' control options made storlab do otherwise than fio.
    notes: Vec<String>,
    /// The study's interval, ms, when not storlab's default of 1 s.
    interval_ms: Option<i64>,
}

/// One target of a job: its clone's number (its target's, with a target per clone), name and
/// file.
struct Place<'a> {
    clone: u64,
    name: &'a str,
    path: &'a Path,
}

/// One group's step as it is built, job target by job target.
struct GroupStep<'a> {
    /// The group's first job, whose workload and bounds the step has.
    first: &'a Job,
    bounds: Option<Bounds>,
    targets: Vec<toml::Value>,
    /// Each target's path, and whether its job runs on the fileops target (fio's file
    /// engines: such jobs may share a file, as falloc.fio's allocating and punching jobs do).
    /// The paths of the group's jobs so far, and how each may share its file.
    paths_seen: Vec<(PathBuf, Sharing)>,
    drop: bool,
    target_workloads: toml::Table,
}

impl StudyDoc {
    /// The step of group `g`, its workloads and targets added to the study; a job that
    /// cannot run beside the group's first is an error.
    fn group_step(
        &mut self,
        g: &Group,
        jobs: &[Job],
        targets: &[JobTargets],
        errors: &mut Vec<LineError>,
    ) -> toml::Table {
        let first = &jobs[g.jobs[0]];
        let wl = workload_table(first);
        let mut step = GroupStep {
            first,
            bounds: None,
            targets: Vec::new(),
            paths_seen: Vec::new(),
            drop: false,
            target_workloads: toml::Table::new(),
        };
        let group_steady = steady(first);
        if let Err(m) = &group_steady {
            errors.push(err(first, format!("job `{}`: {m}", first.name)));
        }
        for &ji in &g.jobs {
            let j = &jobs[ji];
            if ji != g.jobs[0] && steady(j).ok() != group_steady.clone().ok() {
                errors.push(err(
                    j,
                    format!(
                        "job `{}` runs at the same time as job `{}` with other steady-state options: storlab judges a group's steady state once; add `stonewall` to job `{}`",
                        j.name, first.name, j.name
                    ),
                ));
                continue;
            }
            // A job doing other I/O than the group's first runs its own workload beside it
            // (the step's `target-workloads`).
            let own = workload_table(j);
            let own_cpus = ji != g.jobs[0] && super::workload::needs_own_workload(j);
            let job_workload = if own == wl && !own_cpus {
                None
            } else {
                let name = format!("{}-{}", g.step, j.name);
                self.workloads.insert(name.clone(), own.into());
                Some(name)
            };
            step.drop |= j.invalidate && !j.direct && j.engine.runs_on() != Runner::Null;
            let t = &targets[ji];
            for (clone, (name, path)) in t.names.iter().zip(&t.paths).enumerate() {
                let at = Place {
                    clone: clone as u64,
                    name,
                    path,
                };
                if let Some(tt) = step.add_target(j, at, job_workload.as_deref(), errors) {
                    self.targets.insert(name.clone(), tt.into());
                }
            }
        }
        self.workloads.insert(g.step.clone(), wl.into());
        let group_jobs: Vec<&Job> = g.jobs.iter().map(|&ji| &jobs[ji]).collect();
        let control =
            super::control::group_control(&group_jobs, step.targets.len(), first.time_based);
        let mut table = step.table(g, &group_steady);
        match control {
            Ok(c) => {
                table.insert("stop-on-error".into(), c.stop_on_error.into());
                if !c.events.is_empty() {
                    table.insert("events".into(), c.events.into());
                }
                self.notes.extend(c.notes);
            }
            Err((at, m)) => errors.push(err(group_jobs[at], m)),
        }
        table
    }

    /// The study's text: a comment naming the job files and substitutions, then the study.
    fn text(self, names: &[String], notes: &[String]) -> String {
        let mut doc = toml::Table::new();
        doc.insert("name".into(), "fio".into());
        let mut description = format!("storlab fio {}", names.join(" "));
        if !notes.is_empty() {
            description.push_str(&format!(" ({})", notes.join("; ")));
        }
        doc.insert("description".into(), description.into());
        if let Some(ms) = self.interval_ms {
            doc.insert("interval".into(), format!("{ms}ms").into());
        }
        doc.insert("targets".into(), self.targets.into());
        doc.insert("workloads".into(), self.workloads.into());
        doc.insert("steps".into(), self.steps.into());
        let mut text = String::from("# Generated by `storlab fio` from fio job files:");
        for n in names {
            text.push_str(&format!(" {n}"));
        }
        text.push('\n');
        for n in notes {
            text.push_str(&format!("# substitution: {n}\n"));
        }
        text.push_str(&toml::to_string(&doc).unwrap_or_default());
        text
    }
}

impl GroupStep<'_> {
    /// Target `name` (file `path`) of job `j` added to the step; its target table, or None
    /// (with the error) when it cannot run in this group.
    fn add_target(
        &mut self,
        j: &Job,
        at: Place,
        job_workload: Option<&str>,
        errors: &mut Vec<LineError>,
    ) -> Option<toml::Table> {
        let (name, path) = (at.name, at.path);
        let null = j.engine.runs_on() == Runner::Null;
        if null && j.verify {
            errors.push(err(
                j,
                format!(
                    "job `{}`: verify with ioengine=null: the null target keeps no data to read back",
                    j.name
                ),
            ));
            return None;
        }
        if j.verify && j.buffers.given {
            errors.push(err(
                j,
                format!(
                    "job `{}`: verify with buffer options is not supported by storlab fio: its verified blocks carry storlab's header and random data, not fio's buffers",
                    j.name
                ),
            ));
            return None;
        }
        let sharing = Sharing::of(j);
        let clash =
            |(p, s): &(PathBuf, Sharing)| p == path && (*s != sharing || sharing == Sharing::No);
        if !null && self.paths_seen.iter().any(clash) {
            errors.push(err(
                j,
                format!(
                    "job `{}` uses {} at the same time as another job of its group: not supported by storlab fio with verify or a set of files, or across engines (use numjobs, or stonewall)",
                    j.name,
                    path.display()
                ),
            ));
            return None;
        }
        self.paths_seen.push((path.to_path_buf(), sharing));
        let size = if null {
            j.size
        } else if j.files.set() {
            let sizes = super::files::sizes(j);
            Some(super::files::io_bytes(j, &sizes)).filter(|_| sizes.iter().any(|s| *s > 0))
        } else {
            j.size.or_else(|| super::files::existing_size(path))
        };
        if size.is_none() && null {
            errors.push(err(
                j,
                format!(
                    "job `{}`: ioengine=null needs a size, as fio's null engine does",
                    j.name
                ),
            ));
            return None;
        }
        if size.is_none() {
            errors.push(err(
                j,
                format!(
                    "job `{}`: {} does not exist: give a size, as fio needs one",
                    j.name,
                    path.display()
                ),
            ));
            return None;
        }
        let b = match bounds(j, size) {
            Ok(b) => b,
            Err(m) => {
                errors.push(err(j, format!("job `{}`: {m}", j.name)));
                return None;
            }
        };
        match &self.bounds {
            None => self.bounds = Some(b),
            Some(sb) if *sb != b => {
                errors.push(err(
                    j,
                    format!(
                        "job `{}` runs at the same time as job `{}` with another size, runtime or ramp_time: storlab bounds a group once; add `stonewall` to job `{}`",
                        j.name, self.first.name, j.name
                    ),
                ));
                return None;
            }
            Some(_) => {}
        }
        self.targets.push(name.to_string().into());
        if let Some(w) = job_workload {
            self.target_workloads
                .insert(name.to_string(), w.to_string().into());
        }
        let offset = match super::files::clone_offset(j, path, at.clone) {
            Ok(o) => o,
            Err((line, m)) => {
                let e = LineError {
                    file: j.file.clone(),
                    line,
                    message: format!("job `{}`: {m}", j.name),
                };
                // Said once, not for every clone.
                if !errors.contains(&e) {
                    errors.push(e);
                }
                return None;
            }
        };
        Some(target_table(j, path, offset))
    }

    /// The step's table: its workload and targets, bounds, caches and steady state.
    fn table(
        self,
        g: &Group,
        group_steady: &Result<Option<(String, f64, f64)>, String>,
    ) -> toml::Table {
        let mut s = toml::Table::new();
        s.insert("name".into(), g.step.clone().into());
        s.insert("workload".into(), g.step.clone().into());
        let together = self.targets.len() > 1;
        s.insert("targets".into(), self.targets.into());
        if !self.target_workloads.is_empty() {
            s.insert("target-workloads".into(), self.target_workloads.into());
        }
        if together {
            // fio seeds each job (and clone) by its number: each draws its own offsets.
            s.insert("together".into(), true.into());
            s.insert("distinct-seeds".into(), true.into());
        }
        if let Some((warmup, duration, ops)) = self.bounds {
            s.insert("warmup".into(), warmup.into());
            if let Some(d) = duration {
                s.insert("duration".into(), d.into());
            }
            if let Some(o) = ops {
                s.insert("ops".into(), (o as i64).into());
            }
        }
        if self.drop {
            s.insert("drop-caches".into(), true.into());
        }
        if let Ok(Some((criterion, window_s, ramp_s))) = group_steady {
            s.insert("steady-state".into(), criterion.clone().into());
            s.insert("steady-state-seconds".into(), (*window_s).into());
            if *ramp_s > 0.0 {
                s.insert("steady-state-ramp-seconds".into(), (*ramp_s).into());
            }
        }
        s
    }
}

/// The target of job `j`: a `file` target on `path`, or with ioengine=null a `null` target
/// of the job's size (fio's null engine opens no file).
fn target_table(j: &Job, path: &Path, offset: u64) -> toml::Table {
    let mut tt = toml::Table::new();
    let engine = match j.engine.runs_on() {
        Runner::Null => {
            tt.insert("type".into(), "null".into());
            if let Some(s) = j.size {
                tt.insert("size".into(), (s as i64).into());
            }
            return tt;
        }
        Runner::FileOps(e) => return super::fileops::target_table(j, e, path),
        Runner::Psync => "psync",
        Runner::IoUring => "io-uring",
    };
    tt.insert("type".into(), "file".into());
    tt.insert("path".into(), path.display().to_string().into());
    tt.insert("engine".into(), engine.into());
    tt.insert("direct".into(), j.direct.into());
    if let Some(s) = j.size {
        tt.insert("size".into(), (s as i64).into());
    }
    if offset > 0 {
        tt.insert("offset".into(), (offset as i64).into());
    }
    super::files::target_keys(j, path, &mut tt);
    super::buffers::target_keys(j, &mut tt);
    super::prio::target_keys(j, &mut tt);
    tt
}
