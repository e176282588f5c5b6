//! A distributed run's own results (a study run from many client hosts under mpirun): per MPI
//! rank and per host, what its workers measured (from its workers' histograms, merged by adding
//! counts on rank 0), its clock offset to rank 0, whether it was lost mid-run, whether the
//! stonewall stopped the run, and what gathering cost. Stored in `summary.json` under
//! `distributed`; each rank's system capture is beside it as `system-rank-N.json`, and each
//! rank's measured histograms in `ranks.hlog` (tags `rank-N.TARGET.OP`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use storlab_record::summary::LatencySummary;

/// File, in the run folder, of each rank's measured histograms (HDR interval log, one entry
/// per rank, target and operation kind).
pub const RANKS_HLOG: &str = "ranks.hlog";

/// The system capture of rank N, in the run folder.
pub fn system_file(rank: u32) -> String {
    format!("system-rank-{rank}.json")
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DistributedResult {
    /// Ranks in the MPI job.
    pub ranks_total: u32,
    pub ranks: Vec<RankResult>,
    pub hosts: Vec<HostResult>,
    /// Set when the stonewall stopped the run: the first rank that finished its operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall: Option<Stonewall>,
    pub gather: GatherCost,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RankResult {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    /// Global indices of the workers it ran.
    pub workers: Vec<u32>,
    /// Its wall clock minus rank 0's, ns, measured by ping-pong at the start (the smallest
    /// round trip's midpoint); its timeline was aligned on it.
    pub clock_offset_ns: i64,
    /// The round trip of that ping-pong, ns (the offset's uncertainty is half of it).
    pub clock_rtt_ns: u64,
    /// `complete`, or `lost`: its messages stopped before it finished.
    pub status: String,
    /// Lost: seconds after the start of measurement when its parent in the gather tree last
    /// heard from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heard_seconds: Option<f64>,
    /// Lost because its intervals went through this rank, lost (at `last_heard_seconds`):
    /// what it measured after that never reached rank 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off_by: Option<u32>,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Over the run's measured time.
    pub rate_ops: f64,
    pub service_latency: LatencySummary,
    /// Bytes it sent (its merged intervals to its parent in the gather tree, its end report to
    /// rank 0), and per measured second.
    pub bytes_sent: u64,
    pub bytes_sent_per_second: f64,
    pub messages_sent: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostResult {
    pub host: String,
    pub ranks: Vec<u32>,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub rate_ops: f64,
    pub service_latency: LatencySummary,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Stonewall {
    pub first_rank: u32,
    /// Seconds after the start of measurement when rank 0 told every rank to stop.
    pub at_seconds: f64,
}

/// What gathering the ranks' intervals on rank 0 cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct GatherCost {
    /// Mean over the ranks other than 0 of the bytes each sent per measured second (to its
    /// parent in the gather tree).
    pub bytes_per_rank_per_second: f64,
    /// CPU time of rank 0's receiving thread (receiving and decoding its children's merged
    /// intervals), s.
    pub receive_cpu_seconds: f64,
    /// CPU time of rank 0's collector thread (merging every rank's intervals and writing the
    /// timeline and interval log), s.
    pub merge_cpu_seconds: f64,
    pub intervals_received: u64,
    /// Children per rank in the gather tree (rank r's parent is (r - 1) / fan-out).
    #[serde(default)]
    pub fan_out: u32,
    /// Per level of the gather tree (0: rank 0), what gathering cost its ranks.
    #[serde(default)]
    pub levels: Vec<GatherLevel>,
}

/// What gathering cost the ranks of one level of the gather tree, per measured second.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct GatherLevel {
    /// Depth in the tree: 0 is rank 0, 1 its children, ...
    pub level: u32,
    /// Ranks on this level that sent their end report (a lost rank's costs are unknown).
    pub ranks: u32,
    /// Mean over its ranks of the bytes each sent its parent (level 0: none).
    pub bytes_sent_per_rank_per_second: f64,
    /// Mean over its ranks of the bytes each received from its children.
    pub bytes_received_per_rank_per_second: f64,
    /// Mean over its ranks of the messages each received from its children.
    pub messages_received_per_rank_per_second: f64,
    /// CPU time of a rank's gathering, s per measured second: mean and largest over its
    /// ranks (a rank's shipper thread: its workers' intervals and its children's merged and
    /// sent on; rank 0: its receiving thread and its collector).
    pub cpu_seconds_per_second_mean: f64,
    pub cpu_seconds_per_second_max: f64,
    /// Mean over its ranks of the histograms each added (rank 0's collector: not counted).
    pub histogram_merges_per_rank_per_second: f64,
}

/// Per host, the ranks' figures added (their histograms merged by adding counts).
pub fn host_rows(
    ranks: &[RankResult],
    merged: &BTreeMap<String, hdrhistogram::Histogram<u64>>,
    secs: f64,
) -> Vec<HostResult> {
    let mut hosts: BTreeMap<&str, HostResult> = BTreeMap::new();
    for r in ranks {
        let h = hosts.entry(&r.host).or_insert_with(|| HostResult {
            host: r.host.clone(),
            ..Default::default()
        });
        h.ranks.push(r.rank);
        h.ops += r.ops;
        h.bytes += r.bytes;
        h.errors += r.errors;
    }
    hosts
        .into_values()
        .map(|mut h| {
            h.rate_ops = h.ops as f64 / secs.max(1e-9);
            if let Some(hist) = merged.get(&h.host) {
                h.service_latency = LatencySummary::from_histogram(hist);
            }
            h
        })
        .collect()
}

/// Markdown tables of a distributed run: per rank and per host.
pub fn markdown(d: &DistributedResult) -> String {
    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
    let mut out = format!(
        "Distributed run: {} ranks on {} host(s).\n\n| rank | host | workers | status | ops | ops/s | p50 ms | p99 ms | max ms | clock offset µs | sent B/s |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        d.ranks_total,
        d.hosts.len()
    );
    for r in &d.ranks {
        out.push_str(&format!(
            "| {} | {} | {} | {}{} | {} | {:.1} | {} | {} | {} | {:.1} | {:.0} |\n",
            r.rank,
            r.host,
            r.workers.len(),
            r.status,
            r.last_heard_seconds
                .map(|s| format!(" (last heard at {s:.1} s)"))
                .unwrap_or_default(),
            r.ops,
            r.rate_ops,
            ms(r.service_latency.p50_ns),
            ms(r.service_latency.p99_ns),
            ms(r.service_latency.max_ns),
            r.clock_offset_ns as f64 / 1e3,
            r.bytes_sent_per_second
        ));
    }
    out.push_str("\n| host | ranks | ops | ops/s | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|\n");
    for h in &d.hosts {
        let ranks: Vec<String> = h.ranks.iter().map(|r| r.to_string()).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {} | {} | {} |\n",
            h.host,
            ranks.join(" "),
            h.ops,
            h.rate_ops,
            ms(h.service_latency.p50_ns),
            ms(h.service_latency.p99_ns),
            ms(h.service_latency.max_ns)
        ));
    }
    if let Some(s) = &d.stonewall {
        out.push_str(&format!(
            "\nStonewall: rank {} finished its operations first; every rank was stopped at {:.2} s.\n",
            s.first_rank, s.at_seconds
        ));
    }
    out.push_str(&format!(
        "\nGathering: {:.0} bytes per rank per second sent up the gather tree; rank 0 spent {:.3} s of CPU receiving and {:.3} s merging ({} intervals received).\n",
        d.gather.bytes_per_rank_per_second,
        d.gather.receive_cpu_seconds,
        d.gather.merge_cpu_seconds,
        d.gather.intervals_received
    ));
    if !d.gather.levels.is_empty() {
        out.push_str(&format!(
            "\nGather tree (fan-out {}), per rank per second:\n\n| level | ranks | sent B/s | received B/s | CPU ms/s mean | CPU ms/s max | histogram merges/s |\n|---|---|---|---|---|---|---|\n",
            d.gather.fan_out
        ));
        for l in &d.gather.levels {
            out.push_str(&format!(
                "| {} | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0} |\n",
                l.level,
                l.ranks,
                l.bytes_sent_per_rank_per_second,
                l.bytes_received_per_rank_per_second,
                l.cpu_seconds_per_second_mean * 1e3,
                l.cpu_seconds_per_second_max * 1e3,
                l.histogram_merges_per_rank_per_second
            ));
        }
    }
    out
}
