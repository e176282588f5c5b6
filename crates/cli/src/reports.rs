//! The commands that read stored results: `storlab results`, `storlab report` and
//! `storlab compare`, and the brief's HTML page.

use super::*;
use storlab_results::store::StoreLocation;

pub(super) fn results(command: ResultsCommand, store: &StoreArgs) -> Result<i32> {
    let location = store.location()?;
    let dir = &store.folder();
    match command {
        ResultsCommand::List { json } => results_list(&open_store(&location)?, json),
        ResultsCommand::Show { run, json } => results_show(&open_store(&location)?, &run, json),
        ResultsCommand::Push { folders } => results_push(&location, &folders),
        ResultsCommand::History {
            study,
            target,
            step,
            confidence,
            json,
        } => {
            let store = open_store(&location)?;
            let runs = storlab_results::comparison::history::load(
                &store,
                &study,
                &target,
                step.as_deref(),
                confidence,
            )?;
            if runs.is_empty() {
                bail!("no run of study `{study}` has figures of a target `{target}`");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print!("{}", report::history::history_text(&runs, confidence));
            }
            Ok(0)
        }
        ResultsCommand::Export {
            format,
            output,
            kind,
        } => {
            let store = open_store(&location)?;
            let table = storlab_results::export::export(&store, kind, format, &output)?;
            eprintln!(
                "{}: {} rows, {} columns",
                output.display(),
                table.rows.len(),
                table.names.len()
            );
            Ok(0)
        }
        ResultsCommand::Reindex => {
            if store.store.is_some() {
                bail!(
                    "reindex rebuilds the SQLite index of a results folder (--results) from its run folders; to fill another store, use `storlab results push FOLDER --store STORE`"
                );
            }
            let r = storlab_results::reindex::reindex(dir)?;
            println!(
                "results.db rebuilt from {} study folders in {}: {} runs, {} incomplete (no summary.json)",
                r.studies,
                dir.display(),
                r.runs,
                r.incomplete
            );
            if let Some(old) = r.old_index {
                println!("the old index is kept as {}", old.display());
            }
            Ok(0)
        }
    }
}

/// The results store at `location`; an SQLite one must exist (reading never makes one).
fn open_store(location: &StoreLocation) -> Result<Store> {
    if let StoreLocation::Sqlite(file) = location
        && !file.exists()
    {
        bail!(
            "no results store at {} (runs store their results there; set --results or STORLAB_RESULTS, or --store or STORLAB_STORE)",
            file.display()
        );
    }
    Ok(Store::open_location(location)?)
}

/// `storlab results push FOLDER...`.
fn results_push(location: &StoreLocation, folders: &[PathBuf]) -> Result<i32> {
    let mut store = Store::open_location(location)?;
    let p = storlab_results::push::push(&mut store, folders)?;
    println!(
        "pushed into {location}: {} runs, {} incomplete (no summary.json); {} files, {} bytes",
        p.runs, p.incomplete, p.files, p.bytes
    );
    if p.notes_removed > 0 {
        println!(
            "removed {} {} notes: the store has those runs now",
            p.notes_removed,
            storlab_results::push::UNREACHABLE_NOTE_FILE
        );
    }
    for left in &p.notes_left {
        eprintln!("warning: a note that the store lacked the run was not removed: {left}");
    }
    Ok(0)
}

/// `storlab results list`: a line per stored run, then why each incomplete one is.
fn results_list(store: &Store, json: bool) -> Result<i32> {
    let rows = store.list()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    let header = [
        "run",
        "study",
        "step",
        "#",
        "parameters",
        "status",
        "started",
        "ops/s",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                r.study.clone(),
                r.step.clone(),
                format!("{}/{}", r.run_index, r.run_count),
                r.parameters.clone(),
                r.status.clone(),
                r.started_at.clone(),
                r.rate_ops
                    .map(|x| format!("{x:.0}"))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    print!("{}", report::table::render(&header, &table));
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        println!("{} {}: {}", r.run_id, r.status, r.note);
    }
    Ok(0)
}

