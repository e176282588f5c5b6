//! The `file` target: a regular file or a block device, driven through io_uring (with O_DIRECT
//! one submission per operation, registered file and buffers: see `uring`) or psync (pread/pwrite, one I/O
//! at a time per worker), with O_DIRECT or buffered I/O.
//!
//! Regular files are created and laid out with incompressible data before a run, so reads never
//! hit holes. Block devices pass the [`guard`] before any write. Every
//! session checks each operation against the region it was given, so storlab never writes
//! outside it.

mod buf;
mod kinds;
mod layout;
pub mod priority;
mod psync;
pub mod set;
mod share;
mod uring;

pub use kinds::{BufferPages, Layout, OpenSync, Submit};

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use storlab_model::OpKind;
use crate::{
    BlockParams, Capabilities, OptionError, ReadBackFile, Overlap, PrepareOptions, Region, SessionParams, SessionUser, Target,
    TargetConfig, TargetError, TargetType, guard, option_error,
};
use storlab_model::units::{Bytes, Dur};
use storlab_verify::Stamper;
use storlab_workload::Workload;
use buf::AlignedBuf;
use share::{check_share, share_of_filesystem};
pub use set::FileService;
use set::{Files, Picker};
use layout::{block_device_size, check_poll_queues};
pub(crate) use layout::lay_out;
use psync::PsyncSession;
use uring::{UringOptions, UringSetup};
pub use uring::UringSession;

pub const TYPE: TargetType = TargetType {
    name: "file",
    summary: "a regular file or a block device, through io_uring or psync",
    options: &[
        (
            "path",
            "the file or block device (relative paths are from the current directory)",
        ),
        (
            "engine",
            "\"io-uring\" (default: registered file and buffers; with direct = true each operation is submitted as it is queued, else together at the next reap) or \"psync\" (pread/pwrite, queue depth 1)",
        ),
        (
            "sqthread-poll",
            "io-uring: true for a kernel thread that polls the submission queue (IORING_SETUP_SQPOLL, fio's sqthread_poll); refused at open if the kernel says no",
        ),
        (
            "sqthread-idle",
            "with sqthread-poll: how long the kernel thread polls before it sleeps (default \"1s\")",
        ),
        (
            "hipri",
            "io-uring with direct = true: poll for completions (IORING_SETUP_IOPOLL, fio's hipri); reads and writes only; needs a device with poll queues (queue/io_poll = 1), refused otherwise",
        ),
        (
            "direct",
            "true for O_DIRECT (bypass the page cache); default false",
        ),
        (
            "buffer-pages",
            "\"huge\" (default: the I/O buffers in transparent huge pages when a block is larger than 4 KiB, so each block is one physically contiguous segment: a virtio disk holds 7 requests of 128 KiB in 4 KiB pages, over 80 in huge pages) or \"base\" (4 KiB pages, as fio's iomem=malloc); the results say what the kernel gave (`file.buffer-pages`)",
        ),
        (
            "size",
            "bytes to address; a regular file is created and laid out to offset + size",
        ),
        (
            "filesystem-share",
            "instead of size, for a regular file: this share (above 0, at most 1) of the size of the filesystem that holds it, e.g. 0.8 for most of an array under test (full scale that follows the storage); refused when that is more than is free; --quick addresses 64 MiB",
        ),
        ("offset", "first byte addressed (default 0)"),
        (
            "remove-after",
            "delete the file after the study if storlab created it (default false)",
        ),
        (
            "files",
            "instead of path: a set of files behind the one target, each `{ path, size }` (fio's nrfiles); the workload addresses the largest, each operation goes to one file; in a smaller file an operation is placed and sized as fio does there (none in a file smaller than the smallest size)",
        ),
        (
            "file-service",
            "with files: which file each operation goes to: \"random\" (default), \"roundrobin\" (\"roundrobin:N\": the next file every N operations) or \"sequential\" (every byte of a file before the next)",
        ),
        (
            "file-cursors",
            "with files: each file keeps its own next offset (a sequential job over many files, as fio); else the workload's offset is used (in a smaller file, drawn over its own blocks as fio)",
        ),
        (
            "layout",
            "how a new or short file is laid out: \"write\" (default: incompressible data), \"fallocate\" (posix_fallocate: allocated, never written) or \"truncate\" (a sparse file of its size), \"keep\" (allocated, the size left to the writes) or \"none\" (created empty): the last two for jobs that only write",
        ),
        (
            "open-sync",
            "\"sync\" (O_SYNC) or \"dsync\" (O_DSYNC): every write is synchronous (fio's sync)",
        ),
        (
            "fdatasync",
            "true: the workload's fsync operations are fdatasync (fio's fdatasync)",
        ),
        (
            "end-fsync",
            "true: each session fsyncs each of its files when it closes, after its last measured operation (fio's end_fsync, fsync_on_close)",
        ),
        (
            "priority",
            "{ class = \"realtime\" | \"best-effort\" | \"idle\", level = 0-7 }: each worker thread's I/O priority (ioprio_set, fio's prioclass and prio), restored when its session closes; realtime needs CAP_SYS_ADMIN",
        ),
        (
            "command-priority",
            "io-uring: { percent = P, class = ..., level = N }: P percent of the operations, drawn per operation, carry this priority in their submission (fio's cmdprio_percentage, cmdprio_class, cmdprio); class default realtime. An array of such rules with direction = \"read\" | \"write\" and size = \"64KiB\" gives each direction and transfer size its own (fio's cmdprio_bssplit); rules of one direction and size share their draw, their percents adding up to at most 100",
        ),
    ],
    parse,
    file_server: None,
    ycsb: None,
};

