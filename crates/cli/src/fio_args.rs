//! `storlab fio`'s command line as fio's: storlab's and fio's own flags ([`FioArgs`]) anywhere
//! among job options (`--name=t --rw=randread`) and job files, as fio's `getopt_long_only`
//! takes them (`-output-format=json` too); fio's output formats; and the flags that only check
//! or print the jobs (`--showcmd`, `--parse-only`, `--readonly`, `--max-jobs`, `--section`).

use std::ffi::OsString;

use super::*;

/// The folder `storlab fio` keeps its results in when neither `--results` nor
/// `STORLAB_RESULTS` says: per user, never the current folder.
pub(super) const FIO_RESULTS_HELP: &str =
    "$XDG_DATA_HOME/storlab/results (~/.local/share/storlab/results)";

// Its doc comments are `--help` text, written for a terminal: `[global]` is fio's section,
// not a link.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Args)]
#[command(
    override_usage = "storlab fio [FLAGS] [--name=NAME --KEY=VALUE ...] [JOBFILE ...]",
    after_help = "Job options are fio's, as --KEY=VALUE (or a bare --KEY): each --name=NAME starts a job, \
--name=global the global section, and options before the first --name are global (they apply to \
the command line's jobs and the first job file's, as in fio). Job files run after the command \
line's jobs. Flags and job options mix in any order.

Example: storlab fio --name=t --rw=randread --bs=4k --size=1g --filename=t.dat --runtime=30 --time_based

A successful run writes only fio's output (stdout or --output); storlab's notes are in its header \
and in the JSON's \"storlab\" object. Exit status as fio's: 0, or 1 when a job failed or was refused. \
Results are stored in --results, STORLAB_RESULTS, or $XDG_DATA_HOME/storlab/results \
(~/.local/share/storlab/results)."
)]
pub(super) struct FioArgs {
    #[command(flatten)]
    pub(super) common: CommonRunArgs,
    /// fio's output formats, comma-separated: normal, json, json+ (json with the latency
    /// bins), terse (fio's `;`-separated version 3 lines); e.g. json,normal.
    #[arg(
        long = "output-format",
        default_value = "normal",
        value_name = "FORMAT"
    )]
    pub(super) output_format: String,
    /// fio's --minimal: the terse output.
    #[arg(long)]
    pub(super) minimal: bool,
    /// Write the report to this file instead of stdout (fio's --output).
    #[arg(long, value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
    /// fio's periodic status: every TIME of measurement (fio's time units, seconds by
    /// default), each group's cumulative IOPS and bandwidth so far on stdout (normal output).
    #[arg(long = "status-interval", value_name = "TIME")]
    pub(super) status_interval: Option<String>,
    /// Shrink every job for a quick check (not for figures): warm-up at most 0.2 s, at most
    /// 1 s and 20,000 I/Os per group, files at most 64 MiB; recorded with the results.
    #[arg(long)]
    pub(super) quick: bool,
    /// fio's --section: run only the job of this name (repeat for several); [global]
    /// sections still apply.
    #[arg(long, value_name = "NAME")]
    pub(super) section: Vec<String>,
    /// fio's --parse-only: check the jobs (every option, the plan) and run nothing.
    #[arg(long = "parse-only")]
    pub(super) parse_only: bool,
    /// fio's --showcmd: print each job file (and the command line's jobs) as one fio
    /// command line, and run nothing.
    #[arg(long)]
    pub(super) showcmd: bool,
    /// fio's --readonly: refuse every job that writes.
    #[arg(long)]
    pub(super) readonly: bool,
    /// fio's --max-jobs: refuse more than N jobs (clones of numjobs counted).
    #[arg(long = "max-jobs", value_name = "N")]
    pub(super) max_jobs: Option<u32>,
    /// fio's --eta: storlab's progress line on stderr: auto (when stderr is a terminal),
    /// always, never.
    #[arg(long, value_name = "WHEN", value_parser = ["auto", "always", "never"])]
    pub(super) eta: Option<String>,
    /// fio's --eta-newline and --eta-interval: taken; storlab's progress line is its own
    /// (once a second, on stderr).
    #[arg(long = "eta-newline", value_name = "TIME")]
    pub(super) eta_newline: Option<String>,
    #[arg(long = "eta-interval", value_name = "TIME", hide = true)]
    pub(super) eta_interval: Option<String>,
    /// fio's --debug: refused (storlab has no fio debug classes).
    #[arg(long, value_name = "CLASSES")]
    pub(super) debug: Option<String>,
    /// Print storlab's version (this is storlab, not fio).
    #[arg(long)]
    pub(super) version: bool,
    /// Job options and job files, in the order given (put here by `fio_argv`).
    #[arg(last = true, value_name = "JOB", hide = true)]
    pub(super) job_args: Vec<String>,
}

/// One of fio's output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Normal,
    Terse,
    Json,
    JsonPlus,
}

impl FioArgs {
    /// The output formats asked for, in fio's order of printing (terse and normal, then the
    /// JSON at the end); `--minimal` is terse alone, as in fio.
    pub(super) fn formats(&self) -> Result<Vec<Format>> {
        if self.minimal {
            return Ok(vec![Format::Terse]);
        }
        let mut out = Vec::new();
        for f in self.output_format.split(',').map(str::trim) {
            let f = match f {
                "normal" => Format::Normal,
                "terse" => Format::Terse,
                "json" => Format::Json,
                "json+" => Format::JsonPlus,
                other => bail!(
                    "--output-format={}: `{other}` is not one of fio's formats (normal, terse, json, json+, comma-separated)",
                    self.output_format
                ),
            };
            if !out.contains(&f) {
                out.push(f);
            }
        }
        // fio prints json+ in place of json when both are asked for.
        if out.contains(&Format::JsonPlus) {
            out.retain(|f| *f != Format::Json);
        }
        out.sort_by_key(|f| match f {
            Format::Terse => 0,
            Format::Normal => 1,
            Format::Json | Format::JsonPlus => 2,
        });
        Ok(out)
    }

