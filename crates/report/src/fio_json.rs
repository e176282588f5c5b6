//! `storlab fio`'s results in fio's own layouts, from the stored results only: per fio job (or
//! per group with `group_reporting`) the figures of its targets ([`job_stats`]), written as
//! fio 3.33's JSON (`--output-format=json`, `json+` adding the completion-latency `bins`)
//! by [`json()`], and as fio's normal text by [`super::fio_text`].
//!
//! Latency is storlab's: from submission to completion, one HDR histogram per target and
//! operation. fio splits it into slat (submission) and clat (completion); storlab does not
//! measure submission apart, so `slat_ns` is what fio writes when it has none (all zero,
//! `N` 0) and `clat_ns` and `lat_ns` both hold the whole latency, as fio's sync engines give.
//! `bins` are the HDR histogram's recorded buckets (each bucket's highest value, ns, and its
//! count). Bandwidth and IOPS samples are the timeline's intervals (1 s; fio's are 500 ms).
//! Not measured by storlab, written as fio writes them when absent: `usr_cpu`, `sys_cpu`,
//! `ctx`, `majf`, `minf` 0, `disk_util` empty; fio's `iodepth_*` distributions are left out.
//! A top-level `storlab` object says all this, and holds the run folder and substitutions.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use serde_json::{Map, Value, json};

use storlab_model::fio_jobs::FioJobs;
use storlab_model::fio_jobs::LatencyReport;
use storlab_results::histograms::{Histograms, hlog_tag};
use storlab_results::stored::StoredRun;

/// One direction (fio's read, write, trim; storlab's fsync as fio's sync) of one entry.
#[derive(Debug, Clone, Default)]
pub struct Dir {
    pub ios: u64,
    pub bytes: u64,
    pub runtime_ms: u64,
    pub hist: Option<Histogram<u64>>,
    /// Per timeline interval: (KiB/s, IOPS), summed over the entry's targets.
    pub samples: Vec<(f64, f64)>,
    pub errors: u64,
    /// Only the completion latency is reported, no total latency or samples
    /// ([`FioJob::clat_only`](storlab_model::fio_jobs::FioJob::clat_only)).
    pub clat_only: bool,
}

impl Dir {
    /// The direction as fio reports a job that records only completion latency.
    fn clat_only(mut self, yes: bool) -> Dir {
        if yes {
            self.samples.clear();
            self.clat_only = true;
        }
        self
    }

    pub fn bw_bytes(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            self.bytes as f64 * 1000.0 / self.runtime_ms as f64
        }
    }
    pub fn iops(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            self.ios as f64 * 1000.0 / self.runtime_ms as f64
        }
    }
}

/// One job entry of fio's report.
#[derive(Debug, Clone)]
pub struct JobStats {
    pub jobname: String,
    pub groupid: usize,
    /// Clones (threads or files) folded into this entry.
    pub jobs: u32,
    pub job_options: Vec<(String, String)>,
    pub read: Dir,
    pub write: Dir,
    /// The writes of jobs whose writes are fio's trims ([`FioJob::trims`]).
    ///
    /// [`FioJob::trims`]: storlab_model::fio_jobs::FioJob::trims
    pub trim: Dir,
    pub sync: Dir,
    pub job_runtime_ms: u64,
    pub elapsed_s: u64,
    pub iodepth: u32,
    pub error: u64,
    /// The latency percentiles printed (the job's `percentile_list`, `clat_percentiles`,
    /// `lat_percentiles`).
    pub latency_report: LatencyReport,
    /// The latency-target search of the entry's last worker (fio reports its last job's).
    pub latency_search: Option<storlab_model::latency_target::LatencySearchResult>,
}

/// How long the entry's targets were measured: the run's measured time, or the longest of
/// their own (a job that finished first, or started late (`startdelay`), has run for less
/// time, as fio reports it: fio counts a job's runtime from its own start).
fn entry_seconds(run: &StoredRun, targets: &[String]) -> f64 {
    run.summary
        .targets
        .iter()
        .filter(|t| targets.contains(&t.name))
        .map(|t| t.measured_seconds.unwrap_or(run.summary.measured_seconds))
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))))
        .unwrap_or(run.summary.measured_seconds)
}