/// How a session issues I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    #[default]
    IoUring,
    Psync,
}

/// One file of a set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SetFile {
    pub path: PathBuf,
    pub size: Bytes,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    #[serde(default)]
    pub path: PathBuf,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub direct: bool,
    pub size: Option<Bytes>,
    /// Instead of `size`: this share of the size of the filesystem holding the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem_share: Option<f64>,
    #[serde(default)]
    pub offset: Bytes,
    #[serde(default)]
    pub remove_after: bool,
    /// io_uring with IORING_SETUP_SQPOLL.
    #[serde(default)]
    pub sqthread_poll: bool,
    /// Idle time of the submission thread before it sleeps.
    pub sqthread_idle: Option<Dur>,
    /// io_uring with IORING_SETUP_IOPOLL (polled completions).
    #[serde(default)]
    pub hipri: bool,
    /// io-uring: one submission per operation or per reap (default: each with `direct`,
    /// batch without).
    pub submit: Option<Submit>,
    /// Which pages hold the I/O buffers (default huge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_pages: Option<BufferPages>,
    /// A set of files instead of `path`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<SetFile>,
    #[serde(default)]
    pub file_service: FileService,
    #[serde(default)]
    pub file_cursors: bool,
    #[serde(default)]
    pub layout: Layout,
    pub open_sync: Option<OpenSync>,
    #[serde(default)]
    pub fdatasync: bool,
    #[serde(default)]
    pub end_fsync: bool,
    /// Each worker thread's I/O priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<priority::IoPriority>,
    /// io-uring: drawn shares of operations with these priorities.
    #[serde(
        default,
        deserialize_with = "priority::one_or_many",
        skip_serializing_if = "Option::is_none"
    )]
    pub command_priority: Option<Vec<priority::CommandPriority>>,
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: FileConfig = table.try_into().map_err(option_error)?;
    if c.path.as_os_str().is_empty() && c.files.is_empty() {
        return Err(OptionError {
            key: "path".into(),
            message: "path must not be empty (or give `files`)".into(),
        });
    }
    check_set(&c)?;
    check_share(&c)?;
    if c.size == Some(Bytes(0)) {
        return Err(OptionError {
            key: "size".into(),
            message: "size must be above 0".into(),
        });
    }
    if c.direct && !c.offset.0.is_multiple_of(512) {
        return Err(OptionError {
            key: "offset".into(),
            message: "with direct = true the offset must be a multiple of 512 bytes".into(),
        });
    }
    priority::check(c.priority, c.command_priority.as_deref())?;
    if c.engine == Engine::Psync {
        for (key, set) in [
            ("command-priority", c.command_priority.is_some()),
            ("sqthread-poll", c.sqthread_poll),
            ("sqthread-idle", c.sqthread_idle.is_some()),
            ("hipri", c.hipri),
            ("submit", c.submit.is_some()),
        ] {
            if set {
                return Err(OptionError {
                    key: key.into(),
                    message: format!("{key} is an io-uring option; engine = \"psync\" has none"),
                });
            }
        }
    }
    if c.sqthread_idle.is_some() && !c.sqthread_poll {
        return Err(OptionError {
            key: "sqthread-idle".into(),
            message: "sqthread-idle needs sqthread-poll = true".into(),
        });
    }
    if c.sqthread_idle
        .is_some_and(|d| d.0.as_millis() > u32::MAX as u128)
    {
        return Err(OptionError {
            key: "sqthread-idle".into(),
            message: "sqthread-idle must be below 49 days".into(),
        });
    }
    if c.hipri && !c.direct {
        return Err(OptionError {
            key: "hipri".into(),
            message: "hipri (polled completions) needs direct = true".into(),
        });
    }
    Ok(TargetConfig::File(c))
}

