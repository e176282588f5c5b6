//! fio's job files, brought over: `storlab fio JOBFILE...` reads fio's job-file syntax
//! ([`parse`]), resolves each job's options with fio's inheritance and refuses every option it
//! does not implement by name and line ([`options`]), and turns the jobs into a study of
//! `file` targets, block workloads ([`workload`]) and one step per stonewall group ([`plan`]),
//! so that a job file runs through the same plan, engine and results store as any study.

pub mod buffers;
pub mod cmdline;
pub mod control;
pub mod distribution;
pub mod engines;
pub mod fileops;
pub mod files;
pub mod job;
pub mod latency;
pub mod logs;
pub mod measure;
pub mod names;
pub mod numa;
pub mod options;
pub mod parse;
pub mod plan;
pub mod prio;
pub mod rates;
pub mod sizes;
pub mod workload;
pub mod zones;

pub use cmdline::{COMMAND_LINE, CommandLine};
pub use engines::{Engine, FileEngine, Runner};
pub use job::{Job, Rw};
pub use parse::LineError;
pub use plan::FioPlan;

/// What `storlab fio` runs: the command line's jobs and job files, and fio's `--section`s.
#[derive(Debug, Clone)]
pub struct Sources {
    pub command_line: CommandLine,
    /// fio's `--section`: only the jobs of these names run (`[global]` sections always
    /// apply); empty: every job.
    pub sections: Vec<String>,
}

/// Reads, resolves and plans the job files at `paths`; every problem of every file comes back
/// together.
pub fn load(paths: &[std::path::PathBuf]) -> Result<FioPlan, Vec<LineError>> {
    load_sources(&Sources {
        command_line: CommandLine {
            jobs: parse::JobFile {
                file: COMMAND_LINE.into(),
                sections: Vec::new(),
            },
            job_files: paths.to_vec(),
        },
        sections: Vec::new(),
    })
}

