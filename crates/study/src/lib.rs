//! Study files: TOML that names targets and workloads and lists steps, each step running one
//! workload on one or more targets, with a warm-up, measurement bounds, sweeps (lists of
//! values for workload parameters, multiplied together) and repetitions.
//!
//! A study is validated into a [`plan::Plan`] before anything runs. Every problem found is
//! reported with the file, the line and the key, and what was expected; all of them at once.
//! This file parses a study and checks its targets, workloads and steps; [`sweep`] counts the
//! runs the steps expand to and expands them; `checks` holds the checks of paths and regions
//! made here rather than when a run starts.

pub mod brief;
mod checks;
pub mod clients;
pub mod dbbench;
mod declare;
pub mod events;
pub mod fio;
pub mod plan;
mod quick;
pub use quick::{QUICK_EVENTS_SECONDS, QUICK_KEYS, QUICK_WAIT_SECONDS};
mod raid;
pub mod schedule;
pub mod signal;
pub mod steady;
mod step;
pub mod sweep;
pub mod ycsb;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use plan::Plan;
use storlab_model::units::Dur;
use storlab_targets::TargetConfig;
use storlab_workload::Workload;

/// How large a plan a study may expand to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most runs; None: no limit (`--allow-large-plan`).
    pub max_runs: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_runs: Some(sweep::MAX_RUNS),
        }
    }
}

/// One problem in a study file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyError {
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted key, e.g. `workloads.randread.block-size`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for StudyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: ", self.file, l)?,
            None => write!(f, "{}: ", self.file)?,
        }
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)
    }
}

/// Every problem found in a study file.
#[derive(Debug, Clone)]
pub struct StudyErrors(pub Vec<StudyError>);

impl fmt::Display for StudyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StudyErrors {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawStudy {
    name: Option<Spanned<String>>,
    description: Option<String>,
    /// Default `seed` of every workload that sets none.
    seed: Option<u64>,
    repetitions: Option<Spanned<u32>>,
    interval: Option<Spanned<Dur>>,
    #[serde(default)]
    targets: BTreeMap<String, Spanned<toml::Table>>,
    /// `[clients.NAME]`: see [`clients`].
    #[serde(default)]
    clients: BTreeMap<String, Spanned<toml::Table>>,
    #[serde(default)]
    workloads: BTreeMap<String, Spanned<toml::Table>>,
    #[serde(default)]
    steps: Vec<Spanned<RawStep>>,
    /// The array's geometry, for the RAID efficiency table.
    raid: Option<raid::RawRaid>,
    /// The brief's published figures: a file beside the study (`baselines/NAME.toml`).
    baseline: Option<Spanned<String>>,
    /// The target whose call-outs set it against each other target (a brief's product
    /// against each competitor); without it, the best against the worst.
    reference_target: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawStep {
    name: Option<Spanned<String>>,
    workload: Spanned<String>,
    targets: Spanned<Vec<Spanned<String>>>,
    /// Targets that run another workload than `workload`: target to workload name.
    #[serde(default)]
    target_workloads: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    together: bool,
    /// Each target of the step draws its own sequence (fio's jobs each draw theirs).
    #[serde(default)]
    distinct_seeds: bool,
    warmup: Option<Spanned<Dur>>,
    duration: Option<Spanned<Dur>>,
    /// The measurement under `--quick`, in place of quick mode's own (a run whose events take
    /// real time: a failover and a failback); at most `duration`.
    quick_duration: Option<Spanned<Dur>>,
    ops: Option<Spanned<u64>>,
    repetitions: Option<Spanned<u32>>,
    #[serde(default)]
    stop_on_error: bool,
    #[serde(default)]
    drop_caches: bool,
    /// Distributed runs: stop every rank when the first finishes its operations (IOR's
    /// stonewall).
    #[serde(default)]
    stonewall: bool,
    #[serde(default)]
    sweep: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    /// `[[steps.events]]`: see [`events`].
    #[serde(default)]
    events: Vec<Spanned<toml::Table>>,
    /// `[steps.schedule]`: see [`schedule`].
    schedule: Option<Spanned<schedule::RawSchedule>>,
    /// Steady state (fio's `ss`, `ss_dur`, `ss_ramp`): see [`steady`].
    steady_state: Option<Spanned<String>>,
    steady_state_seconds: Option<Spanned<f64>>,
    steady_state_ramp_seconds: Option<Spanned<f64>>,
}

/// Maps byte offsets in the source to lines and keys.
struct Source<'a> {
    file: String,
    text: &'a str,
}

impl Source<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> StudyError {
        StudyError {
            file: self.file.clone(),
            line: span.map(|s| self.line_of(s.start)),
            key: key.into(),
            message: message.into(),
        }
    }

