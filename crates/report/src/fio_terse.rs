//! fio's `--output-format=terse` (fio 3.33's default terse version 3): one line of
//! `;`-separated fields per job entry, in the order of fio's HOWTO ("Terse output") and of
//! what fio 3.33 writes for a job without disk statistics: version, fio version, job name,
//! group, error; then read and write, each: KiB, KiB/s, IOPS, runtime ms, slat, clat (min,
//! max, mean, stdev in µs), 20 clat percentiles (`P%=µs`, padded with `0%=0`), total
//! latency, bandwidth (min, max, aggregate %, mean, stdev in KiB/s); then CPU (5), I/O depths
//! (7), latencies in µs (10, the ns ones counted in the first) and in ms (12).
//!
//! storlab does not measure submission apart (slat is 0, clat and lat are its latency), CPU
//! use or the I/O depth distribution: those fields are 0, as in the JSON output whose
//! `storlab.not-measured` names them, and [`NOT_MEASURED`] is printed on stderr. The disk
//! utilisation fields are left out, as fio leaves them out when it has no disk.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::fio_json::{Dir, JobStats, group_bandwidths, latency_percents, stats};
use storlab_model::fio_jobs::LatencyReport;

/// What the terse fields written as 0 stand for.
pub const NOT_MEASURED: &str = "terse fields storlab does not measure are 0: slat (clat and lat hold storlab's submission-to-completion latency), CPU (user, system, ctx, majf, minf) and the I/O depth distribution";

/// fio's terse line's fields for one latency: min and max (whole µs), mean and stdev.
fn lat_fields(out: &mut String, h: Option<&Histogram<u64>>) {
    match h.filter(|h| !h.is_empty()) {
        Some(h) => {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6}",
                h.min() / 1000,
                h.max() / 1000,
                h.mean() / 1000.0,
                h.stdev() / 1000.0
            );
        }
        None => out.push_str(";0;0;0.000000;0.000000"),
    }
}

/// One direction's 41 fields.
fn dir_fields(out: &mut String, d: &Dir, group_bw: f64, report: &LatencyReport) {
    let iops = (d.ios * 1000).checked_div(d.runtime_ms).unwrap_or(0);
    let _ = write!(
        out,
        ";{};{};{iops};{}",
        d.bytes / 1024,
        (d.bw_bytes() / 1024.0) as u64,
        d.runtime_ms
    );
    lat_fields(out, None);
    lat_fields(out, d.hist.as_ref());
    let h = d.hist.as_ref().filter(|h| !h.is_empty());
    let mut written = 0;
    if let Some(h) = h.filter(|_| report.clat) {
        for q in report.percentiles.iter().take(20) {
            let _ = write!(out, ";{q:.6}%={}", h.value_at_percentile(*q) / 1000);
            written += 1;
        }
    }
    for _ in written..20 {
        out.push_str(";0%=0");
    }
    lat_fields(out, d.hist.as_ref());
    let (min, max, mean, dev, _) = stats(d.samples.iter().map(|s| s.0));
    let agg = if group_bw > 0.0 {
        100.0 * d.bw_bytes() / group_bw
    } else {
        0.0
    };
    let _ = write!(
        out,
        ";{};{};{agg:.6}%;{mean:.6};{dev:.6}",
        min as u64, max as u64
    );
}

/// fio's terse (version 3) lines, one per entry.
pub fn terse(entries: &[JobStats]) -> String {
    let group_bw = group_bandwidths(entries);
    let mut out = String::new();
    for j in entries {
        let error = if j.error > 0 { 5 } else { 0 };
        let _ = write!(out, "3;fio-3.33;{};{};{error}", j.jobname, j.groupid);
        dir_fields(
            &mut out,
            &j.read,
            group_bw[&(j.groupid, 0)],
            &j.latency_report,
        );
        dir_fields(
            &mut out,
            &j.write,
            group_bw[&(j.groupid, 1)],
            &j.latency_report,
        );
        out.push_str(";0.000000%;0.000000%;0;0;0");
        for _ in 0..7 {
            out.push_str(";0.0%");
        }
        let (ns, mut us, ms) = latency_percents(j);
        // fio's terse µs buckets count the sub-µs I/Os in the first (stat_calc_lat_nu).
        us[0] += ns.iter().sum::<f64>();
        for p in us.iter().chain(ms.iter()) {
            let _ = write!(out, ";{p:.2}%");
        }
        if let Some((_, d)) = j.job_options.iter().find(|(k, _)| k == "description") {
            let _ = write!(out, ";{d}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ios: u64) -> JobStats {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=ios {
            h.record(v * 1000).unwrap();
        }
        let read = Dir {
            ios,
            bytes: ios * 4096,
            runtime_ms: 2000,
            hist: Some(h),
            samples: vec![(1000.0, 250.0), (3000.0, 750.0)],
            errors: 0,
            clat_only: false,
        };
        JobStats {
            jobname: "a".into(),
            groupid: 0,
            jobs: 1,
            job_options: vec![],
            read,
            write: Dir::default(),
            trim: Dir::default(),
            sync: Dir::default(),
            job_runtime_ms: 2000,
            elapsed_s: 2,
            iodepth: 1,
            error: 0,
            latency_search: None,
            latency_report: LatencyReport::default(),
        }
    }

    #[test]
    fn terse_v3_has_fio_fields_in_fio_order() {
        let line = terse(&[entry(1000)]);
        let f: Vec<&str> = line.trim_end().split(';').collect();
        // fio 3.33's terse v3 line of a job without disk statistics has 121 fields.
        assert_eq!(f.len(), 121, "{line}");
        assert_eq!(&f[..5], ["3", "fio-3.33", "a", "0", "0"]);
        // read: KiB, KiB/s, IOPS, runtime.
        assert_eq!(&f[5..9], ["4000", "2000", "500", "2000"]);
        // clat min and max in µs, then the percentiles.
        assert_eq!((f[13], f[14]), ("1", "1000"));
        assert_eq!(f[17], "1.000000%=10");
        assert!(f[23].starts_with("50.000000%=50"), "{}", f[23]);
        assert_eq!(f[34], "0%=0");
        // bandwidth samples: min, max, aggregate percent, mean, stdev.
        assert_eq!(&f[41..44], ["1000", "3000", "100.000000%"]);
        assert_eq!(f[44], "2000.000000");
        // write did nothing.
        assert_eq!(&f[46..50], ["0", "0", "0", "0"]);
        // latency buckets: 1..1000 µs: <2 µs holds 1 of 1000 I/Os, <1000 µs 250 of them.
        assert_eq!(f[99], "0.10%");
        assert_eq!(f[108], "25.00%");
        assert_eq!(f[109], "0.10%");
        // percentile_list sets the fields, padded to 20.
        let mut e = entry(100);
        e.latency_report.percentiles = vec![50.0, 99.0];
        e.job_options = vec![("description".into(), "a job".into())];
        let line = terse(&[e]);
        let f: Vec<&str> = line.trim_end().split(';').collect();
        assert_eq!(f.len(), 122);
        assert_eq!(
            (f[17], f[18], f[19]),
            ("50.000000%=50", "99.000000%=99", "0%=0")
        );
        assert_eq!(f[121], "a job");
    }
}
