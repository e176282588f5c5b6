//! The lost-transaction ledger of pgbench workloads (`verify = true`): every transaction's
//! history row carries a tag of 22 characters (pgbench_history's `filler` column, so the
//! schema stays pgbench's): this run's tag (6 characters), the worker (4 digits) and the
//! worker's transaction number (12 digits, from 1). Each worker numbers its transactions in
//! order and keeps, in a [`Ledger`] allocated before the run, the last number whose outcome it
//! knows and the numbers that failed (their commit may or may not have landed), at most
//! [`FAILED_PER_WORKER`] of them: past that, its later transactions are untracked (counted,
//! not checked). Recording is two relaxed atomic stores by the worker that owns the entry: no
//! allocation, lock or message per transaction.
//!
//! After the run the target reads back every history row with the run's tag
//! ([`Ledger::check`]): an acknowledged transaction without its row is lost. The result is a
//! key-value verify report ([`KvVerifyReport`]) whose keys are transactions (`wW:tN`):
//! `intact` found, `missing` lost, `newer-than-acknowledged` the failed ones whose row is there
//! anyway, `keys-with-failed-writes` the failed ones.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::kv::{KvClass, KvVerifyReport};

/// Failed transactions a worker can remember.
pub const FAILED_PER_WORKER: usize = 1024;
/// Characters of the tag (pgbench_history.filler is `char(22)`).
pub const TAG_BYTES: usize = 22;
const RUN_TAG: usize = 6;
const WORKER_DIGITS: usize = 4;

/// One worker's acknowledged transactions.
struct WorkerLedger {
    /// The last transaction number whose outcome is known (acknowledged or failed).
    last: AtomicU64,
    failed: Box<[AtomicU64]>,
    failed_len: AtomicU32,
    /// The first transaction not tracked (its failure did not fit); 0: all tracked.
    untracked_from: AtomicU64,
}

/// The ledger of one target's run.
pub struct Ledger {
    pub target: String,
    tag: [u8; RUN_TAG],
    workers: Box<[WorkerLedger]>,
}

