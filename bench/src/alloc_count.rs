//! A global allocator that counts the allocations of the threads that ask it to (P8).
//!
//! A global allocator applies to a whole binary, so only the `p8_allocs` binary
//! declares this one `#[global_allocator]`; `bench` (P1–P7) keeps the system
//! allocator. Counting is per thread: the client runs on a current-thread runtime
//! on the counting thread, the loopback server on a thread of its own, so the
//! server's allocations are never in the figure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // `const` initialisers and no destructors: reading them never allocates and
    // never registers a destructor, so the allocator itself may touch them.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
    static REALLOCS: Cell<u64> = const { Cell::new(0) };
    static FREES: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, with per-thread counters switched on by [`count`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

fn on_allocate(bytes: usize, realloc: bool) {
    // `try_with`: during thread teardown the slots may be gone; then don't count.
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            BYTES.with(|n| n.set(n.get() + bytes as u64));
            if realloc {
                REALLOCS.with(|n| n.set(n.get() + 1));
            }
        }
    });
}

fn on_free() {
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            FREES.with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the counters only read
// and write thread-local `Cell`s, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_allocate(layout.size(), false);
        // SAFETY: the caller's contract for `alloc` is passed through.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_allocate(layout.size(), false);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    /// A reallocation counts as one allocation of `new_size` bytes (it may move).
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_allocate(new_size, true);
        // SAFETY: as for `alloc`; `ptr` and `layout` come from this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        on_free();
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// What one thread allocated while counting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub allocations: u64,
    /// Bytes requested by those calls (`realloc`: the new size).
    pub bytes: u64,
    /// Of the allocations, calls to `realloc`.
    pub reallocs: u64,
    /// Calls to `dealloc`.
    pub frees: u64,
}

impl Counts {
    fn read() -> Counts {
        Counts {
            allocations: ALLOCATIONS.with(Cell::get),
            bytes: BYTES.with(Cell::get),
            reallocs: REALLOCS.with(Cell::get),
            frees: FREES.with(Cell::get),
        }
    }
}

/// This thread's counters, on from [`Counting::start`] to [`Counting::finish`].
/// Works across `.await`s as long as everything runs on this thread (a
/// current-thread runtime). Only meaningful in a binary whose global allocator
/// is [`CountingAllocator`]; elsewhere the counts stay zero.
#[derive(Debug)]
pub struct Counting {
    before: Counts,
}

impl Counting {
    /// Switches this thread's counting on.
    pub fn start() -> Counting {
        let before = Counts::read();
        COUNTING.with(|c| c.set(true));
        Counting { before }
    }

    /// Switches it off; what this thread allocated since `start`.
    pub fn finish(self) -> Counts {
        COUNTING.with(|c| c.set(false));
        let after = Counts::read();
        Counts {
            allocations: after.allocations - self.before.allocations,
            bytes: after.bytes - self.before.bytes,
            reallocs: after.reallocs - self.before.reallocs,
            frees: after.frees - self.before.frees,
        }
    }
}

/// What `work` allocates on this thread.
pub fn count<T>(work: impl FnOnce() -> T) -> (T, Counts) {
    let counting = Counting::start();
    let value = work();
    (value, counting.finish())
}
