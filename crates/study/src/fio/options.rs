//! fio's options that storlab takes, resolved per job: `[global]` values first (a later
//! `[global]` changes the jobs after it, as in fio), then the job's own lines, the last one
//! given winning. Every option storlab does not implement is refused by name with its file
//! and line; all refusals of a file come back together.

pub use super::engines::{Engine, Runner};
use super::job::{Increment, Job, Rw};
use super::parse::{Entry, JobFile, LineError, parse_bool, parse_size, parse_time};

/// The options storlab implements, with what they become.
pub const SUPPORTED: &[(&str, &str)] = &[
    ("name", "the job's name (the section's by default)"),
    ("description", "kept with the job options"),
    (
        "filename",
        "the file or device (one; `:`-separated lists are refused)",
    ),
    ("directory", "folder of the job's files"),
    (
        "size",
        "bytes of the file the job addresses (and transfers, unless time_based)",
    ),
    (
        "rw / readwrite",
        "read, write, randread, randwrite, rw, readwrite, randrw; trim and randtrim with ioengine=falloc (punched holes)",
    ),
    (
        "rwmixread / rwmixwrite",
        "percent of reads / writes in a mixed job (default 50)",
    ),
    (
        "bs / blocksize",
        "transfer size (a `read,write` pair only when equal)",
    ),
    (
        "bssplit",
        "transfer sizes and their percents: each I/O's size drawn from them as fio draws it",
    ),
    (
        "blockalign / ba",
        "offsets are multiples of this (default: the smallest bs)",
    ),
    ("direct / buffered", "O_DIRECT"),
    (
        "ioengine",
        "io_uring, psync, null (storlab's null target, no file); libaio and posixaio run on io_uring, sync, vsync, pvsync and pvsync2 on psync: each substitution said and recorded; filecreate, filestat, filedelete, ftruncate and falloc on storlab's fileops target (one file operation per I/O: see docs/fio-options.md)",
    ),
    ("iodepth", "I/Os in flight per job (psync: 1)"),
    (
        "numjobs",
        "clones of the job: threads on a shared filename, else a file each",
    ),
    ("runtime / timeout", "seconds (fio's time units)"),
    ("time_based", "run for runtime whatever the size"),
    ("ramp_time", "warm-up, not measured"),
    (
        "rate / rate_iops",
        "bytes or I/Os per second per job (`read,write` pairs): one paced stream, at the most the mix allows within each direction's limit",
    ),
    (
        "rate_min / ratemin / rate_iops_min / rate_cycle / ratecycle",
        "checked on the measured timeline after the run, per rate_cycle window after fio's 2 s settle: a job below it fails (exit 1)",
    ),
    (
        "flow / flow_id / flow_sleep",
        "fio's flow control: the workload's flow, the jobs running together with one flow_id keep their I/O counts in the proportion of their weights",
    ),
    (
        "rate_process",
        "linear, or poisson: seeded exponential gaps",
    ),
    (
        "latency_target / latency_window / latency_percentile / latency_run",
        "fio's search for the largest iodepth whose windows keep the percentile under the target; its answer printed as fio's `latency :` line, its windows in the results",
    ),
    (
        "buffer_compress_percentage / buffer_compress_chunk / buffer_pattern / zero_buffers / refill_buffers / scramble_buffers / dedupe_percentage / dedupe_mode / dedupe_working_set_percentage / dedupe_global",
        "written blocks filled by fio's algorithms (the workload's write-buffers)",
    ),
    ("fsync", "fsync after every N writes"),
    (
        "stat_type",
        "filestat's call: stat, lstat or statx (realpath, then statx, both timed as fio's)",
    ),
    (
        "nrfiles / filesize / file_service_type / openfiles / create_on_open / unlink / fallocate / overwrite / end_fsync / fsync_on_close / fdatasync / sync",
        "a set of files per job, laid out, synced and removed as fio does: see docs/fio-options.md",
    ),
    ("group_reporting", "report the group's jobs as one"),
    (
        "stonewall / wait_for_previous",
        "wait for the jobs before to finish",
    ),
    (
        "zonemode=strided / zonesize / zonerange / zoneskip",
        "sequential I/O in strided zones, as fio's (the workload's zones); zonemode=zbd refused",
    ),
    (
        "prioclass / prio / cmdprio_percentage / cmdprio_class / cmdprio / log_prio",
        "the file target's priority (ioprio_set on each thread) and command-priority (a drawn share of io_uring submissions); latencies not split by priority, said",
    ),
    (
        "wait_for",
        "a group of its own once the named job is done, where storlab's groups give fio's wait (else refused, named)",
    ),
    (
        "threads / dir / block / numruns",
        "fio's tiobench profile's options: taken and ignored without profile=tiobench, as fio ignores them, said",
    ),
    (
        "verify",
        "crc32c or crc32c-intel: storlab's verified writes and their pass after the run; md5, crc64, sha256, meta and fio's other types checked with storlab's own crc32c header, said",
    ),
    ("do_verify", "1 (the verify pass runs after the writes)"),
    (
        "invalidate",
        "1: drop the page cache before the job (all of it; needs root)",
    ),
    ("kb_base", "1024 (default) or 1000"),
    (
        "ss / ss_dur / ss_ramp (steadystate / steadystate_duration / steadystate_ramp_time)",
        "steady state (iops, iops_slope, bw, bw_slope; % or absolute): the group stops once reached, runtime being the longest; needs ss_dur and runtime",
    ),
    (
        "offset / fileoffset",
        "first byte of the job's region in the file (a size, not a percent)",
    ),
    (
        "norandommap",
        "storlab's random offsets are drawn with replacement: what fio does with it",
    ),
    (
        "randrepeat",
        "1 (fio's default): the same offsets on every run; 0: a new seed each run, recorded",
    ),
    (
        "random_distribution",
        "random (default), zipf, pareto, normal, zoned, zoned_abs with fio's values and :CENTER: the workload's distribution (random jobs; sequential ones ignore it, as fio)",
    ),
    (
        "random_generator",
        "tausworthe, lfsr, tausworthe64: taken, storlab's generator named in the output",
    ),
    (
        "new_group / exitall / exitall_on_error / continue_on_error",
        "see docs/fio-options.md: what storlab's groups and stop-on-error can honour",
    ),
    (
        "exec_prerun / exec_postrun",
        "a before-step / after-step exec event (sh -c), its failure a warning",
    ),
    (
        "cpus_allowed / cpumask / cpus_allowed_policy",
        "the workload's cpus and cpus-policy: each thread pinned once as it starts",
    ),
    (
        "thread / io_submit_mode",
        "taken with a note: storlab's clones are threads, each submitting and completing its own I/O",
    ),
    (
        "bsrange / bs ranges and pairs / bs_unaligned / rw=...:N / rw_sequencer / loops / io_size / number_ios / startdelay / thinktime / thinktime_blocks / thinktime_spin / thinktime_blocks_type / rate_ignore_thinktime",
        "fio's sizes, offsets, I/O counts and pauses: see docs/fio-options.md",
    ),
    (
        "gtod_reduce / disable_lat / disable_clat / disable_slat / disable_bw_measurement",
        "taken: storlab measures every latency and the bandwidth anyway, and says so",
    ),
    (
        "clat_percentiles / lat_percentiles / percentile_list",
        "the latency percentiles printed in fio's normal and JSON output",
    ),
    (
        "write_bw_log / write_iops_log / write_lat_log / write_hist_log / log_avg_msec / log_hist_msec / per_job_logs / log_offset",
        "fio's log files, written after the run from the stored timeline and HDR interval log: one row per log_avg_msec (or interval) window",
    ),
];

