//! The counting allocator counts what the counting thread allocates, and only that.

use std::hint::black_box;

use reqwest_resilience_bench::alloc_count::{count, Counting, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn counts_allocations_bytes_and_frees_of_this_thread() {
    let (_, counts) = count(|| {
        let boxed = black_box(Box::new([7u8; 100]));
        drop(boxed);
        let mut growing: Vec<u8> = Vec::with_capacity(10);
        growing.extend_from_slice(black_box(&[1u8; 40]));
        growing
    });
    // One box of 100 bytes, one vector of 10 grown once by `realloc`.
    assert_eq!(counts.allocations, 3);
    assert_eq!(counts.reallocs, 1);
    assert!(counts.bytes >= 100 + 10 + 40, "{counts:?}");
    assert_eq!(counts.frees, 1);
}

#[test]
fn does_not_count_other_threads_or_outside_the_window() {
    let before = black_box(vec![0u8; 64]);
    let counting = Counting::start();
    let other = std::thread::spawn(|| black_box(vec![0u8; 4096]).len());
    let len = other.join().expect("thread");
    let counts = counting.finish();
    let after = black_box(vec![0u8; 64]);
    assert_eq!(len + before.len() + after.len(), 4096 + 128);
    // Spawning and joining allocate on this thread (the handle, the packet), but the
    // other thread's 4096-byte vector is not among them.
    assert!(counts.bytes < 4096, "{counts:?}");
}
