//! fio's file engines as storlab's `fileops` target: `filecreate`, `filestat` and
//! `filedelete` do one file operation per I/O on the next file of the job's set (fio opens,
//! stats or unlinks a file as it opens it, and times that alone); `ftruncate` truncates the
//! job's file to each write's offset, `falloc` fallocates each I/O's range (a read keeps the
//! size) or punches a hole over it (a trim). This module says what of a job storlab cannot
//! honour, the target table of a job, and the notes.

use std::path::Path;

use storlab_targets::fileops::StatCall;

use super::engines::{FileEngine, Runner};
use super::job::Job;
use super::parse::{Entry, LineError};

/// Applies filestat's `stat_type` to `job`; false when `e` is another option.
pub fn apply_fileops(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    if canonical != "stat_type" {
        return Ok(false);
    }
    let call = match e.value.as_deref().map(str::trim) {
        Some("stat") => StatCall::Stat,
        Some("lstat") => StatCall::Lstat,
        Some("statx") => StatCall::Statx,
        other => {
            return Err(format!(
                "stat_type={}: stat, lstat or statx",
                other.unwrap_or("")
            ));
        }
    };
    job.stat_call = Some((call, e.line));
    Ok(true)
}

/// The job's file engine, if it has one.
fn file_engine(job: &Job) -> Option<FileEngine> {
    match job.engine.runs_on() {
        Runner::FileOps(e) => Some(e),
        _ => None,
    }
}

/// What storlab cannot honour of a job's trims and file engine, each by name.
pub fn check(job: &Job) -> Vec<LineError> {
    let at = |line: usize, message: String| LineError {
        file: job.file.clone(),
        line,
        message,
    };
    let mut errors = Vec::new();
    let engine = file_engine(job);
    if let Some(line) = job.trim
        && engine != Some(FileEngine::Falloc)
    {
        errors.push(at(line, format!(
            "rw=trim or randtrim with ioengine={}: not supported by storlab fio, which does not trim; only ioengine=falloc's trims (punched holes) are taken",
            job.engine.fio_name()
        )));
    }
    if let Some((_, line)) = job.stat_call
        && engine != Some(FileEngine::Filestat)
    {
        errors.push(at(line, format!(
            "stat_type with ioengine={}: stat_type is filestat's option (fio's dirstat is not supported by storlab fio)",
            job.engine.fio_name()
        )));
    }
    let Some(engine) = engine else {
        return errors;
    };
    let name = fio_name(engine);
    errors.extend(problems(job, engine).into_iter().map(|m| {
        at(
            job.line,
            format!("job `{}`: ioengine={name}: {m}", job.name),
        )
    }));
    errors
}

fn fio_name(e: FileEngine) -> &'static str {
    super::engines::Engine::from(e).fio_name()
}

/// Why a job on file engine `e` cannot run as fio runs it.
fn problems(job: &Job, e: FileEngine) -> Vec<String> {
    let mut out = Vec::new();
    if job.verify {
        out.push("verify is not supported: the engine moves no data to read back".into());
    }
    if e.on_set() {
        out.extend(set_problems(job));
        return out;
    }
    if job.files.nrfiles.is_some_and(|n| n > 1) {
        out.push(
            "nrfiles above 1 is not supported by storlab fio: the fileops target runs it on one file"
                .into(),
        );
    }
    if e == FileEngine::Ftruncate && job.rw.reads() {
        out.push(
            "reads are not supported: fio's ftruncate fails each read with EINVAL (it truncates on writes only)"
                .into(),
        );
    }
    out
}

/// Why a job whose I/Os take the files of its set in turn cannot run as fio runs it.
fn set_problems(job: &Job) -> Vec<String> {
    let mut out = Vec::new();
    if job.rw.mixed() {
        out.push(
            "a mixed rw is not supported by storlab fio: fio counts every file operation of a job that reads as a read"
                .into(),
        );
    }
    if job.fsync > 0 || job.files.fdatasync.is_some() {
        out.push("fsync and fdatasync are not supported: the engine keeps no file open".into());
    }
    let bs = job.sizes();
    if bs.len() > 1 {
        out.push(
            "several block sizes are not supported by storlab fio: one I/O per file needs one bs"
                .into(),
        );
        return out;
    }
    let sizes = super::files::sizes(job);
    if let Some(s) = sizes.iter().find(|s| **s != bs[0]) {
        out.push(format!(
            "files of {s} bytes with bs={}: fio does one file operation per file but counts size/bs I/Os (the others do nothing); storlab counts and times one operation per file: make filesize (or size/nrfiles) equal to bs",
            bs[0]
        ));
    }
    out
}