/// Reads, resolves and plans the command line's jobs, then its job files in order, as fio
/// does: the command line's global options apply to its jobs and the first job file's, and
/// its jobs run in one group with that file's first jobs (fio's later files each start a
/// group). Every problem of every source comes back together.
pub fn load_sources(src: &Sources) -> Result<FioPlan, Vec<LineError>> {
    // fio expands a variable that is not set to nothing; storlab too, and says so.
    let unset = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let env = |n: &str| {
        std::env::var(n).ok().or_else(|| {
            unset.borrow_mut().insert(n.to_string());
            Some(String::new())
        })
    };
    let mut errors = Vec::new();
    let mut files: Vec<plan::JobFile> = Vec::new();
    let cmd = keep_sections(src.command_line.jobs.clone(), &src.sections);
    let inherited = src.command_line.global();
    if cmd.sections.iter().any(|s| s.name != "global") {
        match options::resolve(&cmd) {
            Ok(jobs) => files.push((COMMAND_LINE.into(), jobs, as_written(&inherited))),
            Err(e) => errors.extend(e),
        }
    } else if let Some(first) = inherited.first() {
        errors.extend(options::check_global(
            COMMAND_LINE,
            first.line,
            &inherited,
            &inherited,
        ));
    }
    for (i, p) in src.command_line.job_files.iter().enumerate() {
        let name = p.display().to_string();
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => {
                errors.push(LineError {
                    file: name,
                    line: 0,
                    message: format!("cannot read the job file: {e}"),
                });
                continue;
            }
        };
        let inherit: &[parse::Entry] = if i == 0 { &inherited } else { &[] };
        let f = match parse::parse(&name, &text, &env) {
            Ok(f) => keep_sections(f, &src.sections),
            Err(e) => {
                errors.extend(e);
                continue;
            }
        };
        if !src.sections.is_empty() && f.sections.iter().all(|s| s.name == "global") {
            continue;
        }
        let jobs = match options::resolve_with(&f, inherit) {
            Ok(jobs) => jobs,
            Err(e) => {
                errors.extend(e);
                continue;
            }
        };
        let mut global = as_written(inherit);
        global.extend(globals(&f));
        match files.last_mut() {
            Some(cmd) if i == 0 && cmd.0 == COMMAND_LINE => {
                cmd.0 = format!("{COMMAND_LINE} {name}");
                cmd.1.extend(jobs);
                cmd.2 = global;
            }
            _ => files.push((name, jobs, global)),
        }
    }
    if files.is_empty() && errors.is_empty() {
        errors.push(LineError {
            file: COMMAND_LINE.into(),
            line: 0,
            message: if src.sections.is_empty() {
                "no job: give a job file, or a job as options (--name=NAME --rw=... --size=...)"
                    .into()
            } else {
                format!("no job named by --section ({})", src.sections.join(", "))
            },
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut plan = plan::build(files)?;
    for name in unset.into_inner() {
        plan.notes.push(format!(
            "`${{{name}}}`: environment variable {name} is not set: expanded to nothing, as fio expands it"
        ));
    }
    Ok(plan)
}

/// fio's `--section`: the file without the jobs not named (its `[global]`s kept).
fn keep_sections(mut f: parse::JobFile, names: &[String]) -> parse::JobFile {
    if !names.is_empty() {
        f.sections
            .retain(|s| s.name == "global" || names.contains(&s.name));
    }
    f
}

/// Options as written (fio's "global options"): name and value.
fn as_written(entries: &[parse::Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

/// A job file's `[global]` options as written.
fn globals(f: &parse::JobFile) -> Vec<(String, String)> {
    let entries: Vec<parse::Entry> = f
        .sections
        .iter()
        .filter(|s| s.name == "global")
        .flat_map(|s| s.entries.iter().cloned())
        .collect();
    as_written(&entries)
}

/// One job file's jobs and its `[global]` options as written.
pub fn from_text(
    name: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<plan::JobFile, Vec<LineError>> {
    let f = parse::parse(name, text, env)?;
    let jobs = options::resolve(&f)?;
    Ok((name.to_string(), jobs, globals(&f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<FioPlan, Vec<LineError>> {
        plan::build(vec![from_text("job.fio", text, &|_| None)?])
    }

    #[test]
    fn stonewall_groups_become_steps() {
        let p = plan(
            "[global]\nioengine=libaio\ndirect=1\nsize=8m\nruntime=2\ntime_based\nfilename=/tmp/storlab-fio-test.dat\n[r]\nrw=randread\niodepth=32\n[w]\nstonewall\nrw=randwrite\nnumjobs=2\n",
        )
        .unwrap();
        assert_eq!(p.groups.len(), 2);
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        assert_eq!(study.runs.len(), 2);
        let r = &study.runs[0];
        assert_eq!(r.duration.map(|d| d.0.as_secs()), Some(2));
        assert_eq!(r.targets[0].workload.queue_depth(), 32);
        assert_eq!(study.runs[1].targets[0].workload.threads(), 2);
        assert!(
            p.study_text
                .contains("substitution: job `r`: ioengine=libaio ran on io_uring")
        );
    }

    #[test]
    fn jobs_and_clones_running_together_each_draw_their_own_offsets() {
        // fio seeds each job and clone by its number: two clones on their own files, or two
        // jobs with the same options, do not issue the same offsets.
        let p =
            plan("[global]\nioengine=null\nsize=1m\nrw=randread\n[a]\nnumjobs=2\n[b]\n").unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        let seeds: Vec<u64> = study.runs[0].targets.iter().map(|t| t.seed).collect();
        assert_eq!(seeds.len(), 3, "{}", p.study_text);
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 3, "{seeds:?}");
    }

    #[test]
    fn engines_run_on_storlab_engines_each_substitution_said() {
        let p = plan(
            "[global]\nsize=1m\nrw=randread\niodepth=8\n[n]\nioengine=null\nfilename=/nonexistent/storlab/n\n[s]\nstonewall\nioengine=sync\nfilename=/tmp/s\n[v]\nstonewall\nioengine=pvsync2\nfilename=/tmp/v\n[a]\nstonewall\nioengine=posixaio\nfilename=/tmp/a\n",
        )
        .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        let kinds: Vec<&str> = study
            .runs
            .iter()
            .map(|r| r.targets[0].config.type_name())
            .collect();
        assert_eq!(kinds, ["null", "file", "file", "file"]);
        let qd: Vec<u32> = study
            .runs
            .iter()
            .map(|r| r.targets[0].workload.queue_depth())
            .collect();
        assert_eq!(qd, [8, 1, 1, 8]);
        for said in [
            "substitution: job `s`: ioengine=sync ran on psync",
            "substitution: job `v`: ioengine=pvsync2 ran on psync",
            "substitution: job `a`: ioengine=posixaio ran on io_uring",
            "job `s`: ioengine=sync runs one I/O at a time: iodepth=8 is 1",
        ] {
            assert!(p.study_text.contains(said), "{said}: {}", p.study_text);
        }
        assert!(
            !p.study_text.contains("ioengine=null ran"),
            "{}",
            p.study_text
        );
        // fio's null engine needs a size, and keeps no data to verify.
        let e = plan("[n]\nioengine=null\nrw=read\n").unwrap_err();
        assert!(e[0].message.contains("needs a size"), "{}", e[0]);
        let e = plan("[n]\nioengine=null\nsize=1m\nrw=write\nverify=crc32c\n").unwrap_err();
        assert!(e[0].message.contains("keeps no data"), "{}", e[0]);
        let e = plan("[n]\nioengine=mmap\nsize=1m\n").unwrap_err();
        assert!(
            e[0].message.starts_with("ioengine=mmap: not supported"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn control_options_become_step_keys_events_and_seeds() {
        let text = "[global]\nsize=1m\nrw=randread\n[a]\nfilename=/tmp/a\nexec_prerun=true\n[b]\nstonewall\nfilename=/tmp/b\ncontinue_on_error=all\nrandrepeat=0\n";
        let p = plan(text).unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        // fio's default stops a job at its first error; continue_on_error=all goes on.
        assert!(study.runs[0].stop_on_error);
        assert!(!study.runs[1].stop_on_error);
        assert_eq!(study.runs[0].events.len(), 1);
        assert!(study.runs[1].events.is_empty());
        let seed = p.jobs[1].control.seed.unwrap();
        assert!(
            p.study_text
                .contains(&format!("randrepeat=0: offsets drawn from seed {seed}")),
            "{}",
            p.study_text
        );
        let seed_of = |r: usize| study.runs[r].targets[0].workload.as_block().unwrap().seed;
        assert_ne!(seed_of(0), seed_of(1));
        // Another invocation draws another seed; randrepeat=1 keeps storlab's.
        let again = plan(text).unwrap();
        assert_ne!(again.jobs[1].control.seed, Some(seed));
        assert_eq!(again.jobs[0].control.seed, None);
        let e = plan("[global]\nsize=1m\n[a]\nfilename=/tmp/a\n[b]\nfilename=/tmp/b\nexitall\n")
            .unwrap_err();
        assert!(e[0].message.contains("exitall"), "{}", e[0]);
        assert_eq!(e[0].line, 5);
    }

    #[test]
    fn fsyncs_count_among_the_ops_so_that_size_bytes_are_written() {
        // fio 3.33: 16 writes of 4 KiB with fsync=2 issue 7 fsyncs (none after the last).
        for sync in ["fsync=2", "fdatasync=2"] {
            let p = plan(&format!(
                "[a]\nfilename=/tmp/x\nsize=64k\nbs=4k\nrw=write\n{sync}\n"
            ))
            .unwrap();
            let study = crate::parse("fio.toml", &p.study_text).unwrap();
            assert_eq!(study.runs[0].ops, Some(16 + 7), "{sync}");
        }
        let p = plan("[a]\nfilename=/tmp/x\nsize=64k\nbs=4k\nrw=randrw\nrwmixread=75\nfsync=2\n")
            .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        assert_eq!(
            study.runs[0].ops,
            Some(16 + 1),
            "4 writes expected: 1 fsync"
        );
    }

    #[test]
    fn a_job_on_many_files_is_one_target_over_the_set() {
        let p = plan(
            "[global]\ndirectory=/tmp/storlab-fio-set\nbs=4k\n[m]\nrw=randread\nnrfiles=4\nfilesize=16k\nnumjobs=2\nfile_service_type=random\nunlink=1\n",
        )
        .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        let r = &study.runs[0];
        assert_eq!(r.targets.len(), 2, "a target per clone");
        // fio: 4 files of 16 KiB, 4 blocks each (the ops of each target).
        assert_eq!(r.ops, Some(16));
        let storlab_targets::TargetConfig::File(f) = &r.targets[1].config else {
            panic!("a file target");
        };
        let names: Vec<String> = f
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        assert_eq!(
            names,
            (0..4)
                .map(|i| format!("/tmp/storlab-fio-set/m.1.{i}"))
                .collect::<Vec<_>>()
        );
        assert!(f.files.iter().all(|f| f.size.0 == 16384));
        assert_eq!(f.file_service, storlab_targets::file::FileService::Random);
        assert!(f.remove_after && !f.file_cursors);
        let e =
            plan("[m]\nsize=1m\nnrfiles=4\nopenfiles=2\nfile_service_type=zipf:1.1\n").unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!((e[0].line, e[1].line), (4, 5));
        let e = plan("[m]\nnrfiles=4\nrw=read\n").unwrap_err();
        assert!(e[0].message.contains("give a size"), "{}", e[0]);
    }

    #[test]
    fn size_bounds_clones_and_splits() {
        let p =
            plan("[a]\ndirectory=/tmp\nsize=1m\nbs=4k\nrw=read\nnumjobs=3\nioengine=io_uring\n")
                .unwrap();
        assert_eq!(
            p.targets[0].paths[2],
            std::path::PathBuf::from("/tmp/a.2.0")
        );
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        assert_eq!(study.runs[0].targets.len(), 3);
        assert_eq!(study.runs[0].ops, Some(256));
        assert_eq!(study.runs[0].duration, None);
        let p =
            plan("[a]\nfilename=/tmp/x\nsize=1m\nrw=randrw\nrwmixread=70\nbssplit=4k/50:64k/50\n")
                .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        let w = study.runs[0].targets[0]
            .workload
            .as_block()
            .unwrap()
            .clone();
        // bssplit: fio's size draw per I/O (storlab's pattern source), not IOmeter's lines.
        assert!(w.access_spec.is_empty());
        assert_eq!(w.block_size_split.len(), 2);
        assert_eq!(w.block_size.0, 65536, "buffers for the largest");
        assert!((w.read_share - 0.7).abs() < 1e-9);
    }

    #[test]
    fn concurrent_jobs_run_together_each_with_its_own_workload() {
        // A reader and a writer at once: one run, the writer on a workload of its own.
        let p = plan(
            "[global]\nsize=1m\n[a]\nfilename=/tmp/a\nrw=read\n[b]\nfilename=/tmp/b\nrw=write\n",
        )
        .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        assert_eq!(study.runs.len(), 1);
        let names: Vec<&str> = study.runs[0]
            .targets
            .iter()
            .map(|t| t.workload_name.as_str())
            .collect();
        assert_eq!(names, ["group-0", "group-0-b"]);
        assert!(!study.runs[0].targets[0].workload.writes());
        assert_eq!(
            study.runs[0].targets[1].workload.kinds(),
            [storlab_model::OpKind::Write]
        );
        // Jobs of one group bounded differently are refused, naming the job and line.
        let e = plan(
            "[global]\nrw=read\n[a]\nfilename=/tmp/a\nsize=1m\n[b]\nfilename=/tmp/b\nsize=2m\n",
        )
        .unwrap_err();
        assert_eq!(e[0].line, 6);
        assert!(
            e[0].message.contains("add `stonewall` to job `b`"),
            "{}",
            e[0]
        );
        let e = plan("[a]\nrw=read\nfilename=/nonexistent/storlab/x\n").unwrap_err();
        assert!(e[0].message.contains("give a size"), "{}", e[0]);
        let p =
            plan("[global]\nsize=1m\nrw=randread\n[a]\nfilename=/tmp/a\n[b]\nfilename=/tmp/b\n")
                .unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        assert_eq!(study.runs.len(), 1);
        assert_eq!(study.runs[0].targets.len(), 2);
    }

    #[test]
    fn a_variable_that_is_not_set_is_expanded_to_nothing_and_said() {
        let dir = std::env::temp_dir().join(format!("storlab-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let job = dir.join("env.fio");
        std::fs::write(
            &job,
            "[t]\nioengine=null\nsize=1m${STORLAB_TEST_SURELY_UNSET}\n",
        )
        .unwrap();
        let p = load(std::slice::from_ref(&job)).unwrap();
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("STORLAB_TEST_SURELY_UNSET is not set: expanded to nothing")),
            "{:?}",
            p.notes
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
