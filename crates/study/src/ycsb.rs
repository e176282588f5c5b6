//! YCSB's command line, brought over: `storlab ycsb load|run DB -P workloads/workloada -p
//! name=value -threads N -target OPS -s` turns YCSB's arguments and properties into a study
//! (one target from the binding's properties, one ycsb workload, one step), so a YCSB command
//! runs through the same plan, engine and results store as any study.
//!
//! Properties keep YCSB's names: the core workload's, the client's (`threadcount`, `target`,
//! `maxexecutiontime`, `db`, `status.interval`) and the bindings' (`redis.host`,
//! `mongodb.url`, `db.url`, ...; see each target's module). A property nobody claims is an
//! error naming it and where it was set (file and line, or which `-p`), never ignored.

use std::fmt::Write as _;
use std::path::PathBuf;

use storlab_targets::{REGISTRY, TargetType, YcsbBinding, find_ycsb_binding};
use storlab_workload::ycsb::workload::{Phase, YcsbWorkload};
use storlab_workload::ycsb::{Origin, Properties, PropertyError};

/// What is wrong with a YCSB command line.
#[derive(Debug, thiserror::Error)]
pub enum YcsbArgError {
    #[error("{0}")]
    Property(#[from] PropertyError),
    #[error("`{0}` needs a value")]
    MissingValue(String),
    #[error("{flag} {value}: {message}")]
    BadValue {
        flag: String,
        value: String,
        message: String,
    },
    #[error("unsupported option {0}: storlab ycsb takes -P, -p, -threads, -target, -s, -db, -l")]
    Unsupported(String),
    #[error("name the database binding: storlab ycsb {phase} DB ... (one of {names})")]
    NoBinding { phase: &'static str, names: String },
    #[error("unknown database binding `{name}` (storlab has {names})")]
    UnknownBinding { name: String, names: String },
    #[error("{0}")]
    Workload(String),
    #[error("{}", .0.join("\n"))]
    Unknown(Vec<String>),
}

/// A parsed YCSB command.
pub struct YcsbCommand {
    pub phase: Phase,
    pub binding: &'static TargetType,
    pub workload: YcsbWorkload,
    /// The target's option table.
    pub target: toml::Table,
    /// YCSB properties for the study's workload table (the core workload's and the client's).
    pub properties: Vec<(String, String)>,
    /// `-s`: show progress.
    pub status: bool,
}

fn binding_names() -> String {
    let mut names = Vec::new();
    for t in REGISTRY {
        if let Some(y) = &t.ycsb {
            names.push(t.name);
            names.extend(y.names.iter().copied());
        }
    }
    names.join(", ")
}

/// Client properties storlab accepts and has nothing to do with (`db` names the binding,
/// status reporting is storlab's progress line).
const CLIENT_IGNORED: &[&str] = &["db", "status", "status.interval", "dotransactions"];

/// The command line's flags, as given.
#[derive(Default)]
struct Flags {
    /// The binding: `-db`, or the first word.
    db: Option<String>,
    /// `-s`.
    status: bool,
    /// `-p name=value`, in order.
    overrides: Vec<String>,
    /// `-P file`, in order.
    files: Vec<PathBuf>,
    /// `-threads` and `-target` as the client properties they stand for.
    client: Vec<(String, String)>,
}

/// Reads a `-P` property file's text.
pub type ReadFile<'a> = &'a dyn Fn(&std::path::Path) -> std::io::Result<String>;

/// Parses `args` (everything after `load` or `run`).
pub fn parse_args(phase: Phase, args: &[String]) -> Result<YcsbCommand, YcsbArgError> {
    parse_args_with(phase, args, &|p| std::fs::read_to_string(p))
}

/// Parses `args` with the `-P` files' text from `read_file` (the fuzz targets hand it text
/// that is no file).
pub fn parse_args_with(
    phase: Phase,
    args: &[String],
    read_file: ReadFile,
) -> Result<YcsbCommand, YcsbArgError> {
    let flags = read_flags(args)?;
    let mut props = properties(&flags, read_file)?;
    let db = flags
        .db
        .or_else(|| props.get("db").map(|p| p.value.clone()))
        .ok_or_else(|| YcsbArgError::NoBinding {
            phase: phase.name(),
            names: binding_names(),
        })?;
    let (binding, ycsb) = binding(&db)?;
    let target = (ycsb.options)(&mut props).map_err(|e| YcsbArgError::Workload(e.to_string()))?;
    for n in CLIENT_IGNORED {
        props.claim(n);
    }
    let queue_depth = batch_queue_depth(ycsb, &mut props)?;
    let core_names: Vec<String> = props.unclaimed().map(|p| p.name.clone()).collect();
    let mut workload = YcsbWorkload::from_properties(&mut props, phase)
        .map_err(|e| YcsbArgError::Workload(e.message))?;
    if let Some(q) = queue_depth {
        workload.queue_depth = q;
    }
    let unknown: Vec<String> = props
        .unclaimed()
        .map(|p| {
            format!(
                "unknown property `{}` ({}): not a property of YCSB's core workload, its client, or the {} binding; storlab will not ignore it",
                p.name, p.origin, binding.name
            )
        })
        .collect();
    if !unknown.is_empty() {
        return Err(YcsbArgError::Unknown(unknown));
    }
    let properties = core_names
        .iter()
        .filter_map(|n| props.get(n).map(|p| (p.name.clone(), p.value.clone())))
        .collect();
    Ok(YcsbCommand {
        phase,
        binding,
        workload,
        target,
        properties,
        status: flags.status,
    })
}

/// YCSB's flags read one by one; an unknown one is refused.
fn read_flags(args: &[String]) -> Result<Flags, YcsbArgError> {
    let mut flags = Flags::default();
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, YcsbArgError> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| YcsbArgError::MissingValue(flag.to_string()))
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-P" => flags.files.push(PathBuf::from(value(&mut i, a)?)),
            "-p" => flags.overrides.push(value(&mut i, a)?),
            "-threads" => flags.client.push(("threadcount".into(), value(&mut i, a)?)),
            "-target" => flags.client.push(("target".into(), value(&mut i, a)?)),
            "-db" => flags.db = Some(value(&mut i, a)?),
            "-l" => {
                value(&mut i, a)?;
            }
            "-s" => flags.status = true,
            _ if !a.starts_with('-') && flags.db.is_none() && i == 0 => {
                flags.db = Some(a.to_string())
            }
            _ => return Err(YcsbArgError::Unsupported(a.to_string())),
        }
        i += 1;
    }
    Ok(flags)
}

