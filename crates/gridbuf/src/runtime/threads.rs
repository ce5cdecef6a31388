//! Threads: how many gridbuf uses and the teams that run its parallel work.
//!
//! One module owns every team ([`crate::runtime::team`]): fills ([`crate::allocation::fill`]),
//! copies ([`crate::arrays::copy`]), page population ([`crate::AlignedBuffer::populate`]), the
//! native kernels ([`crate::kernels`]), gtscript stencils and the halo exchange all run on
//! [`team`]s cached here. The thread count comes from the environment variable
//! `GRIDBUF_NUM_THREADS`, read once ([`configured`]); unset, or a value it does not take
//! (reported, see [`crate::runtime::env`]), it is every core the process may use.
//!
//! ```
//! use gridbuf::runtime::threads::{parse_num_threads, Threads};
//! assert_eq!(parse_num_threads(Some(" 3 ")), Some(Threads::new(3)?));
//! assert_eq!(parse_num_threads(Some("0")), None);
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::runtime::team::Team;
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
        let expected = format!("a number of threads from 1 to {MAX_THREADS}");
        super::env::read(ENV_VAR, &expected, |v| parse_num_threads(Some(v)))
            .unwrap_or_else(Threads::available)
    })
}

/// The cached team of `threads` threads (the calling thread and `threads - 1` workers);
/// `None` for one thread or if the workers cannot start (the caller then runs the work itself).
pub fn team(threads: Threads) -> Option<Arc<Team>> {
    let n = threads.get();
    if n == 1 {
        return None;
    }
    static TEAMS: OnceLock<Mutex<HashMap<usize, Option<Arc<Team>>>>> = OnceLock::new();
    let teams = TEAMS.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked while inserting; the map is intact.
    let mut map = teams.lock().unwrap_or_else(|e| e.into_inner());
    match map.get(&n) {
        // A team started before this process was forked has no workers here: start another.
        Some(Some(t)) if !t.is_of_this_process() => {}
        Some(cached) => return cached.clone(),
        None => {}
    }
    let started = Team::new(n).map(Arc::new);
    map.insert(n, started.clone());
    started
}

/// Runs `f(i)` for every `i` in `0..items`, spread over `threads` (on the calling thread when
/// there is one thread, one item, or the team cannot start).
///
/// Every item is its own task, claimed by whichever thread is free, so callers choose items
/// small enough that a thread delayed by the operating system holds up at most one of them
/// while the others take the rest.
pub fn for_each_index<F: Fn(usize) + Sync>(threads: Threads, items: usize, f: F) {
    if items > 1 {
        if let Some(t) = team(threads) {
            t.run(items, &f);
            return;
        }
    }
    (0..items).for_each(f);
}

/// Runs `f` on every task, each task a separate unit any thread may take (see
/// [`for_each_index`]); on the calling thread when there is one thread or one task, or the team
/// cannot start.
pub fn run_each<I: Send, F: Fn(I) + Sync>(threads: Threads, tasks: Vec<I>, f: F) {
    if tasks.len() > 1 {
        if let Some(t) = team(threads) {
            // Each task taken out of its slot by the one thread that claims its index.
            let slots: Vec<Mutex<Option<I>>> =
                tasks.into_iter().map(|x| Mutex::new(Some(x))).collect();
            t.run(slots.len(), &|i| {
                let task = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(task) = task {
                    f(task);
                }
            });
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
    fn teams_are_cached_and_run_every_index_once() {
        let two = Threads::new(2).unwrap();
        assert!(team(Threads::ONE).is_none());
        let (a, b) = (team(two).unwrap(), team(two).unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.threads(), 2);
        for threads in [Threads::ONE, two] {
            let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            for_each_index(threads, hits.len(), |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }
}
