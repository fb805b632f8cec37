//! The fast global allocator a binary may choose (`fast-alloc`): mimalloc, asked the
//! way its fast path wants.
#![allow(
    unsafe_code,
    reason = "a global allocator is unsafe by definition; each block says why it is sound"
)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// What every mimalloc block is aligned to: its blocks are whole words, laid from a
/// page start aligned to at least 16 bytes, so any block is word-aligned.
const WORD: usize = std::mem::size_of::<usize>();

/// A fast global allocator (mimalloc), for binaries that choose it with the
/// `fast-alloc` feature and one line:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: tiny_sdk::FastAlloc = tiny_sdk::FastAlloc;
/// ```
///
/// A library never picks the allocator; the binary does. A message hop allocates
/// (the hop's future, the message, a copy for an edge that may retry), so the
/// allocator shows in the flow benchmark: `make bench-flow` runs it with both.
///
/// Unlike the `mimalloc` crate's `MiMalloc`, which sends every request through
/// `mi_malloc_aligned`, a request that needs no more than a word's alignment (nearly
/// all: strings, vectors, boxed futures) takes plain `mi_malloc`: mimalloc 3's
/// aligned entry leaves its fast path whenever the page's free list needs refilling,
/// which in a message hop is most of the time.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastAlloc;

// SAFETY: each method forwards to mimalloc, which returns memory that is valid for
// `layout.size()` bytes or null. Alignment: a request aligned to at most a word goes to
// the plain entries, whose blocks are always word-aligned (see `WORD`); any other goes
// to the aligned entries with `layout.align()`, which GlobalAlloc guarantees is a
// power of two. `mi_realloc` keeps the block's word alignment, as `mi_malloc` made it,
// and `mi_free` frees blocks from either entry.
unsafe impl GlobalAlloc for FastAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (GlobalAlloc's contract).
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_asked_for_and_keep_their_bytes() {
        let a = FastAlloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 24, 100, 5000] {
                let layout = Layout::from_size_align(size, align).expect("a layout");
                // SAFETY: a non-zero size, and the block is freed with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(7, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc: size {size} align {align}");
                    assert_eq!(*q.add(size - 1), 7);
                    a.dealloc(q, Layout::from_size_align(size * 3, align).expect("a layout"));
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert_eq!(*z.add(size - 1), 0);
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