/// fio's `job_runtime` for a group reported as one (`group_reporting`): the sum of every
/// member clone's running time, as fio adds its threads' `total_run_time` (4 clones for 1 s
/// report about 4000 ms), where the directions' `runtime` and `elapsed` take the longest.
fn group_runtime_seconds(run: &StoredRun, fio: &FioJobs, jobs: &[usize]) -> f64 {
    jobs.iter()
        .map(|&j| {
            let names = &fio.jobs[j].targets;
            // Clones with files of their own are a target each; clones that share a file
            // are the threads of one target.
            let clones_per_target = if names.len() > 1 {
                1
            } else {
                fio.jobs[j].numjobs
            };
            names
                .iter()
                .map(|n| entry_seconds(run, std::slice::from_ref(n)) * clones_per_target as f64)
                .sum::<f64>()
        })
        .sum()
}

fn sum_dir(run: &StoredRun, hists: &Histograms, targets: &[String], op: &str) -> Dir {
    let mut d = Dir::default();
    let mut per_interval: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
    let interval_s = run.interval_seconds();
    for t in targets {
        let result = run.summary.targets.iter().find(|r| &r.name == t);
        if let Some(k) = result.and_then(|r| r.kinds.get(op)) {
            d.ios += k.ops;
            d.bytes += k.bytes;
            d.errors += k.errors;
        }
        // fio samples a job from its own start (after its startdelay) to its own end.
        let own = result.map_or(0..i64::MAX, |r| {
            r.own_intervals(run.summary.measured_seconds, interval_s)
        });
        if let Some(h) = hists.get(&hlog_tag(t, op)) {
            match &mut d.hist {
                Some(sum) => {
                    let _ = sum.add(h);
                }
                None => d.hist = Some(h.clone()),
            }
        }
        for r in run
            .timeline
            .rows
            .iter()
            .filter(|r| r.measured && &r.target == t && r.op == op && own.contains(&r.second))
        {
            let e = per_interval.entry(r.second).or_default();
            e.0 += r.rate_bytes / 1024.0;
            e.1 += r.rate_ops;
        }
    }
    if d.ios > 0 {
        d.runtime_ms = (entry_seconds(run, targets) * 1000.0).round() as u64;
    }
    d.samples = per_interval.into_values().collect();
    d
}

/// The entries of fio's report, in job order: per job, per clone with its own file, or per
/// group with `group_reporting`.
pub fn job_stats(fio: &FioJobs, runs: &[StoredRun]) -> Result<Vec<JobStats>, String> {
    let mut out = Vec::new();
    let trimming: Vec<&String> = fio
        .jobs
        .iter()
        .filter(|j| j.trims)
        .flat_map(|j| &j.targets)
        .collect();
    for (g, run) in fio.groups.iter().zip(runs) {
        let hists = run.latency_histograms()?;
        let elapsed_s = (run.summary.warmup_seconds + run.summary.measured_seconds).ceil() as u64;
        // Each entry: its first job, its targets, its clones, and with `group_reporting` its
        // members' running times summed (fio's `job_runtime` of a group).
        let mut entries: Vec<(usize, Vec<String>, u32, Option<f64>)> = Vec::new();
        if g.jobs.iter().any(|&j| fio.jobs[j].group_reporting) {
            let names = g
                .jobs
                .iter()
                .flat_map(|&j| fio.jobs[j].targets.clone())
                .collect();
            let clones = g.jobs.iter().map(|&j| fio.jobs[j].numjobs).sum();
            let summed = group_runtime_seconds(run, fio, &g.jobs);
            entries.push((g.jobs[0], names, clones, Some(summed)));
        } else {
            for &j in &g.jobs {
                let job = &fio.jobs[j];
                if job.targets.len() > 1 {
                    for n in &job.targets {
                        entries.push((j, vec![n.clone()], 1, None));
                    }
                } else {
                    entries.push((j, job.targets.clone(), job.numjobs, None));
                }
            }
        }
        for (j, targets, clones, summed_seconds) in entries {
            let job = &fio.jobs[j];
            // A group's entry (group_reporting) when all its jobs are so.
            let clat_only = match summed_seconds {
                Some(_) => g.jobs.iter().all(|&m| fio.jobs[m].clat_only),
                None => job.clat_only,
            };
            let read = sum_dir(run, &hists, &targets, "read").clat_only(clat_only);
            let (trims, writes): (Vec<String>, Vec<String>) =
                targets.iter().cloned().partition(|t| trimming.contains(&t));
            let write = sum_dir(run, &hists, &writes, "write").clat_only(clat_only);
            let trim = sum_dir(run, &hists, &trims, "write");
            let sync = sum_dir(run, &hists, &targets, "fsync");
            out.push(JobStats {
                jobname: job.name.clone(),
                groupid: g.id,
                jobs: clones,
                job_options: job.own_options.clone(),
                error: read.errors + write.errors + trim.errors + sync.errors,
                read,
                write,
                trim,
                sync,
                job_runtime_ms: (summed_seconds.unwrap_or_else(|| entry_seconds(run, &targets))
                    * 1000.0)
                    .round() as u64,
                elapsed_s,
                iodepth: job.iodepth,
                latency_report: job.latency_report.clone(),
                latency_search: run
                    .summary
                    .latency_search
                    .iter()
                    .rfind(|r| targets.contains(&r.target))
                    .cloned(),
            });
        }
    }
    Ok(out)
}