/// A set of files (`files`) stands instead of `path`, `size` and `offset`.
fn check_set(c: &FileConfig) -> Result<(), OptionError> {
    let fail = |key: &str, message: String| {
        Err(OptionError {
            key: key.into(),
            message,
        })
    };
    if c.files.is_empty() {
        for (key, set) in [
            ("file-service", c.file_service != FileService::Random),
            ("file-cursors", c.file_cursors),
        ] {
            if set {
                return fail(key, format!("{key} needs `files`"));
            }
        }
        return Ok(());
    }
    for (key, set) in [
        ("path", !c.path.as_os_str().is_empty()),
        ("size", c.size.is_some()),
        ("offset", c.offset.0 > 0),
    ] {
        if set {
            return fail(
                key,
                format!("give either `files` or `{key}`: each file of the set has its path and size"),
            );
        }
    }
    if let Some(f) = c.files.iter().find(|f| f.size.0 == 0 || f.path.as_os_str().is_empty()) {
        return fail(
            "files",
            format!("each file needs a path and a size above 0 (got {:?})", f.path),
        );
    }
    Ok(())
}

/// Files this process created, so that `remove-after` never deletes a user's file.
static CREATED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Alignment of I/O buffers (enough for O_DIRECT on any common device).
const BUF_ALIGN: usize = 4096;

impl Target for FileConfig {
    const TYPE: TargetType = TYPE;
    type Shared = ();

    fn region_problem(
        &self,
        block: Bytes,
        workload_name: &str,
    ) -> Option<(&'static str, String)> {
        let too_small = |room: u64| room < block.0;
        // The workload addresses the largest file; a smaller one takes the I/Os that fit in
        // it, as fio (none when it is smaller than the smallest).
        let largest = self.files.iter().max_by_key(|f| f.size.0);
        if let Some(f) = largest.filter(|f| too_small(f.size.0)) {
            return Some((
                "files",
                format!(
                    "the largest file, {}, is {} long, smaller than one block of workload `{workload_name}` (block-size {block}): it must hold at least one",
                    f.path.display(),
                    f.size
                ),
            ));
        }
        if !self.files.is_empty() {
            return None;
        }
        match self.size {
            Some(size) => too_small(size.0).then(|| {
                (
                    "size",
                    format!(
                        "size {size} is smaller than one block of workload `{workload_name}` (block-size {block}): the region must hold at least one"
                    ),
                )
            }),
            None => {
                // Without `size` the region is the rest of an existing file after `offset`
                // (a block device's size is read when the run starts).
                let len = std::fs::metadata(&self.path).ok().filter(|m| m.is_file())?.len();
                let room = len.saturating_sub(self.offset.0);
                too_small(room).then(|| {
                    (
                        "path",
                        format!(
                            "{} is {} long: from offset {} that leaves {}, less than one block of workload `{workload_name}` (block-size {block}); give `size` to make the region larger",
                            self.path.display(),
                            Bytes(len),
                            self.offset,
                            Bytes(room)
                        ),
                    )
                })
            }
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[storlab_model::WorkloadKind::Block],
            ops: &[OpKind::Read, OpKind::Write, OpKind::Fsync],
            overlap: match self.engine {
                Engine::IoUring => Overlap::Concurrent {
                    max_queue_depth: 4096,
                },
                Engine::Psync => Overlap::None,
            },
            in_process: false,
            writes_given_buffers: true,
            reads_records_back: false,
            keeps_ledger: false,
        }
    }

    fn check_workload(&self, w: &Workload) -> Option<(&'static str, String)> {
        let b = w.as_block()?;
        // Every transfer: the workload's, or each line of its access specification.
        let odd = b
            .spec_lines()
            .into_iter()
            .find(|l| l.block_size.0 % 512 != 0 || l.alignment_bytes() % 512 != 0);
        if let Some(l) = odd.filter(|_| self.direct) {
            return Some((
                if b.access_spec.is_empty() {
                    "block-size"
                } else {
                    "access-spec"
                },
                format!(
                    "with direct = true, block-size and alignment must be multiples of 512 bytes (got {} and {})",
                    l.block_size.0,
                    l.alignment_bytes()
                ),
            ));
        }
        None
    }

