//! `storlab volatile-fs`: a FUSE filesystem that serves block devices (or files) as the files
//! of one mount and holds every write in its own memory until an fsync of that file writes it
//! through and syncs the backing. Run inside a node (its cgroup, its namespaces), it is the
//! node's volatile write cache: when the node loses power (every process of it killed), what
//! it acknowledged and did not sync is gone, as on a machine that loses power; the host's
//! shared page cache, which outlives the node, no longer keeps it.
//!
//! A loop device over one of its files is a member device as the node sees it. The kernel's
//! flush of that device (a filesystem's commit, an fsync) reaches this filesystem as an fsync
//! of the file. Files are opened with FOPEN_DIRECT_IO: every read and write comes here, none
//! stays in the kernel's page cache of the mount.
//!
//! A clean stop (SIGTERM or SIGINT, or an unmount) writes every held page through and syncs
//! before it ends, as a clean shutdown would. SIGKILL loses what is held: the power loss.

mod member;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, LockOwner,
    OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite,
    Request, WriteFlags,
};

pub use member::{Member, PAGE_BYTES};

/// What `volatile-fs` serves, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The mount point (an existing directory).
    pub mount: PathBuf,
    /// NAME=PATH: each PATH served as the file NAME of the mount.
    pub members: Vec<MemberSpec>,
    /// Above this many held bytes, all together, a write writes its file's held pages
    /// through early (without a sync).
    pub dirty_limit_bytes: u64,
    /// Threads answering the kernel's requests.
    pub threads: usize,
}

/// One NAME=PATH argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    pub name: String,
    pub path: PathBuf,
}

/// What went wrong, said with the argument or path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum VolatileFsError {
    #[error("`{0}`: a member is NAME=PATH, e.g. m0=/dev/loop3")]
    Spec(String),
    #[error("`{0}`: a member's name is letters, digits, `.`, `_` and `-` (not `.` or `..`)")]
    Name(String),
    #[error("member `{0}` is named twice")]
    Twice(String),
    #[error("no member to serve: give NAME=PATH arguments")]
    NoMember,
    #[error("member `{name}` ({path}): {source}")]
    Open {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("mounting at {mount}: {source}")]
    Mount {
        mount: PathBuf,
        source: std::io::Error,
    },
    #[error("waiting for SIGTERM/SIGINT: {0}")]
    Signals(std::io::Error),
    #[error("writing member `{name}` through: {source} (its held pages are kept, not dropped)")]
    WriteThrough {
        name: String,
        source: std::io::Error,
    },
    #[error("serving at {mount}: {source}")]
    Serve {
        mount: PathBuf,
        source: std::io::Error,
    },
}

impl std::str::FromStr for MemberSpec {
    type Err = VolatileFsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, path) = s
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| VolatileFsError::Spec(s.to_string()))?;
        let ok = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !ok || name == "." || name == ".." {
            return Err(VolatileFsError::Name(name.to_string()));
        }
        Ok(MemberSpec {
            name: name.to_string(),
            path: PathBuf::from(path),
        })
    }
}

/// Counts over the whole run, printed when it ends.
#[derive(Default)]
pub struct Counts {
    pub writes: AtomicU64,
    pub written_bytes: AtomicU64,
    pub fsyncs: AtomicU64,
    pub synced_bytes: AtomicU64,
    pub early_bytes: AtomicU64,
}

/// The members and what they hold between them.
pub struct Cache {
    pub members: Vec<Member>,
    held_bytes: AtomicU64,
    dirty_limit_bytes: u64,
    pub counts: Counts,
}

impl Cache {
    /// Opens every member.
    pub fn open(specs: &[MemberSpec], dirty_limit_bytes: u64) -> Result<Cache, VolatileFsError> {
        if specs.is_empty() {
            return Err(VolatileFsError::NoMember);
        }
        let mut members: Vec<Member> = Vec::with_capacity(specs.len());
        for s in specs {
            if members.iter().any(|m| m.name == s.name) {
                return Err(VolatileFsError::Twice(s.name.clone()));
            }
            let m = Member::open(&s.name, &s.path).map_err(|source| VolatileFsError::Open {
                name: s.name.clone(),
                path: s.path.clone(),
                source,
            })?;
            members.push(m);
        }
        Ok(Cache {
            members,
            held_bytes: AtomicU64::new(0),
            dirty_limit_bytes,
            counts: Counts::default(),
        })
    }