/// The jobs of a job file, in order. `kb_base` of `[global]` applies to the values after it.
pub fn resolve(f: &JobFile) -> Result<Vec<Job>, Vec<LineError>> {
    resolve_with(f, &[])
}

/// A `[global]` section's options checked on their own (the jobs apply them silently):
/// every problem, named by `file` and line. `all` is every global option so far, these
/// included (its `kb_base` applies).
pub fn check_global(file: &str, line: usize, entries: &[Entry], all: &[Entry]) -> Vec<LineError> {
    let mut probe = Job::new("global", file, line);
    let mut kb = kb_base(all);
    entries
        .iter()
        .filter_map(|e| {
            apply(&mut probe, e, &mut kb).err().map(|m| LineError {
                file: file.to_string(),
                line: e.line,
                message: m,
            })
        })
        .collect()
}

/// The jobs of `f`, each starting from `inherited` (fio's command-line options before the
/// first `--name`, which fio applies to the command line's jobs and the first job file's;
/// checked where they were given), then `f`'s own `[global]` options.
pub fn resolve_with(f: &JobFile, inherited: &[Entry]) -> Result<Vec<Job>, Vec<LineError>> {
    let mut errors = Vec::new();
    let mut global: Vec<Entry> = inherited.to_vec();
    let mut jobs = Vec::new();
    for s in &f.sections {
        if s.name == "global" {
            global.extend(s.entries.iter().cloned());
            errors.extend(check_global(&f.file, s.line, &s.entries, &global));
            continue;
        }
        let mut job = Job::new(&s.name, &f.file, s.line);
        let mut kb = kb_base(&global);
        for e in &global {
            let _ = apply(&mut job, e, &mut kb);
        }
        for e in &s.entries {
            match apply(&mut job, e, &mut kb) {
                Ok(()) => job
                    .own_options
                    .push((e.name.clone(), e.value.clone().unwrap_or_default())),
                Err(m) => errors.push(LineError {
                    file: f.file.clone(),
                    line: e.line,
                    message: m,
                }),
            }
        }
        super::files::settle_named(&mut job);
        errors.extend(super::files::check(&job));
        errors.extend(super::fileops::check(&job));
        errors.extend(super::distribution::check(&job));
        errors.extend(super::sizes::check(&job));
        errors.extend(super::zones::check(&job));
        errors.extend(super::prio::check(&job));
        errors.extend(super::buffers::check(&job));
        errors.extend(super::rates::check(&job));
        jobs.push(job);
    }
    if jobs.is_empty() && errors.is_empty() {
        errors.push(LineError {
            file: f.file.clone(),
            line: 1,
            message: "no job section: name at least one [job]".into(),
        });
    }
    if errors.is_empty() {
        Ok(jobs)
    } else {
        errors.sort_by_key(|e| e.line);
        Err(errors)
    }
}

