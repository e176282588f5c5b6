//! `storlab fio JOBFILE...`: fio's job files run as a study (see `study::fio`), printed in
//! fio's normal, JSON, JSON+ or terse layout (`--output-format`, `--output`) from the stored results
//! (see `report::fio_json`). The job files are copied into the study's results folder, and
//! fio's log files (`write_bw_log`, `write_lat_log`, ...) are written from the stored timeline
//! and HDR interval log.

use super::*;

#[derive(Args)]
pub(super) struct FioArgs {
    #[command(flatten)]
    common: CommonRunArgs,
    /// fio's output format: normal, json, json+ (json with the latency bins) or terse (fio's
    /// `;`-separated version 3 lines).
    #[arg(long = "output-format", default_value = "normal", value_parser = ["normal", "json", "json+", "terse"])]
    output_format: String,
    /// Write the report to this file instead of stdout (fio's --output).
    #[arg(long)]
    output: Option<PathBuf>,
    /// fio's periodic status: every TIME of measurement (fio's time units, seconds by
    /// default), each group's cumulative IOPS and bandwidth so far on stdout (normal output).
    #[arg(long = "status-interval", value_name = "TIME")]
    status_interval: Option<String>,
    /// Shrink every job for a quick check (not for figures): warm-up at most 0.2 s, at most
    /// 1 s and 20,000 I/Os per group, files at most 64 MiB; recorded with the results.
    #[arg(long)]
    quick: bool,
    /// fio job files, run in order.
    #[arg(required = true, value_name = "JOBFILE")]
    jobfiles: Vec<PathBuf>,
}

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

/// Stores the job files and the job model fio's outputs are made from in the study folder
/// (`fio-jobs/`), and reads the model back: the outputs are made from what was stored.
fn store_jobs(
    jobfiles: &[PathBuf],
    fplan: &storlab_study::fio::FioPlan,
    folder: &Path,
) -> Result<storlab_model::fio_jobs::FioJobs> {
    let jobs_dir = folder.join("fio-jobs");
    std::fs::create_dir_all(&jobs_dir)
        .with_context(|| format!("creating {}", jobs_dir.display()))?;
    for (i, f) in jobfiles.iter().enumerate() {
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

/// fio's report of the stored runs in `format` (normal, terse, json or json+).
fn fio_report(
    jobs: &storlab_model::fio_jobs::FioJobs,
    runs: &[storlab_results::stored::StoredRun],
    format: &str,
    folder: &Path,
) -> Result<String> {
    let stats = report::fio_json::job_stats(jobs, runs).map_err(anyhow::Error::msg)?;
    let (now_s, now_text) = now();
    Ok(match format {
        "normal" => report::fio_text::normal(&stats, &now_text),
        "terse" => {
            eprintln!("storlab fio: {}", report::fio_terse::NOT_MEASURED);
            report::fio_terse::terse(&stats).trim_end().to_string()
        }
        plus => serde_json::to_string_pretty(&report::fio_json::json(
            jobs,
            &stats,
            folder,
            plus == "json+",
            now_s,
            &now_text,
        ))?,
    })
}

/// `--status-interval`'s time, checked: fio's time units, more than zero; with the normal
/// output on stdout only (the dumps are normal-format lines).
fn status_interval(
    text: &Option<String>,
    format: &str,
    common: &CommonRunArgs,
) -> Result<Option<std::time::Duration>> {
    let Some(t) = text else { return Ok(None) };
    let every = storlab_study::fio::parse::parse_time(t)
        .map_err(|m| anyhow::anyhow!("--status-interval={t}: {m}"))?;
    if every.is_zero() {
        anyhow::bail!("--status-interval={t}: more than zero");
    }
    if format != "normal" || common.json {
        anyhow::bail!(
            "--status-interval with --output-format={format}: storlab's status dumps are fio's normal lines; use the normal output"
        );
    }
    Ok(Some(every))
}

pub(super) fn fio(args: FioArgs) -> Result<i32> {
    let fplan = match storlab_study::fio::load(&args.jobfiles) {
        Ok(p) => p,
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            eprintln!(
                "storlab fio: {} problem(s); nothing was run (storlab fio refuses what it does not implement, never ignores it)",
                errors.len()
            );
            return Ok(EXIT_INVALID);
        }
    };
    for n in &fplan.notes {
        eprintln!("storlab fio: {n}");
    }
    let mut text = fplan.study_text.clone();
    if args.quick {
        text.insert_str(
            0,
            "# Run with --quick: runs, sizes and counts shrunk (not for figures).\n",
        );
    }
    let mut plan = storlab_study::parse("fio-job-files.toml", &text)?;
    if args.quick {
        plan.make_quick();
    }
    let mut common = args.common;
    common.quiet = common.quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let console: Box<dyn storlab_engine::Watch> =
        Box::new(console::Console::auto(common.quiet, false));
    let console = match status_interval(&args.status_interval, &args.output_format, &common)? {
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
    };
    let (outcome, code) = execute_watched(&plan, &common, console)?;
    let jobs = store_jobs(&args.jobfiles, &fplan, &outcome.folder)?;
    let mut runs = Vec::new();
    for s in &outcome.summaries {
        let folder = outcome.folder.join(format!("run-{:03}", s.run_index));
        runs.push(storlab_results::stored::read_run_folder(&folder)?);
    }
    for p in write_logs(&jobs, &runs)? {
        eprintln!("log: {}", p.display());
    }
    let report_text = if common.json {
        serde_json::to_string_pretty(&outcome.summaries)?
    } else {
        fio_report(&jobs, &runs, &args.output_format, &outcome.folder)?
    };
    match &args.output {
        Some(p) => std::fs::write(p, format!("{report_text}\n"))
            .with_context(|| format!("writing {}", p.display()))?,
        None => println!("{report_text}"),
    }
    for s in &outcome.summaries {
        for v in s.targets.iter().filter_map(|t| t.verify.as_ref()) {
            eprintln!(
                "verify {}: {} damaged\n{}",
                v.target(),
                v.damaged(),
                v.text_table()
            );
        }
        for w in &s.warnings {
            eprintln!("warning: {w}");
        }
    }
    eprintln!("results: {}", outcome.folder.display());
    // rate_min / rate_iops_min: a job below its least rate fails the command, as in fio.
    let below = super::fio_rate_min::failures(&fplan, &runs);
    for m in &below {
        eprintln!("{m}");
    }
    Ok(if below.is_empty() || code != 0 {
        code
    } else {
        1
    })
}