fn f6(x: f64) -> Value {
    // fio prints six decimals.
    json!((x * 1e6).round() / 1e6)
}

fn lat_stats(h: Option<&Histogram<u64>>) -> Map<String, Value> {
    let mut m = Map::new();
    match h.filter(|h| !h.is_empty()) {
        Some(h) => {
            m.insert("min".into(), json!(h.min()));
            m.insert("max".into(), json!(h.max()));
            m.insert("mean".into(), f6(h.mean()));
            m.insert("stddev".into(), f6(h.stdev()));
            m.insert("N".into(), json!(h.len()));
        }
        None => {
            m.insert("min".into(), json!(0));
            m.insert("max".into(), json!(0));
            m.insert("mean".into(), f6(0.0));
            m.insert("stddev".into(), f6(0.0));
            m.insert("N".into(), json!(0));
        }
    }
    m
}

/// The HDR histogram's recorded buckets: (highest value of the bucket in ns, count).
pub fn bins(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// (min, max, mean, sample standard deviation, count) of `xs`, as fio computes them.
pub fn stats(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64, f64, f64, usize) {
    let n = xs.clone().count();
    if n == 0 {
        return (0.0, 0.0, 0.0, 0.0, 0);
    }
    let min = xs.clone().fold(f64::INFINITY, f64::min);
    let max = xs.clone().fold(f64::NEG_INFINITY, f64::max);
    let mean = xs.clone().sum::<f64>() / n as f64;
    // fio's sample standard deviation (n - 1).
    let var = if n > 1 {
        xs.map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    (min, max, mean, var.sqrt(), n)
}

/// fio's `percentile` object of a latency: `"99.000000": ns` for each percentile.
fn percentile_map(h: &Histogram<u64>, report: &LatencyReport) -> Value {
    let p: Map<String, Value> = report
        .percentiles
        .iter()
        .map(|q| (format!("{q:.6}"), json!(h.value_at_percentile(*q))))
        .collect();
    Value::Object(p)
}

fn dir_json(d: &Dir, group_bw: f64, plus: bool, report: &LatencyReport) -> Value {
    let mut m = Map::new();
    m.insert("io_bytes".into(), json!(d.bytes));
    m.insert("io_kbytes".into(), json!(d.bytes / 1024));
    m.insert("bw_bytes".into(), json!(d.bw_bytes().round() as u64));
    m.insert("bw".into(), json!((d.bw_bytes() / 1024.0) as u64));
    m.insert("iops".into(), f6(d.iops()));
    m.insert("runtime".into(), json!(d.runtime_ms));
    m.insert("total_ios".into(), json!(d.ios));
    m.insert("short_ios".into(), json!(0));
    m.insert("drop_ios".into(), json!(0));
    m.insert("slat_ns".into(), Value::Object(lat_stats(None)));
    let mut clat = lat_stats(d.hist.as_ref());
    let mut lat = lat_stats(d.hist.as_ref().filter(|_| !d.clat_only));
    if let Some(h) = d.hist.as_ref().filter(|h| !h.is_empty()) {
        // fio 3.33 writes clat's percentiles unless clat_percentiles=0, lat's with
        // lat_percentiles=1 (storlab's lat is its clat: submission is not timed apart).
        if report.clat {
            clat.insert("percentile".into(), percentile_map(h, report));
        }
        if report.lat && !d.clat_only {
            lat.insert("percentile".into(), percentile_map(h, report));
        }
        if plus {
            let b: Map<String, Value> = bins(h)
                .into_iter()
                .map(|(v, c)| (v.to_string(), json!(c)))
                .collect();
            clat.insert("bins".into(), Value::Object(b));
        }
    }
    m.insert("clat_ns".into(), Value::Object(clat));
    m.insert("lat_ns".into(), Value::Object(lat));
    let (bmin, bmax, bmean, bdev, bn) = stats(d.samples.iter().map(|s| s.0));
    let agg = if group_bw > 0.0 {
        100.0 * d.bw_bytes() / group_bw
    } else {
        0.0
    };
    m.insert("bw_min".into(), json!(bmin as u64));
    m.insert("bw_max".into(), json!(bmax as u64));
    m.insert("bw_agg".into(), f6(agg));
    m.insert("bw_mean".into(), f6(bmean));
    m.insert("bw_dev".into(), f6(bdev));
    m.insert("bw_samples".into(), json!(bn));
    let (imin, imax, imean, idev, n) = stats(d.samples.iter().map(|s| s.1));
    m.insert("iops_min".into(), json!(imin as u64));
    m.insert("iops_max".into(), json!(imax as u64));
    m.insert("iops_mean".into(), f6(imean));
    m.insert("iops_stddev".into(), f6(idev));
    m.insert("iops_samples".into(), json!(n));
    Value::Object(m)
}

/// fio's latency bucket bounds: below 1 µs and in µs (ns, µs), and in ms.
pub const LAT_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
pub const LAT_BOUNDS_MS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// Percent of the entry's I/Os (read, write and trim) in each of fio's latency ranges: (ns, µs,
/// ms; the last ms range is `>=2000`).
pub fn latency_percents(j: &JobStats) -> ([f64; 10], [f64; 10], [f64; 12]) {
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    let mut total = 0u64;
    for h in [&j.read.hist, &j.write.hist, &j.trim.hist]
        .into_iter()
        .flatten()
    {
        for (v, c) in bins(h) {
            total += c;
            let slot = |keys: &[u64], x: u64| keys.iter().position(|k| x < *k);
            if v < 1000 {
                ns[slot(&LAT_BOUNDS, v).unwrap_or(9)] += c;
            } else if v < 1_000_000 {
                us[slot(&LAT_BOUNDS, v / 1000).unwrap_or(9)] += c;
            } else {
                ms[slot(&LAT_BOUNDS_MS, v / 1_000_000).unwrap_or(11)] += c;
            }
        }
    }
    let pct = |c: &u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * *c as f64 / total as f64
        }
    };
    (
        ns.map(|c| pct(&c)),
        us.map(|c| pct(&c)),
        ms.map(|c| pct(&c)),
    )
}

