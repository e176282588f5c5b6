//! A fio job's I/O as a storlab block workload table: its pattern (access, read share, block
//! sizes or a bssplit's split), queue depth and threads, rates, latency target,
//! buffers, syncs, verify, seed and CPU placement. Every job of a group whose table equals
//! the group's first job's shares its workload; `needs_own_workload` says which may not.

use super::job::{Job, Rw};

/// What a job's workload table holds (the same for every job of a group).
pub(super) fn workload_table(job: &Job) -> toml::Table {
    let mut w = toml::Table::new();
    let read_share = match job.rw {
        Rw::Read | Rw::RandRead => 1.0,
        Rw::Write | Rw::RandWrite => 0.0,
        Rw::ReadWrite | Rw::RandRw => job.rwmixread as f64 / 100.0,
    };
    let qd = if job.engine.runs_on().one_at_a_time() {
        1
    } else {
        job.iodepth
    };
    let shared = job.clones_as_threads();
    w.insert(
        "access".into(),
        if job.rw.random() {
            "random"
        } else {
            "sequential"
        }
        .into(),
    );
    w.insert("read-share".into(), read_share.into());
    w.insert("block-size".into(), (job.bs as i64).into());
    if let Some(a) = job.blockalign {
        w.insert("alignment".into(), (a as i64).into());
    }
    if !job.bssplit.is_empty() {
        // fio's draw per I/O (storlab's pattern source), with the job's distribution.
        w.insert("block-size-split".into(), split_value(&job.bssplit));
        if let Some(writes) = &job.bssplit_write {
            w.insert("write-block-size-split".into(), split_value(writes));
        }
        w.remove("block-size");
    }
    super::sizes::workload_keys(job, &mut w);
    super::zones::workload_keys(job, &mut w);
    if let Some(d) = super::distribution::workload_value(job) {
        w.insert("distribution".into(), d.into());
    }
    w.insert("queue-depth".into(), (qd as i64).into());
    w.insert(
        "threads".into(),
        (if shared { job.numjobs } else { 1 } as i64).into(),
    );
    if let Some(r) = job.rates.ops_per_second(job) {
        w.insert("rate-per-thread-ops".into(), r.into());
        if job.rates.process == storlab_model::rate::RateProcess::Poisson {
            w.insert("rate-process".into(), "poisson".into());
        }
    }
    if let Some(f) = super::rates::flow_table(job) {
        w.insert("flow".into(), f.into());
    }
    if let Some(l) = job.latency.workload_table() {
        w.insert("latency-target".into(), l.into());
    }
    if let Some(b) = job.buffers.write_buffers(read_share > 0.0) {
        w.insert(
            "write-buffers".into(),
            toml::Value::try_from(b).unwrap_or_else(|_| toml::Table::new().into()),
        );
    }
    if job.fsync > 0 {
        w.insert("fsync-every".into(), (job.fsync as i64).into());
    }
    if let Some((n, _)) = job.files.fdatasync {
        // The target's fsync operations are fdatasync (its `fdatasync` key).
        w.insert("fsync-every".into(), (n as i64).into());
    }
    if job.verify {
        w.insert("verify".into(), true.into());
    }
    if let Some(seed) = job.control.seed {
        // toml integers are i64: the seed's bits as one.
        w.insert("seed".into(), (seed as i64).into());
    }
    if let Some(cpus) = &job.control.cpus {
        w.insert("cpus".into(), cpus.to_string().into());
        if !job.control.cpus_policy.is_shared() {
            w.insert("cpus-policy".into(), "split".into());
        }
    }
    w
}

/// Whether job `job`, not the first of its group, runs a workload of its own even when its
/// table equals the group's: fio deals a split job's CPUs (`cpus_allowed_policy=split`) over
/// its own clones, and storlab deals a workload's over its threads in the run.
pub(super) fn needs_own_workload(job: &Job) -> bool {
    job.control.cpus.is_some() && !job.control.cpus_policy.is_shared()
}

/// A split's `[{ size, percent }, ...]`.
fn split_value(split: &[(u64, u32)]) -> toml::Value {
    split
        .iter()
        .map(|(b, p)| {
            let mut e = toml::Table::new();
            e.insert("size".into(), (*b as i64).into());
            e.insert("percent".into(), i64::from(*p).into());
            toml::Value::Table(e)
        })
        .collect::<Vec<toml::Value>>()
        .into()
}
