//! fio's file options: a job on many files (`nrfiles`, `filesize`, `file_service_type`,
//! `openfiles`) is one `file` target over a set of files, named and sized as fio lays them
//! out (`JOBNAME.CLONE.FILENUM` in `directory`); how they are laid out (`fallocate`,
//! `overwrite`, `create_on_open`), removed (`unlink`) and synced (`end_fsync`,
//! `fsync_on_close`, `fdatasync`, `sync`).

use super::job::{Fallocate, FileOptions, Increment, Job, Rw};
use super::parse::{Entry, LineError, parse_bool, parse_size};
use storlab_targets::file::FileService;

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

fn whole(e: &Entry) -> Result<u64, String> {
    let v = e.needed()?;
    v.parse()
        .map_err(|_| format!("{}={v}: expected a whole number", e.name))
}

/// Applies one of the file options to `job`; false when `e` is none of them.
pub fn apply_files(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    let f = &mut job.files;
    match canonical {
        "nrfiles" => {
            let n = whole(e)?;
            if n == 0 || n > 1 << 20 {
                return Err(format!("{}={n}: from 1 to 1048576", e.name));
            }
            f.nrfiles = Some(n as u32);
        }
        "filesize" => {
            let v = e.needed()?;
            let (lo, hi) = v.split_once('-').unwrap_or((v, v));
            let size = |s: &str| parse_size(s, kb).map_err(|m| format!("filesize={v}: {m}"));
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo == 0 || hi < lo {
                return Err(format!("filesize={v}: a size above 0, or a range low-high"));
            }
            f.filesize = Some((lo, hi));
        }
        "openfiles" => f.openfiles = Some((whole(e)? as u32, e.line)),
        "file_service_type" => {
            let v = e.needed()?;
            let (kind, _) = v.split_once(':').unwrap_or((v, ""));
            if matches!(kind, "zipf" | "pareto" | "normal" | "gauss") {
                return Err(format!(
                    "file_service_type={v}: not supported by storlab fio (random, roundrobin, sequential; with `:N`)"
                ));
            }
            // fio's `random:N` keeps a drawn file for N I/Os: not storlab's random.
            if matches!(kind, "random" | "sequential") && v.contains(':') {
                return Err(format!(
                    "file_service_type={v}: {kind} with `:N` is not supported by storlab fio (only roundrobin:N)"
                ));
            }
            f.service = Some(
                FileService::try_from(v.to_string())
                    .map_err(|m| format!("file_service_type={m}"))?,
            );
        }
        "create_on_open" => f.create_on_open = flag(e)?,
        "unlink" => f.unlink = flag(e)?,
        "overwrite" => f.overwrite = flag(e)?,
        "end_fsync" => f.end_fsync = flag(e)?,
        "fsync_on_close" => f.fsync_on_close = flag(e)?,
        "fdatasync" => {
            let n = whole(e)?;
            f.fdatasync = (n > 0).then_some((n, e.line));
        }
        "fallocate" => {
            f.fallocate = match e.needed()? {
                "native" => Fallocate::Native,
                "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                "none" | "0" => Fallocate::None,
                "truncate" => Fallocate::Truncate,
                other => {
                    return Err(format!(
                        "fallocate={other}: none, native, posix, keep, truncate, 0 or 1"
                    ));
                }
            }
        }
        "sync" => {
            f.sync = match e.needed()? {
                "none" | "0" => None,
                "sync" | "1" => Some("sync"),
                "dsync" => Some("dsync"),
                other => return Err(format!("sync={other}: none, 0, sync, 1 or dsync")),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

impl FileOptions {
    /// The job runs on a set of files (or on one file of `filesize`).
    pub fn set(&self) -> bool {
        self.nrfiles.is_some_and(|n| n > 1) || self.filesize.is_some()
    }

    fn count(&self) -> u64 {
        u64::from(self.nrfiles.unwrap_or(1))
    }
}

fn line_error(job: &Job, line: usize, message: String) -> LineError {
    LineError {
        file: job.file.clone(),
        line,
        message,
    }
}

/// fio's `filesize` on a job's one named file (`filename`, `nrfiles` at most 1): when the
/// job gives no other `size`, the bytes it transfers too (fio sizes a job by its files
/// then). With another `size` the file keeps `filesize` ([`target_keys`]); a range stays a
/// file set (refused by [`check`]).
pub fn settle_named(job: &mut Job) {
    let f = &mut job.files;
    if job.filename.is_some()
        && f.nrfiles.is_none_or(|n| n <= 1)
        && let Some((lo, hi)) = f.filesize
        && lo == hi
        && job.size.is_none_or(|s| s == lo)
    {
        job.size = Some(lo);
        f.filesize = None;
    }
}

/// What storlab cannot honour of the job's file options, each by name.
pub fn check(job: &Job) -> Vec<LineError> {
    let f = &job.files;
    let mut errors = Vec::new();
    let name = &job.name;
    // fio's file engines on a set hold at most one file open (filecreate closes each).
    let file_ops = matches!(job.engine.runs_on(), super::Runner::FileOps(_));
    if let Some((n, line)) = f.openfiles
        && n > 0
        && u64::from(n) < f.count()
        && !file_ops
    {
        errors.push(line_error(job, line, format!(
            "job `{name}`: openfiles={n} below nrfiles={}: not supported by storlab fio, which opens every file of the job before its first I/O and keeps them open",
            f.count()
        )));
    }
    if let Some((_, line)) = f.fdatasync
        && job.fsync > 0
    {
        errors.push(line_error(job, line, format!(
            "job `{name}`: fdatasync with fsync: storlab fio syncs with one call, fsync or fdatasync"
        )));
    }
    let set = |what: &str| {
        line_error(
            job,
            job.line,
            format!(
                "job `{name}`: nrfiles or filesize with {what} is not supported by storlab fio"
            ),
        )
    };
    if f.set() {
        // One file of `filesize` may be named: fio sizes the filename so.
        let one_size = f.count() == 1 && f.filesize.is_some_and(|(lo, hi)| lo == hi);
        if job.filename.is_some() && !one_size {
            errors.push(set(
                "filename (fio names the files of a set JOBNAME.CLONE.FILENUM)",
            ));
        }
        if job.offset > 0 {
            errors.push(set("offset"));
        }
        if job.offset_increment.is_some() {
            errors.push(set("offset_increment"));
        }
        if job.verify && f.count() > 1 {
            errors.push(set("verify (storlab verifies one file per target)"));
        }
        if let Some((lo, hi)) = f.filesize.filter(|(lo, hi)| hi > lo)
            && sizes(job).contains(&0)
        {
            errors.push(line_error(job, job.line, format!(
                "job `{name}`: filesize={lo}-{hi} bytes draws a file of 0 bytes (sizes are rounded down to the smallest block size, as fio's): fio 3.33 does not create it and fails the job when it picks it (No such file or directory); raise the low end to the smallest block size"
            )));
        }
    }
    if f.create_on_open && job.rw.reads() && !file_ops {
        errors.push(line_error(job, job.line, format!(
            "job `{name}`: create_on_open=1 with reads: fio reads empty files, not supported by storlab fio (remove create_on_open)"
        )));
    }
    errors
}

/// Each file's bytes: `filesize` (a range drawn per file as fio draws it, on a seed of the job's name: every
/// clone draws the same sizes, so that the clones transfer the same bytes, as storlab bounds
/// a group once), else the job's size split evenly (`size / nrfiles`).
pub fn sizes(job: &Job) -> Vec<u64> {
    let n = job.files.count();
    let bs = job.sizes().into_iter().min().unwrap_or(4096).max(1);
    let mut state = job.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..n)
        .map(|_| match job.files.filesize {
            Some((lo, hi)) if hi > lo => {
                // splitmix64
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                // fio's `get_rand_file_size`: low + (high - low) * U, rounded down to a
                // multiple of the smallest block size.
                let size = lo + ((u128::from(z) * u128::from(hi - lo)) >> 64) as u64;
                size - size % bs
            }
            Some((lo, _)) => lo,
            None => job.size.unwrap_or(0) / n,
        })
        .collect()
}

/// Bytes the job transfers on its files (fio: whole blocks of each file, of the smallest
/// size, at most `size`).
pub fn io_bytes(job: &Job, sizes: &[u64]) -> u64 {
    let bs = job.sizes().into_iter().min().unwrap_or(4096).max(1);
    let files: u64 = sizes.iter().map(|s| s / bs * bs).sum();
    job.size.map_or(files, |s| s.min(files))
}

/// The fsyncs (`fsync`, `fdatasync`) among a job's operations when it makes `transfers`
/// reads and writes: one after every N writes, none after the last (fio 3.33: 16 writes
/// with fsync=2 issue 7). The step counts them among its `ops`. A mixed job's writes are its
/// expected share.
pub fn syncs(job: &Job, transfers: u64) -> u64 {
    let every = job.files.fdatasync.map_or(job.fsync, |(n, _)| n);
    let writes = match job.rw {
        Rw::Write | Rw::RandWrite => transfers,
        Rw::Read | Rw::RandRead => 0,
        Rw::ReadWrite | Rw::RandRw => {
            (transfers as f64 * (100 - job.rwmixread) as f64 / 100.0).round() as u64
        }
    };
    if every == 0 || writes == 0 {
        return 0;
    }
    (writes - 1) / every
}

/// How fio lays out the job's files: data for a job that reads or with `overwrite`, else
/// as `fallocate` (or not at all with `create_on_open`).
pub(super) fn layout(job: &Job) -> &'static str {
    let f = &job.files;
    if job.rw.reads() || f.overwrite {
        return "write";
    }
    if f.create_on_open {
        return "none";
    }
    match f.fallocate {
        Fallocate::Native | Fallocate::Posix => "fallocate",
        Fallocate::Keep => "keep",
        Fallocate::None => "none",
        Fallocate::Truncate => "truncate",
    }
}

/// The file target's keys for the job's file options; `first` is the path of a clone's
/// first file (`JOBNAME.CLONE.0`).
pub fn target_keys(job: &Job, first: &std::path::Path, tt: &mut toml::Table) {
    let f = &job.files;
    if let (Some(_), Some((size, _))) = (&job.filename, f.filesize) {
        tt.insert("size".into(), (size as i64).into());
    } else if f.set() {
        tt.remove("path");
        tt.remove("size");
        let sizes = sizes(job);
        let base = first.to_string_lossy();
        let stem = base.strip_suffix(".0").unwrap_or(&base);
        let files: Vec<toml::Value> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut t = toml::Table::new();
                t.insert("path".into(), format!("{stem}.{i}").into());
                t.insert("size".into(), (*s as i64).into());
                toml::Value::Table(t)
            })
            .collect();
        tt.insert("files".into(), files.into());
        let service = f.service.unwrap_or(FileService::RoundRobin(1));
        tt.insert("file-service".into(), String::from(service).into());
        if !job.rw.random() {
            tt.insert("file-cursors".into(), true.into());
        }
    }
    tt.insert("layout".into(), layout(job).into());
    if let Some(s) = f.sync {
        tt.insert("open-sync".into(), s.into());
    }
    if f.fdatasync.is_some() {
        tt.insert("fdatasync".into(), true.into());
    }
    if f.end_fsync || f.fsync_on_close {
        tt.insert("end-fsync".into(), true.into());
    }
    if f.unlink {
        tt.insert("remove-after".into(), true.into());
    }
}

