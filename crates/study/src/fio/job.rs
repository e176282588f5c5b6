//! A fio job as its options leave it: [`Job`] and the value types of its option groups, the
//! data the option modules above fill in and read. Each option group's module (buffers, control, distribution, files, latency, rates, sizes, ...) holds how its
//! options are read, checked and what they become, with its tests; this module holds only
//! their values, so that no option module and the job need each other.

use std::time::Duration;

use storlab_model::cpus::{CpuList, CpuPolicy};
use storlab_model::rate::RateProcess;
use storlab_targets::file::FileService;
use storlab_workload::block::distribution::Distribution;
use storlab_workload::block::size_draw::mean_size;

use super::engines::Engine;

/// What a job does per I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
}

impl Rw {
    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// The job reads.
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::RandWrite)
    }
    /// The job writes.
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }
    pub fn mixed(self) -> bool {
        matches!(self, Rw::ReadWrite | Rw::RandRw)
    }
}

/// One job, its options resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub name: String,
    pub file: String,
    pub line: usize,
    /// The section's own options as written (fio's "job options").
    pub own_options: Vec<(String, String)>,
    pub filename: Option<String>,
    pub directory: Option<String>,
    pub size: Option<u64>,
    pub offset: u64,
    /// `offset_increment`: clone N starts N increments after `offset`; and its line.
    pub offset_increment: Option<(Increment, usize)>,
    pub rw: Rw,
    /// rw=trim or randtrim, and its line: the job's writes are trims (only falloc's punch
    /// holes are taken).
    pub trim: Option<usize>,
    /// filestat's `stat_type`, and its line.
    pub stat_call: Option<(storlab_targets::fileops::StatCall, usize)>,
    pub rwmixread: u32,
    pub bs: u64,
    /// (bytes, percent) pairs, percents filled in.
    pub bssplit: Vec<(u64, u32)>,
    /// The writes' split when `bssplit=READS,WRITES` gives one of their own (`bssplit` is
    /// then the reads').
    pub bssplit_write: Option<Vec<(u64, u32)>>,
    pub blockalign: Option<u64>,
    pub direct: bool,
    pub engine: Engine,
    pub iodepth: u32,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub ramp: Duration,
    /// `rate`, `rate_iops`, their minimums, `rate_process`, `rate_cycle`.
    pub rates: Rates,
    /// What written blocks hold (fio's buffer options).
    pub buffers: Buffers,
    /// `latency_target`, `latency_window`, `latency_percentile`, `latency_run`.
    pub latency: LatencyOptions,
    pub fsync: u64,
    pub group_reporting: bool,
    pub stonewall: bool,
    pub verify: bool,
    pub invalidate: bool,
    /// fio's log files asked for.
    pub logs: storlab_model::fio_jobs::Logs,
    /// fio's `ss` as written (checked: e.g. `iops:10%`), `ss_dur` and `ss_ramp`.
    pub ss: Option<String>,
    pub ss_dur: Option<Duration>,
    pub ss_ramp: Duration,
    /// fio options given that would switch measurement off (`gtod_reduce`, `disable_*`), as
    /// written: storlab measures anyway, and says so.
    pub measurement_off: Vec<String>,
    /// The latency percentiles the report prints.
    pub latency_report: storlab_model::fio_jobs::LatencyReport,
    /// Groups, ending early, the random generator, commands around the job.
    pub control: Control,
    /// `nrfiles`, `filesize`, layout, unlink and sync options.
    pub files: FileOptions,
    /// `random_distribution`.
    pub distribution: RandomDistribution,
    /// Size ranges, `rw=...:N`, loops, io_size, number_ios, startdelay, think time.
    pub sizes_opts: SizeOptions,
    /// `zonemode`, `zonesize`, `zonerange`, `zoneskip`.
    pub zones: ZoneOptions,
    /// `prioclass`, `prio`, `cmdprio_*`, `log_prio` (see the `prio` module).
    pub prio: PrioOptions,
}

