//! Block workloads: random or sequential offsets aligned inside the target's region, with a
//! read share, an fsync every N writes and verified writes ([`BlockWorkload`]), and the
//! per-worker generator that turns them into [`Op`]s without allocating ([`BlockSource`]).
//! A workload that gives IOmeter's `random-share`, or a list of IOmeter access-specification
//! lines (`access-spec`), is generated with IOmeter's semantics instead
//! ([`access_spec`]). Its parts, each with the keys it reads: IOmeter's access specifications
//! ([`access_spec`]), the offsets' distribution ([`distribution`]), sizes drawn from a range
//! or a split ([`size_draw`]), and the patterns fio gives (skips, random runs, think time,
//! a start delay: [`pattern`]).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub mod access_spec;
pub mod distribution;
pub mod pattern;
pub mod size_draw;

use self::access_spec::{AccessSpecLine, AccessSpecSource};
use super::{DEFAULT_SEED, thread_seed};
use storlab_model::OpKind;
use storlab_model::units::Bytes;
use storlab_model::{Op, OptionError, Region};

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
    /// With `random-share` or an `access-spec`: `sequential` when no I/O is random, else
    /// `random` (derived).
    #[serde(default)]
    pub access: Access,
    /// Where random offsets fall: fio's `random_distribution` (`"zipf:1.2"`, `"pareto:0.2"`,
    /// `"normal:10"`, `"zoned:60/10:40/90"`, `"zoned-abs:60/1GiB:40/3GiB"`; see
    /// [`self::distribution`]). Default `random`: uniform.
    #[serde(
        default,
        skip_serializing_if = "self::distribution::Distribution::is_random"
    )]
    pub distribution: self::distribution::Distribution,
    /// Fraction of operations that are reads, 0.0 to 1.0. With an `access-spec`: its lines'
    /// read shares weighted by their spec shares (derived).
    #[serde(default = "default_read_share")]
    pub read_share: f64,
    /// IOmeter's "% random" as a fraction: each operation is random with this probability,
    /// else sequential from where this worker's previous one ended (IOmeter's model, see
    /// [`self::access_spec`]). Not given: `access` decides, with storlab's own model. With
    /// an `access-spec`: its lines' random shares weighted by their spec shares (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_share: Option<f64>,
    /// The transfer size. With an `access-spec`: its largest line's (derived), the size of
    /// the sessions' buffers.
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
    /// The CPUs its worker threads are pinned to (`cpus = "0-3,6"`), each once as it starts;
    /// None: not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<storlab_model::cpus::CpuList>,
    /// How its threads share `cpus`: `shared` (each may run on any of them, the default) or
    /// `split` (each gets one, round robin over the step's threads of this workload).
    #[serde(
        default,
        skip_serializing_if = "storlab_model::cpus::CpuPolicy::is_shared"
    )]
    pub cpus_policy: storlab_model::cpus::CpuPolicy,
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
    /// fio's buffer contents (compressible, dedupable, patterned or refilled blocks, by fio's
    /// algorithms): see [`super::buffers`]. Replaces `write-data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_buffers: Option<super::buffers::WriteBuffers>,
    /// Open loop: evenly spaced starts (`linear`) or a Poisson process (`poisson`:
    /// exponential gaps of the same mean, seeded from the run's seed), as fio's
    /// `rate_process`.
    #[serde(
        default,
        skip_serializing_if = "storlab_model::rate::RateProcess::is_linear"
    )]
    pub rate_process: storlab_model::rate::RateProcess,
    /// The latency-target search (fio's `latency_target`): each thread starts at depth 1
    /// and finds the largest depth, up to `queue-depth`, whose windows keep `percentile`%
    /// of their completions under `target` (see [`storlab_model::latency_target`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<storlab_model::latency_target::LatencyTarget>,
    /// Verified writes (as fio's `verify=crc32c`): every written block carries a header with
    /// a crc32c, storlab keeps each block's last acknowledged generation, and a verify pass
    /// reads them back after the run (see [`storlab_verify`]).
    #[serde(default)]
    pub verify: bool,
    /// Where to save the table of acknowledged generations after the run, for a later
    /// `storlab verify PATH` (fio's `verify_state_save`). With several targets in one run,
    /// each target's goes to `PATH.TARGET`.
    pub verify_state: Option<std::path::PathBuf>,
    /// The classes of damage the study expects its verify pass to find (`verify-expect`: a
    /// fault it injects, as a power loss before a sync): found, they are reported but do not
    /// fail the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_expect: Vec<storlab_verify::VerifyClass>,
    /// IOmeter's access specification: lines chosen per burst by their share, each with its
    /// transfer size, read and random shares, alignment, burst length and delay (see
    /// [`self::access_spec`]). Replaces `block-size`, `read-share`, `random-share`,
    /// `access` and `alignment`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access_spec: Vec<AccessSpecLine>,
    /// Base seed of the offset generators (default: the study's `seed`); each run and thread
    /// draws from a seed derived from it ([`crate::Workload::run_seed`], [`thread_seed`]).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// fio's block size range (`bsrange`): each I/O's size drawn in it as fio draws it; sets
    /// `block-size` to its largest (the buffers'). See [`self::pattern`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size_range: Option<self::size_draw::SizeRange>,
    /// fio's weighted block sizes (`bssplit`): each I/O's size drawn from
    /// `[{ size = "4KiB", percent = 40 }, ...]` as fio draws it; sets `block-size` to the
    /// largest (the buffers'). See [`self::size_draw`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_size_split: Vec<self::size_draw::SplitEntry>,
    /// The writes' split when it differs from the reads' (fio's `bssplit=READS,WRITES`):
    /// `block-size-split` is then the reads'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_block_size_split: Vec<self::size_draw::SplitEntry>,
    /// Sequential I/O with holes (fio's `rw=read:8k`): bytes skipped after each I/O.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_skip: Option<Bytes>,
    /// Sequential I/O backwards (fio's `rw=read:-8k`): each I/O starts this many bytes
    /// before where the previous one ended; below the slice's start, that many bytes before
    /// its end (a new pass). The first I/O is at the start, as fio's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_back: Option<Bytes>,
    /// fio's flow control between the run's workloads: see [`self::pattern::Flow`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<self::pattern::Flow>,
    /// Sequential I/O in strided zones (fio's `zonemode=strided`): see [`self::pattern::Zones`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<self::pattern::Zones>,
    /// Random I/O with a new offset every `ios` I/Os (fio's `rw=randread:N`, `rw_sequencer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_run: Option<self::pattern::RandomRun>,
    /// A pause after every `every-ios` I/Os (fio's `thinktime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<self::pattern::ThinkTime>,
    /// Each worker starts this long after the run (fio's `startdelay`): its warm-up and its
    /// whole measured window (`duration` or `ops`) come after the delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_delay: Option<storlab_model::units::Dur>,
    /// The load `--quick` runs at: `quick = { threads = N, queue-depth = N }`, each a cap on
    /// the workload's own (without it, quick mode keeps both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<BlockQuick>,
}