fn kb_base(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .rev()
        .find(|e| e.name == "kb_base")
        .and_then(|e| e.value.as_deref()?.trim().parse().ok())
        .unwrap_or(1024)
}

fn need(e: &Entry) -> Result<&str, String> {
    e.value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))
}

fn int<T: std::str::FromStr>(e: &Entry) -> Result<T, String> {
    let v = need(e)?;
    v.parse()
        .map_err(|_| format!("{}={v}: expected a whole number", e.name))
}

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

/// One transfer size: `4k`, or `4k,4k` (read and write equal).
fn one_bs(e: &Entry, kb: u64) -> Result<u64, String> {
    let v = need(e)?;
    if v.contains('-') || v.contains(':') {
        return Err(format!(
            "{}={v}: block size ranges are not supported by storlab fio (use bssplit)",
            e.name
        ));
    }
    let parts: Vec<u64> = v
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| parse_size(p, kb))
        .collect::<Result<_, _>>()
        .map_err(|m| format!("{}={v}: {m}", e.name))?;
    match parts.as_slice() {
        [b] => Ok(*b),
        [b, rest @ ..] if rest.iter().all(|x| x == b) => Ok(*b),
        _ => Err(format!(
            "{}={v}: separate read and write sizes are not supported by storlab fio",
            e.name
        )),
    }
}

/// A bssplit's (bytes, percent) entries, percents filled in.
type Split = Vec<(u64, u32)>;

/// `bssplit=READS[,WRITES[,TRIMS]]` as fio's `str_split_parse` reads it: one split for
/// every direction, or the reads' then the writes' (the trims' is taken: storlab's block
/// workloads do not trim). Returns the reads' split and the writes' when it differs.
fn bssplit(e: &Entry, kb: u64) -> Result<(Split, Option<Split>), String> {
    let v = need(e)?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 || parts.iter().take(2).any(|p| p.is_empty()) {
        return Err(format!(
            "bssplit={v}: give one split, or the reads' and the writes' (READS,WRITES); storlab fio takes no empty part"
        ));
    }
    let reads = split_of(v, parts[0], kb)?;
    let writes = match parts.get(1) {
        Some(w) => Some(split_of(v, w, kb)?).filter(|w| *w != reads),
        None => None,
    };
    Ok((reads, writes))
}

