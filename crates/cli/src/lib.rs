//! The command line: parses arguments (clap), installs the Ctrl-C handling, and calls the
//! library. The only place that uses `anyhow` and decides exit codes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use console::Console;
use storlab_engine::{RunOptions, StudyOutcome, run_plan};
use storlab_report as report;
use storlab_results::store::Store;
use storlab_study::plan::Plan;

mod console;
mod fio;
mod fio_args;
mod fio_rate_min;
mod fio_status;
pub mod fuzzing;
mod reports;
mod serve;
mod study_files;
mod tools;
mod volatile_fs;

use fio::fio;
use fio_args::FioArgs;
use reports::{
    COMPARE_ABOUT, CompareArgs, REPORT_ABOUT, ReportArgs, compare_command, report_command, results,
    write_brief_html,
};
use serve::{SERVE_ABOUT, ServeArgs};
use tools::{brief, dbbench, iometer_icf, ycsb};

const ABOUT: &str = "storlab: storage and database benchmarking from study files.

A study file (TOML) names targets (what is measured: a file or block device, the null target),
workloads (access pattern, block size, read share, queue depth, threads, rate) and steps (which
workload runs on which targets, with warm-up, duration or operation count, sweeps and
repetitions). storlab validates it into a plan, runs it, and stores every run's results in a
folder and in a SQLite results store.

Start with:
  storlab brief --quick            characterize the storage under the current folder (<1 min)
  storlab check study.toml         validate a study, showing every problem with line and key
  storlab plan study.toml          list the runs a study expands to
  storlab run study.toml           run it; Ctrl-C stops and keeps what was measured
  storlab results list             what has been run
  storlab serve                    browse, compare and chart the results (127.0.0.1:8080)
  storlab targets                  target types and their options
  storlab dbbench --benchmarks=fillrandom,readrandom --num=100000 --db=DIR
                                   db_bench's flags on the embedded RocksDB";

