//! Rank 0 of a distributed run: keeps its own share of the workers, hears every other rank's
//! opening (host, clock offset, system capture), agrees the start, receives the other ranks'
//! intervals on its own thread and feeds them to the collector its own workers feed, stops
//! every rank for the stonewall, steady state or an interruption, notices a rank that went
//! silent, and adds the ranks' tables, systems and histograms to the run's results.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

use super::comm::{Dist, current};
use super::wire::{
    self, Final, Hello, Stop, TAG_DONE, TAG_FINAL, TAG_HELLO, TAG_INTERVAL, TAG_STOP,
};
use super::{assign_workers, keep_share};
use crate::RunError;
use crate::collector::Collected;
use crate::setup::Workers;
use crate::worker::{Clock, Control, WorkerOutcome};
use storlab_record::totals::{KindTotals, merge};
use storlab_record::{EndReason, Interval, new_histogram, thread_cpu_ns};
use storlab_results::RunFolder;
use storlab_results::distributed::{
    DistributedResult, GatherCost, RankResult, Stonewall, host_rows,
};
use storlab_results::summary::{RunStatus, RunSummary};
use storlab_study::plan::RunPlan;
use storlab_targets::TargetError;

/// Ping-pongs per rank for the clock offset.
pub(super) const PINGS: u32 = 16;
/// How long after the agreement every rank starts.
pub(super) const START_IN: Duration = Duration::from_millis(200);
/// After rank 0 is interrupted, how long it waits for the others' last intervals.
const INTERRUPT_GRACE: Duration = Duration::from_millis(300);

/// Rank 0's side of one distributed run.
pub struct Rank0Run {
    dist: &'static Dist,
    assignment: Vec<u32>,
    hellos: Vec<Hello>,
    /// Rank 0's start: wall clock ns, run clock ns.
    start: OnceLock<(i64, u64)>,
    stonewall: bool,
    run_index: usize,
    interval_ns: u64,
    warmup_ns: u64,
}

/// What rank 0's receiving thread heard.
pub struct Received {
    ranks: Vec<RankState>,
    stonewall: Option<(u32, u64)>,
    cpu_ns: u64,
    intervals: u64,
}

#[derive(Default)]
struct RankState {
    workers: usize,
    lasts: usize,
    /// Per worker of this rank that has not sent its last: (global index, target, last index
    /// seen, its end on the run clock).
    open: BTreeMap<u32, (u32, i64, u64)>,
    final_: Option<Final>,
    lost_at_ns: Option<u64>,
    last_heard: Option<Instant>,
    last_heard_ns: u64,
    bytes: u64,
}

impl RankState {
    /// Lost, or has sent its end and every worker's last interval.
    fn done(&self) -> bool {
        self.lost_at_ns.is_some() || (self.final_.is_some() && self.lasts >= self.workers)
    }

    /// A message of `bytes` bytes arrived from this rank.
    fn heard(&mut self, bytes: usize, clock: &Clock) {
        self.bytes += bytes as u64;
        self.last_heard = Some(Instant::now());
        self.last_heard_ns = clock.now_ns();
    }
}

/// The stops rank 0 has sent during one run.
#[derive(Default)]
struct Stops {
    /// The rank that finished first and when (run clock, ns).
    stonewall: Option<(u32, u64)>,
    stop_sent: bool,
    steady_sent: bool,
    interrupted_at: Option<Instant>,
}

