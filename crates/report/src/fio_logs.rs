//! fio's log files (`write_bw_log`, `write_iops_log`, `write_lat_log`, `write_hist_log`),
//! written from stored results: the timeline (operations and bytes per interval) and the HDR
//! interval log (latency per interval), never from live state. Layout as fio 3.33 writes with
//! `log_avg_msec` (HOWTO "Log File Formats"): `time (msec), value, data direction (0 read,
//! 1 write, 2 trim), block size, offset`, block size and offset 0 in averaged rows as fio writes them;
//! bandwidth in KiB/s, IOPS in I/Os per second, latency in ns (each row the mean of its
//! window). Histogram rows are `time (msec), data direction, block size, bins...` with fio's
//! 1856 latency bins (stat.h: FIO_IO_U_PLAT_BITS 6, FIO_IO_U_PLAT_GROUP_NR 29), each
//! storlab HDR bucket's count put in the fio bin holding the bucket's middle value.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;

use storlab_model::fio_jobs::FioJobs;
use storlab_model::fio_jobs::{LogKind, intervals_per_row};
use storlab_results::histograms::hlog_tag;
use storlab_results::stored::StoredRun;

/// fio's bits of a latency value kept exactly in each group of bins (stat.h).
pub const PLAT_BITS: u32 = 6;
/// Bins per group.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups of bins (fio 3.x).
pub const PLAT_GROUP_NR: u64 = 29;
/// fio's latency bins: 1856.
pub const PLAT_NR: usize = (PLAT_GROUP_NR * PLAT_VAL) as usize;

