//! Workloads: what operations a worker issues next. A workload's parameters come from a study
//! file (and its sweeps); a source built from them per worker turns them into [`Op`]s without
//! allocating. Block workloads (this file) issue random or sequential offsets aligned inside
//! the target's region, with a read share and an fsync every N writes; key-value workloads
//! with db_bench's semantics are in [`kv`].
//!
//! Random streams: a run's seed is derived from the workload's `seed` (the study's by default),
//! the run's place in the study and what the workload does ([`Workload::run_seed`]); each
//! thread's from the run's seed and its index ([`thread_seed`]). So a read never replays the
//! key or offset sequence of the fill before it, and the same study draws the same streams.

pub mod kv;

pub mod ycsb;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::record::OpKind;
use crate::targets::{Op, OptionError, Region};
use crate::units::Bytes;

/// Where in the region operations go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    #[default]
    Random,
    Sequential,
}

/// What written blocks hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteData {
    /// Incompressible random bytes, each block stamped with its offset and a generation.
    #[default]
    Random,
    /// Every byte is `write-pattern`.
    Pattern,
}

/// A block I/O workload, as written in a study's `[workloads.NAME]` table. Every key here can
/// be swept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BlockWorkload {
    #[serde(default)]
    pub access: Access,
    /// Fraction of operations that are reads, 0.0 to 1.0.
    #[serde(default = "default_read_share")]
    pub read_share: f64,
    #[serde(default = "default_block")]
    pub block_size: Bytes,
    /// Offsets are multiples of this (default: the block size).
    pub alignment: Option<Bytes>,
    /// Operations each worker keeps in flight (closed loop), or its limit (open loop).
    #[serde(default = "default_one")]
    pub queue_depth: u32,
    /// Worker threads per target.
    #[serde(default = "default_one")]
    pub threads: u32,
    /// Open loop: operations per second for the whole target, spread over its threads.
    pub rate_ops: Option<f64>,
    /// Open loop: operations per second for each thread.
    pub rate_per_thread_ops: Option<f64>,
    /// Issue an fsync after every N writes (0: never).
    #[serde(default)]
    pub fsync_every: u64,
    #[serde(default)]
    pub write_data: WriteData,
    /// The byte written when `write-data = "pattern"`.
    #[serde(default)]
    pub write_pattern: u8,
    /// Verified writes (as fio's `verify=crc32c`): every written block carries a header with
    /// a crc32c, storlab keeps each block's last acknowledged generation, and a verify pass
    /// reads them back after the run (see [`crate::verify`]).
    #[serde(default)]
    pub verify: bool,
    /// Where to save the table of acknowledged generations after the run, for a later
    /// `storlab verify PATH` (fio's `verify_state_save`). With several targets in one run,
    /// each target's goes to `PATH.TARGET`.
    pub verify_state: Option<std::path::PathBuf>,
    /// Base seed of the offset generators (default: the study's `seed`); each run and thread
    /// draws from a seed derived from it ([`Workload::run_seed`], [`thread_seed`]).
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_read_share() -> f64 {
    1.0
}
fn default_block() -> Bytes {
    Bytes(4096)
}
fn default_one() -> u32 {
    1
}
fn default_seed() -> u64 {
    DEFAULT_SEED
}

/// The seed of a study that sets none.
pub const DEFAULT_SEED: u64 = 0x5eed;

/// splitmix64's output function (Steele, Lea and Flood, 2014): a bijection on u64 whose every
/// output bit depends on every input bit.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Mixes `parts` into `seed`, one splitmix64 round each: different tuples give unrelated seeds,
/// the same tuple the same seed on every machine.
pub fn mix_seed(seed: u64, parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(splitmix64(seed), |h, &p| splitmix64(h ^ splitmix64(p)))
}

/// A name as a number for [`mix_seed`] (64-bit FNV-1a: stable across builds, unlike std's hasher).
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The seed of foreground thread `thread` of a run whose seed is `run_seed`.
#[inline]
pub fn thread_seed(run_seed: u64, thread: u32) -> u64 {
    mix_seed(run_seed, &[thread as u64])
}

/// The seed of a run's background writer: the thread index 2^32, which no foreground thread
/// has.
#[inline]
pub fn writer_seed(run_seed: u64) -> u64 {
    mix_seed(run_seed, &[1 << 32])
}

