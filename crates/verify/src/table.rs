//! The table of acknowledged generations: one `AtomicU64` per block of the target's region,
//! allocated once before the run (8 bytes per block: 16 MiB for 8 GiB of 4 KiB blocks), and a
//! durable watermark per worker.
//!
//! Who writes which block: with `verify = true` the blocks are partitioned among the target's
//! threads (random access: block `i` belongs to thread `i mod threads`; sequential access:
//! each thread streams through its own slice already), so every entry has one writer and is
//! updated with plain relaxed loads and stores, no read-modify-write and no lock. Partitioning
//! was chosen over a shared maximum because two workers writing the same block at once leave
//! either write on the disk, whichever lands last, and no acknowledgement order could say
//! which one the block must hold. Within a worker, a write to a block whose previous write is
//! still in flight waits for it (the session reaps until it completes, as fio's
//! `serialize_overlap`), for the same reason; those waits are counted.
//!
//! Generations: `base + counter * threads + thread`, with `base` the wall clock in ns when the
//! table was made and `counter` the worker's own write count from 1. They never collide
//! between workers, rise with every write of a worker, and rise from run to run (a later run's
//! first write is newer than any earlier run's, unless it issued over 10^9 writes a second).
//!
//! Durability: a write is durable once an fsync issued by its own worker after the write was
//! acknowledged has completed. Each worker keeps a watermark: every one of its writes with a
//! generation at or below it is durable. (An fsync by another worker syncs the same file too;
//! counting only a worker's own is conservative: such a write is counted unsynced.)

use std::sync::atomic::{AtomicU64, Ordering};

use std::path::Path;

use super::VerifyError;
use super::mapped::{MappedFile, Slots};
use storlab_model::Region;

/// Entry bit: a write to the block is in flight.
pub const IN_FLIGHT: u64 = 1 << 63;
/// Entry bit: a write to the block failed, so its content is unknown (not verified).
pub const FAILED: u64 = 1 << 62;
/// Entry bits holding the last acknowledged generation (0: never written in this table).
pub const GENERATION: u64 = FAILED - 1;

/// Last acknowledged generation of every block of one target.
#[derive(Debug)]
pub struct VerifyTable {
    /// The target's name in the study, and its id in block headers.
    pub target: String,
    pub target_id: u64,
    pub region: Region,
    pub block_bytes: u32,
    /// Threads writing the target (the stripes of the partition).
    pub threads: u32,
    pub generation_base: u64,
    entries: Slots,
    /// Per thread: its writes with a generation at or below this are durable (0: none).
    durable: Slots,
    /// Writes that waited for an earlier write to the same block, per thread.
    serialized: Slots,
    /// The memory the three above point into.
    backing: Backing,
}

/// Where a table's atomics live.
#[derive(Debug)]
enum Backing {
    /// On the heap: durable watermarks, serialized counts, entries.
    Heap(#[allow(dead_code)] Box<[AtomicU64]>),
    /// In a mapped file that outlives storlab.
    Mapped(MappedFile),
}

/// Where a new table keeps its entries.
pub enum Storage<'a> {
    Heap,
    /// In a file mapped at `path` (see [`super::mapped`]), with `meta_json` in its header.
    Mapped {
        path: &'a Path,
        meta_json: &'a str,
    },
}

fn atomics(n: usize, what: &str) -> Result<Box<[AtomicU64]>, VerifyError> {
    let mut v: Vec<AtomicU64> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        VerifyError::Invalid(format!(
            "cannot allocate the table of acknowledged generations ({} bytes for {n} {what})",
            n.saturating_mul(8)
        ))
    })?;
    v.resize_with(n, || AtomicU64::new(0));
    Ok(v.into_boxed_slice())
}

/// The slots of a heap backing of `threads` and `blocks`.
fn heap_slots(b: &mut [AtomicU64], threads: usize) -> [Slots; 3] {
    let p = b.as_mut_ptr();
    let blocks = b.len() - 2 * threads;
    // SAFETY: the three ranges lie inside `b`, which the table keeps as long as the slots (a
    // boxed slice does not move its elements when the box moves).
    unsafe {
        [
            Slots::new(p, threads),
            Slots::new(p.add(threads), threads),
            Slots::new(p.add(2 * threads), blocks),
        ]
    }
}

/// A generation base for a table made now: the wall clock in ns.
pub fn generation_base_now() -> u64 {
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        & (GENERATION >> 1);
    base.max(1)
}