/// `storlab results show RUN`.
fn results_show(store: &Store, run: &str, json: bool) -> Result<i32> {
    let s = store.summary(run)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", report::run_text::run_table(&s));
    }
    Ok(0)
}

pub(super) const REPORT_ABOUT: &str =
    "Write a report from stored results, without re-running anything.

RESULT is a run folder (holding summary.json), a study folder (holding run-NNN folders), or a
run id from the results store (or a unique start or end of one; see `storlab results list`).
Several RESULTs are reported together: runs of the same step form one workload, the swept
parameter is the x axis of its charts and each target is a series.

The HTML brief is one self-contained file (styles and SVG charts inline, no network needed to
view or print it): a summary with headline figures and call-outs computed from the data, per
workload a table and charts (ops/s bars per swept value and target, p99 latency against ops/s,
HDR latency percentile curves, efficiency), the per-second timelines with moving averages and
events, warnings where storlab was saturated or a run was partial, and the disclosure
appendix (CPU, memory, kernel, devices, filesystems, versions, the study file and command
line). Credentials in URIs and secret-named options are redacted in every format.

Examples:
  storlab report storlab-results/file-sweep-20261120-230102
  storlab report RUN_ID -o brief.html --png slides/
  storlab report STUDY_FOLDER --format md -o brief.md";

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ReportFormat {
    /// Self-contained HTML with inline SVG charts.
    Html,
    /// Markdown with the tables, call-outs, warnings and disclosure.
    Md,
    /// One row per run, target and operation kind, unrounded values.
    Csv,
    /// IOmeter's result file (iometer.csv): per run ALL, MANAGER (client) and DISK rows.
    Iometer,
}

// Its doc comments are `--help` text: `<ext>` is a placeholder, not an HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Args)]
pub(super) struct ReportArgs {
    /// Run folders, study folders or run ids.
    #[arg(required = true, value_name = "RESULT")]
    results_to_report: Vec<String>,
    /// Output file (default: report.html/.md/.csv, or iometer.csv, in the study folder when
    /// one study folder is given, else storlab-report.<ext> or iometer.csv in the current
    /// folder; `-` for stdout).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "html")]
    format: ReportFormat,
    /// Also write every chart as a PNG (2x size, for slides) into this folder.
    #[arg(long, value_name = "DIR")]
    png: Option<PathBuf>,
    /// Put a brief's published figures beside these (a baseline file, e.g.
    /// studies/baselines/ycsb-mongodb.toml), with the ratio. By default, the baseline the
    /// study names (`baseline = "..."` in the study file), kept with its results.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
}

/// A baseline file given on the command line, read and checked.
fn read_baseline_file(path: &Path) -> Result<storlab_model::baseline::Baseline> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    storlab_model::baseline::Baseline::from_toml(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.trim()))
}

pub(super) const COMPARE_ABOUT: &str =
    "Set stored results side by side, with ratios and percent differences against the first.

