//! A checkpoint workload's ranks: each one's operations ([`CheckpointSource`]), the clock they
//! meet at ([`CheckpointClock`]), and how an operation's offset names a piece of a file
//! ([`pack`]) and what its first bytes say ([`stamp`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::layout::Layout;
use storlab_model::op::Op;
use storlab_model::training::CheckpointPass;

/// The bits of an operation's offset that hold the position in the file, then the file.
pub(crate) const POS_BITS: u32 = 40;
pub(crate) const FILE_BITS: u32 = 16;
/// Most checkpoints a run writes or reads (the offset's top 8 bits).
pub const MAX_CHECKPOINTS: u32 = 255;

/// An operation's offset: checkpoint `checkpoint` (from 0), file `file` of the layout, byte
/// `pos` of it.
pub fn pack(checkpoint: u32, file: u32, pos: u64) -> u64 {
    (u64::from(checkpoint) << (POS_BITS + FILE_BITS)) | (u64::from(file) << POS_BITS) | pos
}

/// The (checkpoint, file, position) an offset packs.
pub fn unpack(offset: u64) -> (u32, u32, u64) {
    (
        (offset >> (POS_BITS + FILE_BITS)) as u32,
        ((offset >> POS_BITS) & ((1 << FILE_BITS) - 1)) as u32,
        offset & ((1 << POS_BITS) - 1),
    )
}

/// The first bytes of every piece a rank writes: where it belongs, checked when read back.
pub const STAMP_BYTES: usize = 32;

/// The stamp of piece `piece` of `file` in `checkpoint` (from 0), for a run seeded `seed`.
pub fn stamp(checkpoint: u32, file: u32, piece: u64, seed: u64) -> [u8; STAMP_BYTES] {
    let mut s = [0u8; STAMP_BYTES];
    s[..8].copy_from_slice(b"STLBCKPT");
    s[8..12].copy_from_slice(&checkpoint.to_le_bytes());
    s[12..16].copy_from_slice(&file.to_le_bytes());
    s[16..24].copy_from_slice(&piece.to_le_bytes());
    s[24..32].copy_from_slice(&seed.to_le_bytes());
    s
}

/// Where a checkpoint workload's ranks meet: before each checkpoint they train for the
/// workload's time between checkpoints and wait for each other (a barrier); the clock stamps
/// when each rank started and ended each checkpoint.
pub struct CheckpointClock {
    origin: Instant,
    ranks: u32,
    writes: u32,
    reads: u32,
    between: Duration,
    /// (pass x ranks + rank) x 2 + {0: start, 1: end}: ns from the origin + 1 (0: none).
    stamps: Box<[AtomicU64]>,
    /// Ranks that reached each pass's barrier.
    arrived: Mutex<Vec<u32>>,
    all_arrived: Condvar,
    /// A rank ended early: no barrier will fill.
    gone: AtomicBool,
}

impl CheckpointClock {
    /// A clock for `ranks` ranks that write `writes` checkpoints, then read `reads`, training
    /// `between` before each.
    pub fn new(ranks: u32, writes: u32, reads: u32, between: Duration) -> CheckpointClock {
        let passes = writes + reads;
        CheckpointClock {
            origin: Instant::now(),
            ranks,
            writes,
            reads,
            between,
            stamps: (0..passes as usize * ranks as usize * 2)
                .map(|_| AtomicU64::new(0))
                .collect(),
            arrived: Mutex::new(vec![0; passes as usize]),
            all_arrived: Condvar::new(),
            gone: AtomicBool::new(false),
        }
    }

    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn stamp(&self, pass: u32, rank: u32, end: bool) {
        let i = (pass as usize * self.ranks as usize + rank as usize) * 2 + usize::from(end);
        self.stamps[i].store(self.now_ns() + 1, Ordering::Release);
    }

