//! Workloads: what operations a worker issues next. A workload's parameters come from a study
//! file (and its sweeps); a source built from them per worker turns them into [`Op`]s without
//! allocating. Block workloads ([`block`]) issue random or sequential offsets aligned inside
//! the target's region, with a read share and an fsync every N writes; key-value workloads
//! with db_bench's semantics are in [`kv`]; pgbench's transactions in [`pgbench`]; IOmeter's access specifications, which block
//! workloads may give, in [`block::access_spec`] (and IOmeter's `.icf` files in [`icf`]).
//!
//! Random streams: a run's seed is derived from the workload's `seed` (the study's by default),
//! the run's place in the study and what the workload does ([`Workload::run_seed`]); each
//! thread's from the run's seed and its index ([`thread_seed`]). So a read never replays the
//! key or offset sequence of the fill before it, and the same study draws the same streams.

pub mod block;
pub mod buffers;
pub mod icf;
pub mod kv;
pub mod pgbench;

pub mod stream;
pub mod training;
pub mod working_set;
pub mod ycsb;

use serde::Serialize;

use storlab_model::OpKind;
use storlab_model::{Op, OptionError, Region};

use block::err;
pub use block::{Access, BlockSource, BlockWorkload, WriteData};

/// The seed of a study that sets none.
pub const DEFAULT_SEED: u64 = 0x5eed;

use storlab_model::seed::{mix_seed, name_hash};

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
/// (the default), `type = "db-bench"`, `"ycsb"` or `"pgbench"`.
// Built once per run and read when workers start, never per operation: its size costs
// nothing measurable, boxing the block workload would cost every access an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Workload {
    Block(BlockWorkload),
    DbBench(kv::KvWorkload),
    Ycsb(ycsb::workload::YcsbWorkload),
    Pgbench(pgbench::PgbenchWorkload),
    Training(training::TrainingWorkload),
    Checkpoint(training::checkpoint::CheckpointWorkload),
}

/// The workload types, for messages.
pub const TYPES: &[&str] = &[
    "block",
    "db-bench",
    "ycsb",
    "pgbench",
    "training",
    "checkpoint",
];

use storlab_model::WorkloadKind;

/// A worker's operation source, picked once per worker. Not boxed: a worker owns one for its
/// whole run, and the loop reaches it on every operation without an indirection.
#[allow(clippy::large_enum_variant)]
pub enum Source {
    Block(BlockSource),
    /// A block workload in IOmeter's model.
    AccessSpec(block::access_spec::AccessSpecSource),
    Kv(kv::KvSource),
    Ycsb(ycsb::workload::YcsbSource),
    Pgbench(pgbench::PgbenchSource),
    /// A training accelerator's reader.
    Training(training::loader::TrainingSource),
    /// A checkpointing rank.
    Checkpoint(training::checkpoint::CheckpointSource),
    /// A block workload with fio's pattern options (size ranges, holes, think time).
    Pattern(block::pattern::PatternSource),
}

impl Source {
    /// The next operation, or None when the source has no more (a YCSB load thread's share).
    /// Always inlined into the worker loop: called, it returns the operation through memory,
    /// and the loop's 8-byte loads of fields the callee stored in 4 bytes (a block op's `len`)
    /// stall on store forwarding (perf annotate of the null loop: a third of its samples).
    #[inline(always)]
    pub fn next_op(&mut self) -> Option<Op> {
        match self {
            Source::Block(s) => Some(s.next_op()),
            Source::AccessSpec(s) => Some(s.next_op()),
            Source::Kv(s) => Some(s.next_op()),
            Source::Ycsb(s) => s.next_op(),
            Source::Pgbench(s) => Some(s.next_op()),
            Source::Training(s) => s.next_op(),
            Source::Checkpoint(s) => s.next_op(),
            Source::Pattern(s) => Some(s.next_op()),
        }
    }