/// Ranks not heard from for `stale` (or, once the grace after an interruption is over, any
/// not done) are lost: their open workers' last intervals are made up, empty, so that the
/// collector finishes with what they sent.
fn lose_silent(
    ranks: &mut [RankState],
    tx: &SyncSender<Box<Interval>>,
    stale: Duration,
    grace_over: bool,
) {
    let now = Instant::now();
    for s in ranks.iter_mut().skip(1) {
        if s.done() {
            continue;
        }
        let heard = *s.last_heard.get_or_insert(now);
        if grace_over || now.duration_since(heard) > stale {
            s.lost_at_ns = Some(s.last_heard_ns.max(1));
            for (w, (t, index, end)) in std::mem::take(&mut s.open) {
                let mut iv = Interval::new(w, t, &[], false);
                // Past every second: the collector adds nothing and writes no row for it.
                let _ = index;
                iv.index = i64::MAX;
                iv.start_ns = end;
                iv.end_ns = end;
                iv.last = true;
                let _ = tx.send(iv);
            }
        }
    }
}

impl Rank0Run {
    /// When running as rank 0 of an MPI job: keeps rank 0's share of `workers` and hears
    /// every other rank's opening. `system`: rank 0's own system capture.
    pub fn begin(
        run: &RunPlan,
        workers: &mut Workers,
        system: serde_json::Value,
    ) -> Result<Option<Rank0Run>, RunError> {
        let Some(dist) = current() else {
            return Ok(None);
        };
        let assignment = assign_workers(run, &dist.hosts).map_err(placement)?;
        keep_share(workers, &assignment, 0);
        let mut hellos = vec![Hello {
            rank: 0,
            host: dist.host().to_string(),
            pid: std::process::id(),
            clock_offset_ns: 0,
            clock_rtt_ns: 0,
            system,
            error: None,
        }];
        for r in 1..dist.size {
            dist.serve_offset(r, PINGS);
            let bytes = dist.receive(r, TAG_HELLO);
            let hello: Hello = serde_json::from_slice(&bytes).map_err(|e| {
                RunError::Thread(std::io::Error::other(format!(
                    "rank {r}'s opening message: {e}"
                )))
            })?;
            hellos.push(hello);
        }
        Ok(Some(Rank0Run {
            dist,
            assignment,
            hellos,
            start: OnceLock::new(),
            stonewall: run.stonewall,
            run_index: run.index,
            interval_ns: run.interval.0.as_nanos() as u64,
            warmup_ns: run.warmup.0.as_nanos() as u64,
        }))
    }

    /// Per worker (global index): its rank.
    pub fn assignment(&self) -> &[u32] {
        &self.assignment
    }

    /// A rank whose targets could not be prepared: the first, and why.
    pub fn remote_error(&self) -> Option<(u32, String)> {
        self.hellos
            .iter()
            .find_map(|h| h.error.clone().map(|e| (h.rank, e)))
    }

    /// Joins every rank's agreement on the start (`ok`: this rank's sessions all opened);
    /// returns rank 0's start on its run clock.
    pub fn agree(&self, ok: bool, clock: &Clock) -> Option<u64> {
        let ok = ok && self.remote_error().is_none();
        let (wall, start_ns) = self.dist.agree_start(ok, clock.now_ns(), START_IN)?;
        let _ = self.start.set((wall, start_ns));
        Some(start_ns)
    }

    /// Rank 0's receiving thread: until every other rank has sent its last intervals and its
    /// end (or went silent), feeds their intervals into `tx` (the collector's channel).
    /// `local_fg_done` counts rank 0's own targets' workers that have ended.
    pub fn receive(
        &self,
        tx: SyncSender<Box<Interval>>,
        control: &Control,
        clock: &Clock,
        local_fg_done: &AtomicUsize,
        local_fg: usize,
    ) -> Received {
        let cpu0 = thread_cpu_ns();
        let mut ranks = self.rank_states();
        let mut de = Deserializer::new();
        let mut stops = Stops::default();
        let mut intervals = 0u64;
        let stale = Duration::from_nanos(3 * self.interval_ns) + Duration::from_secs(2);
        loop {
            let got_intervals =
                self.take_intervals(&mut ranks, &mut de, &tx, clock, &mut intervals);
            let got_finals = self.take_finals(&mut ranks, clock);
            let busy = got_intervals || got_finals;
            let mut first_done = None;
            while let Some((r, bytes)) = self.dist.try_receive_any(TAG_DONE) {
                if bytes == (self.run_index as u64).to_le_bytes() {
                    first_done.get_or_insert(r);
                }
            }
            if local_fg > 0 && local_fg_done.load(Ordering::Relaxed) >= local_fg {
                first_done.get_or_insert(0);
            }
            let started = self.start.get().is_some();
            self.send_stops(&mut stops, &ranks, first_done, started, control, clock);
            // Silent ranks are lost: their workers' last intervals are made up, empty, so that
            // the collector finishes with what they sent.
            let grace_over = stops.interrupted_at.is_some_and(|t| {
                t.elapsed() > INTERRUPT_GRACE && local_fg_done.load(Ordering::Relaxed) >= local_fg
            });
            if started {
                lose_silent(&mut ranks, &tx, stale, grace_over);
            }
            if ranks.iter().skip(1).all(RankState::done) {
                break;
            }
            if !busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Received {
            ranks,
            stonewall: stops.stonewall,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu0),
            intervals,
        }
    }

