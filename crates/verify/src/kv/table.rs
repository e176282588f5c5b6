//! The table of acknowledged writes of a key-value (YCSB) workload: one 24-byte entry per key
//! the workload can reach (its records plus the inserts it may do), allocated once before the
//! run, and the per-session [`KvStamper`] that records each write in it. Nothing here
//! allocates, locks, formats or reads the clock per operation: a write costs one atomic add
//! when it starts and two or three atomic updates of its key's entry when it completes.
//!
//! Generations. Writes to one key are numbered in the order they start: the write's sequence
//! number is taken from its key's entry with one atomic add, and its generation (in the
//! stamp) is `base + sequence`, `base` being the wall clock in ns when the table was made, so
//! a later run's writes are newer than an earlier run's.
//!
//! Concurrent writers to one key. YCSB's workers pick keys at random, so several may write one
//! key at once, and the server may apply them in any order: the last acknowledged write is not
//! necessarily the one the key holds. A write W is *overtaken* when another acknowledged
//! write started after W completed: then W's value must be gone. The key must hold a write
//! that was not overtaken, which is one of those in flight together at the end. Each entry
//! keeps:
//!
//! - the number of writes started and of writes in flight (one `u64`: one atomic add starts a
//!   write, one atomic subtraction ends it);
//! - `low`: the sequence number the key had reached when its last write in flight completed
//!   (every write started since has a number at or above it, so it is at or below the oldest
//!   write in flight);
//! - `acked`: the highest sequence number acknowledged;
//! - `floor`: the highest `low` seen by an acknowledged write when it started. Every write
//!   below the floor had completed before an acknowledged write started: it was overtaken.
//!   The verify pass finds the key intact when it holds a generation at or above the floor,
//!   lost when it holds an older one.
//!
//! Without concurrent writers (one thread, or writes to a key never overlapping) the floor is
//! the last acknowledged write itself: exact. While writes to a key overlap without pause, the
//! floor stays where the key last had none in flight: a loss inside such a burst is found only
//! back to that point (counted intact, never a false loss).
//!
//! A failed write (an error, a timeout) may or may not have landed; a value at or above the
//! floor is intact either way, and one below it is a loss whatever failed, so failed writes
//! are only counted (`failed`), not excluded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::super::VerifyError;

/// Sequence numbers per key per run stop here: a key written more often is no longer tracked.
pub const MAX_SEQUENCE: u32 = u32::MAX - 1;
/// `failed` of a key no longer tracked (written more than [`MAX_SEQUENCE`] times).
pub const UNTRACKED: u32 = u32::MAX;
const IN_FLIGHT: u64 = (1 << 32) - 1;
const ONE_STARTED: u64 = 1 << 32;

/// One key's entry (24 bytes).
#[derive(Debug, Default)]
#[repr(C)]
pub struct KeyEntry {
    /// Writes started (high 32 bits) and in flight (low 32 bits).
    write: AtomicU64,
    low: AtomicU32,
    acked: AtomicU32,
    floor: AtomicU32,
    /// The highest sequence number of a write that failed ([`UNTRACKED`]: not tracked).
    failed: AtomicU32,
}

/// What the table knows of one key after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyState {
    /// Highest acknowledged sequence number (0: never acknowledged).
    pub acked: u32,
    /// The key must hold a sequence number at or above this.
    pub floor: u32,
    /// Highest failed sequence number (0: none; [`UNTRACKED`]: not tracked).
    pub failed: u32,
}

/// How a write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The store acknowledged it.
    Acked,
    /// Nothing was written (an update of a record that is not there).
    NotWritten,
    /// It failed: it may or may not have landed.
    Failed,
}

/// Acknowledged writes of every key of one target.
#[derive(Debug)]
pub struct KvTable {
    /// The target's name in the study.
    pub target: String,
    pub generation_base: u64,
    entries: Box<[KeyEntry]>,
    /// Writes to a key outside the table (none when the table is sized right).
    untracked_writes: AtomicU64,
}

impl KvTable {
    /// An empty table for key numbers `0..keys`.
    pub fn new(target: &str, keys: u64) -> Result<KvTable, VerifyError> {
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            & (u64::MAX >> 2);
        Self::with_base(target, keys, base.max(1))
    }

    pub fn with_base(
        target: &str,
        keys: u64,
        generation_base: u64,
    ) -> Result<KvTable, VerifyError> {
        let n = usize::try_from(keys).unwrap_or(usize::MAX);
        let bytes = n.saturating_mul(std::mem::size_of::<KeyEntry>());
        let mut v: Vec<KeyEntry> = Vec::new();
        v.try_reserve_exact(n).map_err(|_| {
            VerifyError::Invalid(format!(
                "target `{target}`: cannot allocate the table of acknowledged writes ({bytes} bytes for {keys} keys)"
            ))
        })?;
        v.resize_with(n, KeyEntry::default);
        Ok(KvTable {
            target: target.to_string(),
            generation_base,
            entries: v.into_boxed_slice(),
            untracked_writes: AtomicU64::new(0),
        })
    }