/// The caps `--quick` puts on a block workload's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BlockQuick {
    pub threads: Option<u32>,
    pub queue_depth: Option<u32>,
}

/// Keys an `access-spec` gives per line instead.
const REPLACED_BY_ACCESS_SPEC: &[&str] = &[
    "block-size",
    "read-share",
    "random-share",
    "access",
    "alignment",
];

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

pub(super) fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

impl BlockWorkload {
    /// The workload draws from the pattern source ([`pattern`]): it gives one of its keys
    /// (a size range or split, a skip, random runs, think time or a start delay).
    pub fn uses_pattern(&self) -> bool {
        self.block_size_range.is_some()
            || !self.block_size_split.is_empty()
            || self.offset_skip.is_some()
            || self.offset_back.is_some()
            || self.zones.is_some()
            || self.random_run.is_some()
            || self.think_time.is_some()
            || self.start_delay.is_some()
    }

    /// Builds a workload from its table, with sweep values already applied.
    pub fn from_table(table: toml::Table) -> Result<BlockWorkload, OptionError> {
        let spec = table.contains_key("access-spec");
        for key in REPLACED_BY_ACCESS_SPEC {
            if spec && table.contains_key(*key) {
                return Err(err(
                    key,
                    format!("with an access-spec, give {key} in each of its lines, not here"),
                ));
            }
        }
        if table.contains_key("random-share") && table.contains_key("access") {
            return Err(err(
                "random-share",
                "give either access (storlab's model) or random-share (IOmeter's), not both",
            ));
        }
        let table_has_block_size = table.contains_key("block-size");
        let mut w: BlockWorkload = table.try_into().map_err(storlab_model::option_error)?;
        if !w.access_spec.is_empty() {
            access_spec::validate(&w.access_spec)?;
            let weighted = |f: fn(&AccessSpecLine) -> f64| -> f64 {
                w.access_spec
                    .iter()
                    .map(|l| l.spec_share * f(l))
                    .sum::<f64>()
            };
            let (read, random) = (weighted(|l| l.read_share), weighted(|l| l.random_share));
            w.read_share = read.clamp(0.0, 1.0);
            w.random_share = Some(random.clamp(0.0, 1.0));
            w.block_size = Bytes(
                w.access_spec
                    .iter()
                    .map(|l| l.block_size.0)
                    .max()
                    .unwrap_or(0),
            );
        }
        if let Some(r) = w.random_share {
            if !(0.0..=1.0).contains(&r) {
                return Err(err(
                    "random-share",
                    "random-share is a fraction from 0.0 (all sequential) to 1.0 (all random)",
                ));
            }
            w.access = if r > 0.0 {
                Access::Random
            } else {
                Access::Sequential
            };
        }
        if let Some(r) = w.block_size_range {
            if table_has_block_size && w.block_size.0 != r.largest() {
                return Err(err(
                    "block-size",
                    "block-size-range gives the sizes: remove block-size (or give the range's largest)",
                ));
            }
            w.block_size = Bytes(r.largest());
        }
        if let Some(largest) = w
            .block_size_split
            .iter()
            .chain(&w.write_block_size_split)
            .map(|e| e.size.0)
            .max()
        {
            if table_has_block_size && w.block_size.0 != largest {
                return Err(err(
                    "block-size",
                    "block-size-split gives the sizes: remove block-size (or give the split's largest)",
                ));
            }
            w.block_size = Bytes(largest);
        }
        self::pattern::validate(&w)?;
        w.validate()?;
        Ok(w)
    }