impl Job {
    pub(super) fn new(name: &str, file: &str, line: usize) -> Job {
        Job {
            name: name.to_string(),
            file: file.to_string(),
            line,
            own_options: Vec::new(),
            filename: None,
            directory: None,
            size: None,
            offset: 0,
            offset_increment: None,
            rw: Rw::Read,
            trim: None,
            stat_call: None,
            rwmixread: 50,
            bs: 4096,
            bssplit: Vec::new(),
            bssplit_write: None,
            blockalign: None,
            direct: false,
            // fio 3.33's default on Linux.
            engine: Engine::Psync,
            iodepth: 1,
            numjobs: 1,
            runtime: None,
            time_based: false,
            ramp: Duration::ZERO,
            rates: Rates::default(),
            buffers: Buffers::default(),
            latency: LatencyOptions::default(),
            fsync: 0,
            group_reporting: false,
            stonewall: false,
            verify: false,
            invalidate: false,
            logs: storlab_model::fio_jobs::Logs::default(),
            ss: None,
            ss_dur: None,
            ss_ramp: Duration::ZERO,
            measurement_off: Vec::new(),
            latency_report: storlab_model::fio_jobs::LatencyReport::default(),
            control: Control::default(),
            files: FileOptions::default(),
            distribution: Default::default(),
            sizes_opts: SizeOptions::default(),
            zones: ZoneOptions::default(),
            prio: Default::default(),
        }
    }

    /// The share of its I/Os that read: 1 or 0 for one direction, `rwmixread` for a mix.
    pub fn read_share(&self) -> f64 {
        match self.rw {
            Rw::Read | Rw::RandRead => 1.0,
            Rw::Write | Rw::RandWrite => 0.0,
            Rw::ReadWrite | Rw::RandRw => self.rwmixread as f64 / 100.0,
        }
    }

    /// The clones share one target, as threads: a `filename` without `offset_increment`
    /// (with it, each clone has a target of its own at its offset).
    pub fn clones_as_threads(&self) -> bool {
        self.filename.is_some() && self.offset_increment.is_none()
    }

    /// Transfer sizes: bssplit's or bs.
    pub fn sizes(&self) -> Vec<u64> {
        if let Some(r) = self.sizes_opts.range {
            r.iter().flat_map(|d| [d.0, d.1]).collect()
        } else if self.bssplit.is_empty() {
            vec![self.bs]
        } else {
            self.bssplit
                .iter()
                .chain(self.bssplit_write.iter().flatten())
                .map(|(b, _)| *b)
                .collect()
        }
    }

    /// The mean transfer size, bytes.
    pub fn mean_bs(&self) -> f64 {
        if let Some([r, w]) = self.sizes_opts.range {
            // fio's draw over each direction's range, weighted by the share of reads.
            let u = self.sizes_opts.unaligned;
            let read = self.read_share();
            read * mean_size(r.0, r.1, u) + (1.0 - read) * mean_size(w.0, w.1, u)
        } else if self.bssplit.is_empty() {
            self.bs as f64
        } else {
            let mean = |s: &[(u64, u32)]| -> f64 {
                s.iter().map(|(b, p)| *b as f64 * *p as f64 / 100.0).sum()
            };
            let reads = mean(&self.bssplit);
            let writes = self.bssplit_write.as_deref().map_or(reads, mean);
            let r = self.read_share();
            r * reads + (1.0 - r) * writes
        }
    }
}

/// fio's buffer options of a job, as its option callbacks leave them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Buffers {
    /// Any of them given.
    pub given: bool,
    /// `buffer_compress_percentage` or `dedupe_percentage` given (fio's TD_F_COMPRESS).
    pub(super) compress_flag: bool,
    pub(super) compress_percentage: u32,
    pub(super) chunk: Option<u64>,
    pub(super) dedupe_percentage: u32,
    /// `dedupe_mode=working_set`, and its line.
    pub(super) dedupe_working_set: Option<usize>,
    /// `dedupe_working_set_percentage` (fio's default 5).
    pub(super) dedupe_working_set_percent: Option<u32>,
    /// `dedupe_global`.
    pub(super) dedupe_global: bool,
    pub(super) pattern: Vec<u8>,
    /// (value, given in the job file).
    pub(super) refill: (bool, bool),
    pub(super) scramble: (Option<bool>, bool),
    pub(super) zero: (bool, bool),
    /// `buffer_pattern` was given after `rw`: its refill follows whether the job reads.
    pub(super) pattern_refill_reads: bool,
    /// `mem` (`iomem`): the file target's `buffer-pages`, when given.
    pub pages: Option<&'static str>,
}