    /// Rank `rank` trains for the time between checkpoints, then waits for every rank; then
    /// the pass starts. False: a rank is gone, the run ends.
    fn begin(&self, pass: u32, rank: u32) -> bool {
        let until = Instant::now() + self.between;
        loop {
            if self.gone.load(Ordering::Acquire) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        let mut arrived = self.arrived.lock().unwrap_or_else(|p| p.into_inner());
        arrived[pass as usize] += 1;
        if arrived[pass as usize] == self.ranks {
            self.all_arrived.notify_all();
        }
        while arrived[pass as usize] < self.ranks {
            if self.gone.load(Ordering::Acquire) {
                return false;
            }
            arrived = self
                .all_arrived
                .wait_timeout(arrived, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(arrived);
        self.stamp(pass, rank, false);
        true
    }

    fn rank_gone(&self) {
        self.gone.store(true, Ordering::Release);
        let _guard = self.arrived.lock().unwrap_or_else(|p| p.into_inner());
        self.all_arrived.notify_all();
    }

    fn pass(&self, pass: u32, checkpoint: u32) -> CheckpointPass {
        let ranks = (0..self.ranks)
            .map(|r| {
                let i = (pass as usize * self.ranks as usize + r as usize) * 2;
                let (s, e) = (
                    self.stamps[i].load(Ordering::Acquire),
                    self.stamps[i + 1].load(Ordering::Acquire),
                );
                (s != 0 && e != 0).then(|| (s - 1, e - 1))
            })
            .collect();
        CheckpointPass {
            checkpoint: checkpoint + 1,
            ranks,
        }
    }

    /// Each checkpoint written, then each read, with every rank's stamps.
    pub fn passes(&self) -> (Vec<CheckpointPass>, Vec<CheckpointPass>) {
        let writes = (0..self.writes).map(|k| self.pass(k, k)).collect();
        let reads = (0..self.reads)
            .map(|k| self.pass(self.writes + k, k))
            .collect();
        (writes, reads)
    }
}

/// One rank's operations: each checkpoint's files in turn, written (then synced) or read,
/// in pieces of at most `io-bytes`.
pub struct CheckpointSource {
    clock: Arc<CheckpointClock>,
    layout: Arc<Layout>,
    rank: u32,
    io_bytes: u64,
    fsync: bool,
    /// The pass (writes first, then reads), the file of the layout and the next byte of it.
    pass: u32,
    file: usize,
    pos: u64,
    /// The pass has begun (its barrier passed); the file's fsync or empty write was issued.
    started: bool,
    file_ended: bool,
    done: bool,
}

impl CheckpointSource {
    /// Rank `rank`'s source: its files of `layout`, in pieces of at most `io_bytes`, each
    /// written file synced when `fsync`.
    pub fn new(
        clock: Arc<CheckpointClock>,
        layout: Arc<Layout>,
        rank: u32,
        io_bytes: u64,
        fsync: bool,
    ) -> CheckpointSource {
        CheckpointSource {
            clock,
            layout,
            rank,
            io_bytes,
            fsync,
            pass: 0,
            file: 0,
            pos: 0,
            started: false,
            file_ended: false,
            done: false,
        }
    }

    /// The next operation, or None when every pass is over (or a rank is gone). Called
    /// after the previous operation completed (queue depth 1).
    pub fn next_op(&mut self) -> Option<Op> {
        let writes = self.clock.writes;
        loop {
            if self.done {
                return None;
            }
            if !self.started {
                let passes = writes + self.clock.reads;
                if self.pass >= passes || !self.clock.begin(self.pass, self.rank) {
                    self.finish();
                    return None;
                }
                self.started = true;
                self.file = self.layout.rank_files(self.rank).start;
                self.pos = 0;
                self.file_ended = false;
            }
            if self.file >= self.layout.rank_files(self.rank).end {
                self.clock.stamp(self.pass, self.rank, true);
                self.pass += 1;
                self.started = false;
                continue;
            }
            let bytes = self.layout.files[self.file].bytes;
            let writing = self.pass < writes;
            let checkpoint = if writing {
                self.pass
            } else {
                self.pass - writes
            };
            let at = pack(checkpoint, self.file as u32, self.pos);
            if self.pos < bytes || (bytes == 0 && !self.file_ended) {
                let len = (bytes - self.pos).min(self.io_bytes);
                self.pos += len;
                self.file_ended = bytes == 0;
                return Some(if writing {
                    Op::Write { offset: at, len }
                } else {
                    Op::Read { offset: at, len }
                });
            }
            if writing && self.fsync && !self.file_ended {
                self.file_ended = true;
                return Some(Op::Fsync);
            }
            self.file += 1;
            self.pos = 0;
            self.file_ended = false;
        }
    }

    fn finish(&mut self) {
        if !self.done {
            self.done = true;
            if self.pass < self.clock.writes + self.clock.reads {
                self.clock.rank_gone();
            }
        }
    }
}

impl Drop for CheckpointSource {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_pack_and_unpack() {
        let at = pack(254, 65_535, (1 << 40) - 1);
        assert_eq!(unpack(at), (254, 65_535, (1 << 40) - 1));
        assert_eq!(unpack(pack(3, 7, 4096)), (3, 7, 4096));
    }
}