    /// Quick mode: threads and queue depth at most the `quick` table's.
    pub fn make_quick(&mut self) {
        if let Some(q) = self.quick {
            self.threads = self.threads.min(q.threads.unwrap_or(u32::MAX));
            self.queue_depth = self.queue_depth.min(q.queue_depth.unwrap_or(u32::MAX));
        }
    }

    /// Operations come from IOmeter's model ([`self::access_spec`]): the workload gives
    /// `random-share` or an `access-spec`.
    pub fn iometer_model(&self) -> bool {
        self.random_share.is_some() || !self.access_spec.is_empty()
    }

    /// The access specification the operations come from: the workload's lines, or one line
    /// made of its own keys.
    pub fn spec_lines(&self) -> Vec<AccessSpecLine> {
        if !self.access_spec.is_empty() {
            return self.access_spec.clone();
        }
        vec![AccessSpecLine {
            spec_share: 1.0,
            block_size: self.block_size,
            read_share: self.read_share,
            random_share: self.random_share.unwrap_or(match self.access {
                Access::Random => 1.0,
                Access::Sequential => 0.0,
            }),
            alignment: Some(Bytes(self.alignment_bytes())),
            burst_ios: 1,
            burst_delay: access_spec::no_delay(),
        }]
    }

    /// `cpus` names CPUs this process may run on (`sched_getaffinity`: the machine's, less
    /// what `taskset` or a cgroup took away); `cpus-policy` needs `cpus`.
    fn validate_cpus(&self) -> Result<(), OptionError> {
        let Some(cpus) = &self.cpus else {
            if !self.cpus_policy.is_shared() {
                return Err(err(
                    "cpus-policy",
                    "cpus-policy says how the threads share `cpus`: give cpus too, e.g. cpus = \"0-3\"",
                ));
            }
            return Ok(());
        };
        let allowed = storlab_model::cpus::allowed()
            .map_err(|e| err("cpus", format!("cannot read this process's CPUs: {e}")))?;
        let missing = cpus.missing_from(&allowed);
        if !missing.is_empty() {
            let (which, verb) = storlab_model::cpus::missing_words(&missing);
            return Err(err(
                "cpus",
                format!(
                    "{which} of cpus = \"{cpus}\" {verb} this process may run on: it may run on CPUs {allowed}"
                ),
            ));
        }
        Ok(())
    }

