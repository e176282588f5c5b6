//! The study's declarations, checked before its steps: `[targets.NAME]` (environment
//! variables expanded, `client` and `type` read, the type's own options parsed, paths
//! checked), `[clients.NAME]` (each one some target's client) and `[workloads.NAME]` (each
//! validated as written, the study's `seed` given to those that set none).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::clients::Client;
use super::{Source, StudyError, checks, expand_env, local_host_name};
use storlab_model::OptionError;
use storlab_targets::{REGISTRY, TargetConfig, TargetType, find_type};
use storlab_workload::Workload;

/// Valid targets by name: the parsed configuration, the client host and the table's span.
pub(super) type Targets = BTreeMap<String, (TargetConfig, String, Range<usize>)>;

/// Valid workloads by name: the table (with the study's seed) and its span.
pub(super) type Workloads = BTreeMap<String, (toml::Table, Range<usize>)>;

/// The valid targets, read in file order; every problem goes to `errors`.
pub(super) fn targets(
    src: &Source,
    raw: &BTreeMap<String, Spanned<toml::Table>>,
    errors: &mut Vec<StudyError>,
) -> Targets {
    let mut targets = Targets::new();
    let mut target_list: Vec<(&String, &Spanned<toml::Table>)> = raw.iter().collect();
    target_list.sort_by_key(|(_, t)| t.span().start);
    for (name, table) in target_list {
        if let Some(target) = target(src, name, table, errors) {
            targets.insert(name.clone(), target);
        }
    }
    targets
}

/// One target: None when any of its keys is wrong (the problems in `errors`).
fn target(
    src: &Source,
    name: &str,
    table: &Spanned<toml::Table>,
    errors: &mut Vec<StudyError>,
) -> Option<(TargetConfig, String, Range<usize>)> {
    let span = table.span();
    let mut t = expand_target_env(src, name, &span, table.get_ref().clone(), errors)?;
    let client = target_client(src, name, &span, &mut t, errors)?;
    let ty = target_type(src, name, &span, &mut t, errors)?;
    match (ty.parse)(t) {
        Ok(c) => {
            let mut bad_path = false;
            for path in c.paths() {
                if let Some(message) = checks::path_problem(&path) {
                    errors.push(src.error(
                        src.locate_in(&span, "path"),
                        format!("targets.{name}.path"),
                        message,
                    ));
                    bad_path = true;
                }
            }
            (!bad_path).then_some((c, client, span))
        }
        Err(OptionError { key, message }) => {
            let full = if key.is_empty() {
                format!("targets.{name}")
            } else {
                format!("targets.{name}.{key}")
            };
            errors.push(src.error(src.locate_in(&span, &key), full, message));
            None
        }
    }
}

/// `${VAR}` and `${VAR:-default}` in a target's strings come from the environment, so one
/// study file runs on each machine's own devices. None when any of them cannot be expanded.
fn expand_target_env(
    src: &Source,
    name: &str,
    span: &Range<usize>,
    mut t: toml::Table,
    errors: &mut Vec<StudyError>,
) -> Option<toml::Table> {
    let mut env_error = false;
    for (key, value) in t.iter_mut() {
        if let toml::Value::String(text) = value {
            match expand_env(text) {
                Ok(expanded) => *text = expanded,
                Err(message) => {
                    errors.push(src.error(
                        src.locate_in(span, key),
                        format!("targets.{name}.{key}"),
                        message,
                    ));
                    env_error = true;
                }
            }
        }
    }
    (!env_error).then_some(t)
}

/// `client`, taken out of the table: the client host (IOmeter's manager) whose connections
/// the target uses; this machine when the target names none.
fn target_client(
    src: &Source,
    name: &str,
    span: &Range<usize>,
    t: &mut toml::Table,
    errors: &mut Vec<StudyError>,
) -> Option<String> {
    match t.remove("client") {
        None => Some(local_host_name()),
        Some(toml::Value::String(c)) if !c.trim().is_empty() => Some(c),
        Some(_) => {
            errors.push(src.error(
                src.locate_in(span, "client"),
                format!("targets.{name}.client"),
                "`client` is a non-empty string naming the client host (IOmeter's manager)",
            ));
            None
        }
    }
}