/// The fileops target of job `j` on file engine `e`; `path` is its clone's file
/// (`JOBNAME.CLONE.0` when the job has no filename).
pub fn target_table(j: &Job, e: FileEngine, path: &Path) -> toml::Table {
    let mut tt = toml::Table::new();
    let operation = match e {
        FileEngine::Filecreate => "create",
        FileEngine::Filestat => "stat",
        FileEngine::Filedelete => "delete",
        FileEngine::Ftruncate => "truncate",
        FileEngine::Falloc if j.trim.is_some() => "punch-hole",
        FileEngine::Falloc => "allocate",
    };
    tt.insert("type".into(), "fileops".into());
    tt.insert("operation".into(), operation.into());
    let sizes = super::files::sizes(j);
    let size = match (j.files.filesize, sizes.first()) {
        (Some((s, _)), _) => Some(s),
        (None, Some(s)) if j.files.set() => Some(*s),
        _ => j.size,
    };
    if let Some(s) = size {
        tt.insert("size".into(), (s as i64).into());
    }
    let count = j.files.nrfiles.unwrap_or(1);
    if e.on_set() && j.filename.is_none() && count > 1 {
        // fio's names: JOBNAME.CLONE.FILENUM.
        let first = path.to_string_lossy();
        let stem = first.strip_suffix('0').unwrap_or(&first);
        tt.insert("prefix".into(), stem.into());
        tt.insert("count".into(), i64::from(count).into());
    } else {
        tt.insert("path".into(), path.display().to_string().into());
    }
    if !e.on_set() && j.direct {
        tt.insert("direct".into(), true.into());
    }
    if e != FileEngine::Filecreate {
        tt.insert("layout".into(), super::files::layout(j).into());
    }
    if let Some((call, _)) = j.stat_call {
        tt.insert("stat-call".into(), call.name().into());
    }
    if j.files.unlink {
        tt.insert("remove-after".into(), true.into());
    }
    tt
}

/// What the plan says about the jobs on file engines: one note per engine and what its I/O
/// is, naming its jobs (fio's examples run 6 or 16 alike).
pub fn notes(jobs: &[Job]) -> Vec<String> {
    let mut notes: Vec<(String, Vec<&str>)> = Vec::new();
    for j in jobs {
        let Some(what) = note(j) else {
            continue;
        };
        match notes.iter_mut().find(|(w, _)| *w == what) {
            Some((_, names)) => names.push(&j.name),
            None => notes.push((what, vec![&j.name])),
        }
    }
    notes
        .into_iter()
        .map(|(what, names)| {
            let s = if names.len() > 1 { "s" } else { "" };
            format!("job{s} `{}`: {what}", names.join("`, `"))
        })
        .collect()
}