    /// An insert of key number `keynum` is over (YCSB's acknowledged inserts). An error (YCSB's
    /// acknowledgement window overflowed) is to be counted and stops the run, as in YCSB.
    #[inline]
    pub fn acknowledge_insert(&mut self, keynum: u64) -> Result<(), storlab_model::OpError> {
        match self {
            Source::Ycsb(s) => s.acknowledge_insert(keynum),
            Source::Block(_)
            | Source::AccessSpec(_)
            | Source::Kv(_)
            | Source::Pgbench(_)
            | Source::Training(_)
            | Source::Checkpoint(_)
            | Source::Pattern(_) => Ok(()),
        }
    }

    /// The source may give inserts to acknowledge ([`Source::acknowledge_insert`]): YCSB's.
    pub fn may_insert(&self) -> bool {
        matches!(self, Source::Ycsb(_))
    }

    /// How long the worker issues nothing before the operation `next_op` just returned, ns
    /// (an IOmeter burst's delay); 0 for most. Taking it clears it.
    #[inline]
    pub fn take_delay_ns(&mut self) -> u64 {
        match self {
            Source::AccessSpec(s) => s.take_delay_ns(),
            Source::Pattern(s) => s.take_delay_ns(),
            _ => 0,
        }
    }

    /// The source may give delays ([`Source::take_delay_ns`]): an IOmeter access
    /// specification or fio's pattern options. The worker asks the others nothing.
    pub fn may_delay(&self) -> bool {
        matches!(self, Source::AccessSpec(_) | Source::Pattern(_))
    }

    /// How to wait out the delay [`Source::take_delay_ns`] just gave: an IOmeter burst's
    /// delay starts at once and sleeps; fio's think time first lets what is in flight
    /// complete, may spin, and may drop an open loop's starts. Asked only when there is a
    /// delay.
    pub fn delay_rule(&self) -> block::pattern::DelayRule {
        match self {
            Source::Pattern(s) => s.delay_rule(),
            _ => block::pattern::DelayRule::default(),
        }
    }
}