/// `type`, taken out of the table and looked up in the registry.
fn target_type(
    src: &Source,
    name: &str,
    span: &Range<usize>,
    t: &mut toml::Table,
    errors: &mut Vec<StudyError>,
) -> Option<&'static TargetType> {
    let type_name = match t.remove("type") {
        Some(toml::Value::String(s)) => s,
        Some(_) => {
            errors.push(src.error(
                src.locate_in(span, "type"),
                format!("targets.{name}.type"),
                "`type` is a string naming a target type",
            ));
            return None;
        }
        None => {
            let names: Vec<&str> = REGISTRY.iter().map(|t| t.name).collect();
            errors.push(src.error(
                Some(span.clone()),
                format!("targets.{name}"),
                format!("missing `type`: one of {}", names.join(", ")),
            ));
            return None;
        }
    };
    let ty = find_type(&type_name);
    if ty.is_none() {
        let names: Vec<&str> = REGISTRY.iter().map(|t| t.name).collect();
        errors.push(src.error(
            src.locate_in(span, "type"),
            format!("targets.{name}.type"),
            format!(
                "unknown target type `{type_name}`: expected one of {}",
                names.join(", ")
            ),
        ));
    }
    ty
}

/// Every declared client is some target's `client` (a typo would otherwise leave a target
/// outside its namespace, silently).
pub(super) fn check_clients(
    src: &Source,
    clients: &BTreeMap<String, Client>,
    targets: &Targets,
    errors: &mut Vec<StudyError>,
) {
    for (name, c) in clients {
        if !targets.values().any(|(_, client, _)| client == name) {
            errors.push(src.error(
                Some(c.span.clone()),
                format!("clients.{name}"),
                format!("no target names client `{name}`: set `client = \"{name}\"` on the targets it drives"),
            ));
        }
    }
}

/// A relative path under `key` names the file beside the study file when there is one there
/// (a study runs from any folder); otherwise it stays relative to the current folder, as
/// YCSB's `-P` is. The plan stores the path used.
fn resolve_beside_study(src: &Source, table: &mut toml::Table, key: &str) {
    let Some(toml::Value::String(path)) = table.get(key) else {
        return;
    };
    let Some(dir) = Path::new(&src.file).parent() else {
        return;
    };
    let beside = dir.join(path);
    if Path::new(path).is_relative() && !dir.as_os_str().is_empty() && beside.is_file() {
        let beside = beside.to_string_lossy().into_owned();
        table.insert(key.into(), toml::Value::String(beside));
    }
}

/// The valid workloads, validated as written (sweeps are checked per point when the steps
/// are expanded); `seed` is the study's default seed.
pub(super) fn workloads(
    src: &Source,
    raw: &BTreeMap<String, Spanned<toml::Table>>,
    seed: Option<u64>,
    errors: &mut Vec<StudyError>,
) -> Workloads {
    let mut workloads = Workloads::new();
    for (name, table) in raw {
        let span = table.span();
        let mut table = table.get_ref().clone();
        if let Some(toml::Value::String(path)) = table.get("workload-file")
            && let Some(message) = checks::path_problem(Path::new(path))
        {
            errors.push(src.error(
                src.locate_in(&span, "workload-file"),
                format!("workloads.{name}.workload-file"),
                message,
            ));
            continue;
        }
        resolve_beside_study(src, &mut table, "workload-file");
        if let Some(seed) = seed {
            table
                .entry("seed")
                .or_insert(toml::Value::Integer(seed as i64));
        }
        match Workload::from_table(table.clone()) {
            Ok(_) => {
                workloads.insert(name.clone(), (table, span));
            }
            Err(OptionError { key, message }) => {
                errors.push(src.error(
                    src.locate_workload_key(&span, name, &key),
                    format!("workloads.{name}.{key}"),
                    message,
                ));
            }
        }
    }
    workloads
}
