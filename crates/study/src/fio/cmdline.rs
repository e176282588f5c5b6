//! fio's command line: job options as `--key=value`, the way most fio runs are written (every
//! cloud disk guide gives one line and no job file). fio's rule: each `--name=NAME` starts a
//! job, `--name=global` the global section, and options before the first `--name` are global;
//! any argument that is not an option is a job file, read after the command line's jobs.
//!
//! The options become a job file of their own ([`CommandLine::jobs`]), named
//! [`COMMAND_LINE`] in errors, each option's line the position of its argument, so that they
//! are resolved and refused exactly as a job file's lines are. fio applies the command line's
//! global options to its own jobs and to the first job file's, and resets them before each
//! later file (init.c `parse_options`); [`super::load_sources`] does the same.

use std::path::PathBuf;

pub use super::parse::COMMAND_LINE;
use super::parse::{Entry, JobFile, LineError, Section};

/// `storlab fio`'s job options and job files, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandLine {
    /// The job options as a job file: a `[global]` section first when options came before
    /// the first `--name` (or after `--name=global`), then one section per job.
    pub jobs: JobFile,
    /// The job files named, in order.
    pub job_files: Vec<PathBuf>,
}

impl CommandLine {
    /// Splits fio's arguments (storlab's and fio's own flags already taken out), each with
    /// its position among `storlab fio`'s arguments: one that starts with `-` is a job option
    /// (`--key=value`, fio's `-key=value`, or a bare `--key`), any other a job file. `--name`
    /// without `=` takes the next argument as its value, as fio's getopt does.
    pub fn parse(args: &[(usize, String)]) -> Result<CommandLine, Vec<LineError>> {
        let mut jobs = JobFile {
            file: COMMAND_LINE.into(),
            sections: Vec::new(),
        };
        let mut job_files = Vec::new();
        let mut errors = Vec::new();
        let mut it = args.iter();
        while let Some((at, arg)) = it.next() {
            let Some(option) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                job_files.push(PathBuf::from(arg));
                continue;
            };
            let (name, value) = match option.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.to_string())),
                None if option == "name" => (option, it.next().map(|(_, v)| v.clone())),
                None => (option, None),
            };
            if name.is_empty() {
                errors.push(LineError {
                    file: COMMAND_LINE.into(),
                    line: *at,
                    message: format!("`{arg}` has no option name"),
                });
                continue;
            }
            if name == "name" {
                let section = value.unwrap_or_default();
                if section.is_empty() {
                    errors.push(LineError {
                        file: COMMAND_LINE.into(),
                        line: *at,
                        message: "--name needs a value: the job's name (or global)".into(),
                    });
                    continue;
                }
                jobs.sections.push(Section {
                    name: section,
                    line: *at,
                    entries: Vec::new(),
                });
                continue;
            }
            let entry = Entry {
                name: name.to_string(),
                value,
                line: *at,
            };
            match jobs.sections.last_mut() {
                Some(s) => s.entries.push(entry),
                None => jobs.sections.push(Section {
                    name: "global".into(),
                    line: *at,
                    entries: vec![entry],
                }),
            }
        }
        if errors.is_empty() {
            Ok(CommandLine { jobs, job_files })
        } else {
            Err(errors)
        }
    }

    /// Whether a job (not only global options) was given as options.
    pub fn has_jobs(&self) -> bool {
        self.jobs.sections.iter().any(|s| s.name != "global")
    }

    /// The global options, in order: those before the first `--name` and after any
    /// `--name=global`.
    pub fn global(&self) -> Vec<Entry> {
        self.jobs
            .sections
            .iter()
            .filter(|s| s.name == "global")
            .flat_map(|s| s.entries.iter().cloned())
            .collect()
    }
}

/// One option as written: `key=value`, or a bare `key`.
fn option_text(e: &Entry) -> String {
    match &e.value {
        Some(v) => format!("{}={v}", e.name),
        None => e.name.clone(),
    }
}

/// fio's `--showcmd`: a job file's sections as one fio command line (`fio --name=global
/// --key=value ... --name=job ...`), options as written, in order.
pub fn show(file: &JobFile) -> String {
    let mut out = String::from("fio");
    for s in &file.sections {
        out.push_str(&format!(" --name={}", s.name));
        for e in &s.entries {
            out.push_str(&format!(" --{}", option_text(e)));
        }
    }
    out
}

/// A job file's sections as a job file's text (`[name]`, then `key=value` lines): the command
/// line's jobs as stored with the results.
pub fn job_file_text(file: &JobFile) -> String {
    let mut out = String::new();
    for s in &file.sections {
        out.push_str(&format!("[{}]\n", s.name));
        for e in &s.entries {
            out.push_str(&format!("{}\n", option_text(e)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<(usize, String)> {
        list.iter()
            .enumerate()
            .map(|(i, a)| (i + 1, a.to_string()))
            .collect()
    }

    #[test]
    fn each_name_starts_a_job_and_options_before_the_first_are_global() {
        let c = CommandLine::parse(&args(&[
            "--direct=1",
            "--name=a",
            "--rw=randread",
            "x.fio",
            "-name=b",
            "--time_based",
            "--name",
            "global",
            "--bs=8k",
        ]))
        .unwrap();
        let names: Vec<&str> = c.jobs.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["global", "a", "b", "global"]);
        assert_eq!(c.job_files, [PathBuf::from("x.fio")]);
        assert!(c.has_jobs());
        let global: Vec<(String, Option<String>, usize)> = c
            .global()
            .into_iter()
            .map(|e| (e.name, e.value, e.line))
            .collect();
        assert_eq!(
            global,
            [
                ("direct".into(), Some("1".into()), 1),
                ("bs".into(), Some("8k".into()), 9)
            ]
        );
        let b = &c.jobs.sections[2];
        assert_eq!((b.line, b.entries[0].name.as_str()), (5, "time_based"));
        assert_eq!(b.entries[0].value, None);
        assert!(
            job_file_text(&c.jobs)
                .starts_with("[global]\ndirect=1\n[a]\nrw=randread\n[b]\ntime_based\n")
        );
        assert_eq!(
            show(&c.jobs),
            "fio --name=global --direct=1 --name=a --rw=randread --name=b --time_based --name=global --bs=8k"
        );
    }

    #[test]
    fn an_empty_name_or_option_is_refused_with_its_argument() {
        let e = CommandLine::parse(&args(&["--name=", "--=3"])).unwrap_err();
        let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            [
                "command line, argument 1: --name needs a value: the job's name (or global)",
                "command line, argument 2: `--=3` has no option name"
            ]
        );
        let only_global = CommandLine::parse(&args(&["--bs=4k", "job.fio"])).unwrap();
        assert!(!only_global.has_jobs());
    }
}