/// The properties of the `-P` files, then `-threads` and `-target`, then `-p` (which wins
/// over them, as in YCSB).
fn properties(flags: &Flags, read_file: ReadFile) -> Result<Properties, YcsbArgError> {
    let mut props = Properties::new();
    for f in &flags.files {
        let text = read_file(f).map_err(|source| PropertyError::Io {
            path: f.clone(),
            source,
        })?;
        props.parse_str(&text, f)?;
    }
    // -threads and -target are properties in YCSB too; -p wins over them.
    for (name, v) in &flags.client {
        if props
            .get(name)
            .is_none_or(|p| !matches!(p.origin, Origin::Override { .. }))
        {
            props.set(
                name,
                v,
                Origin::Override {
                    index: u32::MAX - 1,
                },
            );
        }
    }
    for o in &flags.overrides {
        props.set_override(o)?;
    }
    Ok(props)
}

/// The binding `db` names: storlab's name or YCSB's class name for it.
/// The target type standing in for YCSB's binding `db`, and its YCSB declaration.
fn binding(db: &str) -> Result<(&'static TargetType, &'static YcsbBinding), YcsbArgError> {
    find_ycsb_binding(db)
        .and_then(|t| Some((t, t.ycsb.as_ref()?)))
        .ok_or_else(|| YcsbArgError::UnknownBinding {
            name: db.to_string(),
            names: binding_names(),
        })
}

/// The load's batch, as the workload's queue depth: YCSB's mongodb `batchsize`, storlab's
/// `redis.pipeline`.
fn batch_queue_depth(
    binding: &YcsbBinding,
    props: &mut Properties,
) -> Result<Option<u32>, YcsbArgError> {
    if let Some(name) = binding.batch
        && let Some(p) = props.claim(name).cloned()
    {
        let n: u32 = p.value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
            YcsbArgError::Workload(format!("{p}: expected a whole number from 1"))
        })?;
        return Ok(Some(n));
    }
    Ok(None)
}