/// What one job's I/O is on its file engine.
fn note(job: &Job) -> Option<String> {
    let e = file_engine(job)?;
    let direction = if job.rw.reads() { "reads" } else { "writes" };
    let what = match e {
        FileEngine::Filecreate => format!(
            "each I/O creates the next file of the job's set (open with O_CREAT) and closes it, timed together (fio times the open alone), counted as {direction}"
        ),
        FileEngine::Filestat => format!(
            "each I/O is {}(2) of the next file of the job's set (laid out before the run), counted as {direction}",
            job.stat_call.map_or(StatCall::Stat, |(c, _)| c).name()
        ),
        FileEngine::Filedelete => format!(
            "each I/O unlinks the next file of the job's set (laid out before the run), counted as {direction}"
        ),
        FileEngine::Ftruncate => "each write truncates the file to its offset".into(),
        FileEngine::Falloc if job.trim.is_some() => "each trim punches a hole over its range (fallocate PUNCH_HOLE | KEEP_SIZE): fio's trims, reported under trim in fio's outputs (storlab's own results count them as the fileops target's writes)".into(),
        FileEngine::Falloc => "each write fallocates its range (mode 0), each read with KEEP_SIZE".into(),
    };
    Some(format!("ioengine={}: {what}", fio_name(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    fn table(text: &str, path: &str) -> toml::Table {
        let j = jobs(text).unwrap().remove(0);
        let Runner::FileOps(e) = j.engine.runs_on() else {
            panic!("a file engine");
        };
        target_table(&j, e, Path::new(path))
    }

    #[test]
    fn set_engines_take_the_files_of_the_job_in_turn() {
        // fio's examples/filecreate-ioengine.fio, one job.
        let t = table(
            "[global]\ncreate_on_open=1\nnrfiles=31250\nioengine=filecreate\nfallocate=none\nfilesize=4k\nopenfiles=1\n[t0]\n",
            "d/t0.0.0",
        );
        assert_eq!(t["operation"].as_str(), Some("create"));
        assert_eq!(t["prefix"].as_str(), Some("d/t0.0."));
        assert_eq!(t["count"].as_integer(), Some(31250));
        assert_eq!(t["size"].as_integer(), Some(4096));
        assert!(!t.contains_key("layout"), "filecreate lays nothing out");
        let t = table(
            "[t]\nioengine=filedelete\nfilesize=4k\nnrfiles=200\nunlink=0\n",
            "t.0.0",
        );
        assert_eq!(t["operation"].as_str(), Some("delete"));
        assert_eq!(
            t["layout"].as_str(),
            Some("write"),
            "fio lays out with data for a read job"
        );
        assert!(!t.contains_key("remove-after"));
        let t = table(
            "[t]\nioengine=filestat\nsize=4k\nfilename=f\nstat_type=statx\n",
            "d/f",
        );
        assert_eq!(t["stat-call"].as_str(), Some("statx"));
        assert_eq!(
            (t["path"].as_str(), t["size"].as_integer()),
            (Some("d/f"), Some(4096))
        );
    }

    #[test]
    fn file_engines_act_on_one_file() {
        let t = table(
            "[t]\nioengine=ftruncate\nsize=100m\nfilename=tr\ndirect=1\nrw=randwrite\n",
            "d/tr",
        );
        assert_eq!(t["operation"].as_str(), Some("truncate"));
        assert_eq!(t["direct"].as_bool(), Some(true));
        // fio's examples/falloc.fio: a filesize with filename sizes that file.
        let falloc =
            "[global]\nioengine=falloc\nnrfiles=1\nsize=100M\nfilesize=100M\nfilename=ff\n";
        let t = table(&format!("{falloc}[a]\nrw=randwrite\n"), "d/ff");
        assert_eq!(t["operation"].as_str(), Some("allocate"));
        assert_eq!(t["size"].as_integer(), Some(100 << 20));
        let t = table(&format!("{falloc}[p]\nrw=randtrim\nbs=4k\n"), "d/ff");
        assert_eq!(t["operation"].as_str(), Some("punch-hole"));
        let j = jobs(&format!(
            "{falloc}[p]\nrw=randtrim\n[q]\nrw=randtrim\n[a]\nrw=write\n"
        ))
        .unwrap();
        let n = notes(&j);
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(
            n[0].starts_with("jobs `p`, `q`: ioengine=falloc: each trim punches"),
            "{n:?}"
        );
        assert!(
            n[1].starts_with("job `a`: ioengine=falloc: each write"),
            "{n:?}"
        );
    }

    #[test]
    fn what_fio_does_otherwise_is_refused_by_name() {
        let refused = |text: &str| {
            jobs(text)
                .unwrap_err()
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        };
        let e = refused("[t]\nrw=trim\nsize=1m\n");
        assert!(e[0].starts_with("job.fio:2: rw=trim"), "{e:?}");
        assert!(e[0].contains("ioengine=psync"), "{e:?}");
        let e = refused("[t]\nioengine=ftruncate\nsize=1m\nrw=randread\n");
        assert!(e[0].contains("EINVAL"), "{e:?}");
        let e = refused("[t]\nioengine=filestat\nnrfiles=4\nfilesize=8k\n");
        assert!(e[0].contains("files of 8192 bytes with bs=4096"), "{e:?}");
        let e = refused("[t]\nioengine=filecreate\nnrfiles=4\nfilesize=4k\nrw=randrw\nfsync=1\n");
        assert_eq!(e.len(), 2, "{e:?}");
        let e = refused("[t]\nioengine=filedelete\nsize=4k\nstat_type=lstat\n");
        assert!(
            e[0].starts_with("job.fio:4: stat_type with ioengine=filedelete"),
            "{e:?}"
        );
        let e = refused("[t]\nioengine=filestat\nsize=4k\nstat_type=fstat\n");
        assert!(e[0].contains("stat, lstat or statx"), "{e:?}");
        let e = refused("[t]\nioengine=falloc\nnrfiles=2\nsize=1m\n");
        assert!(e[0].contains("one file"), "{e:?}");
        // What fio's examples need: openfiles below nrfiles and create_on_open with reads.
        assert!(
            jobs(
                "[t]\nioengine=filecreate\ncreate_on_open=1\nnrfiles=8\nfilesize=4k\nopenfiles=1\n"
            )
            .is_ok()
        );
    }
}
