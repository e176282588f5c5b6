//! A FUSE filesystem for the verify tests (the `fuser` crate, mounted in-process with
//! mount(2), no libfuse or fusermount needed as root): one memory-backed file, `data`, that
//! acknowledges every write and then, for the writes it was told to fault, drops it (lost),
//! stores only its first half (torn) or stores it at another offset (misplaced). It keeps a
//! durable copy updated by fsync, and `crash` puts the file back to it: writes acknowledged
//! but never synced are lost, as LazyFS does. The file is opened with FOPEN_DIRECT_IO, so
//! every read and write reaches the filesystem (no page cache hides what it stored). Reads can
//! be made slow (`read_delay`): the filesystem answers one request at a time, so a queue of
//! reads waits that long per read.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, LockOwner,
    OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    WriteFlags,
};

/// What to do to one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Acknowledge, store nothing.
    Drop,
    /// Acknowledge, store the first half.
    Tear,
    /// Acknowledge, store it at this offset instead.
    Misdirect(u64),
    /// Store nothing and never answer: the write stays in flight (its reply is kept in
    /// `held` until dropped, which fails it).
    Hold,
}

#[derive(Default)]
pub struct State {
    pub current: Vec<u8>,
    pub durable: Vec<u8>,
    /// (offset, n): fault the n-th write (from 1) to that offset.
    pub faults: HashMap<(u64, u32), Fault>,
    seen: HashMap<u64, u32>,
    /// Faults applied: (offset written, fault).
    pub applied: Vec<(u64, Fault)>,
    pub writes: u64,
    pub fsyncs: u64,
    /// How long each read takes.
    pub read_delay: Duration,
    pub reads: u64,
    /// Replies of the writes held in flight.
    pub held: Vec<ReplyWrite>,
}

pub struct FaultyFile {
    pub state: Arc<Mutex<State>>,
}

const FILE: INodeNo = INodeNo(2);
const TTL: Duration = Duration::from_secs(0);

fn attr(ino: INodeNo, size: u64) -> FileAttr {
    FileAttr {
        ino,
        size,
        blocks: size.div_ceil(512),
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: if ino == INodeNo::ROOT {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if ino == INodeNo::ROOT { 0o755 } else { 0o644 },
        nlink: if ino == INodeNo::ROOT { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

impl FaultyFile {
    fn size(&self) -> u64 {
        self.state.lock().unwrap().current.len() as u64
    }
}

impl Filesystem for FaultyFile {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == "data" {
            reply.entry(&TTL, &attr(FILE, self.size()), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino {
            INodeNo::ROOT => reply.attr(&TTL, &attr(INodeNo::ROOT, 0)),
            FILE => reply.attr(&TTL, &attr(FILE, self.size())),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let delay = {
            let mut s = self.state.lock().unwrap();
            s.reads += 1;
            s.read_delay
        };
        std::thread::sleep(delay);
        let s = self.state.lock().unwrap();
        let start = (offset as usize).min(s.current.len());
        let end = (start + size as usize).min(s.current.len());
        reply.data(&s.current[start..end]);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut s = self.state.lock().unwrap();
        if offset as usize + data.len() > s.current.len() {
            reply.error(Errno::ENOSPC);
            return;
        }
        s.writes += 1;
        let n = {
            let c = s.seen.entry(offset).or_insert(0);
            *c += 1;
            *c
        };
        let (at, stored) = match s.faults.get(&(offset, n)).copied() {
            None => (offset, data),
            Some(Fault::Hold) => {
                s.applied.push((offset, Fault::Hold));
                s.held.push(reply);
                return;
            }
            Some(f) => {
                s.applied.push((offset, f));
                match f {
                    Fault::Drop | Fault::Hold => (offset, &data[..0]),
                    Fault::Tear => (offset, &data[..data.len() / 2]),
                    Fault::Misdirect(to) => (to, data),
                }
            }
        };
        let at = at as usize;
        s.current[at..at + stored.len()].copy_from_slice(stored);
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lo: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _ds: bool, reply: ReplyEmpty) {
        let mut s = self.state.lock().unwrap();
        s.fsyncs += 1;
        let current = s.current.clone();
        s.durable = current;
        reply.ok();
    }
}

/// A mounted [`FaultyFile`], unmounted when dropped.
pub struct Mounted {
    pub state: Arc<Mutex<State>>,
    /// The mount point.
    pub dir: std::path::PathBuf,
    _temp: Option<tempfile::TempDir>,
    session: Option<fuser::BackgroundSession>,
}

impl Mounted {
    /// The file's path.
    pub fn file(&self) -> std::path::PathBuf {
        self.dir.join("data")
    }

    /// A simulated crash: the file goes back to what was last synced. Returns the offsets of
    /// the `block`-sized blocks that changed.
    pub fn crash(&self, block: usize) -> Vec<u64> {
        let mut s = self.state.lock().unwrap();
        let changed = (0..s.current.len() / block)
            .filter(|&i| {
                s.current[i * block..(i + 1) * block] != s.durable[i * block..(i + 1) * block]
            })
            .map(|i| (i * block) as u64)
            .collect();
        let durable = s.durable.clone();
        s.current = durable;
        changed
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}

/// Mounts a faulty file of `size` zero bytes with `faults` in a temporary directory, or says
/// why it cannot.
pub fn mount(size: usize, faults: HashMap<(u64, u32), Fault>) -> Result<Mounted, String> {
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = temp.path().to_path_buf();
    mount_at(&dir, Some(temp), size, faults, Duration::ZERO)
}

/// Mounts a faulty file on the existing directory `dir`, each read taking `read_delay`.
pub fn mount_at(
    dir: &Path,
    temp: Option<tempfile::TempDir>,
    size: usize,
    faults: HashMap<(u64, u32), Fault>,
    read_delay: Duration,
) -> Result<Mounted, String> {
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse does not exist".into());
    }
    let state = Arc::new(Mutex::new(State {
        current: vec![0; size],
        durable: vec![0; size],
        faults,
        read_delay,
        ..State::default()
    }));
    let fs = FaultyFile {
        state: Arc::clone(&state),
    };
    let mut config = Config::default();
    config
        .mount_options
        .push(fuser::MountOption::FSName("storlab-faulty".into()));
    let session = fuser::spawn_mount(fs, dir, &config)
        .map_err(|e| format!("mounting FUSE at {}: {e}", dir.display()))?;
    let m = Mounted {
        state,
        dir: dir.to_path_buf(),
        _temp: temp,
        session: Some(session),
    };
    // Wait until the mount answers.
    for _ in 0..200 {
        if std::fs::metadata(m.file()).is_ok() {
            return Ok(m);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the FUSE mount did not answer within 2 s".into())
}