#[derive(Parser)]
#[command(name = "storlab", version, about = "Storage and database benchmarking from study files", long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Its doc comments are `--help` text, written for a terminal: `[global]` is fio's section,
// not a link.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Subcommand)]
enum Command {
    /// Characterize the storage under a folder: sequential 1 MiB read/write, 4 KiB random
    /// read/write at queue depths 1 and 32, then embedded RocksDB (fillrandom, readrandom and
    /// readwhilewriting at 1, 4 and 16 threads, 4 KB values) (about 5 minutes; --quick: under
    /// a minute).
    Brief(BriefArgs),
    /// Run a study file and store its results.
    ///
    /// Exit status: 0 all went well; 1 an error, or a step stopped by a failed event; 2 the
    /// study is not valid; 3 a verify pass found damaged blocks or keys the study does not
    /// expect (`verify-expect`); 4 the shared results store could not be reached (every run
    /// kept in its folder); 130 interrupted (what was measured is kept).
    Run(RunArgs),
    /// Validate a study file; report every problem with its line and key.
    Check {
        /// The study file (TOML).
        study: PathBuf,
        #[command(flatten)]
        size: PlanSizeArgs,
    },
    /// Print the runs a study file expands to (steps x sweep points x repetitions).
    Plan {
        study: PathBuf,
        #[command(flatten)]
        size: PlanSizeArgs,
        /// Show the plan as --quick would run it.
        #[arg(long)]
        quick: bool,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
        /// Instead of the plan: how many repetitions (or how long a run) a comparison needs
        /// to see a change of this size in ops/s or p99, from the spread of the study's runs
        /// in the results store (run it first).
        #[arg(long, value_name = "PERCENT", value_parser = reports::parse_threshold)]
        detect: Option<f64>,
        /// With --detect: the confidence of the comparison, in percent.
        #[arg(long, value_name = "PERCENT", default_value = "95", value_parser = reports::parse_confidence, requires = "detect")]
        confidence: f64,
        /// With --detect: the chance of seeing the change when it is there, in percent.
        #[arg(long, value_name = "PERCENT", default_value = "90", value_parser = reports::parse_confidence, requires = "detect")]
        power: f64,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Read the results store.
    Results {
        #[command(subcommand)]
        command: ResultsCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List target types and their options.
    Targets,
    /// storlab's keeper of the processes a study started: stops them once its stdin ends
    /// (storlab's end, however it came). Started by `run` itself; not for users.
    #[command(name = "__keeper", hide = true)]
    Keeper { file: PathBuf },
    /// Run db_bench benchmarks with db_bench's own flags on the embedded RocksDB, print
    /// db_bench-style result lines, and store storlab's full results.
    ///
    /// Example: storlab dbbench --benchmarks=fillrandom,readrandom,readwhilewriting
    /// --num=1000000 --value_size=4096 --threads=16 --duration=60 --db=/mnt/nvme/db
    /// --benchmark_write_rate_limit=2097152
    ///
    /// Supported flags: benchmarks (fillseq, fillrandom, overwrite, readrandom, readseq,
    /// readwhilewriting, updaterandom, deleterandom), num, reads, writes, threads, duration,
    /// key_size, value_size, compression_ratio, db, use_existing_db,
    /// benchmark_write_rate_limit, cache_size, compression_type, write_buffer_size,
    /// max_background_jobs, bloom_bits, sync, disable_wal, use_direct_reads,
    /// use_direct_io_for_flush_and_compaction, seed, histogram. Any other flag is refused by
    /// name. storlab's own options (--results, --json, -q) go before the db_bench flags.
    Dbbench(DbbenchArgs),
    /// Write a report (self-contained HTML brief, Markdown or CSV) from stored results.
    #[command(long_about = REPORT_ABOUT)]
    Report(ReportArgs),
    /// Set stored results side by side: ratios and percent differences against the first.
    #[command(long_about = COMPARE_ABOUT)]
    Compare(CompareArgs),
    /// Serve the stored results as a local web application: the runs with filters, a run's
    /// report, comparisons and a target's history (loopback by default).
    #[command(long_about = SERVE_ABOUT)]
    Serve(ServeArgs),
    /// Run a YCSB phase with YCSB's own command line against a database, print YCSB-style
    /// result lines, and store storlab's full results.
    ///
    /// Example: storlab ycsb load redis -P workloads/workloada -p redis.host=127.0.0.1
    /// -p redis.port=6379 -p recordcount=100000 -threads 8; then the same with `run`.
    ///
    /// Bindings: basic (the null target), rocksdb (-p rocksdb.dir=DIR), redis (redis.host,
    /// redis.port, redis.password, redis.timeout; storlab's redis.pipeline=N sends a load's
    /// inserts N at a time), jdbc / postgres (db.url, db.user, db.passwd; storlab's
    /// db.poolsize=N shares N connections among the threads), mongodb (mongodb.url, batchsize).
    /// Options: -P FILE, -p NAME=VALUE,
    /// -threads N, -target OPS (open loop, with latency from the intended start), -s
    /// (progress), -db NAME. Properties keep YCSB's names; any property nobody understands is
    /// refused by name with where it was set. storlab's own options (--results, --json)
    /// go before `load` or `run`.
    Ycsb(YcsbArgs),
    /// Run fio jobs: fio's command line (--name=NAME --KEY=VALUE ...) and job files ([global]
    /// and job sections, stonewall groups, fio's size and time units); every option storlab
    /// does not implement is refused by name with its file and line (or argument). Prints
    /// fio's normal, terse or JSON output and stores storlab's full results.
    ///
    /// Example: storlab fio --name=t --rw=randread --bs=4k --size=64m --filename=t.dat
    /// --runtime=10 --time_based --output-format=json
    Fio(FioArgs),
    /// Print the access specifications of an IOmeter configuration file (.icf) as study
    /// workloads: one [workloads.NAME] per specification with its access-spec lines (IOmeter's
    /// model), and the queue depth of the first worker it is assigned to.
    ///
    /// Example: storlab iometer-icf fileserver.icf >> study.toml
    IometerIcf {
        /// The IOmeter configuration file.
        icf: PathBuf,
    },
    /// Verify a target from a saved table of acknowledged generations (a workload's
    /// `verify-state`), e.g. after storlab or the machine died: every block read back and
    /// classified (intact, lost-durable, lost-unsynced, torn, misplaced, foreign,
    /// unreadable). Exits 0 when all are intact, 3 when any is damaged.
    ///
    /// A state never holds a password: for an `smb` target, set STORLAB_SMB_PASSWORD to the
    /// password of the user its URL names.
    Verify {
        /// The state file.
        state: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve block devices (or files) through a FUSE mount that holds every write in its own
    /// memory until an fsync of that file writes it through: a node's volatile write cache,
    /// for stand-in clusters on one machine. Run in a node's cgroup, killing the node (a power
    /// loss) loses exactly what it acknowledged and did not sync; SIGTERM writes everything
    /// through and unmounts. scripts/pacemaker.sh serves a RAID array's members through it.
    ///
    /// Example: storlab volatile-fs --mount /run/members m0=/dev/loop3 m1=/dev/loop4, then
    /// losetup --find --show /run/members/m0
    VolatileFs(volatile_fs::VolatileFsArgs),
}

#[derive(Args)]
struct YcsbArgs {
    #[command(flatten)]
    common: CommonRunArgs,
    /// `load` (insert the records) or `run` (the operation mix).
    #[arg(value_parser = ["load", "run"])]
    phase: String,
    /// The binding name and YCSB's options, e.g. redis -P workloads/workloada -p redis.port=6379.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "YCSB_ARGS")]
    args: Vec<String>,
}

#[derive(Args)]
struct DbbenchArgs {
    #[command(flatten)]
    common: CommonRunArgs,
    /// db_bench flags, e.g. --benchmarks=readrandom --num=1000000 --threads=16.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "DB_BENCH_FLAGS")]
    flags: Vec<String>,
}

#[derive(Args, Clone)]
struct StoreArgs {
    /// Folder holding run folders and the results store (results.db) [default:
    /// storlab-results; for `storlab fio`, the per-user folder its --help names].
    #[arg(long, global = true, env = "STORLAB_RESULTS", value_name = "FOLDER")]
    results: Option<PathBuf>,
    /// The results store, when not results.db in --results: a PostgreSQL database a lab
    /// shares (postgres://USER@HOST:PORT/DB, its password from PGPASSWORD or ~/.pgpass as
    /// libpq takes it, or in the URL; it also keeps every run's files, so that reports need
    /// no folder), an SQLite file (*.db) or a results folder. The password is never printed
    /// or stored. TLS as libpq: ?sslmode=require (encrypted), verify-ca or verify-full (the
    /// server's certificate checked against sslrootcert=CA.pem, or =system; verify-full also
    /// its name); PGSSLMODE and PGSSLROOTCERT where the URL says nothing. A run whose PostgreSQL store cannot be reached
    /// keeps every result in its folder, says so, and exits with status 4: `storlab results
    /// push FOLDER` uploads it later. A server that does not answer is unreachable too: after
    /// the URL's connect_timeout (default 10 s) when connecting, after STORLAB_STORE_TIMEOUT
    /// seconds (default 30) for a statement.
    #[arg(
        long,
        global = true,
        env = "STORLAB_STORE",
        value_name = "STORE",
        hide_env_values = true
    )]
    store: Option<String>,
}

impl StoreArgs {
    /// The results folder: `--results`, `STORLAB_RESULTS`, or `storlab-results`.
    fn folder(&self) -> PathBuf {
        self.results
            .clone()
            .unwrap_or_else(|| PathBuf::from("storlab-results"))
    }

