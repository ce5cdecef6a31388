//! A fork-join team: the calling thread and `n - 1` workers run the tasks of one parallel
//! call, and the workers wait for the next call by spinning a while before they sleep.
//!
//! The tasks are cut into one contiguous share per participant, which it runs first, in
//! order; one that finishes its share takes the tasks left in the others'. So with threads
//! that keep pace each runs the same tasks at every call, as OpenMP's static schedule does
//! (pace's `fix_tracer`, whose tiles stay in each core's cache from call to call: 0.66 ms per
//! call, 0.80 when every task went to whichever thread was free), and a thread that starts
//! late holds up no other.
//!
//! Why not rayon's pools, which the gridbuf calls used before: a call from outside a rayon pool
//! hands its work to a pool thread and sleeps until it ends, and each of those hand-offs wakes a
//! sleeping thread. On a virtual machine a wake-up costs tens of microseconds, and pace's
//! stencils at C48 take 0.1-1 ms a call: two tasks of 100 us took 171 us through rayon when
//! the calls came 30 us apart, 262-285 us when they came 0.3-1 ms apart, and 101 us on this
//! team (benchmarks/README.md, `bench_pace.py`). OpenMP runtimes, which GT4Py's compiled
//! backends use, do the same: the calling thread works, and idle threads spin before sleeping.
//!
//! A call may also be handed off whole to a worker while the calling thread waits and polls
//! ([`Team::hand_off`]: stencils with `while` loops, whose Ctrl-C needs the calling thread free).
//!
//! A team belongs to the process that started its workers: a child made by `fork` (Python's
//! `multiprocessing` on Linux, `os.fork`) has none of them, so there every team runs its calls on
//! the calling thread and refuses hand-offs, and the caches in [`crate::runtime::threads`] and
//! [`crate::runtime::interrupt`] start new teams for the child.
//!
//! `GRIDBUF_SPIN_US` sets how long an idle worker spins (microseconds, read once; default
//! [`DEFAULT_SPIN_US`]; `0` sleeps at once, for machines whose cores are shared with other
//! busy processes, as `OMP_WAIT_POLICY=passive` does for OpenMP).

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The environment variable that sets how long idle workers spin, in microseconds.
pub const SPIN_ENV_VAR: &str = "GRIDBUF_SPIN_US";

/// How long an idle worker spins before it sleeps, unless [`SPIN_ENV_VAR`] says otherwise:
/// longer than the Python code between two stencil calls usually takes.
pub const DEFAULT_SPIN_US: u64 = 200;

/// How long the calling thread spins for the workers' last tasks before it sleeps.
const CALLER_SPIN: Duration = Duration::from_micros(50);

/// How long a thread that handed its call off spins before it sleeps: long enough for a call
/// on a small domain, short where its spinning takes a core from the threads doing the work.
const HAND_OFF_SPIN: Duration = Duration::from_micros(20);

/// The spin of idle workers: [`SPIN_ENV_VAR`] read once, else [`DEFAULT_SPIN_US`].
fn idle_spin() -> Duration {
    static SPIN: OnceLock<Duration> = OnceLock::new();
    *SPIN.get_or_init(|| {
        let expected = "a whole number of microseconds";
        let us = super::env::read(SPIN_ENV_VAR, expected, |v| v.parse::<u64>().ok())
            .unwrap_or(DEFAULT_SPIN_US);
        Duration::from_micros(us.min(1_000_000))
    })
}

/// Forks so far, as counted in each child: a team remembers the count it was started at.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// The fork count, after making sure forks are counted.
fn forks() -> u64 {
    #[cfg(unix)]
    {
        static COUNTING: std::sync::Once = std::sync::Once::new();
        extern "C" fn in_child() {
            FORKS.fetch_add(1, Ordering::Relaxed);
        }
        COUNTING.call_once(|| {
            // SAFETY: registers a handler that only increments an atomic, which is safe in a
            // forked child; the handler is a plain function that lives as long as the process.
            // A failed registration (ENOMEM) leaves forks uncounted, as on other platforms.
            unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        });
    }
    FORKS.load(Ordering::Relaxed)
}