/// fio's latency buckets as JSON maps.
fn latency_buckets(j: &JobStats) -> (Value, Value, Value) {
    let (ns, us, ms) = latency_percents(j);
    let map = |keys: &[u64], pcts: &[f64], last: Option<&str>| {
        let mut m = Map::new();
        for (k, p) in keys.iter().zip(pcts) {
            m.insert(k.to_string(), f6(*p));
        }
        if let Some(l) = last {
            m.insert(l.into(), f6(pcts[pcts.len() - 1]));
        }
        Value::Object(m)
    };
    (
        map(&LAT_BOUNDS, &ns, None),
        map(&LAT_BOUNDS, &us, None),
        map(&LAT_BOUNDS_MS, &ms, Some(">=2000")),
    )
}

/// Each group's bandwidth per direction (0 read, 1 write, 2 trim), bytes/s: fio's `bw_agg`
/// base.
pub fn group_bandwidths(stats: &[JobStats]) -> BTreeMap<(usize, u8), f64> {
    let mut group_bw: BTreeMap<(usize, u8), f64> = BTreeMap::new();
    for j in stats {
        *group_bw.entry((j.groupid, 0)).or_default() += j.read.bw_bytes();
        *group_bw.entry((j.groupid, 1)).or_default() += j.write.bw_bytes();
        *group_bw.entry((j.groupid, 2)).or_default() += j.trim.bw_bytes();
    }
    group_bw
}

