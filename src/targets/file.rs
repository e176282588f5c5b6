//! The `file` target: a regular file or a block device, driven through io_uring (batched
//! submission, registered file and buffers, completions reaped in batches) or psync
//! (pread/pwrite, one I/O at a time per worker), with O_DIRECT or buffered I/O.
//!
//! Regular files are created and laid out with incompressible data before a run, so reads never
//! hit holes. Block devices pass the [`guard`](crate::targets::guard) before any write. Every
//! session checks each operation against the region it was given, so storlab never writes
//! outside it.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use io_uring::{IoUring, opcode, types};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::record::{ErrorKind, OpError, OpKind};
use crate::targets::{
    Capabilities, Completion, Completions, Op, OptionError, Overlap, PrepareOptions, Region,
    Session, SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    guard, option_error,
};
use crate::workload::Workload;
use crate::units::Bytes;

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
            "\"io-uring\" (default: batched, registered buffers) or \"psync\" (pread/pwrite, queue depth 1)",
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
    ycsb_names: &[],
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
    if c.direct && c.offset.0 % 512 != 0 {
        return Err(OptionError {
            key: "offset".into(),
            message: "with direct = true the offset must be a multiple of 512 bytes".into(),
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

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &["block"],
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
        if self.direct && (b.block_size.0 % 512 != 0 || b.alignment_bytes() % 512 != 0) {
            return Some((
                "block-size",
                format!(
                    "with direct = true, block-size and alignment must be multiples of 512 bytes (got {} and {})",
                    b.block_size.0,
                    b.alignment_bytes()
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
        Ok(region)
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
            })),
            Engine::IoUring => {
                let s = UringSession::new(file, buf, bounds, p.queue_depth, p.random_data)
                    .map_err(|e| TargetError::io(&self.path, "setting up io_uring", e))?;
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

/// Page-aligned I/O buffers, one block per slot.
struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    block: usize,
}

// SAFETY: the buffer is owned by one session, which lives on one thread at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(slots: usize, block: usize, p: &SessionParams) -> Result<AlignedBuf, TargetError> {
        let size = (slots * block).max(BUF_ALIGN);
        let layout = std::alloc::Layout::from_size_align(size, BUF_ALIGN)
            .map_err(|e| TargetError::Invalid(format!("buffer layout: {e}")))?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(TargetError::Invalid(format!(
                "cannot allocate {size} bytes of buffers"
            )));
        }
        let mut b = AlignedBuf { ptr, layout, block };
        if p.random_data {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(p.seed ^ ((p.worker as u64) << 32));
            rng.fill_bytes(b.all());
        } else {
            b.all().fill(p.pattern);
        }
        Ok(b)
    }

    fn all(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    #[inline]
    fn slot_ptr(&self, slot: u32) -> *mut u8 {
        // SAFETY: callers pass slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot as usize * self.block) }
    }

    /// Marks a block about to be written with its offset and a generation, so that no two
    /// written blocks are identical (defeats dedup) and later verification can find them.
    #[inline]
    fn stamp(&mut self, slot: u32, offset: u64, generation: u64) {
        let p = self.slot_ptr(slot);
        // SAFETY: every block is at least 512 bytes (checked at plan time) and owned by us.
        unsafe {
            std::ptr::write_unaligned(p as *mut u64, offset);
            std::ptr::write_unaligned(p.add(8) as *mut u64, generation);
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[inline]
fn in_bounds(bounds: (u64, u64), offset: u64, len: u32) -> bool {
    offset >= bounds.0 && offset + len as u64 <= bounds.1
}

/// A key-value operation sent to a block target (the plan refuses such studies).
const NOT_BLOCK_OP: OpError = OpError {
    kind: ErrorKind::Invalid,
    code: libc::EINVAL,
};

const OUT_OF_BOUNDS: OpError = OpError {
    kind: ErrorKind::Invalid,
    code: libc::ERANGE,
};

/// pread/pwrite, executed in `submit`.
pub struct PsyncSession {
    file: File,
    buf: AlignedBuf,
    bounds: (u64, u64),
    generation: u64,
    stamp: bool,
}

impl Session for PsyncSession {
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
                if self.stamp {
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
            // SAFETY: fsync on a descriptor we own.
            Op::Fsync => (unsafe { libc::fsync(fd) } as isize, 0),
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

/// io_uring with a registered file and registered buffers.
pub struct UringSession {
    ring: IoUring,
    buf: AlignedBuf,
    bounds: (u64, u64),
    /// Bytes expected by the operation in each slot (0 for fsync).
    want: Vec<u32>,
    fixed_buffers: bool,
    generation: u64,
    stamp: bool,
    _file: File,
}

impl UringSession {
    fn new(
        file: File,
        buf: AlignedBuf,
        bounds: (u64, u64),
        qd: u32,
        stamp: bool,
    ) -> std::io::Result<UringSession> {
        let entries = qd.next_power_of_two().max(8);
        // Cooperative task running: completions are posted without interrupting our work.
        // (Deferred task running measured slower here for O_DIRECT on a virtio disk.)
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        ring.submitter().register_files(&[file.as_raw_fd()])?;
        let iovecs: Vec<libc::iovec> = (0..qd)
            .map(|s| libc::iovec {
                iov_base: buf.slot_ptr(s) as *mut libc::c_void,
                iov_len: buf.block,
            })
            .collect();
        // SAFETY: the buffers live as long as the ring (both owned by this session, and the
        // ring is dropped first: field order).
        let fixed_buffers = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(UringSession {
            ring,
            buf,
            bounds,
            want: vec![0; qd as usize],
            fixed_buffers,
            generation: 0,
            stamp,
            _file: file,
        })
    }
}

impl Session for UringSession {
    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let fd = types::Fixed(0);
        let ptr = self.buf.slot_ptr(slot);
        let entry = match op {
            Op::Read { offset, len } => {
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                self.want[slot as usize] = len;
                if self.fixed_buffers {
                    opcode::ReadFixed::new(fd, ptr, len, slot as u16)
                        .offset(offset)
                        .build()
                } else {
                    opcode::Read::new(fd, ptr, len).offset(offset).build()
                }
            }
            Op::Write { offset, len } => {
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                if self.stamp {
                    self.generation += 1;
                    self.buf.stamp(slot, offset, self.generation);
                }
                self.want[slot as usize] = len;
                if self.fixed_buffers {
                    opcode::WriteFixed::new(fd, ptr, len, slot as u16)
                        .offset(offset)
                        .build()
                } else {
                    opcode::Write::new(fd, ptr, len).offset(offset).build()
                }
            }
            Op::Fsync => {
                self.want[slot as usize] = 0;
                opcode::Fsync::new(fd).build()
            }
            _ => return Err(NOT_BLOCK_OP),
        };
        // SAFETY: the buffer behind `ptr` stays valid until the completion is reaped.
        unsafe { self.ring.submission().push(&entry.user_data(slot as u64)) }
            .map(|()| Submitted::Queued)
            .map_err(|_| OpError {
                kind: ErrorKind::Other,
                code: libc::EBUSY,
            })
    }

    #[inline]
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError> {
        loop {
            match self.ring.submit_and_wait(min as usize) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(OpError::errno(e.raw_os_error().unwrap_or(0))),
            }
        }
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as u32;
            let r = cqe.result();
            let want = self.want[slot as usize];
            let result = if r < 0 {
                Err(OpError::errno(-r))
            } else if r as u32 != want {
                Err(OpError {
                    kind: ErrorKind::ShortTransfer,
                    code: r,
                })
            } else {
                Ok(want)
            };
            out.push(Completion {
                slot,
                result,
                found: true,
            });
        }
        Ok(())
    }
}
