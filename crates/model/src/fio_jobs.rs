//! fio's jobs as `storlab fio` ran them, stored with the results (`fio-jobs/jobs.json`):
//! what fio's JSON, normal, terse and log outputs need of each job and group, so that the
//! reports read the stored runs and this model, never the live job plan. The fio front end
//! (study::fio) makes it from the job files; its option types that the reports print
//! ([`LatencyReport`], [`Logs`]) live here.

use serde::{Deserialize, Serialize};

/// The jobs of one `storlab fio` invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioJobs {
    /// The job files, as named on the command line.
    pub files: Vec<String>,
    /// `[global]` options as written, of every file (fio's "global options").
    pub global_options: Vec<(String, String)>,
    /// Substitutions and changes storlab made (fio's JSON output lists them).
    pub notes: Vec<String>,
    /// In the job files' order.
    pub jobs: Vec<FioJob>,
    /// Stonewall groups in run order: one step, one stored run each.
    pub groups: Vec<FioGroup>,
}

/// One job as the reports need it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioJob {
    pub name: String,
    /// The options written in the job's own section.
    pub own_options: Vec<(String, String)>,
    /// `numjobs`: its clones.
    pub numjobs: u32,
    pub group_reporting: bool,
    pub iodepth: u32,
    /// `bs` (the largest, with a range), bytes.
    pub bs: u64,
    pub latency_report: LatencyReport,
    pub logs: Logs,
    /// Its storlab targets: one shared by every clone (clones as threads), or one per clone.
    pub targets: Vec<String>,
    /// Its writes are fio's trims (`rw=trim` with ioengine=falloc: punched holes): the
    /// reports put them under trim, as fio does.
    #[serde(default)]
    pub trims: bool,
    /// fio records only each file operation's completion latency for this job (its file
    /// engines filecreate, filestat and filedelete, whose I/Os keep no statistics of their
    /// own): the reports leave its total latency and bandwidth and IOPS samples empty, as fio.
    #[serde(default)]
    pub clat_only: bool,
}

/// One stonewall group (fio's `groupid`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioGroup {
    pub id: usize,
    /// Indices into [`FioJobs::jobs`].
    pub jobs: Vec<usize>,
}

/// fio's default latency percentiles.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Which latency percentiles a job's report prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// `percentile_list`: each in (0, 100], at most 20 (fio's limit).
    pub percentiles: Vec<f64>,
    /// `clat_percentiles` (fio's default 1): completion-latency percentiles printed.
    pub clat: bool,
    /// `lat_percentiles` (default 0): total-latency percentiles printed too (storlab's total
    /// latency is its completion latency: it does not time submission apart).
    pub lat: bool,
}

impl Default for LatencyReport {
    fn default() -> Self {
        LatencyReport {
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            clat: true,
            lat: false,
        }
    }
}

impl LatencyReport {
    /// Decimals fio prints the percentiles with: as many as the most precise one needs
    /// (fio 3.33: `50:99` prints ` 50th`, `1:99.9` ` 1.0th`, the default list `99.99th`).
    pub fn decimals(&self) -> usize {
        self.percentiles
            .iter()
            .map(|q| {
                let t = format!("{q:.6}");
                t.trim_end_matches('0')
                    .split_once('.')
                    .map_or(0, |(_, f)| f.len())
            })
            .max()
            .unwrap_or(0)
    }
}

/// A job's log options as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logs {
    /// `write_bw_log`: the file name prefix (`Some("")`: the job's name, as fio).
    pub bw: Option<String>,
    /// `write_iops_log`.
    pub iops: Option<String>,
    /// `write_lat_log`: `_clat`, `_slat` and `_lat` files.
    pub lat: Option<String>,
    /// `write_hist_log`: the `_clat_hist` file.
    pub hist: Option<String>,
    /// `log_avg_msec` (0, fio's default: every I/O).
    pub avg_ms: u64,
    /// `log_hist_msec` (0, fio's default: no histogram rows).
    pub hist_ms: u64,
    /// `per_job_logs` (fio's default 1): a file per clone, its thread number `.N` in its name.
    pub per_job: bool,
    /// `log_offset`: each row has an offset column (before the priority), 0 on averaged
    /// rows as fio writes it.
    #[serde(default)]
    pub offset: bool,
}

