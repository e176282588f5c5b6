//! The `fileops` target: each operation is one call on a file instead of a transfer, as
//! fio's file engines do. On a set of files (`prefix` + `count`, or one `path`), each
//! operation takes the next file in turn and creates it (open with O_CREAT, then close:
//! fio's `filecreate`), stats it (`filestat`) or unlinks it (`filedelete`). On one file
//! (`path`), each operation acts at its offset: ftruncate to the offset (`ftruncate`),
//! fallocate of its range (`falloc`: a read keeps the size, a write may extend it) or a punch
//! hole over its range (`falloc`'s trims).
//!
//! Operations execute in `submit`, one at a time per worker, and count the workload's block
//! as moved, as fio counts each I/O's block. The paths are built when a session opens: the
//! operations themselves neither allocate nor lock.

use std::collections::HashSet;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::file::{Layout, lay_out};
use crate::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS, in_bounds};
use crate::{
    Capabilities, Completions, OptionError, Overlap, PrepareOptions, Region, Session,
    SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    option_error,
};
use storlab_model::units::Bytes;
use storlab_model::{Op, OpError, OpKind, WorkloadKind};

pub const TYPE: TargetType = TargetType {
    name: "fileops",
    summary: "file operations instead of transfers (fio's filecreate, filestat, filedelete, ftruncate, falloc)",
    options: &[
        (
            "operation",
            "what each operation does: \"create\" (open with O_CREAT, then close, the next file of the set), \"stat\" or \"delete\" (unlink) the next file; on one file at the operation's offset: \"truncate\" (ftruncate to the offset: writes), \"allocate\" (fallocate of the range: a read keeps the file's size, a write may extend it) or \"punch-hole\" (writes)",
        ),
        ("path", "the one file"),
        (
            "prefix",
            "instead of path, for create, stat and delete: the set of files PREFIX0 .. PREFIX{count-1}",
        ),
        ("count", "with prefix: how many files (default 1)"),
        (
            "size",
            "bytes of each file (laid out before the run for stat and delete; the region of truncate, allocate and punch-hole)",
        ),
        (
            "layout",
            "how a missing or short file is laid out (stat, delete, truncate, allocate, punch-hole): as the file target's `layout` (default \"write\")",
        ),
        (
            "stat-call",
            "with stat: \"stat\" (default), \"lstat\", or \"statx\" (the path resolved with realpath, then statx of it with STATX_ALL: fio's stat_type=statx, both timed)",
        ),
        ("direct", "open the one file with O_DIRECT (default false)"),
        (
            "remove-after",
            "delete the files this target created after the study (default false)",
        ),
    ],
    parse,
    file_server: None,
    ycsb: None,
};

/// What each operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// open(O_CREAT | O_RDWR, 0600) of the next file of the set, then close.
    Create,
    /// stat(2) of the next file of the set.
    Stat,
    /// unlink(2) of the next file of the set.
    Delete,
    /// ftruncate(2) of the file to the write's offset.
    Truncate,
    /// fallocate(2) of the operation's range: FALLOC_FL_KEEP_SIZE for a read, mode 0 (the
    /// size may grow) for a write.
    Allocate,
    /// fallocate(2) with FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE over the write's range.
    PunchHole,
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Stat => "stat",
            Operation::Delete => "delete",
            Operation::Truncate => "truncate",
            Operation::Allocate => "allocate",
            Operation::PunchHole => "punch-hole",
        }
    }

    /// Each operation takes the next file of a set (its offset unused).
    pub fn on_set(self) -> bool {
        matches!(
            self,
            Operation::Create | Operation::Stat | Operation::Delete
        )
    }

    fn kind(self, stat: StatCall) -> Kind {
        match self {
            Operation::Create => Kind::Set(SetOp::Create),
            Operation::Stat => Kind::Set(SetOp::Stat(stat)),
            Operation::Delete => Kind::Set(SetOp::Delete),
            Operation::Truncate => Kind::One(FileOp::Truncate),
            Operation::Allocate => Kind::One(FileOp::Allocate),
            Operation::PunchHole => Kind::One(FileOp::PunchHole),
        }
    }

    /// The workload operations it takes.
    fn ops(self) -> &'static [OpKind] {
        match self {
            Operation::Create | Operation::Stat | Operation::Delete => {
                &[OpKind::Read, OpKind::Write]
            }
            Operation::Truncate | Operation::PunchHole => &[OpKind::Write, OpKind::Fsync],
            Operation::Allocate => &[OpKind::Read, OpKind::Write, OpKind::Fsync],
        }
    }
}

