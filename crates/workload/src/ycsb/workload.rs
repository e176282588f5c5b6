//! YCSB in study files: a `[workloads.NAME]` table with `type = "ycsb"` names a phase
//! (`phase = "load"` or `"run"`), optionally a YCSB workload file (`workload-file =
//! "workloads/workloada"`, relative to the current directory as with YCSB's `-P`), and
//! overrides. An override is a YCSB property written kebab-case: the property name with
//! dashes between its words (`record-count` is `recordcount`, `read-modify-write-proportion`
//! is `readmodifywriteproportion`); properties whose names do not split into words that way
//! go into a `properties` table under their own names (`properties = { "exponential.frac" =
//! 0.5 }`). storlab's own keys: `threads` (YCSB's threadcount), `rate-ops` (YCSB's target,
//! ops/s for all threads), `queue-depth` (operations in flight per thread, for targets that
//! pipeline), `seed`.
//!
//! A load phase inserts `insertcount` records split over the threads as YCSB's client does; a
//! run phase does `operationcount` operations; a step running either needs no `ops` or
//! `duration` (those still bound it if given). Every property must be understood: one that
//! neither the core workload nor storlab claims is an error naming the key, or the file and
//! line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::core::{CoreSource, CoreWorkload, LoadSource, WorkloadError};
use super::generators::AckError;
use super::properties::{Origin, Properties, Property};
use storlab_model::units::MAX_DURATION_SECS;
use storlab_model::{ErrorKind, OpError, OpKind};
use storlab_model::{Op, OptionError};

/// The phase a workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Insert the records (YCSB's `load`, `-load`).
    Load,
    /// Run the operation mix (YCSB's `run`, `-t`).
    Run,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Run => "run",
        }
    }
}

/// A YCSB workload as a study gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct YcsbWorkload {
    pub phase: Phase,
    pub workload_file: Option<PathBuf>,
    /// YCSB properties set in the table, by YCSB name (they win over the file's).
    pub properties: BTreeMap<String, String>,
    pub threads: u32,
    pub queue_depth: u32,
    /// Open loop: operations per second for all threads (YCSB's `target`).
    pub rate_ops: Option<f64>,
    /// Run bound in seconds (YCSB's `maxexecutiontime`).
    pub max_execution_seconds: Option<u64>,
    pub seed: u64,
    /// The scale `--quick` runs at (`quick = { record-count = .., operation-count = ..,
    /// threads = .. }`); without it, at most 10,000 records, 20,000 operations, 8 threads.
    pub quick: QuickScale,
    /// Verified key-value writes: every value written carries a stamp, storlab keeps each
    /// key's acknowledged writes, and a verify pass reads them back after the run (see
    /// [`storlab_verify::kv`]).
    pub verify: bool,
    /// Where to save the table of acknowledged writes when the run ends, for `storlab verify
    /// PATH`. With several targets in one run, `PATH.TARGET` each.
    pub verify_state: Option<PathBuf>,
    /// The classes of damage the study expects its verify pass to find (`verify-expect`: a
    /// fault it injects, as a Redis Cluster master lost with writes not yet replicated):
    /// found, they are reported but do not fail the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verify_expect: Vec<storlab_verify::kv::KvClass>,
    /// The core workload these resolve to.
    #[serde(skip)]
    pub core: Arc<CoreWorkload>,
}

/// The caps `--quick` puts on a ycsb workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct QuickScale {
    pub record_count: u64,
    pub operation_count: u64,
    pub threads: u32,
}

impl Default for QuickScale {
    fn default() -> Self {
        QuickScale {
            record_count: 10_000,
            operation_count: 20_000,
            threads: 8,
        }
    }
}

impl QuickScale {
    fn from_value(v: toml::Value) -> Result<QuickScale, OptionError> {
        let toml::Value::Table(t) = v else {
            return Err(err(
                "quick",
                "quick is a table: { record-count = N, operation-count = N, threads = N }",
            ));
        };
        let mut q = QuickScale::default();
        for (k, v) in t {
            let key = format!("quick.{k}");
            let n = match v {
                toml::Value::Integer(i) if i >= 1 => i as u64,
                _ => return Err(err(&key, format!("{key} is a whole number from 1"))),
            };
            match k.as_str() {
                "record-count" => q.record_count = n,
                "operation-count" => q.operation_count = n,
                "threads" => q.threads = n.min(4096) as u32,
                _ => {
                    return Err(err(
                        &key,
                        format!(
                            "unknown key `{k}` in quick (it takes record-count, operation-count, threads)"
                        ),
                    ));
                }
            }
        }
        Ok(q)
    }
}

