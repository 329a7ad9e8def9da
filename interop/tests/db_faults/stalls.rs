//! How late this process ran: a thread of its own sleeps a short tick again
//! and again and notes by how much each sleep overran. When other work starves
//! the machine (builds, a benchmark), every timer of the process is late
//! together; a send that ended past its deadline by no more than the slack plus
//! the stall around it was held up by the machine. A thread apart from the
//! test's runtime, so that a runtime thread blocked by the code under test (a
//! wait that never ends, a blocking call) is not excused as a stall.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The watcher's tick.
const TICK: Duration = Duration::from_millis(20);

/// One overrun sleep: when it ended, and how late.
#[derive(Debug, Clone, Copy)]
pub struct Stall {
    pub ended: Instant,
    pub late: Duration,
}

/// The running watcher; stops when dropped.
pub struct Stalls {
    seen: Arc<Mutex<Vec<Stall>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Stalls {
    pub fn watch() -> Stalls {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
            move || {
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    std::thread::sleep(TICK);
                    let late = started.elapsed().saturating_sub(TICK);
                    // Only what a deadline would notice.
                    if late >= Duration::from_millis(5) {
                        seen.lock().unwrap().push(Stall {
                            ended: Instant::now(),
                            late,
                        });
                    }
                }
            }
        });
        Stalls {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// The stalls seen so far.
    pub fn seen(&self) -> Vec<Stall> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Stalls {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The longest stall that overlapped `from..=to`: a timer due in that span
/// fired at most that late.
pub fn worst_between(stalls: &[Stall], from: Instant, to: Instant) -> Duration {
    stalls
        .iter()
        .filter(|s| s.ended >= from && s.ended - s.late - TICK <= to)
        .map(|s| s.late)
        .max()
        .unwrap_or_default()
}
