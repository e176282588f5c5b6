//! A study's `[raid]` section: the array's geometry (level, member targets, array target,
//! strip size, `array-load`), checked against the study's targets, for the efficiency table
//! that the results' RAID table computes from the stored results; and the array's default
//! load ([`Plan::equalize_raid_load`]): as many operations in flight as the raw members
//! together, so that efficiency compares like with like.

use serde::Deserialize;
use toml::Spanned;

use super::plan::Plan;
use super::{Source, StudyError, expand_env};
use storlab_model::raid::{ArrayLoad, Geometry, Level, Pattern};
use storlab_model::units::parse_bytes;
use storlab_workload::Workload;
use storlab_workload::block::{Access, BlockWorkload};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawRaid {
    level: Spanned<toml::Value>,
    members: Spanned<Vec<Spanned<String>>>,
    array: Spanned<String>,
    /// Bytes, or a size text (`"128KiB"`, `"${VAR:-128KiB}"`).
    strip_size: Option<Spanned<toml::Value>>,
    /// `"equal"` (the default) or `"as-written"`.
    array_load: Option<Spanned<String>>,
    /// Targets that reach the array through a server (an NFS export of its filesystem).
    #[serde(default)]
    exports: Vec<Spanned<String>>,
}

/// The strip size: a whole number of bytes or a size text, `${VAR}` taken from the
/// environment.
fn strip_bytes(src: &Source<'_>, raw: &RawRaid, errors: &mut Vec<StudyError>) -> Option<u64> {
    let v = raw.strip_size.as_ref()?;
    let parsed = match v.get_ref() {
        toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
        toml::Value::String(text) => expand_env(text).and_then(|t| parse_bytes(&t)),
        other => Err(format!(
            "`{other}`: a size such as \"128KiB\" or a number of bytes"
        )),
    };
    match parsed {
        Ok(0) => {
            errors.push(src.error(Some(v.span()), "raid.strip-size", "must be above 0"));
            None
        }
        Ok(b) => Some(b),
        Err(message) => {
            errors.push(src.error(Some(v.span()), "raid.strip-size", message));
            None
        }
    }
}

fn array_load(src: &Source<'_>, raw: &RawRaid, errors: &mut Vec<StudyError>) -> ArrayLoad {
    match raw
        .array_load
        .as_ref()
        .map(|s| (s.get_ref().as_str(), s.span()))
    {
        None | Some(("equal", _)) => ArrayLoad::Equal,
        Some(("as-written", _)) => ArrayLoad::AsWritten,
        Some((other, span)) => {
            errors.push(src.error(
                Some(span),
                "raid.array-load",
                format!(
                    "`{other}`: \"equal\" (the array keeps as many operations in flight as the \
                     members together) or \"as-written\" (its workload's threads and queue depth)"
                ),
            ));
            ArrayLoad::Equal
        }
    }
}