    /// Holds a write to member `i`; past the limit, writes that member through early.
    pub fn write(&self, i: usize, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let m = &self.members[i];
        let grown = m.write(offset, data)?;
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        let len = data.len() as u64;
        self.counts.written_bytes.fetch_add(len, Ordering::Relaxed);
        let held = self.held_bytes.fetch_add(grown, Ordering::Relaxed) + grown;
        if held > self.dirty_limit_bytes {
            let w = self.through(i, false)?;
            self.counts.early_bytes.fetch_add(w, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Member `i`'s fsync: its held pages written through, the backing synced.
    pub fn fsync(&self, i: usize) -> std::io::Result<()> {
        let w = self.through(i, true)?;
        self.counts.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.counts.synced_bytes.fetch_add(w, Ordering::Relaxed);
        Ok(())
    }

    fn through(&self, i: usize, sync: bool) -> std::io::Result<u64> {
        let w = self.members[i].write_through(sync)?;
        self.held_bytes.fetch_sub(w.bytes, Ordering::Relaxed);
        Ok(w.bytes)
    }

    /// The clean stop: every member written through and synced.
    pub fn write_all_through(&self) -> Result<u64, VolatileFsError> {
        let mut total = 0;
        for (i, m) in self.members.iter().enumerate() {
            total += self
                .through(i, true)
                .map_err(|source| VolatileFsError::WriteThrough {
                    name: m.name.clone(),
                    source,
                })?;
        }
        Ok(total)
    }

    /// Bytes held now, all members together.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes.load(Ordering::Relaxed)
    }

    /// One line of what the run did.
    pub fn summary(&self) -> String {
        let c = &self.counts;
        let kib = |a: &AtomicU64| a.load(Ordering::Relaxed) >> 10;
        format!(
            "{} writes ({} KiB) held; {} fsyncs wrote {} KiB through; {} KiB written through early (past the {} KiB limit)",
            c.writes.load(Ordering::Relaxed),
            kib(&c.written_bytes),
            c.fsyncs.load(Ordering::Relaxed),
            kib(&c.synced_bytes),
            kib(&c.early_bytes),
            self.dirty_limit_bytes >> 10,
        )
    }
}

/// The FUSE side: the root directory and one file per member (inode 2 + its index).
struct VolatileFs {
    cache: Arc<Cache>,
}

const TTL: Duration = Duration::from_secs(1);
const FIRST_MEMBER: u64 = 2;

impl VolatileFs {
    fn member(&self, ino: INodeNo) -> Option<usize> {
        let i = ino.0.checked_sub(FIRST_MEMBER)? as usize;
        (i < self.cache.members.len()).then_some(i)
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, nlink, size) = if ino == INodeNo::ROOT {
            (FileType::Directory, 0o755, 2, 0)
        } else {
            let m = &self.cache.members[self.member(ino)?];
            (FileType::RegularFile, 0o600, 1, m.size_bytes)
        };
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid,
            gid,
            rdev: 0,
            flags: 0,
            blksize: PAGE_BYTES as u32,
        })
    }
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for VolatileFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = (parent == INodeNo::ROOT)
            .then(|| {
                self.cache
                    .members
                    .iter()
                    .position(|m| name == m.name.as_str())
            })
            .flatten();
        match found.and_then(|i| self.attr(INodeNo(FIRST_MEMBER + i as u64))) {
            Some(a) => reply.entry(&TTL, &a, fuser::Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let mut entries = vec![
            (INodeNo::ROOT, FileType::Directory, ".".to_string()),
            (INodeNo::ROOT, FileType::Directory, "..".to_string()),
        ];
        for (i, m) in self.cache.members.iter().enumerate() {
            let ino = INodeNo(FIRST_MEMBER + i as u64);
            entries.push((ino, FileType::RegularFile, m.name.clone()));
        }
        for (k, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (k + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.member(ino) {
            Some(_) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            None => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(i) = self.member(ino) else {
            return reply.error(Errno::EISDIR);
        };
        match self.cache.members[i].read(offset, size as usize) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Some(i) = self.member(ino) else {
            return reply.error(Errno::EISDIR);
        };
        match self.cache.write(i, offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lo: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A close is not a sync: nothing is written through.
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _ds: bool, reply: ReplyEmpty) {
        let Some(i) = self.member(ino) else {
            return reply.ok();
        };
        match self.cache.fsync(i) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        // Discards and zeroed ranges are refused: the kernel then writes zeroes or skips.
        reply.error(Errno::EOPNOTSUPP);
    }
}

/// Serves `opts` until SIGTERM or SIGINT (or an unmount): then writes every held page
/// through and syncs. `ready` is called once the mount answers, with the cache.
pub fn serve(opts: &Options, ready: impl FnOnce(&Cache)) -> Result<Arc<Cache>, VolatileFsError> {
    let cache = Arc::new(Cache::open(&opts.members, opts.dirty_limit_bytes)?);
    let mut config = Config::default();
    config
        .mount_options
        .push(fuser::MountOption::FSName("storlab-volatile".into()));
    config.acl = fuser::SessionACL::RootAndOwner;
    config.n_threads = Some(opts.threads.max(1));
    let fs = VolatileFs {
        cache: Arc::clone(&cache),
    };
    let mount_err = |source| VolatileFsError::Mount {
        mount: opts.mount.clone(),
        source,
    };
    let mut session = fuser::Session::new(fs, &opts.mount, &config).map_err(mount_err)?;
    let mut unmounter = session.unmount_callable();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ])
    .map_err(VolatileFsError::Signals)?;
    let on_signal = Arc::clone(&cache);
    let mount = opts.mount.clone();
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            stop_cleanly(&on_signal, &mount, sig, &mut unmounter);
        }
    });
    ready(&cache);
    session.run().map_err(|source| VolatileFsError::Serve {
        mount: opts.mount.clone(),
        source,
    })?;
    // Unmounted: what came in since the signal (or everything, after an unmount) goes through.
    cache.write_all_through()?;
    Ok(cache)
}