/// Keys of a ycsb workload table that a sweep may vary.
pub const SWEEPABLE: &[&str] = &[
    "threads",
    "rate-ops",
    "queue-depth",
    "seed",
    "record-count",
    "operation-count",
    "read-proportion",
    "update-proportion",
    "insert-proportion",
    "scan-proportion",
    "read-modify-write-proportion",
    "request-distribution",
    "field-count",
    "field-length",
    "max-scan-length",
];

/// Properties of YCSB's client that storlab takes (from a study's keys or `-p`).
pub const CLIENT_TAKEN: &[&str] = &["threadcount", "target", "maxexecutiontime"];

fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

fn value_text(v: &toml::Value) -> Option<String> {
    Some(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        _ => return None,
    })
}

/// An open-loop rate must leave at most [`MAX_DURATION_SECS`] between one thread's operations,
/// so that the schedule of intended starts fits a u64 of nanoseconds.
fn check_rate(rate_ops: f64, threads: u32, key: &str, shown: &str) -> Result<(), OptionError> {
    let gap_secs = threads.max(1) as f64 / rate_ops;
    if gap_secs > MAX_DURATION_SECS as f64 {
        return Err(err(
            key,
            format!(
                "{shown}: leaves {gap_secs:.3e} s between one thread's operations ({threads} threads); at most {MAX_DURATION_SECS} s (100 years)"
            ),
        ));
    }
    Ok(())
}

/// The study key a property came from, or "workload-file" for a file's.
fn key_of(p: &Property) -> String {
    match &p.origin {
        Origin::Study { key } => key.clone(),
        _ => "workload-file".into(),
    }
}

/// Turns a core workload error into an error on the right key.
pub fn workload_error(e: WorkloadError) -> OptionError {
    match &e {
        WorkloadError::Invalid { property, .. } => err(&key_of(property), e.to_string()),
        WorkloadError::Conflict { properties, .. } => err(
            &properties.first().map(key_of).unwrap_or_default(),
            e.to_string(),
        ),
    }
}

/// YCSB properties from a workload table: the `workload-file`'s, then the table's own keys
/// (`-` dropped from their names), then `properties.NAME` by YCSB's own names.
fn table_properties(
    table: &toml::Table,
    raw: &toml::Table,
    workload_file: Option<&std::path::Path>,
) -> Result<Properties, OptionError> {
    let mut props = Properties::new();
    if let Some(f) = workload_file {
        props
            .load_file(f)
            .map_err(|e| err("workload-file", e.to_string()))?;
    }
    for (k, v) in table {
        let value = value_text(v)
            .ok_or_else(|| err(k, "a YCSB property is a string, number or boolean"))?;
        let name: String = k.chars().filter(|c| *c != '-').collect();
        props.set(&name, &value, Origin::Study { key: k.clone() });
    }
    for (k, v) in raw {
        let key = format!("properties.{k}");
        let value = value_text(v)
            .ok_or_else(|| err(&key, "a YCSB property is a string, number or boolean"))?;
        props.set(k, &value, Origin::Study { key });
    }
    Ok(props)
}

