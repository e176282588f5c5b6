//! The key-value verify pass: after the workers stopped, a session of the target reads back
//! every key with an acknowledged write (the whole record, through the binding's own read)
//! and each is classified against the table. It is timed on its own (seconds, keys/s), never
//! part of a run's latency figures.

use std::sync::Arc;

use storlab_targets::{
    Prepared, Session, SessionParams, SessionUser, TargetConfig, WorkloadParams, YcsbParams,
};
use storlab_verify::VerifyError;
use storlab_verify::kv::readback::classify;
use storlab_verify::kv::report::KvVerifyReport;
use storlab_verify::kv::table::KvTable;
use storlab_verify::kv::table::UNTRACKED;
use storlab_workload::ycsb::CoreWorkload;

/// Opens a session of the prepared target and reads back every key of `table`.
pub fn run(
    config: &TargetConfig,
    prepared: &Prepared,
    workload: &Arc<CoreWorkload>,
    table: &KvTable,
) -> Result<KvVerifyReport, VerifyError> {
    let params = SessionParams {
        worker: u32::MAX,
        writes: false,
        region: prepared.region,
        queue_depth: 1,
        seed: 0,
        workload: WorkloadParams::Ycsb(YcsbParams {
            core: Arc::clone(workload),
            verify: None,
        }),
    };
    let user = PassUser { table, workload };
    config
        .open(prepared, &params, user)
        .map_err(|e| VerifyError::Invalid(format!("target `{}`: {e}", table.target)))?
}

/// Reads back every key of `table` with an acknowledged write through `session`.
struct PassUser<'a> {
    table: &'a KvTable,
    workload: &'a CoreWorkload,
}

impl SessionUser for PassUser<'_> {
    type Output = Result<KvVerifyReport, VerifyError>;

    fn run<S: Session>(self, mut session: S) -> Self::Output {
        let started = std::time::Instant::now();
        let t = self.table;
        let w = self.workload;
        let mut r = KvVerifyReport {
            target: t.target.clone(),
            untracked_writes: t.untracked_writes(),
            ..KvVerifyReport::default()
        };
        let mut key = Vec::new();
        for keynum in 0..t.keys() {
            let state = t.state(keynum);
            if state.acked == 0 {
                continue;
            }
            r.keys_acknowledged += 1;
            if state.failed == UNTRACKED {
                r.untracked_writes += 1;
                continue;
            }
            let Some(rb) = session.read_back(keynum) else {
                return Err(VerifyError::Invalid(format!(
                    "target `{}` cannot read records back to verify them",
                    t.target
                )));
            };
            storlab_workload::ycsb::keys::write_key(
                keynum,
                w.zero_padding,
                w.insert_order,
                &mut key,
            );
            let (class, newer) = classify(&rb, state, t.generation_base);
            r.newer_than_acknowledged += u64::from(newer);
            r.keys_with_failed_writes += u64::from(state.failed != 0);
            r.add(class, std::str::from_utf8(&key).unwrap_or("?"));
        }
        r.seconds = started.elapsed().as_secs_f64();
        r.rate_keys = if r.seconds > 0.0 {
            r.keys_checked as f64 / r.seconds
        } else {
            0.0
        };
        Ok(r)
    }
}
