//! The thread a blocking client's intents run on: a single-threaded tokio runtime
//! that takes futures over a channel and hands each one's output back.

use std::future::Future;
use std::pin::Pin;
use std::thread;

use tokio::sync::{mpsc, oneshot};

/// A future sent to the runtime thread, run there as a task of its own.
type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The runtime thread. Shared (through an `Arc`) by a client, its clones, their
/// request builders and responses; dropping the last one stops the thread.
pub(super) struct Runtime {
    /// `None` only while dropping: closing the channel ends the thread's loop.
    jobs: Option<mpsc::UnboundedSender<Job>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Runtime {
    /// Starts the thread and runs `setup` on it, inside the runtime (reqwest's
    /// client is built where it will run), returning its output.
    ///
    /// # Panics
    /// When the operating system cannot start a thread or the runtime's I/O driver.
    pub(super) fn start<T: Send + 'static>(
        setup: impl FnOnce() -> T + Send + 'static,
    ) -> (Self, T) {
        let (jobs, mut incoming) = mpsc::unbounded_channel::<Job>();
        let (ready, set_up) = std::sync::mpsc::sync_channel(1);
        let thread = thread::Builder::new()
            .name("reqwest-resilience-blocking".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let output = {
                    let _inside = runtime.enter();
                    setup()
                };
                if ready.send(Ok(output)).is_err() {
                    return;
                }
                runtime.block_on(async move {
                    while let Some(job) = incoming.recv().await {
                        tokio::spawn(job);
                    }
                });
            })
            .expect("reqwest-resilience: could not start the blocking client's thread");
        let output = set_up
            .recv()
            .expect("reqwest-resilience: the blocking client's thread stopped while starting")
            .expect("reqwest-resilience: could not start the blocking client's runtime");
        let runtime = Self {
            jobs: Some(jobs),
            thread: Some(thread),
        };
        (runtime, output)
    }

    /// Runs `future` on the runtime thread and waits for its output. A panic in
    /// `future` is resumed on the calling thread, as if it had run there.
    ///
    /// # Panics
    /// When called on a thread that drives async tasks (tokio's "Cannot block the
    /// current thread from within a runtime"), before `future` is started; and
    /// with `future`'s own panic.
    pub(super) fn run<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        refuse_async_context();
        let (reply, output) = oneshot::channel();
        let job: Job = Box::pin(async move {
            // A task of its own, so that a panic in `future` comes back as a value.
            let _ = reply.send(tokio::spawn(future).await);
        });
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .expect("reqwest-resilience: the blocking client's thread has stopped");
        match output.blocking_recv() {
            Ok(Ok(output)) => output,
            Ok(Err(join_error)) if join_error.is_panic() => {
                std::panic::resume_unwind(join_error.into_panic())
            }
            _ => panic!("reqwest-resilience: the blocking client's thread has stopped"),
        }
    }
}

/// Panics, with tokio's message, on a thread where blocking would stall async
/// tasks; returns at once anywhere else (`spawn_blocking` threads included).
fn refuse_async_context() {
    let (_, closed) = oneshot::channel::<()>();
    let _ = closed.blocking_recv();
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop; its runtime then drops what
        // is left (nothing waits for it any more).
        drop(self.jobs.take());
        let Some(thread) = self.thread.take() else {
            return;
        };
        // Waiting for the thread would block: done only outside any async runtime,
        // so that a client may be dropped anywhere. Elsewhere the thread ends alone.
        if tokio::runtime::Handle::try_current().is_err()
            && thread.thread().id() != thread::current().id()
        {
            let _ = thread.join();
        }
    }
}
