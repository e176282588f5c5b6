//! The table of acknowledged generations kept in a memory-mapped file, so that it survives
//! storlab: a SIGKILL leaves the file as it was at the kill (the kernel keeps the page cache),
//! and a side thread syncs it (msync) once per interval for a power loss. The workers' only
//! cost stays the table's atomic store: the atomics live in the file's pages, faulted in
//! before the run.
//!
//! The file, little-endian, in pages of 4096 bytes:
//! - the header (one page or more): the line `storlab-verify-map 1` (padded with NULs to 24
//!   bytes), then u64 fields: header bytes, JSON bytes, clean (1 only once the run ended
//!   normally and its last state was synced), syncs done, wall clock of the last sync (ns since
//!   the epoch), threads, blocks; at byte 128 the JSON of what the state says besides its
//!   entries (the run layer's `StateMeta`);
//! - per thread its durable watermark, then per thread its count of serialized writes, padded
//!   to a page;
//! - one u64 entry per block (bits `IN_FLIGHT`, `FAILED`, `GENERATION` of [`super::table`]).

use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::VerifyError;

/// The first line of a mapped state file.
pub const FIRST_LINE: &str = "storlab-verify-map 1";
const PAGE_BYTES: usize = 4096;
const AT_HEADER_BYTES: usize = 24;
const AT_JSON_BYTES: usize = 32;
const AT_CLEAN: usize = 40;
const AT_SYNCS: usize = 48;
const AT_LAST_SYNC_NS: usize = 56;
const AT_THREADS: usize = 64;
const AT_BLOCKS: usize = 72;
const AT_JSON: usize = 128;

fn round_up_to_page(bytes: usize) -> usize {
    bytes.div_ceil(PAGE_BYTES) * PAGE_BYTES
}

/// A slice of atomics whose memory another field owns (a heap box or a mapping): indexing it
/// costs what indexing a boxed slice does.
pub struct Slots {
    ptr: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the atomics are shared between threads by design; the owner of the memory lives as
// long as the table holding both.
unsafe impl Send for Slots {}
// SAFETY: as above: `&[AtomicU64]` is Sync.
unsafe impl Sync for Slots {}

impl Slots {
    /// SAFETY: `ptr` must be valid and 8-byte aligned for `len` u64s for as long as the value
    /// is used.
    pub(crate) unsafe fn new(ptr: *mut AtomicU64, len: usize) -> Slots {
        Slots {
            ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            len,
        }
    }
}

impl std::ops::Deref for Slots {
    type Target = [AtomicU64];
    #[inline]
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: see `Slots::new`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({})", self.len)
    }
}

