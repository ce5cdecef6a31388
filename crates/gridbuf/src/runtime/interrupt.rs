//! Stopping a running computation from outside, at safe points: a gtscript stencil checks its
//! [`Interrupt`] before each tile and at every pass of a `while` loop (the interpreter's block
//! passes, and the compiled point functions' loop back edges, which load the flag itself), and
//! returns [`Error::interrupted`] once it is set.
//!
//! Who sets it: the thread that started the call (the owner) calls the `poll` function it was
//! given, at most once per [`POLL_PERIOD`]. While the owner runs the work itself, it polls from
//! the checks between tiles and interpreted loop passes; work that may run unbounded in compiled
//! code (a stencil with `while` loops) goes to another thread with [`run_watched`], and the owner
//! polls while it waits. The Python binding's poll runs Python's signal handlers, which only run
//! on the main thread, so Ctrl-C stops a stencil whose `while` loop never ends. What was written
//! before the stop stays written.

use crate::error::{Error, Result};
use crate::runtime::team::Team;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How often the owner asks `poll` at most (a signal handler runs within about this long).
pub const POLL_PERIOD: Duration = Duration::from_millis(10);

/// A stop request shared by the threads of one call (see the module documentation).
pub struct Interrupt<'a> {
    flag: AtomicBool,
    owner: ThreadId,
    poll: Option<&'a (dyn Fn() -> bool + Sync)>,
    start: Instant,
    /// Nanoseconds after `start` before which the owner does not poll again.
    next_poll: AtomicU64,
}

impl Interrupt<'static> {
    /// An interrupt nobody requests: checks cost one load.
    pub fn never() -> Interrupt<'static> {
        Interrupt {
            flag: AtomicBool::new(false),
            owner: std::thread::current().id(),
            poll: None,
            start: Instant::now(),
            next_poll: AtomicU64::new(u64::MAX),
        }
    }
}