/// The clean stop: everything held written through and synced, then the unmount. An unmount
/// the kernel refuses (a loop device still open on a file) ends the process: nothing is held
/// any more, so nothing is lost; the mount's users then get errors.
fn stop_cleanly(cache: &Cache, mount: &Path, sig: i32, unmounter: &mut fuser::SessionUnmounter) {
    match cache.write_all_through() {
        Ok(bytes) => eprintln!(
            "storlab volatile-fs: signal {sig}: {} KiB held written through and synced; unmounting {}",
            bytes >> 10,
            mount.display()
        ),
        Err(e) => {
            eprintln!("storlab volatile-fs: signal {sig}: {e}; not unmounting");
            return;
        }
    }
    if let Err(e) = unmounter.unmount() {
        eprintln!(
            "storlab volatile-fs: unmounting {}: {e}; exiting (nothing is held): {}",
            mount.display(),
            cache.summary()
        );
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_specs_are_name_equals_path_with_plain_names() {
        let s: MemberSpec = "m0=/dev/loop3".parse().unwrap();
        assert_eq!(s.name, "m0");
        assert_eq!(s.path, PathBuf::from("/dev/loop3"));
        for bad in ["m0", "=/dev/x", "m0=", ""] {
            assert!(
                matches!(bad.parse::<MemberSpec>(), Err(VolatileFsError::Spec(_))),
                "{bad}"
            );
        }
        for bad in ["a/b=/x", "..=/x", "a b=/x"] {
            assert!(
                matches!(bad.parse::<MemberSpec>(), Err(VolatileFsError::Name(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_limit_writes_a_member_through_early_and_counts_it() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), vec![0u8; 16 * PAGE_BYTES]).unwrap();
        let spec = MemberSpec {
            name: "m0".into(),
            path: f.path().to_path_buf(),
        };
        let cache = Cache::open(std::slice::from_ref(&spec), 2 * PAGE_BYTES as u64).unwrap();
        cache.write(0, 0, &[1; PAGE_BYTES]).unwrap();
        cache.write(0, PAGE_BYTES as u64, &[1; PAGE_BYTES]).unwrap();
        assert_eq!(cache.held_bytes(), 2 * PAGE_BYTES as u64);
        cache
            .write(0, 2 * PAGE_BYTES as u64, &[1; PAGE_BYTES])
            .unwrap();
        assert_eq!(cache.held_bytes(), 0, "past the limit: written through");
        let early = cache.counts.early_bytes.load(Ordering::Relaxed);
        assert_eq!(early, 3 * PAGE_BYTES as u64);
        assert!(
            std::fs::read(f.path()).unwrap()[..3 * PAGE_BYTES]
                .iter()
                .all(|&b| b == 1)
        );
        assert!(matches!(
            Cache::open(&[spec.clone(), spec], 1),
            Err(VolatileFsError::Twice(_))
        ));
    }
}
