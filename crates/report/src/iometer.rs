//! IOmeter's result file (`iometer.csv`), written from stored results only: the layout of
//! IOmeter 1.1.0's results `.csv` (ManagerList/Manager/Worker `SaveResults`), so that the
//! spreadsheets and scripts that read IOmeter's files read storlab's.
//!
//! The file opens with `'Test Type,Test Description` (0, IOmeter's "normal" test, and the
//! study's name), `'Version` (storlab's) and `'Time Stamp`. Each run is one IOmeter test: its
//! `'Access specifications` section (the workload's access-spec lines, or its one line:
//! size, % of size, % reads, % random, delay in ms, burst, alignment in bytes with 0 for
//! IOmeter's sector default, reply 0), then `'Results` with IOmeter's 80-column header and
//! the rows `ALL` (every client), one `MANAGER` per client (a target's `client`) and, under
//! it, one `DISK` per target, then the run's end as `'Time Stamp` (UTC). A run that stopped
//! early is followed by IOmeter's `Aborted test` line; a run that could not start has its
//! specification and that line only.
//!
//! Figures, in IOmeter's units: IOps and MiBps/MBps (2^20 and 10^6 bytes) per second of
//! measured time, response times in ms (means weighted by operation counts, never
//! percentiles averaged), errors and bytes as counts. `ALL` and `MANAGER` rows add their
//! targets' rates and counts, as IOmeter adds its managers'. IOps counts reads and writes (an
//! fsync is no IOmeter operation; its errors are in `Errors`). A transaction is one I/O
//! (IOmeter's, without a reply): transactions per second and transaction times equal IOps
//! and response times. The latency bins (`0 to 50 uS` ... `>= 10 s`) count the stored HDR
//! histograms (`histograms.hlog`) by each bucket's middle value (within 0.1%); IOmeter never
//! fills its last bin, storlab counts it. `% CPU Utilization` is storlab's own process (its
//! CPU time over the run, warm-up included, over the machine's logical CPUs), on the `ALL`
//! row and on the `MANAGER` row of a single client; IOmeter's counts every process, and
//! storlab has no per-client split. `CPU Effectiveness` is IOps over that percentage.
//!
//! Left empty because storlab does not measure them: connections (per second, average and
//! maximum time, count, transactions per connection), the raw tick columns, starting sector,
//! maximum size, % user, privileged, DPC and interrupt time, processor speed, interrupts and
//! network counters; a response time of a kind with no operation; the latency bins when
//! `histograms.hlog` is not stored.
//!
//! `WORKER` rows: under each `MANAGER`, each worker of its targets (`Worker 1`, `Worker 2`,
//! ... numbered per client), followed by the `DISK` row of the one target it drives with that
//! worker's figures on it, as IOmeter writes a disk under each worker that drives it. A
//! worker's figures are exact counts, rates, mean and maximum response times; its latency bins
//! are left empty (no per-worker histogram is kept) unless it is its target's only worker.
//! Results stored before per-worker figures existed have one `DISK` row per target and no
//! `WORKER` rows. `# Workers` and `# Disks` count the workers (a target's `threads`) and, as
//! IOmeter does, the worker-target pairs.

use crate::csv::field;
use storlab_model::op::ResultKind;
use storlab_results::histograms::{Histograms, hlog_tag};
use storlab_results::stored::StoredRun;
use storlab_results::summary::{RunStatus, TargetResult, WorkerResult};

/// The file's name in a study folder.
pub const FILE: &str = "iometer.csv";