/// Locks `m`, whose data stays valid if a holder panicked (every guarded value here is
/// written whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A call's task function, its lifetime erased (see [`Job`]).
type TaskFn = dyn Fn(usize) + Sync;

/// The tasks of one call: `f(i)` for every `i` below `n`, each claimed once.
struct Job {
    /// The call's task function. It borrows from the calling thread's stack: [`Team::run`]
    /// returns only once `done` reaches `n`, and a participant calls it only for an index it
    /// claimed below `n` (before its `done` increment), so every call happens while the borrow
    /// lives. After that, late participants touch the job's own fields only (it is in an `Arc`).
    f: *const TaskFn,
    n: usize,
    /// Per share (tasks `[p * n / shares, (p + 1) * n / shares)`): its next unclaimed task.
    next: Vec<AtomicUsize>,
    done: AtomicUsize,
    /// Participants so far (the calling thread is the first, with share 0); a worker that
    /// would be one more than there are shares leaves.
    joined: AtomicUsize,
    /// Set by a task that panicked: later claims skip their tasks.
    failed: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// The calling thread, woken by whoever finishes the last task.
    caller: Thread,
}

// SAFETY: `f` points to a `Sync` function that outlives every call made through it (see
// `Job::f`), so sharing the pointer between threads is sound; the other fields are atomics,
// a mutex and a `Thread`.
unsafe impl Send for Job {}
// SAFETY: as for `Send`.
unsafe impl Sync for Job {}

impl Job {
    /// The first task of share `p`.
    fn start(&self, p: usize) -> usize {
        p * self.n / self.next.len()
    }

    /// A seat for a worker: its share, if one is free.
    fn take_seat(&self) -> Option<usize> {
        let p = self.joined.fetch_add(1, Ordering::AcqRel);
        (p < self.next.len()).then_some(p)
    }

    /// Claims and runs tasks until none is left: share `first`'s, then the following shares'.
    fn work(&self, first: usize) {
        let shares = self.next.len();
        for p in (first..shares).chain(0..first) {
            let end = self.start(p + 1);
            loop {
                let i = self.next[p].fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    break;
                }
                self.run_task(i);
            }
        }
    }

    /// Runs task `i`, which the caller claimed.
    fn run_task(&self, i: usize) {
        if !self.failed.load(Ordering::Relaxed) {
            // SAFETY: `i` was claimed below `n` and `done` has not counted it yet, so the
            // calling thread is still inside `Team::run` and the function alive.
            let f = unsafe { &*self.f };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(i))) {
                self.failed.store(true, Ordering::Relaxed);
                lock(&self.panic).get_or_insert(p);
            }
        }
        // Release: the task's writes are seen by the caller once it sees the count.
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.caller.unpark();
        }
    }
}

/// What the calling thread and the workers share.
struct Shared {
    /// Bumped for every call; idle workers wait for it to change.
    generation: AtomicU64,
    /// The running call's job.
    job: Mutex<Option<Arc<Job>>>,
    /// Workers asleep on `wake` (or about to be).
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
}

/// A calling thread and its workers (see the module documentation).
pub struct Team {
    shared: Arc<Shared>,
    workers: usize,
    /// [`forks`] when the workers started: in a forked child the count is higher, and the
    /// workers are gone.
    forks: u64,
    /// Whether a call is running: one at a time; another call made meanwhile (from another
    /// thread, or from inside a task) runs its tasks on its own thread.
    busy: AtomicBool,
}

impl Team {
    /// A team of `threads` (the calling thread and `threads - 1` workers); `None` if a worker
    /// thread cannot start.
    pub fn new(threads: usize) -> Option<Team> {
        Team::named(threads, |w| format!("gridbuf-{w}"))
    }

    /// A team of the calling thread and one worker named `gridbuf-runner`, for
    /// [`Team::hand_off`].
    pub fn runner() -> Option<Team> {
        Team::named(2, |_| "gridbuf-runner".into())
    }

