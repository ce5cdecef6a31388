//! Threads: how many gridbuf uses and the pools that run its parallel work.
//!
//! One module owns every pool: fills ([`crate::allocation::fill`]), copies ([`crate::arrays::copy`]), page
//! population ([`crate::AlignedBuffer::populate`]) and the native kernels ([`crate::kernels`])
//! all run on [`pool`]s cached here, never on rayon's global pool. The thread count comes from
//! the environment variable `GRIDBUF_NUM_THREADS`, read once ([`configured`]); unset or invalid,
//! it is every core the process may use.
//!
//! ```
//! use gridbuf::runtime::threads::{parse_num_threads, Threads};
//! assert_eq!(parse_num_threads(Some(" 3 ")), Some(Threads::new(3)?));
//! assert_eq!(parse_num_threads(Some("0")), None);
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};

/// The environment variable that sets the number of threads.
pub const ENV_VAR: &str = "GRIDBUF_NUM_THREADS";

/// The largest thread count accepted by [`Threads::new`].
pub const MAX_THREADS: usize = 1024;

/// How many threads a parallel operation may use; 1 runs on the calling thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Threads(NonZeroUsize);

impl Threads {
    /// One thread: the calling thread does all the work.
    pub const ONE: Threads = Threads(NonZeroUsize::MIN);

    /// `n` threads, between 1 and [`MAX_THREADS`].
    pub fn new(n: usize) -> Result<Threads> {
        match NonZeroUsize::new(n) {
            Some(nz) if n <= MAX_THREADS => Ok(Threads(nz)),
            _ => Err(Error::invalid(
                "threads",
                n,
                format!("expected a number of threads between 1 and {MAX_THREADS}"),
            )),
        }
    }

    /// As many threads as the machine offers to this process (at least 1).
    pub fn available() -> Threads {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        Threads(NonZeroUsize::new(n.min(MAX_THREADS)).unwrap_or(NonZeroUsize::MIN))
    }

    /// The number of threads.
    pub fn get(self) -> usize {
        self.0.get()
    }
}

impl Default for Threads {
    fn default() -> Self {
        Threads::ONE
    }
}

/// The thread count a value of `GRIDBUF_NUM_THREADS` asks for: a decimal number between 1 and
/// [`MAX_THREADS`] (surrounding spaces allowed); `None` for an unset, empty or invalid value, which
/// means the default ([`Threads::available`]).
pub fn parse_num_threads(value: Option<&str>) -> Option<Threads> {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .and_then(|n| Threads::new(n).ok())
}

/// The thread count of this process: `GRIDBUF_NUM_THREADS` read on first use, else every
/// available core. Fills, copies and the kernels called from Python use it.
pub fn configured() -> Threads {
    static CONFIGURED: OnceLock<Threads> = OnceLock::new();
    *CONFIGURED.get_or_init(|| {
        parse_num_threads(std::env::var(ENV_VAR).ok().as_deref()).unwrap_or_else(Threads::available)
    })
}

/// The cached pool with `threads` threads; `None` for one thread or if the threads cannot be
/// started (the caller then runs the work itself).
pub fn pool(threads: Threads) -> Option<Arc<rayon::ThreadPool>> {
    let n = threads.get();
    if n == 1 {
        return None;
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let pools = POOLS.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked while inserting; the map is intact.
    let mut map = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = map.get(&n) {
        return Some(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("gridbuf-{i}"))
        .build()
        .ok()?;
    let p = Arc::new(p);
    map.insert(n, p.clone());
    Some(p)
}

/// Runs `f(i)` for every `i` in `0..items`, spread over `threads` (on the calling thread when
/// there is one thread, one item, or the pool cannot start).
///
/// Every item is its own task (items are never batched), so callers choose items small enough
/// that a thread delayed by the operating system holds up at most one of them while the
/// others take the rest.
pub fn for_each_index<F: Fn(usize) + Sync + Send>(threads: Threads, items: usize, f: F) {
    if items > 1 {
        if let Some(p) = pool(threads) {
            p.install(|| (0..items).into_par_iter().with_max_len(1).for_each(&f));
            return;
        }
    }
    (0..items).for_each(f);
}

/// Runs `f` on every task, each task a separate unit any thread may take (see
/// [`for_each_index`]); on the calling thread when there is one thread or one task, or the pool
/// cannot start.
pub fn run_each<I: Send, F: Fn(I) + Sync + Send>(threads: Threads, tasks: Vec<I>, f: F) {
    if tasks.len() > 1 {
        if let Some(p) = pool(threads) {
            p.install(|| tasks.into_par_iter().with_max_len(1).for_each(&f));
            return;
        }
    }
    tasks.into_iter().for_each(f);
}

/// Runs `f` on every task, spread over `threads` (on the calling thread when there is one
/// thread, one task, or the pool cannot start). Rayon may run neighbouring tasks as one batch;
/// [`run_each`] does not.
pub fn run_tasks<I: Send, F: Fn(I) + Sync>(threads: Threads, tasks: Vec<I>, f: F) {
    if tasks.len() > 1 {
        if let Some(p) = pool(threads) {
            p.install(|| tasks.into_par_iter().for_each(&f));
            return;
        }
    }
    tasks.into_iter().for_each(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn threads_are_checked() {
        assert!(Threads::new(0).is_err());
        assert!(Threads::new(MAX_THREADS + 1).is_err());
        assert_eq!(Threads::new(3).unwrap().get(), 3);
        assert!(Threads::available().get() >= 1);
    }

    #[test]
    fn num_threads_values() {
        assert_eq!(parse_num_threads(None), None);
        assert_eq!(parse_num_threads(Some("")), None);
        assert_eq!(parse_num_threads(Some("two")), None);
        assert_eq!(parse_num_threads(Some("-1")), None);
        assert_eq!(parse_num_threads(Some("0")), None);
        assert_eq!(parse_num_threads(Some("1025")), None);
        assert_eq!(parse_num_threads(Some("1")), Some(Threads::ONE));
        assert_eq!(parse_num_threads(Some(" 7\n")).map(Threads::get), Some(7));
    }

    #[test]
    fn pools_are_cached_and_run_every_index_once() {
        let two = Threads::new(2).unwrap();
        assert!(pool(Threads::ONE).is_none());
        let (a, b) = (pool(two).unwrap(), pool(two).unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 2);
        for threads in [Threads::ONE, two] {
            let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            for_each_index(threads, hits.len(), |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }
}