impl YcsbWorkload {
    /// Builds the workload from its table (`type` already removed).
    pub fn from_table(mut table: toml::Table) -> Result<YcsbWorkload, OptionError> {
        let mut take = |k: &str| table.remove(k);
        let phase = match take("phase") {
            Some(toml::Value::String(s)) if s == "load" => Phase::Load,
            Some(toml::Value::String(s)) if s == "run" => Phase::Run,
            Some(_) => return Err(err("phase", "phase is \"load\" or \"run\"")),
            None => return Err(err("phase", "missing `phase`: \"load\" or \"run\"")),
        };
        let workload_file = match take("workload-file") {
            Some(toml::Value::String(s)) => Some(PathBuf::from(s)),
            Some(_) => return Err(err("workload-file", "workload-file is a path (a string)")),
            None => None,
        };
        let int =
            |v: Option<toml::Value>, key: &str, min: i64| -> Result<Option<i64>, OptionError> {
                match v {
                    None => Ok(None),
                    Some(toml::Value::Integer(i)) if i >= min => Ok(Some(i)),
                    Some(_) => Err(err(key, format!("{key} is a whole number from {min}"))),
                }
            };
        let threads = int(take("threads"), "threads", 1)?;
        let queue_depth = int(take("queue-depth"), "queue-depth", 1)?.unwrap_or(1);
        let seed = int(take("seed"), "seed", 0)?.unwrap_or(0x5eed) as u64;
        let rate_ops = match take("rate-ops") {
            None => None,
            Some(toml::Value::Integer(i)) if i > 0 => Some(i as f64),
            Some(toml::Value::Float(f)) if f > 0.0 && f.is_finite() => Some(f),
            Some(_) => {
                return Err(err(
                    "rate-ops",
                    "rate-ops is a number of operations per second above 0",
                ));
            }
        };
        let quick = take("quick")
            .map(QuickScale::from_value)
            .transpose()?
            .unwrap_or_default();
        let verify = match take("verify") {
            None => false,
            Some(toml::Value::Boolean(b)) => b,
            Some(_) => return Err(err("verify", "verify is true or false")),
        };
        let verify_state = match take("verify-state") {
            None => None,
            Some(toml::Value::String(s)) => Some(PathBuf::from(s)),
            Some(_) => return Err(err("verify-state", "verify-state is a path (a string)")),
        };
        let verify_expect = match take("verify-expect") {
            None => Vec::new(),
            Some(v) => expected_classes(&v, verify).map_err(|m| err("verify-expect", m))?,
        };
        let raw = match take("properties") {
            None => toml::Table::new(),
            Some(toml::Value::Table(t)) => t,
            Some(_) => {
                return Err(err(
                    "properties",
                    "properties is a table of YCSB properties by their own names",
                ));
            }
        };

        let mut props = table_properties(&table, &raw, workload_file.as_deref())?;
        let mut w = YcsbWorkload::from_properties(&mut props, phase)?;
        if let Some(t) = threads {
            w.threads = t as u32;
        }
        if rate_ops.is_some() {
            w.rate_ops = rate_ops;
        }
        w.queue_depth = queue_depth as u32;
        if let (Some(rate), Some(_)) = (w.rate_ops, rate_ops) {
            check_rate(rate, w.threads, "rate-ops", &format!("rate-ops = {rate:e}"))?;
        }
        w.seed = seed;
        w.quick = quick;
        w.workload_file = workload_file;
        w.verify = verify;
        w.verify_state = verify_state;
        w.verify_expect = verify_expect;
        if let Some(p) = props.unclaimed().next() {
            return Err(err(
                &key_of(p),
                format!(
                    "{p}: not a property of YCSB's core workload or of storlab's ycsb workloads (bindings' properties go in the target's table)"
                ),
            ));
        }
        if w.threads > 4096 || w.queue_depth > 4096 {
            return Err(err(
                "threads",
                "threads and queue-depth must be at most 4096",
            ));
        }
        w.check_verify()?;
        Ok(w)
    }