    fn queue_depth_hint(&self) -> &'static str {
        "use engine = \"io-uring\""
    }

    fn paths(&self) -> Vec<PathBuf> {
        self.entries().into_iter().map(|(p, _, _)| p).collect()
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, ()), TargetError> {
        Ok((self.prepare_region(opts)?, ()))
    }

    fn open<U: SessionUser>(
        &self,
        _: &(),
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        self.open_session(params, user)
    }

    /// `--quick`: a regular file addresses at most 64 MiB.
    fn make_quick(&mut self) {
        let cap = 64u64 << 20;
        if self.filesystem_share.take().is_some() {
            self.size = Some(Bytes(cap));
        }
        if self.files.is_empty()
            && self.size.is_none_or(|s| s.0 > cap)
            && !self.path.starts_with("/dev/")
        {
            self.size = Some(Bytes(cap));
        }
    }

    fn finish(&self) {
        self.remove_if_created();
    }

    fn verify_file(&self) -> Option<ReadBackFile> {
        // Verified writes need one file: a set of several is refused when its sessions open.
        let path = match self.files.as_slice() {
            [] => self.path.clone(),
            [one] => one.path.clone(),
            _ => return None,
        };
        Some(ReadBackFile {
            path,
            direct: self.direct,
        })
    }
}

impl FileConfig {
    /// Each file with its size (if given) and the first byte addressed.
    fn entries(&self) -> Vec<(PathBuf, Option<Bytes>, Bytes)> {
        if self.files.is_empty() {
            return vec![(self.path.clone(), self.size, self.offset)];
        }
        self.files
            .iter()
            .map(|f| (f.path.clone(), Some(f.size), Bytes(0)))
            .collect()
    }

    /// Each file prepared; a set's region is its largest file (the session places each
    /// operation in one file).
    fn prepare_region(&self, opts: &PrepareOptions) -> Result<Region, TargetError> {
        let mut region = Region {
            offset_bytes: 0,
            size_bytes: 0,
        };
        let mut entries = self.entries();
        if let Some(share) = self.filesystem_share {
            entries[0].1 = Some(share_of_filesystem(&self.path, share, self.offset)?);
        }
        // Each file of a set may be smaller than a block (it takes the I/Os that fit); the
        // largest must hold one.
        let each = PrepareOptions {
            min_size_bytes: if entries.len() > 1 {
                0
            } else {
                opts.min_size_bytes
            },
            ..opts.clone()
        };
        for (path, size, offset) in entries {
            let r = self.prepare_file(&path, size, offset, &each)?;
            if r.size_bytes >= region.size_bytes {
                region = r;
            }
        }
        if region.size_bytes < opts.min_size_bytes {
            return Err(TargetError::Invalid(format!(
                "the largest file ({} bytes) is smaller than one block ({} bytes)",
                region.size_bytes, opts.min_size_bytes
            )));
        }
        Ok(region)
    }

