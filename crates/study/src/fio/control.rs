//! fio's options about how jobs run together and what surrounds them: reporting groups
//! (`new_group`), ending jobs early (`exitall`, `exitall_on_error`, `continue_on_error`), the
//! random generator (`randrepeat`, `random_generator`), CPU placement (`cpus_allowed`,
//! `cpumask`, `cpus_allowed_policy`: the workload's `cpus` and `cpus-policy`) and commands
//! around a job (`exec_prerun` as a before-step `exec` event, `exec_postrun` as an after-step
//! one). [`apply_control`] reads them into the job; [`group_control`] makes them the step's
//! keys and notes.

use super::job::{Control, Job, OnError};
use super::parse::{Entry, LineError, parse_bool};
use storlab_model::cpus::{CpuList, CpuPolicy};

/// The generator storlab draws block offsets with, named when a job file names fio's.
pub const STORLAB_GENERATOR: &str =
    "rand's SmallRng (xoshiro256++), seeded per run and thread through splitmix64";

impl Default for Control {
    fn default() -> Self {
        Control {
            new_group: false,
            exitall: false,
            exitall_on_error: false,
            on_error: OnError::Stop,
            randrepeat: true,
            random_generator: None,
            exec_prerun: None,
            exec_postrun: None,
            cpus: None,
            numa_cpus: false,
            numa_mem: None,
            cpus_policy: CpuPolicy::Shared,
            seed: None,
            verify_type: None,
            verify_backlog: None,
            thread: false,
            offload: false,
            wait_for: None,
            profile_options: Vec::new(),
        }
    }
}

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

fn need(e: &Entry) -> Result<&str, String> {
    e.value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))
}