    /// Where the results store is.
    fn location(&self) -> Result<storlab_results::store::StoreLocation> {
        Ok(storlab_results::store::StoreLocation::resolve(
            self.store.as_deref(),
            &self.folder(),
        )?)
    }
}

#[derive(Args, Clone)]
struct CommonRunArgs {
    /// Print the run summaries as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    json: bool,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    /// Allow writing to this block device although it holds a filesystem or partition table.
    /// Name the exact device; repeat for several. Mounted devices are always refused.
    #[arg(long, value_name = "DEVICE")]
    allow_destroy: Vec<PathBuf>,
    /// Serve live metrics (OpenMetrics, or Prometheus's text format when asked for) on GET
    /// http://ADDR/metrics while running, e.g. 127.0.0.1:9464 (port 0: any free port,
    /// printed). A non-loopback address needs --metrics-token.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// A file whose first line is a token (16 characters or more) that every scrape must
    /// carry (`Authorization: Bearer TOKEN`; Prometheus's `authorization: credentials_file`).
    #[arg(long, value_name = "FILE", requires = "metrics")]
    metrics_token: Option<PathBuf>,
    /// Serve metrics over TLS (https) with this certificate chain (PEM, the server's
    /// certificate first); with --metrics-tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["metrics", "metrics_tls_key"])]
    metrics_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --metrics-tls-cert.
    #[arg(long, value_name = "FILE", requires = "metrics_tls_cert")]
    metrics_tls_key: Option<PathBuf>,
    /// Keep the metrics endpoint up this long after the last run, so that a scraper gets
    /// the final figures.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 0.0,
        requires = "metrics"
    )]
    metrics_linger_seconds: f64,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Args)]