/// IOmeter 1.1.0's result columns, in its order.
pub const COLUMNS: [&str; 80] = [
    "'Target Type",
    "Target Name",
    "Access Specification Name",
    "# Managers",
    "# Workers",
    "# Disks",
    "IOps",
    "Read IOps",
    "Write IOps",
    "MiBps (Binary)",
    "Read MiBps (Binary)",
    "Write MiBps (Binary)",
    "MBps (Decimal)",
    "Read MBps (Decimal)",
    "Write MBps (Decimal)",
    "Transactions per Second",
    "Connections per Second",
    "Average Response Time",
    "Average Read Response Time",
    "Average Write Response Time",
    "Average Transaction Time",
    "Average Connection Time",
    "Maximum Response Time",
    "Maximum Read Response Time",
    "Maximum Write Response Time",
    "Maximum Transaction Time",
    "Maximum Connection Time",
    "Errors",
    "Read Errors",
    "Write Errors",
    "Bytes Read",
    "Bytes Written",
    "Read I/Os",
    "Write I/Os",
    "Connections",
    "Transactions per Connection",
    "Total Raw Read Response Time",
    "Total Raw Write Response Time",
    "Total Raw Transaction Time",
    "Total Raw Connection Time",
    "Maximum Raw Read Response Time",
    "Maximum Raw Write Response Time",
    "Maximum Raw Transaction Time",
    "Maximum Raw Connection Time",
    "Total Raw Run Time",
    "Starting Sector",
    "Maximum Size",
    "Queue Depth",
    "% CPU Utilization",
    "% User Time",
    "% Privileged Time",
    "% DPC Time",
    "% Interrupt Time",
    "Processor Speed",
    "Interrupts per Second",
    "CPU Effectiveness",
    "Packets/Second",
    "Packet Errors",
    "Segments Retransmitted/Second",
    "0 to 50 uS",
    "50 to 100 uS",
    "100 to 200 uS",
    "200 to 500 uS",
    "0.5 to 1 mS",
    "1 to 2 mS",
    "2 to 5 mS",
    "5 to 10 mS",
    "10 to 15 mS",
    "15 to 20 mS",
    "20 to 30 mS",
    "30 to 50 mS",
    "50 to 100 mS",
    "100 to 200 mS",
    "200 to 500 mS",
    "0.5 to 1 S",
    "1 to 2 s",
    "2 to 4.7 s",
    "4.7 to 5 s",
    "5 to 10 s",
    " >= 10 s",
];

/// Upper bounds of IOmeter's latency bins, ns (the last bin has none).
const BIN_UPPER_NS: [u64; 20] = [
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    15_000_000,
    20_000_000,
    30_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    4_700_000_000,
    5_000_000_000,
    10_000_000_000,
];

const BINS: usize = 21;

/// What a row shows: reads and writes of one target, or added over several.
#[derive(Debug, Clone, Default)]
struct Figures {
    read_ops: u64,
    write_ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    read_rate_ops: f64,
    write_rate_ops: f64,
    read_rate_bytes: f64,
    write_rate_bytes: f64,
    read_errors: u64,
    write_errors: u64,
    errors: u64,
    /// Mean x count, ns: what averages are weighted by.
    read_latency_total_ns: f64,
    write_latency_total_ns: f64,
    read_max_ns: u64,
    write_max_ns: u64,
    bins: Option<[u64; BINS]>,
}

impl Figures {
    fn of_target(t: &TargetResult, histograms: Option<&Histograms>) -> Figures {
        let mut f = Figures {
            errors: t.errors,
            ..Default::default()
        };
        if let Some(r) = t.kinds.get("read") {
            f.read_ops = r.ops;
            f.read_bytes = r.bytes;
            f.read_rate_ops = r.rate_ops;
            f.read_rate_bytes = r.rate_bytes;
            f.read_errors = r.errors;
            f.read_latency_total_ns = r.service_latency.mean_ns * r.service_latency.count as f64;
            f.read_max_ns = r.service_latency.max_ns;
        }
        if let Some(w) = t.kinds.get("write") {
            f.write_ops = w.ops;
            f.write_bytes = w.bytes;
            f.write_rate_ops = w.rate_ops;
            f.write_rate_bytes = w.rate_bytes;
            f.write_errors = w.errors;
            f.write_latency_total_ns = w.service_latency.mean_ns * w.service_latency.count as f64;
            f.write_max_ns = w.service_latency.max_ns;
        }
        f.bins = histograms.map(|hs| {
            let mut bins = [0u64; BINS];
            for op in ["read", "write"] {
                if let Some(h) = hs.get(&hlog_tag(&t.name, op)) {
                    for v in h.iter_recorded() {
                        let middle = h.median_equivalent(v.value_iterated_to());
                        let bin = BIN_UPPER_NS
                            .iter()
                            .position(|&upper| middle < upper)
                            .unwrap_or(BINS - 1);
                        bins[bin] += v.count_at_value();
                    }
                }
            }
            bins
        });
        f
    }

