//! A global allocator that counts allocations per thread, for the tests that prove a hot path
//! allocates nothing. Each such test binary includes this file and installs it:
//!
//! ```ignore
//! #[path = "common/counting_alloc.rs"]
//! mod counting_alloc;
//! #[global_allocator]
//! static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) made so far by the calling thread.
pub fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}