impl Default for Logs {
    fn default() -> Self {
        Logs {
            bw: None,
            iops: None,
            lat: None,
            hist: None,
            avg_ms: 0,
            hist_ms: 0,
            per_job: true,
            offset: false,
        }
    }
}

/// Which of fio's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogKind {
    Bw,
    Iops,
    Clat,
    Slat,
    Lat,
    ClatHist,
}

impl LogKind {
    /// The file name's part after the prefix, as fio names it (`x_clat_hist.1.log`).
    pub fn suffix(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::Lat => "lat",
            LogKind::ClatHist => "clat_hist",
        }
    }
}

impl Logs {
    /// Any log asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some() || self.hist.is_some()
    }

    /// The logs asked for, each with its file name prefix (`job` when none was given).
    pub fn files(&self, job: &str) -> Vec<(LogKind, String)> {
        let prefix = |p: &String| {
            if p.is_empty() {
                job.to_string()
            } else {
                p.clone()
            }
        };
        let mut out = Vec::new();
        if let Some(p) = &self.bw {
            out.push((LogKind::Bw, prefix(p)));
        }
        if let Some(p) = &self.iops {
            out.push((LogKind::Iops, prefix(p)));
        }
        if let Some(p) = &self.lat {
            for k in [LogKind::Clat, LogKind::Slat, LogKind::Lat] {
                out.push((k, prefix(p)));
            }
        }
        if let Some(p) = &self.hist {
            out.push((LogKind::ClatHist, prefix(p)));
        }
        out
    }

    /// fio's file name of log `kind` of fio's thread `thread`: `PREFIX_KIND.N.log`, N the
    /// thread's number (1-based over every job's clones in the job files' order, as fio 3.33
    /// numbers them: `[a]`, `[b] numjobs=2` log as `a_bw.1.log`, `b_bw.2.log`, `b_bw.3.log`),
    /// or `PREFIX_KIND.log` with per_job_logs=0.
    pub fn file_name(&self, prefix: &str, kind: LogKind, thread: u32) -> String {
        if self.per_job {
            format!("{prefix}_{}.{thread}.log", kind.suffix())
        } else {
            format!("{prefix}_{}.log", kind.suffix())
        }
    }

    /// The windows the job's logs average over, ms (what the study's interval must divide).
    pub fn windows_ms(&self) -> Vec<u64> {
        let mut w = Vec::new();
        if (self.bw.is_some() || self.iops.is_some() || self.lat.is_some()) && self.avg_ms > 0 {
            w.push(self.avg_ms);
        }
        if self.hist.is_some() && self.hist_ms > 0 {
            w.push(self.hist_ms);
        }
        w
    }
}

/// Intervals per row of a window of `window_ms` (0: one interval a row), at least 1.
pub fn intervals_per_row(window_ms: u64, interval_ms: u64) -> u64 {
    window_ms.div_ceil(interval_ms.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_fios() {
        let mut l = Logs {
            bw: Some("x".into()),
            hist: Some(String::new()),
            ..Logs::default()
        };
        let f = l.files("job");
        assert_eq!(
            f,
            [
                (LogKind::Bw, "x".to_string()),
                (LogKind::ClatHist, "job".to_string())
            ]
        );
        assert_eq!(l.file_name("x", LogKind::Bw, 2), "x_bw.2.log");
        assert_eq!(
            l.file_name("job", LogKind::ClatHist, 1),
            "job_clat_hist.1.log"
        );
        l.per_job = false;
        assert_eq!(l.file_name("x", LogKind::Slat, 3), "x_slat.log");
    }

    #[test]
    fn a_window_is_whole_intervals_rounded_up() {
        assert_eq!(intervals_per_row(1000, 333), 4);
        assert_eq!(intervals_per_row(0, 1000), 1);
        assert_eq!(intervals_per_row(1500, 500), 3);
    }
}