    /// One worker's figures (no latency bins: no per-worker histogram is kept).
    fn of_worker(w: &WorkerResult) -> Figures {
        let mut f = Figures::default();
        if let Some(r) = w.kinds.get("read") {
            f.read_ops = r.ops;
            f.read_bytes = r.bytes;
            f.read_rate_ops = r.rate_ops;
            f.read_rate_bytes = r.rate_bytes;
            f.read_errors = r.errors;
            f.read_latency_total_ns = r.mean_latency_ns * r.ops as f64;
            f.read_max_ns = r.max_latency_ns;
        }
        if let Some(wr) = w.kinds.get("write") {
            f.write_ops = wr.ops;
            f.write_bytes = wr.bytes;
            f.write_rate_ops = wr.rate_ops;
            f.write_rate_bytes = wr.rate_bytes;
            f.write_errors = wr.errors;
            f.write_latency_total_ns = wr.mean_latency_ns * wr.ops as f64;
            f.write_max_ns = wr.max_latency_ns;
        }
        f.errors = w.kinds.values().map(|k| k.errors).sum();
        f
    }

    fn add(&mut self, o: &Figures) {
        self.read_ops += o.read_ops;
        self.write_ops += o.write_ops;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.read_rate_ops += o.read_rate_ops;
        self.write_rate_ops += o.write_rate_ops;
        self.read_rate_bytes += o.read_rate_bytes;
        self.write_rate_bytes += o.write_rate_bytes;
        self.read_errors += o.read_errors;
        self.write_errors += o.write_errors;
        self.errors += o.errors;
        self.read_latency_total_ns += o.read_latency_total_ns;
        self.write_latency_total_ns += o.write_latency_total_ns;
        self.read_max_ns = self.read_max_ns.max(o.read_max_ns);
        self.write_max_ns = self.write_max_ns.max(o.write_max_ns);
        self.bins = match (self.bins, o.bins) {
            (Some(mut a), Some(b)) => {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                Some(a)
            }
            _ => None,
        };
    }

    fn total(targets: &[Figures]) -> Figures {
        let mut all = Figures {
            bins: Some([0; BINS]),
            ..Default::default()
        };
        for t in targets {
            all.add(t);
        }
        if targets.is_empty() {
            all.bins = None;
        }
        all
    }
}

fn fixed(x: f64) -> String {
    format!("{x:.6}")
}

/// A mean in ms from a total in ns over a count; empty without operations.
fn mean_ms(total_ns: f64, count: u64) -> String {
    if count == 0 {
        String::new()
    } else {
        fixed(total_ns / count as f64 / 1e6)
    }
}

fn max_ms(max_ns: u64, count: u64) -> String {
    if count == 0 {
        String::new()
    } else {
        fixed(max_ns as f64 / 1e6)
    }
}

/// The columns of a row that are not figures.
struct Label<'a> {
    kind: &'a str,
    name: &'a str,
    spec: &'a str,
    managers: Option<usize>,
    workers: Option<u32>,
    disks: Option<u32>,
    queue_depth: Option<u32>,
    /// storlab's process CPU, percent of the machine.
    cpu_percent: Option<f64>,
}