/// Applies one control option to `job`. False when `canonical` is none of these.
pub fn apply_control(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    let c = &mut job.control;
    match canonical {
        "new_group" => c.new_group = flag(e)?,
        "exitall" => c.exitall = flag(e)?,
        "exitall_on_error" => c.exitall_on_error = flag(e)?,
        "continue_on_error" => {
            c.on_error = match need(e)? {
                "none" | "0" => OnError::Stop,
                "all" | "1" | "io" => OnError::Continue,
                other => {
                    return Err(format!(
                        "continue_on_error={other}: storlab stops on any error or on none: use none, io or all"
                    ));
                }
            }
        }
        "randrepeat" => c.randrepeat = flag(e)?,
        "thread" => c.thread = flag(e)?,
        "wait_for" => c.wait_for = Some((need(e)?.to_string(), e.line)),
        // fio registers its tiobench profile's options with its own (profiles/tiobench.c):
        // a job file may set them, and without profile=tiobench they change nothing.
        "threads" | "dir" | "block" | "numruns" => {
            c.profile_options
                .push(format!("{}={}", e.name, e.value.as_deref().unwrap_or("")))
        }
        "io_submit_mode" => {
            c.offload = match need(e)? {
                "inline" => false,
                "offload" => true,
                other => {
                    return Err(format!(
                        "io_submit_mode={other}: fio's modes are inline and offload"
                    ));
                }
            }
        }
        "random_generator" => {
            let v = need(e)?;
            if !["tausworthe", "lfsr", "tausworthe64"].contains(&v) {
                return Err(format!(
                    "random_generator={v}: fio's are tausworthe, lfsr and tausworthe64"
                ));
            }
            c.random_generator = Some(v.to_string());
        }
        "exec_prerun" => c.exec_prerun = Some(need(e)?.to_string()),
        "verify_backlog" => {
            let n = need(e)?;
            let n = n
                .parse::<u64>()
                .map_err(|_| format!("verify_backlog={n}: a number of blocks"))?;
            c.verify_backlog = Some(n);
        }
        "exec_postrun" => c.exec_postrun = Some(need(e)?.to_string()),
        "cpus_allowed" | "cpumask" => {
            let read = match canonical {
                "cpus_allowed" => CpuList::parse(need(e)?),
                _ => CpuList::from_mask(need(e)?),
            };
            let cpus = allowed_here(read, e)?;
            // numa_cpu_nodes wins: fio applies it after the CPU mask.
            if !c.numa_cpus {
                c.cpus = Some(cpus);
            }
        }
        "cpus_allowed_policy" => {
            c.cpus_policy = match need(e)? {
                "shared" => CpuPolicy::Shared,
                "split" => CpuPolicy::Split,
                other => {
                    return Err(format!(
                        "cpus_allowed_policy={other}: fio's policies are shared and split"
                    ));
                }
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A CPU set read from option `e`, each CPU one this process may run on (fio refuses a CPU
/// the machine lacks too).
fn allowed_here(read: Result<CpuList, String>, e: &Entry) -> Result<CpuList, String> {
    let value = e.value.as_deref().unwrap_or("");
    let cpus = read.map_err(|m| format!("{}={value}: {m}", e.name))?;
    let allowed = storlab_model::cpus::allowed()
        .map_err(|err| format!("{}={value}: cannot read this process's CPUs: {err}", e.name))?;
    let missing = cpus.missing_from(&allowed);
    if !missing.is_empty() {
        let (which, verb) = storlab_model::cpus::missing_words(&missing);
        return Err(format!(
            "{}={value}: {which} {verb} this process may run on (CPUs {allowed})",
            e.name
        ));
    }
    Ok(cpus)
}

/// fio 3.33's verify types that storlab checks with its own header (a crc32c over each block,
/// with its offset and generation) instead: taken and said. `pattern` and `null` are refused.
const VERIFY_TYPES: &[&str] = &[
    "md5", "crc64", "crc32", "crc16", "crc7", "sha1", "sha256", "sha512", "sha3-224", "sha3-256",
    "sha3-384", "sha3-512", "xxhash", "meta",
];

/// The fio verify type `v` (not crc32c) if storlab takes it.
pub fn verify_type(v: &str) -> Result<String, String> {
    if VERIFY_TYPES.contains(&v) {
        return Ok(v.to_string());
    }
    Err(match v {
        "pattern" => "verify=pattern: storlab's verified writes carry its own header and random data, not verify_pattern's bytes".into(),
        "null" => "verify=null: fio only pretends to verify; remove verify".into(),
        _ => format!("verify={v}: not a verify type of fio 3.33"),
    })
}

/// A seed no earlier invocation drew (randrepeat=0): the clock's nanoseconds and the
/// process id, mixed by splitmix64.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    storlab_model::seed::mix_seed(nanos, &[u64::from(std::process::id())])
}

/// The `exec` event `name` of a job's shell command (fio runs it with system(3)) at
/// `trigger` (`before-step` or `after-step`): fio reports a failing command and goes on, so
/// its failure is a warning.
fn shell_event(name: String, trigger: &str, cmd: &str) -> toml::Value {
    let mut ev = toml::Table::new();
    ev.insert("name".into(), name.into());
    ev.insert("action".into(), "exec".into());
    ev.insert(trigger.into(), true.into());
    let argv: Vec<toml::Value> = vec!["sh".into(), "-c".into(), cmd.into()];
    ev.insert("command".into(), argv.into());
    ev.insert("on-failure".into(), "continue".into());
    ev.into()
}

/// fio's `wait_for=JOB` as storlab's groups can run it. A job of a later group already
/// starts after `JOB` (steps run one after another). A job that waits for a job of its own
/// group starts a new group, as a stonewall: fio's wait exactly when that group is nothing
/// but `JOB`'s clones and every later job that joins the new group waits for `JOB` too.
/// Anything else is refused, named. `starts`: the jobs that start a group anyway (each file's
/// first). Returns the problems and the notes.
pub fn settle_wait_for(jobs: &mut [Job], starts: &[usize]) -> (Vec<LineError>, Vec<String>) {
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let mut group_start = 0;
    // The job the current group (started by a wait) waits for.
    let mut waited: Option<String> = None;
    for i in 0..jobs.len() {
        if starts.contains(&i) || jobs[i].stonewall {
            group_start = i;
            waited = None;
        }
        let wait = jobs[i].control.wait_for.clone();
        let refuse = |line: usize, message: String| LineError {
            file: jobs[i].file.clone(),
            line,
            message,
        };
        let Some((waitee, line)) = wait else {
            if let Some(w) = &waited {
                errors.push(refuse(jobs[i].line, format!(
                    "job `{}`: runs here after `{w}` as the job before it waits for it, but fio starts it at once (no wait_for={w}): put it before that job, or give it wait_for={w}",
                    jobs[i].name
                )));
            }
            continue;
        };
        let name = jobs[i].name.clone();
        let Some(at) = jobs[..i].iter().position(|j| j.name == waitee) else {
            errors.push(refuse(line, format!(
                "wait_for={waitee}: no job named `{waitee}` before job `{name}` (fio takes no forward reference)"
            )));
            continue;
        };
        if at < group_start || waited.as_deref() == Some(waitee.as_str()) {
            continue;
        }
        let others: Vec<&str> = jobs[group_start..i]
            .iter()
            .filter(|j| j.name != waitee)
            .map(|j| j.name.as_str())
            .collect();
        if !others.is_empty() {
            errors.push(refuse(line, format!(
                "wait_for={waitee}: storlab starts job `{name}` after every job of its group, and `{}` run beside `{waitee}` there: give `{waitee}` a group of its own (stonewall)",
                others.join("`, `")
            )));
            continue;
        }
        jobs[i].stonewall = true;
        group_start = i;
        waited = Some(waitee.clone());
        notes.push(format!(
            "job `{name}`: wait_for={waitee}: starts a group of its own once `{waitee}` is done{}",
            if jobs[i].control.new_group {
                ""
            } else {
                " (reported apart from it; fio reports them together without new_group)"
            }
        ));
    }
    (errors, notes)
}

/// A group's step keys and notes from its jobs' control options.
#[derive(Debug, Default)]
pub struct GroupControl {
    pub stop_on_error: bool,
    /// `[[steps.events]]` tables (exec_prerun, then exec_postrun).
    pub events: Vec<toml::Value>,
    pub notes: Vec<String>,
}

/// The control of a group of `jobs` run at the same time over `targets` targets;
/// `time_bounded` when the group ends at its runtime whatever its size. An option storlab
/// cannot honour for this group is an error naming it, with the index of its job.
pub fn group_control(
    jobs: &[&Job],
    targets: usize,
    time_bounded: bool,
) -> Result<GroupControl, (usize, String)> {
    let mut g = GroupControl::default();
    // The after-step events come last: events run in the order written.
    let mut postrun = Vec::new();
    let first = jobs[0];
    for (i, j) in jobs.iter().enumerate() {
        let c = &j.control;
        if i > 0 && c.new_group && !j.stonewall {
            return Err((
                i,
                format!(
                    "job `{}`: new_group without stonewall: storlab reports the jobs that run together as one group (add stonewall, which starts a new group in fio too)",
                    j.name
                ),
            ));
        }
        if c.exitall && targets > 1 && !time_bounded {
            return Err((
                i,
                format!(
                    "job `{}`: exitall in a group of several jobs bounded by size: storlab ends a group when all its jobs are done (make the group time_based, or give each job a stonewall)",
                    j.name
                ),
            ));
        }
        if let Some(cmd) = &c.exec_prerun {
            g.events.push(shell_event(
                format!("{}-prerun", j.name),
                "before-step",
                cmd,
            ));
        }
        if let Some(cmd) = &c.exec_postrun {
            postrun.push(shell_event(
                format!("{}-postrun", j.name),
                "after-step",
                cmd,
            ));
        }
        if c.cpus.is_none() && !c.cpus_policy.is_shared() {
            g.notes.push(format!(
                "job `{}`: cpus_allowed_policy=split without cpus_allowed or cpumask: its threads are not pinned, as in fio",
                j.name
            ));
        }
        if let Some(t) = &c.verify_type {
            g.notes.push(format!(
                "job `{}`: verify={t} taken: storlab's verified writes carry its own header (a crc32c over the block, its offset and generation), checked in a pass after the run, not fio's {t} header",
                j.name
            ));
        }
        if let Some(n) = c.verify_backlog {
            g.notes.push(format!(
                "job `{}`: verify_backlog={n} taken: storlab checks every written block in one pass after the run, not {n} at a time during it",
                j.name
            ));
        }
        if c.thread {
            g.notes.push(format!(
                "job `{}`: thread taken: storlab's clones are always threads of its one process (fio forks a process per clone without it)",
                j.name
            ));
        }
        if !c.profile_options.is_empty() {
            g.notes.push(format!(
                "job `{}`: {} taken and ignored, as fio ignores them: options of fio's tiobench profile, which act only with profile=tiobench",
                j.name,
                c.profile_options.join(", ")
            ));
        }
        if c.offload {
            g.notes.push(format!(
                "job `{}`: io_submit_mode=offload taken: storlab submits and completes each I/O on the job's own threads, not on fio's separate offload threads",
                j.name
            ));
        }
        if let Some(r) = &c.random_generator {
            g.notes.push(format!(
                "job `{}`: random_generator={r} taken; storlab draws offsets with {STORLAB_GENERATOR}",
                j.name
            ));
        }
    }
    g.events.extend(postrun);
    let stop = jobs.iter().any(|j| j.control.on_error == OnError::Stop);
    g.stop_on_error = stop;
    let exitall_on_error = jobs.iter().any(|j| j.control.exitall_on_error);
    if stop && targets > 1 && !exitall_on_error {
        g.notes.push(format!(
            "group of job `{}`: an I/O error stops the whole group, not just its job (storlab's stop-on-error, as fio's exitall_on_error); continue_on_error=all counts errors and goes on",
            first.name
        ));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<super::super::parse::LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn control_options_are_read_or_refused_by_name() {
        let j = jobs("[global]\ncontinue_on_error=all\nrandrepeat=0\n[a]\nrandom_generator=lfsr\nexec_prerun=echo hi > /dev/null\nexitall_on_error\n")
            .unwrap();
        let c = &j[0].control;
        assert_eq!(c.on_error, OnError::Continue);
        assert!(!c.randrepeat && c.exitall_on_error);
        assert_eq!(c.random_generator.as_deref(), Some("lfsr"));
        assert_eq!(c.exec_prerun.as_deref(), Some("echo hi > /dev/null"));
        assert_eq!(jobs("[a]\n").unwrap()[0].control, Control::default());
        // CPU 1023 can be named in a set, but no machine this runs on has it.
        let e = jobs("[a]\ncpus_allowed=1023\ncpumask=0x\ncpus_allowed_policy=spread\ncontinue_on_error=read\nrandom_generator=mt\n")
            .unwrap_err();
        assert_eq!(e.len(), 5, "{e:?}");
        assert!(
            e[0].message
                .starts_with("cpus_allowed=1023: CPU 1023 is not one this process may run on"),
            "{}",
            e[0]
        );
        assert!(
            e[1].message
                .starts_with("cpumask=0x: `0x` is not a CPU mask"),
            "{}",
            e[1]
        );
        assert!(
            e[2].message.contains("fio's policies are shared and split"),
            "{}",
            e[2]
        );
        assert!(
            e[3].message.starts_with("continue_on_error=read"),
            "{}",
            e[3]
        );
        assert_eq!(e[4].line, 6);
    }

    #[test]
    fn cpus_and_postrun_are_taken() {
        let j = jobs("[global]\ncpus_allowed_policy=split\n[a]\ncpus_allowed=0\nexec_postrun=echo done\n[b]\ncpus_allowed=0\ncpumask=0x1\ncpus_allowed_policy=shared\n[c]\n")
            .unwrap();
        let (a, b, c) = (&j[0].control, &j[1].control, &j[2].control);
        assert_eq!(a.cpus.as_ref().map(|l| l.to_string()).as_deref(), Some("0"));
        assert_eq!(a.cpus_policy, CpuPolicy::Split);
        assert_eq!(a.exec_postrun.as_deref(), Some("echo done"));
        // cpumask after cpus_allowed: the last one given is the set.
        assert_eq!(b.cpus.as_ref().map(|l| l.cpus().to_vec()), Some(vec![0]));
        assert_eq!(b.cpus_policy, CpuPolicy::Shared);
        assert_eq!((c.cpus.clone(), c.cpus_policy), (None, CpuPolicy::Split));
        // split without a set: not pinned, said.
        let g = group_control(&[&j[2]], 1, false).unwrap();
        assert!(
            g.notes
                .iter()
                .any(|n| n.contains("split without cpus_allowed")),
            "{:?}",
            g.notes
        );
    }

    #[test]
    fn postrun_events_come_after_the_groups_prerun_events() {
        let j = jobs("[a]\nexec_postrun=touch after\n[b]\nexec_prerun=touch before\n").unwrap();
        let g = group_control(&[&j[0], &j[1]], 2, true).unwrap();
        let ev: Vec<&toml::Table> = g.events.iter().map(|e| e.as_table().unwrap()).collect();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0]["name"].as_str(), Some("b-prerun"));
        assert_eq!(ev[0]["before-step"].as_bool(), Some(true));
        assert_eq!(ev[1]["name"].as_str(), Some("a-postrun"));
        assert_eq!(ev[1]["after-step"].as_bool(), Some(true));
        assert_eq!(ev[1]["on-failure"].as_str(), Some("continue"));
        assert_eq!(
            ev[1]["command"].as_array().unwrap()[2].as_str(),
            Some("touch after")
        );
    }

    #[test]
    fn groups_take_what_storlab_can_honour() {
        let j = jobs("[a]\nexec_prerun=touch x\nrandom_generator=tausworthe64\n[b]\nexitall\n[c]\nnew_group\n[d]\nstonewall\nnew_group\n")
            .unwrap();
        let one = group_control(&[&j[0]], 1, false).unwrap();
        assert!(one.stop_on_error);
        assert_eq!(one.events.len(), 1);
        let ev = one.events[0].as_table().unwrap();
        assert_eq!(
            ev["command"].as_array().unwrap()[2].as_str(),
            Some("touch x")
        );
        assert!(
            one.notes[0].contains("tausworthe64 taken; storlab draws"),
            "{:?}",
            one.notes
        );
        // exitall: fine alone or time-bounded, refused for size-bounded jobs together.
        assert!(group_control(&[&j[1]], 1, false).is_ok());
        assert!(group_control(&[&j[0], &j[1]], 2, true).is_ok());
        let (at, e) = group_control(&[&j[0], &j[1]], 2, false).unwrap_err();
        assert_eq!(at, 1);
        assert!(e.contains("job `b`: exitall"), "{e}");
        // new_group needs the stonewall that starts a group.
        let (_, e) = group_control(&[&j[0], &j[2]], 2, true).unwrap_err();
        assert!(e.contains("new_group without stonewall"), "{e}");
        assert!(group_control(&[&j[3]], 1, true).is_ok());
        // Jobs together that stop on error: the whole group stops, said; not with
        // exitall_on_error, nor when every job continues.
        let together = group_control(&[&j[0], &j[1]], 2, true).unwrap();
        assert!(together.stop_on_error);
        assert!(
            together
                .notes
                .iter()
                .any(|n| n.contains("stops the whole group"))
        );
        let k = jobs("[global]\ncontinue_on_error=all\n[a]\n[b]\n").unwrap();
        let g = group_control(&[&k[0], &k[1]], 2, true).unwrap();
        assert!(!g.stop_on_error && g.notes.is_empty());
    }

    #[test]
    fn wait_for_starts_a_group_where_that_is_fios_wait() {
        let mut j = jobs("[w]\nnumjobs=2\n[r]\nnew_group\nwait_for=w\n[r2]\nwait_for=w\n[s]\nstonewall\n[t]\nwait_for=w\n").unwrap();
        let (errors, notes) = settle_wait_for(&mut j, &[0]);
        assert!(errors.is_empty(), "{errors:?}");
        // r waits for w's group (w alone): a new group; r2 joins it, waiting for w too; t is
        // in a later group already.
        let walls: Vec<bool> = j.iter().map(|j| j.stonewall).collect();
        assert_eq!(walls, [false, true, false, true, false]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("job `r`: wait_for=w: starts a group"),
            "{notes:?}"
        );
        // A job beside the waitee, a job after the waiter that does not wait, a forward
        // reference: each refused by line.
        let mut j = jobs("[w]\n[x]\n[r]\nwait_for=w\n").unwrap();
        let (e, _) = settle_wait_for(&mut j, &[0]);
        assert!(e[0].message.contains("`x` run beside `w`"), "{e:?}");
        assert_eq!(e[0].line, 4);
        let mut j = jobs("[w]\n[r]\nwait_for=w\n[x]\n").unwrap();
        let (e, _) = settle_wait_for(&mut j, &[0]);
        assert!(
            e[0].message.contains("job `x`: runs here after `w`"),
            "{e:?}"
        );
        let mut j = jobs("[r]\nwait_for=w\n[w]\n").unwrap();
        let (e, _) = settle_wait_for(&mut j, &[0]);
        assert!(e[0].message.contains("no forward reference"), "{e:?}");
    }

    #[test]
    fn tiobench_profile_options_are_taken_with_a_note() {
        let j = jobs("[global]\nthreads=1\n[a]\ndir=/tmp\n").unwrap();
        assert_eq!(j[0].control.profile_options, ["threads=1", "dir=/tmp"]);
        let g = group_control(&[&j[0]], 1, false).unwrap();
        assert!(
            g.notes
                .iter()
                .any(|n| n.contains("threads=1, dir=/tmp taken and ignored")),
            "{:?}",
            g.notes
        );
    }
}