/// A workload of any type, as a study's `[workloads.NAME]` table gives it: `type = "block"`
/// (the default) or `type = "db-bench"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Workload {
    Block(BlockWorkload),
    DbBench(kv::KvWorkload),
    Ycsb(ycsb::workload::YcsbWorkload),
}

/// The workload types, for messages.
pub const TYPES: &[&str] = &["block", "db-bench", "ycsb"];

/// A worker's operation source, picked once per worker.
pub enum Source {
    Block(BlockSource),
    Kv(kv::KvSource),
    Ycsb(ycsb::workload::YcsbSource),
}

impl Source {
    /// The next operation, or None when the source has no more (a YCSB load thread's share).
    #[inline]
    pub fn next_op(&mut self) -> Option<Op> {
        match self {
            Source::Block(s) => Some(s.next_op()),
            Source::Kv(s) => Some(s.next_op()),
            Source::Ycsb(s) => s.next_op(),
        }
    }

    /// An insert of key number `keynum` is over (YCSB's acknowledged inserts). An error (YCSB's
    /// acknowledgement window overflowed) is to be counted and stops the run, as in YCSB.
    #[inline]
    pub fn acknowledge_insert(&mut self, keynum: u64) -> Result<(), crate::record::OpError> {
        match self {
            Source::Ycsb(s) => s.acknowledge_insert(keynum),
            Source::Block(_) | Source::Kv(_) => Ok(()),
        }
    }
}

/// A worker that runs beside a target's threads and stops when they do; its figures are kept
/// apart (readwhilewriting's writer).
pub struct Background {
    pub source: Source,
    pub kinds: Vec<OpKind>,
    /// Operations per second, or None for as fast as it can.
    pub rate_ops: Option<f64>,
}

impl Workload {
    /// Builds a workload from its table (with sweep values applied), by its `type`.
    pub fn from_table(mut table: toml::Table) -> Result<Workload, OptionError> {
        let ty = match table.remove("type") {
            None => "block".to_string(),
            Some(toml::Value::String(s)) => s,
            Some(_) => {
                return Err(err(
                    "type",
                    format!("type is a string: one of {}", TYPES.join(", ")),
                ));
            }
        };
        match ty.as_str() {
            "block" => BlockWorkload::from_table(table).map(Workload::Block),
            "db-bench" => kv::KvWorkload::from_table(table).map(Workload::DbBench),
            "ycsb" => ycsb::workload::YcsbWorkload::from_table(table).map(Workload::Ycsb),
            other => Err(err(
                "type",
                format!(
                    "unknown workload type `{other}`: expected one of {}",
                    TYPES.join(", ")
                ),
            )),
        }
    }