/// A run's operation sources, one per foreground thread, a training workload's
/// accelerators and a checkpoint workload's clock.
pub struct RunSources {
    pub sources: Vec<Source>,
    pub accelerators: Vec<std::sync::Arc<training::loader::Gate>>,
    pub checkpoints: Option<std::sync::Arc<training::checkpoint::CheckpointClock>>,
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
            "pgbench" => pgbench::PgbenchWorkload::from_table(table).map(Workload::Pgbench),
            "training" => training::TrainingWorkload::from_table(table).map(Workload::Training),
            "checkpoint" => training::checkpoint::CheckpointWorkload::from_table(table)
                .map(Workload::Checkpoint),
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
            Some("pgbench") => pgbench::SWEEPABLE,
            Some("training") => training::SWEEPABLE,
            Some("checkpoint") => training::checkpoint::SWEEPABLE,
            _ => SWEEPABLE,
        }
    }

    pub fn kind(&self) -> WorkloadKind {
        match self {
            Workload::Block(_) => WorkloadKind::Block,
            Workload::DbBench(_) => WorkloadKind::DbBench,
            Workload::Ycsb(_) => WorkloadKind::Ycsb,
            Workload::Pgbench(_) => WorkloadKind::Pgbench,
            Workload::Training(_) => WorkloadKind::Training,
            Workload::Checkpoint(_) => WorkloadKind::Checkpoint,
        }
    }

    pub fn type_name(&self) -> &'static str {
        self.kind().name()
    }

    /// The workload's type as stored with its results: `block`, `db-bench`, `ycsb-load` or
    /// `ycsb-run`.
    pub fn result_type(&self) -> storlab_model::op::ResultKind {
        use storlab_model::op::ResultKind;
        match self {
            Workload::Block(_) => ResultKind::Block,
            Workload::DbBench(_) => ResultKind::DbBench,
            Workload::Ycsb(w) => match w.phase {
                ycsb::workload::Phase::Load => ResultKind::YcsbLoad,
                ycsb::workload::Phase::Run => ResultKind::YcsbRun,
            },
            Workload::Pgbench(_) => ResultKind::Pgbench,
            Workload::Training(_) => ResultKind::Training,
            Workload::Checkpoint(_) => ResultKind::Checkpoint,
        }
    }

    pub fn threads(&self) -> u32 {
        match self {
            Workload::Block(w) => w.threads,
            Workload::DbBench(w) => w.threads,
            Workload::Ycsb(w) => w.threads,
            Workload::Pgbench(w) => w.threads,
            Workload::Training(w) => w.threads(),
            Workload::Checkpoint(w) => w.threads(),
        }
    }

    /// The same workload on `threads` threads (a closed-loop rate schedule sets them).
    pub fn with_threads(&self, threads: u32) -> Workload {
        let mut w = self.clone();
        match &mut w {
            Workload::Block(w) => w.threads = threads,
            Workload::DbBench(w) => w.threads = threads,
            Workload::Ycsb(w) => w.threads = threads,
            Workload::Pgbench(w) => w.threads = threads,
            // Its threads are its accelerators' readers: a schedule does not change them.
            Workload::Training(_) => {}
            // Its threads are its ranks: the model's parallelism fixes them.
            Workload::Checkpoint(_) => {}
        }
        w
    }

    pub fn queue_depth(&self) -> u32 {
        match self {
            Workload::Block(w) => w.queue_depth,
            Workload::DbBench(_) => 1,
            Workload::Ycsb(w) => w.queue_depth,
            Workload::Pgbench(_) | Workload::Training(_) | Workload::Checkpoint(_) => 1,
        }
    }

    /// Bytes per block operation, the largest of an access specification's (0 for key-value
    /// workloads): the size of the sessions' buffers.
    pub fn block_bytes(&self) -> u64 {
        match self {
            Workload::Block(w) => w.block_size.0,
            Workload::DbBench(_)
            | Workload::Ycsb(_)
            | Workload::Pgbench(_)
            | Workload::Training(_)
            | Workload::Checkpoint(_) => 0,
        }
    }

    pub fn rate_per_thread(&self) -> Option<f64> {
        match self {
            Workload::Block(w) => w.rate_per_thread(),
            Workload::DbBench(w) => w.rate_per_thread(),
            Workload::Ycsb(w) => w.rate_per_thread(),
            Workload::Pgbench(w) => w.rate_per_thread(),
            Workload::Training(_) | Workload::Checkpoint(_) => None,
        }
    }

    /// The workload changes the target (its foreground threads or a background writer).
    pub fn writes(&self) -> bool {
        match self {
            Workload::Block(w) => w.writes(),
            Workload::DbBench(w) => w.benchmark.writes() || w.has_writer(),
            Workload::Ycsb(w) => w.writes(),
            Workload::Pgbench(w) => w.script.writes(),
            Workload::Training(_) => false,
            Workload::Checkpoint(w) => w.checkpoints_write > 0,
        }
    }

    /// The workload starts from an empty database.
    pub fn fresh(&self) -> bool {
        match self {
            Workload::Block(_)
            | Workload::Ycsb(_)
            | Workload::Pgbench(_)
            | Workload::Training(_)
            | Workload::Checkpoint(_) => false,
            Workload::DbBench(w) => w.benchmark.fresh(),
        }
    }

    /// The operation kinds the foreground threads issue.
    pub fn kinds(&self) -> Vec<OpKind> {
        match self {
            Workload::Block(w) => w.kinds(),
            Workload::DbBench(w) => vec![w.benchmark.kind()],
            Workload::Ycsb(w) => w.kinds(),
            Workload::Pgbench(w) => vec![w.script.kind()],
            Workload::Training(_) => vec![OpKind::Read],
            Workload::Checkpoint(w) => w.kinds(),
        }
    }

    /// Every kind the workload issues, background included (for capability checks).
    pub fn all_kinds(&self) -> Vec<OpKind> {
        let mut k = self.kinds();
        if let Workload::DbBench(w) = self
            && w.has_writer()
            && !k.contains(&OpKind::Write)
        {
            k.push(OpKind::Write);
        }
        k
    }

    pub fn kv_shape(&self) -> Option<kv::KvShape> {
        match self {
            Workload::Block(_)
            | Workload::Ycsb(_)
            | Workload::Pgbench(_)
            | Workload::Training(_)
            | Workload::Checkpoint(_) => None,
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
                if w.iometer_model() {
                    // IOmeter's model draws its own sequence: never the plain model's.
                    what.push_str(" iometer");
                    for l in w.spec_lines() {
                        what.push_str(&format!(
                            " {} {} {} {}",
                            l.block_size.0, l.spec_share, l.read_share, l.random_share
                        ));
                    }
                }
                mix_seed(w.seed, &[place[0], place[1], place[2], name_hash(&what)])
            }
            Workload::DbBench(w) => mix_seed(
                w.seed,
                &[place[0], place[1], place[2], name_hash(w.benchmark.name())],
            ),
            Workload::Ycsb(w) => w.seed,
            Workload::Pgbench(w) => mix_seed(
                w.seed,
                &[place[0], place[1], place[2], name_hash(w.script.name())],
            ),
            Workload::Training(w) => {
                mix_seed(w.seed, &[place[0], place[1], place[2], name_hash(&w.model)])
            }
            // The pieces' stamps carry the workload's seed: a read step checks what the
            // write step wrote.
            Workload::Checkpoint(w) => w.seed,
        }
    }

    /// The operation source of foreground thread `thread` of a run seeded `run_seed` (a YCSB
    /// workload's threads share state: use [`Workload::sources`]).
    pub fn source(&self, region: Region, thread: u32, run_seed: u64) -> Source {
        match self {
            Workload::Block(w) if w.iometer_model() => {
                Source::AccessSpec(w.spec_source(region, thread, run_seed))
            }
            Workload::Block(w) if w.uses_pattern() => Source::Pattern(
                block::pattern::PatternSource::new(w, region, thread, run_seed),
            ),
            Workload::Block(w) => Source::Block(w.source(region, thread, run_seed)),
            Workload::DbBench(w) => Source::Kv(w.source(thread, run_seed)),
            Workload::Ycsb(w) => w
                .sources()
                .into_iter()
                .nth(thread as usize)
                .map(Source::Ycsb)
                .expect("thread below threads"),
            Workload::Pgbench(w) => Source::Pgbench(w.source(thread, run_seed)),
            // A reader alone: its accelerator's gate is stopped, so it reads the batches its
            // prefetch window holds and ends (a run's readers come from `sources`).
            Workload::Training(w) => {
                let (gates, sources) = w.run(std::sync::Arc::new(w.build_dataset()), run_seed);
                gates.iter().for_each(|g| g.stop());
                sources
                    .into_iter()
                    .nth(thread as usize)
                    .map(Source::Training)
                    .expect("thread below threads")
            }
            // A rank alone: the others never reach the barrier, so it ends at once.
            Workload::Checkpoint(w) => {
                let (_, sources) = w.run(std::sync::Arc::new(w.layout()));
                sources
                    .into_iter()
                    .nth(thread as usize)
                    .map(Source::Checkpoint)
                    .expect("thread below threads")
            }
        }
    }

    /// The operation sources of all foreground threads of a run seeded `run_seed`, in order,
    /// and a training workload's accelerators (the gates its readers meet them at, for the
    /// engine to drive).
    pub fn sources(&self, region: Region, run_seed: u64) -> RunSources {
        let mut checkpoints = None;
        let (sources, accelerators) = match self {
            Workload::Ycsb(w) => (
                w.sources().into_iter().map(Source::Ycsb).collect(),
                Vec::new(),
            ),
            Workload::Training(w) => {
                let (gates, readers) = w.run(std::sync::Arc::new(w.build_dataset()), run_seed);
                (readers.into_iter().map(Source::Training).collect(), gates)
            }
            Workload::Checkpoint(w) => {
                let (clock, ranks) = w.run(std::sync::Arc::new(w.layout()));
                checkpoints = Some(clock);
                (
                    ranks.into_iter().map(Source::Checkpoint).collect(),
                    Vec::new(),
                )
            }
            _ => (
                (0..self.threads())
                    .map(|t| self.source(region, t, run_seed))
                    .collect(),
                Vec::new(),
            ),
        };
        RunSources {
            sources,
            accelerators,
            checkpoints,
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
            Workload::Block(_)
            | Workload::Ycsb(_)
            | Workload::Pgbench(_)
            | Workload::Training(_)
            | Workload::Checkpoint(_) => None,
            Workload::DbBench(w) => w.writer(run_seed).map(|(source, rate_ops)| Background {
                source: Source::Kv(source),
                kinds: vec![OpKind::Write],
                rate_ops,
            }),
        }
    }

    /// A one-line description for plan listings.
    pub fn describe(&self) -> String {
        let text = self.describe_load();
        match self
            .as_block()
            .and_then(|b| Some((b.cpus.as_ref()?, b.cpus_policy)))
        {
            Some((cpus, policy)) if policy.is_shared() => format!("{text} cpus {cpus}"),
            Some((cpus, _)) => format!("{text} cpus {cpus} split"),
            None => text,
        }
    }

    /// What the workload does, for [`Workload::describe`].
    fn describe_load(&self) -> String {
        match self {
            Workload::Block(w) if !w.access_spec.is_empty() => {
                let lines: Vec<String> = w
                    .access_spec
                    .iter()
                    .map(|l| {
                        format!(
                            "{}% {} read {}% random {}%",
                            l.spec_share * 100.0,
                            l.block_size,
                            l.read_share * 100.0,
                            l.random_share * 100.0
                        )
                    })
                    .collect();
                format!(
                    "access-spec [{}] qd {} threads {}",
                    lines.join("; "),
                    w.queue_depth,
                    w.threads
                )
            }
            Workload::Block(w) => format!(
                "{} {} read-share {}{} qd {} threads {}",
                format!("{:?}", w.access).to_lowercase(),
                w.block_size,
                w.read_share,
                w.random_share
                    .map(|r| format!(" random-share {r}"))
                    .unwrap_or_default(),
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
            Workload::Pgbench(w) => w.describe(),
            Workload::Training(w) => w.describe(),
            Workload::Checkpoint(w) => w.describe(),
        }
    }

    pub fn as_ycsb(&self) -> Option<&ycsb::workload::YcsbWorkload> {
        match self {
            Workload::Ycsb(w) => Some(w),
            _ => None,
        }
    }

    /// How long after its step starts each worker starts (a block workload's `start-delay`,
    /// fio's `startdelay`; zero for the others): its warm-up and measurement come after it.
    pub fn start_delay(&self) -> std::time::Duration {
        self.as_block()
            .and_then(|b| b.start_delay)
            .map_or(std::time::Duration::ZERO, |d| d.0)
    }

    pub fn as_block(&self) -> Option<&BlockWorkload> {
        match self {
            Workload::Block(w) => Some(w),
            Workload::DbBench(_)
            | Workload::Ycsb(_)
            | Workload::Pgbench(_)
            | Workload::Training(_)
            | Workload::Checkpoint(_) => None,
        }
    }

    pub fn as_checkpoint(&self) -> Option<&training::checkpoint::CheckpointWorkload> {
        match self {
            Workload::Checkpoint(w) => Some(w),
            _ => None,
        }
    }

    pub fn as_training(&self) -> Option<&training::TrainingWorkload> {
        match self {
            Workload::Training(w) => Some(w),
            _ => None,
        }
    }

    pub fn as_pgbench(&self) -> Option<&pgbench::PgbenchWorkload> {
        match self {
            Workload::Pgbench(w) => Some(w),
            _ => None,
        }
    }
}

/// Keys a study's sweep may vary.
pub const SWEEPABLE: &[&str] = &[
    "access",
    "read-share",
    "random-share",
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
