//! fio's I/O priority options: `prioclass` and `prio` (the job's threads' priority, the file
//! target's `priority`), `cmdprio_percentage`, `cmdprio_class` and `cmdprio` (a drawn share of
//! a libaio or io_uring job's I/Os with another priority, per direction), `cmdprio_bssplit`
//! (shares per direction and block size, each with its own priority), all the target's
//! `command-priority` rules, and `log_prio`. The priority hints of later fios (`priohint`,
//! `cmdprio_hint`) are refused; a hint in a `cmdprio_bssplit` entry is ignored, as fio 3.33
//! ignores it.

use super::engines::Runner;
use super::job::{Job, SizePriority};
use super::parse::{Entry, LineError, parse_bool, parse_size};

/// One value, or a `read,write` pair of equal values (fio's per-direction form).
fn one(e: &Entry, low: u8, high: u8) -> Result<u8, String> {
    let [r, w] = per_direction(e, low, high, [low; 2])?;
    if r != w {
        return Err(format!(
            "{}={}: separate read and write values are not supported by storlab fio",
            e.name,
            e.needed()?
        ));
    }
    Ok(r)
}

/// A value for reads and writes, or a `read,write` pair (a trim value after them is taken,
/// as storlab does not trim); an empty part keeps `before`'s.
fn per_direction(e: &Entry, low: u8, high: u8, before: [u8; 2]) -> Result<[u8; 2], String> {
    let v = e.needed()?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let value = |x: &str| {
        x.parse::<u8>()
            .ok()
            .filter(|n| (low..=high).contains(n))
            .ok_or_else(|| format!("{}={v}: a whole number from {low} to {high}", e.name))
    };
    match parts.as_slice() {
        [one] => Ok([value(one)?; 2]),
        [r, w, ..] if parts.len() <= 3 => {
            let keep = |x: &str, i: usize| {
                if x.is_empty() {
                    Ok(before[i])
                } else {
                    value(x)
                }
            };
            Ok([keep(r, 0)?, keep(w, 1)?])
        }
        _ => Err(format!("{}={v}: at most read,write,trim values", e.name)),
    }
}