    /// The workload from YCSB properties, claiming the core workload's and the client's
    /// `threadcount`, `target` and `maxexecutiontime`; whatever else is there stays unclaimed
    /// for the caller to report.
    pub fn from_properties(
        props: &mut Properties,
        phase: Phase,
    ) -> Result<YcsbWorkload, OptionError> {
        let core = CoreWorkload::from_properties(props).map_err(workload_error)?;
        let mut number = |name: &str| -> Result<Option<f64>, OptionError> {
            match props.claim(name).cloned() {
                None => Ok(None),
                Some(p) => p
                    .value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| *x >= 0.0 && x.is_finite())
                    .map(Some)
                    .ok_or_else(|| err(&key_of(&p), format!("{p}: expected a number from 0"))),
            }
        };
        let threads = number("threadcount")?.map_or(1, |t| t.max(1.0) as u32);
        let rate_ops = number("target")?.filter(|t| *t > 0.0);
        let max_execution = number("maxexecutiontime")?;
        // Where each was set, for errors.
        let key = |name: &str| props.get(name).map_or_else(|| name.to_owned(), key_of);
        let shown = |name: &str| {
            props
                .get(name)
                .map_or_else(|| name.to_owned(), |p| p.to_string())
        };
        if let Some(rate) = rate_ops {
            check_rate(rate, threads, &key("target"), &shown("target"))?;
        }
        let max_execution_seconds = match max_execution {
            Some(secs) if secs > MAX_DURATION_SECS as f64 => {
                return Err(err(
                    &key("maxexecutiontime"),
                    format!(
                        "{}: at most {MAX_DURATION_SECS} seconds (100 years; YCSB takes at most 2147483647)",
                        shown("maxexecutiontime")
                    ),
                ));
            }
            Some(secs) if secs > 0.0 => Some(secs as u64),
            _ => None,
        };
        let mut properties = BTreeMap::new();
        for p in props.iter() {
            properties.insert(p.name.clone(), p.value.clone());
        }
        if phase == Phase::Run && core.operation_count == 0 && max_execution_seconds.is_none() {
            return Err(err(
                "operation-count",
                "a run phase needs operationcount (or maxexecutiontime)",
            ));
        }
        Ok(YcsbWorkload {
            phase,
            workload_file: None,
            properties,
            threads,
            queue_depth: 1,
            rate_ops,
            max_execution_seconds,
            seed: 0x5eed,
            quick: QuickScale::default(),
            verify: false,
            verify_state: None,
            verify_expect: Vec::new(),
            core: Arc::new(core),
        })
    }

    /// What `verify = true` needs: writes, fields long enough for the stamp, a bounded key
    /// space. `verify-state` needs `verify`.
    fn check_verify(&self) -> Result<(), OptionError> {
        if self.verify_state.is_some() && !self.verify {
            return Err(err("verify-state", "verify-state needs verify = true"));
        }
        if !self.verify {
            return Ok(());
        }
        if !self.writes() {
            return Err(err(
                "verify",
                "verify checks written records: this workload writes none (give it an update, insert or read-modify-write proportion)",
            ));
        }
        let c = &self.core;
        let min_len = match c.field_length_distribution {
            super::core::FieldLengthDistribution::Constant => c.field_length_bytes,
            _ => c.min_field_length_bytes.min(c.field_length_bytes),
        };
        let need = storlab_verify::kv::header::HEADER_BYTES as u64;
        if min_len < need {
            return Err(err(
                "verify",
                format!(
                    "verify stamps every field value with a {need}-byte header: field values must be at least {need} bytes (field-length{}), here {min_len}",
                    if c.field_length_distribution == super::core::FieldLengthDistribution::Constant
                    {
                        ""
                    } else {
                        " and min-field-length"
                    }
                ),
            ));
        }
        if self.verify_keys(None).is_none() {
            return Err(err(
                "verify",
                "verify keeps a table entry per key the run can reach, so a run phase that inserts needs operation-count to bound its inserts",
            ));
        }
        Ok(())
    }

    /// The key numbers a verified workload can write, `0..N`: the records, plus one per
    /// operation of a run phase that inserts (`ops`: the step's bound, else the workload's).
    /// None when the inserts are not bounded.
    pub fn verify_keys(&self, ops: Option<u64>) -> Option<u64> {
        let c = &self.core;
        match self.phase {
            Phase::Load => Some(c.record_count),
            Phase::Run if c.proportions.insert > 0.0 => ops
                .or(self.total_ops())
                .and_then(|n| c.record_count.checked_add(n)),
            Phase::Run => Some(c.record_count),
        }
    }

    pub fn rate_per_thread(&self) -> Option<f64> {
        self.rate_ops.map(|r| r / self.threads as f64)
    }

    /// The operation kinds the phase issues.
    pub fn kinds(&self) -> Vec<OpKind> {
        if self.phase == Phase::Load {
            return vec![OpKind::Insert];
        }
        let p = self.core.proportions;
        [
            (p.read, OpKind::Read),
            (p.update, OpKind::Update),
            (p.insert, OpKind::Insert),
            (p.scan, OpKind::Scan),
            (p.read_modify_write, OpKind::ReadModifyWrite),
        ]
        .into_iter()
        .filter(|(w, _)| *w > 0.0)
        .map(|(_, k)| k)
        .collect()
    }

    pub fn writes(&self) -> bool {
        self.kinds()
            .iter()
            .any(|k| matches!(k, OpKind::Update | OpKind::Insert | OpKind::ReadModifyWrite))
    }

    /// Operations of the phase over all threads: the records to load, or `operationcount`.
    pub fn total_ops(&self) -> Option<u64> {
        match self.phase {
            Phase::Load => Some(self.core.insert_count),
            Phase::Run => (self.core.operation_count > 0).then_some(self.core.operation_count),
        }
    }

    /// The sources of all threads, sharing one [`super::CoreRun`] (key counters).
    pub fn sources(&self) -> Vec<YcsbSource> {
        let run = match self.core.start(self.seed) {
            Ok(r) => Arc::new(r),
            // Checked when the workload was built.
            Err(e) => unreachable!("generators were checked: {e}"),
        };
        (0..self.threads)
            .map(|t| match self.phase {
                Phase::Load => YcsbSource::Load(run.load_source(self.threads, t)),
                Phase::Run => YcsbSource::Run(run.source(t)),
            })
            .collect()
    }

    pub fn describe(&self) -> String {
        let c = &self.core;
        if self.phase == Phase::Load {
            return format!(
                "ycsb load: insert records {}..{} of {}, {} threads",
                c.insert_start,
                c.insert_start + c.insert_count,
                c.record_count,
                self.threads
            );
        }
        let p = c.proportions;
        format!(
            "ycsb run records {} ops {} read {} update {} insert {} scan {} rmw {} {:?} threads {}",
            c.record_count,
            c.operation_count,
            p.read,
            p.update,
            p.insert,
            p.scan,
            p.read_modify_write,
            c.request_distribution,
            self.threads
        )
        .to_lowercase()
    }

    /// Quick mode: at most the workload's quick scale (by default 10,000 records, 20,000
    /// operations and 8 threads).
    pub fn make_quick(&mut self) {
        let q = self.quick;
        let mut c = (*self.core).clone();
        if c.record_count > q.record_count {
            c.record_count = q.record_count;
            c.insert_start = c.insert_start.min(c.record_count - 1);
            c.insert_count = c.insert_count.min(c.record_count - c.insert_start);
        }
        c.operation_count = c.operation_count.min(q.operation_count);
        self.core = Arc::new(c);
        self.threads = self.threads.min(q.threads);
        self.max_execution_seconds = self.max_execution_seconds.map(|s| s.min(1));
    }
}