    /// The dotted key written at `offset`: the nearest table header above plus the key on
    /// that line.
    fn key_at(&self, offset: usize) -> String {
        let line_no = self.line_of(offset);
        let lines: Vec<&str> = self.text.lines().collect();
        let Some(line) = lines.get(line_no - 1) else {
            return String::new();
        };
        let t = line.trim();
        if t.starts_with('[') {
            return t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        }
        let key = t.split('=').next().unwrap_or("").trim().trim_matches('"');
        let header = lines[..line_no - 1]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| l.starts_with('['))
            .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
        match header {
            Some(h) if !key.is_empty() => format!("{h}.{key}"),
            Some(h) => h.to_string(),
            None => key.to_string(),
        }
    }

    /// Finds the line of `key` in the table that starts at `span` (its header line up to the
    /// next header), or the table's own line.
    fn locate_in(
        &self,
        span: &std::ops::Range<usize>,
        key: &str,
    ) -> Option<std::ops::Range<usize>> {
        let first = key.split('.').next().unwrap_or("");
        if !first.is_empty() {
            let start = self.text[..span.start.min(self.text.len())]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let mut pos = start;
            for (n, line) in self.text[start..].split_inclusive('\n').enumerate() {
                let t = line.trim_start();
                if n > 0 && t.starts_with('[') {
                    break;
                }
                let quoted = format!("\"{first}\"");
                if let Some(rest) = t
                    .strip_prefix(first)
                    .or_else(|| t.strip_prefix(quoted.as_str()))
                    && rest.trim_start().starts_with('=')
                {
                    return Some(pos..pos + line.len());
                }
                pos += line.len();
            }
        }
        Some(span.clone())
    }
}

/// Reads and validates a study file into a plan of at most `limits` runs.
pub fn load(path: &Path, limits: Limits) -> Result<Plan, StudyErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        StudyErrors(vec![StudyError {
            file: path.display().to_string(),
            line: None,
            key: String::new(),
            message: format!("cannot read the study file: {e}"),
        }])
    })?;
    let mut plan = parse_with(&path.display().to_string(), &text, limits)?;
    plan.source_path = Some(path.to_path_buf());
    Ok(plan)
}

/// Validates study text into a plan of at most [`sweep::MAX_RUNS`] runs. `file` names it in
/// errors.
pub fn parse(file: &str, text: &str) -> Result<Plan, StudyErrors> {
    parse_with(file, text, Limits::default())
}

/// Validates study text into a plan of at most `limits` runs. `file` names it in errors.
pub fn parse_with(file: &str, text: &str, limits: Limits) -> Result<Plan, StudyErrors> {
    let src = Source {
        file: file.to_string(),
        text,
    };
    let raw = read_raw(&src)?;
    let mut errors = Vec::new();
    let targets = declare::targets(&src, &raw.targets, &mut errors);
    let clients = clients::parse(&raw.clients, &src, &mut errors);
    declare::check_clients(&src, &clients, &targets, &mut errors);
    let workloads = declare::workloads(&src, &raw.workloads, raw.seed, &mut errors);
    let (repetitions, interval) = study_defaults(&src, &raw, &mut errors);

    let declared = step::Declared {
        src: &src,
        raw: &raw,
        targets: &targets,
        clients: &clients,
        workloads: &workloads,
        repetitions,
        interval,
    };
    let mut so_far = step::StepsSoFar::default();
    let steps: Vec<sweep::Step> = raw
        .steps
        .iter()
        .enumerate()
        .filter_map(|(si, step)| declared.step(si, step, &mut so_far, &mut errors))
        .collect();

    let target_names: Vec<&String> = raw.targets.keys().collect();
    let raid = raw
        .raid
        .as_ref()
        .and_then(|r| raid::check(&src, r, &target_names, &mut errors));

    let baseline = raw
        .baseline
        .as_ref()
        .and_then(|b| read_baseline(&src, b, &mut errors));
    let reference_target = raw.reference_target.as_ref().and_then(|r| {
        if raw.targets.contains_key(r.get_ref()) {
            return Some(r.get_ref().clone());
        }
        let known = target_names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>();
        let message = format!(
            "`{}` is not a target of this study (its targets: {})",
            r.get_ref(),
            known.join(", ")
        );
        errors.push(src.error(Some(r.span()), "reference-target", message));
        None
    });

    // Count before expanding: a study of millions of runs is refused, not expanded.
    let mut runs = Vec::new();
    let too_large = limits
        .max_runs
        .and_then(|max| sweep::refuse_large(&src, &steps, max));
    match too_large {
        Some(err) => errors.push(err),
        None => {
            for step in &steps {
                sweep::expand(&src, step, Dur(interval), &mut runs, &mut errors);
            }
        }
    }

    if !errors.is_empty() {
        errors.sort_by_key(|e| e.line.unwrap_or(0));
        return Err(StudyErrors(errors));
    }
    let mut plan = Plan {
        study: raw.name.map(|n| n.into_inner()).unwrap_or_else(|| {
            Path::new(file)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("study")
                .to_string()
        }),
        description: raw.description,
        source_path: None,
        source_text: text.to_string(),
        runs,
        raid,
        baseline,
        reference_target,
    };
    plan.name_the_reference();
    plan.equalize_raid_load();
    Ok(plan)
}

