//! The file target's page-aligned I/O buffers (one block per slot), allocated once per
//! session, filled with random data or stamped for verified writes. Blocks larger than a
//! page sit in transparent huge pages unless the target asks for base pages: a block in 4 KiB
//! pages is as many segments as pages, and a virtio disk without indirect descriptors (256
//! descriptors, two more per request) then holds 7 requests of 128 KiB at a time (measured:
//! 7 at the driver and 6.2k IOPS at queue depth 128, against 83 and 12.9k in huge pages).

use super::uring::errno_name;
use super::*;
use storlab_workload::buffers::BufferFiller;

/// Page-aligned I/O buffers, one block per slot.
pub(super) struct AlignedBuf {
    pub(super) ptr: *mut u8,
    layout: std::alloc::Layout,
    pub(super) block: usize,
    /// fio's buffer contents (`write-buffers`): refills or scrambles each write's block.
    filler: Option<BufferFiller>,
    /// What the kernel gave, for the results (`file.buffer-pages`).
    pub(super) pages: String,
}

/// A transparent huge page, bytes.
const HUGE_PAGE: usize = 2 << 20;

// SAFETY: the buffer is owned by one session, which lives on one thread at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `slots` blocks of `b`'s size and contents (`seed`: the worker's). With `write-buffers`
    /// (fio's buffer contents), each slot's block is filled by fio's algorithms, as fio fills
    /// each of its buffers before the first write; a dedupe working set is a share of
    /// `region_bytes`.
    pub(super) fn new(
        slots: usize,
        b: &BlockParams,
        seed: u64,
        pages: BufferPages,
        region_bytes: u64,
    ) -> Result<AlignedBuf, TargetError> {
        let block = b.block_bytes as usize;
        let huge = pages == BufferPages::Huge && block > BUF_ALIGN;
        let size = (slots * block).max(BUF_ALIGN);
        let (size, align) = if huge {
            (size.div_ceil(HUGE_PAGE) * HUGE_PAGE, HUGE_PAGE)
        } else {
            (size, BUF_ALIGN)
        };
        let layout = std::alloc::Layout::from_size_align(size, align)
            .map_err(|e| TargetError::Invalid(format!("buffer layout: {e}")))?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(TargetError::Invalid(format!(
                "cannot allocate {size} bytes of buffers"
            )));
        }
        // Before the first touch, so that the pages are faulted in huge.
        let advised = if huge {
            // SAFETY: the range is the allocation just made, aligned to a huge page.
            let r = unsafe { libc::madvise(ptr as *mut libc::c_void, size, libc::MADV_HUGEPAGE) };
            if r == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
            }
        } else {
            Ok(())
        };
        // fio's working set pages are blocks of the smallest write.
        let page_bytes = b.size_draw.map_or(u64::from(b.block_bytes), |d| d.min(true));
        let filler = b.write_buffers.clone().map(|w| {
            BufferFiller::new(w, seed).with_working_set(region_bytes, page_bytes, b.dedupe_place, seed)
        });
        let mut buf = AlignedBuf {
            ptr,
            layout,
            block,
            filler,
            pages: String::new(),
        };
        if let Some(mut f) = buf.filler.take() {
            for slot in 0..slots {
                f.fill(buf.slot_mut(slot as u32, block as u32));
            }
            buf.filler = Some(f);
        } else if b.random_data {
            rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(buf.all());
        } else {
            buf.all().fill(b.pattern);
        }
        buf.pages = pages_said(pages, huge, advised, ptr as usize, size);
        Ok(buf)
    }

    #[inline]
    pub(super) fn all(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    /// The first `len` bytes of a slot's block (len <= the block size).
    #[inline]
    pub(super) fn slot_mut(&mut self, slot: u32, len: u32) -> &mut [u8] {
        // SAFETY: the slot's block lies inside the allocation and len <= block; we hold
        // &mut self.
        unsafe {
            std::slice::from_raw_parts_mut(self.slot_ptr(slot), (len as usize).min(self.block))
        }
    }

    #[inline]
    pub(super) fn slot_ptr(&self, slot: u32) -> *mut u8 {
        // SAFETY: callers pass slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot as usize * self.block) }
    }

    /// With `write-buffers`: refills or scrambles the block of a write about to go (fio's
    /// contents), and true; false without.
    #[inline]
    pub(super) fn fill_for_write(&mut self, slot: u32, len: u32, offset: u64) -> bool {
        let p = self.slot_ptr(slot);
        let len = (len as usize).min(self.block);
        let Some(f) = self.filler.as_mut() else {
            return false;
        };
        // SAFETY: the slot's block lies inside the allocation and len <= block; we hold
        // &mut self.
        f.before_write(unsafe { std::slice::from_raw_parts_mut(p, len) }, offset);
        true
    }

    /// Marks a block about to be written with its offset and a generation, so that no two
    /// written blocks are identical (defeats dedup) and later verification can find them.
    #[inline]
    pub(super) fn stamp(&mut self, slot: u32, offset: u64, generation: u64) {
        let p = self.slot_ptr(slot);
        // SAFETY: every block is at least 512 bytes (checked at plan time) and owned by us.
        unsafe {
            std::ptr::write_unaligned(p as *mut u64, offset);
            std::ptr::write_unaligned(p.add(8) as *mut u64, generation);
        }
    }
}

/// What the buffers sit in, for the results: asked for and given (read back from the
/// process's smaps once the buffers are filled).
fn pages_said(
    pages: BufferPages,
    huge: bool,
    advised: Result<(), i32>,
    addr: usize,
    size: usize,
) -> String {
    match (pages, huge, advised) {
        (BufferPages::Base, ..) => "base (asked)".into(),
        (BufferPages::Huge, false, _) => "base (blocks of at most 4 KiB are one page each)".into(),
        (BufferPages::Huge, true, Err(e)) => {
            format!("base (madvise MADV_HUGEPAGE refused: {})", errno_name(e))
        }
        (BufferPages::Huge, true, Ok(())) => match huge_bytes(addr) {
            Some(got) if got >= size as u64 => "huge".into(),
            Some(got) => format!(
                "huge asked, {} of {} MiB given (the kernel's transparent huge pages: {})",
                got >> 20,
                size >> 20,
                thp_mode()
            ),
            None => "huge asked, not read back (no /proc/self/smaps)".into(),
        },
    }
}

/// Bytes of huge pages in the mapping that holds `addr` (smaps' AnonHugePages).
fn huge_bytes(addr: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((lo, hi)) = range.split_once('-')
            && let (Ok(lo), Ok(hi)) = (
                usize::from_str_radix(lo, 16),
                usize::from_str_radix(hi, 16),
            )
        {
            inside = lo <= addr && addr < hi;
        } else if inside && let Some(v) = line.strip_prefix("AnonHugePages:") {
            let kib = v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
            return Some(kib * 1024);
        }
    }
    None
}

/// The bracketed mode of /sys/kernel/mm/transparent_hugepage/enabled.
fn thp_mode() -> String {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .unwrap_or_default();
    match text.split_once('[').and_then(|(_, r)| r.split_once(']')) {
        Some((mode, _)) => format!("enabled = {mode}"),
        None => "not available".into(),
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}