/// fio's `--output-format=json` (`plus`: json+) document.
pub fn json(
    fio: &FioJobs,
    stats: &[JobStats],
    folder: &Path,
    plus: bool,
    now_s: i64,
    now_text: &str,
) -> Value {
    let group_bw = group_bandwidths(stats);
    let jobs: Vec<Value> = stats
        .iter()
        .map(|j| {
            let mut m = Map::new();
            m.insert("jobname".into(), json!(j.jobname));
            m.insert("groupid".into(), json!(j.groupid));
            m.insert("error".into(), json!(if j.error > 0 { 5 } else { 0 }));
            m.insert("elapsed".into(), json!(j.elapsed_s));
            let opts: Map<String, Value> = j
                .job_options
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            m.insert("job options".into(), Value::Object(opts));
            m.insert(
                "read".into(),
                dir_json(&j.read, group_bw[&(j.groupid, 0)], plus, &j.latency_report),
            );
            m.insert(
                "write".into(),
                dir_json(&j.write, group_bw[&(j.groupid, 1)], plus, &j.latency_report),
            );
            m.insert(
                "trim".into(),
                dir_json(&j.trim, group_bw[&(j.groupid, 2)], plus, &j.latency_report),
            );
            m.insert(
                "sync".into(),
                json!({"total_ios": j.sync.ios, "lat_ns": Value::Object(lat_stats(j.sync.hist.as_ref()))}),
            );
            m.insert("job_runtime".into(), json!(j.job_runtime_ms));
            m.insert("usr_cpu".into(), f6(0.0));
            m.insert("sys_cpu".into(), f6(0.0));
            m.insert("ctx".into(), json!(0));
            m.insert("majf".into(), json!(0));
            m.insert("minf".into(), json!(0));
            let (ns, us, ms) = latency_buckets(j);
            m.insert("latency_ns".into(), ns);
            m.insert("latency_us".into(), us);
            m.insert("latency_ms".into(), ms);
            m.insert("latency_depth".into(), json!(j.iodepth));
            m.insert("latency_target".into(), json!(0));
            m.insert("latency_percentile".into(), f6(100.0));
            m.insert("latency_window".into(), json!(0));
            if let Some(r) = &j.latency_search {
                super::latency_search::fio_json_fields(&mut m, r);
            }
            Value::Object(m)
        })
        .collect();
    let mut top = Map::new();
    top.insert(
        "fio version".into(),
        json!(format!(
            "storlab-{} (fio-3.33 layout)",
            env!("CARGO_PKG_VERSION")
        )),
    );
    top.insert("timestamp".into(), json!(now_s));
    top.insert("timestamp_ms".into(), json!(now_s * 1000));
    top.insert("time".into(), json!(now_text));
    if !fio.global_options.is_empty() {
        let g: Map<String, Value> = fio
            .global_options
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        top.insert("global options".into(), Value::Object(g));
    }
    top.insert("jobs".into(), Value::Array(jobs));
    top.insert("disk_util".into(), json!([]));
    let searches: Vec<Value> = stats
        .iter()
        .filter_map(|j| {
            let r = j.latency_search.as_ref()?;
            Some(super::latency_search::steps_json(&j.jobname, r))
        })
        .collect();
    top.insert(
        "storlab".into(),
        json!({
            "latency-search": searches,
            "results": folder.display().to_string(),
            "substitutions": fio.notes,
            "not-measured": ["slat_ns (submission apart: clat_ns and lat_ns hold storlab's submission-to-completion latency)",
                "usr_cpu", "sys_cpu", "ctx", "majf", "minf", "disk_util", "iodepth_level", "iodepth_submit", "iodepth_complete"],
            "samples": "bw_* and iops_* come from the timeline's intervals",
        }),
    );
    Value::Object(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_engine_job_reports_completion_latency_alone_as_fio() {
        // fio's filecreate, filestat and filedelete: clat samples only (FIO_NOSTATS).
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(5000).unwrap();
        let d = Dir {
            ios: 1,
            runtime_ms: 1000,
            hist: Some(h),
            samples: vec![(4.0, 1.0)],
            ..Dir::default()
        };
        let full = dir_json(&d, 0.0, false, &LatencyReport::default());
        assert_eq!(
            (full["lat_ns"]["N"].as_u64(), full["bw_samples"].as_u64()),
            (Some(1), Some(1))
        );
        let d = d.clat_only(true);
        let only = dir_json(&d, 0.0, false, &LatencyReport::default());
        assert_eq!(only["clat_ns"]["N"].as_u64(), Some(1));
        assert_eq!(only["lat_ns"]["N"].as_u64(), Some(0));
        assert_eq!(only["iops_samples"].as_u64(), Some(0));
        assert_eq!(only["total_ios"].as_u64(), Some(1));
    }

    #[test]
    fn percentiles_follow_the_jobs_latency_report() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let d = Dir {
            ios: 1000,
            hist: Some(h),
            ..Dir::default()
        };
        let default = dir_json(&d, 0.0, false, &LatencyReport::default());
        let p = default["clat_ns"]["percentile"].as_object().unwrap();
        assert_eq!(p.len(), 17);
        assert!(p.contains_key("99.990000"));
        assert!(default["lat_ns"].get("percentile").is_none());
        // percentile_list=50:99.5, clat_percentiles=0, lat_percentiles=1.
        let report = LatencyReport {
            percentiles: vec![50.0, 99.5],
            clat: false,
            lat: true,
        };
        let chosen = dir_json(&d, 0.0, false, &report);
        assert!(chosen["clat_ns"].get("percentile").is_none(), "{chosen}");
        let p = chosen["lat_ns"]["percentile"].as_object().unwrap();
        let keys: Vec<&str> = p.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["50.000000", "99.500000"]);
        let median = p["50.000000"].as_u64().unwrap();
        assert!((499_000..=501_000).contains(&median), "{median}");
    }
}