/// The mapped file of a table.
pub struct MappedFile {
    map: memmap2::MmapMut,
    /// Where the file is now (it may be renamed into the run's folder).
    path: Mutex<PathBuf>,
    header_bytes: usize,
    threads: usize,
    /// Serializes syncs (the side thread's and the last one).
    sync_lock: Mutex<()>,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({})", self.path().display())
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl MappedFile {
    /// Creates the file at `path` (a new file renamed over any old one) for `threads` and
    /// `blocks`, with `meta_json` in its header, maps it and faults every page in for writing.
    pub fn create(
        path: &Path,
        meta_json: &str,
        threads: u32,
        blocks: u64,
    ) -> Result<MappedFile, VerifyError> {
        let io = |what| move |e| VerifyError::io(path, what, e);
        let header_bytes = round_up_to_page(AT_JSON + meta_json.len() + 1);
        let counters_bytes = round_up_to_page(16 * threads as usize);
        let total = header_bytes + counters_bytes + round_up_to_page(blocks as usize * 8);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io("creating its folder"))?;
        }
        let mut tmp = path.as_os_str().to_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io("creating"))?;
        file.set_len(total as u64).map_err(io("sizing"))?;
        // SAFETY: the file is storlab's own, new, and no other process is told to change it.
        let mut map = unsafe { memmap2::MmapOptions::new().populate().map_mut(&file) }
            .map_err(io("mapping"))?;
        let mut head = [0u8; AT_JSON];
        head[..FIRST_LINE.len()].copy_from_slice(FIRST_LINE.as_bytes());
        head[FIRST_LINE.len()] = b'\n';
        let fields = [
            (AT_HEADER_BYTES, header_bytes as u64),
            (AT_JSON_BYTES, meta_json.len() as u64),
            (AT_THREADS, threads as u64),
            (AT_BLOCKS, blocks),
        ];
        for (at, v) in fields {
            head[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        map[..AT_JSON].copy_from_slice(&head);
        map[AT_JSON..AT_JSON + meta_json.len()].copy_from_slice(meta_json.as_bytes());
        map[AT_JSON + meta_json.len()] = b'\n';
        // Fault every page in for writing now, not at a worker's first store to it.
        for at in (header_bytes..total).step_by(PAGE_BYTES) {
            map[at] = 0;
        }
        std::fs::rename(&tmp, path).map_err(io("renaming into place"))?;
        let m = MappedFile {
            map,
            path: Mutex::new(path.to_path_buf()),
            header_bytes,
            threads: threads as usize,
            sync_lock: Mutex::new(()),
        };
        m.sync()?;
        Ok(m)
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is 8-aligned and inside the mapping (page-aligned), which lives as
        // long as `self`.
        unsafe { &*(self.map.as_ptr().add(at) as *const AtomicU64) }
    }

    /// The durable watermarks, the serialized counts and the entries, in the mapping.
    pub(crate) fn slots(&self, blocks: usize) -> [Slots; 3] {
        let base = self.map.as_ptr() as *mut AtomicU64;
        let counters = self.header_bytes / 8;
        let entries = (self.header_bytes + round_up_to_page(16 * self.threads)) / 8;
        // SAFETY: all three ranges lie inside the mapping (sized for them in `create`), which
        // the table holds as long as the slots.
        unsafe {
            [
                Slots::new(base.add(counters), self.threads),
                Slots::new(base.add(counters + self.threads), self.threads),
                Slots::new(base.add(entries), blocks),
            ]
        }
    }

    pub fn path(&self) -> PathBuf {
        self.path
            .lock()
            .map_or_else(|p| p.into_inner().clone(), |p| p.clone())
    }

    /// Renames the file to `to` (same filesystem); the mapping stays.
    pub fn move_to(&self, to: &Path) -> Result<(), VerifyError> {
        let mut p = self.path.lock().unwrap_or_else(|p| p.into_inner());
        std::fs::rename(&*p, to).map_err(|e| VerifyError::io(to, "renaming into place", e))?;
        *p = to.to_path_buf();
        Ok(())
    }

    /// Writes the mapped pages to the device (msync) and notes when.
    pub fn sync(&self) -> Result<(), VerifyError> {
        let _one = self.sync_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.word(AT_LAST_SYNC_NS)
            .store(now_ns(), Ordering::Relaxed);
        let syncs = self.word(AT_SYNCS);
        syncs.store(syncs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.map
            .flush()
            .map_err(|e| VerifyError::io(self.path(), "syncing", e))
    }

    /// The run ended normally: nothing is in flight. Marks the state clean and syncs it.
    pub fn mark_clean(&self) -> Result<(), VerifyError> {
        self.word(AT_CLEAN).store(1, Ordering::Release);
        self.sync()
    }
}

/// What a mapped state file holds, read back.
#[derive(Debug, Clone)]
pub struct MappedState {
    pub meta_json: String,
    /// The run that made it ended normally.
    pub clean: bool,
    pub syncs: u64,
    /// Wall clock of its last sync, ns since the epoch (0: never).
    pub last_sync_ns: u64,
    pub durable: Vec<u64>,
    pub serialized: Vec<u64>,
    pub entries: Vec<u64>,
}

/// Reads a mapped state file (which a live run may still be writing: a snapshot).
pub fn read(path: &Path) -> Result<MappedState, VerifyError> {
    let bad = |why: &str| VerifyError::BadState {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let bytes = std::fs::read(path).map_err(|e| VerifyError::io(path, "reading", e))?;
    if bytes.len() < AT_JSON || !bytes.starts_with(FIRST_LINE.as_bytes()) {
        return Err(bad("it does not start with `storlab-verify-map 1`"));
    }
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    let field = |at| u64_at(at).map(|v| v as usize).unwrap_or(0);
    let (header_bytes, json_bytes) = (field(AT_HEADER_BYTES), field(AT_JSON_BYTES));
    let (threads, blocks) = (field(AT_THREADS), field(AT_BLOCKS));
    let counters = header_bytes;
    let entries_at = header_bytes + round_up_to_page(16 * threads);
    if header_bytes < AT_JSON + json_bytes || bytes.len() < entries_at + blocks * 8 {
        return Err(bad("it is shorter than its header says"));
    }
    let meta_json = String::from_utf8(bytes[AT_JSON..AT_JSON + json_bytes].to_vec())
        .map_err(|_| bad("its header is not UTF-8"))?;
    let words = |from: usize, n: usize| -> Vec<u64> {
        (0..n).map(|i| u64_at(from + i * 8).unwrap_or(0)).collect()
    };
    Ok(MappedState {
        meta_json,
        clean: field(AT_CLEAN) == 1,
        syncs: field(AT_SYNCS) as u64,
        last_sync_ns: field(AT_LAST_SYNC_NS) as u64,
        durable: words(counters, threads),
        serialized: words(counters + 8 * threads, threads),
        entries: words(entries_at, blocks),
    })
}

/// The wall clock of `ns` since the epoch, RFC 3339.
pub fn ns_to_rfc3339(ns: u64) -> String {
    storlab_model::units::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns))
}
