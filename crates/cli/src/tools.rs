//! The ready-made commands: `storlab brief` (characterize the storage under a folder),
//! `storlab dbbench` and `storlab ycsb` (one run in the peer tool's own terms), and
//! `storlab iometer-icf` (an IOmeter configuration's access specifications as workloads).

use super::*;

pub(super) fn brief(args: BriefArgs) -> Result<i32> {
    // The earlier brief, read before anything runs: a wrong name fails at once.
    let previous = match &args.compare {
        Some(p) => Some(previous_headline(p, &args.common.store.location()?)?),
        None => None,
    };
    let (dir, scratch) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            PathBuf::from(format!("storlab-brief-scratch-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir_abs = dir
        .canonicalize()
        .with_context(|| format!("resolving {}", dir.display()))?;
    let direct = storlab_study::brief::direct_supported(&dir_abs);
    let data = dir_abs.join("storlab-brief.dat");
    if data.exists() && !args.keep {
        bail!(
            "{} already exists: remove it, or pass --keep to reuse it",
            data.display()
        );
    }
    let kv_dir = dir_abs.join("storlab-brief-rocksdb");
    let mut text = storlab_study::brief::study_text(&data, &kv_dir, args.quick, direct);
    if args.keep {
        text = text.replace("remove-after = true", "remove-after = false");
    }
    let plan = storlab_study::parse("brief.toml", &text)?;
    let result = execute(&plan, &args.common);
    if scratch && !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (outcome, code) = result?;
    let system = match outcome.summaries.first() {
        Some(s) => storlab_results::stored::read_system(
            &outcome.folder.join(format!("run-{:03}", s.run_index)),
        )?,
        None => None,
    };
    let stored = storlab_results::stored::read_study_folder(&outcome.folder)?;
    let mut headline = report::headline::of_runs(&stored);
    if let Some(p) = &previous {
        headline = headline.with_previous(p, p.compared_with.as_deref().unwrap_or(""));
    }
    let md = report::markdown::study_markdown(
        &format!("storlab brief of {}", dir_abs.display()),
        plan.description.as_deref(),
        &report::markdown::top_markdown(&stored, previous.as_ref()),
        &outcome.summaries,
        system.as_ref(),
    );
    let md_path = outcome.folder.join("brief.md");
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    let html_path = write_brief_html(&outcome.folder, previous.as_ref());
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&outcome.summaries)?);
    } else {
        println!("{}", brief_overview(&outcome));
        println!("headline (as in brief.html)\n{}", headline.text());
    }
    eprintln!(
        "results: {}\nbrief:   {}",
        outcome.folder.display(),
        md_path.display()
    );
    match html_path {
        Ok(p) => eprintln!("html:    {}", p.display()),
        Err(e) => eprintln!("html:    not written: {}", error_text(&e)),
    }
    Ok(code)
}