impl std::fmt::Debug for YcsbCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("YcsbCommand")
            .field("phase", &self.phase)
            .field("binding", &self.binding.name)
            .field("properties", &self.properties)
            .finish()
    }
}

impl YcsbCommand {
    /// The study this command describes.
    pub fn study_text(&self) -> String {
        self.text(false)
    }

    /// The study without passwords, as stored with the results.
    pub fn study_text_redacted(&self) -> String {
        self.text(true)
    }

    fn text(&self, redact: bool) -> String {
        let mut target = self.target.clone();
        if redact {
            for (k, v) in target.iter_mut() {
                if k == "password" {
                    *v = storlab_model::units::MASK.into();
                } else if let toml::Value::String(s) = v {
                    *v = storlab_model::units::redact_url(s).into();
                }
            }
        }
        target.insert("type".into(), self.binding.name.into());
        let mut w = toml::Table::new();
        w.insert("type".into(), "ycsb".into());
        w.insert("phase".into(), self.phase.name().into());
        w.insert(
            "queue-depth".into(),
            (self.workload.queue_depth as i64).into(),
        );
        let mut p = toml::Table::new();
        for (k, v) in &self.properties {
            p.insert(k.clone(), v.clone().into());
        }
        w.insert("properties".into(), p.into());
        let mut doc = toml::Table::new();
        doc.insert("name".into(), format!("ycsb-{}", self.phase.name()).into());
        let mut targets = toml::Table::new();
        targets.insert("db".into(), target.into());
        doc.insert("targets".into(), targets.into());
        let mut workloads = toml::Table::new();
        workloads.insert(self.phase.name().into(), w.into());
        doc.insert("workloads".into(), workloads.into());
        let mut s = String::from("# Generated by `storlab ycsb` from YCSB's command line.\n");
        s.push_str(&toml::to_string(&doc).unwrap_or_default());
        let _ = writeln!(
            s,
            "\n[[steps]]\nname = \"{0}\"\nworkload = \"{0}\"\ntargets = [\"db\"]",
            self.phase.name()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn workloads() -> String {
        format!(
            "{}/workloads",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
        )
    }

    #[test]
    fn a_redis_command_line_becomes_a_study() {
        let c = parse_args(
            Phase::Run,
            &args(&format!(
                "redis -P {}/workloada -p redis.host=127.0.0.1 -p redis.port=6380 -threads 4 -p recordcount=500 -p operationcount=1000",
                workloads()
            )),
        )
        .unwrap();
        assert_eq!(c.binding.name, "redis");
        assert_eq!(c.workload.threads, 4);
        assert_eq!(c.workload.core.record_count, 500);
        assert_eq!(c.target["port"].as_integer(), Some(6380));
        let text = c.study_text();
        let plan = crate::parse("ycsb.toml", &text).unwrap();
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.runs[0].targets[0].workload.threads(), 4);
        assert!(!text.contains("redis.host"), "{text}");
        let c = parse_args(
            Phase::Load,
            &args("jdbc -p recordcount=5 -p db.url=jdbc:postgresql://h:1/d -p db.passwd=sekrit"),
        )
        .unwrap();
        assert!(c.study_text().contains("sekrit"));
        assert!(!c.study_text_redacted().contains("sekrit"));
    }

    #[test]
    fn unknown_properties_are_named_with_where_they_were_set() {
        let e = parse_args(
            Phase::Load,
            &args(&format!(
                "basic -P {}/workloada -p recordcont=10 -p redis.host=x",
                workloads()
            )),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`recordcont` (-p override #1)"), "{text}");
        assert!(text.contains("`redis.host`"), "{text}");
        let e = parse_args(Phase::Load, &args("cassandra-cql -p recordcount=1")).unwrap_err();
        assert!(e.to_string().contains("unknown database binding"), "{e}");
        let e = parse_args(Phase::Load, &args("basic -p recordcount=1 -x")).unwrap_err();
        assert!(matches!(e, YcsbArgError::Unsupported(_)));
    }
}
