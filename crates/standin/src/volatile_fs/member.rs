//! One served member: its backing (a block device or a file, opened with O_DIRECT where the
//! kernel allows) and the pages written to it and not yet written through. Reads see the held
//! pages over the backing; an fsync writes them through and syncs the backing; a write that
//! takes the cache past its limit writes this member's pages through early (without a sync:
//! the backing is the durable side already), as a kernel writes dirty pages back when they
//! pass its limit.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::aligned::AlignedBuf;

/// The unit the cache holds: writes are kept in whole pages, and the backing is read and
/// written in whole pages (O_DIRECT's alignment).
pub const PAGE_BYTES: usize = 4096;
/// The largest run of pages read or written through in one call.
const SCRATCH_BYTES: usize = 1 << 20;

type Page = Box<[u8; PAGE_BYTES]>;

/// A member served as one file of the mount.
pub struct Member {
    /// Its file name in the mount.
    pub name: String,
    /// What it serves.
    pub path: PathBuf,
    /// Its size: the backing's, a whole number of pages.
    pub size_bytes: u64,
    /// Whether the backing is opened with O_DIRECT (false: the kernel refused it, say a
    /// tmpfs file; its reads and writes then pass the host's page cache).
    pub direct: bool,
    inner: Mutex<Inner>,
}

struct Inner {
    file: File,
    /// Page index -> the page's content as last written, not yet written through.
    held: BTreeMap<u64, Page>,
    scratch: AlignedBuf,
}

/// What one write-through did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WrittenThrough {
    pub bytes: u64,
}