/// The headline of an earlier brief for `--compare`: PREVIOUS is its result folder, a
/// `summary.json` in it, or a run id of the results store. A run folder inside a study folder
/// (a brief's `run-NNN`) stands for the whole study.
fn previous_headline(
    arg: &str,
    location: &storlab_results::store::StoreLocation,
) -> Result<report::headline::Headline> {
    let path = Path::new(arg);
    let resolved = if path.is_file() && path.file_name().is_some_and(|n| n == "summary.json") {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else if path.is_dir() {
        path.to_path_buf()
    } else {
        let store = storlab_results::store::Store::open_location(location).with_context(|| {
            format!("--compare {arg}: not a folder, and no results store at {location}")
        })?;
        store
            .folder(arg)
            .with_context(|| format!("--compare {arg}: no such result folder or run id"))?
    };
    let study = match resolved.parent() {
        Some(parent)
            if resolved.join("summary.json").exists() && parent.join("study.toml").exists() =>
        {
            parent.to_path_buf()
        }
        _ => resolved,
    };
    let runs = storlab_results::stored::load_result_at(&study.to_string_lossy(), location)
        .with_context(|| format!("--compare {arg}: reading {}", study.display()))?;
    let mut h = report::headline::of_runs(&runs);
    h.compared_with = Some(study.display().to_string());
    Ok(h)
}

pub(super) fn dbbench(args: DbbenchArgs) -> Result<i32> {
    let flags = match storlab_study::dbbench::parse_flags(&args.flags) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("storlab dbbench: {e}");
            return Ok(EXIT_INVALID);
        }
    };
    let text = flags.study_text();
    let plan = storlab_study::parse("dbbench-flags.toml", &text)?;
    let comp = (flags.value_size as f64 * flags.compression_ratio) as u64;
    if !args.common.json {
        println!("Keys:       {} bytes each", flags.key_size);
        println!(
            "Values:     {} bytes each ({} bytes after compression)",
            flags.value_size, comp
        );
        println!("Entries:    {}", flags.num);
        println!("Database:   {}", flags.db);
        println!("------------------------------------------------");
    }
    let mut common = args.common;
    common.quiet = common.quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (outcome, code) = execute_with(&plan, &common, false)?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&outcome.summaries)?);
    } else {
        if let Some(v) = outcome
            .summaries
            .iter()
            .find_map(|s| s.software.get("db.rocksdb"))
        {
            println!("RocksDB:    version {v}");
        }
        for (s, b) in outcome.summaries.iter().zip(&flags.benchmarks) {
            println!("{}", report::dbbench::result_line(b.name(), s));
            if flags.histogram {
                for l in report::dbbench::histogram_lines(s) {
                    println!("{l}");
                }
            }
            for w in &s.warnings {
                println!("WARNING: {w}");
            }
        }
    }
    eprintln!("results: {}", outcome.folder.display());
    Ok(code)
}

pub(super) fn ycsb(args: YcsbArgs) -> Result<i32> {
    use storlab_workload::ycsb::workload::Phase;
    let phase = if args.phase == "load" {
        Phase::Load
    } else {
        Phase::Run
    };
    let command = match storlab_study::ycsb::parse_args(phase, &args.args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("storlab ycsb: {e}");
            return Ok(EXIT_INVALID);
        }
    };
    let text = command.study_text();
    let mut plan = storlab_study::parse("ycsb-command-line.toml", &text)?;
    plan.source_text = command.study_text_redacted();
    let mut common = args.common;
    common.quiet =
        common.quiet || !command.status || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (outcome, code) = execute_with(&plan, &common, false)?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&outcome.summaries)?);
    } else {
        for s in &outcome.summaries {
            for (name, version) in &s.software {
                println!(
                    "[SOFTWARE], {}, {version}",
                    name.strip_prefix("db.").unwrap_or(name)
                );
            }
            for l in report::ycsb::lines(s, command.workload.core.data_integrity) {
                println!("{l}");
            }
            for w in &s.warnings {
                println!("[WARNING], {w}");
            }
        }
    }
    eprintln!("results: {}", outcome.folder.display());
    Ok(code)
}

pub(super) fn iometer_icf(path: &Path) -> Result<i32> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let toml = storlab_workload::icf::parse(&text)
        .and_then(|icf| storlab_workload::icf::to_toml(&icf, &path.display().to_string()));
    match toml {
        Ok(t) => {
            print!("{t}");
            Ok(0)
        }
        Err(e) => {
            eprintln!("storlab iometer-icf: {}: {e}", path.display());
            Ok(EXIT_INVALID)
        }
    }
}

/// The brief's closing summary: one line per run.
pub(super) fn brief_overview(outcome: &StudyOutcome) -> String {
    let header = [
        "run", "test", "qd", "threads", "ops/s", "MB/s", "p50", "p99", "p99.9",
    ];
    let rows: Vec<Vec<String>> = outcome
        .summaries
        .iter()
        .map(|s| {
            let t = s.targets.first().cloned().unwrap_or_default();
            vec![
                s.run_index.to_string(),
                s.step.clone(),
                t.queue_depth.to_string(),
                t.threads.to_string(),
                format!("{:.0}", t.rate_ops),
                format!("{:.1}", t.rate_bytes / 1e6),
                storlab_model::units::format_ns(t.service_latency.p50_ns as f64),
                storlab_model::units::format_ns(t.service_latency.p99_ns as f64),
                storlab_model::units::format_ns(t.service_latency.p99_9_ns as f64),
            ]
        })
        .collect();
    format!(
        "storage brief summary\n{}",
        report::table::render(&header, &rows)
    )
}
