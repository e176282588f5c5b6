//! The `file` target: a regular file or a block device, driven through io_uring (with O_DIRECT
//! one submission per operation, registered file and buffers: see [`uring`]) or psync (pread/pwrite, one I/O
//! at a time per worker), with O_DIRECT or buffered I/O.
//!
//! Regular files are created and laid out with incompressible data before a run, so reads never
//! hit holes. Block devices pass the [`guard`](crate::targets::guard) before any write. Every
//! session checks each operation against the region it was given, so storlab never writes
//! outside it.

mod buf;
mod uring;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::record::{ErrorKind, OpError, OpKind};
use crate::targets::{
    Capabilities, Completions, Op, OptionError, Overlap, PrepareOptions, Region,
    Session, SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    guard, option_error,
};
use crate::units::{Bytes, Dur};
use crate::verify::Stamper;
use crate::verify::stamper::Prepared as Stamped;
use crate::workload::Workload;
use crate::targets::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS, in_bounds};
use buf::AlignedBuf;
use uring::UringOptions;
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
            "size",
            "bytes to address; a regular file is created and laid out to offset + size",
        ),
        ("offset", "first byte addressed (default 0)"),
        (
            "remove-after",
            "delete the file after the study if storlab created it (default false)",
        ),
    ],
    parse,
    file_server: None,
    ycsb_names: &[],
    ycsb_classes: &[],
    ycsb_batch: None,
    ycsb_options: None,
};

/// How a session issues I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    #[default]
    IoUring,
    Psync,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    pub path: PathBuf,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub direct: bool,
    pub size: Option<Bytes>,
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
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: FileConfig = table.try_into().map_err(option_error)?;
    if c.path.as_os_str().is_empty() {
        return Err(OptionError {
            key: "path".into(),
            message: "path must not be empty".into(),
        });
    }
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
    if c.engine == Engine::Psync {
        for (key, set) in [
            ("sqthread-poll", c.sqthread_poll),
            ("sqthread-idle", c.sqthread_idle.is_some()),
            ("hipri", c.hipri),
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
            workloads: &[crate::model::WorkloadKind::Block],
            ops: &[OpKind::Read, OpKind::Write, OpKind::Fsync],
            overlap: match self.engine {
                Engine::IoUring => Overlap::Concurrent {
                    max_queue_depth: 4096,
                },
                Engine::Psync => Overlap::None,
            },
            in_process: false,
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
        vec![self.path.clone()]
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
        if self.size.is_none_or(|s| s.0 > cap) && !self.path.starts_with("/dev/") {
            self.size = Some(Bytes(cap));
        }
    }

    fn finish(&self) {
        self.remove_if_created();
    }

    fn verify_file(&self) -> Option<(PathBuf, bool)> {
        Some((self.path.clone(), self.direct))
    }
}