fn split_of(v: &str, part: &str, kb: u64) -> Result<Vec<(u64, u32)>, String> {
    let mut parts: Vec<(u64, Option<u32>)> = Vec::new();
    for item in part.split(':').filter(|s| !s.is_empty()) {
        let (b, p) = match item.split_once('/') {
            Some((b, p)) => (b, p.trim()),
            None => (item, ""),
        };
        let bytes = parse_size(b, kb).map_err(|m| format!("bssplit={v}: {m}"))?;
        let pct = if p.is_empty() {
            None
        } else {
            Some(
                p.parse::<u32>()
                    .map_err(|_| format!("bssplit={v}: `{p}` is not a whole percent"))?,
            )
        };
        parts.push((bytes, pct));
    }
    let given: u32 = parts.iter().filter_map(|(_, p)| *p).sum();
    let blank = parts.iter().filter(|(_, p)| p.is_none()).count() as u32;
    if given > 100 || (blank == 0 && given != 100) || parts.is_empty() {
        return Err(format!("bssplit={v}: the percents must add up to 100"));
    }
    // fio splits what is left evenly among the entries without a percent.
    let (share, mut extra) = match (100 - given).checked_div(blank) {
        Some(share) => (share, (100 - given) % blank),
        None => (0, 0),
    };
    Ok(parts
        .into_iter()
        .map(|(b, p)| {
            let pct = p.unwrap_or_else(|| {
                let e = u32::from(extra > 0);
                extra = extra.saturating_sub(1);
                share + e
            });
            (b, pct)
        })
        .filter(|(_, p)| *p > 0)
        .collect())
}

/// Applies one option line to `job`: the refusal names the option.
fn apply(job: &mut Job, e: &Entry, kb: &mut u64) -> Result<(), String> {
    if apply_job_file(job, e, *kb)?
        || apply_io(job, e, *kb)?
        || apply_time(job, e)?
        || apply_run(job, e, kb)?
        || super::measure::apply_measure(job, e, super::names::canonical(&e.name))?
        || super::rates::apply_rate(job, e, super::names::canonical(&e.name), *kb)?
        || super::latency::apply_latency(job, e, super::names::canonical(&e.name))?
        || super::buffers::apply_buffers(job, e, super::names::canonical(&e.name), *kb)?
        || super::control::apply_control(job, e, super::names::canonical(&e.name))?
        || super::logs::apply_logs(job, e, super::names::canonical(&e.name))?
        || super::files::apply_files(job, e, super::names::canonical(&e.name), *kb)?
        || super::fileops::apply_fileops(job, e, super::names::canonical(&e.name))?
        || super::distribution::apply_distribution(job, e, super::names::canonical(&e.name), *kb)?
        || super::sizes::apply_sizes(job, e, super::names::canonical(&e.name), *kb)?
        || super::zones::apply_zones(job, e, super::names::canonical(&e.name), *kb)?
        || super::prio::apply_prio(job, e, super::names::canonical(&e.name), *kb)?
        || super::numa::apply_numa(job, e, super::names::canonical(&e.name))?
    {
        return Ok(());
    }
    Err(match refused_because(super::names::canonical(&e.name)) {
        Some(why) => format!("option `{}` is not supported by storlab fio: {why}", e.name),
        None => format!("option `{}` is not supported by storlab fio", e.name),
    })
}

/// Why storlab refuses fio options users ask for (issue 45's list), said with the refusal.
fn refused_because(canonical: &str) -> Option<&'static str> {
    Some(match canonical {
        "verify_interval" | "verify_pattern" | "verify_offset" | "experimental_verify" => {
            "storlab's verified writes carry its own header over each whole block (a crc32c of the block, its offset and generation), read back after the run, not fio's patterns or intervals"
        }
        "verify_dump" => {
            "storlab's verify pass names each bad block by offset; it writes no dump files"
        }
        "write_iolog" => "storlab records histograms and per-interval counts, never a line per I/O",
        "read_iolog" | "replay_no_stall" | "replay_redirect" | "replay_time_scale"
        | "replay_align" | "replay_scale" => "replaying an I/O log is not implemented",
        "log_max_value" | "log_window_value" => {
            "storlab's averaged log rows are each window's mean; its maximum is not kept"
        }
        "ignore_error" | "error_dump" => {
            "storlab counts every error by kind and stops at the first or goes on past all (continue_on_error=none, io or all); it ignores no error code"
        }
        "exit_what" => {
            "storlab's groups end when all their jobs are done or at their runtime; ending the others when one job finishes is not implemented"
        }
        "cpuload" | "cpuchunks" | "cpumode" | "exit_on_io_done" => {
            "options of fio's cpuio engine: storlab has no CPU-burning target"
        }
        _ => return None,
    })
}