    /// Per rank: the workers it runs, all still open.
    fn rank_states(&self) -> Vec<RankState> {
        let n = self.dist.size as usize;
        let mut ranks: Vec<RankState> = (0..n).map(|_| RankState::default()).collect();
        for (w, r) in self.assignment.iter().enumerate() {
            let s = &mut ranks[*r as usize];
            s.workers += 1;
            s.open.insert(w as u32, (0, i64::MIN, 0));
        }
        ranks
    }

    /// Feeds every interval the other ranks have sent into `tx`; true if there was any.
    fn take_intervals(
        &self,
        ranks: &mut [RankState],
        de: &mut Deserializer,
        tx: &SyncSender<Box<Interval>>,
        clock: &Clock,
        intervals: &mut u64,
    ) -> bool {
        let mut busy = false;
        while let Some((r, bytes)) = self.dist.try_receive_any(TAG_INTERVAL) {
            busy = true;
            let s = &mut ranks[r as usize];
            s.heard(bytes.len(), clock);
            if s.lost_at_ns.is_some() {
                continue;
            }
            match wire::decode_interval(&bytes, r, de) {
                Ok(iv) => {
                    *intervals += 1;
                    if iv.last {
                        s.lasts += 1;
                        s.open.remove(&iv.worker);
                    } else if let Some(o) = s.open.get_mut(&iv.worker) {
                        *o = (iv.target, iv.index, iv.end_ns);
                    }
                    if tx.send(iv).is_err() {
                        break;
                    }
                }
                Err(e) => eprintln!("storlab rank 0: {e}"),
            }
        }
        busy
    }

    /// Keeps every end report the other ranks have sent; true if there was any.
    fn take_finals(&self, ranks: &mut [RankState], clock: &Clock) -> bool {
        let mut busy = false;
        while let Some((r, bytes)) = self.dist.try_receive_any(TAG_FINAL) {
            busy = true;
            let s = &mut ranks[r as usize];
            s.heard(bytes.len(), clock);
            match serde_json::from_slice::<Final>(&bytes) {
                Ok(f) => s.final_ = Some(f),
                Err(e) => eprintln!("storlab rank 0: rank {r}'s end report: {e}"),
            }
        }
        busy
    }

    /// Stops every rank, once: for the stonewall (`first_done`: the first rank whose
    /// targets' workers have all ended), steady state, or an interruption.
    fn send_stops(
        &self,
        stops: &mut Stops,
        ranks: &[RankState],
        first_done: Option<u32>,
        started: bool,
        control: &Control,
        clock: &Clock,
    ) {
        if self.stonewall
            && stops.stonewall.is_none()
            && !stops.stop_sent
            && started
            && let Some(r) = first_done
        {
            stops.stonewall = Some((r, clock.now_ns()));
            control.stonewall.store(true, Ordering::Relaxed);
            self.stop_all(ranks, Stop::Stonewall);
            stops.stop_sent = true;
        }
        // Steady state is judged on rank 0 from every rank's merged intervals: it stops
        // every rank, as the stonewall does.
        if !stops.steady_sent && control.steady_state.load(Ordering::Relaxed) {
            self.stop_all(ranks, Stop::SteadyState);
            stops.steady_sent = true;
        }
        if control.interrupted.load(Ordering::Relaxed) && stops.interrupted_at.is_none() {
            stops.interrupted_at = Some(Instant::now());
            self.stop_all(ranks, Stop::Interrupted);
        }
    }