/// A worker's YCSB operations: the load phase's inserts or the run phase's mix. Not boxed,
/// as [`crate::Source`].
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum YcsbSource {
    Load(LoadSource),
    Run(CoreSource),
}

impl YcsbSource {
    #[inline]
    pub fn next_op(&mut self) -> Option<Op> {
        match self {
            YcsbSource::Load(s) => s.next_op().map(Op::Ycsb),
            YcsbSource::Run(s) => Some(Op::Ycsb(s.next_op())),
        }
    }

    /// A run-phase insert is over (successful or not): readers may now choose its key. An
    /// insert 2^20 or more keys past the oldest one in flight overflows YCSB's acknowledgement
    /// window: an [`ErrorKind::InsertWindow`] error (YCSB throws "Too many unacknowledged
    /// insertion keys." and stops), for the worker to count and stop the run on.
    #[inline]
    pub fn acknowledge_insert(&mut self, keynum: u64) -> Result<(), OpError> {
        match self {
            YcsbSource::Run(s) => s.acknowledge_insert(keynum).map_err(ack_error),
            YcsbSource::Load(_) => Ok(()),
        }
    }
}

/// The operation error of an acknowledgement the insert counter refused.
pub fn ack_error(e: AckError) -> OpError {
    OpError {
        kind: match e {
            AckError::WindowFull { .. } => ErrorKind::InsertWindow,
            // A key acknowledged twice or never handed out: a fault of storlab's own.
            AckError::NotPending { .. } => ErrorKind::Other,
        },
        code: 0,
    }
}