struct PlanSizeArgs {
    /// Expand a study of more than 10,000 runs (without it, such a study is refused with its
    /// run count and estimated duration, before anything is expanded).
    #[arg(long)]
    allow_large_plan: bool,
}

impl PlanSizeArgs {
    fn limits(&self) -> storlab_study::Limits {
        if self.allow_large_plan {
            storlab_study::Limits { max_runs: None }
        } else {
            storlab_study::Limits::default()
        }
    }
}

#[derive(Args)]
struct RunArgs {
    /// The study file (TOML).
    study: PathBuf,
    #[command(flatten)]
    size: PlanSizeArgs,
    /// Quick mode: warm-up at most 0.2 s, each run at most 1 s and 20,000 operations, files
    /// at most 64 MiB. For checking a study end to end, not for figures.
    #[arg(long)]
    quick: bool,
    /// Under mpirun: stop every rank when the first has finished its operations (IOR's
    /// stonewall), in every step (a step's `stonewall = true` sets it for that step).
    #[arg(long)]
    stonewall: bool,
    #[command(flatten)]
    common: CommonRunArgs,
}

#[derive(Args)]
struct BriefArgs {
    /// Folder on the storage to characterize (default: a scratch folder in the current
    /// directory, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// About a minute: a 128 MiB file and 4 s per storage run, 20,000 keys and 2 s per
    /// key-value run.
    #[arg(long)]
    quick: bool,
    /// Keep the scratch folder and data file afterwards.
    #[arg(long)]
    keep: bool,
    /// Put an earlier brief's figures beside this one's (terminal headline, brief.html and
    /// brief.md) with the change: its result folder, a summary.json in it, or a run id from
    /// the results store (a run of a brief stands for its whole brief).
    #[arg(long, value_name = "PREVIOUS")]
    compare: Option<String>,
    #[command(flatten)]
    common: CommonRunArgs,
}

#[derive(Subcommand)]
enum ResultsCommand {
    /// One line per stored run.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A stored run's summary table (RUN: a run id, or a unique start or end of one).
    Show {
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// A target's ops/s and p99 run after run, each with its interval, and the runs that are
    /// change points (a regression or an improvement against the runs before them).
    History {
        /// The study's name.
        study: String,
        /// The target to follow.
        #[arg(long)]
        target: String,
        /// Only this step (default: every step, a line per step and sweep point).
        #[arg(long)]
        step: Option<String>,
        /// The confidence of the intervals and change points, in percent.
        #[arg(long, value_name = "PERCENT", default_value = "95", value_parser = reports::parse_confidence)]
        confidence: f64,
        #[arg(long)]
        json: bool,
    },
    /// Export every stored run as one table for notebooks (pandas, Polars, DuckDB): one row
    /// per run (`--kind runs`: identity, sweep parameters as `param_KEY` columns, totals and
    /// per `TARGET.OPERATION.` figures) or per timeline interval, target and operation
    /// (`--kind intervals`). Units are in the column names (`rate_ops`, `rate_mb_s`,
    /// `p99_latency_ns`).
    Export {
        #[arg(long, value_enum)]
        format: storlab_results::export::ExportFormat,
        /// The file to write (replaced if it exists).
        #[arg(long, value_name = "PATH")]
        output: PathBuf,
        #[arg(long, value_enum, default_value = "runs")]
        kind: storlab_results::export::ExportKind,
    },
    /// Rebuild the index (results.db) from the run folders, which hold every result: after
    /// the index was damaged or lost, or folders were copied in. The old index is kept as
    /// results.db.replaced-TIME. Run it while no storlab writes to the folder.
    Reindex,
    /// Upload run folders into the results store (--store or STORLAB_STORE): runs made while
    /// a shared store was down, or on another machine. FOLDER is a run folder, a study folder
    /// or a results folder; each run is keyed by its run id, so pushing twice changes
    /// nothing.
    Push {
        #[arg(required = true, value_name = "FOLDER")]
        folders: Vec<PathBuf>,
    },
}

/// Exit code when a study could not be validated or the command line is wrong.
const EXIT_INVALID: i32 = 2;
/// Exit code when the study ran but a shared results store could not be reached: every run is
/// kept in its folder, to be pushed (`storlab results push`).
const EXIT_STORE_UNREACHABLE: i32 = 4;
/// Exit code when a verify pass found damaged blocks or keys that the study did not declare
/// it expects (`verify-expect`), as `storlab verify` exits on damage.
const EXIT_DAMAGED: i32 = 3;
/// Exit code when the user interrupted (results of what ran are kept).
const EXIT_INTERRUPTED: i32 = 130;

/// Runs the command line; returns the process exit code. `git_commit`: the commit the binary
/// was built from (its build script's `STORLAB_GIT_COMMIT`), disclosed in every run's
/// `system.json`.
pub fn main(git_commit: Option<&'static str>) -> i32 {
    storlab_results::system::set_git_commit(git_commit);
    // Die quietly when stdout is a closed pipe (`storlab plan ... | head`), as Unix tools do.
    // SAFETY: resetting a signal's disposition to the default is always sound.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse_from(fio_args::fio_argv(
        std::env::args_os().collect(),
        &<Cli as clap::CommandFactory>::command(),
    ));
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(se) = e.downcast_ref::<storlab_study::StudyErrors>() {
                eprintln!("{se}");
                eprintln!(
                    "error: the study is not valid ({} problem{})",
                    se.0.len(),
                    if se.0.len() == 1 { "" } else { "s" }
                );
                return EXIT_INVALID;
            }
            eprintln!("error: {}", error_text(&e));
            1
        }
    }
}