fn row(l: &Label<'_>, f: &Figures) -> String {
    let opt = |x: Option<String>| x.unwrap_or_default();
    let ios = f.read_ops + f.write_ops;
    let iops = f.read_rate_ops + f.write_rate_ops;
    let bytes_rate = f.read_rate_bytes + f.write_rate_bytes;
    let average = mean_ms(f.read_latency_total_ns + f.write_latency_total_ns, ios);
    let maximum = max_ms(f.read_max_ns.max(f.write_max_ns), ios);
    let mut cells: Vec<String> = vec![
        l.kind.to_string(),
        // IOmeter turns commas and line breaks in names into spaces.
        l.name.replace([',', '\n', '\r'], " "),
        field(l.spec),
        opt(l.managers.map(|m| m.to_string())),
        opt(l.workers.map(|w| w.to_string())),
        opt(l.disks.map(|d| d.to_string())),
        fixed(iops),
        fixed(f.read_rate_ops),
        fixed(f.write_rate_ops),
        fixed(bytes_rate / 1_048_576.0),
        fixed(f.read_rate_bytes / 1_048_576.0),
        fixed(f.write_rate_bytes / 1_048_576.0),
        fixed(bytes_rate / 1e6),
        fixed(f.read_rate_bytes / 1e6),
        fixed(f.write_rate_bytes / 1e6),
        fixed(iops),
        String::new(),
        average.clone(),
        mean_ms(f.read_latency_total_ns, f.read_ops),
        mean_ms(f.write_latency_total_ns, f.write_ops),
        average,
        String::new(),
        maximum.clone(),
        max_ms(f.read_max_ns, f.read_ops),
        max_ms(f.write_max_ns, f.write_ops),
        maximum,
        String::new(),
        f.errors.to_string(),
        f.read_errors.to_string(),
        f.write_errors.to_string(),
        f.read_bytes.to_string(),
        f.write_bytes.to_string(),
        f.read_ops.to_string(),
        f.write_ops.to_string(),
        String::new(),
        String::new(),
    ];
    // Raw tick columns (9), starting sector, maximum size.
    cells.extend(std::iter::repeat_n(String::new(), 11));
    cells.push(opt(l.queue_depth.map(|q| q.to_string())));
    cells.push(opt(l.cpu_percent.map(fixed)));
    // % user, privileged, DPC, interrupt time; processor speed; interrupts per second.
    cells.extend(std::iter::repeat_n(String::new(), 6));
    cells.push(opt(l
        .cpu_percent
        .filter(|c| *c > 0.0)
        .map(|c| fixed(iops / c))));
    // Packets per second, packet errors, segments retransmitted per second.
    cells.extend(std::iter::repeat_n(String::new(), 3));
    match f.bins {
        Some(bins) => cells.extend(bins.iter().map(|b| b.to_string())),
        None => cells.extend(std::iter::repeat_n(String::new(), BINS)),
    }
    debug_assert_eq!(cells.len(), COLUMNS.len());
    cells.join(",")
}

/// A percent of a fraction, as IOmeter's integers when whole.
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}", p.round() as i64)
    } else {
        format!("{:.2}", p)
    }
}

/// The access-specification lines of a stored workload (its plan JSON): size, % of size,
/// % reads, % random, delay ms, burst, align, reply.
fn spec_lines(w: &serde_json::Value) -> Vec<String> {
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
    let delay_ms = |v: &serde_json::Value| {
        v.get("burst-delay")
            .and_then(|d| d.as_str())
            .and_then(|d| storlab_model::units::parse_duration(d).ok())
            .map_or(0, |d| d.as_millis())
    };
    if let Some(lines) = w.get("access-spec").and_then(|a| a.as_array()) {
        return lines
            .iter()
            .map(|l| {
                format!(
                    "{},{},{},{},{},{},{},0,",
                    num(l, "block-size").unwrap_or(0.0) as u64,
                    percent(num(l, "spec-share").unwrap_or(1.0)),
                    percent(num(l, "read-share").unwrap_or(1.0)),
                    percent(num(l, "random-share").unwrap_or(1.0)),
                    delay_ms(l),
                    num(l, "burst-ios").unwrap_or(1.0) as u64,
                    num(l, "alignment").unwrap_or(0.0) as u64,
                )
            })
            .collect();
    }
    let block = num(w, "block-size").unwrap_or(0.0) as u64;
    let random = num(w, "random-share").unwrap_or(
        if w.get("access").and_then(|a| a.as_str()) == Some("sequential") {
            0.0
        } else {
            1.0
        },
    );
    vec![format!(
        "{block},100,{},{},0,1,{},0,",
        percent(num(w, "read-share").unwrap_or(1.0)),
        percent(random),
        num(w, "alignment").map_or(block, |a| a as u64),
    )]
}