    /// The keys a sweep may vary for a workload table of this type.
    pub fn sweepable(table: &toml::Table) -> &'static [&'static str] {
        match table.get("type").and_then(|t| t.as_str()) {
            Some("db-bench") => kv::SWEEPABLE,
            Some("ycsb") => ycsb::workload::SWEEPABLE,
            _ => SWEEPABLE,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Workload::Block(_) => "block",
            Workload::DbBench(_) => "db-bench",
            Workload::Ycsb(_) => "ycsb",
        }
    }

    /// The workload's type as stored with its results: `block`, `db-bench`, `ycsb-load` or
    /// `ycsb-run`.
    pub fn result_type(&self) -> &'static str {
        match self {
            Workload::Block(_) => "block",
            Workload::DbBench(_) => "db-bench",
            Workload::Ycsb(w) => match w.phase {
                ycsb::workload::Phase::Load => "ycsb-load",
                ycsb::workload::Phase::Run => "ycsb-run",
            },
        }
    }

    pub fn threads(&self) -> u32 {
        match self {
            Workload::Block(w) => w.threads,
            Workload::DbBench(w) => w.threads,
            Workload::Ycsb(w) => w.threads,
        }
    }

    pub fn queue_depth(&self) -> u32 {
        match self {
            Workload::Block(w) => w.queue_depth,
            Workload::DbBench(_) => 1,
            Workload::Ycsb(w) => w.queue_depth,
        }
    }

    /// Bytes per block operation (0 for key-value workloads).
    pub fn block_bytes(&self) -> u64 {
        match self {
            Workload::Block(w) => w.block_size.0,
            Workload::DbBench(_) | Workload::Ycsb(_) => 0,
        }
    }

    pub fn rate_per_thread(&self) -> Option<f64> {
        match self {
            Workload::Block(w) => w.rate_per_thread(),
            Workload::DbBench(w) => w.rate_per_thread(),
            Workload::Ycsb(w) => w.rate_per_thread(),
        }
    }

    /// The workload changes the target (its foreground threads or a background writer).
    pub fn writes(&self) -> bool {
        match self {
            Workload::Block(w) => w.writes(),
            Workload::DbBench(w) => w.benchmark.writes() || w.has_writer(),
            Workload::Ycsb(w) => w.writes(),
        }
    }

    /// The workload starts from an empty database.
    pub fn fresh(&self) -> bool {
        match self {
            Workload::Block(_) | Workload::Ycsb(_) => false,
            Workload::DbBench(w) => w.benchmark.fresh(),
        }
    }

    /// The operation kinds the foreground threads issue.
    pub fn kinds(&self) -> Vec<OpKind> {
        match self {
            Workload::Block(w) => w.kinds(),
            Workload::DbBench(w) => vec![w.benchmark.kind()],
            Workload::Ycsb(w) => w.kinds(),
        }
    }

    /// Every kind the workload issues, background included (for capability checks).
    pub fn all_kinds(&self) -> Vec<OpKind> {
        let mut k = self.kinds();
        if let Workload::DbBench(w) = self {
            if w.has_writer() && !k.contains(&OpKind::Write) {
                k.push(OpKind::Write);
            }
        }
        k
    }

    pub fn kv_shape(&self) -> Option<kv::KvShape> {
        match self {
            Workload::Block(_) | Workload::Ycsb(_) => None,
            Workload::DbBench(w) => Some(w.shape()),
        }
    }

    /// The seed of one run of this workload: the workload's `seed` mixed ([`mix_seed`]) with
    /// the run's place in the study (step, sweep point and repetition, each counted from 1)
    /// and what the workload does (db-bench: the benchmark's name; block: its access and
    /// operation kinds). A readrandom after a fillrandom, or a read step after a write step,
    /// thus draws an independent sequence, also when each comes from its own study or
    /// `storlab dbbench` invocation; the targets of one step, point and repetition draw the
    /// same sequence, so that they are compared on equal terms. YCSB workloads keep their
    /// `seed` as YCSB's generators use it.
    pub fn run_seed(&self, step: usize, point: usize, repetition: u32) -> u64 {
        let place = [step as u64, point as u64, repetition as u64];
        match self {
            Workload::Block(w) => {
                let mut what = format!("{:?}", w.access);
                for k in w.kinds() {
                    what.push(' ');
                    what.push_str(k.name());
                }
                mix_seed(w.seed, &[place[0], place[1], place[2], name_hash(&what)])
            }
            Workload::DbBench(w) => mix_seed(
                w.seed,
                &[place[0], place[1], place[2], name_hash(w.benchmark.name())],
            ),
            Workload::Ycsb(w) => w.seed,
        }
    }

    /// The operation source of foreground thread `thread` of a run seeded `run_seed` (a YCSB
    /// workload's threads share state: use [`Workload::sources`]).
    pub fn source(&self, region: Region, thread: u32, run_seed: u64) -> Source {
        match self {
            Workload::Block(w) => Source::Block(w.source(region, thread, run_seed)),
            Workload::DbBench(w) => Source::Kv(w.source(thread, run_seed)),
            Workload::Ycsb(w) => w
                .sources()
                .into_iter()
                .nth(thread as usize)
                .map(Source::Ycsb)
                .expect("thread below threads"),
        }
    }

    /// The operation sources of all foreground threads of a run seeded `run_seed`, in order.
    pub fn sources(&self, region: Region, run_seed: u64) -> Vec<Source> {
        match self {
            Workload::Ycsb(w) => w.sources().into_iter().map(Source::Ycsb).collect(),
            _ => (0..self.threads())
                .map(|t| self.source(region, t, run_seed))
                .collect(),
        }
    }

    /// Measured operations the workload itself bounds a run to, over all threads (a YCSB
    /// phase's counts).
    pub fn default_ops(&self) -> Option<u64> {
        match self {
            Workload::Ycsb(w) => w.total_ops(),
            _ => None,
        }
    }

    /// The YCSB workload whose records sessions read and write.
    pub fn ycsb(&self) -> Option<std::sync::Arc<ycsb::CoreWorkload>> {
        match self {
            Workload::Ycsb(w) => Some(std::sync::Arc::clone(&w.core)),
            _ => None,
        }
    }

    /// The background worker of a run seeded `run_seed`, if the workload has one.
    pub fn background(&self, run_seed: u64) -> Option<Background> {
        match self {
            Workload::Block(_) | Workload::Ycsb(_) => None,
            Workload::DbBench(w) => w.writer(run_seed).map(|(source, rate_ops)| Background {
                source: Source::Kv(source),
                kinds: vec![OpKind::Write],
                rate_ops,
            }),
        }
    }

    /// A one-line description for plan listings.
    pub fn describe(&self) -> String {
        match self {
            Workload::Block(w) => format!(
                "{} {} read-share {} qd {} threads {}",
                format!("{:?}", w.access).to_lowercase(),
                w.block_size,
                w.read_share,
                w.queue_depth,
                w.threads
            ),
            Workload::DbBench(w) => format!(
                "db-bench {} num {} key-size {} value-size {} threads {}{}",
                w.benchmark.name(),
                w.num,
                w.key_size,
                w.value_size,
                w.threads,
                if w.writer_rate_bytes.0 > 0 {
                    format!(" writer {}/s", w.writer_rate_bytes)
                } else {
                    String::new()
                }
            ),
            Workload::Ycsb(w) => w.describe(),
        }
    }

    pub fn as_ycsb(&self) -> Option<&ycsb::workload::YcsbWorkload> {
        match self {
            Workload::Ycsb(w) => Some(w),
            _ => None,
        }
    }

    pub fn as_block(&self) -> Option<&BlockWorkload> {
        match self {
            Workload::Block(w) => Some(w),
            Workload::DbBench(_) | Workload::Ycsb(_) => None,
        }
    }
}

