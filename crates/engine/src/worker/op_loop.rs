//! The worker loop as one value: [`OpLoop`] holds the session, what is in flight, what decides
//! the next start ([`Issuer`]), what is recorded and why the loop stops; its methods are the
//! loop's steps.
//!
//! Each operation is timed from a clock reading taken right before its own `submit`: one the
//! session executes on the spot ([`Submitted::Done`]) is timed alone, to a reading right
//! after; a queued one, to the reading taken when its completion is reaped. A session whose
//! queued operations all start in its next `complete` (one system call for them, or none:
//! [`Session::starts_in_complete`]) gets one reading for all it queues between two calls,
//! taken before the first of them; the others, a reading before each `submit`. Operations run
//! alone back to back share the reading between them: the one that ends an operation starts
//! the next (whose time then also holds its own draw and the loop's checks), so each is
//! still timed from after the one before it ended, with one reading per operation. Before an
//! operation that the target runs alone while others are queued (a read on a target that
//! batches only inserts), what is queued is reaped first, so neither waits for the other.
//!
//! A delay the source asks for before its next operation: an IOmeter burst's delay (held at
//! once, while what is in flight completes), or fio's think time
//! ([`storlab_workload::block::pattern`]): what is in flight completes first (fio's `io_u_quiesce`),
//! then the worker waits, spinning its first `thinktime_spin`; with `rate_ignore_thinktime`
//! an open loop's starts that fall in the wait are dropped, not caught up. Only a source that
//! may give a delay is asked (decided once per worker).
//!
//! A plain worker (`is_plain`: a closed loop with no latency search, start delay, schedule,
//! flow, source delays or inserts, on a target that queues every kind) runs the same loop
//! compiled with `PLAIN` true, each of those features' checks a constant false; picked once,
//! as the worker starts (`run_loop`).
//!
//! The loop's cost was measured as it became one value (cachegrind, instructions per
//! operation of a closed-loop `null` study, 4 KiB random 70% reads; the free functions it
//! replaced: 339.7 at queue depth 1, 376.1 at 32). Every method but `new` and `finish` is
//! `#[inline(always)]`, the rare ones marked cold inside (`cold_path`): 346.8 and 374.5.
//! With `rotate`, `poll`, `lost` and `refused` out of line instead (`#[cold]`, taking `&mut
//! self`): 350.2 and 381.1; with `finish` inlined too, the histogram's record went out of line
//! in the grown function: 337.0 and 399.0.
//!
//! The successes one reap saw are recorded in runs of equal figures ([`OkRuns`]): queued
//! together and reaped together, they share both readings, and a run's histogram bucket is
//! looked up once (callgrind, the worker thread, 2 M operations of the study above: 303.4
//! instructions per operation at queue depth 32 before, 262.9 after; 281.0 and 284.0 at 1).

use std::sync::atomic::Ordering;

use super::issuer::{Issuer, NO_CHAIN, Timing};
use super::latency::LatencyRun;
use super::{
    Clock, Control, EndReason, Worker, WorkerConfig, WorkerOutcome, spin_until, wait_until,
};
use storlab_model::latency_target::Verdict;
use storlab_model::{OpError, OpKind};
use storlab_record::{OkRuns, Recorder, thread_cpu_ns};
use storlab_targets::{Completions, Overlap, Session, Submitted};
use storlab_workload::Source;

/// How often the loop polls the stop flags and publishes its completed operations, ns.
const POLL_NS: u64 = 10_000_000;

/// One slot's operation in flight: when it started, when it was intended to, what it was.
#[derive(Debug, Clone, Copy, Default)]
struct SlotInfo {
    start_ns: u64,
    intended_ns: u64,
    /// A YCSB insert's key number, acknowledged when it completes (u64::MAX: none).
    insert_key: u64,
    kind_index: u8,
    measured: bool,
}