/// An error and its causes on one line, each cause once: many errors already show their
/// source in their own message (`{path}: {source}`), which `{:#}` would print a second time.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Check { study, size } => {
            let plan = storlab_study::load(&study, size.limits())?;
            println!(
                "{}: valid, {} run{}",
                study.display(),
                plan.runs.len(),
                if plan.runs.len() == 1 { "" } else { "s" }
            );
            Ok(0)
        }
        Command::Plan {
            study,
            size,
            quick,
            json,
            detect,
            confidence,
            power,
            store,
        } => {
            let mut plan = storlab_study::load(&study, size.limits())?;
            if quick {
                plan.make_quick();
            }
            if let Some(change) = detect {
                let want = reports::Detect {
                    change,
                    confidence,
                    power,
                    json,
                };
                return reports::plan_detect(&plan.study, &want, &store);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print_plan(&plan);
            }
            Ok(0)
        }
        Command::Run(args) => {
            let mut plan = storlab_study::load(&args.study, args.size.limits())?;
            if args.quick {
                plan.make_quick();
            }
            if args.stonewall {
                plan.runs.iter_mut().for_each(|r| r.stonewall = true);
            }
            // Under mpirun: one rank of a distributed run (MPI stays open until the end).
            let _mpi = storlab_engine::distributed::start()?;
            if storlab_engine::distributed::is_other_rank() {
                let quiet = CommonRunArgs {
                    quiet: true,
                    json: true,
                    // Rank 0 serves the merged figures.
                    metrics: None,
                    ..args.common
                };
                let (_, code) = execute_with(&plan, &quiet, false)
                    .inspect_err(|e| storlab_engine::distributed::abort_job_on_error(e))?;
                return Ok(code);
            }
            let (outcome, code) = execute(&plan, &args.common)
                .inspect_err(|e| storlab_engine::distributed::abort_job_on_error(e))?;
            print_outcome(&outcome, args.common.json)?;
            Ok(code)
        }
        Command::Brief(args) => brief(args),
        Command::Dbbench(args) => dbbench(args),
        Command::Ycsb(args) => ycsb(args),
        Command::Fio(args) => fio(args),
        Command::IometerIcf { icf } => iometer_icf(&icf),
        Command::Results { command, store } => results(command, &store),
        Command::Report(args) => report_command(args),
        Command::Compare(args) => compare_command(args),
        Command::Serve(args) => serve::serve(args),
        Command::Verify { state, json } => {
            let r = storlab_engine::verify::verify_state_file(&state)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", r.text_table());
            }
            Ok(if r.damaged() > 0 { 3 } else { 0 })
        }
        Command::VolatileFs(args) => volatile_fs::run(args),
        Command::Keeper { file } => Ok(storlab_engine::events::started::keep(&file)),
        Command::Targets => {
            for t in storlab_targets::REGISTRY {
                println!("{}: {}", t.name, t.summary);
                for (opt, help) in t.options {
                    println!("    {opt:<16} {help}");
                }
            }
            Ok(0)
        }
    }
}