/// Keys a study's sweep may vary.
pub const SWEEPABLE: &[&str] = &[
    "access",
    "read-share",
    "block-size",
    "alignment",
    "queue-depth",
    "threads",
    "rate-ops",
    "rate-per-thread-ops",
    "fsync-every",
    "write-data",
    "write-pattern",
    "verify",
    "seed",
];

fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

impl BlockWorkload {
    /// Builds a workload from its table, with sweep values already applied.
    pub fn from_table(table: toml::Table) -> Result<BlockWorkload, OptionError> {
        let w: BlockWorkload = table.try_into().map_err(crate::targets::option_error)?;
        w.validate()?;
        Ok(w)
    }

    fn validate(&self) -> Result<(), OptionError> {
        if !(0.0..=1.0).contains(&self.read_share) {
            return Err(err(
                "read-share",
                "read-share is a fraction from 0.0 (all writes) to 1.0 (all reads)",
            ));
        }
        if self.block_size.0 < 512 || self.block_size.0 > 64 << 20 {
            return Err(err(
                "block-size",
                "block-size must be from 512 bytes to 64MiB",
            ));
        }
        let align = self.alignment_bytes();
        if align == 0 || align > self.block_size.0 && self.access == Access::Sequential {
            return Err(err(
                "alignment",
                "alignment must be above 0 (and at most the block size for sequential access)",
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > 65536 {
            return Err(err("queue-depth", "queue-depth must be from 1 to 65536"));
        }
        if self.threads == 0 || self.threads > 4096 {
            return Err(err("threads", "threads must be from 1 to 4096"));
        }
        if self.rate_ops.is_some() && self.rate_per_thread_ops.is_some() {
            return Err(err(
                "rate-per-thread-ops",
                "give either rate-ops (per target) or rate-per-thread-ops, not both",
            ));
        }
        for (key, rate) in [
            ("rate-ops", self.rate_ops),
            ("rate-per-thread-ops", self.rate_per_thread_ops),
        ] {
            if let Some(r) = rate {
                if !(r > 0.0 && r.is_finite()) {
                    return Err(err(
                        key,
                        "a rate is a number of operations per second above 0",
                    ));
                }
            }
        }
        if self.verify && self.read_share >= 1.0 {
            return Err(err(
                "verify",
                "verify checks written blocks: lower read-share below 1.0",
            ));
        }
        if self.verify && self.alignment_bytes() != self.block_size.0 {
            return Err(err(
                "alignment",
                "with verify = true, blocks are whole: alignment must equal block-size",
            ));
        }
        if self.verify_state.is_some() && !self.verify {
            return Err(err("verify-state", "verify-state needs verify = true"));
        }
        if self.fsync_every > 0 && self.read_share >= 1.0 {
            return Err(err(
                "fsync-every",
                "fsync-every needs writes: lower read-share below 1.0",
            ));
        }
        Ok(())
    }

    pub fn alignment_bytes(&self) -> u64 {
        self.alignment.map(|a| a.0).unwrap_or(self.block_size.0)
    }

    /// Operations per second each thread is paced at, or None for closed loop.
    pub fn rate_per_thread(&self) -> Option<f64> {
        self.rate_per_thread_ops
            .or(self.rate_ops.map(|r| r / self.threads as f64))
    }

    pub fn writes(&self) -> bool {
        self.read_share < 1.0
    }

    /// The operation kinds this workload issues.
    pub fn kinds(&self) -> Vec<OpKind> {
        let mut k = Vec::new();
        if self.read_share > 0.0 {
            k.push(OpKind::Read);
        }
        if self.writes() {
            k.push(OpKind::Write);
            if self.fsync_every > 0 {
                k.push(OpKind::Fsync);
            }
        }
        k
    }

    /// The operation source of thread `thread` of a run seeded `run_seed`.
    pub fn source(&self, region: Region, thread: u32, run_seed: u64) -> BlockSource {
        let block = self.block_size.0;
        let align = self.alignment_bytes();
        let (base, span) = match self.access {
            Access::Random => (region.offset_bytes, region.size_bytes),
            Access::Sequential => {
                // Each thread streams through its own slice of the region.
                let slice = (region.size_bytes / self.threads as u64) / block * block;
                let slice = slice.max(block);
                let start =
                    region.offset_bytes + (thread as u64 * slice) % region.size_bytes.max(1);
                (
                    start,
                    slice.min(region.offset_bytes + region.size_bytes - start),
                )
            }
        };
        let positions = if span >= block {
            (span - block) / align + 1
        } else {
            1
        };
        // Verified random writes: thread t owns the blocks t, t + threads, ... so that no two
        // threads write the same block (see crate::verify::table).
        let (stripe, stripe_of) = if self.verify && self.access == Access::Random {
            (self.threads as u64, thread as u64)
        } else {
            (1, 0)
        };
        let positions = if stripe > 1 {
            positions.saturating_sub(stripe_of).div_ceil(stripe).max(1)
        } else {
            positions
        };
        let read_threshold = if self.read_share >= 1.0 {
            u64::MAX
        } else {
            (self.read_share * u64::MAX as f64) as u64
        };
        BlockSource {
            rng: SmallRng::seed_from_u64(thread_seed(run_seed, thread)),
            random: self.access == Access::Random,
            all_reads: self.read_share >= 1.0,
            read_threshold,
            block: block as u32,
            align,
            base,
            positions,
            stripe,
            stripe_of,
            next_position: 0,
            fsync_every: if self.writes() { self.fsync_every } else { 0 },
            writes_since_fsync: 0,
        }
    }
}

/// Generates one worker's block operations.
pub struct BlockSource {
    rng: SmallRng,
    random: bool,
    all_reads: bool,
    read_threshold: u64,
    block: u32,
    align: u64,
    base: u64,
    positions: u64,
    /// Positions drawn are `p * stripe + stripe_of` (verified writes: the thread's blocks).
    stripe: u64,
    stripe_of: u64,
    next_position: u64,
    fsync_every: u64,
    writes_since_fsync: u64,
}

impl BlockSource {
    /// The next operation.
    #[inline]
    pub fn next_op(&mut self) -> Op {
        if self.fsync_every > 0 && self.writes_since_fsync >= self.fsync_every {
            self.writes_since_fsync = 0;
            return Op::Fsync;
        }
        let position = if self.random {
            // Multiply-shift maps 64 random bits onto [0, positions) without a division.
            ((self.rng.next_u64() as u128 * self.positions as u128) >> 64) as u64
        } else {
            let p = self.next_position;
            self.next_position += 1;
            if self.next_position >= self.positions {
                self.next_position = 0;
            }
            p
        };
        let offset = self.base + (position * self.stripe + self.stripe_of) * self.align;
        let read = self.all_reads || self.rng.next_u64() < self.read_threshold;
        if read {
            Op::Read {
                offset,
                len: self.block,
            }
        } else {
            self.writes_since_fsync += 1;
            Op::Write {
                offset,
                len: self.block,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Result<BlockWorkload, OptionError> {
        BlockWorkload::from_table(toml::from_str(text).unwrap())
    }

    #[test]
    fn random_offsets_are_aligned_and_inside_the_region() {
        let w = workload("block-size = \"4KiB\"\nread-share = 0.7").unwrap();
        let region = Region {
            offset_bytes: 1 << 20,
            size_bytes: 64 << 20,
        };
        let mut s = w.source(region, 0, 1);
        let (mut reads, mut writes) = (0, 0);
        for _ in 0..100_000 {
            let (offset, len, read) = match s.next_op() {
                Op::Read { offset, len } => (offset, len, true),
                Op::Write { offset, len } => (offset, len, false),
                other => panic!("a block workload issued {other:?}"),
            };
            assert_eq!(offset % 4096, 0);
            assert!(offset >= 1 << 20 && offset + len as u64 <= (1 << 20) + (64 << 20));
            if read { reads += 1 } else { writes += 1 }
        }
        let share = reads as f64 / (reads + writes) as f64;
        assert!((share - 0.7).abs() < 0.01, "read share {share}");
    }

    #[test]
    fn sequential_threads_stream_through_their_own_slices() {
        let w = workload("access = \"sequential\"\nblock-size = \"1MiB\"\nthreads = 2").unwrap();
        let region = Region {
            offset_bytes: 0,
            size_bytes: 8 << 20,
        };
        let mut a = w.source(region, 0, 1);
        let mut b = w.source(region, 1, 1);
        let offs: Vec<u64> = (0..5)
            .map(|_| match a.next_op() {
                Op::Read { offset, .. } => offset,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(offs, vec![0, 1 << 20, 2 << 20, 3 << 20, 0]);
        match b.next_op() {
            Op::Read { offset, .. } => assert_eq!(offset, 4 << 20),
            _ => unreachable!(),
        }
    }

    #[test]
    fn fsync_follows_every_n_writes() {
        let w = workload("read-share = 0.0\nfsync-every = 2").unwrap();
        let mut s = w.source(
            Region {
                offset_bytes: 0,
                size_bytes: 1 << 20,
            },
            0,
            1,
        );
        let kinds: Vec<OpKind> = (0..6).map(|_| s.next_op().kind()).collect();
        assert_eq!(
            kinds,
            vec![
                OpKind::Write,
                OpKind::Write,
                OpKind::Fsync,
                OpKind::Write,
                OpKind::Write,
                OpKind::Fsync
            ]
        );
        assert_eq!(w.kinds(), vec![OpKind::Write, OpKind::Fsync]);
    }

    #[test]
    fn verified_random_writes_give_each_thread_its_own_blocks() {
        let w = workload("read-share = 0.0\nthreads = 3\nverify = true").unwrap();
        let region = Region {
            offset_bytes: 8192,
            size_bytes: 100 * 4096,
        };
        for thread in 0..3u64 {
            let mut s = w.source(region, thread as u32, 1);
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..5000 {
                let Op::Write { offset, .. } = s.next_op() else {
                    panic!("writes only")
                };
                let block = (offset - 8192) / 4096;
                assert!(
                    block < 100 && block % 3 == thread,
                    "thread {thread}: block {block}"
                );
                seen.insert(block);
            }
            // Every block of its stripe is reachable.
            assert_eq!(seen.len() as u64, (100 - thread).div_ceil(3));
        }
        assert_eq!(
            workload("verify = true\nread-share = 0.5\nalignment = 512")
                .unwrap_err()
                .key,
            "alignment"
        );
        assert_eq!(workload("verify = true").unwrap_err().key, "verify");
        assert_eq!(
            workload("read-share = 0.5\nverify-state = \"s\"")
                .unwrap_err()
                .key,
            "verify-state"
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        assert_eq!(workload("read-share = 1.5").unwrap_err().key, "read-share");
        assert_eq!(workload("queue-depth = 0").unwrap_err().key, "queue-depth");
        assert_eq!(
            workload("block-size = \"12x\"").unwrap_err().key,
            "block-size"
        );
        assert_eq!(workload("blok-size = 4096").unwrap_err().key, "blok-size");
        assert_eq!(
            workload("rate-ops = 10\nrate-per-thread-ops = 5")
                .unwrap_err()
                .key,
            "rate-per-thread-ops"
        );
    }
}