/// One worker's loop: its session, its operations in flight and everything it counts.
///
/// `PLAIN`: the worker was found plain once, as it started ([`is_plain`]): a closed loop
/// with no latency search, start delay, schedule, flow, source delays or inserts, on a
/// target that queues every kind. Its loop is compiled without the checks those need: each
/// is `!PLAIN && ...`, a constant false in the plain loop.
pub(super) struct OpLoop<'a, S, const PLAIN: bool> {
    session: S,
    clock: Clock,
    cfg: WorkerConfig,
    control: &'a Control,
    recorder: Recorder,
    source: Source,
    is: Issuer,
    timing: Timing,
    /// Open loop: starts come from a pacer (decided once).
    open: bool,
    /// The session's queued operations start in its `complete`: one reading serves all
    /// queued between two calls (decided once).
    shared_start: bool,
    /// The slots' start stamps; the free slots; how many are in flight; completions reaped.
    slots: Vec<SlotInfo>,
    free: Vec<u32>,
    outstanding: usize,
    done: Completions,
    /// The last clock reading, run clock, ns.
    now: u64,
    /// The current interval (negative: warm-up), where it ends, and when to poll next.
    index: i64,
    next_boundary: u64,
    next_poll: u64,
    /// The thread's CPU time at the start of the interval, and the time spent spinning
    /// since while waiting for the next intended start (not work), ns.
    cpu_mark: u64,
    spin_ns: u64,
    /// Measured operations completed that the run's count already has.
    published_ops: u64,
    issuing: bool,
    end_reason: EndReason,
    last_completion: u64,
    fatal: Option<(OpKind, OpError)>,
    search: Option<LatencyRun>,
}