    /// The job options and files, each with its position among them (1-based).
    pub(super) fn command_line(
        &self,
    ) -> Result<storlab_study::fio::CommandLine, Vec<storlab_study::fio::LineError>> {
        let args: Vec<(usize, String)> = self
            .job_args
            .iter()
            .enumerate()
            .map(|(i, a)| (i + 1, a.clone()))
            .collect();
        storlab_study::fio::CommandLine::parse(&args)
    }

    /// What `--readonly` and `--max-jobs` refuse of the planned jobs, as fio says it.
    pub(super) fn refusals(&self, plan: &storlab_study::fio::FioPlan) -> Vec<String> {
        let mut out = Vec::new();
        if self.readonly {
            for j in plan.jobs.iter().filter(|j| j.rw.writes()) {
                out.push(format!(
                    "job <{}> has write bit set, but fio is in read-only mode (--readonly)",
                    j.name
                ));
            }
        }
        let clones: u32 = plan.jobs.iter().map(|j| j.numjobs).sum();
        if let Some(max) = self.max_jobs.filter(|&m| clones > m) {
            out.push(format!(
                "{clones} jobs (numjobs clones counted) is more than --max-jobs={max}"
            ));
        }
        out
    }
}

/// The per-user results folder of `storlab fio` ([`FIO_RESULTS_HELP`]); None without a home.
pub(super) fn user_results_folder() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(data.join("storlab/results"))
}

/// fio's argument order, for clap: when the command is `fio`, keeps the flags [`FioArgs`]
/// declares (and the global ones) where they are, and moves every other argument (job
/// options and job files) after a `--`, in order, where `FioArgs::job_args` takes them. A
/// flag written fio's way with one dash (`-output-format=json`) gets its second. Whatever
/// follows the user's own `--` are job files, as in fio. Any other command is unchanged.
pub(super) fn fio_argv(argv: Vec<OsString>, cli: &clap::Command) -> Vec<OsString> {
    let Some(at) = subcommand_at(&argv) else {
        return argv;
    };
    if argv[at] != "fio" {
        return argv;
    }
    let Some(mut fio) = cli.find_subcommand("fio").cloned() else {
        return argv;
    };
    fio.build();
    let takes_value = |long: &str| {
        fio.get_arguments()
            .find(|a| a.get_long() == Some(long))
            .map(|a| a.get_action().takes_values())
    };
    let mut flags: Vec<OsString> = argv[..=at].to_vec();
    let mut jobs: Vec<OsString> = Vec::new();
    let mut rest = argv[at + 1..].iter();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str() else {
            jobs.push(arg.clone());
            continue;
        };
        if text == "--" {
            jobs.extend(rest.by_ref().cloned());
            break;
        }
        // A short flag (-q, -h) or a long one, with one dash or two.
        if text.len() == 2 && text.starts_with('-') {
            flags.push(arg.clone());
            continue;
        }
        let long = text.strip_prefix("--").or_else(|| text.strip_prefix('-'));
        let Some(long) = long else {
            jobs.push(arg.clone());
            continue;
        };
        let (name, has_value) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        match takes_value(name).or((name == "help").then_some(false)) {
            Some(value) => {
                flags.push(OsString::from(format!("--{long}")));
                if value && !has_value {
                    flags.extend(rest.next().cloned());
                }
            }
            None => jobs.push(arg.clone()),
        }
    }
    flags.push(OsString::from("--"));
    flags.extend(jobs);
    flags
}

/// Where the subcommand is in `argv`: the first argument that is neither a flag nor the
/// value of a global flag written apart (`--results DIR`).
fn subcommand_at(argv: &[OsString]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].to_str()?;
        if a == "--results" || a == "--store" {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn argv(line: &str) -> Vec<String> {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        fio_argv(args, &Cli::command())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn job_options_and_files_go_after_a_separator_in_order() {
        assert_eq!(
            argv(
                "storlab --results r fio --name=t -rw=read --output out.json x.fio -output-format=json -q --size=1m -- --odd"
            ),
            [
                "storlab",
                "--results",
                "r",
                "fio",
                "--output",
                "out.json",
                "--output-format=json",
                "-q",
                "--",
                "--name=t",
                "-rw=read",
                "x.fio",
                "--size=1m",
                "--odd"
            ]
        );
        assert_eq!(
            argv("storlab run s.toml --quick"),
            ["storlab", "run", "s.toml", "--quick"]
        );
    }

    #[test]
    fn the_args_parse_and_formats_follow_fio() {
        let cli = Cli::try_parse_from(argv(
            "storlab fio --name=t --bs=4k --output-format=json,normal,terse --section t j.fio",
        ))
        .unwrap();
        let Command::Fio(f) = cli.command else {
            panic!("not fio")
        };
        assert_eq!(f.job_args, ["--name=t", "--bs=4k", "j.fio"]);
        assert_eq!(f.section, ["t"]);
        assert_eq!(
            f.formats().unwrap(),
            [Format::Terse, Format::Normal, Format::Json]
        );
        let c = f.command_line().unwrap();
        assert_eq!(c.job_files, [PathBuf::from("j.fio")]);
        assert!(c.has_jobs());
    }
}