/// Checks `[raid]` against the study's target names.
pub(super) fn check(
    src: &Source<'_>,
    raw: &RawRaid,
    target_names: &[&String],
    errors: &mut Vec<StudyError>,
) -> Option<Geometry> {
    let before = errors.len();
    let strip_bytes = strip_bytes(src, raw, errors);
    let array_load = array_load(src, raw, errors);
    let level_text = match raw.level.get_ref() {
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let level = match Level::parse(&level_text) {
        Ok(l) => Some(l),
        Err(message) => {
            errors.push(src.error(Some(raw.level.span()), "raid.level", message));
            None
        }
    };
    let mut members = Vec::new();
    for m in raw.members.get_ref() {
        let name = m.get_ref();
        if !target_names.contains(&name) {
            errors.push(src.error(
                Some(m.span()),
                "raid.members",
                format!("no target named `{name}`: members are target names"),
            ));
        } else if members.contains(name) {
            errors.push(src.error(
                Some(m.span()),
                "raid.members",
                format!("`{name}` is named twice"),
            ));
        } else {
            members.push(name.clone());
        }
    }
    let array = raw.array.get_ref();
    if !target_names.contains(&array) {
        errors.push(src.error(
            Some(raw.array.span()),
            "raid.array",
            format!(
                "no target named `{array}`: the array is a target (a file on it, or its device)"
            ),
        ));
    } else if members.contains(array) {
        errors.push(src.error(
            Some(raw.array.span()),
            "raid.array",
            format!("`{array}` is also a member"),
        ));
    }
    let exports = check_exports(src, raw, target_names, &members, errors);
    if let Some(level) = level
        && let Err(message) = level.check_members(raw.members.get_ref().len())
    {
        errors.push(src.error(Some(raw.members.span()), "raid.members", message));
    }
    if errors.len() > before {
        return None;
    }
    Some(Geometry {
        level: level?,
        members,
        array: array.clone(),
        strip_bytes,
        array_load,
        exports,
    })
}

/// `[raid] exports`: target names, neither a member nor the array itself.
fn check_exports(
    src: &Source<'_>,
    raw: &RawRaid,
    target_names: &[&String],
    members: &[String],
    errors: &mut Vec<StudyError>,
) -> Vec<String> {
    let mut exports: Vec<String> = Vec::new();
    for e in &raw.exports {
        let name = e.get_ref();
        let problem = if !target_names.contains(&name) {
            Some(format!(
                "no target named `{name}`: exports are targets that reach the array through a \
                 server (an nfs target on its export)"
            ))
        } else if members.contains(name) {
            Some(format!("`{name}` is a member"))
        } else if name == raw.array.get_ref() {
            Some(format!("`{name}` is the array itself"))
        } else if exports.contains(name) {
            Some(format!("`{name}` is named twice"))
        } else {
            None
        };
        match problem {
            Some(message) => errors.push(src.error(Some(e.span()), "raid.exports", message)),
            None => exports.push(name.clone()),
        }
    }
    exports
}

/// The pattern of a block workload: sequential or random, all reads or all writes.
fn block_pattern(w: &BlockWorkload) -> Option<Pattern> {
    Pattern::of(w.access == Access::Sequential, w.read_share)
}

/// Threads and queue depth of one run on all members at once: the threads summed and the
/// members' queue depth; None when the members' queue depths differ (then no threads x queue
/// depth on one target equals theirs for certain, and the array keeps its own).
fn members_load(workloads: &[&BlockWorkload]) -> Option<(Pattern, u32, u32)> {
    let first = workloads.first()?;
    let pattern = block_pattern(first)?;
    let same = workloads
        .iter()
        .all(|w| block_pattern(w) == Some(pattern) && w.queue_depth == first.queue_depth);
    let threads: u32 = workloads.iter().map(|w| w.threads).sum();
    same.then_some((pattern, threads.min(4096), first.queue_depth))
}

impl Plan {
    /// With `[raid] array-load = "equal"` (the default), every run on the array alone whose
    /// block workload is all reads or all writes runs as many threads as the first run of the
    /// same pattern on all members at once ran on the members together, at their queue
    /// depth: the same operations in flight on both sides (6 members x 1 thread x QD 32 =
    /// 192; the array 6 threads x QD 32 = 192). A run that sweeps `threads` or `queue-depth`,
    /// or follows a rate schedule, keeps its own; so does a pattern with no such raw run, and
    /// a run with events during measurement (a member failure, a rebuild: not an efficiency
    /// figure, the table describes it apart).
    /// Run again after [`Plan::make_quick`], which may cap the members' load.
    pub fn equalize_raid_load(&mut self) {
        let Some(g) = self.raid.as_ref() else {
            return;
        };
        if g.array_load != ArrayLoad::Equal {
            return;
        }
        let mut raw: Vec<(Pattern, u32, u32)> = Vec::new();
        for run in &self.runs {
            let members: Vec<&BlockWorkload> = g
                .members
                .iter()
                .filter_map(|m| run.targets.iter().find(|t| &t.name == m))
                .filter_map(|t| match &t.workload {
                    Workload::Block(w) => Some(w),
                    _ => None,
                })
                .collect();
            if members.len() == g.members.len()
                && let Some(load) = members_load(&members)
                && !raw.iter().any(|(p, _, _)| *p == load.0)
            {
                raw.push(load);
            }
        }
        for run in &mut self.runs {
            let explicit = ["threads", "queue-depth"]
                .iter()
                .any(|k| run.parameters.contains_key(*k));
            let with_members = run.targets.iter().any(|t| g.members.contains(&t.name));
            let timed_events = run.events.iter().any(|e| e.trigger.in_measurement());
            if explicit || with_members || timed_events || run.schedule.is_some() {
                continue;
            }
            for t in run.targets.iter_mut().filter(|t| t.name == g.array) {
                if let Workload::Block(w) = &mut t.workload
                    && let Some(p) = block_pattern(w)
                    && let Some((_, threads, queue_depth)) = raw.iter().find(|(q, _, _)| *q == p)
                {
                    w.threads = *threads;
                    w.queue_depth = *queue_depth;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::Plan;
    use storlab_model::raid::ArrayLoad;

    fn study(raid_extra: &str) -> String {
        format!(
            r#"
[raid]
level = 6
members = ["a", "b", "c", "d"]
array = "r"
strip-size = "${{STORLAB_TEST_NEVER_SET_STRIP:-128KiB}}"
{raid_extra}

[targets.a]
type = "null"
[targets.b]
type = "null"
[targets.c]
type = "null"
[targets.d]
type = "null"
[targets.r]
type = "null"

[workloads.rw]
read-share = 0.0
queue-depth = 32
quick = {{ queue-depth = 4 }}

[workloads.sw]
access = "sequential"
read-share = 0.0
threads = 2
queue-depth = 8

[[steps]]
name = "raw-rw"
workload = "rw"
targets = ["a", "b", "c", "d"]
together = true
ops = 10

[[steps]]
name = "raw-sw"
workload = "sw"
targets = ["a", "b", "c", "d"]
together = true
ops = 10

[[steps]]
name = "array-rw"
workload = "rw"
targets = ["r"]
ops = 10

[[steps]]
name = "array-sw"
workload = "sw"
targets = ["r"]
ops = 10

[[steps]]
name = "array-rw-failure"
workload = "rw"
targets = ["r"]
duration = "10s"

[[steps.events]]
name = "fail"
action = "exec"
at = "2s"
command = ["true"]

[[steps]]
name = "array-rw-swept"
workload = "rw"
targets = ["r"]
ops = 10
sweep = {{ queue-depth = [2] }}
"#
        )
    }

    /// Threads and queue depth of step `step`'s target `r`.
    fn load(plan: &Plan, step: &str) -> (u32, u32) {
        let w = &plan
            .runs
            .iter()
            .find(|r| r.step == step)
            .expect("the step")
            .targets[0]
            .workload;
        (w.threads(), w.queue_depth())
    }

    #[test]
    fn the_array_keeps_as_many_operations_in_flight_as_the_members_together() {
        let mut plan = crate::parse("s.toml", &study("")).unwrap();
        let g = plan.raid.clone().unwrap();
        assert_eq!(g.strip_bytes, Some(128 << 10));
        assert_eq!(g.array_load, ArrayLoad::Equal);
        // Members: 4 x 1 thread x QD 32 = 128; the array: 4 threads x QD 32.
        assert_eq!(load(&plan, "raw-rw"), (1, 32));
        assert_eq!(load(&plan, "array-rw"), (4, 32));
        // Members: 4 x 2 threads x QD 8 = 64; the array: 8 threads x QD 8.
        assert_eq!(load(&plan, "array-sw"), (8, 8));
        // A swept queue depth is the study's own; so is a failure run's load.
        assert_eq!(load(&plan, "array-rw-swept"), (1, 2));
        assert_eq!(load(&plan, "array-rw-failure"), (1, 32));
        // Quick mode caps the members' queue depth (the workload's `quick`); the array follows.
        plan.make_quick();
        assert_eq!(load(&plan, "raw-rw"), (1, 4));
        assert_eq!(load(&plan, "array-rw"), (4, 4));
        assert_eq!(load(&plan, "array-sw"), (8, 8));
    }

    #[test]
    fn as_written_keeps_the_workloads_load_and_a_bad_value_is_named() {
        let plan = crate::parse("s.toml", &study("array-load = \"as-written\"")).unwrap();
        assert_eq!(load(&plan, "array-rw"), (1, 32));
        assert_eq!(load(&plan, "array-sw"), (2, 8));
        let err = crate::parse("s.toml", &study("array-load = \"more\""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("raid.array-load") && err.contains("as-written"),
            "{err}"
        );
        let err = crate::parse(
            "s.toml",
            &study("").replace("${STORLAB_TEST_NEVER_SET_STRIP:-128KiB}", "big"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("raid.strip-size"), "{err}");
    }

    #[test]
    fn exports_name_targets_that_are_neither_members_nor_the_array() {
        let with_export = study("exports = [\"e\"]") + "\n[targets.e]\ntype = \"null\"\n";
        let plan = crate::parse("s.toml", &with_export).unwrap();
        assert_eq!(plan.raid.unwrap().exports, ["e"]);
        for (exports, expect) in [
            ("[\"nope\"]", "no target named `nope`"),
            ("[\"a\"]", "`a` is a member"),
            ("[\"r\"]", "`r` is the array itself"),
        ] {
            let err = crate::parse("s.toml", &study(&format!("exports = {exports}")))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("raid.exports") && err.contains(expect),
                "{err}"
            );
        }
    }
}