    /// The verified writes' keys: `verify` on a model it can check, `verify-state` and
    /// `verify-expect` only with it.
    fn validate_verify(&self) -> Result<(), OptionError> {
        if self.verify && self.iometer_model() {
            return Err(err(
                "verify",
                "verify needs storlab's own access model: remove random-share and access-spec",
            ));
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
        if !self.verify_expect.is_empty() && !self.verify {
            return Err(err("verify-expect", "verify-expect needs verify = true"));
        }
        if self
            .verify_expect
            .contains(&storlab_verify::VerifyClass::Intact)
        {
            return Err(err(
                "verify-expect",
                "verify-expect lists classes of damage; `intact` is none",
            ));
        }
        Ok(())
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
        // IOmeter's model rounds a sequential offset up to the alignment: any alignment works.
        let sequential_slices = self.access == Access::Sequential && !self.iometer_model();
        if align == 0 || align > self.block_size.0 && sequential_slices {
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
        self.validate_cpus()?;
        if let Some(q) = self.quick {
            if q.threads.is_some_and(|t| t == 0 || t > 4096) {
                return Err(err("quick.threads", "quick.threads must be from 1 to 4096"));
            }
            if q.queue_depth.is_some_and(|d| d == 0 || d > 65536) {
                return Err(err(
                    "quick.queue-depth",
                    "quick.queue-depth must be from 1 to 65536",
                ));
            }
        }
        if let Some(l) = self.latency_target
            && !(0.0..=100.0).contains(&l.percentile)
        {
            return Err(err(
                "latency-target.percentile",
                "latency-target.percentile is a percent from 0 to 100",
            ));
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
            if let Some(r) = rate
                && !(r > 0.0 && r.is_finite())
            {
                return Err(err(
                    key,
                    "a rate is a number of operations per second above 0",
                ));
            }
        }
        let delays = self.access_spec.iter().any(|l| !l.burst_delay.0.is_zero());
        if delays && (self.rate_ops.is_some() || self.rate_per_thread_ops.is_some()) {
            return Err(err(
                "access-spec",
                "burst-delay paces a closed loop, as in IOmeter: remove rate-ops or the delays",
            ));
        }
        self.validate_verify()?;
        if let Some(b) = &self.write_buffers {
            b.validate()?;
            if self.verify {
                return Err(err(
                    "write-buffers",
                    "verified writes carry storlab's header and random data: remove write-buffers or verify",
                ));
            }
            if self.write_data != WriteData::Random {
                return Err(err(
                    "write-buffers",
                    "write-buffers replaces write-data: remove write-data",
                ));
            }
        }
        self::distribution::check(self)?;
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
        self.read_share < 1.0 || self.access_spec.iter().any(|l| l.read_share < 1.0)
    }

    fn reads(&self) -> bool {
        self.read_share > 0.0 || self.access_spec.iter().any(|l| l.read_share > 0.0)
    }

    /// The operation kinds this workload issues.
    pub fn kinds(&self) -> Vec<OpKind> {
        let mut k = Vec::new();
        if self.reads() {
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

    /// The IOmeter-model source of thread `thread` of a run seeded `run_seed` (see
    /// [`BlockWorkload::iometer_model`]).
    pub fn spec_source(&self, region: Region, thread: u32, run_seed: u64) -> AccessSpecSource {
        AccessSpecSource::new(
            &self.spec_lines(),
            region,
            thread_seed(run_seed, thread),
            self.fsync_every,
        )
    }

    /// The operation source of thread `thread` of a run seeded `run_seed` (storlab's own
    /// model).
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
        // threads write the same block (see storlab_verify::table).
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
        let mut rng = SmallRng::seed_from_u64(thread_seed(run_seed, thread));
        // A skewed distribution draws its own positions (in the thread's stripe, if any);
        // the uniform one stays the plain `random` draw below.
        let skewed = match self.access {
            Access::Random => self::distribution::Skewed::new(
                &self.distribution,
                positions,
                align * stripe,
                &mut rng,
            )
            .map(Box::new),
            Access::Sequential => None,
        };
        BlockSource {
            rng,
            random: self.access == Access::Random && skewed.is_none(),
            skewed,
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
    /// Uniform random positions (else skewed, or sequential).
    random: bool,
    skewed: Option<Box<self::distribution::Skewed>>,
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
    /// The next operation. Always inlined: see [`super::Source::next_op`].
    #[inline(always)]
    pub fn next_op(&mut self) -> Op {
        if self.fsync_every > 0 && self.writes_since_fsync >= self.fsync_every {
            self.writes_since_fsync = 0;
            return Op::Fsync;
        }
        let position = if self.random {
            // Multiply-shift maps 64 random bits onto [0, positions) without a division.
            ((self.rng.next_u64() as u128 * self.positions as u128) >> 64) as u64
        } else if let Some(s) = self.skewed.as_deref_mut() {
            s.position(&mut self.rng)
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
                len: u64::from(self.block),
            }
        } else {
            self.writes_since_fsync += 1;
            Op::Write {
                offset,
                len: u64::from(self.block),
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
            assert!(offset >= 1 << 20 && offset + len <= (1 << 20) + (64 << 20));
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
    fn a_latency_target_is_read_and_its_percentile_checked() {
        let w = workload(
            "queue-depth = 32\nlatency-target = { target = \"150us\", window = \"200ms\", percentile = 50 }",
        )
        .unwrap();
        let l = w.latency_target.expect("a latency target");
        assert_eq!(l.target.0, std::time::Duration::from_micros(150));
        assert_eq!((l.percentile, l.keep_adjusting), (50.0, false));
        let e =
            workload("latency-target = { target = \"1ms\", window = \"1s\", percentile = 101 }")
                .unwrap_err();
        assert!(format!("{e:?}").contains("percent from 0 to 100"), "{e:?}");
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
        let w = workload(
            "read-share = 0.5\nverify = true\nverify-expect = [\"lost-unsynced\", \"torn\"]",
        )
        .unwrap();
        assert_eq!(
            w.verify_expect,
            [
                storlab_verify::VerifyClass::LostUnsynced,
                storlab_verify::VerifyClass::Torn
            ]
        );
        for bad in [
            "read-share = 0.5\nverify-expect = [\"torn\"]",
            "read-share = 0.5\nverify = true\nverify-expect = [\"intact\"]",
        ] {
            assert_eq!(workload(bad).unwrap_err().key, "verify-expect", "{bad}");
        }
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