impl Ledger {
    /// A ledger for `workers` workers; the run tag from the wall clock and `seed`.
    pub fn new(target: &str, workers: u32, seed: u64) -> Ledger {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut x =
            storlab_model::seed::mix_seed(seed, &[now, storlab_model::seed::name_hash(target)]);
        let mut tag = [0u8; RUN_TAG];
        for b in &mut tag {
            *b = b"0123456789abcdefghijklmnopqrstuvwxyz"[(x % 36) as usize];
            x /= 36;
        }
        Ledger {
            target: target.to_string(),
            tag,
            workers: (0..workers)
                .map(|_| WorkerLedger {
                    last: AtomicU64::new(0),
                    failed: (0..FAILED_PER_WORKER).map(|_| AtomicU64::new(0)).collect(),
                    failed_len: AtomicU32::new(0),
                    untracked_from: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// The run's tag: what every tagged history row starts with.
    pub fn run_tag(&self) -> &str {
        std::str::from_utf8(&self.tag).unwrap_or("")
    }

    /// Writes the tag of transaction `txn` of `worker` into `out` (no allocation).
    #[inline]
    pub fn write_tag(&self, worker: u32, txn: u64, out: &mut [u8; TAG_BYTES]) {
        out[..RUN_TAG].copy_from_slice(&self.tag);
        let mut put = |from: usize, len: usize, mut v: u64| {
            for i in (from..from + len).rev() {
                out[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(RUN_TAG, WORKER_DIGITS, worker as u64);
        put(
            RUN_TAG + WORKER_DIGITS,
            TAG_BYTES - RUN_TAG - WORKER_DIGITS,
            txn,
        );
    }

    /// Reads (worker, transaction) back from a tag of this run.
    pub fn parse_tag(&self, tag: &str) -> Option<(u32, u64)> {
        let b = tag.as_bytes();
        if b.len() != TAG_BYTES || b[..RUN_TAG] != self.tag {
            return None;
        }
        let w = tag[RUN_TAG..RUN_TAG + WORKER_DIGITS].parse().ok()?;
        let t = tag[RUN_TAG + WORKER_DIGITS..].parse().ok()?;
        Some((w, t))
    }

    /// Transaction `txn` of `worker` is over: acknowledged (`ok`) or failed.
    #[inline]
    pub fn record(&self, worker: u32, txn: u64, ok: bool) {
        let Some(w) = self.workers.get(worker as usize) else {
            return;
        };
        if w.untracked_from.load(Ordering::Relaxed) != 0 {
            w.last.store(txn, Ordering::Relaxed);
            return;
        }
        if !ok {
            let n = w.failed_len.load(Ordering::Relaxed) as usize;
            if n == FAILED_PER_WORKER {
                w.untracked_from.store(txn, Ordering::Relaxed);
                w.last.store(txn, Ordering::Relaxed);
                return;
            }
            w.failed[n].store(txn, Ordering::Relaxed);
            w.failed_len.store(n as u32 + 1, Ordering::Relaxed);
        }
        w.last.store(txn, Ordering::Relaxed);
    }

    /// Classifies every tracked transaction of the run from the tags of the history rows
    /// found (`found` yields each row's filler). Not timed here: the caller times the read.
    pub fn check<S: AsRef<str>, E>(
        &self,
        found: impl Iterator<Item = Result<Option<S>, E>>,
    ) -> Result<KvVerifyReport, E> {
        let mut seen: Vec<Vec<bool>> = self
            .workers
            .iter()
            .map(|w| vec![false; w.last.load(Ordering::Relaxed) as usize + 1])
            .collect();
        let mut duplicates = 0u64;
        for tag in found {
            let Some((w, t)) = tag?.and_then(|s| self.parse_tag(s.as_ref())) else {
                continue;
            };
            if let Some(slot) = seen.get_mut(w as usize).and_then(|s| s.get_mut(t as usize)) {
                duplicates += u64::from(*slot);
                *slot = true;
            }
        }
        let mut r = KvVerifyReport {
            target: self.target.clone(),
            ..Default::default()
        };
        for (wi, (w, seen)) in self.workers.iter().zip(&seen).enumerate() {
            let n = w.failed_len.load(Ordering::Relaxed) as usize;
            let mut failed: Vec<u64> = w.failed[..n]
                .iter()
                .map(|f| f.load(Ordering::Relaxed))
                .collect();
            failed.sort_unstable();
            let from = w.untracked_from.load(Ordering::Relaxed);
            let tracked_end = if from == 0 { seen.len() as u64 } else { from };
            r.untracked_writes += seen.len() as u64 - tracked_end;
            for t in 1..tracked_end {
                let present = seen[t as usize];
                if failed.binary_search(&t).is_ok() {
                    r.keys_with_failed_writes += 1;
                    r.newer_than_acknowledged += u64::from(present);
                    continue;
                }
                r.keys_acknowledged += 1;
                let class = if present {
                    KvClass::Intact
                } else {
                    KvClass::Missing
                };
                r.add(class, &format!("w{wi}:t{t}"));
            }
        }
        // A row twice would be a replayed commit: as damaging as a lost one.
        if duplicates > 0 {
            r.corrupt.keys += duplicates;
            r.keys_checked += duplicates;
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_missing_acknowledged_transactions_count_as_lost() {
        let l = Ledger::new("pg", 2, 1);
        let mut tag = [0u8; TAG_BYTES];
        l.write_tag(1, 42, &mut tag);
        let s = std::str::from_utf8(&tag).unwrap().to_string();
        assert!(s.starts_with(l.run_tag()));
        assert_eq!(&s[6..], "0001000000000042");
        assert_eq!(l.parse_tag(&s), Some((1, 42)));
        assert_eq!(l.parse_tag("zzzzzz0001000000000042"), None);
        for t in 1..=5 {
            l.record(0, t, t != 3);
        }
        l.record(1, 1, true);
        // Rows: worker 0 has 1, 2, 3 (failed but landed), 5; worker 1 none; a foreign row.
        let mut rows = Vec::new();
        for t in [1u64, 2, 3, 5] {
            l.write_tag(0, t, &mut tag);
            rows.push(String::from_utf8(tag.to_vec()).unwrap());
        }
        rows.push("someone else's row    ".into());
        let r = l
            .check(
                rows.iter()
                    .map(|s| Ok::<_, ()>(Some(s.as_str())))
                    .chain([Ok(None)]),
            )
            .unwrap();
        assert_eq!(r.keys_checked, 5);
        assert_eq!(r.intact.keys, 3);
        assert_eq!(r.missing.keys, 2);
        assert_eq!(r.missing.first_keys, vec!["w0:t4", "w1:t1"]);
        assert_eq!(
            (r.keys_with_failed_writes, r.newer_than_acknowledged),
            (1, 1)
        );
    }

    #[test]
    fn failures_past_the_table_make_later_transactions_untracked() {
        let l = Ledger::new("pg", 1, 1);
        for t in 1..=FAILED_PER_WORKER as u64 + 10 {
            l.record(0, t, false);
        }
        let r = l
            .check(std::iter::empty::<Result<Option<&str>, ()>>())
            .unwrap();
        assert_eq!(r.keys_with_failed_writes, FAILED_PER_WORKER as u64);
        assert_eq!(r.untracked_writes, 10);
        assert_eq!(r.damaged(), 0);
    }
}