/// fio's bin of a latency of `ns` (stat.c `plat_val_to_idx`): values below 128 ns have a
/// bin each; above, each power of two is split into 64 bins; the last bin takes the rest.
pub fn fio_bin(ns: u64) -> usize {
    if ns < 2 * PLAT_VAL {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((PLAT_VAL - 1) & (ns >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The lowest latency, ns, of fio bin `idx` (stat.c `plat_idx_to_val` with no rounding).
pub fn fio_bin_low(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < 2 * PLAT_VAL {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    base + (idx % PLAT_VAL) * (1 << error_bits)
}

/// A histogram's counts in fio's bins: each HDR bucket's count goes to the fio bin of its
/// middle value (storlab's buckets, 3 significant digits, are narrower than fio's 1/64), so
/// the bins' sum is the histogram's count.
pub fn fio_bins(h: &Histogram<u64>) -> Vec<u64> {
    Latency::of(h).dense_bins()
}

/// One interval's (or window's) latency, kept small: the count, the sum of the values (each
/// HDR bucket's middle, as hdrhistogram's mean) and the counts in fio's bins (those not 0).
#[derive(Debug, Clone, Default, PartialEq)]
struct Latency {
    count: u64,
    sum_ns: f64,
    bins: BTreeMap<usize, u64>,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        let mut l = Latency::default();
        for v in h.iter_recorded() {
            let middle = h.median_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            l.count += n;
            l.sum_ns += middle as f64 * n as f64;
            *l.bins.entry(fio_bin(middle)).or_default() += n;
        }
        l
    }

    fn add(&mut self, other: &Latency) {
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        for (b, n) in &other.bins {
            *self.bins.entry(*b).or_default() += n;
        }
    }

    /// The mean, ns (None: no I/O).
    fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns / self.count as f64)
    }

    fn dense_bins(&self) -> Vec<u64> {
        let mut bins = vec![0u64; PLAT_NR];
        for (b, n) in &self.bins {
            bins[*b] += n;
        }
        bins
    }
}

/// One log file: fio's name and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    pub name: String,
    pub text: String,
}

/// One window's figures of one target and direction.
#[derive(Debug, Clone, Default)]
struct Window {
    end_ms: f64,
    ops: u64,
    bytes: f64,
    length_s: f64,
    latency: Latency,
}

/// fio's data directions storlab logs, with its operation names.
const DIRECTIONS: [(u8, &str); 2] = [(0, "read"), (1, "write")];

/// The windows of `per_row` intervals of a target's direction: from the timeline (operations,
/// bytes, lengths) and the interval log (latency), by window index.
fn windows(
    run: &StoredRun,
    latency: &Intervals,
    target: &str,
    op: &str,
    per_row: u64,
) -> BTreeMap<i64, Window> {
    let interval_s = run.interval_seconds();
    // fio's log times count from the job's own start: after its startdelay, the intervals
    // of the run before it are not the job's, nor those after its own end.
    let own = run
        .summary
        .targets
        .iter()
        .find(|t| t.name == target)
        .map_or(0..i64::MAX, |t| {
            t.own_intervals(run.summary.measured_seconds, interval_s)
        });
    let first = own.start;
    let shift_ms = first as f64 * interval_s * 1000.0;
    let mut out: BTreeMap<i64, Window> = BTreeMap::new();
    for r in run
        .timeline
        .rows
        .iter()
        .filter(|r| r.measured && r.target == target && r.op == op && own.contains(&r.second))
    {
        let length_s = r.interval_s.unwrap_or(interval_s);
        let w = out.entry((r.second - first) / per_row as i64).or_default();
        w.ops += r.ops;
        w.bytes += r.rate_bytes * length_s;
        w.length_s += length_s;
        let end_ms = (r.second as f64 * interval_s + length_s) * 1000.0 - shift_ms;
        w.end_ms = w.end_ms.max(end_ms);
    }
    for (index, end_ms, l) in latency.get(&hlog_tag(target, op)).into_iter().flatten() {
        if !own.contains(index) {
            continue;
        }
        let w = out.entry((index - first) / per_row as i64).or_default();
        w.end_ms = w.end_ms.max(*end_ms - shift_ms);
        w.latency.add(l);
    }
    // The collector's last interval can be a sliver after the job's end (a few ms, no I/O):
    // not a window fio would log.
    let window_s = per_row as f64 * interval_s;
    out.retain(|_, w| w.ops > 0 || w.length_s >= window_s / 2.0);
    out
}

/// Each interval's latency of the tags asked for: (interval index, end ms, latency).
type Intervals = BTreeMap<String, Vec<(i64, f64, Latency)>>;

/// The latency of every measured interval of `tags`, read one interval at a time from the
/// stored interval log and kept small.
fn latency_intervals(
    run: &StoredRun,
    tags: &std::collections::BTreeSet<String>,
) -> Result<Intervals, String> {
    let interval_s = run.interval_seconds();
    let mut out = Intervals::new();
    run.each_latency_interval(|tag, (start_s, length_s), h| {
        if tags.contains(tag) {
            let index = (start_s / interval_s).round() as i64;
            let end_ms = (start_s + length_s) * 1000.0;
            out.entry(tag.to_string())
                .or_default()
                .push((index, end_ms, Latency::of(&h)));
        }
        Ok(())
    })?;
    Ok(out)
}

/// One clone's rows of log `kind`: `clones` clones share the target (each the mean clone;
/// histogram counts shared out, clone `clone` of them, 0-based). With `offset`
/// (`log_offset`), an offset column of 0 before the priority, as fio writes averaged rows.
fn rows(
    kind: LogKind,
    per_dir: &[(u8, BTreeMap<i64, Window>)],
    bs: u64,
    clones: u64,
    clone: u64,
    offset: bool,
) -> String {
    let mut text = String::new();
    let mut order: Vec<(i64, u8, &Window)> = per_dir
        .iter()
        .flat_map(|(d, ws)| ws.iter().map(move |(i, w)| (*i, *d, w)))
        .collect();
    order.sort_by_key(|(i, d, _)| (*i, *d));
    for (_, ddir, w) in order {
        let t = w.end_ms.round() as u64;
        let mean_ns = w.latency.mean_ns();
        let value = match kind {
            LogKind::Slat => continue,
            LogKind::Bw if w.length_s > 0.0 => w.bytes / w.length_s / 1024.0 / clones as f64,
            LogKind::Iops if w.length_s > 0.0 => w.ops as f64 / w.length_s / clones as f64,
            LogKind::Bw | LogKind::Iops => continue,
            LogKind::Clat | LogKind::Lat => match mean_ns {
                Some(m) => m,
                None => continue,
            },
            LogKind::ClatHist => {
                if w.latency.count == 0 {
                    continue;
                }
                let _ = write!(text, "{t}, {ddir}, {bs}");
                for n in w.latency.dense_bins() {
                    let _ = write!(text, ", {}", n / clones + u64::from(clone < n % clones));
                }
                text.push('\n');
                continue;
            }
        };
        let offset_column = if offset { "0, " } else { "" };
        let _ = writeln!(text, "{t}, {}, {ddir}, 0, {offset_column}0", value as u64);
    }
    text
}

/// Every log file the stored jobs ask for, from the stored runs (one per group, in order).
/// Files of one name (per_job_logs=0: every clone's rows) are one text, clone after clone.
pub fn fio_logs(fio: &FioJobs, runs: &[StoredRun]) -> Result<Vec<LogFile>, String> {
    let mut files: Vec<LogFile> = Vec::new();
    for (g, run) in fio.groups.iter().zip(runs) {
        let jobs: Vec<usize> = g
            .jobs
            .iter()
            .copied()
            .filter(|&j| fio.jobs[j].logs.any())
            .collect();
        let tags = jobs
            .iter()
            .flat_map(|&j| fio.jobs[j].targets.iter())
            .flat_map(|t| DIRECTIONS.map(|(_, op)| hlog_tag(t, op)))
            .collect();
        if jobs.is_empty() {
            continue;
        }
        let latency = latency_intervals(run, &tags)?;
        for j in jobs {
            // fio's thread number of the job's first clone: 1 + every clone before it.
            let first_thread: u32 = 1 + fio.jobs[..j].iter().map(|p| p.numjobs).sum::<u32>();
            for (name, text) in job_logs(fio, j, run, &latency, first_thread) {
                match files.iter_mut().find(|f| f.name == name) {
                    Some(f) => f.text.push_str(&text),
                    None => files.push(LogFile { name, text }),
                }
            }
        }
    }
    Ok(files)
}

/// The log files of job `j`, clone by clone: (name, text).
fn job_logs(
    fio: &FioJobs,
    j: usize,
    run: &StoredRun,
    latency: &Intervals,
    first_thread: u32,
) -> Vec<(String, String)> {
    let job = &fio.jobs[j];
    let interval_ms = (run.interval_seconds() * 1000.0).round().max(1.0) as u64;
    let names = &fio.jobs[j].targets;
    // Clones on one file are one storlab target: each clone's log is the mean clone.
    let shared = names.len() == 1 && job.numjobs > 1;
    let clones = if shared { u64::from(job.numjobs) } else { 1 };
    // A job whose writes are fio's trims logs them as fio does, direction 2.
    let ddir = |d: u8| if job.trims && d == 1 { 2 } else { d };
    let per_dir = |target: &str, window_ms: u64| {
        let per_row = intervals_per_row(window_ms, interval_ms);
        DIRECTIONS.map(|(d, op)| (ddir(d), windows(run, latency, target, op, per_row)))
    };
    let mut out = Vec::new();
    for c in 0..u64::from(job.numjobs) {
        let target = if shared {
            &names[0]
        } else {
            &names[c as usize]
        };
        let averaged = per_dir(target, job.logs.avg_ms);
        // fio writes no histogram rows without log_hist_msec.
        let hist = (job.logs.hist.is_some() && job.logs.hist_ms > 0)
            .then(|| per_dir(target, job.logs.hist_ms));
        let clone = if shared { c } else { 0 };
        for (kind, prefix) in job.logs.files(&job.name) {
            let text = match (kind, &hist) {
                (LogKind::ClatHist, None) => String::new(),
                (LogKind::ClatHist, Some(h)) => rows(kind, h, job.bs, clones, clone, false),
                _ => rows(kind, &averaged, job.bs, clones, clone, job.logs.offset),
            };
            let name = job.logs.file_name(&prefix, kind, first_thread + c as u32);
            out.push((name, text));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bins_are_fios() {
        // stat.c: values below 128 ns exactly; 128 starts group 2 with bins 2 ns wide.
        assert_eq!(fio_bin(0), 0);
        assert_eq!(fio_bin(127), 127);
        assert_eq!(fio_bin(128), 128);
        assert_eq!(fio_bin(129), 128);
        assert_eq!(fio_bin(130), 129);
        assert_eq!(fio_bin(256), 192);
        assert_eq!(fio_bin(u64::MAX), PLAT_NR - 1);
        assert_eq!(PLAT_NR, 1856);
        // Each bin's lowest value falls in it, and the value just below in the bin before.
        for idx in 1..PLAT_NR {
            let low = fio_bin_low(idx);
            assert_eq!(fio_bin(low), idx, "bin {idx} low {low}");
            assert_eq!(fio_bin(low - 1), idx - 1, "bin {idx} low {low}");
        }
        // fiologparser_hist's `_plat_idx_to_val(1000, edge=0)`: 14 error bits, base 2^20.
        assert_eq!(fio_bin_low(1000), (1 << 20) + 40 * (1 << 14));
    }

    #[test]
    fn hdr_counts_are_kept_in_fio_bins() {
        let mut h = storlab_record::new_histogram::<u64>();
        let values = [
            (1u64, 3u64),
            (100, 7),
            (1_234, 11),
            (55_555, 13),
            (1_000_000, 17),
            (987_654_321, 19),
            (3_000_000_000_000, 2),
        ];
        for (v, n) in values {
            h.record_n(v, n).unwrap();
        }
        let bins = fio_bins(&h);
        assert_eq!(bins.iter().sum::<u64>(), h.len());
        for (v, n) in values {
            let b = fio_bin(v);
            assert_eq!(bins[b], n, "value {v} in bin {b}");
        }
        assert_eq!(bins[fio_bin(3_000_000_000_000)], 2);
        assert_eq!(fio_bin(3_000_000_000_000), PLAT_NR - 1);
        // The kept form's mean is the histogram's; two intervals add as their histograms.
        let l = Latency::of(&h);
        let mean = l.mean_ns().unwrap();
        assert!((mean / h.mean() - 1.0).abs() < 1e-12, "{mean} {}", h.mean());
        let mut both = l.clone();
        both.add(&l);
        let mut h2 = h.clone();
        h2.add(&h).unwrap();
        assert_eq!(both, Latency::of(&h2));
        assert_eq!(Latency::default().mean_ns(), None);
    }

    fn window(end_ms: f64, ops: u64, bytes: f64, lat: &[(u64, u64)]) -> Window {
        let mut h = storlab_record::new_histogram::<u64>();
        for &(v, n) in lat {
            h.record_n(v, n).unwrap();
        }
        Window {
            end_ms,
            ops,
            bytes,
            length_s: 0.5,
            latency: Latency::of(&h),
        }
    }

    #[test]
    fn rows_are_fios_averaged_layout() {
        let reads: BTreeMap<i64, Window> = [
            (
                0,
                window(500.0, 1000, 4096000.0, &[(10_000, 500), (30_000, 500)]),
            ),
            (1, window(1002.4, 0, 0.0, &[])),
        ]
        .into();
        let writes: BTreeMap<i64, Window> =
            [(0, window(500.0, 500, 2048000.0, &[(40_000, 500)]))].into();
        let per_dir = [(0, reads), (1, writes)];
        assert_eq!(
            rows(LogKind::Bw, &per_dir, 4096, 1, 0, false),
            "500, 8000, 0, 0, 0\n500, 4000, 1, 0, 0\n1002, 0, 0, 0, 0\n"
        );
        assert_eq!(
            rows(LogKind::Iops, &per_dir, 4096, 2, 0, false),
            "500, 1000, 0, 0, 0\n500, 500, 1, 0, 0\n1002, 0, 0, 0, 0\n"
        );
        // log_offset: fio's averaged rows have an offset column of 0 before the priority.
        assert_eq!(
            rows(LogKind::Bw, &per_dir, 4096, 1, 0, true),
            "500, 8000, 0, 0, 0, 0\n500, 4000, 1, 0, 0, 0\n1002, 0, 0, 0, 0, 0\n"
        );
        // Latency rows only where I/O completed; the mean of the window's histogram, ns.
        let clat = rows(LogKind::Clat, &per_dir, 4096, 1, 0, false);
        let lines: Vec<&str> = clat.lines().collect();
        assert_eq!(lines.len(), 2, "{clat}");
        let mean: u64 = lines[0].split(", ").nth(1).unwrap().parse().unwrap();
        assert!((19_990..=20_010).contains(&mean), "{mean}");
        assert!(lines[1].starts_with("500, 4"), "{}", lines[1]);
        assert_eq!(rows(LogKind::Lat, &per_dir, 4096, 1, 0, false), clat);
        assert_eq!(rows(LogKind::Slat, &per_dir, 4096, 1, 0, false), "");
        // Histogram rows: time, direction, bs, then 1856 bins summing to the window's count;
        // two clones sharing a target share the counts out, together the whole.
        let hist = rows(LogKind::ClatHist, &per_dir, 4096, 1, 0, false);
        let first: Vec<&str> = hist.lines().next().unwrap().split(", ").collect();
        assert_eq!(&first[..3], ["500", "0", "4096"]);
        assert_eq!(first.len(), 3 + PLAT_NR);
        let sum = |cols: &[&str]| cols[3..].iter().map(|c| c.parse::<u64>().unwrap()).sum();
        assert_eq!(sum(&first), 1000u64);
        let halves: Vec<u64> = (0..2)
            .map(|c| {
                let t = rows(LogKind::ClatHist, &per_dir, 4096, 2, c, false);
                let cols: Vec<&str> = t.lines().next().unwrap().split(", ").collect();
                sum(&cols)
            })
            .collect();
        assert_eq!(halves, [500, 500]);
    }
}
