//! A page-aligned buffer for O_DIRECT reads and writes of the backing devices. Written here
//! (30 lines) rather than taken from a crate: the workspace's one aligned buffer belongs to the
//! file target (crates/targets), a layer this crate does not use.

use std::alloc::{Layout, alloc_zeroed, dealloc};

/// Alignment of every buffer: a page, the most O_DIRECT asks of the devices served.
pub const ALIGN: usize = 4096;

/// `len` zeroed bytes at a page-aligned address.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// The buffer is plain owned memory.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` bytes (rounded up to a page, at least one).
    pub fn new(len: usize) -> Self {
        let size = len.max(1).next_multiple_of(ALIGN);
        let layout = Layout::from_size_align(size, ALIGN).expect("a page-multiple size is valid");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr holds layout.size() initialized (zeroed) bytes, owned by self, and
        // &mut self gives unique access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