impl<'a, S: Session, const PLAIN: bool> OpLoop<'a, S, PLAIN> {
    /// The loop of worker `w` over `session`, for a run (warm-up first) that begins at
    /// `start_ns` on the run clock. Waits for that start: workers are released a little
    /// before it, and the clock must never read earlier (operations would otherwise count as
    /// warm-up, or their times go negative).
    #[cold]
    pub(super) fn new(session: S, w: Worker<'a>, start_ns: u64) -> OpLoop<'a, S, PLAIN> {
        let Worker {
            config: cfg,
            clock,
            control,
            source,
            recorder,
            rate_changes,
            flow,
            ..
        } = w;
        if cfg.rate_ops.is_some() {
            tight_timer_slack();
        }
        let measure_start = start_ns.saturating_add(cfg.warmup_ns);
        let timing = Timing {
            start_ns,
            measure_start,
            interval: cfg.interval_ns.max(1),
        };
        // Its bounds, after a start delay if any, are set once here (see `Issuer::new`).
        let is = Issuer::new(&cfg, timing, rate_changes, source.may_delay(), flow);
        let qd = cfg.queue_depth.max(1) as usize;
        wait_until(&clock, start_ns);
        let now = clock.now_ns().max(start_ns);
        let index = timing.index_at(now);
        OpLoop {
            shared_start: session.starts_in_complete(),
            session,
            open: is.pacer.is_some(),
            search: LatencyRun::for_config(&cfg, is.measure_start),
            is,
            timing,
            slots: vec![SlotInfo::default(); qd],
            free: (0..qd as u32).rev().collect(),
            outstanding: 0,
            done: Completions::with_capacity(qd),
            now,
            index,
            next_boundary: timing.boundary_after(index),
            next_poll: now + POLL_NS,
            cpu_mark: thread_cpu_ns(),
            spin_ns: 0,
            published_ops: 0,
            issuing: true,
            end_reason: EndReason::Duration,
            last_completion: measure_start,
            fatal: None,
            clock,
            cfg,
            control,
            recorder,
            source,
        }
    }

    /// Runs until the worker stops and what it issued has completed.
    #[inline(always)]
    pub(super) fn run(mut self) -> WorkerOutcome {
        loop {
            self.edges();
            if self.issuing && self.issue().is_err() {
                break;
            }
            if self.outstanding == 0 {
                if !self.issuing {
                    break;
                }
                self.idle();
                continue;
            }
            if self.reap_or_wait().is_err() {
                break;
            }
        }
        self.finish()
    }

    /// Between batches: the end of the measured window, an interval boundary, the poll of
    /// the stop flags, the latency search's windows.
    #[inline(always)]
    fn edges(&mut self) {
        // The end of the measured window first: it falls on a boundary, and the drain after
        // it belongs to the interval before that boundary (see `stop`).
        if self.issuing && self.is.measure_end.is_some_and(|end| self.now >= end) {
            self.stop(EndReason::Duration);
        }
        if self.now >= self.next_boundary {
            self.rotate();
            // The rotation's cost is nobody's service time.
            self.now = self.clock.now_ns();
        }
        if self.now >= self.next_poll {
            self.poll();
        }
        self.check_search();
    }

    /// Nothing in flight and nothing issued: waits for the next start (open loop or a
    /// burst's delay), or reads the clock again unless the last operation's end is the
    /// reading the next one starts from.
    #[inline(always)]
    fn idle(&mut self) {
        let holding = !PLAIN && self.now < self.is.hold_until;
        if !PLAIN && (self.open || holding) {
            let until = self.is.wake_at(holding, self.next_boundary, self.next_poll);
            self.spin_ns += self.think_wait(until);
            self.now = self.clock.now_ns();
        } else if self.is.chain_ns != self.now {
            self.now = self.clock.now_ns();
        }
    }

    /// With operations in flight: reaps at least one, or, in an open loop or a burst's
    /// delay with a free slot and the next start not yet due, what has completed without
    /// blocking, then waits a little if nothing had. Err when the session failed.
    #[inline(always)]
    fn reap_or_wait(&mut self) -> Result<(), ()> {
        let holding = !PLAIN && self.now < self.is.hold_until;
        let waiting_to_issue =
            !PLAIN && self.issuing && (self.open || holding) && !self.free.is_empty();
        let before = self.outstanding;
        self.reap(if waiting_to_issue { 0 } else { 1 })?;
        if before == self.outstanding && waiting_to_issue {
            let until = self.is.wake_at(holding, self.next_boundary, self.next_poll);
            // Poll completions at least every 20 µs while waiting for the next start.
            self.spin_ns += wait_until(&self.clock, until.min(self.now + 20_000));
            self.now = self.clock.now_ns();
        }
        Ok(())
    }

    /// While a slot is free and an operation is due, takes the next one and submits it,
    /// timed from a clock reading right before its `submit` (or from the end of the
    /// operation run alone just before it, see [`Issuer::chain_ns`]). Err when the session
    /// failed (the loop ends).
    #[inline(always)]
    fn issue(&mut self) -> Result<(), ()> {
        let limit = match &self.search {
            Some(l) if !PLAIN => l.limit(),
            _ => usize::MAX,
        };
        // Only the first operation of the call can start on the reading that ended the one
        // before: every other follows a queued one, or a reap (see [`Issuer::chain_ns`]).
        let mut chained = self.is.chain_ns == self.now;
        self.is.chain_ns = NO_CHAIN;
        // With a shared start, the reading every operation queued in this call starts from.
        let mut batch_ns = NO_CHAIN;
        while let Some(&slot) = self.free.last() {
            if self.outstanding >= limit {
                break;
            }
            let measured = self.now >= self.is.measure_start;
            if measured && self.is.measured_ops >= self.is.max_ops {
                self.stop(EndReason::Ops);
                break;
            }
            if !PLAIN && self.held_back()? {
                break;
            }
            let intended = if PLAIN {
                self.now
            } else {
                let Some(intended) = self.is.next_start(self.now) else {
                    break;
                };
                intended
            };
            let held = if PLAIN { None } else { self.is.held.take() };
            let op = match held {
                Some(op) => op,
                None => {
                    let Some(op) = self.source.next_op() else {
                        // The source is done (a YCSB load thread's share of the records).
                        self.stop(EndReason::Ops);
                        break;
                    };
                    let delay_ns = self.take_delay();
                    if delay_ns > 0 {
                        self.is.held = Some(op);
                        self.start_delay(delay_ns)?;
                        break;
                    }
                    op
                }
            };
            let kind = op.kind();
            if !PLAIN && self.outstanding > 0 && !self.cfg.overlap.queues(kind) {
                self.reap(self.outstanding as u32)?;
                chained = false;
                batch_ns = NO_CHAIN;
            }
            if measured {
                self.is.measured_ops += 1;
            }
            let insert_key = if PLAIN {
                u64::MAX
            } else {
                op.inserted_key().unwrap_or(u64::MAX)
            };
            // The slot's figures are written in place once the operation is queued: built on
            // the stack with the clock reading stored last and copied over, they cost a
            // store-to-load forwarding stall per operation (perf: a fifth of the loop's time).
            let info = |start_ns| SlotInfo {
                start_ns,
                intended_ns: intended,
                insert_key,
                kind_index: kind as u8,
                measured,
            };
            let start_ns = if batch_ns != NO_CHAIN {
                batch_ns
            } else if chained {
                self.now
            } else {
                self.clock.now_ns()
            };
            chained = false;
            match self.session.submit(slot, op) {
                Ok(Submitted::Queued) => {
                    if self.shared_start {
                        batch_ns = start_ns;
                    }
                    self.free.pop();
                    self.slots[slot as usize] = info(start_ns);
                    self.outstanding += 1;
                }
                Ok(Submitted::Done { result, found }) => {
                    self.now = self.clock.now_ns();
                    self.is.chain_ns = self.now;
                    let mut runs = OkRuns::default();
                    self.settle(&info(start_ns), self.now, result, found, &mut runs);
                    self.recorder.record_runs(&mut runs);
                    // Back to the top: interval boundaries, stop flags and the end are
                    // checked between operations run one at a time.
                    break;
                }
                Err(e) => {
                    self.refused(&op, kind, measured, e);
                    break;
                }
            }
        }
        Ok(())
    }

    /// What holds the next operation back in a loop that is not plain: a burst's or a start
    /// delay, a closed-loop schedule's pause (what is in flight completes meanwhile), or the
    /// worker's flow being ahead of its share. Ok(true): issue nothing more now; Err when the
    /// session failed while draining for the flow.
    #[inline(always)]
    fn held_back(&mut self) -> Result<bool, ()> {
        if self.now < self.is.hold_until {
            return Ok(true);
        }
        if let Some(until) = self.is.activity.paused_until(self.now) {
            self.is.hold_until = until;
            return Ok(true);
        }
        if let Some(f) = &mut self.is.flow
            && !f.admit()
        {
            self.flow_wait()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// An operation the session refused at `submit`: its insert is acknowledged, its error
    /// counted where it would have been recorded, and with `stop-on-error` the run stops.
    #[inline(always)]
    fn refused(&mut self, op: &storlab_model::Op, kind: OpKind, measured: bool, e: OpError) {
        std::hint::cold_path();
        if let Some(k) = op.inserted_key() {
            self.acknowledge(k);
        }
        if measured || self.index < 0 {
            self.recorder.record_error(kind, e);
        }
        if self.cfg.stop_on_error {
            self.fail(kind, e);
        }
    }

    /// Hands queued operations to the session and records those that completed, waiting for
    /// at least `min`; `now` becomes the clock reading taken when they were seen. Err: the
    /// session's own failure (what was in flight is lost; it is counted once).
    #[inline(always)]
    fn reap(&mut self, min: u32) -> Result<(), ()> {
        if let Err(e) = self.session.complete(min, &mut self.done) {
            self.lost(e);
            return Err(());
        }
        self.now = self.clock.now_ns();
        let now = self.now;
        let mut runs = OkRuns::default();
        for i in 0..self.done.len() {
            let c = self.done.get(i);
            let info = self.slots[c.slot as usize];
            self.free.push(c.slot);
            self.outstanding -= 1;
            self.settle(&info, now, c.result, c.found, &mut runs);
        }
        self.recorder.record_runs(&mut runs);
        self.done.clear();
        Ok(())
    }

    /// The session failed while reaping: one error, of the kind of a measured operation in
    /// flight, and the run stops.
    #[inline(always)]
    fn lost(&mut self, e: OpError) {
        std::hint::cold_path();
        let kind_index = self
            .slots
            .iter()
            .find(|i| i.measured)
            .map_or(0, |i| i.kind_index);
        let kind = OpKind::ALL[kind_index as usize];
        self.recorder.record_error(kind, e);
        self.fail(kind, e);
    }

    /// Records one finished operation, started at `info.start_ns` and seen finished at
    /// `end_ns`: a success joins `runs` (the caller records them, [`OkRuns`]), an error is
    /// counted at once. A warm-up operation goes into its warm-up interval (the timeline shows
    /// it, no summary counts it); one that finishes after measurement started is not recorded.
    #[inline(always)]
    fn settle(
        &mut self,
        info: &SlotInfo,
        end_ns: u64,
        result: Result<u32, OpError>,
        found: bool,
        runs: &mut OkRuns,
    ) {
        if !PLAIN && info.insert_key != u64::MAX {
            self.acknowledge(info.insert_key);
        }
        if !info.measured && self.index >= 0 {
            return;
        }
        let kind = OpKind::ALL[info.kind_index as usize];
        if info.measured {
            self.last_completion = end_ns;
        }
        match result {
            Ok(bytes) => {
                let latency_ns = end_ns - info.start_ns;
                let from_intended_ns = end_ns.saturating_sub(info.intended_ns);
                let bytes = bytes as u64;
                runs.add(
                    &mut self.recorder,
                    kind,
                    latency_ns,
                    from_intended_ns,
                    bytes,
                    found,
                );
                if !PLAIN && info.measured && self.search.is_some() {
                    self.feed_search(kind, end_ns, latency_ns);
                }
            }
            Err(e) => {
                self.recorder.record_error(kind, e);
                if info.measured && self.cfg.stop_on_error && self.fatal.is_none() {
                    self.fail(kind, e);
                }
            }
        }
    }

    /// Tells the source that an insert finished. YCSB's acknowledgement window overflowing
    /// is counted as an insert error and stops the run, whatever `stop-on-error` says (YCSB
    /// throws there).
    #[inline(always)]
    fn acknowledge(&mut self, key: u64) {
        if let Err(e) = self.source.acknowledge_insert(key) {
            self.recorder.record_error(OpKind::Insert, e);
            let first = self.fatal.unwrap_or((OpKind::Insert, e));
            self.fail(first.0, first.1);
        }
    }

    /// Issues no more operations (what is in flight still completes), for `why`.
    #[inline(always)]
    fn stop(&mut self, why: EndReason) {
        self.issuing = false;
        self.end_reason = why;
        // What is in flight completes into the measured interval the issuing stopped in,
        // which may run on to the end of the next one: a drain of a few milliseconds past a
        // boundary (the usual end, since a duration ends on one) would otherwise be an
        // interval of its own, its few completions over those milliseconds drawn as a rate
        // many times the run's.
        let fold_until = self.timing.boundary_after(self.index + 1);
        if self.index >= 0 && self.now < fold_until {
            self.next_boundary = fold_until;
        }
    }

    /// The run stops for the fatal error `e` of a `kind` operation; other workers stop too.
    #[inline(always)]
    fn fail(&mut self, kind: OpKind, e: OpError) {
        self.fatal = Some((kind, e));
        self.control.stop.store(true, Ordering::Relaxed);
        self.stop(EndReason::Error);
    }

    /// A measured completion of `kind` that took `latency_ns`, fed to the latency search:
    /// over a 100% target at depth 1 the run fails (fio: "latency of N nsec exceeds
    /// specified max", ETIMEDOUT).
    #[inline(always)]
    fn feed_search(&mut self, kind: OpKind, now: u64, latency_ns: u64) {
        if let Some(l) = self.search.as_mut()
            && l.completed(now, latency_ns) == Verdict::Fatal
        {
            self.fail(kind, OpError::errno(libc::ETIMEDOUT));
        }
    }

    /// Between batches: ends the latency search's drain or judges a due window; when the
    /// answer's final window passed, the job is done (fio's `td->done`).
    #[inline(always)]
    fn check_search(&mut self) {
        if PLAIN {
            return;
        }
        if let Some(l) = self.search.as_mut()
            && l.check(self.now, self.outstanding) == Verdict::Done
            && self.issuing
        {
            self.stop(EndReason::Ops);
        }
    }

    /// The delay the source gives before the operation it just gave, ns: asked only of a
    /// source that may give one (decided once per worker), 0 for the others at the cost of
    /// one predictable branch.
    #[inline(always)]
    fn take_delay(&mut self) -> u64 {
        if !PLAIN && self.is.source_delays {
            self.source.take_delay_ns()
        } else {
            0
        }
    }

    /// Holds the next operation for `delay_ns` (see the module's text); Err when the session
    /// failed while draining.
    #[inline(always)]
    fn start_delay(&mut self, delay_ns: u64) -> Result<(), ()> {
        let rule = self.source.delay_rule();
        if rule.drain && self.outstanding > 0 {
            self.reap(self.outstanding as u32)?;
        }
        self.is.hold(self.now, delay_ns, rule);
        Ok(())
    }

    /// Ahead of its flow's share: what is in flight completes, then nothing is issued for
    /// `flow_sleep` (0: the gate is asked again at once); Err when the session failed.
    fn flow_wait(&mut self) -> Result<(), ()> {
        let sleep_ns = self.is.flow.as_ref().map_or(0, |f| f.sleep_ns);
        if sleep_ns > 0 {
            if self.outstanding > 0 {
                self.reap(self.outstanding as u32)?;
            }
            let rule = storlab_workload::block::pattern::DelayRule {
                drain: true,
                ..Default::default()
            };
            self.is.hold(self.now, sleep_ns, rule);
        }
        Ok(())
    }

    /// Waits until `until_ns` with nothing to do (see [`wait_until`]), spinning instead
    /// while a think time's spin lasts; returns the time spent spinning, ns.
    #[inline(always)]
    fn think_wait(&self, until_ns: u64) -> u64 {
        if self.now < self.is.spin_until {
            spin_until(&self.clock, until_ns.min(self.is.spin_until))
        } else {
            wait_until(&self.clock, until_ns)
        }
    }

    /// At an interval boundary: hands the interval to the recorder (with the thread's CPU
    /// time since the last boundary less the time spent spinning) and opens the one `now`
    /// is in; the recorder may say stop.
    #[inline(always)]
    fn rotate(&mut self) {
        std::hint::cold_path();
        let cpu = thread_cpu_ns();
        let next = self.timing.index_at(self.now);
        let busy = (cpu - self.cpu_mark).saturating_sub(self.spin_ns);
        let (from, to) = (self.timing.start_of(self.index), self.next_boundary);
        if !self
            .recorder
            .rotate(self.index, from, to, busy, false, next)
        {
            self.stop(EndReason::Interrupted);
        }
        self.index = next;
        self.next_boundary = self.timing.boundary_after(next);
        self.cpu_mark = cpu;
        self.spin_ns = 0;
    }

    /// Every few milliseconds: publishes the measured operations completed and, while
    /// issuing, stops for the stonewall, steady state, a stop (an error when one was fatal)
    /// or an interruption.
    #[inline(always)]
    fn poll(&mut self) {
        std::hint::cold_path();
        self.next_poll = self.now + POLL_NS;
        self.publish_completed();
        if !self.issuing {
            return;
        }
        let c = self.control;
        let why = if c.stonewall.load(Ordering::Relaxed) {
            EndReason::Ops
        } else if c.steady_state.load(Ordering::Relaxed) {
            EndReason::SteadyState
        } else if c.stop.load(Ordering::Relaxed) || c.interrupted.load(Ordering::Relaxed) {
            if self.fatal.is_some() {
                EndReason::Error
            } else {
                EndReason::Interrupted
            }
        } else {
            return;
        };
        self.stop(why);
    }

    /// Adds the measured operations completed since the last call to the run's count: those
    /// issued in measurement less those still in flight.
    #[inline(always)]
    fn publish_completed(&mut self) {
        let completed = self.is.measured_ops.saturating_sub(self.outstanding as u64);
        if completed > self.published_ops {
            let new = completed - self.published_ops;
            self.control.completed_ops.fetch_add(new, Ordering::Relaxed);
            self.published_ops = completed;
        }
    }

    /// The end of the loop: publishes the last completions, hands the last interval to the
    /// recorder, and reports how the worker ended.
    #[cold]
    #[inline(never)]
    fn finish(mut self) -> WorkerOutcome {
        self.publish_completed();
        let cpu = thread_cpu_ns();
        let (index, now) = (self.index, self.now);
        let busy = (cpu - self.cpu_mark).saturating_sub(self.spin_ns);
        let from = self.timing.start_of(index).min(now);
        self.recorder
            .rotate(index, from, now, busy, true, index + 1);
        WorkerOutcome {
            worker: self.cfg.worker,
            end_reason: self.end_reason,
            measured_ops: self.is.measured_ops,
            measure_start_ns: self.timing.measure_start,
            last_completion_ns: self.last_completion,
            spare_waits: self.recorder.spare_waits,
            spare_wait_ns: self.recorder.spare_wait_ns,
            skipped_starts: self.is.skipped_starts,
            fatal: self.fatal,
            used: self.session.used(),
            latency_search: self.search.as_ref().map(|l| l.result(self.cfg.worker)),
            pinned_cpus: None,
        }
    }
}

/// The worker needs none of the loop's rarer features (see [`OpLoop`]'s `PLAIN`): a closed
/// loop without a latency search, start delay, schedule or flow, a source that gives no
/// delays and no inserts, on a target that queues every kind it is given (a target that runs
/// some kinds alone is not plain: what is queued is reaped before those).
pub(super) fn is_plain(w: &Worker<'_>) -> bool {
    let c = &w.config;
    c.rate_ops.is_none()
        && c.latency_target.is_none()
        && c.start_delay_ns == 0
        && !c.starts_paused
        && w.rate_changes.is_empty()
        && w.flow.is_none()
        && !w.source.may_delay()
        && !w.source.may_insert()
        && matches!(c.overlap, Overlap::Concurrent { .. })
}

/// Sets this thread's timer slack to 1 ns so that open-loop sleeps end on time.
fn tight_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}