impl VerifyTable {
    /// An empty table for `region` in blocks of `block_bytes`, written by `threads` threads.
    pub fn new(
        target: &str,
        region: Region,
        block_bytes: u32,
        threads: u32,
    ) -> Result<VerifyTable, VerifyError> {
        Self::with_base(target, region, block_bytes, threads, generation_base_now())
    }

    pub fn with_base(
        target: &str,
        region: Region,
        block_bytes: u32,
        threads: u32,
        generation_base: u64,
    ) -> Result<VerifyTable, VerifyError> {
        Self::with_storage(
            target,
            region,
            block_bytes,
            threads,
            generation_base,
            Storage::Heap,
        )
    }

    /// The blocks of a table, or why it cannot be made.
    pub fn blocks_of(
        target: &str,
        region: Region,
        block_bytes: u32,
        threads: u32,
    ) -> Result<u64, VerifyError> {
        if block_bytes < super::header::HEADER_BYTES as u32 {
            return Err(VerifyError::Invalid(format!(
                "blocks of {block_bytes} bytes cannot hold a verify header"
            )));
        }
        let blocks = region.size_bytes / block_bytes as u64;
        if blocks < threads as u64 {
            return Err(VerifyError::Invalid(format!(
                "target `{target}`: {blocks} blocks for {threads} threads: verify gives each thread its own blocks, so the region needs at least one block per thread"
            )));
        }
        Ok(blocks)
    }

    /// An empty table kept where `storage` says.
    pub fn with_storage(
        target: &str,
        region: Region,
        block_bytes: u32,
        threads: u32,
        generation_base: u64,
        storage: Storage,
    ) -> Result<VerifyTable, VerifyError> {
        let blocks = Self::blocks_of(target, region, block_bytes, threads)?;
        let (backing, [durable, serialized, entries]) = match storage {
            Storage::Heap => {
                let n = (blocks as usize).saturating_add(2 * threads as usize);
                let mut b = atomics(n, "blocks")?;
                let slots = heap_slots(&mut b, threads as usize);
                (Backing::Heap(b), slots)
            }
            Storage::Mapped { path, meta_json } => {
                let m = MappedFile::create(path, meta_json, threads, blocks)?;
                let slots = m.slots(blocks as usize);
                (Backing::Mapped(m), slots)
            }
        };
        Ok(VerifyTable {
            target: target.to_string(),
            target_id: storlab_model::seed::name_hash(target),
            region,
            block_bytes,
            threads,
            generation_base,
            entries,
            durable,
            serialized,
            backing,
        })
    }

    /// The mapped file the table lives in, if it does.
    pub fn mapped_file(&self) -> Option<&MappedFile> {
        match &self.backing {
            Backing::Mapped(m) => Some(m),
            Backing::Heap(_) => None,
        }
    }

    pub fn blocks(&self) -> usize {
        self.entries.len()
    }

    /// The block at `offset`, if it starts a block of the region.
    #[inline]
    pub fn block_index(&self, offset: u64) -> Option<usize> {
        let rel = offset.checked_sub(self.region.offset_bytes)?;
        let i = rel / self.block_bytes as u64;
        (rel % self.block_bytes as u64 == 0 && i < self.entries.len() as u64).then_some(i as usize)
    }

    /// Offset of block `index`.
    pub fn offset_of(&self, index: usize) -> u64 {
        self.region.offset_bytes + index as u64 * self.block_bytes as u64
    }

    /// The generation of write number `counter` (from 1) of `thread`.
    #[inline]
    pub fn generation(&self, thread: u32, counter: u64) -> u64 {
        (self.generation_base + counter * self.threads as u64 + thread as u64) & GENERATION
    }

    /// The thread that wrote `generation`.
    pub fn thread_of(&self, generation: u64) -> u32 {
        (generation.wrapping_sub(self.generation_base) % self.threads as u64) as u32
    }

    /// The raw entry of a block (bits [`IN_FLIGHT`], [`FAILED`], [`GENERATION`]).
    #[inline]
    pub fn entry(&self, index: usize) -> u64 {
        self.entries[index].load(Ordering::Relaxed)
    }

    #[inline]
    pub fn in_flight(&self, index: usize) -> bool {
        self.entry(index) & IN_FLIGHT != 0
    }

