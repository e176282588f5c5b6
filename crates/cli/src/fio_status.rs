//! `storlab fio --status-interval=TIME`: fio's periodic status of cumulative values, every
//! TIME of measurement, on stdout while the job files run. Each dump has, per group that has
//! measured (one storlab run), fio's group header and its `read:` and `write:` lines (IOPS,
//! bandwidth, bytes and time) over the measurement so far, counted from the collector's
//! intervals. Latency is not in the dumps: it is in the final report.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use storlab_engine::Watch;
use storlab_engine::collector::Progress;
use storlab_model::OpKind;
use storlab_report::fio_text::{binary, count, decimal};
use storlab_results::summary::RunSummary;
use storlab_study::plan::RunPlan;

/// Cumulative measured values of the group running now.
#[derive(Default)]
struct Sofar {
    run_index: usize,
    measured_ns: u64,
    next_dump_ns: u64,
    ops: [u64; OpKind::COUNT],
    bytes: [u64; OpKind::COUNT],
    errors: u64,
}

/// The console, with fio's status dumps added.
pub(super) struct FioStatus {
    inner: Box<dyn Watch>,
    every_ns: u64,
    /// Per group (run index - 1): the name fio's header gives it and its job count.
    groups: Vec<(String, u32)>,
    sofar: Mutex<Sofar>,
}

impl FioStatus {
    pub(super) fn new(inner: Box<dyn Watch>, every: Duration, groups: Vec<(String, u32)>) -> Self {
        let every_ns = (every.as_nanos() as u64).max(1);
        FioStatus {
            inner,
            every_ns,
            groups,
            sofar: Mutex::new(Sofar {
                next_dump_ns: every_ns,
                ..Sofar::default()
            }),
        }
    }
}

/// One dump: fio's header and direction lines of group `groupid` over what was measured.
fn dump(name: &str, jobs: u32, groupid: usize, s: &Sofar) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: (groupid={groupid}, jobs={jobs}): err={:2}: status after {} msec",
        s.errors,
        s.measured_ns / 1_000_000
    );
    let ms = (s.measured_ns / 1_000_000).max(1);
    for (label, kind) in [("read", OpKind::Read), ("write", OpKind::Write)] {
        let (ops, bytes) = (s.ops[kind as usize], s.bytes[kind as usize]);
        if ops == 0 {
            continue;
        }
        let bw = bytes as f64 * 1000.0 / ms as f64;
        let _ = writeln!(
            out,
            "  {label}: IOPS={}, BW={}/s ({}/s)({}/{ms}msec)",
            count(ops as f64 * 1000.0 / ms as f64),
            binary(bw),
            decimal(bw),
            binary(bytes as f64)
        );
    }
    out
}

impl FioStatus {
    /// Adds an interval; the dump text when a status time was crossed.
    fn add(&self, run_index: usize, p: &Progress) -> Option<String> {
        let mut s = self.sofar.lock().unwrap_or_else(|e| e.into_inner());
        if s.run_index != run_index {
            *s = Sofar {
                run_index,
                next_dump_ns: self.every_ns,
                ..Sofar::default()
            };
        }
        if p.index < 0 {
            return None;
        }
        s.measured_ns += p.span_ns;
        s.errors += p.errors;
        for k in 0..OpKind::COUNT {
            s.ops[k] += p.kind_ops[k];
            s.bytes[k] += p.kind_bytes[k];
        }
        if s.measured_ns < s.next_dump_ns {
            return None;
        }
        while s.next_dump_ns <= s.measured_ns {
            s.next_dump_ns += self.every_ns;
        }
        let g = run_index.saturating_sub(1);
        let (name, jobs) = self.groups.get(g).cloned().unwrap_or_default();
        Some(dump(&name, jobs, g, &s))
    }
}

impl Watch for FioStatus {
    fn progress(&self, run: &RunPlan, n_runs: usize, p: &Progress, interval_ns: u64) {
        self.inner.progress(run, n_runs, p, interval_ns);
        if let Some(text) = self.add(run.index, p) {
            print!("{text}");
        }
    }
    fn clear_progress(&self) {
        self.inner.clear_progress();
    }
    fn run_finished(&self, s: &RunSummary) {
        self.inner.run_finished(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Silent;
    impl Watch for Silent {
        fn progress(&self, _: &RunPlan, _: usize, _: &Progress, _: u64) {}
        fn clear_progress(&self) {}
        fn run_finished(&self, _: &RunSummary) {}
    }

    fn interval(index: i64, reads: u64) -> Progress {
        let mut kind_ops = [0; OpKind::COUNT];
        let mut kind_bytes = [0; OpKind::COUNT];
        kind_ops[OpKind::Read as usize] = reads;
        kind_bytes[OpKind::Read as usize] = reads * 4096;
        Progress {
            index,
            rate_ops: 0.0,
            rate_bytes: 0.0,
            p99_ns: 0,
            errors: 0,
            span_ns: 1_000_000_000,
            kind_ops,
            kind_bytes,
        }
    }

    #[test]
    fn dumps_cumulative_values_every_interval_asked() {
        let st = FioStatus::new(
            Box::new(Silent),
            Duration::from_secs(2),
            vec![("r".into(), 1), ("w".into(), 2)],
        );
        // The warm-up is not counted; a dump after 2 s and 4 s of measurement.
        assert_eq!(st.add(1, &interval(-1, 999)), None);
        assert_eq!(st.add(1, &interval(0, 1000)), None);
        let d = st.add(1, &interval(1, 3000)).unwrap();
        assert_eq!(
            d,
            "r: (groupid=0, jobs=1): err= 0: status after 2000 msec\n  read: IOPS=2000, BW=7.81MiB/s (8.19MB/s)(15.6MiB/2000msec)\n"
        );
        assert_eq!(st.add(1, &interval(2, 10)), None);
        assert!(
            st.add(1, &interval(3, 10))
                .unwrap()
                .contains("(15.7MiB/4000msec)")
        );
        // The next group starts from nothing.
        assert_eq!(st.add(2, &interval(0, 5)), None);
        let d = st.add(2, &interval(1, 5)).unwrap();
        assert!(d.starts_with("w: (groupid=1, jobs=2)"), "{d}");
        assert!(d.contains("read: IOPS=5,"), "{d}");
    }
}