    fn stop_all(&self, ranks: &[RankState], stop: Stop) {
        let bytes = serde_json::to_vec(&(self.run_index, stop)).expect("a stop serializes");
        for (r, s) in ranks.iter().enumerate().skip(1) {
            if !s.done() {
                self.dist.send(r as u32, TAG_STOP, &bytes);
            }
        }
    }

    /// Adds the other ranks' workers' ends (times already on rank 0's clock) and CPU time;
    /// returns the sessions they could not open.
    /// The other ranks' accelerators, added to rank 0's own (per training target).
    pub fn merge_training(
        &self,
        received: &Received,
        training: &mut Vec<(usize, Vec<storlab_model::training::AcceleratorSteps>)>,
    ) {
        for s in received.ranks.iter().skip(1) {
            let Some(f) = &s.final_ else { continue };
            for (target, steps) in &f.training {
                match training.iter_mut().find(|(t, _)| t == target) {
                    Some((_, mine)) => mine.extend(steps.iter().cloned()),
                    None => training.push((*target, steps.clone())),
                }
            }
        }
    }

    pub fn merge_outcomes(
        &self,
        received: &Received,
        outcomes: &mut Vec<WorkerOutcome>,
        cpu_used_ns: &mut u64,
    ) -> Vec<(String, TargetError)> {
        let mut errors = Vec::new();
        for (r, s) in received.ranks.iter().enumerate().skip(1) {
            let Some(f) = &s.final_ else { continue };
            *cpu_used_ns += f.cpu_used_ns;
            for w in &f.workers {
                if let Some(e) = &w.open_error {
                    errors.push((
                        format!("rank {r} ({})", self.dist.hosts[r]),
                        TargetError::Invalid(e.clone()),
                    ));
                    continue;
                }
                outcomes.push(WorkerOutcome {
                    worker: w.worker,
                    end_reason: w.end_reason,
                    measured_ops: w.measured_ops,
                    measure_start_ns: w.measure_start_ns,
                    last_completion_ns: w.last_completion_ns,
                    spare_waits: w.spare_waits,
                    spare_wait_ns: w.spare_wait_ns,
                    skipped_starts: w.skipped_starts,
                    fatal: None,
                    used: w.used.iter().map(|(k, v)| (intern(k), v.clone())).collect(),
                    latency_search: None,
                    pinned_cpus: w.pinned_cpus.clone(),
                });
            }
        }
        outcomes.sort_by_key(|o| o.worker);
        errors
    }