/// fio's `continue_on_error`, as storlab can honour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// fio's default (`none`, `0`): the job ends at its first error.
    Stop,
    /// `all`, `1`, `io`: errors are counted by kind and the job goes on.
    Continue,
}

/// A job's control options.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    pub new_group: bool,
    pub exitall: bool,
    pub exitall_on_error: bool,
    pub on_error: OnError,
    /// `randrepeat` (fio's default 1): the same offsets on every run.
    pub randrepeat: bool,
    /// `random_generator` as written.
    pub random_generator: Option<String>,
    /// `exec_prerun`: a shell command run before the job's group.
    pub exec_prerun: Option<String>,
    /// `exec_postrun`: a shell command run after the job's group.
    pub exec_postrun: Option<String>,
    /// `cpus_allowed` or `cpumask` (the last given), or `numa_cpu_nodes`' CPUs: the CPUs the
    /// job's threads run on.
    pub cpus: Option<CpuList>,
    /// `numa_cpu_nodes` gave `cpus` (it wins over `cpus_allowed`, as fio applies it last).
    pub numa_cpus: bool,
    /// `numa_mem_policy` as written, taken on a machine of one node.
    pub numa_mem: Option<String>,
    /// `cpus_allowed_policy`.
    pub cpus_policy: CpuPolicy,
    /// With randrepeat=0: the seed drawn for this invocation (see
    /// [`fresh_seed`](super::control::fresh_seed)).
    pub seed: Option<u64>,
    /// `verify=TYPE` other than crc32c, as written: verified with storlab's own header.
    pub verify_type: Option<String>,
    /// `verify_backlog`: storlab verifies every written block after the run instead.
    pub verify_backlog: Option<u64>,
    /// `thread` given: storlab's clones are threads anyway.
    pub thread: bool,
    /// `io_submit_mode=offload`: storlab submits and completes on the job's own threads.
    pub offload: bool,
    /// `wait_for=JOB` and its line: the job starts once every clone of `JOB` is done.
    pub wait_for: Option<(String, usize)>,
    /// Options of fio's tiobench profile (`threads`, `dir`, `block`, `numruns`) as written:
    /// fio takes them in any job file and ignores them without `profile=tiobench`.
    pub profile_options: Vec<String>,
}

/// The job's `random_distribution` and its line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RandomDistribution {
    pub distribution: Distribution,
    pub line: usize,
}

/// fio's `fallocate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fallocate {
    /// `native` (fio's default): fallocate(2); storlab's posix_fallocate does the same
    /// where the filesystem allocates.
    #[default]
    Native,
    Posix,
    Keep,
    None,
    Truncate,
}

/// The job's file options as given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileOptions {
    /// `nrfiles` (fio's default 1).
    pub nrfiles: Option<u32>,
    /// `filesize`: one size, or a range drawn per file.
    pub filesize: Option<(u64, u64)>,
    /// `openfiles` and its line.
    pub openfiles: Option<(u32, usize)>,
    /// `file_service_type` (fio 3.33's default: roundrobin).
    pub service: Option<FileService>,
    pub create_on_open: bool,
    pub unlink: bool,
    pub fallocate: Fallocate,
    pub overwrite: bool,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    /// `fdatasync`: every N writes, with its line.
    pub fdatasync: Option<(u64, usize)>,
    /// `sync`: "sync" or "dsync".
    pub sync: Option<&'static str>,
}

/// A job's latency-target options as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyOptions {
    /// `latency_target`; None or zero: no search (fio's default).
    pub target: Option<Duration>,
    /// `latency_window` (fio: no default, 0).
    pub window: Duration,
    /// `latency_percentile`, None: fio's 100.
    pub percentile: Option<f64>,
    /// `latency_run`.
    pub keep_adjusting: bool,
}

