//! `storlab fio`: fio's command-line jobs and job files run as a study (see `study::fio`),
//! printed in fio's normal, JSON, JSON+ or terse layout (`--output-format`, `--output`) from
//! the stored results (see `report::fio_json`). The job files (and the command line's jobs as
//! one) are copied into the study's results folder, and fio's log files (`write_bw_log`,
//! `write_lat_log`, ...) are written from the stored timeline and HDR interval log. As fio: a
//! successful run writes only its output; storlab's notes go into the output (see
//! [`Disclosure`]); the exit status is 0, or 1 when a job failed or was refused.

use super::fio_args::{FIO_RESULTS_HELP, FioArgs, Format, user_results_folder};
use super::*;
use storlab_study::fio::{CommandLine, FioPlan, LineError, cmdline};

/// Seconds since the epoch and ctime's text (fio's "time").
fn now() -> (i64, String) {
    // SAFETY: time and ctime_r write only into the buffer given (26 bytes needed).
    unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut buf = [0 as libc::c_char; 64];
        libc::ctime_r(&t, buf.as_mut_ptr());
        let text = std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .trim()
            .to_string();
        (t as i64, text)
    }
}

/// fio's log files of the jobs (`write_bw_log`, ...), written into the current folder as fio
/// writes them, from the stored timeline and interval log (see `report::fio_logs`).
fn write_logs(
    jobs: &storlab_model::fio_jobs::FioJobs,
    runs: &[storlab_results::stored::StoredRun],
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for f in report::fio_logs::fio_logs(jobs, runs).map_err(anyhow::Error::msg)? {
        let path = PathBuf::from(&f.name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Stores the job files, the command line's jobs as one (`0-command-line.fio`) and the job
/// model fio's outputs are made from in the study folder (`fio-jobs/`), and reads the model
/// back: the outputs are made from what was stored.
fn store_jobs(
    cmd: &CommandLine,
    fplan: &FioPlan,
    folder: &Path,
) -> Result<storlab_model::fio_jobs::FioJobs> {
    let jobs_dir = folder.join("fio-jobs");
    std::fs::create_dir_all(&jobs_dir)
        .with_context(|| format!("creating {}", jobs_dir.display()))?;
    if !cmd.jobs.sections.is_empty() {
        let path = jobs_dir.join("0-command-line.fio");
        std::fs::write(&path, cmdline::job_file_text(&cmd.jobs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for (i, f) in cmd.job_files.iter().enumerate() {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        std::fs::copy(f, jobs_dir.join(format!("{}-{name}", i + 1)))
            .with_context(|| format!("copying {} into the results", f.display()))?;
    }
    let model_path = folder.join(storlab_results::stored::FIO_JOBS_FILE);
    storlab_results::write_json_file(&model_path, &fplan.job_model())?;
    storlab_results::stored::read_fio_jobs(folder)?
        .with_context(|| format!("{} was not stored", model_path.display()))
}

/// What storlab says besides fio's figures: where the results are, what it did otherwise
/// than fio (the job model's notes), the log files written, the runs' warnings and verify
/// passes. In the normal output's header (`storlab: ...` lines) and the JSON's `storlab`
/// object, never on stderr: a run that succeeded writes only its output.
#[derive(Debug, Default)]
struct Disclosure {
    lines: Vec<String>,
}

impl Disclosure {
    fn of(
        outcome: &StudyOutcome,
        jobs: &storlab_model::fio_jobs::FioJobs,
        logs: &[PathBuf],
    ) -> Disclosure {
        let mut lines = vec![format!("results: {}", outcome.folder.display())];
        lines.extend(jobs.notes.iter().cloned());
        lines.extend(logs.iter().map(|p| format!("log: {}", p.display())));
        for s in &outcome.summaries {
            for v in s.targets.iter().filter_map(|t| t.verify.as_ref()) {
                lines.push(format!("verify {}: {} damaged", v.target(), v.damaged()));
            }
            lines.extend(s.warnings.iter().map(|w| format!("warning: {w}")));
        }
        Disclosure { lines }
    }

    /// The normal output's header.
    fn header(&self) -> String {
        let mut out: String = self
            .lines
            .iter()
            .map(|l| format!("storlab: {l}\n"))
            .collect();
        out.push('\n');
        out
    }
}

/// fio's report of the stored runs in each of `formats`, in fio's order (terse and normal
/// lines, then the JSON).
fn fio_report(
    jobs: &storlab_model::fio_jobs::FioJobs,
    runs: &[storlab_results::stored::StoredRun],
    formats: &[Format],
    folder: &Path,
    disclosure: &Disclosure,
) -> Result<String> {
    let stats = report::fio_json::job_stats(jobs, runs).map_err(anyhow::Error::msg)?;
    let (now_s, now_text) = now();
    let mut parts = Vec::new();
    for f in formats {
        parts.push(match f {
            Format::Normal => format!(
                "{}{}",
                disclosure.header(),
                report::fio_text::normal(&stats, &now_text)
            ),
            Format::Terse => report::fio_terse::terse(&stats).trim_end().to_string(),
            Format::Json | Format::JsonPlus => {
                let mut v = report::fio_json::json(
                    jobs,
                    &stats,
                    folder,
                    *f == Format::JsonPlus,
                    now_s,
                    &now_text,
                );
                v["storlab"]["notes"] = serde_json::json!(disclosure.lines);
                if formats.contains(&Format::Terse) {
                    v["storlab"]["terse"] = serde_json::json!(report::fio_terse::NOT_MEASURED);
                }
                serde_json::to_string_pretty(&v)?
            }
        });
    }
    Ok(parts.join("\n"))
}

/// `--status-interval`'s time, checked: fio's time units, more than zero; with the normal
/// output on stdout only (the dumps are normal-format lines).
fn status_interval(
    text: &Option<String>,
    formats: &[Format],
    common: &CommonRunArgs,
) -> Result<Option<std::time::Duration>> {
    let Some(t) = text else { return Ok(None) };
    let every = storlab_study::fio::parse::parse_time(t)
        .map_err(|m| anyhow::anyhow!("--status-interval={t}: {m}"))?;
    if every.is_zero() {
        anyhow::bail!("--status-interval={t}: more than zero");
    }
    if formats != [Format::Normal] || common.json {
        anyhow::bail!(
            "--status-interval with another output than normal: storlab's status dumps are fio's normal lines; use the normal output"
        );
    }
    Ok(Some(every))
}

/// Refused jobs: every problem on stderr, as fio's refusals are, and fio's exit status 1.
fn refused(errors: &[LineError]) -> i32 {
    for e in errors {
        eprintln!("{e}");
    }
    eprintln!(
        "storlab fio: {} problem(s); nothing was run (storlab fio refuses what it does not implement, never ignores it)",
        errors.len()
    );
    1
}

/// `--showcmd`: each source as one fio command line, the command line's jobs first.
fn showcmd(cmd: &CommandLine) -> i32 {
    if !cmd.jobs.sections.is_empty() {
        println!("{}", cmdline::show(&cmd.jobs));
    }
    // A variable that is not set is expanded to nothing, as fio's --showcmd expands it.
    let env = |n: &str| Some(std::env::var(n).unwrap_or_default());
    let mut errors = Vec::new();
    for p in &cmd.job_files {
        let name = p.display().to_string();
        let parsed = std::fs::read_to_string(p)
            .map_err(|e| {
                vec![LineError {
                    file: name.clone(),
                    line: 0,
                    message: format!("cannot read the job file: {e}"),
                }]
            })
            .and_then(|text| storlab_study::fio::parse::parse(&name, &text, &env));
        match parsed {
            Ok(f) => println!("{}", cmdline::show(&f)),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        0
    } else {
        refused(&errors)
    }
}

/// The study of the jobs, shrunk with `--quick`.
fn study_plan(fplan: &FioPlan, quick: bool) -> Result<Plan> {
    let mut text = fplan.study_text.clone();
    if quick {
        text.insert_str(
            0,
            "# Run with --quick: runs, sizes and counts shrunk (not for figures).\n",
        );
    }
    let mut plan = storlab_study::parse("fio-job-files.toml", &text)?;
    if quick {
        plan.make_quick();
    }
    Ok(plan)
}

/// The progress and status watcher: storlab's progress line on stderr as `--eta` says
/// (auto: when stderr is a terminal), fio's status dumps with `--status-interval`.
fn watcher(
    args: &FioArgs,
    fplan: &FioPlan,
    formats: &[Format],
    common: &mut CommonRunArgs,
) -> Result<Box<dyn storlab_engine::Watch>> {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    common.quiet = common.quiet
        || match args.eta.as_deref() {
            Some("always") => false,
            Some("never") => true,
            _ => !terminal,
        };
    let console: Box<dyn storlab_engine::Watch> =
        Box::new(console::Console::auto(common.quiet, false));
    Ok(
        match status_interval(&args.status_interval, formats, common)? {
            Some(every) => {
                let groups = fplan
                    .groups
                    .iter()
                    .map(|g| {
                        let first = &fplan.jobs[g.jobs[0]];
                        let jobs = g.jobs.iter().map(|&j| fplan.jobs[j].numjobs).sum();
                        (first.name.clone(), jobs)
                    })
                    .collect();
                Box::new(super::fio_status::FioStatus::new(console, every, groups))
            }
            None => console,
        },
    )
}

/// What was given, checked and planned.
struct Prepared {
    formats: Vec<Format>,
    cmd: CommandLine,
    fplan: FioPlan,
}

/// The jobs prepared, or the exit status when that is all there is to do (`--version`,
/// `--showcmd`, a refusal).
fn prepare(args: &FioArgs) -> Result<Result<Prepared, i32>> {
    if args.version {
        println!(
            "storlab-{} (storlab fio: fio's job files and command lines, in fio 3.33's layouts; this is storlab, not fio)",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(Err(0));
    }
    if let Some(d) = &args.debug {
        eprintln!(
            "storlab fio: --debug={d}: storlab has no fio debug classes; what it ran is in the results folder (study.toml, events, timeline)"
        );
        return Ok(Err(1));
    }
    let formats = match args.formats() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("storlab fio: {e}");
            return Ok(Err(1));
        }
    };
    let cmd = match args.command_line() {
        Ok(c) => c,
        Err(errors) => return Ok(Err(refused(&errors))),
    };
    if args.showcmd {
        return Ok(Err(showcmd(&cmd)));
    }
    let sources = storlab_study::fio::Sources {
        command_line: cmd.clone(),
        sections: args.section.clone(),
    };
    let fplan = match storlab_study::fio::load_sources(&sources) {
        Ok(p) => p,
        Err(errors) => return Ok(Err(refused(&errors))),
    };
    let refusals = args.refusals(&fplan);
    if !refusals.is_empty() {
        for r in &refusals {
            eprintln!("storlab fio: {r}");
        }
        return Ok(Err(1));
    }
    Ok(Ok(Prepared {
        formats,
        cmd,
        fplan,
    }))
}

pub(super) fn fio(args: FioArgs) -> Result<i32> {
    let Prepared {
        formats,
        cmd,
        fplan,
    } = match prepare(&args)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let plan = study_plan(&fplan, args.quick)?;
    if args.parse_only {
        return Ok(0);
    }
    let mut common = args.common.clone();
    if common.store.results.is_none() {
        common.store.results = Some(user_results_folder().with_context(|| {
            format!("no results folder: give --results or STORLAB_RESULTS (the default, {FIO_RESULTS_HELP}, needs HOME)")
        })?);
    }
    let console = watcher(&args, &fplan, &formats, &mut common)?;
    let (outcome, code) = execute_watched(&plan, &common, console)?;
    let jobs = store_jobs(&cmd, &fplan, &outcome.folder)?;
    let mut runs = Vec::new();
    for s in &outcome.summaries {
        let folder = outcome.folder.join(format!("run-{:03}", s.run_index));
        runs.push(storlab_results::stored::read_run_folder(&folder)?);
    }
    let logs = write_logs(&jobs, &runs)?;
    let disclosure = Disclosure::of(&outcome, &jobs, &logs);
    let report_text = if common.json {
        serde_json::to_string_pretty(&outcome.summaries)?
    } else {
        fio_report(&jobs, &runs, &formats, &outcome.folder, &disclosure)?
    };
    match &args.output {
        Some(p) => std::fs::write(p, format!("{report_text}\n"))
            .with_context(|| format!("writing {}", p.display()))?,
        None => println!("{report_text}"),
    }
    // A failure is said on stderr too, as fio says its job errors: damaged blocks, a job
    // below its least rate (rate_min, rate_iops_min), a run that did not complete.
    let mut failed = false;
    for s in &outcome.summaries {
        for v in s.targets.iter().filter_map(|t| t.verify.as_ref()) {
            if v.damaged() > 0 {
                eprintln!(
                    "verify {}: {} damaged\n{}",
                    v.target(),
                    v.damaged(),
                    v.text_table()
                );
                failed = true;
            }
        }
    }
    for m in super::fio_rate_min::failures(&fplan, &runs) {
        eprintln!("{m}");
        failed = true;
    }
    if code != 0 {
        eprintln!(
            "storlab fio: the run did not complete (storlab status {code}); results: {}",
            outcome.folder.display()
        );
    }
    Ok(match code {
        0 if !failed => 0,
        EXIT_INTERRUPTED => EXIT_INTERRUPTED,
        _ => 1,
    })
}