/// `verify-expect`: an array of the key-value classes of damage (`lost`, `missing`,
/// `corrupt`, `unreadable`), on a workload with `verify = true`.
fn expected_classes(
    v: &toml::Value,
    verify: bool,
) -> Result<Vec<storlab_verify::kv::KvClass>, String> {
    use storlab_verify::kv::KvClass;
    let names = || {
        KvClass::ALL[1..]
            .iter()
            .map(|c| format!("`{}`", c.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !verify {
        return Err("verify-expect needs verify = true".into());
    }
    let Some(items) = v.as_array() else {
        return Err(format!(
            "verify-expect is an array of classes of damage: {}",
            names()
        ));
    };
    items
        .iter()
        .map(|item| {
            let name = item.as_str().unwrap_or_default();
            KvClass::ALL[1..]
                .iter()
                .copied()
                .find(|c| c.name() == name)
                .ok_or_else(|| format!("`{item}` is not a class of damage: {}", names()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<YcsbWorkload, OptionError> {
        let mut t: toml::Table = toml::from_str(text).unwrap();
        t.remove("type");
        YcsbWorkload::from_table(t)
    }

    fn file(name: &str) -> String {
        format!(
            "{}/workloads/{name}",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
        )
    }

    #[test]
    fn workload_a_with_kebab_overrides() {
        let w = table(&format!(
            "phase = \"run\"\nworkload-file = {:?}\nrecord-count = 5000\noperation-count = 20000\nthreads = 4\nproperties = {{ \"exponential.frac\" = 0.5 }}",
            file("workloada")
        ))
        .unwrap();
        assert_eq!(w.core.record_count, 5000);
        assert_eq!(w.core.operation_count, 20000);
        assert_eq!(w.core.exponential_frac, 0.5);
        assert_eq!(w.threads, 4);
        assert_eq!(w.kinds(), vec![OpKind::Read, OpKind::Update]);
        assert_eq!(w.total_ops(), Some(20000));
        assert_eq!(w.sources().len(), 4);
    }

    #[test]
    fn unknown_and_bad_properties_name_their_key() {
        let e = table("phase = \"load\"\nrecord-count = 10\nrecord-cuont = 5").unwrap_err();
        assert_eq!(e.key, "record-cuont");
        let e = table("phase = \"load\"\nrecord-count = \"many\"").unwrap_err();
        assert_eq!(e.key, "record-count");
        let e = table("record-count = 10").unwrap_err();
        assert_eq!(e.key, "phase");
        let e = table("phase = \"run\"\nrecord-count = 10").unwrap_err();
        assert_eq!(e.key, "operation-count");
    }

    #[test]
    fn verify_expect_names_classes_of_damage_on_a_verified_workload() {
        let load = "phase = \"load\"\nrecord-count = 1000";
        let w = table(&format!(
            "{load}\nverify = true\nverify-expect = [\"missing\", \"lost\"]"
        ))
        .unwrap();
        use storlab_verify::kv::KvClass;
        assert_eq!(w.verify_expect, [KvClass::Missing, KvClass::Lost]);
        for (bad, says) in [
            ("verify-expect = [\"lost\"]", "needs verify = true"),
            (
                "verify = true\nverify-expect = [\"intact\"]",
                "`\"intact\"` is not a class of damage: `lost`, `missing`",
            ),
            ("verify = true\nverify-expect = \"lost\"", "is an array"),
        ] {
            let e = table(&format!("{load}\n{bad}")).unwrap_err();
            assert_eq!(e.key, "verify-expect", "{bad}");
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn verify_sizes_the_key_space_and_refuses_what_cannot_work() {
        let w = table("phase = \"load\"\nrecord-count = 1000\nverify = true").unwrap();
        assert_eq!(w.verify_keys(None), Some(1000));
        let run = "phase = \"run\"\nrecord-count = 1000\noperation-count = 500\nverify = true";
        let w = table(&format!(
            "{run}\nupdate-proportion = 1\nread-proportion = 0"
        ))
        .unwrap();
        assert_eq!(w.verify_keys(Some(10_000)), Some(1000));
        // Inserts: one more key per operation, the step's bound first.
        let w = table(&format!(
            "{run}\ninsert-proportion = 0.5\nread-proportion = 0.5"
        ))
        .unwrap();
        assert_eq!(w.verify_keys(None), Some(1500));
        assert_eq!(w.verify_keys(Some(200)), Some(1200));
        for (text, key, says) in [
            (
                "phase = \"run\"\nrecord-count = 10\noperation-count = 10\nread-proportion = 1\nupdate-proportion = 0\nverify = true",
                "verify",
                "writes none",
            ),
            (
                "phase = \"load\"\nrecord-count = 10\nfield-length = 45\nverify = true",
                "verify",
                "at least 46 bytes",
            ),
            (
                "phase = \"load\"\nrecord-count = 10\nfield-length-distribution = \"uniform\"\nmin-field-length = 10\nverify = true",
                "verify",
                "(field-length and min-field-length), here 10",
            ),
            (
                "phase = \"run\"\nrecord-count = 10\nmax-execution-time = 5\ninsert-proportion = 1\nread-proportion = 0\nupdate-proportion = 0\nverify = true",
                "verify",
                "needs operation-count",
            ),
            (
                "phase = \"load\"\nrecord-count = 10\nverify-state = \"s\"",
                "verify-state",
                "needs verify = true",
            ),
        ] {
            let e = table(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {}", e.message);
            assert!(e.message.contains(says), "{text}: {}", e.message);
        }
    }

    #[test]
    fn load_sources_insert_every_key_once() {
        let w = table("phase = \"load\"\nrecord-count = 1000\nthreads = 3").unwrap();
        let mut seen = vec![false; 1000];
        for mut s in w.sources() {
            while let Some(Op::Ycsb(storlab_model::YcsbOp::Insert { keynum })) = s.next_op() {
                assert!(!seen[keynum as usize]);
                seen[keynum as usize] = true;
            }
        }
        assert!(seen.iter().all(|s| *s));
    }

    /// Durations and rates from user input cannot overflow: u64::MAX-like values are errors
    /// naming the property, never a panic or a wrapped count of nanoseconds.
    #[test]
    fn huge_durations_and_rates_are_errors_naming_the_property() {
        for (extra, key, says) in [
            (
                "properties = { maxexecutiontime = \"18446744073709551615\" }",
                "properties.maxexecutiontime",
                "maxexecutiontime=18446744073709551615: at most 3153600000 seconds",
            ),
            (
                "properties = { maxexecutiontime = 1e300 }",
                "properties.maxexecutiontime",
                "at most 3153600000 seconds",
            ),
            (
                "max-execution-time = 9223372036854775807",
                "max-execution-time",
                "maxexecutiontime=9223372036854775807: at most",
            ),
            (
                "target = 1e-300",
                "target",
                "leaves 1.000e300 s between one thread's operations (1 threads)",
            ),
            (
                "rate-ops = 1e-300",
                "rate-ops",
                "rate-ops = 1e-300: leaves 1.000e300 s",
            ),
        ] {
            let e = table(&format!(
                "phase = \"run\"\nrecord-count = 10\noperation-count = 10\n{extra}"
            ))
            .unwrap_err();
            assert_eq!(e.key, key, "{extra}: {}", e.message);
            assert!(e.message.contains(says), "{extra}: {}", e.message);
        }
        let w = table(
            "phase = \"run\"\nrecord-count = 10\nmax-execution-time = 3153600000\nrate-ops = 1e-9",
        )
        .unwrap();
        assert_eq!(w.max_execution_seconds, Some(3_153_600_000));
    }

    /// An insert acknowledged 2^20 keys past one still in flight is an insert-window-full
    /// error, as YCSB's "Too many unacknowledged insertion keys."; load sources have no window.
    #[test]
    fn insert_window_overflow_is_an_error() {
        let w = table(
            "phase = \"run\"\nrecord-count = 10\noperation-count = 10\ninsert-proportion = 1\nread-proportion = 0\nupdate-proportion = 0",
        )
        .unwrap();
        let mut sources = w.sources();
        let s = &mut sources[0];
        let mut keys = Vec::new();
        for _ in 0..=crate::ycsb::generators::ACK_WINDOW {
            match s.next_op() {
                Some(Op::Ycsb(storlab_model::YcsbOp::Insert { keynum })) => keys.push(keynum),
                other => panic!("{other:?}"),
            }
        }
        let (first, last) = (keys[0], keys[keys.len() - 1]);
        let e = s.acknowledge_insert(last).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InsertWindow);
        assert!(
            e.message()
                .starts_with("too many unacknowledged insert keys"),
            "{}",
            e.message()
        );
        s.acknowledge_insert(first).unwrap();
        s.acknowledge_insert(last).unwrap();
        let w = table("phase = \"load\"\nrecord-count = 10").unwrap();
        assert_eq!(w.sources()[0].acknowledge_insert(3), Ok(()));
    }
}