/// The job's name and files: `name`, `description`, `filename`, `directory`, `size`,
/// `offset`. False when `e` is none of these.
fn apply_job_file(job: &mut Job, e: &Entry, kb: u64) -> Result<bool, String> {
    let name = e.name.as_str();
    match super::names::canonical(name) {
        "name" => job.name = need(e)?.to_string(),
        "description" => {
            need(e)?;
        }
        "filename" => {
            let v = need(e)?;
            if v.contains(':') {
                return Err(format!(
                    "filename={v}: several files per job (`:`) are not supported by storlab fio"
                ));
            }
            job.filename = Some(v.to_string());
        }
        "directory" => {
            let v = need(e)?;
            if v.contains(':') {
                return Err(format!(
                    "directory={v}: several directories (`:`) are not supported by storlab fio"
                ));
            }
            job.directory = Some(v.to_string());
        }
        "size" => {
            let v = need(e)?;
            job.size = Some(parse_size(v, kb).map_err(|m| format!("size={v}: {m}"))?);
        }
        "offset" => {
            let v = need(e)?;
            job.offset = parse_size(v, kb).map_err(|m| format!("offset={v}: {m}"))?;
        }
        "offset_increment" => {
            let v = need(e)?;
            let inc = match v.trim().strip_suffix('%') {
                Some(p) => Increment::Percent(
                    p.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|p| *p <= 100)
                        .ok_or_else(|| format!("offset_increment={v}: a percent from 0 to 100"))?,
                ),
                None => Increment::Bytes(
                    parse_size(v, kb).map_err(|m| format!("offset_increment={v}: {m}"))?,
                ),
            };
            job.offset_increment = Some((inc, e.line))
                .filter(|(i, _)| !matches!(i, Increment::Bytes(0) | Increment::Percent(0)));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The I/O the job does: `rw`, `rwmixread`, block sizes, `direct`, `ioengine`, `iodepth`,
/// `numjobs`, `fsync`. False when `e` is none of these.
fn apply_io(job: &mut Job, e: &Entry, kb: u64) -> Result<bool, String> {
    let name = e.name.as_str();
    match super::names::canonical(name) {
        "rw" => {
            let v = need(e)?;
            let (mode, suffix) = match v.split_once(':') {
                Some((m, s)) => (m, Some(s)),
                None => (v, None),
            };
            job.rw = match mode {
                "read" => Rw::Read,
                "write" => Rw::Write,
                "randread" => Rw::RandRead,
                "randwrite" => Rw::RandWrite,
                // fio's two names of the sequential mix.
                "rw" | "readwrite" => Rw::ReadWrite,
                "randrw" => Rw::RandRw,
                // Trims are writes that punch holes: only falloc's (fileops::check).
                "trim" => Rw::Write,
                "randtrim" => Rw::RandWrite,
                other => {
                    return Err(format!(
                        "{name}={other}: not supported by storlab fio (read, write, randread, randwrite, rw, readwrite, randrw; trim and randtrim with ioengine=falloc)"
                    ));
                }
            };
            job.trim = matches!(mode, "trim" | "randtrim").then_some(e.line);
            job.sizes_opts.modifier = suffix
                .map(|s| super::sizes::modifier(job.rw.random(), s, kb))
                .transpose()
                .map_err(|m| format!("{name}={v}: {m}"))?;
        }
        "rwmixread" | "rwmixwrite" => {
            let p: u32 = int(e)?;
            if p > 100 {
                return Err(format!("{name}={p}: a percent from 0 to 100"));
            }
            job.rwmixread = if name == "rwmixread" { p } else { 100 - p };
        }
        "bs" => super::sizes::apply_bs(job, e, kb, false)?,
        "bssplit" => {
            (job.bssplit, job.bssplit_write) = bssplit(e, kb)?;
            job.sizes_opts.range = None;
        }
        "ba" => job.blockalign = Some(one_bs(e, kb)?),
        "direct" => job.direct = flag(e)?,
        "buffered" => {
            job.direct = !flag(e)?;
        }
        "ioengine" => {
            let v = need(e)?;
            job.engine = Engine::ALL
                .into_iter()
                .find(|g| g.fio_name() == v)
                .ok_or_else(|| {
                    format!(
                        "ioengine={v}: not supported by storlab fio (io_uring, psync, null, filecreate, filestat, filedelete, ftruncate, falloc; libaio and posixaio run on io_uring; sync, vsync, pvsync, pvsync2 on psync)"
                    )
                })?;
        }
        "iodepth" => {
            job.iodepth = int(e)?;
            if job.iodepth == 0 || job.iodepth > 65536 {
                return Err(format!("iodepth={}: from 1 to 65536", job.iodepth));
            }
        }
        "numjobs" => {
            job.numjobs = int(e)?;
            if job.numjobs == 0 || job.numjobs > 4096 {
                return Err(format!("numjobs={}: from 1 to 4096", job.numjobs));
            }
        }
        "fsync" => job.fsync = int(e)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// How long the job runs: `runtime`, `time_based`, `ramp_time` and steady state (`ss`, `ss_dur`, `ss_ramp`). False when `e` is none of these.
fn apply_time(job: &mut Job, e: &Entry) -> Result<bool, String> {
    let name = e.name.as_str();
    match super::names::canonical(name) {
        "runtime" => {
            let v = need(e)?;
            let d = parse_time(v).map_err(|m| format!("{name}={v}: {m}"))?;
            job.runtime = (!d.is_zero()).then_some(d);
        }
        "time_based" => job.time_based = flag(e)?,
        "ramp_time" => {
            let v = need(e)?;
            job.ramp = parse_time(v).map_err(|m| format!("{name}={v}: {m}"))?;
        }
        "steadystate" => {
            let v = need(e)?;
            crate::steady::parse_steady_state(v).map_err(|m| format!("{name}={v}: {m}"))?;
            job.ss = Some(v.to_string());
        }
        "steadystate_duration" => {
            let v = need(e)?;
            let d = parse_time(v).map_err(|m| format!("{name}={v}: {m}"))?;
            job.ss_dur = (!d.is_zero()).then_some(d);
        }
        "steadystate_ramp_time" => {
            let v = need(e)?;
            job.ss_ramp = parse_time(v).map_err(|m| format!("{name}={v}: {m}"))?;
        }

        _ => return Ok(false),
    }
    Ok(true)
}

/// How fio runs and reports the job: random map, threads, reporting, `stonewall`, `verify`,
/// `invalidate`, `kb_base`. False when `e` is none of these.
fn apply_run(job: &mut Job, e: &Entry, kb: &mut u64) -> Result<bool, String> {
    let name = e.name.as_str();
    match super::names::canonical(name) {
        "norandommap" => {
            if !flag(e)? {
                return Err(
                    "norandommap=0 is not supported by storlab fio: storlab draws random offsets with replacement"
                        .into(),
                );
            }
        }
        "group_reporting" => job.group_reporting = flag(e)?,
        "stonewall" => job.stonewall = flag(e)?,
        "verify" => {
            job.verify = match need(e)? {
                "crc32c" | "crc32c-intel" => true,
                "0" => false,
                other => {
                    job.control.verify_type = Some(super::control::verify_type(other)?);
                    true
                }
            }
        }
        "do_verify" => {
            if !flag(e)? {
                return Err(
                    "do_verify=0 is not supported by storlab fio: storlab's verified writes are always read back after the run"
                        .into(),
                );
            }
        }
        "invalidate" => job.invalidate = flag(e)?,
        "kb_base" => match need(e)? {
            "1024" => *kb = 1024,
            "1000" => *kb = 1000,
            other => return Err(format!("kb_base={other}: 1024 or 1000")),
        },
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::parse::parse;
    use std::time::Duration;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn global_values_are_inherited_and_overridden() {
        let j = jobs(
            "[global]\nioengine=libaio\nbs=8k\ndirect=1\niodepth=16\n[a]\nrw=randread\n[b]\nbs=64k\nrw=write\nbuffered=1\n",
        )
        .unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!((j[0].bs, j[0].iodepth, j[0].direct), (8192, 16, true));
        assert_eq!(j[0].engine, Engine::Libaio);
        assert_eq!(j[0].rw, Rw::RandRead);
        assert_eq!((j[1].bs, j[1].direct, j[1].rw), (65536, false, Rw::Write));
        assert_eq!(j[1].own_options[0], ("bs".into(), "64k".into()));
    }

    #[test]
    fn every_unsupported_option_is_refused_by_name_and_line() {
        let e = jobs("[global]\nzonecapacity=1m\n[a]\nrw=randread\nread_iolog=x.log\nss=iops_median:10%\nrw=trim\nbs=4k,4k,4k\n")
            .unwrap_err();
        let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text[0],
            "job.fio:2: option `zonecapacity` is not supported by storlab fio"
        );
        // An option users ask for says why.
        assert_eq!(
            text[1],
            "job.fio:5: option `read_iolog` is not supported by storlab fio: replaying an I/O log is not implemented"
        );
        assert!(
            text[2].starts_with("job.fio:6: ss=iops_median:10%"),
            "{}",
            text[2]
        );
        assert!(text[3].starts_with("job.fio:7: rw=trim"), "{}", text[3]);
        assert!(text[4].starts_with("job.fio:8: bs=4k,4k,4k"), "{}", text[4]);
        assert_eq!(e.len(), 5);
        let e = jobs("[a]\nrw=randread:x\n").unwrap_err();
        assert!(e[0].message.contains("number of I/Os"), "{}", e[0]);
    }

    #[test]
    fn aliases_are_their_options_and_prefixes_are_refused_as_fio_refuses_them() {
        let j = jobs("[a]\nfileoffset=4k\ntimeout=2m\nreadwrite=randread\nblocksize=8k\nsteadystate=iops:10%\nsteadystate_duration=2s\n")
            .unwrap();
        assert_eq!(j[0].offset, 4096);
        assert_eq!(j[0].runtime, Some(Duration::from_secs(120)));
        assert_eq!((j[0].rw, j[0].bs), (Rw::RandRead, 8192));
        assert_eq!(j[0].ss.as_deref(), Some("iops:10%"));
        assert_eq!(j[0].ss_dur, Some(Duration::from_secs(2)));
        // fio 3.33: "Bad option <numj=2>", and `NumJobs` likewise.
        let e = jobs("[a]\nnumj=2\nNumJobs=2\nsteadystate=iops_median:1\n").unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].message.contains("`numj`"), "{}", e[0]);
        assert!(e[1].message.contains("`NumJobs`"), "{}", e[1]);
        assert!(
            e[2].message.starts_with("steadystate=iops_median"),
            "{}",
            e[2]
        );
    }

    #[test]
    fn readwrite_is_rws_other_name() {
        let j = jobs("[a]\nrw=readwrite\n[b]\nreadwrite=readwrite\nverify=crc32c\n").unwrap();
        assert_eq!((j[0].rw, j[1].rw), (Rw::ReadWrite, Rw::ReadWrite));
    }

    #[test]
    fn mixes_splits_and_units() {
        let j = jobs("[a]\nrw=randrw\nrwmixwrite=30\nbssplit=4k/10:64k/50:32k\nruntime=2m\nramp_time=500ms\n")
            .unwrap();
        assert_eq!(j[0].rwmixread, 70);
        assert_eq!(j[0].bssplit, vec![(4096, 10), (65536, 50), (32768, 40)]);
        assert_eq!(j[0].bssplit_write, None);
        // READS,WRITES (and a trim split, taken): fio's examples/cmdprio-bssplit.fio.
        let k = jobs("[a]\nrw=randrw\nbssplit=64k/40:1024k/60,1024k/100,4k\n[b]\nbssplit=4k/50:8k/50,4k/50:8k/50\n").unwrap();
        assert_eq!(k[0].bssplit, vec![(65536, 40), (1 << 20, 60)]);
        assert_eq!(k[0].bssplit_write, Some(vec![(1 << 20, 100)]));
        assert!(
            (k[0].mean_bs() - 0.5 * (0.4 * 65536.0 + 0.6 * 1048576.0) - 0.5 * 1048576.0).abs()
                < 1e-6
        );
        assert_eq!(k[1].bssplit_write, None);
        assert!(
            jobs("[a]\nbssplit=,4k/100\n").unwrap_err()[0]
                .message
                .contains("no empty part")
        );
        assert_eq!(j[0].runtime, Some(Duration::from_secs(120)));
        assert_eq!(j[0].ramp, Duration::from_millis(500));
        let j = jobs("[global]\nkb_base=1000\n[a]\nbs=4k\n").unwrap();
        assert_eq!(j[0].bs, 4000);
        let j = jobs("[a]\nverify=md5\nverify_backlog=16\n").unwrap();
        assert!(j[0].verify);
        assert_eq!(j[0].control.verify_type.as_deref(), Some("md5"));
        assert_eq!(j[0].control.verify_backlog, Some(16));
        let e = jobs("[a]\nverify=pattern\n").unwrap_err();
        assert!(e[0].message.contains("verify_pattern"), "{}", e[0]);
    }
}
