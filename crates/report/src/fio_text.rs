//! `storlab fio`'s normal output, in fio's layout: per entry a header line, per direction
//! `read: IOPS=..., BW=...MiB/s (...MB/s)(...MiB/...msec)`, clat and lat lines, clat
//! percentiles, bandwidth and IOPS over the timeline's intervals; then per group fio's
//! `Run status group N (all jobs):` lines. Every figure comes from [`super::fio_json::JobStats`].

use std::fmt::Write as _;

use super::fio_json::{Dir, JobStats};
use storlab_model::fio_jobs::LatencyReport;

/// fio's num2str for counts: four significant characters with k/M/G.
pub fn count(x: f64) -> String {
    let mut v = x;
    let mut unit = "";
    for u in ["k", "M", "G", "T"] {
        if v < 10_000.0 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    if unit.is_empty() {
        format!("{v:.0}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// Bytes (or bytes per second) with a base and unit names: three significant digits.
fn scaled(x: f64, base: f64, units: &[&str]) -> String {
    let mut v = x;
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    let digits = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.digits$}{}", units[i])
}

pub fn binary(x: f64) -> String {
    scaled(x, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"])
}

pub fn decimal(x: f64) -> String {
    scaled(x, 1000.0, &["B", "kB", "MB", "GB", "TB"])
}

/// fio's unit for a latency line: the largest in which the minimum is at least 1.
fn lat_unit(min_ns: u64) -> (&'static str, f64) {
    if min_ns >= 1_000_000 {
        ("msec", 1e6)
    } else if min_ns >= 1_000 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

/// fio's percentile lines: four a line, each `NNth=[value]` with as many decimals as the list
/// needs, a comma after every line but the last (fio 3.33's layout).
fn percentile_lines(
    out: &mut String,
    label: &str,
    unit: &str,
    div: f64,
    h: &hdrhistogram::Histogram<u64>,
    report: &LatencyReport,
) {
    let decimals = report.decimals();
    let width = decimals + 3;
    let _ = writeln!(out, "    {label} percentiles ({unit}):");
    let rows: Vec<&[f64]> = report.percentiles.chunks(4).collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|q| {
                format!(
                    "{q:width$.decimals$}th=[{:5.0}]",
                    h.value_at_percentile(*q) as f64 / div
                )
            })
            .collect();
        let comma = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{comma}", cells.join(", "));
    }
}

fn dir_lines(out: &mut String, name: &str, d: &Dir, report: &LatencyReport) {
    if d.ios == 0 {
        return;
    }
    let bw = d.bw_bytes();
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        count(d.iops()),
        binary(bw),
        decimal(bw),
        binary(d.bytes as f64),
        d.runtime_ms
    );
    if let Some(h) = d.hist.as_ref().filter(|h| !h.is_empty()) {
        let (unit, div) = lat_unit(h.min());
        let labels: &[&str] = if d.clat_only {
            &["clat"]
        } else {
            &["clat", " lat"]
        };
        for label in labels {
            let _ = writeln!(
                out,
                "    {label} ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
                h.min() as f64 / div,
                h.max() as f64 / div,
                h.mean() / div,
                h.stdev() / div
            );
        }
        if report.clat {
            percentile_lines(out, "clat", unit, div, h, report);
        }
        if report.lat && !d.clat_only {
            percentile_lines(out, "lat", unit, div, h, report);
        }
    }
    if !d.samples.is_empty() {
        let n = d.samples.len();
        let bws: Vec<f64> = d.samples.iter().map(|s| s.0).collect();
        let io: Vec<f64> = d.samples.iter().map(|s| s.1).collect();
        let mm = |v: &[f64]| {
            let mean = v.iter().sum::<f64>() / n as f64;
            let dev = if n > 1 {
                (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
            } else {
                0.0
            };
            (
                v.iter().cloned().fold(f64::INFINITY, f64::min),
                v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                mean,
                dev,
            )
        };
        let (a, b, c, e) = mm(&bws);
        let _ = writeln!(
            out,
            "   bw (  KiB/s): min={a:.0}, max={b:.0}, avg={c:.2}, stdev={e:.2}, samples={n}"
        );
        let (a, b, c, e) = mm(&io);
        let _ = writeln!(
            out,
            "   iops        : min={a:.0}, max={b:.0}, avg={c:.2}, stdev={e:.2}, samples={n}"
        );
    }
}

/// fio's normal report of the entries; `time_text` is the header's date.
pub fn normal(stats: &[JobStats], time_text: &str) -> String {
    let mut out = String::new();
    for j in stats {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: {time_text}",
            j.jobname, j.groupid, j.jobs, j.error
        );
        dir_lines(&mut out, "read", &j.read, &j.latency_report);
        dir_lines(&mut out, "write", &j.write, &j.latency_report);
        dir_lines(&mut out, "trim", &j.trim, &j.latency_report);
        if j.sync.ios > 0 {
            let _ = writeln!(out, "  fsync/fdatasync/sync_file_range:");
            if let Some(h) = j.sync.hist.as_ref().filter(|h| !h.is_empty()) {
                let (unit, div) = lat_unit(h.min());
                let _ = writeln!(
                    out,
                    "    sync ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
                    h.min() as f64 / div,
                    h.max() as f64 / div,
                    h.mean() / div,
                    h.stdev() / div
                );
            }
        }
        if let Some(r) = &j.latency_search {
            super::latency_search::fio_lines(&mut out, r);
        }
        out.push('\n');
    }
    let mut groups: Vec<usize> = stats.iter().map(|j| j.groupid).collect();
    groups.dedup();
    for g in groups {
        let _ = writeln!(out, "Run status group {g} (all jobs):");
        for (label, pick) in [
            ("READ", (|j: &JobStats| &j.read) as fn(&JobStats) -> &Dir),
            ("WRITE", |j: &JobStats| &j.write),
            ("TRIM", |j: &JobStats| &j.trim),
        ] {
            let dirs: Vec<&Dir> = stats
                .iter()
                .filter(|j| j.groupid == g)
                .map(pick)
                .filter(|d| d.ios > 0)
                .collect();
            if dirs.is_empty() {
                continue;
            }
            let bytes: u64 = dirs.iter().map(|d| d.bytes).sum();
            let run_max = dirs.iter().map(|d| d.runtime_ms).max().unwrap_or(0);
            let run_min = dirs.iter().map(|d| d.runtime_ms).min().unwrap_or(0);
            let agg = if run_max > 0 {
                bytes as f64 * 1000.0 / run_max as f64
            } else {
                0.0
            };
            let lo = dirs
                .iter()
                .map(|d| d.bw_bytes())
                .fold(f64::INFINITY, f64::min);
            let hi = dirs.iter().map(|d| d.bw_bytes()).fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "  {label:>5}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={run_min}-{run_max}msec",
                binary(agg),
                decimal(agg),
                binary(lo),
                binary(hi),
                decimal(lo),
                decimal(hi),
                binary(bytes as f64),
                decimal(bytes as f64)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_number_formats() {
        assert_eq!(count(1234.0), "1234");
        assert_eq!(count(10584.4), "10.6k");
        assert_eq!(count(245_000.0), "245k");
        assert_eq!(binary(43_353_766.0), "41.3MiB");
        assert_eq!(decimal(43_353_766.0), "43.4MB");
    }

    #[test]
    fn percentile_lines_have_fio_decimals_and_commas() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for v in 1..=100u64 {
            h.record(v).unwrap();
        }
        let lines = |percentiles: Vec<f64>| {
            let mut out = String::new();
            let report = LatencyReport {
                percentiles,
                clat: true,
                lat: false,
            };
            percentile_lines(&mut out, "clat", "nsec", 1.0, &h, &report);
            out
        };
        // As fio 3.33 prints percentile_list=50:99 and 1:99.9.
        assert_eq!(
            lines(vec![50.0, 99.0]),
            "    clat percentiles (nsec):\n     |  50th=[   50],  99th=[   99]\n"
        );
        assert!(lines(vec![1.0, 99.9]).contains("|  1.0th=[    1], 99.9th=[  100]\n"));
        let default = lines(LatencyReport::default().percentiles);
        let rows: Vec<&str> = default.lines().skip(1).collect();
        assert_eq!(rows.len(), 5);
        assert!(
            rows[0].starts_with("     |  1.00th=[    1],  5.00th=["),
            "{default}"
        );
        assert!(rows[3].ends_with(','), "{default}");
        assert_eq!(rows[4], "     | 99.99th=[  100]");
    }
}