    fn named(threads: usize, name: impl Fn(usize) -> String) -> Option<Team> {
        let forks = forks();
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            job: Mutex::new(None),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        });
        let workers = threads.saturating_sub(1);
        for w in 0..workers {
            let s = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(name(w))
                .spawn(move || worker(&s))
                .ok()?;
        }
        Some(Team {
            shared,
            workers,
            forks,
            busy: AtomicBool::new(false),
        })
    }

    /// The number of threads a call may use: the calling thread and the workers.
    pub fn threads(&self) -> usize {
        self.workers + 1
    }

    /// Whether the workers run in this process: false in a child forked after they started.
    pub fn is_of_this_process(&self) -> bool {
        self.forks == FORKS.load(Ordering::Relaxed)
    }

    /// Runs `f(i)` for every `i` in `0..n`, on the calling thread and the workers; returns when
    /// every task has ended. A panic in a task is raised here, after the other tasks ended
    /// (tasks not started by then are skipped).
    pub fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        if n == 0 {
            return;
        }
        if n == 1 || !self.is_of_this_process() || !self.claim() {
            (0..n).for_each(f);
            return;
        }
        let job = self.start(n, f, 1);
        job.work(0);
        self.finish(&job, CALLER_SPIN, Duration::from_millis(1), &mut || {});
    }

    /// Runs `f(0)` on a worker while the calling thread waits, calling `on_wait` about every
    /// `period` until it ends (the waiting loop of [`crate::runtime::interrupt::run_watched`]);
    /// a panic in `f` is raised here. False, without running `f`, where the team has no worker
    /// (or none in this process) or runs another call.
    pub fn hand_off(
        &self,
        f: &(dyn Fn(usize) + Sync),
        period: Duration,
        on_wait: &mut dyn FnMut(),
    ) -> bool {
        if self.workers == 0 || !self.is_of_this_process() || !self.claim() {
            return false;
        }
        let job = self.start(1, f, 0);
        self.finish(&job, HAND_OFF_SPIN, period, on_wait);
        true
    }

    /// Takes the team for one call: false where another call has it.
    fn claim(&self) -> bool {
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Publishes the job of `f` over `0..n`, whose first `joined` shares are taken (the calling
    /// thread's, when it works).
    fn start(&self, n: usize, f: &(dyn Fn(usize) + Sync), joined: usize) -> Arc<Job> {
        let short: *const (dyn Fn(usize) + Sync + '_) = f;
        // SAFETY: the lifetime is erased only for the pointer's type; every caller waits in
        // `finish` until `done` reached `n`, when no task call can happen any more (see `Job::f`).
        let erased: *const TaskFn = unsafe {
            std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const TaskFn>(short)
        };
        let shares = (self.workers + joined).min(n);
        let job = Arc::new(Job {
            f: erased,
            n,
            next: (0..shares)
                .map(|p| AtomicUsize::new(p * n / shares))
                .collect(),
            done: AtomicUsize::new(0),
            joined: AtomicUsize::new(joined),
            failed: AtomicBool::new(false),
            panic: Mutex::new(None),
            caller: std::thread::current(),
        });
        self.publish(Arc::clone(&job));
        job
    }

    /// Waits until every task of `job` ended (spinning for `spin`, then parked until the last
    /// task's end wakes it, calling `on_wait` every `period` meanwhile), releases the team and
    /// raises a task's panic.
    fn finish(&self, job: &Job, spin: Duration, period: Duration, on_wait: &mut dyn FnMut()) {
        let t0 = Instant::now();
        let mut next = t0 + period;
        while job.done.load(Ordering::Acquire) < job.n {
            let now = Instant::now();
            if now - t0 < spin {
                std::hint::spin_loop();
            } else if now >= next {
                on_wait();
                next = now + period;
            } else {
                // Woken by the last task's end; the timeout paces `on_wait` (and guards
                // against a lost wake-up).
                std::thread::park_timeout(next - now);
            }
        }
        *lock(&self.shared.job) = None;
        self.busy.store(false, Ordering::Release);
        let panic = lock(&job.panic).take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// Makes `job` the running call's and wakes sleeping workers.
    fn publish(&self, job: Arc<Job>) {
        let s = &self.shared;
        *lock(&s.job) = Some(job);
        // SeqCst here and in `worker`: either a worker about to sleep sees the new
        // generation, or this sees it among the sleepers and wakes it.
        s.generation.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = lock(&s.sleep);
            s.wake.notify_all();
        }
    }
}

/// A worker: waits for each new call (spinning for [`idle_spin`], then asleep) and works on
/// it where a seat is free. Workers live as long as the process, as the teams do.
fn worker(s: &Shared) {
    // The generation the team started with, not the one when this thread starts: calls made
    // before it ran must not look old to it.
    let mut seen = 0;
    loop {
        let since = Instant::now();
        let mut polls = 0u32;
        loop {
            let g = s.generation.load(Ordering::Acquire);
            if g != seen {
                seen = g;
                break;
            }
            polls = polls.wrapping_add(1);
            // The clock only every 64 polls: reading it is slower than a poll.
            if polls % 64 == 0 && since.elapsed() >= idle_spin() {
                let mut g = lock(&s.sleep);
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                while s.generation.load(Ordering::SeqCst) == seen {
                    g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
            } else {
                std::hint::spin_loop();
            }
        }
        let job = lock(&s.job).clone();
        if let Some(job) = job {
            if let Some(p) = job.take_seat() {
                job.work(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once_on_several_threads() {
        let team = Team::new(3).unwrap();
        assert_eq!(team.threads(), 3);
        for n in [0, 1, 2, 3, 7, 100] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            team.run(n, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
        // Tasks that wait for each other finish only if two threads run them at once.
        let both = AtomicUsize::new(0);
        team.run(2, &|_| {
            both.fetch_add(1, Ordering::SeqCst);
            let t0 = Instant::now();
            while both.load(Ordering::SeqCst) < 2 {
                assert!(t0.elapsed() < Duration::from_secs(10), "ran one at a time");
            }
        });
    }

    #[test]
    fn calls_from_inside_a_task_and_from_other_threads_run_on_their_own_thread() {
        let team = Team::new(2).unwrap();
        let sum = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..50 {
                        team.run(4, &|i| {
                            team.run(3, &|j| {
                                sum.fetch_add(i * 3 + j, Ordering::Relaxed);
                            });
                        });
                    }
                });
            }
        });
        assert_eq!(sum.load(Ordering::Relaxed), 4 * 50 * (0..12).sum::<usize>());
    }

    #[test]
    fn a_panic_in_a_task_reaches_the_caller_after_the_others_ended() {
        let team = Team::new(2).unwrap();
        let ended = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            team.run(2, &|i| {
                if i == 1 {
                    panic!("task {i}");
                }
                std::thread::sleep(Duration::from_millis(20));
                ended.fetch_add(1, Ordering::SeqCst);
            });
        }));
        assert!(r.is_err());
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        // The team still works.
        let n = AtomicUsize::new(0);
        team.run(5, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn a_hand_off_runs_on_the_worker_while_the_caller_waits() {
        let team = Team::runner().unwrap();
        let here = std::thread::current().id();
        let ran_on = Mutex::new(None);
        let waits = AtomicUsize::new(0);
        let ok = team.hand_off(
            &|_| {
                *lock(&ran_on) = Some(std::thread::current().id());
                std::thread::sleep(Duration::from_millis(30));
            },
            Duration::from_millis(5),
            &mut || {
                waits.fetch_add(1, Ordering::Relaxed);
            },
        );
        assert!(ok);
        assert!(lock(&ran_on).is_some_and(|t| t != here));
        assert!(waits.load(Ordering::Relaxed) >= 2);
        // A panic reaches the caller; a team running a call refuses another hand-off.
        let r = catch_unwind(AssertUnwindSafe(|| {
            team.hand_off(&|_| panic!("boom"), Duration::from_millis(5), &mut || {})
        }));
        assert!(r.is_err());
        team.run(2, &|_| {
            assert!(!team.hand_off(&|_| {}, Duration::from_millis(5), &mut || {}));
        });
    }

    #[test]
    fn sleeping_workers_wake_for_the_next_call() {
        let team = Team::new(2).unwrap();
        std::thread::sleep(idle_spin() + Duration::from_millis(20));
        let both = AtomicUsize::new(0);
        team.run(2, &|_| {
            both.fetch_add(1, Ordering::SeqCst);
            let t0 = Instant::now();
            while both.load(Ordering::SeqCst) < 2 {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "the worker slept on"
                );
            }
        });
    }
}
