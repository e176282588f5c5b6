//! fio's I/O priority options: `prioclass` and `prio` (the job's threads' priority, the file
//! target's `priority`), `cmdprio_percentage`, `cmdprio_class` and `cmdprio` (a drawn share of
//! a libaio or io_uring job's I/Os with another priority: the target's `command-priority`),
//! and `log_prio`. `cmdprio_bssplit` and the priority hints are refused.

use super::engines::Runner;
use super::job::Job;
use super::parse::{Entry, LineError, parse_bool};

/// One value, or a `read,write` pair of equal values (fio's per-direction form).
fn one(e: &Entry, low: u8, high: u8) -> Result<u8, String> {
    let v = e.needed()?;
    let values: Vec<&str> = v.split(',').map(str::trim).collect();
    if values.iter().any(|x| *x != values[0]) {
        return Err(format!(
            "{}={v}: separate read and write values are not supported by storlab fio",
            e.name
        ));
    }
    values[0]
        .parse::<u8>()
        .ok()
        .filter(|n| (low..=high).contains(n))
        .ok_or_else(|| format!("{}={v}: a whole number from {low} to {high}", e.name))
}

/// Applies one priority option; false when `e` is none of them.
pub fn apply_prio(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    let p = &mut job.prio;
    match canonical {
        "prioclass" => p.class = Some(one(e, 0, 3)?),
        "prio" => p.level = Some(one(e, 0, 7)?),
        "cmdprio_percentage" => p.cmd_percent = Some((one(e, 0, 100)?, e.line)),
        "cmdprio_class" => p.cmd_class = Some(one(e, 1, 3)?),
        "cmdprio" => p.cmd_level = Some(one(e, 0, 7)?),
        "log_prio" => {
            p.log_prio = parse_bool(e.value.as_deref())
                .map_err(|m| format!("log_prio={}: {m}", e.value.as_deref().unwrap_or("")))?
        }
        "cmdprio_bssplit" | "cmdprio_hint" | "priohint" => {
            return Err(format!(
                "option `{}` is not supported by storlab fio: priorities by block size and priority hints (command duration limits) are not implemented",
                e.name
            ));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn class_name(class: u8) -> &'static str {
    match class {
        1 => "realtime",
        3 => "idle",
        // fio's ioprio_value: no class is best effort.
        _ => "best-effort",
    }
}

/// What storlab cannot honour: a command priority on a job that does not run on io_uring
/// (fio's cmdprio options are libaio's and io_uring's).
pub fn check(job: &Job) -> Vec<LineError> {
    match job.prio.cmd_percent {
        Some((_, line)) if job.engine.runs_on() == Runner::Psync => vec![LineError {
            file: job.file.clone(),
            line,
            message: format!(
                "job `{}`: cmdprio_percentage with ioengine={}: fio takes it only for libaio and io_uring (\"Bad option\"), which storlab runs on io_uring",
                job.name,
                job.engine.fio_name()
            ),
        }],
        _ => Vec::new(),
    }
}

/// The file target's `priority` and `command-priority`.
pub fn target_keys(job: &Job, tt: &mut toml::Table) {
    let p = &job.prio;
    if p.class.is_some() || p.level.is_some() {
        let mut t = toml::Table::new();
        let class = p.class.unwrap_or(0);
        t.insert("class".into(), class_name(class).into());
        // The idle class has no levels.
        let level = if class == 3 { 0 } else { p.level.unwrap_or(0) };
        t.insert("level".into(), i64::from(level).into());
        tt.insert("priority".into(), t.into());
    }
    if let Some((percent, _)) = p.cmd_percent.filter(|(pc, _)| *pc > 0) {
        let mut t = toml::Table::new();
        t.insert("percent".into(), i64::from(percent).into());
        t.insert("class".into(), class_name(p.cmd_class.unwrap_or(1)).into());
        t.insert("level".into(), i64::from(p.cmd_level.unwrap_or(0)).into());
        tt.insert("command-priority".into(), t.into());
    }
}

/// What storlab does otherwise than fio with the job's priorities.
pub fn notes(job: &Job) -> Vec<String> {
    let p = &job.prio;
    let name = &job.name;
    let mut notes = Vec::new();
    if p.cmd_percent.is_some_and(|(pc, _)| pc > 0) {
        notes.push(format!(
            "job `{name}`: cmdprio_percentage taken: the drawn I/Os carry the priority, but storlab's latencies are not split by priority (fio prints the high and low priority latencies apart)"
        ));
    }
    if p.log_prio && job.logs.any() {
        notes.push(format!(
            "job `{name}`: log_prio=1: the priority column is 0 on every row, as fio writes it on rows averaged over log_avg_msec (storlab's rows are averaged)"
        ));
    }
    let any = p.class.is_some() || p.level.is_some() || p.cmd_percent.is_some();
    if any && job.engine.runs_on() == Runner::Null {
        notes.push(format!(
            "job `{name}`: priorities taken on ioengine=null: no I/O reaches a device"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn priorities_become_the_targets_keys() {
        let j = jobs("[a]\nioengine=libaio\nprioclass=3\nprio=5\ncmdprio_percentage=20\ncmdprio_class=1\ncmdprio=2\n[b]\nprio=7\n").unwrap();
        let mut t = toml::Table::new();
        target_keys(&j[0], &mut t);
        assert_eq!(t["priority"]["class"].as_str(), Some("idle"));
        assert_eq!(t["priority"]["level"].as_integer(), Some(0));
        assert_eq!(t["command-priority"]["percent"].as_integer(), Some(20));
        assert_eq!(t["command-priority"]["class"].as_str(), Some("realtime"));
        assert_eq!(t["command-priority"]["level"].as_integer(), Some(2));
        let mut t = toml::Table::new();
        target_keys(&j[1], &mut t);
        assert_eq!(t["priority"]["class"].as_str(), Some("best-effort"));
        assert_eq!(t["priority"]["level"].as_integer(), Some(7));
        assert!(notes(&j[0])[0].contains("not split by priority"));
    }

    #[test]
    fn what_storlab_cannot_honour_is_refused() {
        for (text, what) in [
            (
                "[a]\nioengine=psync\ncmdprio_percentage=20\n",
                "only for libaio and io_uring",
            ),
            ("[a]\ncmdprio_bssplit=4k/100\n", "by block size"),
            ("[a]\nprio=8\n", "from 0 to 7"),
            ("[a]\ncmdprio_percentage=10,20\n", "separate read and write"),
        ] {
            let e = jobs(text).unwrap_err();
            assert!(e[0].message.contains(what), "{text}: {e:?}");
        }
    }
}
