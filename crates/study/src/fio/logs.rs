//! fio's log options: `write_bw_log`, `write_iops_log`, `write_lat_log`, `write_hist_log`,
//! `log_avg_msec`, `log_hist_msec`, `per_job_logs`. storlab writes fio's log files after the
//! run from the stored timeline and HDR interval log (report::fio_logs), one row per window of
//! whole study intervals: `log_avg_msec` and `log_hist_msec` set the study's `interval`
//! (with the rate_min cycles) so that a window is whole intervals. Without `log_avg_msec` fio
//! logs every I/O; storlab keeps no per-I/O record, so it writes one averaged row per
//! interval and says so.

use super::job::Job;
use super::parse::{Entry, parse_bool};
use storlab_model::fio_jobs::intervals_per_row;

/// storlab's default interval, ms (the study's `interval` when not set).
pub const DEFAULT_INTERVAL_MS: u64 = 1000;
/// The shortest study interval storlab takes, ms.
pub const LEAST_INTERVAL_MS: u64 = 10;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The study interval, ms, that makes every window given (log windows, rate_min cycles)
/// whole intervals: their greatest common divisor with storlab's 1 s (so that a second is
/// still whole intervals), at least 10 ms; when that is below 10 ms, the shortest window (at
/// least 10 ms) and the others are rounded up to whole intervals. None: storlab's 1 s.
pub fn study_interval_ms(windows_ms: &[u64]) -> Option<u64> {
    let windows: Vec<u64> = windows_ms.iter().copied().filter(|&w| w > 0).collect();
    let g = windows.iter().fold(DEFAULT_INTERVAL_MS, |g, &w| gcd(g, w));
    let ms = if g >= LEAST_INTERVAL_MS {
        g
    } else {
        windows
            .iter()
            .copied()
            .min()
            .unwrap_or(DEFAULT_INTERVAL_MS)
            .clamp(LEAST_INTERVAL_MS, DEFAULT_INTERVAL_MS)
    };
    (ms != DEFAULT_INTERVAL_MS).then_some(ms)
}

/// What storlab writes otherwise than fio for `job`'s logs, at the study's interval.
pub fn notes(job: &Job, interval_ms: u64) -> Vec<String> {
    let l = &job.logs;
    let mut notes = Vec::new();
    let name = &job.name;
    if (l.bw.is_some() || l.iops.is_some() || l.lat.is_some()) && l.avg_ms == 0 {
        notes.push(format!(
            "job `{name}`: without log_avg_msec fio logs every I/O; storlab keeps no per-I/O record: its logs have one row per interval ({interval_ms} ms), the interval's mean"
        ));
    }
    if l.offset && l.any() {
        notes.push(format!(
            "job `{name}`: log_offset=1: the offset column is 0 on every row, as fio writes it on rows averaged over log_avg_msec (storlab's rows are averaged)"
        ));
    }
    for (what, ms) in [("log_avg_msec", l.avg_ms), ("log_hist_msec", l.hist_ms)] {
        if ms > 0 && ms % interval_ms != 0 {
            let rounded = intervals_per_row(ms, interval_ms) * interval_ms;
            notes.push(format!(
                "job `{name}`: {what}={ms} is not whole intervals of {interval_ms} ms: its rows are {rounded} ms"
            ));
        }
    }
    if l.hist.is_some() && l.hist_ms == 0 {
        notes.push(format!(
            "job `{name}`: write_hist_log without log_hist_msec: its histogram logs are empty, as fio's"
        ));
    }
    if l.lat.is_some() {
        notes.push(format!(
            "job `{name}`: write_lat_log: storlab times each I/O from submission to completion: its _clat and _lat logs both hold that time, and its _slat logs are empty (as fio's for engines without a submission latency)"
        ));
    }
    if l.any() && job.clones_as_threads() && job.numjobs > 1 {
        notes.push(format!(
            "job `{name}`: its {} clones share one file and storlab measures them together: each clone's log holds the mean clone (bandwidth and IOPS over {}, the clones' latency, histogram counts shared out)",
            job.numjobs, job.numjobs
        ));
    }
    notes
}

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