/// What the plan says about the job's file options.
pub fn notes(job: &Job) -> Vec<String> {
    let f = &job.files;
    let name = &job.name;
    let mut notes = Vec::new();
    if let Some((lo, hi)) = f.filesize.filter(|(lo, hi)| hi > lo) {
        notes.push(format!(
            "job `{name}`: filesize={lo}-{hi} bytes: each file's size drawn in the range by storlab, the same for every clone (fio draws other sizes in it, clone by clone)"
        ));
    }
    if f.end_fsync || f.fsync_on_close {
        notes.push(format!(
            "job `{name}`: end_fsync/fsync_on_close: each file fsynced when the job's session closes, after its last measured I/O (the fsync's time is not in the results)"
        ));
    }
    notes
}

/// The size of an existing file or block device (None: missing, or an empty file).
pub fn existing_size(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::metadata(path).ok()?;
    if m.file_type().is_block_device() {
        let f = std::fs::File::open(path).ok()?;
        use std::io::Seek;
        let mut f = f;
        return f.seek(std::io::SeekFrom::End(0)).ok();
    }
    m.is_file().then_some(m.len()).filter(|l| *l > 0)
}

/// Where clone `clone` of job `j` starts in `path`: `offset`, plus `clone` increments
/// (fio's `get_start_offset`); an increment in percent is a share of the file's size, the
/// offset then rounded up to a multiple of the smallest block, as fio rounds it. Such a share
/// needs the file to exist (fio takes the size it finds).
/// The error comes with the line of `offset_increment`.
pub fn clone_offset(j: &Job, path: &std::path::Path, clone: u64) -> Result<u64, (usize, String)> {
    let Some((inc, line)) = j.offset_increment.filter(|_| clone > 0) else {
        return Ok(j.offset);
    };
    let (step, align) = match inc {
        Increment::Bytes(b) => (b, false),
        Increment::Percent(p) => {
            let size = existing_size(path).ok_or_else(|| {
                let m = format!(
                    "offset_increment={p}% is a share of {}'s size, which does not exist yet: give the increment in bytes",
                    path.display()
                );
                (line, m)
            })?;
            (p * size / 100, true)
        }
    };
    let offset = j.offset + clone * step;
    if !align {
        return Ok(offset);
    }
    let min = j.sizes().into_iter().min().unwrap_or(j.bs).max(1);
    Ok(offset.div_ceil(min) * min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn job(text: &str) -> Job {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
            .unwrap()
            .remove(0)
    }

    #[test]
    fn each_clone_starts_its_increments_further() {
        let j = job(
            "[a]\nfilename=/nonexistent/x\nsize=1m\nnumjobs=3\noffset=4k\noffset_increment=2m\n",
        );
        let p = std::path::Path::new("/nonexistent/x");
        let at: Vec<u64> = (0..3).map(|c| clone_offset(&j, p, c).unwrap()).collect();
        assert_eq!(at, [4096, 4096 + (2 << 20), 4096 + (4 << 20)]);
        assert!(!j.clones_as_threads());
        // A share of a file that does not exist: said with the option's line.
        let j = job("[a]\nfilename=/nonexistent/x\nsize=1m\nnumjobs=2\noffset_increment=10%\n");
        assert_eq!(clone_offset(&j, p, 0), Ok(0));
        let (line, m) = clone_offset(&j, p, 1).unwrap_err();
        assert_eq!(line, 5);
        assert!(m.contains("give the increment in bytes"), "{m}");
    }

    #[test]
    fn sizes_split_the_size_or_follow_filesize() {
        let j = job("[m]\nsize=40k\nnrfiles=3\n");
        // fio 3.33: three files of 13653 bytes, 3 whole 4 KiB blocks each.
        assert_eq!(sizes(&j), [13653; 3]);
        assert_eq!(io_bytes(&j, &sizes(&j)), 36864);
        let j = job("[m]\nsize=1m\nnrfiles=2\nfilesize=12k\n");
        assert_eq!(sizes(&j), [12288; 2]);
        assert_eq!(io_bytes(&j, &sizes(&j)), 24576);
        let j = job("[m]\nsize=1m\nnrfiles=64\nfilesize=8k-32k\nbs=4k\n");
        let s = sizes(&j);
        assert!(
            s.iter()
                .all(|&b| (8192..=32768).contains(&b) && b % 4096 == 0)
        );
        assert!(s.iter().any(|&b| b != s[0]), "drawn, not all one size");
        assert_eq!(sizes(&j), s, "the same on every run");
        // fio's draw: low + (high - low) U rounded down to the smallest block size, so
        // 4k-64k gives 4k to 60k and 1k-12k with bs=4k may give 0 (refused: fio fails).
        let j = job("[m]\nsize=1m\nnrfiles=200\nfilesize=4k-64k\nbsrange=4k-16k\n");
        let s = sizes(&j);
        assert!(
            s.iter()
                .all(|&b| (4096..=61440).contains(&b) && b % 4096 == 0),
            "{s:?}"
        );
        assert!(s.contains(&4096) && s.contains(&61440), "{s:?}");
        let e = resolve(
            &parse(
                "job.fio",
                "[m]\nsize=1m\nnrfiles=50\nfilesize=1k-12k\n",
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap_err();
        assert!(e[0].message.contains("a file of 0 bytes"), "{e:?}");
    }

    #[test]
    fn options_become_target_keys() {
        let j = job(
            "[m]\nrw=write\nnrfiles=2\nfilesize=8k\nfile_service_type=sequential\nunlink=1\nend_fsync=1\nfdatasync=4\nsync=dsync\nfallocate=truncate\n",
        );
        let mut tt = toml::Table::new();
        target_keys(&j, std::path::Path::new("d/m.1.0"), &mut tt);
        let files = tt["files"].as_array().unwrap();
        assert_eq!(files[1]["path"].as_str(), Some("d/m.1.1"));
        assert_eq!(files[1]["size"].as_integer(), Some(8192));
        for (k, v) in [
            ("file-service", "sequential"),
            ("layout", "truncate"),
            ("open-sync", "dsync"),
        ] {
            assert_eq!(tt[k].as_str(), Some(v), "{k}");
        }
        for k in ["file-cursors", "fdatasync", "end-fsync", "remove-after"] {
            assert_eq!(tt[k].as_bool(), Some(true), "{k}");
        }
        // fio's defaults: round robin; a job that reads lays its files out with data.
        let j = job("[m]\nrw=randread\nnrfiles=2\nsize=8k\n");
        let mut tt = toml::Table::new();
        target_keys(&j, std::path::Path::new("m.0.0"), &mut tt);
        assert_eq!(tt["file-service"].as_str(), Some("roundrobin"));
        assert_eq!(tt["layout"].as_str(), Some("write"));
        assert!(!tt.contains_key("file-cursors"));
        let j = job("[m]\nrw=write\ncreate_on_open=1\nsize=8k\n");
        let mut tt = toml::Table::new();
        target_keys(&j, std::path::Path::new("m.0.0"), &mut tt);
        assert_eq!(tt["layout"].as_str(), Some("none"));
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_line() {
        let refused =
            |text: &str| resolve(&parse("job.fio", text, &|_| None).unwrap()).unwrap_err();
        let e = refused("[m]\nrw=write\nnrfiles=4\nopenfiles=2\nfsync=1\nfdatasync=2\nsize=1m\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].line, 4);
        assert!(e[0].message.contains("openfiles=2 below nrfiles=4"));
        assert_eq!(e[1].line, 6);
        let j = job("[m]\nrw=read\nnrfiles=4\nopenfiles=4\nsize=1m\n");
        assert!(check(&j).is_empty());
        let e = refused("[m]\nrw=read\ncreate_on_open=1\nsize=1m\n");
        assert!(e[0].message.contains("create_on_open"), "{}", e[0]);
        let e = refused("[m]\nfilename=/tmp/x\nnrfiles=2\nsize=1m\n");
        assert!(e[0].message.contains("JOBNAME.CLONE.FILENUM"), "{}", e[0]);
        let e = refused(
            "[m]\nfile_service_type=random:4\nfile_service_type=pareto\nsync=maybe\nfile_service_type=sequential:2\n",
        );
        assert_eq!(e.len(), 4, "{e:?}");
    }

    #[test]
    fn filesize_of_one_named_file_is_its_size() {
        let j = job("[a]\nfilename=x\nfilesize=1m\n");
        assert_eq!((j.size, j.files.filesize), (Some(1 << 20), None));
        assert!(check(&j).is_empty());
        // A size that differs, or a range, stays a set: refused.
        // A size that differs: the file is filesize long, the job moves size bytes.
        let j = job("[a]\nfilename=x\nfilesize=1m\nsize=512k\n");
        assert_eq!(
            (j.size, j.files.filesize),
            (Some(512 << 10), Some((1 << 20, 1 << 20)))
        );
        // A range stays a set: refused.
        let text = "[a]\nfilename=x\nfilesize=1m-2m\n";
        let e = resolve(&parse("job.fio", text, &|_| None).unwrap()).unwrap_err();
        assert!(e[0].message.contains("filesize with filename"), "{e:?}");
    }
}