    /// Marks a write to the block as in flight (by its owner).
    #[inline]
    pub fn begin_write(&self, index: usize) {
        let e = &self.entries[index];
        e.store(e.load(Ordering::Relaxed) | IN_FLIGHT, Ordering::Relaxed);
    }

    /// The write of `generation` to the block completed: acknowledged, or failed (its content
    /// is then unknown until a later write succeeds).
    #[inline]
    pub fn end_write(&self, index: usize, generation: u64, ok: bool) {
        let e = &self.entries[index];
        let old = e.load(Ordering::Relaxed) & GENERATION;
        let new = if ok {
            old.max(generation)
        } else {
            old | FAILED
        };
        e.store(new, Ordering::Release);
    }

    /// Every write of `thread` with a generation at or below `generation` is durable.
    #[inline]
    pub fn make_durable(&self, thread: u32, generation: u64) {
        let d = &self.durable[thread as usize];
        if generation > d.load(Ordering::Relaxed) {
            d.store(generation, Ordering::Release);
        }
    }

    /// The durable watermark of `thread`.
    pub fn durable(&self, thread: u32) -> u64 {
        self.durable[thread as usize].load(Ordering::Acquire)
    }

    /// `thread` made a write wait for an earlier one to the same block.
    #[inline]
    pub fn count_serialized(&self, thread: u32) {
        let s = &self.serialized[thread as usize];
        s.store(s.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Writes that waited for an earlier write to the same block, all threads.
    pub fn serialized(&self) -> u64 {
        self.serialized
            .iter()
            .map(|s| s.load(Ordering::Acquire))
            .sum()
    }

    /// Rebuilds a table from saved entries, watermarks and serialized counts (all zero when
    /// `serialized` is empty), on the heap.
    pub fn from_parts(
        mut proto: VerifyTable,
        entries: Vec<u64>,
        durable: Vec<u64>,
        serialized: Vec<u64>,
    ) -> VerifyTable {
        let threads = durable.len();
        let serialized = if serialized.len() == threads {
            serialized
        } else {
            vec![0; threads]
        };
        let mut b: Box<[AtomicU64]> = durable
            .into_iter()
            .chain(serialized)
            .chain(entries)
            .map(AtomicU64::new)
            .collect();
        [proto.durable, proto.serialized, proto.entries] = heap_slots(&mut b, threads);
        proto.backing = Backing::Heap(b);
        proto
    }

    /// The watermarks of all threads.
    pub fn durable_all(&self) -> Vec<u64> {
        self.durable
            .iter()
            .map(|d| d.load(Ordering::Acquire))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> VerifyTable {
        VerifyTable::with_base(
            "t",
            Region {
                offset_bytes: 4096,
                size_bytes: 16 * 4096,
            },
            4096,
            2,
            1000,
        )
        .unwrap()
    }

    #[test]
    fn generations_of_two_threads_never_collide_and_name_their_thread() {
        let t = table();
        let a: Vec<u64> = (1..100).map(|c| t.generation(0, c)).collect();
        let b: Vec<u64> = (1..100).map(|c| t.generation(1, c)).collect();
        assert!(a.iter().all(|g| !b.contains(g)));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&g| t.thread_of(g) == 0));
        assert!(b.iter().all(|&g| t.thread_of(g) == 1));
    }

    #[test]
    fn entries_keep_the_newest_acknowledged_generation_and_mark_failures() {
        let t = table();
        assert_eq!(t.block_index(4096), Some(0));
        assert_eq!(t.block_index(4096 + 100), None);
        assert_eq!(t.block_index(0), None);
        assert_eq!(t.block_index(4096 + 16 * 4096), None);
        t.begin_write(3);
        assert!(t.in_flight(3));
        t.end_write(3, 1010, true);
        assert_eq!(t.entry(3), 1010);
        t.begin_write(3);
        t.end_write(3, 1005, true);
        assert_eq!(t.entry(3), 1010);
        t.begin_write(3);
        t.end_write(3, 1020, false);
        assert_eq!(t.entry(3), 1010 | FAILED);
        t.make_durable(1, 1010);
        t.make_durable(1, 1004);
        assert_eq!(t.durable(1), 1010);
    }

    #[test]
    fn too_few_blocks_for_the_threads_is_refused() {
        let e = VerifyTable::with_base(
            "t",
            Region {
                offset_bytes: 0,
                size_bytes: 8192,
            },
            4096,
            3,
            1,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("at least one block per thread"),
            "{e}"
        );
    }
}