fn einval(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

impl Member {
    /// Opens `path` for reading and writing, with O_DIRECT unless the kernel refuses it.
    pub fn open(name: &str, path: &Path) -> io::Result<Member> {
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(true);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(path)
        };
        let (mut file, direct) = match open(true) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(false)?, false),
            Err(e) => return Err(e),
        };
        let size_bytes = file.seek(SeekFrom::End(0))?;
        if size_bytes == 0 || !size_bytes.is_multiple_of(PAGE_BYTES as u64) {
            return Err(einval(format!(
                "{size_bytes} bytes: not a whole number of {PAGE_BYTES}-byte pages"
            )));
        }
        Ok(Member {
            name: name.to_string(),
            path: path.to_path_buf(),
            size_bytes,
            direct,
            inner: Mutex::new(Inner {
                file,
                held: BTreeMap::new(),
                scratch: AlignedBuf::new(SCRATCH_BYTES),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A thread that panicked holding the lock left the pages as they were: keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes `offset..offset+len` as the node sees them (short at the end of the member).
    pub fn read(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let end = (offset + len as u64).min(self.size_bytes);
        if offset >= end {
            return Ok(Vec::new());
        }
        let mut out = vec![0u8; (end - offset) as usize];
        let mut inner = self.lock();
        let Inner {
            file,
            held,
            scratch,
        } = &mut *inner;
        // The backing, in page-aligned runs through the aligned scratch buffer.
        let mut at = offset - offset % PAGE_BYTES as u64;
        while at < end {
            let run = (end.next_multiple_of(PAGE_BYTES as u64) - at).min(SCRATCH_BYTES as u64);
            let buf = &mut scratch.as_mut_slice()[..run as usize];
            file.read_exact_at(buf, at)?;
            copy_overlap(&mut out, offset, buf, at);
            at += run;
        }
        // The held pages over it.
        let first = offset / PAGE_BYTES as u64;
        let last = (end - 1) / PAGE_BYTES as u64;
        for (&page, content) in held.range(first..=last) {
            copy_overlap(&mut out, offset, &content[..], page * PAGE_BYTES as u64);
        }
        Ok(out)
    }

    /// Holds `data` at `offset`. Returns the bytes of pages newly held (the cache's growth).
    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<u64> {
        let end = offset + data.len() as u64;
        if end > self.size_bytes {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if data.is_empty() {
            return Ok(0);
        }
        let mut inner = self.lock();
        let Inner {
            file,
            held,
            scratch,
        } = &mut *inner;
        let mut grown = 0;
        for page in offset / PAGE_BYTES as u64..=(end - 1) / PAGE_BYTES as u64 {
            let start = page * PAGE_BYTES as u64;
            let content = match held.entry(page) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    grown += PAGE_BYTES as u64;
                    let mut p: Page = Box::new([0; PAGE_BYTES]);
                    // A page only partly written keeps the rest of what the backing holds.
                    if offset > start || end < start + PAGE_BYTES as u64 {
                        let buf = &mut scratch.as_mut_slice()[..PAGE_BYTES];
                        file.read_exact_at(buf, start)?;
                        p.copy_from_slice(buf);
                    }
                    v.insert(p)
                }
            };
            copy_overlap(&mut content[..], start, data, offset);
        }
        Ok(grown)
    }

    /// Writes every held page through to the backing (then syncs it when `sync`), and stops
    /// holding them. A failure leaves every page held (none is dropped).
    pub fn write_through(&self, sync: bool) -> io::Result<WrittenThrough> {
        let mut inner = self.lock();
        let Inner {
            file,
            held,
            scratch,
        } = &mut *inner;
        let mut pages = held.iter().peekable();
        let mut bytes = 0u64;
        while let Some((&first, content)) = pages.next() {
            // A run of consecutive pages, as long as the scratch buffer.
            let buf = scratch.as_mut_slice();
            buf[..PAGE_BYTES].copy_from_slice(&content[..]);
            let mut n = 1usize;
            while n * PAGE_BYTES < SCRATCH_BYTES {
                match pages.peek() {
                    Some(&(&p, c)) if p == first + n as u64 => {
                        buf[n * PAGE_BYTES..(n + 1) * PAGE_BYTES].copy_from_slice(&c[..]);
                        pages.next();
                        n += 1;
                    }
                    _ => break,
                }
            }
            file.write_all_at(&buf[..n * PAGE_BYTES], first * PAGE_BYTES as u64)?;
            bytes += (n * PAGE_BYTES) as u64;
        }
        if sync {
            file.sync_data()?;
        }
        held.clear();
        Ok(WrittenThrough { bytes })
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> u64 {
        self.lock().held.len() as u64 * PAGE_BYTES as u64
    }
}

/// Copies the part of `src` (which starts at byte `src_at`) that overlaps `dst` (which starts
/// at `dst_at`).
fn copy_overlap(dst: &mut [u8], dst_at: u64, src: &[u8], src_at: u64) {
    let from = dst_at.max(src_at);
    let to = (dst_at + dst.len() as u64).min(src_at + src.len() as u64);
    if from < to {
        let (d, s, n) = (
            (from - dst_at) as usize,
            (from - src_at) as usize,
            (to - from) as usize,
        );
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backing(pages: usize) -> (tempfile::NamedTempFile, Member) {
        let f = tempfile::NamedTempFile::new().unwrap();
        let content: Vec<u8> = (0..pages * PAGE_BYTES)
            .map(|i| (i / PAGE_BYTES) as u8)
            .collect();
        std::fs::write(f.path(), &content).unwrap();
        let m = Member::open("m0", f.path()).unwrap();
        (f, m)
    }

    #[test]
    fn writes_are_seen_by_reads_and_reach_the_backing_only_when_written_through() {
        let (f, m) = backing(4);
        assert_eq!(m.size_bytes, 4 * PAGE_BYTES as u64);
        // A write across pages 1 and 2, not aligned.
        let grown = m
            .write(PAGE_BYTES as u64 + 100, &[0xAB; PAGE_BYTES])
            .unwrap();
        assert_eq!(grown, 2 * PAGE_BYTES as u64);
        let r = m.read(PAGE_BYTES as u64, 2 * PAGE_BYTES).unwrap();
        assert!(
            r[..100].iter().all(|&b| b == 1),
            "page 1 before the write kept"
        );
        assert!(r[100..100 + PAGE_BYTES].iter().all(|&b| b == 0xAB));
        assert!(
            r[100 + PAGE_BYTES..].iter().all(|&b| b == 2),
            "page 2 after it kept"
        );
        // The backing still holds the old content.
        let on_disk = std::fs::read(f.path()).unwrap();
        assert!(
            on_disk[PAGE_BYTES..3 * PAGE_BYTES]
                .iter()
                .all(|&b| b != 0xAB)
        );
        assert_eq!(m.held_bytes(), 2 * PAGE_BYTES as u64);
        let w = m.write_through(true).unwrap();
        assert_eq!(w.bytes, 2 * PAGE_BYTES as u64);
        assert_eq!(m.held_bytes(), 0);
        let on_disk = std::fs::read(f.path()).unwrap();
        assert_eq!(&on_disk[PAGE_BYTES..3 * PAGE_BYTES], &r[..]);
        // After the write-through, reads come from the backing and still see the write.
        assert_eq!(m.read(PAGE_BYTES as u64, 2 * PAGE_BYTES).unwrap(), r);
    }

    #[test]
    fn a_member_dropped_before_its_write_through_loses_exactly_the_held_writes() {
        let (f, m) = backing(3);
        m.write(0, &[7; PAGE_BYTES]).unwrap();
        m.write_through(true).unwrap();
        m.write(2 * PAGE_BYTES as u64, &[9; PAGE_BYTES]).unwrap();
        drop(m); // the node's power: what was held is gone
        let on_disk = std::fs::read(f.path()).unwrap();
        assert!(
            on_disk[..PAGE_BYTES].iter().all(|&b| b == 7),
            "the synced write stays"
        );
        assert!(
            on_disk[2 * PAGE_BYTES..].iter().all(|&b| b == 2),
            "the held one is lost"
        );
    }

    #[test]
    fn reads_stop_at_the_end_and_writes_past_it_are_refused() {
        let (_f, m) = backing(2);
        assert_eq!(
            m.read(PAGE_BYTES as u64, 3 * PAGE_BYTES).unwrap().len(),
            PAGE_BYTES
        );
        assert!(m.read(2 * PAGE_BYTES as u64, 10).unwrap().is_empty());
        let e = m.write(2 * PAGE_BYTES as u64 - 1, &[1, 2]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    }

    #[test]
    fn a_write_through_writes_runs_of_consecutive_pages_in_order() {
        let (f, m) = backing(600);
        // 300 consecutive pages (longer than one scratch run) and one apart.
        m.write(0, &vec![5; 300 * PAGE_BYTES]).unwrap();
        m.write(500 * PAGE_BYTES as u64, &[6; 10]).unwrap();
        assert_eq!(
            m.write_through(false).unwrap().bytes,
            301 * PAGE_BYTES as u64
        );
        let on_disk = std::fs::read(f.path()).unwrap();
        assert!(on_disk[..300 * PAGE_BYTES].iter().all(|&b| b == 5));
        assert_eq!(
            &on_disk[500 * PAGE_BYTES..500 * PAGE_BYTES + 11],
            &[6, 6, 6, 6, 6, 6, 6, 6, 6, 6, (500 % 256) as u8]
        );
    }

    #[test]
    fn a_backing_that_is_not_whole_pages_is_refused() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), [0u8; 1000]).unwrap();
        let e = Member::open("m", f.path()).err().unwrap();
        assert!(e.to_string().contains("not a whole number"), "{e}");
    }
}
