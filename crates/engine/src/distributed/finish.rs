//! Rank 0 at the end of a distributed run: adds the ranks' tables (each rank's own figures,
//! from its end report, or for a lost rank what reached its parent), their systems and
//! histograms, and what gathering cost on each level of the tree, to the run's results.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::rank0::{Rank0Run, RankState, Received};
use super::tree;
use crate::collector::Collected;
use storlab_record::totals::{KindTotals, merge};
use storlab_record::{EndReason, new_histogram};
use storlab_results::RunFolder;
use storlab_results::distributed::{
    DistributedResult, GatherCost, GatherLevel, RankResult, Stonewall, host_rows,
};
use storlab_results::summary::{RunStatus, RunSummary};
use storlab_study::plan::RunPlan;

impl Rank0Run {
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
                last_heard_seconds: s.lost.as_ref().map(|l| since_measure(l.at_ns)),
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
        let gather = gather_cost(&ranks, received, collected, secs);
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
        let sent = match (&s.lost, &s.final_) {
            _ if r == 0 => 0,
            (Some(l), _) => l.bytes,
            (None, Some(f)) => f.bytes_sent + s.final_bytes,
            (None, None) => 0,
        };
        let lost = s.lost.is_some();
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
            cut_off_by: s.lost.as_ref().and_then(|l| l.behind),
            ops,
            bytes,
            errors,
            rate_ops: ops as f64 / secs,
            service_latency: storlab_record::summary::LatencySummary::from_histogram(&all),
            bytes_sent: sent,
            bytes_sent_per_second: sent as f64 / secs,
            messages_sent: match (&s.lost, &s.final_) {
                (Some(l), _) => l.messages,
                (None, Some(f)) => f.messages_sent + 1,
                (None, None) => 0,
            },
        };
        (row, all)
    }
}

/// What gathering cost: rank 0's figures as before the tree, and per level of the tree, its
/// ranks' (from their end reports).
fn gather_cost(
    ranks: &[RankResult],
    received: &Received,
    collected: &Collected,
    secs: f64,
) -> GatherCost {
    let others: Vec<&RankResult> = ranks.iter().skip(1).collect();
    let mut levels: Vec<GatherLevel> = vec![GatherLevel {
        level: 0,
        ranks: 1,
        bytes_received_per_rank_per_second: received.bytes as f64 / secs,
        messages_received_per_rank_per_second: received.intervals as f64 / secs,
        cpu_seconds_per_second_mean: (received.cpu_ns + collected.cpu_ns) as f64 / 1e9 / secs,
        cpu_seconds_per_second_max: (received.cpu_ns + collected.cpu_ns) as f64 / 1e9 / secs,
        ..Default::default()
    }];
    for (r, s) in received.ranks.iter().enumerate().skip(1) {
        let Some(f) = s.final_.as_ref().filter(|_| s.lost.is_none()) else {
            continue;
        };
        let level = tree::level(r as u32) as usize;
        if levels.len() <= level {
            levels.resize_with(level + 1, Default::default);
        }
        let l = &mut levels[level];
        l.level = level as u32;
        l.ranks += 1;
        l.bytes_sent_per_rank_per_second += f.bytes_sent as f64 / secs;
        l.bytes_received_per_rank_per_second += f.gather.bytes_received as f64 / secs;
        l.messages_received_per_rank_per_second += f.gather.messages_received as f64 / secs;
        let cpu = f.gather.cpu_ns as f64 / 1e9 / secs;
        l.cpu_seconds_per_second_mean += cpu;
        l.cpu_seconds_per_second_max = l.cpu_seconds_per_second_max.max(cpu);
        l.histogram_merges_per_rank_per_second += f.gather.histogram_merges as f64 / secs;
    }
    for l in levels.iter_mut().skip(1).filter(|l| l.ranks > 0) {
        let n = l.ranks as f64;
        l.bytes_sent_per_rank_per_second /= n;
        l.bytes_received_per_rank_per_second /= n;
        l.messages_received_per_rank_per_second /= n;
        l.cpu_seconds_per_second_mean /= n;
        l.histogram_merges_per_rank_per_second /= n;
    }
    GatherCost {
        bytes_per_rank_per_second: if others.is_empty() {
            0.0
        } else {
            others.iter().map(|r| r.bytes_sent_per_second).sum::<f64>() / others.len() as f64
        },
        receive_cpu_seconds: received.cpu_ns as f64 / 1e9,
        merge_cpu_seconds: collected.cpu_ns as f64 / 1e9,
        intervals_received: received.intervals,
        fan_out: tree::FAN_OUT,
        levels,
    }
}

/// A lost rank makes the run partial, with a warning naming it.
fn mark_lost(ranks: &[RankResult], summary: &mut RunSummary) {
    for r in ranks.iter().filter(|r| r.status == "lost") {
        summary.status = RunStatus::Partial;
        if summary.end_reason != EndReason::Error {
            summary.end_reason = EndReason::Interrupted;
        }
        let at = r.last_heard_seconds.unwrap_or(0.0);
        summary.warnings.push(match r.cut_off_by {
            None => format!(
                "partial run: rank {} on host {} (pid {}) was lost: its parent in the gather tree last heard from it {at:.2} s after the start of measurement; what it sent until then is kept",
                r.rank, r.host, r.pid
            ),
            Some(by) => format!(
                "partial run: rank {} on host {} (pid {}) was cut off: its intervals went through rank {by}, lost {at:.2} s after the start of measurement; what reached rank 0 until then is kept, its own figures are not",
                r.rank, r.host, r.pid
            ),
        });
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