    /// Adds the ranks' tables, systems and histograms to the run's results; a lost rank
    /// makes the run partial.
    pub fn finish(
        &self,
        received: &Received,
        collected: &Collected,
        run: &RunPlan,
        summary: &mut RunSummary,
        folder: &RunFolder,
    ) -> Result<(), storlab_results::write::WriteError> {
        let secs = summary.measured_seconds.max(1e-9);
        let measure_start_ns = self.start.get().map_or(0, |s| s.1) + self.warmup_ns;
        let since_measure = |ns: u64| (ns as i64 - measure_start_ns as i64) as f64 / 1e9;
        let mut rank_hist: Vec<Histogram<u64>> = Vec::new();
        let mut ranks = Vec::new();
        let mut log_entries: Vec<(String, &Histogram<u64>)> = Vec::new();
        for (r, s) in received.ranks.iter().enumerate() {
            let (row, all) = self.rank_row(r, s, collected, run, secs, &mut log_entries);
            ranks.push(RankResult {
                last_heard_seconds: s.lost_at_ns.map(since_measure),
                ..row
            });
            rank_hist.push(all);
            storlab_results::write_json_file(
                &folder
                    .path
                    .join(storlab_results::distributed::system_file(r as u32)),
                &self.hellos[r].system,
            )?;
        }
        let mut by_host: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
        for (r, h) in ranks.iter().zip(&rank_hist) {
            merge(
                by_host.entry(r.host.clone()).or_insert_with(new_histogram),
                h,
            );
        }
        let gather = gather_cost(&ranks, received, collected);
        mark_lost(&ranks, summary);
        self.client_cpus(summary);
        let stonewall = received.stonewall.map(|(first, at)| Stonewall {
            first_rank: first,
            at_seconds: since_measure(at),
        });
        if let Some(s) = &stonewall {
            summary.events.push(storlab_results::events::Event::mark(
                s.at_seconds,
                "stonewall",
                format!(
                    "rank {} finished its operations first: every rank stopped",
                    s.first_rank
                ),
            ));
        }
        summary.distributed = Some(DistributedResult {
            ranks_total: self.dist.size,
            hosts: host_rows(&ranks, &by_host, secs),
            ranks,
            stonewall,
            gather,
        });
        write_ranks_log(folder, &log_entries, secs)
    }

    /// Rank `r`'s row (`last_heard_seconds` left out) and its measured histogram; adds its
    /// histograms per target and operation to `log_entries`.
    fn rank_row<'c>(
        &self,
        r: usize,
        s: &RankState,
        collected: &'c Collected,
        run: &RunPlan,
        secs: f64,
        log_entries: &mut Vec<(String, &'c Histogram<u64>)>,
    ) -> (RankResult, Histogram<u64>) {
        let hello = &self.hellos[r];
        let mut all = new_histogram::<u64>();
        let (mut ops, mut bytes, mut errors) = (0, 0, 0);
        if let Some(per_target) = collected.group_totals.get(r) {
            for (t, kinds) in per_target.iter().enumerate().take(run.targets.len()) {
                for (k, kt) in kinds.iter().enumerate() {
                    let Some(kt) = kt else { continue };
                    let kt: &KindTotals = kt;
                    merge(&mut all, &kt.service);
                    ops += kt.ops;
                    bytes += kt.bytes;
                    errors += kt.error_count();
                    let tag = format!(
                        "rank-{r}.{}.{}",
                        run.targets[t].name.replace([' ', ',', '='], "_"),
                        storlab_model::OpKind::ALL[k].name()
                    );
                    log_entries.push((tag, &kt.service));
                }
            }
        }
        let sent = if r == 0 { 0 } else { s.bytes };
        let lost = s.lost_at_ns.is_some();
        let row = RankResult {
            rank: r as u32,
            host: hello.host.clone(),
            pid: hello.pid,
            workers: self
                .assignment
                .iter()
                .enumerate()
                .filter(|(_, a)| **a as usize == r)
                .map(|(w, _)| w as u32)
                .collect(),
            clock_offset_ns: hello.clock_offset_ns,
            clock_rtt_ns: hello.clock_rtt_ns,
            status: if lost { "lost" } else { "complete" }.into(),
            last_heard_seconds: None,
            ops,
            bytes,
            errors,
            rate_ops: ops as f64 / secs,
            service_latency: storlab_record::summary::LatencySummary::from_histogram(&all),
            bytes_sent: sent,
            bytes_sent_per_second: sent as f64 / secs,
            messages_sent: s.final_.as_ref().map_or(0, |f| f.messages_sent + 1),
        };
        (row, all)
    }
}