fn msec(e: &Entry) -> Result<u64, String> {
    let v = e.value.as_deref().unwrap_or("");
    v.trim()
        .parse()
        .map_err(|_| format!("{}={v}: expected whole milliseconds", e.name))
}

/// Applies a log option to `job`. False when `name` is none.
pub fn apply_logs(job: &mut Job, e: &Entry, name: &str) -> Result<bool, String> {
    let prefix = || e.value.clone().unwrap_or_default();
    let l = &mut job.logs;
    match name {
        "write_bw_log" => l.bw = Some(prefix()),
        "write_iops_log" => l.iops = Some(prefix()),
        "write_lat_log" => l.lat = Some(prefix()),
        "write_hist_log" => l.hist = Some(prefix()),
        "log_avg_msec" => l.avg_ms = msec(e)?,
        "log_hist_msec" => l.hist_ms = msec(e)?,
        "per_job_logs" => l.per_job = flag(e)?,
        "log_offset" => l.offset = flag(e)?,
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> super::super::FioPlan {
        let f = super::super::from_text("job.fio", text, &|_| None).unwrap();
        super::super::plan::build(vec![f]).unwrap()
    }

    #[test]
    fn log_windows_set_the_study_interval_and_what_differs_from_fio_is_said() {
        let p = plan(
            "[global]\nioengine=null\nsize=1m\n[a]\nwrite_bw_log=x\nlog_avg_msec=250\nwrite_hist_log\nlog_hist_msec=1500\n",
        );
        assert!(
            p.study_text.contains("interval = \"250ms\""),
            "{}",
            p.study_text
        );
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        let p = plan(
            "[global]\nioengine=null\nsize=1m\nnumjobs=2\nfilename=/tmp/x\n[a]\nwrite_lat_log\nwrite_hist_log\nper_job_logs=0\n",
        );
        assert!(!p.study_text.contains("interval ="), "{}", p.study_text);
        let said = p.notes.join("\n");
        for s in [
            "without log_avg_msec fio logs every I/O; storlab keeps no per-I/O record: its logs have one row per interval (1000 ms)",
            "write_hist_log without log_hist_msec",
            "_slat logs are empty",
            "each clone's log holds the mean clone",
        ] {
            assert!(said.contains(s), "{s}: {said}");
        }
        assert!(!p.jobs[0].logs.per_job);
        let p = plan(
            "[a]\nioengine=null\nsize=1m\nwrite_iops_log\nlog_avg_msec=333\nrate_min=1\nrate_cycle=1000\n",
        );
        assert!(
            p.study_text.contains("interval = \"333ms\""),
            "{}",
            p.study_text
        );
        assert!(
            p.notes
                .iter()
                .all(|n| !n.contains("log_avg_msec=333 is not whole")),
            "{:?}",
            p.notes
        );
        let p = plan("[a]\nioengine=null\nsize=1m\nwrite_iops_log\nlog_avg_msec=3\n");
        assert!(
            p.study_text.contains("interval = \"10ms\""),
            "{}",
            p.study_text
        );
        assert!(
            p.notes.iter().any(|n| n
                .contains("log_avg_msec=3 is not whole intervals of 10 ms: its rows are 10 ms")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn the_interval_makes_every_window_whole_intervals() {
        assert_eq!(study_interval_ms(&[]), None);
        assert_eq!(study_interval_ms(&[500]), Some(500));
        assert_eq!(study_interval_ms(&[2000]), None);
        // 1500 ms rows: 500 ms intervals, so that a second is whole intervals too.
        assert_eq!(study_interval_ms(&[1500]), Some(500));
        assert_eq!(study_interval_ms(&[250, 100]), Some(50));
        // 333 and 1000 have no common divisor of 10 ms or more: the shortest window.
        assert_eq!(study_interval_ms(&[333]), Some(333));
        assert_eq!(study_interval_ms(&[3]), Some(10));
        assert_eq!(intervals_per_row(1000, 333), 4);
        assert_eq!(intervals_per_row(0, 1000), 1);
        assert_eq!(intervals_per_row(1500, 500), 3);
    }
}
