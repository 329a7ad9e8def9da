//! Client-thread CPU time, for the overhead figures.

use std::time::Duration;

/// CPU time of the calling thread. The client runtime is single-threaded, so on it
/// this is all the client-side work (reqwest, hyper's connection tasks, the peer),
/// and it is not inflated by time spent waiting for a core on a busy machine.
pub fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we own and pass by pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}