    fn prepare_file(
        &self,
        path: &Path,
        size: Option<Bytes>,
        offset: Bytes,
        opts: &PrepareOptions,
    ) -> Result<Region, TargetError> {
        let meta = std::fs::metadata(path);
        let region = match meta {
            Ok(m) if m.file_type().is_block_device() => {
                if opts.writes {
                    guard::check_writable_device(path, &opts.allow_destroy)?;
                }
                let dev_size = block_device_size(path)?;
                let size = match size {
                    Some(s) => s.0,
                    None => dev_size.saturating_sub(offset.0),
                };
                if offset.0 + size > dev_size {
                    return Err(TargetError::Invalid(format!(
                        "{}: offset + size ({} bytes) is beyond the device's {} bytes",
                        path.display(),
                        offset.0 + size,
                        dev_size
                    )));
                }
                Region {
                    offset_bytes: offset.0,
                    size_bytes: size,
                }
            }
            Ok(m) if m.is_file() => {
                let size = match size {
                    Some(s) => s.0,
                    None => m.len().saturating_sub(offset.0),
                };
                let end = offset.0 + size;
                if m.len() < end {
                    lay_out(path, m.len(), end, self.layout, opts.verbose)?;
                }
                Region {
                    offset_bytes: offset.0,
                    size_bytes: size,
                }
            }
            Ok(_) => {
                return Err(TargetError::Invalid(format!(
                    "{}: not a regular file or a block device",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let Some(size) = size else {
                    return Err(TargetError::Invalid(format!(
                        "{} does not exist: give `size` so that storlab can create it",
                        path.display()
                    )));
                };
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| TargetError::io(parent, "creating the folder", e))?;
                }
                lay_out(path, 0, offset.0 + size.0, self.layout, opts.verbose)?;
                CREATED
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert_with(HashSet::new)
                    .insert(path.to_path_buf());
                Region {
                    offset_bytes: offset.0,
                    size_bytes: size.0,
                }
            }
            Err(e) => return Err(TargetError::io(path, "reading its metadata", e)),
        };
        if region.size_bytes < opts.min_size_bytes {
            return Err(TargetError::Invalid(format!(
                "{}: the region ({} bytes) is smaller than one block ({} bytes)",
                path.display(),
                region.size_bytes,
                opts.min_size_bytes
            )));
        }
        if self.direct {
            self.open_file(path, true).map_err(|e| match e {
                TargetError::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                    TargetError::Invalid(format!(
                        "{}: the filesystem does not support O_DIRECT; set direct = false",
                        path.display()
                    ))
                }
                other => other,
            })?;
        }
        if self.hipri {
            check_poll_queues(path)?;
        }
        Ok(region)
    }

    fn uring_options(&self) -> UringOptions {
        UringOptions {
            sqpoll_idle_ms: self.sqthread_poll.then(|| {
                self.sqthread_idle
                    .map_or(1000, |d| d.0.as_millis().min(u32::MAX as u128) as u32)
            }),
            iopoll: self.hipri,
            per_op_submit: match self.submit {
                Some(Submit::Each) => true,
                Some(Submit::Batch) => false,
                None => self.direct,
            },
        }
    }

    fn open_file(&self, path: &Path, writes: bool) -> Result<File, TargetError> {
        let mut o = OpenOptions::new();
        o.read(true).write(writes);
        let mut flags = 0;
        if self.direct {
            flags |= libc::O_DIRECT;
        }
        flags |= match self.open_sync {
            Some(OpenSync::Sync) => libc::O_SYNC,
            Some(OpenSync::Dsync) => libc::O_DSYNC,
            None => 0,
        };
        o.custom_flags(flags);
        o.open(path).map_err(|e| TargetError::io(path, "opening", e))
    }