/// The baseline file a study names, found beside the study file (or, failing that, from the
/// current folder), read and checked; a problem is the study's `baseline` key's, and names
/// the baseline file and its line.
fn read_baseline(
    src: &Source,
    path: &Spanned<String>,
    errors: &mut Vec<StudyError>,
) -> Option<storlab_model::baseline::Baseline> {
    let given = Path::new(path.get_ref());
    let beside = Path::new(&src.file)
        .parent()
        .map(|d| d.join(given))
        .filter(|p| given.is_relative() && p.is_file());
    let file = beside.unwrap_or_else(|| given.to_path_buf());
    let read = std::fs::read_to_string(&file)
        .map_err(|e| e.to_string())
        .and_then(|text| storlab_model::baseline::Baseline::from_toml(&text));
    read.map_err(|message| {
        let message = format!("{}: {}", file.display(), message.trim());
        errors.push(src.error(Some(path.span()), "baseline", message));
    })
    .ok()
}

/// The study text read as TOML into its raw tables; a syntax error or an unknown key is the
/// one error.
fn read_raw(src: &Source) -> Result<RawStudy, StudyErrors> {
    toml::from_str(src.text).map_err(|e| {
        let span = e.span();
        let key = span
            .as_ref()
            .map(|s| src.key_at(s.start))
            .unwrap_or_default();
        StudyErrors(vec![src.error(
            span,
            key,
            e.message().trim().replace('\n', "; "),
        )])
    })
}

/// The study's own keys that steps inherit, checked: `repetitions` and the sampling
/// `interval`. A study without steps is an error too, when nothing else is wrong yet.
fn study_defaults(
    src: &Source,
    raw: &RawStudy,
    errors: &mut Vec<StudyError>,
) -> (Option<u32>, std::time::Duration) {
    if raw.steps.is_empty() && errors.is_empty() {
        errors.push(src.error(None, "steps", "the study has no [[steps]]: add at least one, e.g.\n  [[steps]]\n  workload = \"randread\"\n  targets = [\"disk\"]\n  duration = \"30s\""));
    }
    let study_reps = raw.repetitions.as_ref().map(|r| (*r.get_ref(), r.span()));
    if let Some((0, span)) = &study_reps {
        errors.push(src.error(
            Some(span.clone()),
            "repetitions",
            "repetitions must be at least 1",
        ));
    }
    let interval = raw
        .interval
        .as_ref()
        .map(|i| i.get_ref().0)
        .unwrap_or(storlab_model::rate::DEFAULT_INTERVAL);
    if let Some(i) = &raw.interval
        && i.get_ref().0 < std::time::Duration::from_millis(10)
    {
        errors.push(src.error(Some(i.span()), "interval", "interval must be at least 10ms"));
    }
    (study_reps.map(|r| r.0), interval)
}

/// Why a target cannot run a workload, with the workload key to blame: the rules are the
/// target's own declaration (see [`storlab_targets::check_workload`]).
fn capability_problem(t: &TargetConfig, w: &Workload) -> Option<(&'static str, String)> {
    storlab_targets::check_workload(t, w)
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn list(names: &[&String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// This machine's host name: the `client` of a target that names none.
pub fn local_host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

/// Replaces `${NAME}` and `${NAME:-default}` with environment variables.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without a closing `}}` in {text:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{inner}}}`: not an environment variable name"));
        }
        match (std::env::var(name), default) {
            (Ok(v), _) if !v.is_empty() => out.push_str(&v),
            (_, Some(d)) => out.push_str(d),
            _ => {
                return Err(format!(
                    "environment variable {name} is not set (write ${{{name}:-default}} to give a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