impl<'a> Interrupt<'a> {
    /// An interrupt owned by the calling thread, which calls `poll` (true: stop) at most once per
    /// [`POLL_PERIOD`].
    pub fn polled(poll: &'a (dyn Fn() -> bool + Sync)) -> Interrupt<'a> {
        Interrupt {
            flag: AtomicBool::new(false),
            owner: std::thread::current().id(),
            poll: Some(poll),
            start: Instant::now(),
            next_poll: AtomicU64::new(POLL_PERIOD.as_nanos() as u64),
        }
    }

    /// Whether the computation must stop; on the owner thread, polls when a period has passed.
    #[inline]
    pub fn requested(&self) -> bool {
        if self.flag.load(Ordering::Relaxed) {
            return true;
        }
        let Some(poll) = self.poll else { return false };
        // The owner first: only it polls, and a clock read at every check of every thread
        // cost pace's fix_tracer (thousands of checks per call) about 8 % of its time.
        if std::thread::current().id() != self.owner {
            return false;
        }
        let now = self.start.elapsed().as_nanos() as u64;
        if now < self.next_poll.load(Ordering::Relaxed) {
            return false;
        }
        self.next_poll
            .store(now + POLL_PERIOD.as_nanos() as u64, Ordering::Relaxed);
        if poll() {
            self.flag.store(true, Ordering::Relaxed);
        }
        self.flag.load(Ordering::Relaxed)
    }

    /// `Err(Error::interrupted())` once the computation must stop.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.requested() {
            Err(Error::interrupted())
        } else {
            Ok(())
        }
    }

    /// The flag's address, read by compiled code as one byte (nonzero: stop).
    pub fn flag_address(&self) -> *const u8 {
        self.flag.as_ptr().cast_const().cast()
    }

    /// Whether the flag is set, without polling.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Polls now (the owner's waiting loop in [`run_watched`]).
    fn poll_now(&self) {
        if self.poll.is_some_and(|p| p()) {
            self.flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs `work` with `stop` polled by the calling thread. Work that may run unbounded (`unbounded`:
/// compiled `while` loops, which only read the flag) goes to a runner thread while the calling
/// thread waits, polling every [`POLL_PERIOD`]; the runner then leads the work's parallel parts
/// as the calling thread would. Bounded work, or work without a poll, runs on the calling
/// thread, which then polls from the work's own checks (between tiles): it leads the work's
/// teams itself, with no hand-off to wait for (the hand-offs cost pace's small stencils up to
/// a third of their time on virtual machines, see [`crate::runtime::team`]).
pub fn run_watched<R: Send>(
    stop: &Interrupt<'_>,
    unbounded: bool,
    work: impl FnOnce() -> R + Send,
) -> R {
    if stop.poll.is_none() || !unbounded || !watch_loops() {
        return work();
    }
    let work = Mutex::new(Some(work));
    let result: Mutex<Option<R>> = Mutex::new(None);
    let task = |_: usize| {
        let w = work.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = w {
            let r = w();
            *result.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    if !hand_off(&task, &mut || stop.poll_now()) {
        // No runner could start: the work runs here (a panic in it is raised by `hand_off`).
        task(0);
    }
    let r = result.into_inner().unwrap_or_else(|e| e.into_inner());
    r.expect("the work ran to its end")
}

/// Runs `task(0)` on a runner thread while the calling thread calls `on_wait` every
/// [`POLL_PERIOD`]: on a free runner, or a new one where every runner has a call (each
/// concurrent watched call gets its own, so none waits for another's endless loop). False where
/// no runner can start.
fn hand_off(task: &(dyn Fn(usize) + Sync), on_wait: &mut dyn FnMut()) -> bool {
    static RUNNERS: OnceLock<Mutex<Vec<Arc<Team>>>> = OnceLock::new();
    let runners = RUNNERS.get_or_init(Default::default);
    let known: Vec<Arc<Team>> = {
        let mut runners = runners.lock().unwrap_or_else(|e| e.into_inner());
        // Runners started before this process was forked are not in it.
        runners.retain(|r| r.is_of_this_process());
        runners.clone()
    };
    for r in known {
        if r.hand_off(task, POLL_PERIOD, on_wait) {
            return true;
        }
    }
    let Some(r) = Team::runner().map(Arc::new) else {
        return false;
    };
    runners
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::clone(&r));
    r.hand_off(task, POLL_PERIOD, on_wait)
}

/// Whether work that may run unbounded goes to a runner thread while the caller polls
/// (`GRIDBUF_GTSCRIPT_WATCH`, read once; `0`: it runs on the calling thread, and Ctrl-C cannot
/// stop a `while` loop that never ends). Each such call hands the work to another thread and
/// back: two wake-ups, each of which waits for a free core where MPI ranks outnumber the cores.
fn watch_loops() -> bool {
    static WATCH: OnceLock<bool> = OnceLock::new();
    *WATCH.get_or_init(|| super::env::flag("GRIDBUF_GTSCRIPT_WATCH", true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn never_is_never_requested() {
        let i = Interrupt::never();
        assert!(!i.requested() && i.check().is_ok());
    }

    #[test]
    fn the_owner_polls_at_most_once_per_period() {
        let calls = AtomicUsize::new(0);
        let poll = || calls.fetch_add(1, Ordering::Relaxed) >= 2;
        let i = Interrupt::polled(&poll);
        assert!(!i.requested()); // before the first period: no poll
        let t0 = Instant::now();
        while !i.requested() {
            assert!(t0.elapsed() < Duration::from_secs(5));
        }
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert!(i.check().is_err());
        // Another thread sees the flag but never polls.
        let other = Interrupt::polled(&poll);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(POLL_PERIOD * 2);
                assert!(!other.requested());
            });
        });
    }

    #[test]
    fn unbounded_work_on_the_runner_is_stopped_by_the_waiting_owner() {
        let polls = AtomicUsize::new(0);
        let poll = || polls.fetch_add(1, Ordering::Relaxed) >= 1;
        let i = Interrupt::polled(&poll);
        let passes = run_watched(&i, true, || {
            let mut n = 0u64;
            while !i.is_set() {
                n += 1;
                std::hint::spin_loop();
            }
            n
        });
        assert!(passes > 0 && i.is_set());
        // Bounded work runs here (polling from its own checks), unbounded work on the runner.
        let here = std::thread::current().id();
        assert_eq!(run_watched(&i, false, || std::thread::current().id()), here);
        assert_ne!(run_watched(&i, true, || std::thread::current().id()), here);
    }

    #[test]
    fn a_panic_in_watched_work_reaches_the_caller() {
        let poll = || false;
        let i = Interrupt::polled(&poll);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_watched(&i, true, || -> u32 { panic!("boom") })
        }));
        assert!(r.is_err());
    }
}