/// The call a `stat` operation makes (fio's filestat `stat_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatCall {
    #[default]
    Stat,
    Lstat,
    /// realpath(3) of the path, then statx(2) of the result with STATX_ALL, as fio's.
    Statx,
}

impl StatCall {
    pub fn name(self) -> &'static str {
        match self {
            StatCall::Stat => "stat",
            StatCall::Lstat => "lstat",
            StatCall::Statx => "statx",
        }
    }
}

/// An operation on the next file of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Create,
    Stat(StatCall),
    Delete,
}

/// An operation on the one file, at the workload operation's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileOp {
    Truncate,
    Allocate,
    PunchHole,
}

/// Where an operation acts: which session runs it.
enum Kind {
    Set(SetOp),
    One(FileOp),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileOpsConfig {
    pub operation: Operation,
    #[serde(default, skip_serializing_if = "is_empty_path")]
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    pub size: Bytes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat_call: Option<StatCall>,
    #[serde(default)]
    pub direct: bool,
    #[serde(default)]
    pub remove_after: bool,
}

fn is_empty_path(p: &Path) -> bool {
    p.as_os_str().is_empty()
}

fn fail<T>(key: &str, message: String) -> Result<T, OptionError> {
    Err(OptionError {
        key: key.into(),
        message,
    })
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: FileOpsConfig = table.try_into().map_err(option_error)?;
    let op = c.operation.name();
    match (is_empty_path(&c.path), &c.prefix) {
        (true, None) => return fail("path", "give `path` (or `prefix` and `count`)".into()),
        (false, Some(_)) => return fail("prefix", "give either `path` or `prefix`".into()),
        (_, Some(_)) if !c.operation.on_set() => {
            return fail(
                "prefix",
                format!("operation = \"{op}\" acts on one file: give `path`"),
            );
        }
        _ => {}
    }
    if c.count.is_some() && c.prefix.is_none() {
        return fail("count", "`count` needs `prefix`".into());
    }
    if c.count == Some(0) {
        return fail("count", "count must be above 0".into());
    }
    if c.size.0 == 0 {
        return fail("size", "size must be above 0".into());
    }
    if c.operation == Operation::Create && c.layout.is_some() {
        return fail(
            "layout",
            "operation = \"create\" lays nothing out: its operations create the files".into(),
        );
    }
    if c.stat_call.is_some() && c.operation != Operation::Stat {
        return fail(
            "stat-call",
            format!("stat-call is operation = \"stat\"'s, not \"{op}\"'s"),
        );
    }
    if c.direct && c.operation.on_set() {
        return fail(
            "direct",
            format!("operation = \"{op}\" reads and writes no data: direct does not apply"),
        );
    }
    Ok(TargetConfig::Fileops(c))
}

/// Files this process created, so that `remove-after` never deletes a user's file.
static CREATED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

fn created() -> std::sync::MutexGuard<'static, Option<HashSet<PathBuf>>> {
    CREATED.lock().unwrap_or_else(|p| p.into_inner())
}