/// `2026-11-20T23:01:02Z` as IOmeter's `2026-11-20 23:01:02:000`.
fn time_stamp(rfc3339: &str) -> String {
    let t = rfc3339.trim_end_matches('Z').replace('T', " ");
    match t.split_once('.') {
        Some((s, frac)) => format!("{s}:{:0<3.3}", frac),
        None => format!("{t}:000"),
    }
}

/// The value all of `items` share, if any.
fn common<T: PartialEq + Clone>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.all(|x| x == first).then_some(first)
}

/// `iometer.csv` of stored runs (in order). Only block workloads' runs are IOmeter tests;
/// others are left out.
pub fn iometer_csv(runs: &[StoredRun]) -> String {
    let mut out = String::new();
    let study = runs.first().map(|r| r.summary.study.as_str()).unwrap_or("");
    out.push_str("'Test Type,Test Description\n");
    out.push_str(&format!("0,{}\n", field(study)));
    out.push_str("'Version\n");
    out.push_str(&format!("storlab {}\n", env!("CARGO_PKG_VERSION")));
    out.push_str("'Time Stamp\n");
    let start = runs.first().map(|r| r.summary.started_at.as_str());
    out.push_str(&format!("{}\n", time_stamp(start.unwrap_or(""))));
    for run in runs {
        let s = &run.summary;
        let block = s
            .targets
            .iter()
            .all(|t| t.workload_type == ResultKind::Block);
        if s.targets.is_empty() && s.status != RunStatus::Failed || !block {
            continue;
        }
        let workload = run.workload_json(0);
        let is_block = workload
            .is_none_or(|w| w.get("type").and_then(|t| t.as_str()).unwrap_or("block") == "block");
        if !is_block {
            continue;
        }
        out.push_str("'Access specifications\n");
        out.push_str("'Access specification name,default assignment\n");
        let name = s
            .targets
            .first()
            .map(|t| t.workload.clone())
            .or_else(|| run.plan.as_ref().and_then(workload_name_of_plan))
            .unwrap_or_default();
        out.push_str(&format!("{},0\n", field(&name)));
        out.push_str("'size,% of size,% reads,% random,delay,burst,align,reply\n");
        if let Some(w) = workload {
            for l in spec_lines(w) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out.push_str("'End access specifications\n");
        if s.status == RunStatus::Failed {
            out.push_str("Aborted test\n");
            continue;
        }
        results(&mut out, run);
        out.push_str("'Time Stamp\n");
        out.push_str(&format!("{}\n", time_stamp(&s.ended_at)));
        if s.status == RunStatus::Partial {
            out.push_str("Aborted test\n");
        }
    }
    storlab_results::redact(&out)
}

fn workload_name_of_plan(plan: &serde_json::Value) -> Option<String> {
    plan.get("targets")?
        .get(0)?
        .get("workload-name")?
        .as_str()
        .map(str::to_string)
}

/// The `'Results` section of one run.
fn results(out: &mut String, run: &StoredRun) {
    let s = &run.summary;
    let histograms = run.latency_histograms().ok();
    let figures: Vec<Figures> = s
        .targets
        .iter()
        .map(|t| Figures::of_target(t, histograms.as_ref()))
        .collect();
    // Clients in the order their first target appears.
    let mut clients: Vec<&str> = Vec::new();
    for t in &s.targets {
        if !clients.contains(&t.client.as_str()) {
            clients.push(&t.client);
        }
    }
    let cpu = (s.client.logical_cpus > 0)
        .then(|| s.client.cpu_cores_used / s.client.logical_cpus as f64 * 100.0);
    out.push_str("'Results\n");
    out.push_str(&COLUMNS.join(","));
    out.push('\n');
    let workers: u32 = s.targets.iter().map(|t| t.threads).sum();
    let spec = common(s.targets.iter().map(|t| t.workload.clone())).unwrap_or_default();
    let all = Label {
        kind: "ALL",
        name: "All",
        spec: &spec,
        managers: Some(clients.len()),
        workers: Some(workers),
        disks: Some(workers),
        queue_depth: common(s.targets.iter().map(|t| t.queue_depth)),
        cpu_percent: cpu,
    };
    out.push_str(&row(&all, &Figures::total(&figures)));
    out.push('\n');
    for client in &clients {
        let mine: Vec<usize> = (0..s.targets.len())
            .filter(|&i| s.targets[i].client == *client)
            .collect();
        let workers: u32 = mine.iter().map(|&i| s.targets[i].threads).sum();
        let spec = common(mine.iter().map(|&i| s.targets[i].workload.clone())).unwrap_or_default();
        let manager = Label {
            kind: "MANAGER",
            name: client,
            spec: &spec,
            managers: None,
            workers: Some(workers),
            disks: Some(workers),
            queue_depth: common(mine.iter().map(|&i| s.targets[i].queue_depth)),
            cpu_percent: cpu.filter(|_| clients.len() == 1),
        };
        let own: Vec<Figures> = mine.iter().map(|&i| figures[i].clone()).collect();
        out.push_str(&row(&manager, &Figures::total(&own)));
        out.push('\n');
        let mut worker_number = 0u32;
        for &i in &mine {
            let t = &s.targets[i];
            let disk = Label {
                kind: "DISK",
                name: &t.name,
                spec: "",
                managers: None,
                workers: None,
                disks: None,
                queue_depth: Some(t.queue_depth),
                cpu_percent: None,
            };
            if t.workers.is_empty() {
                // Results stored before per-worker figures: the target's row alone.
                out.push_str(&row(&disk, &figures[i]));
                out.push('\n');
                continue;
            }
            // IOmeter writes each worker, then the disk under it with that worker's figures
            // on it. A target's one worker is the whole target (its latency bins too).
            for w in &t.workers {
                worker_number += 1;
                let mut f = Figures::of_worker(w);
                if t.workers.len() == 1 {
                    f.bins = figures[i].bins;
                }
                let name = format!("Worker {worker_number}");
                let worker = Label {
                    kind: "WORKER",
                    name: &name,
                    spec: &t.workload,
                    managers: None,
                    workers: None,
                    disks: Some(1),
                    queue_depth: Some(t.queue_depth),
                    cpu_percent: None,
                };
                out.push_str(&row(&worker, &f));
                out.push('\n');
                out.push_str(&row(&disk, &f));
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::summary::KindResult;

    fn kind(ops: u64, bytes: u64, secs: f64, mean_ns: f64, max_ns: u64, errors: u64) -> KindResult {
        let mut k = KindResult {
            ops,
            bytes,
            rate_ops: ops as f64 / secs,
            rate_bytes: bytes as f64 / secs,
            errors,
            ..Default::default()
        };
        k.service_latency.count = ops;
        k.service_latency.mean_ns = mean_ns;
        k.service_latency.max_ns = max_ns;
        k
    }

    fn run() -> StoredRun {
        let mut s = storlab_results::fixtures::summary(1, "oltp", &[], &[]);
        s.measured_seconds = 2.0;
        s.started_at = "2026-01-02T03:04:05Z".into();
        s.ended_at = "2026-01-02T03:04:07Z".into();
        s.client.cpu_cores_used = 0.5;
        s.client.logical_cpus = 2;
        let target = |name: &str, client: &str, reads: u64, writes: u64| {
            let mut t = TargetResult {
                name: name.into(),
                client: client.into(),
                workload: "oltp".into(),
                workload_type: ResultKind::Block,
                threads: 2,
                queue_depth: 12,
                errors: 1,
                ..Default::default()
            };
            t.kinds.insert(
                "read".into(),
                kind(reads, reads * 65536, 2.0, 1_000_000.0, 3_000_000, 0),
            );
            t.kinds.insert(
                "write".into(),
                kind(writes, writes * 65536, 2.0, 2_000_000.0, 5_000_000, 1),
            );
            t
        };
        s.targets = vec![
            target("share-a", "client-1", 600, 200),
            target("share-b", "client-2", 300, 100),
        ];
        StoredRun {
            folder: std::path::PathBuf::from("/nonexistent"),
            summary: s,
            system: None,
            study_text: None,
            plan: Some(serde_json::json!({"targets": [{"workload": {
            "type": "block", "block-size": 65536, "read-share": 0.75,
            "access-spec": [
                {"spec-share": 0.6, "block-size": 65536, "read-share": 0.67,
                 "random-share": 1.0, "burst-ios": 1, "burst-delay": "0s"},
                {"spec-share": 0.4, "block-size": 8192, "read-share": 1.0,
                 "random-share": 0.0, "alignment": 4096, "burst-ios": 4,
                 "burst-delay": "5ms"}
            ]}}]})),
            timeline: Default::default(),
            samples: Vec::new(),
            from_store: None,
        }
    }

    fn cells<'a>(text: &'a str, kind: &str, name: &str) -> Vec<&'a str> {
        text.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|c| c[0] == kind && c[1] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} row in\n{text}"))
    }

    fn col(name: &str) -> usize {
        COLUMNS.iter().position(|c| *c == name).expect(name)
    }

    #[test]
    fn rows_add_up_and_columns_are_iometers() {
        let text = iometer_csv(&[run()]);
        let header = text
            .lines()
            .find(|l| l.starts_with("'Target Type"))
            .expect("header");
        assert_eq!(header.split(',').count(), 80);
        assert!(header.contains(",MiBps (Binary),"));
        for kind in ["ALL", "MANAGER", "DISK"] {
            for line in text.lines().filter(|l| l.starts_with(&format!("{kind},"))) {
                assert_eq!(line.split(',').count(), 80, "{line}");
            }
        }
        // Access specification: two lines in IOmeter's units.
        assert!(
            text.contains("\n65536,60,67,100,0,1,0,0,\n8192,40,100,0,5,4,4096,0,\n"),
            "{text}"
        );
        let all = cells(&text, "ALL", "All");
        assert_eq!(all[col("Access Specification Name")], "oltp");
        assert_eq!(all[col("# Managers")], "2");
        assert_eq!(all[col("# Workers")], "4");
        // 1,200 I/Os over 2 s.
        assert_eq!(all[col("IOps")], "600.000000");
        assert_eq!(all[col("Read IOps")], "450.000000");
        assert_eq!(all[col("Write IOps")], "150.000000");
        assert_eq!(all[col("Read I/Os")], "900");
        assert_eq!(all[col("Bytes Written")], (300 * 65536).to_string());
        assert_eq!(all[col("MiBps (Binary)")], "37.500000");
        assert_eq!(all[col("MBps (Decimal)")], fixed(600.0 * 65536.0 / 1e6));
        // Means weighted by counts: (900 x 1 ms + 300 x 2 ms) / 1200.
        assert_eq!(all[col("Average Response Time")], "1.250000");
        assert_eq!(all[col("Average Write Response Time")], "2.000000");
        assert_eq!(all[col("Maximum Response Time")], "5.000000");
        assert_eq!(all[col("Errors")], "2");
        assert_eq!(all[col("Write Errors")], "2");
        assert_eq!(all[col("Queue Depth")], "12");
        assert_eq!(all[col("% CPU Utilization")], "25.000000");
        assert_eq!(all[col("CPU Effectiveness")], "24.000000");
        // Not measured: empty.
        for c in [
            "Connections per Second",
            "Total Raw Run Time",
            "% User Time",
        ] {
            assert_eq!(all[col(c)], "", "{c}");
        }
        // No histograms stored: no bins.
        assert_eq!(all[col("0 to 50 uS")], "");
        // Each manager holds its own target's figures; two managers: no CPU split.
        let m1 = cells(&text, "MANAGER", "client-1");
        assert_eq!(m1[col("IOps")], "400.000000");
        assert_eq!(m1[col("# Workers")], "2");
        assert_eq!(m1[col("% CPU Utilization")], "");
        let d2 = cells(&text, "DISK", "share-b");
        assert_eq!(d2[col("IOps")], "200.000000");
        assert_eq!(d2[col("# Managers")], "");
        // DISK rows follow their manager.
        let order: Vec<&str> = text
            .lines()
            .filter(|l| {
                ["ALL,", "MANAGER,", "DISK,"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| l.split(',').nth(1).unwrap())
            .collect();
        assert_eq!(
            order,
            vec!["All", "client-1", "share-a", "client-2", "share-b"]
        );
        assert!(
            text.contains("'Time Stamp\n2026-01-02 03:04:07:000\n"),
            "{text}"
        );
    }

    #[test]
    fn each_worker_has_its_row_then_its_disk_with_its_own_figures() {
        use storlab_results::summary::WorkerKindResult;
        let mut r = run();
        let worker = |n: u32, reads: u64, mean_ns: f64, max_ns: u64| WorkerResult {
            worker: n,
            kinds: [(
                "read".to_string(),
                WorkerKindResult {
                    ops: reads,
                    bytes: reads * 65536,
                    rate_ops: reads as f64 / 2.0,
                    rate_bytes: (reads * 65536) as f64 / 2.0,
                    errors: 0,
                    mean_latency_ns: mean_ns,
                    max_latency_ns: max_ns,
                },
            )]
            .into(),
            pinned_cpus: None,
        };
        // share-a's two workers; share-b's results predate worker figures.
        r.summary.targets[0].workers = vec![
            worker(1, 400, 500_000.0, 2_000_000),
            worker(2, 200, 2_000_000.0, 3_000_000),
        ];
        let text = iometer_csv(&[r]);
        for line in text.lines().filter(|l| l.starts_with("WORKER,")) {
            assert_eq!(line.split(',').count(), 80, "{line}");
        }
        let w2 = cells(&text, "WORKER", "Worker 2");
        assert_eq!(w2[col("Access Specification Name")], "oltp");
        assert_eq!(w2[col("IOps")], "100.000000");
        assert_eq!(w2[col("Average Read Response Time")], "2.000000");
        assert_eq!(w2[col("Maximum Response Time")], "3.000000");
        assert_eq!(w2[col("# Disks")], "1");
        assert_eq!(w2[col("0 to 50 uS")], "", "no per-worker histogram");
        let order: Vec<(&str, &str, &str)> = text
            .lines()
            .filter(|l| {
                ["MANAGER,", "WORKER,", "DISK,"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                (c[0], c[1], c[col("IOps")])
            })
            .collect();
        assert_eq!(
            order,
            vec![
                ("MANAGER", "client-1", "400.000000"),
                ("WORKER", "Worker 1", "200.000000"),
                ("DISK", "share-a", "200.000000"),
                ("WORKER", "Worker 2", "100.000000"),
                ("DISK", "share-a", "100.000000"),
                ("MANAGER", "client-2", "200.000000"),
                ("DISK", "share-b", "200.000000"),
            ]
        );
    }

    #[test]
    fn latency_bins_count_the_histograms() {
        let r = run();
        let mut h = storlab_record::new_histogram::<u64>();
        h.record_n(40_000, 3).unwrap();
        h.record_n(1_500_000, 2).unwrap();
        h.record(12_000_000_000).unwrap();
        let mut hs = Histograms::new();
        hs.insert(hlog_tag("share-a", "read"), h);
        let f = Figures::of_target(&r.summary.targets[0], Some(&hs));
        let bins = f.bins.unwrap();
        assert_eq!(bins[0], 3, "0 to 50 us");
        assert_eq!(bins[5], 2, "1 to 2 ms");
        assert_eq!(bins[20], 1, ">= 10 s");
        assert_eq!(bins.iter().sum::<u64>(), 6);
    }
}
