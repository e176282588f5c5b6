//! The file target's page-aligned I/O buffers (one block per slot), allocated once per
//! session, filled with random data or stamped for verified writes.

use super::*;
use crate::workload::buffers::BufferFiller;

/// Page-aligned I/O buffers, one block per slot.
pub(super) struct AlignedBuf {
    pub(super) ptr: *mut u8,
    layout: std::alloc::Layout,
    pub(super) block: usize,
    /// fio's buffer contents (`write-buffers`): refills or scrambles each write's block.
    filler: Option<BufferFiller>,
}

// SAFETY: the buffer is owned by one session, which lives on one thread at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// With `write-buffers` (fio's buffer contents), each slot's block is filled by fio's
    /// algorithms, as fio fills each of its buffers before the first write.
    pub(super) fn new(
        slots: usize,
        block: usize,
        p: &SessionParams,
    ) -> Result<AlignedBuf, TargetError> {
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
        let filler = p
            .write_buffers
            .clone()
            .map(|w| BufferFiller::new(w, p.seed ^ ((p.worker as u64) << 32)));
        let mut b = AlignedBuf {
            ptr,
            layout,
            block,
            filler,
        };
        if let Some(mut f) = b.filler.take() {
            for slot in 0..slots {
                f.fill(b.slot_mut(slot as u32, block as u32));
            }
            b.filler = Some(f);
        } else if p.random_data {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(p.seed ^ ((p.worker as u64) << 32));
            rng.fill_bytes(b.all());
        } else {
            b.all().fill(p.pattern);
        }
        Ok(b)
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

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}