    /// Keys the table covers (key numbers `0..keys`).
    pub fn keys(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Bytes the table takes.
    pub fn bytes(&self) -> u64 {
        self.keys() * std::mem::size_of::<KeyEntry>() as u64
    }

    /// The generation written for sequence number `seq`.
    #[inline]
    pub fn generation(&self, seq: u32) -> u64 {
        self.generation_base + seq as u64
    }

    /// Starts a write to `keynum`: its sequence number and the floor it would set, or None
    /// when the key is outside the table or no longer tracked.
    #[inline]
    pub fn begin(&self, keynum: u64) -> Option<(u32, u32)> {
        let Some(e) = self.entries.get(keynum as usize) else {
            self.untracked_writes.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let old = e.write.fetch_add(ONE_STARTED + 1, Ordering::AcqRel);
        let started = (old >> 32) as u32;
        if started >= MAX_SEQUENCE {
            e.write.fetch_sub(1, Ordering::AcqRel);
            e.failed.store(UNTRACKED, Ordering::Relaxed);
            return None;
        }
        let seq = started + 1;
        // With nothing else in flight every earlier write has completed: the floor is this
        // write. Otherwise the key's `low` is at or below the oldest write in flight.
        let low = if old & IN_FLIGHT == 0 {
            seq
        } else {
            e.low.load(Ordering::Acquire).max(1)
        };
        Some((seq, low))
    }

    /// Ends the write `seq` to `keynum` that started with `low`.
    #[inline]
    pub fn end(&self, keynum: u64, seq: u32, low: u32, outcome: WriteOutcome) {
        let Some(e) = self.entries.get(keynum as usize) else {
            return;
        };
        match outcome {
            WriteOutcome::Acked => {
                e.acked.fetch_max(seq, Ordering::Relaxed);
                e.floor.fetch_max(low, Ordering::Relaxed);
            }
            WriteOutcome::Failed => {
                e.failed.fetch_max(seq, Ordering::Relaxed);
            }
            WriteOutcome::NotWritten => {}
        }
        let old = e.write.fetch_sub(1, Ordering::AcqRel);
        if old & IN_FLIGHT == 1 {
            // The last write in flight: every write started so far has completed.
            e.low
                .fetch_max(((old >> 32) as u32).saturating_add(1), Ordering::Release);
        }
    }

    /// What the table knows of key `keynum`.
    pub fn state(&self, keynum: u64) -> KeyState {
        self.entries
            .get(keynum as usize)
            .map(|e| KeyState {
                acked: e.acked.load(Ordering::Acquire),
                floor: e.floor.load(Ordering::Acquire),
                failed: e.failed.load(Ordering::Acquire),
            })
            .unwrap_or_default()
    }

    /// Writes to keys outside the table.
    pub fn untracked_writes(&self) -> u64 {
        self.untracked_writes.load(Ordering::Acquire)
    }

    /// Rebuilds a table from saved states (nothing in flight).
    pub fn from_states(
        target: &str,
        generation_base: u64,
        states: &[KeyState],
    ) -> Result<KvTable, VerifyError> {
        let t = Self::with_base(target, states.len() as u64, generation_base)?;
        for (e, s) in t.entries.iter().zip(states) {
            e.write.store((s.acked as u64) << 32, Ordering::Relaxed);
            e.acked.store(s.acked, Ordering::Relaxed);
            e.floor.store(s.floor, Ordering::Relaxed);
            e.failed.store(s.failed, Ordering::Relaxed);
        }
        Ok(t)
    }
}

/// One session's side of verified key-value writes: starts each write (its key, sequence
/// number and the generation its values are stamped with) and ends it in the table. One
/// write per slot (the queue depth) plus one for operations a session runs on the spot.
#[derive(Debug)]
pub struct KvStamper {
    table: Arc<KvTable>,
    slots: Vec<SlotWrite>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SlotWrite {
    keynum: u64,
    seq: u32,
    low: u32,
}

impl KvStamper {
    /// A stamper for a session with `slots` slots.
    pub fn new(table: Arc<KvTable>, slots: usize) -> KvStamper {
        KvStamper {
            table,
            slots: vec![SlotWrite::default(); slots + 1],
        }
    }

    /// The slot of writes run on the spot (by `submit`).
    #[inline]
    fn index(&self, slot: Option<u32>) -> usize {
        match slot {
            Some(s) if (s as usize) < self.slots.len() - 1 => s as usize,
            _ => self.slots.len() - 1,
        }
    }

    /// Starts a write of `keynum` from `slot` (None: run on the spot): the generation to
    /// stamp its values with, or 0 when the key is not tracked (values go unstamped).
    #[inline]
    pub fn begin(&mut self, slot: Option<u32>, keynum: u64) -> u64 {
        let i = self.index(slot);
        match self.table.begin(keynum) {
            Some((seq, low)) => {
                self.slots[i] = SlotWrite { keynum, seq, low };
                self.table.generation(seq)
            }
            None => {
                self.slots[i].seq = 0;
                0
            }
        }
    }

    /// Ends the write in `slot`.
    #[inline]
    pub fn end(&mut self, slot: Option<u32>, outcome: WriteOutcome) {
        let i = self.index(slot);
        let w = std::mem::take(&mut self.slots[i]);
        if w.seq != 0 {
            self.table.end(w.keynum, w.seq, w.low, outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> KvTable {
        KvTable::with_base("t", 8, 1000).unwrap()
    }

    #[test]
    fn one_writer_sets_the_floor_to_its_last_acknowledged_write() {
        let t = table();
        let (s1, l1) = t.begin(3).unwrap();
        assert_eq!((s1, l1), (1, 1));
        t.end(3, s1, l1, WriteOutcome::Acked);
        let (s2, l2) = t.begin(3).unwrap();
        assert_eq!((s2, l2), (2, 2));
        t.end(3, s2, l2, WriteOutcome::Acked);
        assert_eq!(
            t.state(3),
            KeyState {
                acked: 2,
                floor: 2,
                failed: 0
            }
        );
        // A failed write is counted; one that wrote nothing changes nothing.
        let (s3, l3) = t.begin(3).unwrap();
        t.end(3, s3, l3, WriteOutcome::Failed);
        let (s4, l4) = t.begin(3).unwrap();
        t.end(3, s4, l4, WriteOutcome::NotWritten);
        assert_eq!(
            t.state(3),
            KeyState {
                acked: 2,
                floor: 2,
                failed: 3
            }
        );
        assert_eq!(t.generation(2), 1002);
        // Outside the table: counted, not tracked.
        assert!(t.begin(8).is_none());
        assert_eq!(t.untracked_writes(), 1);
        assert_eq!(t.state(0), KeyState::default());
    }

    /// Two writes in flight together, acknowledged in either order: the key may hold either,
    /// so the floor is the older one; a write started after both completed raises it.
    #[test]
    fn overlapping_writes_accept_either_and_a_later_one_raises_the_floor() {
        let t = table();
        let (a, la) = t.begin(5).unwrap();
        let (b, lb) = t.begin(5).unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(lb, 1, "b started while a was in flight");
        t.end(5, b, lb, WriteOutcome::Acked);
        t.end(5, a, la, WriteOutcome::Acked);
        assert_eq!(
            t.state(5),
            KeyState {
                acked: 2,
                floor: 1,
                failed: 0
            }
        );
        let (c, lc) = t.begin(5).unwrap();
        assert_eq!((c, lc), (3, 3));
        t.end(5, c, lc, WriteOutcome::Acked);
        assert_eq!(t.state(5).floor, 3);
        // A write started while another is in flight, which completes before the second
        // does: the floor stays at or below the oldest write in flight.
        let (d, ld) = t.begin(5).unwrap();
        let (e, le) = t.begin(5).unwrap();
        t.end(5, d, ld, WriteOutcome::Acked);
        let (f, lf) = t.begin(5).unwrap();
        assert_eq!((d, e, f), (4, 5, 6));
        assert!(lf <= e, "{lf}");
        t.end(5, e, le, WriteOutcome::Acked);
        t.end(5, f, lf, WriteOutcome::Acked);
        assert!(t.state(5).floor <= 5);
        // Nothing in flight: the key's low is the next sequence number.
        let (g, lg) = t.begin(5).unwrap();
        assert_eq!((g, lg), (7, 7));
        t.end(5, g, lg, WriteOutcome::Acked);
    }

    #[test]
    fn a_stamper_remembers_each_slot_write() {
        let t = Arc::new(table());
        let mut s = KvStamper::new(Arc::clone(&t), 2);
        assert_eq!(s.begin(Some(0), 1), 1001);
        assert_eq!(s.begin(Some(1), 2), 1001);
        assert_eq!(s.begin(None, 1), 1002);
        s.end(Some(1), WriteOutcome::Acked);
        s.end(None, WriteOutcome::Acked);
        s.end(Some(0), WriteOutcome::Failed);
        assert_eq!(t.state(2).acked, 1);
        assert_eq!(
            t.state(1),
            KeyState {
                acked: 2,
                floor: 1,
                failed: 1
            }
        );
        // Ending a slot twice does nothing.
        s.end(Some(0), WriteOutcome::Acked);
        assert_eq!(t.state(1).acked, 2);
    }
}