fn print_plan(plan: &Plan) {
    println!("study {}: {} runs", plan.study, plan.runs.len());
    for r in &plan.runs {
        let bound = match (r.duration, r.ops) {
            (Some(d), Some(o)) => format!("{d} or {o} ops"),
            (Some(d), None) => d.to_string(),
            (None, Some(o)) => format!("{o} ops"),
            (None, None) => "until the workload ends".into(),
        };
        let bound = match &r.steady_state {
            Some(s) => format!(
                "{bound} or steady state ({} over {} s)",
                s.criterion, s.window_seconds
            ),
            None => bound,
        };
        let w = &r.targets[0].workload;
        println!(
            "  {:>3}. {}  warm-up {}, measure {}  ({} {}{})",
            r.index,
            r.label(),
            r.warmup,
            bound,
            r.targets[0].workload_name,
            w.describe(),
            w.rate_per_thread()
                .map(|x| format!(" rate {x:.0}/s per thread"))
                .unwrap_or_default()
        );
    }
    if let Some(s) = plan.expected_seconds() {
        println!(
            "expected time: {}",
            storlab_model::units::format_duration(std::time::Duration::from_secs(s.ceil() as u64))
        );
    }
}

/// Installs Ctrl-C handling: the first stops the run and keeps results, a second exits now.
fn install_interrupt() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, Arc::clone(&flag))
            .context("installing the signal handler")?;
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("installing the signal handler")?;
    }
    Ok(flag)
}

fn execute(plan: &Plan, args: &CommonRunArgs) -> Result<(StudyOutcome, i32)> {
    execute_with(plan, args, !args.json)
}

/// Runs a plan; `tables`: print each run's table when it ends.
fn execute_with(plan: &Plan, args: &CommonRunArgs, tables: bool) -> Result<(StudyOutcome, i32)> {
    execute_watched(plan, args, Box::new(Console::auto(args.quiet, tables)))
}