impl Target for FileOpsConfig {
    const TYPE: TargetType = TYPE;
    type Shared = ();

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[WorkloadKind::Block],
            ops: self.operation.ops(),
            overlap: Overlap::None,
            in_process: false,
            writes_given_buffers: false,
            reads_records_back: false,
            keeps_ledger: false,
        }
    }

    fn region_problem(&self, block: Bytes, workload_name: &str) -> Option<(&'static str, String)> {
        (self.size.0 < block.0).then(|| {
            (
                "size",
                format!(
                    "size {} is smaller than one block of workload `{workload_name}` (block-size {block})",
                    self.size
                ),
            )
        })
    }

    fn paths(&self) -> Vec<PathBuf> {
        match &self.prefix {
            Some(p) => vec![p.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)],
            None => vec![self.path.clone()],
        }
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, ()), TargetError> {
        if self.size.0 < opts.min_size_bytes {
            return Err(TargetError::Invalid(format!(
                "size ({} bytes) is smaller than one block ({} bytes)",
                self.size.0, opts.min_size_bytes
            )));
        }
        let files = self.files();
        // The files share one folder (a set's, or the one file's).
        let folder = files.first().and_then(|f| f.parent());
        if let Some(folder) = folder.filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|e| TargetError::io(folder, "creating the folder", e))?;
        }
        // create lays nothing out: its files are looked at only to remember which it makes.
        if self.operation != Operation::Create || self.remove_after {
            for path in &files {
                self.prepare_file(path, opts)?;
            }
        }
        let region = Region {
            offset_bytes: 0,
            size_bytes: self.size.0,
        };
        Ok((region, ()))
    }

    fn open<U: SessionUser>(
        &self,
        _: &(),
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        params.block_only("fileops")?;
        match self.operation.kind(self.stat_call.unwrap_or_default()) {
            Kind::Set(op) => Ok(user.run(self.set_session(op)?)),
            Kind::One(op) => Ok(user.run(self.file_session(op, params)?)),
        }
    }

    /// `--quick`: one file addresses at most 64 MiB (a set's files keep their size).
    fn make_quick(&mut self) {
        if !self.operation.on_set() {
            self.size = Bytes(self.size.0.min(64 << 20));
        }
    }

    fn finish(&self) {
        if !self.remove_after {
            return;
        }
        let mut created = created();
        for path in self.files() {
            if created.as_mut().is_some_and(|s| s.remove(&path)) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

impl FileOpsConfig {
    /// Every file, in the order the operations take them.
    pub fn files(&self) -> Vec<PathBuf> {
        let Some(prefix) = &self.prefix else {
            return vec![self.path.clone()];
        };
        (0..self.count.unwrap_or(1))
            .map(|i| {
                let mut name = prefix.clone().into_os_string();
                name.push(i.to_string());
                PathBuf::from(name)
            })
            .collect()
    }

    /// One file readied: laid out to `size` unless the operations create it, and remembered
    /// when storlab makes it (for `remove-after`).
    fn prepare_file(&self, path: &Path, opts: &PrepareOptions) -> Result<(), TargetError> {
        let len = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Some(m.len()),
            Ok(_) => {
                return Err(TargetError::Invalid(format!(
                    "{}: not a regular file",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(TargetError::io(path, "reading its metadata", e)),
        };
        if len.is_none() && self.remove_after {
            created()
                .get_or_insert_with(HashSet::new)
                .insert(path.to_path_buf());
        }
        let from = len.unwrap_or(0);
        if self.operation != Operation::Create && from < self.size.0 {
            let layout = self.layout.unwrap_or_default();
            lay_out(path, from, self.size.0, layout, opts.verbose)?;
        }
        Ok(())
    }

    /// A session over the set: every path as a C string, built once.
    fn set_session(&self, op: SetOp) -> Result<SetSession, TargetError> {
        let paths = self
            .files()
            .into_iter()
            .map(|p| {
                CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                    TargetError::Invalid(format!("{}: a path with a NUL byte", p.display()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SetSession {
            op,
            paths,
            next: 0,
            resolved: vec![0; libc::PATH_MAX as usize].into_boxed_slice(),
        })
    }

    /// A session on the one file, opened for reading and writing.
    fn file_session(&self, op: FileOp, params: &SessionParams) -> Result<FileSession, TargetError> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if self.direct {
            o.custom_flags(libc::O_DIRECT);
        }
        let file = o
            .open(&self.path)
            .map_err(|e| TargetError::io(&self.path, "opening", e))?;
        let r = params.region;
        Ok(FileSession {
            op,
            file,
            bounds: (r.offset_bytes, r.offset_bytes + r.size_bytes),
        })
    }
}

impl SetOp {
    fn name(self) -> &'static str {
        match self {
            SetOp::Create => "create",
            SetOp::Stat(call) => call.name(),
            SetOp::Delete => "delete",
        }
    }
}

impl FileOp {
    fn name(self) -> &'static str {
        match self {
            FileOp::Truncate => "truncate",
            FileOp::Allocate => "allocate",
            FileOp::PunchHole => "punch-hole",
        }
    }
}

/// fio's statx: `path` resolved by realpath into `resolved` (PATH_MAX bytes), then statx of
/// the result with STATX_ALL.
#[inline]
fn statx(path: &CString, resolved: &mut [libc::c_char]) -> libc::c_int {
    debug_assert!(resolved.len() >= libc::PATH_MAX as usize);
    // SAFETY: a NUL-terminated path and a buffer of PATH_MAX bytes, as realpath needs.
    if unsafe { libc::realpath(path.as_ptr(), resolved.as_mut_ptr()) }.is_null() {
        return -1;
    }
    let mut st = std::mem::MaybeUninit::<libc::statx>::uninit();
    // SAFETY: the NUL-terminated absolute path realpath wrote, and room for one statx.
    unsafe {
        libc::statx(
            libc::AT_FDCWD,
            resolved.as_ptr(),
            0,
            libc::STATX_ALL,
            st.as_mut_ptr(),
        )
    }
}

/// The calling thread's errno as an operation's error.
#[inline]
fn last_error() -> OpError {
    OpError::errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

/// The result of a call returning 0 (or a descriptor) on success, -1 with errno.
#[inline]
fn checked(r: libc::c_int, bytes: u32) -> Result<u32, OpError> {
    if r < 0 { Err(last_error()) } else { Ok(bytes) }
}

/// Each operation on the next file of a set.
pub struct SetSession {
    op: SetOp,
    paths: Vec<CString>,
    next: usize,
    /// Room for a path resolved by realpath (statx), PATH_MAX bytes: no allocation per call.
    resolved: Box<[libc::c_char]>,
}

impl SetSession {
    /// The operation on the file `path`.
    #[inline]
    fn call(&mut self, i: usize) -> libc::c_int {
        let path = &self.paths[i];
        match self.op {
            SetOp::Create => {
                // SAFETY: a NUL-terminated path; the descriptor is ours to close.
                let fd = unsafe {
                    libc::open(
                        path.as_ptr(),
                        libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC,
                        0o600 as libc::c_uint,
                    )
                };
                if fd >= 0 {
                    // SAFETY: closes the descriptor just opened.
                    unsafe { libc::close(fd) };
                }
                fd
            }
            SetOp::Stat(StatCall::Stat) => {
                let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
                // SAFETY: a NUL-terminated path and room for one stat.
                unsafe { libc::stat(path.as_ptr(), st.as_mut_ptr()) }
            }
            SetOp::Stat(StatCall::Lstat) => {
                let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
                // SAFETY: a NUL-terminated path and room for one stat.
                unsafe { libc::lstat(path.as_ptr(), st.as_mut_ptr()) }
            }
            SetOp::Stat(StatCall::Statx) => statx(path, &mut self.resolved),
            // SAFETY: a NUL-terminated path.
            SetOp::Delete => unsafe { libc::unlink(path.as_ptr()) },
        }
    }
}

impl Session for SetSession {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let bytes = match op {
            Op::Read { len, .. } | Op::Write { len, .. } => len as u32,
            _ => return Err(NOT_BLOCK_OP),
        };
        let i = self.next;
        self.next = if i + 1 == self.paths.len() { 0 } else { i + 1 };
        let result = checked(self.call(i), bytes);
        Ok(Submitted::Done {
            result,
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![
            ("fileops.operation", self.op.name().into()),
            ("fileops.files", self.paths.len().to_string()),
        ]
    }
}

/// Each operation on the one file, at its offset.
pub struct FileSession {
    op: FileOp,
    file: File,
    /// First byte and end of the region.
    bounds: (u64, u64),
}

impl FileSession {
    /// fallocate(2) of `len` bytes at `offset` with `mode`.
    #[inline]
    fn fallocate(&self, mode: libc::c_int, offset: u64, len: u64) -> libc::c_int {
        // SAFETY: fallocate on a descriptor this session owns.
        unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                mode,
                offset as libc::off_t,
                len as libc::off_t,
            )
        }
    }

    /// The operation for `op`, or None when this operation takes no such workload operation
    /// (the study's checks refuse it before a run).
    #[inline]
    fn call(&self, op: Op) -> Option<libc::c_int> {
        let fd = self.file.as_raw_fd();
        let keep = libc::FALLOC_FL_KEEP_SIZE;
        Some(match (self.op, op) {
            // SAFETY: fsync on a descriptor this session owns.
            (_, Op::Fsync) => unsafe { libc::fsync(fd) },
            // SAFETY: ftruncate on a descriptor this session owns.
            (FileOp::Truncate, Op::Write { offset, .. }) => unsafe {
                libc::ftruncate(fd, offset as libc::off_t)
            },
            (FileOp::Allocate, Op::Read { offset, len }) => self.fallocate(keep, offset, len),
            (FileOp::Allocate, Op::Write { offset, len }) => self.fallocate(0, offset, len),
            (FileOp::PunchHole, Op::Write { offset, len }) => {
                self.fallocate(libc::FALLOC_FL_PUNCH_HOLE | keep, offset, len)
            }
            _ => return None,
        })
    }
}

impl Session for FileSession {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let bytes = match op {
            Op::Read { offset, len } | Op::Write { offset, len } => {
                if !in_bounds(self.bounds, offset, len as u32) {
                    return Err(OUT_OF_BOUNDS);
                }
                len as u32
            }
            _ => 0,
        };
        let r = self.call(op).ok_or(NOT_BLOCK_OP)?;
        Ok(Submitted::Done {
            result: checked(r, bytes),
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![("fileops.operation", self.op.name().into())]
    }
}

#[cfg(test)]
mod tests;