/// One `cmdprio_bssplit` entry as fio 3.33's `sscanf("%m[^/]/%u/%u/%u")` reads it: `bs/`,
/// `bs/perc` or `bs/perc/class/level` (the percent at most 100, the class 3 and the level 7);
/// true when a fifth field (a later fio's priority hint) follows, which fio 3.33 ignores.
fn size_priority(text: &str, kb: u64) -> Result<(SizePriority, bool), String> {
    let fields: Vec<&str> = text.split('/').collect();
    let number = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{text}`: `{x}` is not a whole number"))
    };
    let bytes = parse_size(fields[0], kb).map_err(|m| format!("`{text}`: {m}"))?;
    let percent = match fields.get(1) {
        Some(p) if !p.is_empty() => number(p)?.min(100) as u8,
        _ => 0,
    };
    let prio = match fields.len() {
        1 | 2 => None,
        3 => {
            return Err(format!(
                "`{text}`: an entry is bs/percent or bs/percent/class/level (fio: \"invalid cmdprio_bssplit format\")"
            ));
        }
        _ => Some((
            number(fields[2])?.min(3) as u8,
            number(fields[3])?.min(7) as u8,
        )),
    };
    let entry = SizePriority {
        bytes,
        percent,
        prio,
    };
    Ok((entry, fields.len() > 4))
}

/// `cmdprio_bssplit=READS[,WRITES[,TRIMS]]`: each direction's entries with a percent (fio
/// drops those without), and whether any gave a hint.
fn cmdprio_bssplit(e: &Entry, kb: u64) -> Result<([Vec<SizePriority>; 2], bool), String> {
    let v = e.needed()?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let mut hints = false;
    let mut direction = |part: &str| -> Result<Vec<SizePriority>, String> {
        let mut entries = Vec::new();
        // fio stops at an empty entry.
        for item in part.split(':').take_while(|x| !x.is_empty()) {
            let (entry, hint) =
                size_priority(item, kb).map_err(|m| format!("cmdprio_bssplit={v}: {m}"))?;
            hints |= hint;
            if entry.percent > 0 {
                entries.push(entry);
            }
        }
        Ok(entries)
    };
    let reads = direction(parts[0])?;
    let writes = match parts.get(1) {
        Some(w) => direction(w)?,
        None => reads.clone(),
    };
    Ok(([reads, writes], hints))
}

/// Applies one priority option; false when `e` is none of them.
pub fn apply_prio(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    let p = &mut job.prio;
    match canonical {
        "prioclass" => p.class = Some(one(e, 0, 3)?),
        "prio" => p.level = Some(one(e, 0, 7)?),
        "cmdprio_percentage" => p.cmd_percent = Some((per_direction(e, 0, 100, [0; 2])?, e.line)),
        "cmdprio_class" => p.cmd_class = Some(per_direction(e, 1, 3, [1; 2])?),
        "cmdprio" => p.cmd_level = Some(per_direction(e, 0, 7, [0; 2])?),
        "cmdprio_bssplit" => {
            let (split, hints) = cmdprio_bssplit(e, kb)?;
            p.cmd_bssplit = Some((split, e.line));
            p.cmd_hints = hints;
        }
        "log_prio" => {
            p.log_prio = parse_bool(e.value.as_deref())
                .map_err(|m| format!("log_prio={}: {m}", e.value.as_deref().unwrap_or("")))?
        }
        "cmdprio_hint" | "priohint" => {
            return Err(format!(
                "option `{}` is not supported by storlab fio: priority hints (command duration limits) came after fio 3.33 and are not implemented",
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

fn line_error(job: &Job, line: usize, message: String) -> LineError {
    LineError {
        file: job.file.clone(),
        line,
        message: format!("job `{}`: {message}", job.name),
    }
}

/// What storlab cannot honour, or fio refuses: a command priority on a job that does not run
/// on io_uring (fio's cmdprio options are libaio's and io_uring's), both
/// `cmdprio_percentage` and `cmdprio_bssplit`, and a block size's percents above 100.
pub fn check(job: &Job) -> Vec<LineError> {
    let p = &job.prio;
    let mut errors = Vec::new();
    let lines = [
        ("cmdprio_percentage", p.cmd_percent.map(|c| c.1)),
        ("cmdprio_bssplit", p.cmd_bssplit.as_ref().map(|c| c.1)),
    ];
    for (name, line) in lines {
        if let Some(line) = line.filter(|_| job.engine.runs_on() == Runner::Psync) {
            errors.push(line_error(job, line, format!(
                "{name} with ioengine={}: fio takes it only for libaio and io_uring (\"Bad option\"), which storlab runs on io_uring",
                job.engine.fio_name()
            )));
        }
    }
    if let (Some(_), Some((_, line))) = (p.cmd_percent, &p.cmd_bssplit) {
        errors.push(line_error(
            job,
            *line,
            "cmdprio_percentage and cmdprio_bssplit: fio takes one or the other (\"mutually exclusive\")".into(),
        ));
    }
    if let Some((split, line)) = &p.cmd_bssplit {
        for entries in split {
            for e in entries {
                let total: u32 = entries
                    .iter()
                    .filter(|x| x.bytes == e.bytes)
                    .map(|x| u32::from(x.percent))
                    .sum();
                if total > 100 {
                    errors.push(line_error(job, *line, format!(
                        "cmdprio_bssplit: the percents of block size {} add up to {total}, above 100 (fio: \"total percentage exceeds 100\")",
                        e.bytes
                    )));
                    return errors;
                }
            }
        }
    }
    errors
}

/// One `command-priority` rule.
fn rule(
    percent: u8,
    (class, level): (u8, u8),
    direction: Option<usize>,
    size: Option<u64>,
) -> toml::Value {
    let mut t = toml::Table::new();
    t.insert("percent".into(), i64::from(percent).into());
    t.insert("class".into(), class_name(class).into());
    t.insert("level".into(), i64::from(level).into());
    if let Some(d) = direction {
        t.insert("direction".into(), ["read", "write"][d].into());
    }
    if let Some(b) = size {
        t.insert("size".into(), (b as i64).into());
    }
    t.into()
}

/// The target's `command-priority` rules: `cmdprio_bssplit`'s entries, or
/// `cmdprio_percentage`'s share, per direction (one rule when both directions are alike).
fn command_rules(job: &Job) -> Vec<toml::Value> {
    let p = &job.prio;
    // fio's implicit command priority: cmdprio_class (default realtime) and cmdprio.
    let implicit = |d: usize| {
        (
            p.cmd_class.map_or(1, |c| c[d]),
            p.cmd_level.map_or(0, |l| l[d]),
        )
    };
    if let Some((split, _)) = &p.cmd_bssplit {
        return (0..2)
            .flat_map(|d| {
                split[d].iter().map(move |e| {
                    rule(
                        e.percent,
                        e.prio.unwrap_or(implicit(d)),
                        Some(d),
                        Some(e.bytes),
                    )
                })
            })
            .collect();
    }
    let Some((percent, _)) = p.cmd_percent else {
        return Vec::new();
    };
    if percent == [0, 0] {
        return Vec::new();
    }
    if percent[0] == percent[1] && implicit(0) == implicit(1) {
        return vec![rule(percent[0], implicit(0), None, None)];
    }
    (0..2)
        .filter(|d| percent[*d] > 0)
        .map(|d| rule(percent[d], implicit(d), Some(d), None))
        .collect()
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
    let rules = command_rules(job);
    if !rules.is_empty() {
        tt.insert("command-priority".into(), rules.into());
    }
}

/// What storlab does otherwise than fio with the job's priorities.
pub fn notes(job: &Job) -> Vec<String> {
    let p = &job.prio;
    let name = &job.name;
    let mut notes = Vec::new();
    if !command_rules(job).is_empty() {
        let option = if p.cmd_bssplit.is_some() {
            "cmdprio_bssplit"
        } else {
            "cmdprio_percentage"
        };
        notes.push(format!(
            "job `{name}`: {option} taken: the drawn I/Os carry their priority, but storlab's latencies are not split by priority (fio prints each priority's latencies apart)"
        ));
    }
    if p.cmd_hints {
        notes.push(format!(
            "job `{name}`: cmdprio_bssplit: the fifth field of its entries (a later fio's priority hint) is ignored, as fio 3.33 ignores it"
        ));
    }
    if p.log_prio && job.logs.any() {
        notes.push(format!(
            "job `{name}`: log_prio=1: the priority column is 0 on every row, as fio writes it on rows averaged over log_avg_msec (storlab's rows are averaged)"
        ));
    }
    let any = p.class.is_some()
        || p.level.is_some()
        || p.cmd_percent.is_some()
        || p.cmd_bssplit.is_some();
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
        let c = &t["command-priority"][0];
        assert_eq!(c["percent"].as_integer(), Some(20));
        assert_eq!(c["class"].as_str(), Some("realtime"));
        assert_eq!(c["level"].as_integer(), Some(2));
        assert!(c.get("direction").is_none());
        let mut t = toml::Table::new();
        target_keys(&j[1], &mut t);
        assert_eq!(t["priority"]["class"].as_str(), Some("best-effort"));
        assert_eq!(t["priority"]["level"].as_integer(), Some(7));
        assert!(notes(&j[0])[0].contains("not split by priority"));
    }

    #[test]
    fn cmdprio_bssplit_becomes_rules_per_direction_and_size() {
        // fio's examples/cmdprio-bssplit.fio, its second and fourth jobs.
        let j = jobs("[a]\nioengine=libaio\nrw=randrw\ncmdprio_class=2\ncmdprio=4\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/10\n[b]\nioengine=io_uring\nrw=randread\ncmdprio_bssplit=1M/10/2/0/1:1M/30/2/0/2:2M/90/2/0/0\n[c]\nioengine=libaio\ncmdprio_percentage=10,20\n").unwrap();
        let mut t = toml::Table::new();
        target_keys(&j[0], &mut t);
        let rules = t["command-priority"].as_array().unwrap();
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert_eq!(rules[0]["size"].as_integer(), Some(65536));
        assert_eq!(rules[0]["class"].as_str(), Some("realtime"));
        assert_eq!(rules[1]["class"].as_str(), Some("idle"));
        assert_eq!(rules[1]["direction"].as_str(), Some("read"));
        // The writes' 1M entry has no priority of its own: cmdprio_class and cmdprio's.
        assert_eq!(rules[2]["direction"].as_str(), Some("write"));
        assert_eq!(rules[2]["class"].as_str(), Some("best-effort"));
        assert_eq!(rules[2]["level"].as_integer(), Some(4));
        assert!(notes(&j[0])[0].contains("cmdprio_bssplit taken"));
        // A hint is ignored, as fio 3.33; said.
        assert!(notes(&j[1]).iter().any(|n| n.contains("fio 3.33 ignores")));
        let mut t = toml::Table::new();
        target_keys(&j[2], &mut t);
        let rules = t["command-priority"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1]["percent"].as_integer(), Some(20));
        assert_eq!(rules[1]["direction"].as_str(), Some("write"));
    }

    #[test]
    fn what_storlab_cannot_honour_is_refused() {
        for (text, what) in [
            (
                "[a]\nioengine=psync\ncmdprio_percentage=20\n",
                "only for libaio and io_uring",
            ),
            (
                "[a]\nioengine=sync\ncmdprio_bssplit=4k/100\n",
                "only for libaio",
            ),
            ("[a]\nprio=8\n", "from 0 to 7"),
            ("[a]\nprio=1,2\n", "separate read and write"),
            ("[a]\ncmdprio_bssplit=4k/60:4k/50/1/1\n", "add up to 110"),
            ("[a]\ncmdprio_bssplit=4k/60/1\n", "bs/percent/class/level"),
            (
                "[a]\ncmdprio_percentage=5\ncmdprio_bssplit=4k/60\n",
                "one or the other",
            ),
            ("[a]\npriohint=1\n", "after fio 3.33"),
        ] {
            let e = jobs(text).unwrap_err();
            assert!(e.iter().any(|e| e.message.contains(what)), "{text}: {e:?}");
        }
    }
}