/// A per-direction value: `[read, write]`, None where not limited.
pub type Pair = [Option<u64>; 2];

/// A job's rate options.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    /// `rate`: bytes per second per direction.
    pub bytes: Pair,
    /// `rate_iops`: I/Os per second per direction.
    pub iops: Pair,
    /// `rate_min`: bytes per second a direction must keep up over every `cycle`.
    pub min_bytes: Pair,
    /// `rate_iops_min`: I/Os per second a direction must keep up over every `cycle`.
    pub min_iops: Pair,
    pub process: RateProcess,
    /// `rate_cycle`: the window rate_min is averaged over (fio's default 1000 ms).
    pub cycle: Duration,
    /// fio's flow control: `flow` (the weight, 0: none), `flow_id`, `flow_sleep`.
    pub flow: u32,
    pub flow_id: u32,
    pub flow_sleep: Duration,
    /// The line of a rate option that gave a trim rate (a third value above 0).
    pub trim_line: Option<usize>,
}

/// What `rw=MODE:N` adds (fio's `ddir_seq_add` or `ddir_seq_nr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwModifier {
    /// Sequential: bytes skipped after each I/O.
    Skip(u64),
    /// Sequential, backwards (`rw=read:-8k`): each I/O starts this many bytes before the
    /// previous one's end.
    Back(u64),
    /// Random: a new random offset every N I/Os.
    Every(u32),
}

/// fio's `offset_increment`: bytes, or a share of the file's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Increment {
    Bytes(u64),
    Percent(u64),
}

/// The job's priority options, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrioOptions {
    /// `prioclass` (1 realtime, 2 best effort, 3 idle) and `prio` (0-7).
    pub class: Option<u8>,
    pub level: Option<u8>,
    /// `cmdprio_percentage` per direction (reads, writes), and its line.
    pub cmd_percent: Option<([u8; 2], usize)>,
    /// `cmdprio_class` (default 1) and `cmdprio` (default 0) per direction.
    pub cmd_class: Option<[u8; 2]>,
    pub cmd_level: Option<[u8; 2]>,
    /// `cmdprio_bssplit` per direction (reads, writes), and its line.
    pub cmd_bssplit: Option<([Vec<SizePriority>; 2], usize)>,
    /// `cmdprio_bssplit` gave priority hints (a fifth field), which fio 3.33 ignores.
    pub cmd_hints: bool,
    pub log_prio: bool,
}

/// One entry of `cmdprio_bssplit`: the I/Os of `bytes` that carry a priority, with
/// `percent` percent; the priority is (class, level), or `cmdprio_class`/`cmdprio`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizePriority {
    pub bytes: u64,
    pub percent: u8,
    pub prio: Option<(u8, u8)>,
}

/// fio's `zonemode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// fio's default: no zones (a `zonesize` with it is refused, as fio 3.33 refuses it).
    #[default]
    None,
    Strided,
}

/// The zone options, as given (see the `zones` module).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ZoneOptions {
    pub mode: ZoneMode,
    /// The line of `zonemode` (0: not given).
    pub line: usize,
    pub size: Option<u64>,
    /// The line of `zonesize` (0: not given).
    pub size_line: usize,
    pub range: Option<u64>,
    pub skip: u64,
}

/// The options of this module, as given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SizeOptions {
    /// (min, max) of reads and of writes, when a range or a pair differs from `bs`.
    pub range: Option<[(u64, u64); 2]>,
    pub unaligned: bool,
    pub modifier: Option<RwModifier>,
    pub identical: bool,
    /// fio's `loops` (1 by default).
    pub loops: Option<u64>,
    pub io_size: Option<u64>,
    pub number_ios: Option<u64>,
    /// `startdelay`: (low, high), high above low for a range.
    pub start_delay: Option<(Duration, Duration)>,
    pub think: Duration,
    pub think_blocks: Option<u64>,
    pub think_spin: Duration,
    /// `thinktime_blocks_type=issue` (fio's default counts completions).
    pub think_on_issue: bool,
    pub ignore_think_for_rate: bool,
}