/// What gathering the other ranks' intervals cost rank 0.
fn gather_cost(ranks: &[RankResult], received: &Received, collected: &Collected) -> GatherCost {
    let others: Vec<&RankResult> = ranks.iter().skip(1).collect();
    GatherCost {
        bytes_per_rank_per_second: if others.is_empty() {
            0.0
        } else {
            others.iter().map(|r| r.bytes_sent_per_second).sum::<f64>() / others.len() as f64
        },
        receive_cpu_seconds: received.cpu_ns as f64 / 1e9,
        merge_cpu_seconds: collected.cpu_ns as f64 / 1e9,
        intervals_received: received.intervals,
    }
}

/// A lost rank makes the run partial, with a warning naming it.
fn mark_lost(ranks: &[RankResult], summary: &mut RunSummary) {
    for r in ranks.iter().filter(|r| r.status == "lost") {
        summary.status = RunStatus::Partial;
        if summary.end_reason != EndReason::Error {
            summary.end_reason = EndReason::Interrupted;
        }
        summary.warnings.push(format!(
            "partial run: rank {} on host {} (pid {}) was lost: rank 0 last heard from it {:.2} s after the start of measurement; what it sent until then is kept",
            r.rank,
            r.host,
            r.pid,
            r.last_heard_seconds.unwrap_or(0.0)
        ));
    }
}

impl Rank0Run {
    /// The client's CPU use is every rank's: over the logical CPUs of every host (each
    /// host's counted once), not rank 0's alone.
    fn client_cpus(&self, summary: &mut RunSummary) {
        let mut per_host: BTreeMap<&str, u32> = BTreeMap::new();
        for h in &self.hellos {
            let cpus = h.system["cpu"]["logical-cpus"].as_u64().unwrap_or(0) as u32;
            per_host.insert(&h.host, cpus);
        }
        let cpus: u32 = per_host.values().sum();
        let c = &mut summary.client;
        if cpus <= c.logical_cpus {
            return;
        }
        c.logical_cpus = cpus;
        let cpu_bound = c.worker_busy_max >= 0.9 || c.cpu_cores_used >= 0.9 * cpus as f64;
        if c.saturated && !cpu_bound {
            c.saturated = false;
            summary
                .warnings
                .retain(|w| !w.starts_with("storlab itself was saturated"));
        }
    }
}

/// Keys of what sessions used, as `&'static str` (each distinct key is kept once).
fn intern(key: &str) -> &'static str {
    static KEYS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = keys.iter().find(|k| **k == key) {
        return k;
    }
    let k: &'static str = Box::leak(key.to_string().into_boxed_str());
    keys.push(k);
    k
}

fn placement(e: super::DistError) -> RunError {
    RunError::Target {
        target: "distributed".into(),
        source: TargetError::Invalid(e.to_string()),
    }
}

/// Each rank's measured histograms, one interval-log entry per rank, target and operation.
fn write_ranks_log(
    folder: &RunFolder,
    entries: &[(String, &Histogram<u64>)],
    secs: f64,
) -> Result<(), storlab_results::write::WriteError> {
    let path = folder.path.join(storlab_results::distributed::RANKS_HLOG);
    write_log(&path, entries, secs).map_err(|e| storlab_results::write::WriteError::new(&path, e))
}

fn write_log(
    path: &std::path::Path,
    entries: &[(String, &Histogram<u64>)],
    secs: f64,
) -> std::io::Result<()> {
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut ser = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment("storlab: each rank's measured histograms; tags are rank-N.target.op");
    let mut log = builder.begin_log_with(&mut file, &mut ser)?;
    for (tag, h) in entries {
        log.write_histogram(
            h,
            Duration::ZERO,
            Duration::from_secs_f64(secs),
            Tag::new(tag),
        )
        .map_err(|e| match e {
            hdrhistogram::serialization::interval_log::IntervalLogWriterError::IoError(e) => e,
            e => std::io::Error::other(format!("{e:?}")),
        })?;
    }
    drop(log);
    std::io::Write::flush(&mut file)
}