impl FileConfig {
    fn prepare_region(&self, opts: &PrepareOptions) -> Result<Region, TargetError> {
        let path = &self.path;
        let meta = std::fs::metadata(path);
        let region = match meta {
            Ok(m) if m.file_type().is_block_device() => {
                if opts.writes {
                    guard::check_writable_device(path, &opts.allow_destroy)?;
                }
                let dev_size = block_device_size(path)?;
                let size = match self.size {
                    Some(s) => s.0,
                    None => dev_size.saturating_sub(self.offset.0),
                };
                if self.offset.0 + size > dev_size {
                    return Err(TargetError::Invalid(format!(
                        "{}: offset + size ({} bytes) is beyond the device's {} bytes",
                        path.display(),
                        self.offset.0 + size,
                        dev_size
                    )));
                }
                Region {
                    offset_bytes: self.offset.0,
                    size_bytes: size,
                }
            }
            Ok(m) if m.is_file() => {
                let size = match self.size {
                    Some(s) => s.0,
                    None => m.len().saturating_sub(self.offset.0),
                };
                let end = self.offset.0 + size;
                if m.len() < end {
                    lay_out(path, m.len(), end, opts.verbose)?;
                }
                Region {
                    offset_bytes: self.offset.0,
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
                let Some(size) = self.size else {
                    return Err(TargetError::Invalid(format!(
                        "{} does not exist: give `size` so that storlab can create it",
                        path.display()
                    )));
                };
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| TargetError::io(parent, "creating the folder", e))?;
                }
                lay_out(path, 0, self.offset.0 + size.0, opts.verbose)?;
                CREATED
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert_with(HashSet::new)
                    .insert(path.clone());
                Region {
                    offset_bytes: self.offset.0,
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
            self.open_file(true).map_err(|e| match e {
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
            per_op_submit: self.direct,
        }
    }

    fn open_file(&self, writes: bool) -> Result<File, TargetError> {
        let mut o = OpenOptions::new();
        o.read(true).write(writes);
        if self.direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(&self.path)
            .map_err(|e| TargetError::io(&self.path, "opening", e))
    }

    fn open_session<U: SessionUser>(
        &self,
        p: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let file = self.open_file(p.writes)?;
        let slots = match self.engine {
            Engine::IoUring => p.queue_depth as usize,
            Engine::Psync => 1,
        };
        let buf = AlignedBuf::new(slots, p.block_bytes as usize, p)?;
        let verify = p.verify.as_ref().map(|v| Stamper::new(v, slots));
        let bounds = (
            p.region.offset_bytes,
            p.region.offset_bytes + p.region.size_bytes,
        );
        match self.engine {
            Engine::Psync => Ok(user.run(PsyncSession {
                file,
                buf,
                bounds,
                generation: 0,
                stamp: p.random_data,
                direct: self.direct,
                verify,
            })),
            Engine::IoUring => {
                let s = UringSession::new(
                    file,
                    buf,
                    bounds,
                    p.queue_depth,
                    p.random_data,
                    verify,
                    self.uring_options(),
                )
                .map_err(|e| TargetError::Invalid(format!("{}: {e}", self.path.display())))?;
                Ok(user.run(s))
            }
        }
    }

    fn remove_if_created(&self) {
        if !self.remove_after {
            return;
        }
        let created = CREATED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .is_some_and(|s| s.remove(&self.path));
        if created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn block_device_size(path: &Path) -> Result<u64, TargetError> {
    let f = File::open(path).map_err(|e| TargetError::io(path, "opening", e))?;
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64 into `size`, which we own.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r != 0 {
        return Err(TargetError::io(
            path,
            "reading the device size",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(size)
}

/// Refuses `hipri` unless the device under `path` has poll queues: on others polled I/O
/// fails (EOPNOTSUPP) or never completes.
fn check_poll_queues(path: &Path) -> Result<(), TargetError> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::metadata(path).map_err(|e| TargetError::io(path, "reading its metadata", e))?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    // A partition's queue is its disk's.
    let state = [sys.join("queue/io_poll"), sys.join("../queue/io_poll")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok());
    match state.as_deref().map(str::trim) {
        Some("1") => Ok(()),
        Some(v) => Err(TargetError::Invalid(format!(
            "{}: hipri = true needs a device with poll queues, and device {major}:{minor} has none (queue/io_poll = {v}); remove hipri",
            path.display()
        ))),
        None => Err(TargetError::Invalid(format!(
            "{}: hipri = true needs a device with poll queues, and device {major}:{minor} has no block queue to poll (not a disk, or a stacked device); remove hipri",
            path.display()
        ))),
    }
}

/// Writes incompressible data from `from` to `to` so that later reads see real blocks.
fn lay_out(path: &Path, from: u64, to: u64, verbose: bool) -> Result<(), TargetError> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .map_err(|e| TargetError::io(path, "creating", e))?;
    let chunk = 1usize << 20;
    let mut buf = vec![0u8; chunk];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(from ^ 0x5107_1ab0);
    rng.fill_bytes(&mut buf);
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(from))
        .map_err(|e| TargetError::io(path, "seeking", e))?;
    let total = to - from;
    if verbose && total >= 256 << 20 {
        eprintln!("laying out {} ({} MiB)...", path.display(), total >> 20);
    }
    let mut pos = from;
    while pos < to {
        let n = ((to - pos) as usize).min(chunk);
        buf[..8].copy_from_slice(&pos.to_le_bytes());
        f.write_all(&buf[..n])
            .map_err(|e| TargetError::io(path, "laying out", e))?;
        pos += n as u64;
    }
    f.sync_all()
        .map_err(|e| TargetError::io(path, "syncing the layout", e))?;
    Ok(())
}

/// pread/pwrite, executed in `submit`.
pub struct PsyncSession {
    file: File,
    buf: AlignedBuf,
    bounds: (u64, u64),
    generation: u64,
    stamp: bool,
    direct: bool,
    /// Verified writes (`verify = true`).
    verify: Option<Stamper>,
}

impl Session for PsyncSession {
    fn used(&self) -> Vec<(&'static str, String)> {
        vec![
            ("file.engine", "psync".into()),
            (
                "file.o-direct",
                if self.direct { "yes" } else { "no" }.into(),
            ),
        ]
    }

    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let fd = self.file.as_raw_fd();
        let (r, want) = match op {
            Op::Read { offset, len } => {
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                // SAFETY: the buffer holds at least `len` bytes (len <= block size).
                let r = unsafe {
                    libc::pread(
                        fd,
                        self.buf.ptr as *mut libc::c_void,
                        len as usize,
                        offset as i64,
                    )
                };
                (r, len)
            }
            Op::Write { offset, len } => {
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                if let Some(v) = &mut self.verify {
                    // One write at a time: its block is never busy. An offset outside the
                    // table cannot pass the bounds check above.
                    if v.prepare(0, self.buf.slot_mut(0, len), offset) != Stamped::Ready {
                        return Err(OUT_OF_BOUNDS);
                    }
                } else if self.buf.fill_for_write(0, len, offset) {
                    // fio's contents.
                } else if self.stamp {
                    self.generation += 1;
                    self.buf.stamp(0, offset, self.generation);
                }
                // SAFETY: as above.
                let r = unsafe {
                    libc::pwrite(
                        fd,
                        self.buf.ptr as *const libc::c_void,
                        len as usize,
                        offset as i64,
                    )
                };
                (r, len)
            }
            Op::Fsync => {
                if let Some(v) = &mut self.verify {
                    v.fsync_submitted(0);
                }
                // SAFETY: fsync on a descriptor we own.
                (unsafe { libc::fsync(fd) } as isize, 0)
            }
            // Key-value operations are refused at plan time (capabilities).
            _ => return Err(NOT_BLOCK_OP),
        };
        let result = if r < 0 {
            Err(OpError::errno(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        } else if op.kind() != OpKind::Fsync && r as u32 != want {
            Err(OpError {
                kind: ErrorKind::ShortTransfer,
                code: r as i32,
            })
        } else {
            Ok(want)
        };
        if let Some(v) = &mut self.verify {
            v.completed(0, result.is_ok());
        }
        Ok(Submitted::Done {
            result,
            found: true,
        })
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