    /// Every file of the session opened before its first operation, and what places each
    /// operation in one of them.
    fn open_files(
        &self,
        p: &SessionParams,
        b: &BlockParams,
    ) -> Result<(Files, Picker), TargetError> {
        let entries = self.entries();
        if entries.len() > 1 && b.verify.is_some() {
            return Err(TargetError::Invalid(
                "verified writes need one file: a target with `files` cannot verify".into(),
            ));
        }
        let mut files = Vec::with_capacity(entries.len());
        let mut sizes = Vec::with_capacity(entries.len());
        for (path, size, _) in &entries {
            files.push(self.open_file(path, p.writes)?);
            sizes.push(size.map_or(p.region.size_bytes, |s| s.0));
        }
        let seed = p.seed ^ (u64::from(p.worker) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        let picker = Picker::new(sizes, self.file_service, self.file_cursors, seed, b.size_draw);
        Ok((
            Files {
                files,
                end_fsync: self.end_fsync,
            },
            picker,
        ))
    }

    fn open_session<U: SessionUser>(
        &self,
        p: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let b = p.block_only("file")?;
        let (files, picker) = self.open_files(p, b)?;
        let slots = match self.engine {
            Engine::IoUring => p.queue_depth as usize,
            Engine::Psync => 1,
        };
        let pages = self.buffer_pages.unwrap_or_default();
        let worker_seed = p.seed ^ (u64::from(p.worker) << 32);
        let buf = AlignedBuf::new(slots, b, worker_seed, pages, p.region.size_bytes)?;
        // Held until the session's worker loop returns: the thread's priority restored then.
        let _priority = self
            .priority
            .map(priority::ThreadPriority::set)
            .transpose()
            .map_err(|e| TargetError::Invalid(format!("priority (ioprio_set): {e}")))?;
        // O_SYNC / O_DSYNC: each acknowledged write is durable.
        let verify = b
            .verify
            .as_ref()
            .map(|v| Stamper::new(v, slots).durable_on_ack(self.open_sync.is_some()));
        let bounds = (
            p.region.offset_bytes,
            p.region.offset_bytes + p.region.size_bytes,
        );
        match self.engine {
            Engine::Psync => Ok(user.run(PsyncSession {
                files,
                picker,
                last: 0,
                fdatasync: self.fdatasync,
                buf,
                bounds,
                generation: 0,
                stamp: b.random_data,
                direct: self.direct,
                verify,
            })),
            Engine::IoUring => {
                let s = UringSession::new(UringSetup {
                    files,
                    picker,
                    fdatasync: self.fdatasync,
                    buf,
                    bounds,
                    qd: p.queue_depth,
                    stamp: b.random_data,
                    verify,
                    options: self.uring_options(),
                    command: self
                        .command_priority
                        .as_deref()
                        .map(|c| priority::CommandDraw::new(c, worker_seed ^ 0x9e10)),
                })
                .map_err(|e| {
                    let first = self.entries().swap_remove(0).0;
                    TargetError::Invalid(format!("{}: {e}", first.display()))
                })?;
                Ok(user.run(s))
            }
        }
    }

    fn remove_if_created(&self) {
        if !self.remove_after {
            return;
        }
        for (path, _, _) in self.entries() {
            let created = CREATED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
                .is_some_and(|s| s.remove(&path));
            if created {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadParams;

    fn parse_text(text: &str) -> Result<FileConfig, OptionError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        match parse(table)? {
            TargetConfig::File(c) => Ok(c),
            _ => unreachable!("parse returns file targets"),
        }
    }

    #[test]
    fn io_uring_options_are_refused_where_they_cannot_apply() {
        for (text, key) in [
            (
                "path = \"f\"\nengine = \"psync\"\nhipri = true\ndirect = true",
                "hipri",
            ),
            (
                "path = \"f\"\nengine = \"psync\"\nsqthread-poll = true",
                "sqthread-poll",
            ),
            ("path = \"f\"\nhipri = true", "hipri"),
            ("path = \"f\"\nsqthread-idle = \"1s\"", "sqthread-idle"),
        ] {
            let e = parse_text(text).expect_err(text);
            assert_eq!(e.key, key, "{text}: {}", e.message);
        }
    }

    #[test]
    fn a_share_of_the_filesystem_sizes_one_regular_file() {
        for (text, why) in [
            ("path = \"f\"\nsize = \"1GiB\"\nfilesystem-share = 0.5", "either `size`"),
            ("path = \"/dev/sdz\"\nfilesystem-share = 0.5", "a device"),
            ("path = \"f\"\nfilesystem-share = 0.0", "above 0"),
            ("path = \"f\"\nfilesystem-share = 1.5", "at most 1"),
        ] {
            let e = parse_text(text).expect_err(text);
            assert_eq!(e.key, "filesystem-share", "{text}");
            assert!(e.message.contains(why), "{text}: {}", e.message);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("array.dat");
        let (total, free) = share::filesystem_bytes(dir.path()).unwrap();
        // A small share fits; its size is whole MiB of the filesystem's size.
        let share = (64u64 << 20) as f64 / total as f64;
        let size = share_of_filesystem(&path, share, Bytes(0)).unwrap();
        assert!(size.0 > 0 && size.0 <= 64 << 20 && size.0.is_multiple_of(1 << 20));
        // The whole filesystem is more than is free.
        if free < total {
            let e = share_of_filesystem(&path, 1.0, Bytes(0)).unwrap_err();
            assert!(e.to_string().contains("bytes are free for it"), "{e}");
        }
        // --quick: 64 MiB, the share dropped.
        let mut c = parse_text(&format!("path = {:?}\nfilesystem-share = 0.8", path)).unwrap();
        c.make_quick();
        assert_eq!((c.size, c.filesystem_share), (Some(Bytes(64 << 20)), None));
    }

    #[test]
    fn io_uring_options_reach_the_ring() {
        let c = parse_text(
            "path = \"f\"\ndirect = true\nhipri = true\nsqthread-poll = true\nsqthread-idle = \"250ms\"",
        )
        .unwrap();
        let o = c.uring_options();
        assert_eq!(o.sqpoll_idle_ms, Some(250));
        assert!(o.iopoll && o.per_op_submit);
        let c = parse_text("path = \"f\"\nsqthread-poll = true").unwrap();
        assert_eq!(c.uring_options().sqpoll_idle_ms, Some(1000));
        assert!(!c.uring_options().per_op_submit);
        // `submit` overrides the default of each mode.
        let c = parse_text("path = \"f\"\ndirect = true\nsubmit = \"batch\"").unwrap();
        assert!(!c.uring_options().per_op_submit);
        let c = parse_text("path = \"f\"\nsubmit = \"each\"").unwrap();
        assert!(c.uring_options().per_op_submit);
        let e = parse_text("path = \"f\"\nengine = \"psync\"\nsubmit = \"batch\"").unwrap_err();
        assert_eq!(e.key, "submit");
    }

    #[test]
    fn hipri_is_refused_without_a_poll_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.dat");
        std::fs::write(&path, [0u8; 4096]).unwrap();
        match check_poll_queues(&path) {
            Ok(()) => {
                // Only a device that says it polls is accepted.
                use std::os::unix::fs::MetadataExt;
                let dev = std::fs::metadata(&path).unwrap().dev();
                let sys = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
                let state = std::fs::read_to_string(format!("{sys}/queue/io_poll"))
                    .or_else(|_| std::fs::read_to_string(format!("{sys}/../queue/io_poll")))
                    .unwrap();
                assert_eq!(state.trim(), "1");
            }
            Err(e) => assert!(
                e.to_string()
                    .contains("hipri = true needs a device with poll queues")
            ),
        }
    }

    fn params(region_bytes: u64) -> SessionParams {
        SessionParams {
            worker: 0,
            writes: true,
            region: Region {
                offset_bytes: 0,
                size_bytes: region_bytes,
            },
            queue_depth: 4,
            seed: 1,
            workload: WorkloadParams::Block(Box::new(BlockParams::zeros(4096))),
        }
    }

    #[test]
    fn buffers_of_blocks_above_a_page_sit_in_huge_pages_and_say_what_they_got() {
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
        let b = AlignedBuf::new(16, &BlockParams::zeros(128 << 10), 1, BufferPages::Huge, 0).unwrap();
        assert_eq!(b.ptr as usize % (2 << 20), 0);
        if thp {
            // "huge", or how much of it the kernel gave: never claimed without reading back.
            assert!(b.pages.starts_with("huge"), "{}", b.pages);
        } else {
            assert!(b.pages.starts_with("base (madvise"), "{}", b.pages);
        }
        let b = AlignedBuf::new(16, &BlockParams::zeros(128 << 10), 1, BufferPages::Base, 0).unwrap();
        assert_eq!(b.pages, "base (asked)");
        let b = AlignedBuf::new(16, &BlockParams::zeros(4096), 1, BufferPages::Huge, 0).unwrap();
        assert!(b.pages.starts_with("base (blocks of at most 4 KiB"), "{}", b.pages);
        let c = parse_text("path = \"f\"\nbuffer-pages = \"base\"").unwrap();
        assert_eq!(c.buffer_pages, Some(BufferPages::Base));
        assert_eq!(parse_text("path = \"f\"\nbuffer-pages = \"big\"").unwrap_err().key, "buffer-pages");
    }

    /// Writes block `i` at offset `i * 4096` (mod the region) for `ops` operations.
    struct WriteBlocks(u64);
    impl SessionUser for WriteBlocks {
        type Output = Vec<(&'static str, String)>;
        fn run<S: crate::Session>(self, mut s: S) -> Self::Output {
            for i in 0..self.0 {
                let op = storlab_model::Op::Write {
                    offset: (i % 4) * 4096,
                    len: 4096,
                };
                reap(&mut s, op);
            }
            reap(&mut s, storlab_model::Op::Fsync);
            s.used()
        }
    }

    fn reap<S: crate::Session>(s: &mut S, op: storlab_model::Op) {
        let mut out = crate::Completions::with_capacity(4);
        if let crate::Submitted::Done { result, .. } = s.submit(0, op).unwrap() {
            result.unwrap();
        } else {
            s.complete(1, &mut out).unwrap();
        }
    }

    fn set_text(dir: &Path, layout: &str, engine: &str) -> String {
        let files: Vec<String> = (0..3)
            .map(|i| {
                format!(
                    "{{ path = \"{}\", size = {} }}",
                    dir.join(format!("j.0.{i}")).display(),
                    (i + 1) * 16384
                )
            })
            .collect();
        format!(
            "files = [{}]\nlayout = \"{layout}\"\nengine = \"{engine}\"\nfile-service = \"roundrobin:2\"\nfdatasync = true\nend-fsync = true\nremove-after = true",
            files.join(", ")
        )
    }

    #[test]
    fn a_set_of_files_is_laid_out_and_each_gets_its_operations() {
        use std::os::unix::fs::MetadataExt;
        for (layout, engine) in [
            ("truncate", "psync"),
            ("fallocate", "io-uring"),
            ("write", "psync"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let c = parse_text(&set_text(dir.path(), layout, engine)).unwrap();
            assert_eq!(c.paths().len(), 3);
            let region = c.prepare_region(&PrepareOptions::default()).unwrap();
            assert_eq!(region.size_bytes, 3 * 16384, "the largest file");
            for i in 0..3u64 {
                let m = std::fs::metadata(dir.path().join(format!("j.0.{i}"))).unwrap();
                assert_eq!(m.len(), (i + 1) * 16384);
                let allocated = m.blocks() * 512;
                match layout {
                    "truncate" => assert_eq!(allocated, 0, "sparse"),
                    _ => assert!(allocated >= m.len(), "{layout}: {allocated}"),
                }
            }
            // Round robin by two: 12 writes are 4 per file, at the workload's offsets.
            let used = c.open_session(&params(region.size_bytes), WriteBlocks(12)).unwrap();
            assert!(used.contains(&("file.files", "3".into())), "{used:?}");
            assert!(used.contains(&("file.fsync-call", "fdatasync".into())));
            assert!(used.contains(&("file.end-fsync", "yes".into())));
            if layout == "truncate" {
                // Each sparse file now holds the 4 blocks written to it.
                for i in 0..3 {
                    let m = std::fs::metadata(dir.path().join(format!("j.0.{i}"))).unwrap();
                    assert_eq!(m.blocks() * 512, 16384, "file {i}");
                }
            }
            c.finish();
            assert!(!dir.path().join("j.0.0").exists(), "remove-after");
        }
    }

    #[test]
    fn a_set_may_hold_files_smaller_than_a_block_but_not_only_such() {
        // fio places an I/O in a smaller file as it fits there (and none in a file below the
        // smallest size): only the largest file, the workload's region, must hold a block.
        let set = |a: u64, b: u64| {
            parse_text(&format!(
                "files = [{{ path = \"a\", size = {a} }}, {{ path = \"b\", size = {b} }}]"
            ))
            .unwrap()
        };
        assert_eq!(set(2048, 65536).region_problem(Bytes(16384), "w"), None);
        let (key, message) = set(2048, 8192)
            .region_problem(Bytes(16384), "w")
            .unwrap();
        assert_eq!(key, "files");
        assert!(message.contains("the largest file, b,"), "{message}");
        // Laid out: the small file too, the region the largest.
        let dir = tempfile::tempdir().unwrap();
        let c = parse_text(&format!(
            "files = [{{ path = \"{0}/s\", size = 2048 }}, {{ path = \"{0}/l\", size = 65536 }}]",
            dir.path().display()
        ))
        .unwrap();
        let opts = PrepareOptions {
            min_size_bytes: 16384,
            ..Default::default()
        };
        assert_eq!(c.prepare_region(&opts).unwrap().size_bytes, 65536);
        assert_eq!(std::fs::metadata(dir.path().join("s")).unwrap().len(), 2048);
    }

    #[test]
    fn a_set_stands_instead_of_path_size_and_offset() {
        let e = parse_text("files = [{ path = \"a\", size = 4096 }]\npath = \"b\"").unwrap_err();
        assert_eq!(e.key, "path");
        // One file of a set is verified as a path is; several cannot be.
        let one = parse_text("files = [{ path = \"a\", size = 4096 }]").unwrap();
        assert_eq!(
            one.verify_file(),
            Some(ReadBackFile {
                path: PathBuf::from("a"),
                direct: false
            })
        );
        let two = parse_text("files = [{ path = \"a\", size = 4096 }, { path = \"b\", size = 4096 }]");
        assert_eq!(two.unwrap().verify_file(), None);
        let e = parse_text("files = [{ path = \"a\", size = 0 }]").unwrap_err();
        assert_eq!(e.key, "files");
        let e = parse_text("path = \"a\"\nfile-service = \"sequential\"").unwrap_err();
        assert_eq!(e.key, "file-service");
        let e = parse_text("path = \"a\"\nlayout = \"zero\"").unwrap_err();
        assert!(e.message.contains("zero"), "{}", e.message);
    }
}