Each of A, B, C... is a run folder, a study folder or a run id (as for `storlab report`). Runs
are matched by step, sweep point and target position (by position when step names differ). A
pair is compared only when its resolved workloads are the same; otherwise storlab says plainly
that they are not comparable and what differs. Differences that do not prevent comparing (the
target's path or engine, the step name) are listed as notes.

Each figure with an interval (ops/s, mean, p50, p99, p99.9) gets the ratio's confidence
interval and a verdict: better, worse, or no difference beyond the noise. Intervals come
from a point's repetitions when it has several (a study's `repetitions`), else from ten
batches of its one run's intervals, which hold the noise within that run only; the output
says which (docs/metrics.md, \"How sure a figure is\").

Exit status: 0 when something was compared, 3 when nothing was comparable, 5 when
--fail-on-regression found a figure worse beyond the noise and by more than its threshold.

Examples:
  storlab compare RUN_ID_1 RUN_ID_2
  storlab compare STUDY_FOLDER_A STUDY_FOLDER_B --html compare.html
  storlab compare main/ branch/ --fail-on-regression 5% --confidence 99";

#[derive(Args)]
pub(super) struct CompareArgs {
    /// The baseline (A) and what to compare with it (B, C...).
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    results_to_compare: Vec<String>,
    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The confidence of the intervals and verdicts, in percent.
    #[arg(long, value_name = "PERCENT", default_value = "95", value_parser = parse_confidence)]
    confidence: f64,
    /// Exit 5 when a figure of B (C...) is worse than A's beyond the noise and by more than
    /// this (`5%`: ops/s below 0.95x of A, or a latency above 1.05x), naming each.
    #[arg(long, value_name = "PERCENT", value_parser = parse_threshold)]
    fail_on_regression: Option<f64>,
    /// Print the comparison as JSON (figures, intervals, verdicts, regressions) instead of
    /// the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// `95`, `95%` or `99.9` as a fraction, between 50% and 99.99%.
pub(super) fn parse_confidence(text: &str) -> Result<f64, String> {
    let p = percent(text)?;
    if !(50.0..=99.99).contains(&p) {
        return Err(format!("{text}: give a confidence between 50% and 99.99%"));
    }
    Ok(p / 100.0)
}

/// `5%` or `5` as a fraction, from 0% up to 100%.
pub(super) fn parse_threshold(text: &str) -> Result<f64, String> {
    let p = percent(text)?;
    if !(0.0..100.0).contains(&p) {
        return Err(format!("{text}: give a percentage from 0% up to 100%"));
    }
    Ok(p / 100.0)
}

/// 0.05 as `5%`, 0.125 as `12.5%`.
fn percent_text(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    number
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
        .ok_or_else(|| format!("{text}: not a percentage (e.g. 5%)"))
}

/// Exit code of `compare --fail-on-regression` when a figure regressed.
pub(super) const EXIT_REGRESSION: i32 = 5;

/// Exit code of `compare` when nothing was comparable.
pub(super) const EXIT_NOT_COMPARABLE: i32 = 3;

pub(super) fn report_command(args: ReportArgs) -> Result<i32> {
    let runs =
        storlab_results::stored::load_results_at(&args.results_to_report, &args.store.location()?)?;
    let baseline = args
        .baseline
        .as_deref()
        .map(read_baseline_file)
        .transpose()?;
    let (text, ext) = match args.format {
        ReportFormat::Html => (
            report::html::report_html_compared(&runs, None, baseline.as_ref()),
            "html",
        ),
        ReportFormat::Md => (
            report::markdown::report_markdown(&runs, baseline.as_ref()),
            "md",
        ),
        ReportFormat::Csv => (report::csv::report_csv(&runs), "csv"),
        ReportFormat::Iometer => (report::iometer::iometer_csv(&runs), "csv"),
    };
    let single_study = match args.results_to_report.as_slice() {
        [one] if Path::new(one).is_dir() && !Path::new(one).join("summary.json").exists() => {
            Some(PathBuf::from(one))
        }
        _ => None,
    };
    let out = args.output.clone().unwrap_or_else(|| match &single_study {
        Some(d) if args.format == ReportFormat::Iometer => d.join(report::iometer::FILE),
        Some(d) => d.join(format!("report.{ext}")),
        None if args.format == ReportFormat::Iometer => PathBuf::from(report::iometer::FILE),
        None => PathBuf::from(format!("storlab-report.{ext}")),
    });
    if out == Path::new("-") {
        print!("{text}");
    } else {
        std::fs::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
        println!("{}", out.display());
    }
    if let Some(dir) = &args.png {
        let html = match args.format {
            ReportFormat::Html => text,
            _ => report::html::report_html(&runs),
        };
        let files = report::png::write_pngs(&html, dir)?;
        eprintln!(
            "{} charts written as PNG into {}",
            files.len(),
            dir.display()
        );
    }
    Ok(0)
}

pub(super) fn compare_command(args: CompareArgs) -> Result<i32> {
    let mut sides = Vec::new();
    let location = args.store.location()?;
    for a in &args.results_to_compare {
        let runs = storlab_results::stored::load_result_at(a, &location)?;
        sides.push(storlab_results::comparison::sides::Side {
            label: a.clone(),
            runs,
        });
    }
    let c = storlab_results::comparison::sides::compare_sides(&sides);
    let regressions = args
        .fail_on_regression
        .map(|threshold| c.regressions(args.confidence, threshold));
    if args.json {
        let json = c.json(args.confidence, regressions.clone());
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", report::compare::render_text(&c, args.confidence));
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::compare::render_html(&c, args.confidence))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("html: {}", path.display());
    }
    if !c.any_comparable() {
        return Ok(EXIT_NOT_COMPARABLE);
    }
    match (&regressions, args.fail_on_regression) {
        (Some(found), Some(threshold)) if !found.is_empty() => {
            for r in found {
                eprintln!("REGRESSION: {}", r.text(args.confidence));
            }
            eprintln!(
                "storlab compare: {} figure(s) worse than A beyond the noise and by more than {}",
                found.len(),
                percent_text(threshold)
            );
            Ok(EXIT_REGRESSION)
        }
        (Some(_), Some(threshold)) => {
            eprintln!(
                "storlab compare: no figure worse than A beyond the noise by more than {}",
                percent_text(threshold)
            );
            Ok(0)
        }
        _ => Ok(0),
    }
}

/// Writes `brief.html` into a study folder from its stored runs, its headline beside
/// `previous` when given; returns its path.
pub(super) fn write_brief_html(
    folder: &Path,
    previous: Option<&report::headline::Headline>,
) -> Result<PathBuf> {
    let runs = storlab_results::stored::read_study_folder(folder)?;
    let path = folder.join("brief.html");
    std::fs::write(
        &path,
        report::html::report_html_compared(&runs, previous, None),
    )
    .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// What `plan --detect` is asked for.
pub(super) struct Detect {
    pub change: f64,
    pub confidence: f64,
    pub power: f64,
    pub json: bool,
}

/// `storlab plan STUDY --detect PCT`: from the stored runs of the study named `study`, what a
/// comparison needs to see the change.
pub(super) fn plan_detect(study: &str, want: &Detect, store: &StoreArgs) -> Result<i32> {
    let location = store.location()?;
    let opened = open_store(&location)?;
    let runs = opened
        .list()?
        .into_iter()
        .filter(|row| row.study == study)
        .map(|row| storlab_results::stored::load_run_by_id(&opened, &row.run_id))
        .collect::<Result<Vec<_>, _>>()?;
    if runs.is_empty() {
        bail!(
            "no stored run of study `{study}` in {location}: run it first (storlab run), then --detect reads the spread its runs showed"
        );
    }
    let figures: Vec<_> = runs
        .iter()
        .map(storlab_results::comparison::RunFigures::of_stored)
        .collect();
    let steps = storlab_results::comparison::compare_all(&figures);
    let needs = storlab_results::comparison::detect::needs(
        &steps,
        want.change,
        want.confidence,
        want.power,
    );
    if needs.is_empty() {
        bail!(
            "the {} stored runs of study `{study}` have no spread to read (no histograms, or a single interval each): run it with `repetitions = 3` or longer",
            runs.len()
        );
    }
    if want.json {
        println!("{}", serde_json::to_string_pretty(&needs)?);
    } else {
        print!(
            "{}",
            report::detect::detect_text(&needs, want.change, want.confidence, want.power)
        );
    }
    Ok(0)
}