/// Runs a plan, its progress told to `console`.
fn execute_watched(
    plan: &Plan,
    args: &CommonRunArgs,
    console: Box<dyn storlab_engine::Watch>,
) -> Result<(StudyOutcome, i32)> {
    let interrupted = install_interrupt()?;
    let metrics = match args.metrics {
        Some(addr) => {
            let flags = storlab_engine::access::AccessFlags {
                listen: "--metrics",
                token: "--metrics-token",
                tls_cert: "--metrics-tls-cert",
                tls_key: "--metrics-tls-key",
            };
            let tls = args
                .metrics_tls_cert
                .as_deref()
                .zip(args.metrics_tls_key.as_deref());
            let access = storlab_engine::access::Access::read(
                addr,
                args.metrics_token.as_deref(),
                tls,
                &flags,
            )?;
            if let Some(warning) = access.clear_text_warning(addr, &flags) {
                eprintln!("storlab: {warning}");
            }
            let exporter =
                storlab_engine::metrics::Exporter::start(addr, access.token, access.tls.as_ref())?;
            eprintln!("metrics: OpenMetrics on {}", exporter.url());
            Some(Arc::new(exporter))
        }
        None => None,
    };
    // Every process the study starts is recorded and torn down on every exit, SIGKILL
    // included (a keeper process); leftovers of a storlab that died are cleaned first.
    // /proc/self/exe runs this binary even when its file was replaced (a rebuild) meanwhile.
    let self_exe = std::path::Path::new("/proc/self/exe");
    let keeper_program = if self_exe.exists() {
        Some(self_exe.to_path_buf())
    } else {
        std::env::current_exe().ok()
    };
    let results = args.store.folder();
    let started = storlab_engine::events::started::install(&results, keeper_program.as_deref())
        .map_err(anyhow::Error::msg)
        .context("recording the processes the study starts")?;
    for line in &started.leftovers {
        eprintln!("storlab: a process {line}");
    }
    let store = args.store.location()?;
    let opts = RunOptions {
        leftovers: started.leftovers.clone(),
        // A shared store names each run's folder absolutely, to be found by any path.
        results_dir: if store.is_shared() {
            std::path::absolute(&results).with_context(|| results.display().to_string())?
        } else {
            results
        },
        store,
        allow_destroy: args.allow_destroy.clone(),
        interrupted,
        console,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        metrics,
    };
    // The study's files made from its stored runs (raid.json, iometer.csv, comparison.json).
    let outcome = run_plan(plan, &opts).and_then(|o| study_files::write(plan, &o).map(|()| o));
    if opts.metrics.is_some() && args.metrics_linger_seconds > 0.0 {
        let linger = std::time::Duration::from_secs_f64(args.metrics_linger_seconds.min(86_400.0));
        let until = std::time::Instant::now() + linger;
        // Ctrl-C ends the wait.
        while std::time::Instant::now() < until
            && !opts.interrupted.load(std::sync::atomic::Ordering::Relaxed)
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let mut outcome = outcome?;
    keep_study_files(&opts.store, &mut outcome);
    for m in &outcome.runs_skipped {
        eprintln!("note: {m}");
    }
    // Said whether or not the study was interrupted later: a step stopped before it was
    // measured has no run of its own to show it.
    for m in &outcome.steps_stopped {
        eprintln!("error: {m}");
    }
    let code = if outcome.interrupted {
        eprintln!(
            "interrupted: the measured part of the current run was kept (marked partial); later runs were skipped"
        );
        EXIT_INTERRUPTED
    } else if !outcome.steps_stopped.is_empty() {
        // The study went on past them (on-failure = "stop-step"): it fails at its end.
        1
    } else if let Some(m) = unexpected_damage(&outcome) {
        eprintln!("error: {m}");
        EXIT_DAMAGED
    } else {
        0
    };
    let code = match &outcome.store_unreachable {
        Some(why) => {
            eprintln!(
                "error: {why}\nevery run is kept in {}: `storlab results push {} --store '{}'` uploads it later (the password from PGPASSWORD or ~/.pgpass)",
                outcome.folder.display(),
                outcome.folder.display(),
                opts.store.for_command()
            );
            if code == 0 {
                EXIT_STORE_UNREACHABLE
            } else {
                code
            }
        }
        None => code,
    };
    Ok((outcome, code))
}

/// What the runs' verify passes found damaged that their study did not declare it expects,
/// per run and target; None when nothing was.
fn unexpected_damage(outcome: &StudyOutcome) -> Option<String> {
    let found: Vec<String> = outcome
        .summaries
        .iter()
        .flat_map(|s| {
            s.targets
                .iter()
                .filter_map(|t| t.verify.as_ref())
                .filter(|v| v.unexpected_damage() > 0)
                .map(move |v| {
                    format!(
                        "run {} target `{}`: {} damaged",
                        s.run_index,
                        v.target(),
                        v.unexpected_damage()
                    )
                })
        })
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "the verify pass found damage the study does not expect (`verify-expect`): {}",
            found.join("; ")
        )
    })
}

/// A shared store gets the study's own files (`raid.json`, `baseline.json`) once they are
/// written; a store that cannot be reached by then is said like one down at the start.
fn keep_study_files(location: &storlab_results::store::StoreLocation, outcome: &mut StudyOutcome) {
    if !location.is_shared()
        || outcome.store_unreachable.is_some()
        || storlab_engine::distributed::is_other_rank()
    {
        return;
    }
    let kept = Store::open_location(location)
        .and_then(|mut store| storlab_results::push::keep_study_files(&mut store, &outcome.folder));
    if let Err(e) = kept {
        outcome.store_unreachable = Some(format!("the study's own files: {e}"));
    }
}

fn print_outcome(outcome: &StudyOutcome, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&outcome.summaries)?);
    } else {
        let c =
            storlab_results::comparison::compare_in_folder("", &outcome.folder, &outcome.summaries);
        if !c.steps.is_empty() {
            println!(
                "targets side by side (also in comparison.json)\n{}",
                report::compare::comparison_text(&c)
            );
        }
        match storlab_results::raid::read_table(&outcome.folder) {
            Ok(Some(t)) => println!("{}\n(also in raid.json)", report::raid::text(&t)),
            Ok(None) => {}
            Err(e) => eprintln!("RAID efficiency table: {e}"),
        }
    }
    eprintln!("results: {}", outcome.folder.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct ShowsItsSource {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(ShowsItsSource {
            path: "x.dat".into(),
            source: io,
        })
        .context("target `d`");
        assert_eq!(
            format!("{e:#}"),
            "target `d`: x.dat: no such file: no such file"
        );
        assert_eq!(error_text(&e), "target `d`: x.dat: no such file");
        let plain = anyhow::anyhow!("cannot read").context("opening the store");
        assert_eq!(error_text(&plain), "opening the store: cannot read");
    }
}
