//! Each thread's pool of reusable buffers (block buffers, tape registers, stored temporaries).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::thread::LocalKey;

/// An element type with a pool of buffers on each thread (every element type of the
/// evaluator, `rt::lane::Elem`, whose module gives each its pool); its `Default` is zero.
pub trait Pooled: Copy + Default + 'static {
    /// This thread's pool of buffers of this type, reused across calls so that large per-tile
    /// storage is not allocated and zeroed on every call.
    fn pool() -> &'static LocalKey<RefCell<Pool<Self>>>;
}

/// Buffers a pool keeps per thread at most: as many as one call of a large stencil holds at
/// once (a block buffer per quantity, one per tape register), so that its next call reuses
/// them all. At 64, PyFV3's saturation adjustment (hundreds of temporaries) allocated and
/// zeroed most of its buffers again at every call: 7 % of its time in `memset`, more in page
/// faults. The pool keeps no more memory than the largest call used.
const POOL_MAX: usize = 2048;

/// Distinct capacities a pool keeps lists for, emptied ones included, before it drops the
/// emptied ones (which it then has to search past).
const MAX_CAPACITIES: usize = 64;

/// A buffer of at least `len` elements from this thread's pool (values left by earlier use,
/// zero where it grows), or a new zeroed one. A buffer is never shortened: a later request
/// for more of it then fills nothing (pace's and PyFV3's stencils took the same buffers for
/// temporaries and for registers in turn, and zeroed them again at every call: a tenth of
/// `yppm.compute_y_flux`'s time). Its users index it by their own sizes.
pub(crate) fn take_buf<T: Pooled>(len: usize) -> Vec<T> {
    let mut v = T::pool()
        .with(|p| p.borrow_mut().take(len))
        .unwrap_or_default();
    if v.len() < len {
        v.resize(len, T::default());
    }
    v
}

/// A thread's buffers by capacity, at most [`POOL_MAX`] of them.
pub struct Pool<T> {
    by_capacity: BTreeMap<usize, Vec<Vec<T>>>,
    count: usize,
}

impl<T> Pool<T> {
    /// An empty pool.
    pub const fn new() -> Self {
        Pool {
            by_capacity: BTreeMap::new(),
            count: 0,
        }
    }

    /// The smallest buffer of capacity `len` or more (a large block buffer handed out for a
    /// small register would leave the next large request to reallocate and zero memory), else
    /// the largest, to be grown; None when the pool is empty.
    fn take(&mut self, len: usize) -> Option<Vec<T>> {
        let held = |(_, same): &(&usize, &mut Vec<Vec<T>>)| !same.is_empty();
        let same = match self.by_capacity.range_mut(len..).find(held) {
            Some((_, same)) => same,
            None => self.by_capacity.iter_mut().rev().find(held)?.1,
        };
        let b = same.pop();
        self.count -= usize::from(b.is_some());
        b
    }

    /// Keeps `b` unless the pool is full or `b` holds no memory.
    fn give(&mut self, b: Vec<T>) {
        if b.capacity() == 0 || self.count >= POOL_MAX {
            return;
        }
        // A capacity's list stays when emptied, so that a call that takes and gives back the
        // same buffers allocates nothing for the lists themselves; the emptied ones go when
        // there are many.
        if self.by_capacity.len() >= MAX_CAPACITIES && !self.by_capacity.contains_key(&b.capacity())
        {
            self.by_capacity.retain(|_, same| !same.is_empty());
        }
        self.by_capacity.entry(b.capacity()).or_default().push(b);
        self.count += 1;
    }
}

/// Makes `b` a buffer of at least `len` elements: from this thread's pool if it has none yet,
/// else grown (a block buffer kept from the previous block or section; never shortened, see
/// [`take_buf`]).
pub(crate) fn fit_buf<T: Pooled>(b: &mut Vec<T>, len: usize) {
    if b.capacity() == 0 {
        *b = take_buf(len);
    } else if b.len() < len {
        b.resize(len, T::default());
    }
}

/// Returns buffers to this thread's pool.
pub(crate) fn give_bufs<T: Pooled>(bufs: impl IntoIterator<Item = Vec<T>>) {
    T::pool().with(|p| {
        let mut p = p.borrow_mut();
        for b in bufs {
            p.give(b);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{fit_buf, give_bufs, take_buf, Pool, MAX_CAPACITIES};

    #[test]
    fn a_call_holding_hundreds_of_buffers_gets_them_all_back_next_time() {
        std::thread::spawn(|| {
            // 300 buffers at once (a large stencil's block buffers and registers), marked.
            let bufs: Vec<Vec<f64>> = (0..300)
                .map(|i| {
                    let mut b = take_buf::<f64>(100 + i);
                    b.fill(i as f64 + 1.0);
                    b
                })
                .collect();
            give_bufs(bufs);
            // The next call takes as many of each size: every one comes from the pool, the
            // smallest that fits (its marks are there: nothing was allocated and zeroed).
            for i in 0..300 {
                let b = take_buf::<f64>(100 + i);
                assert_eq!(b.len(), 100 + i);
                assert!(
                    b.iter().all(|&v| v == i as f64 + 1.0),
                    "buffer {i} was not reused"
                );
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn emptied_capacity_lists_stay_but_only_a_few() {
        let mut p = Pool::<f64>::new();
        p.give(vec![1.0; 10]);
        let b = p.take(10).unwrap();
        // Its list stays, empty, for the buffer's return.
        assert_eq!((p.count, p.by_capacity.len()), (0, 1));
        p.give(b);
        assert_eq!((p.count, p.by_capacity.len()), (1, 1));
        // Many capacities taken and given back once each: the emptied lists are dropped once
        // there are too many.
        for n in 100..400 {
            p.give(vec![2.0; n]);
            assert_eq!(p.take(n).unwrap().capacity(), n);
            assert!(p.by_capacity.len() <= MAX_CAPACITIES);
        }
        // A take passes over emptied lists: the smallest buffer held that fits...
        assert_eq!(p.take(5).unwrap().capacity(), 10);
        // ...and with none that fits, the largest held (to be grown); none at all: None.
        p.give(vec![3.0; 50]);
        p.give(vec![3.0; 20]);
        assert_eq!(p.take(1000).unwrap().capacity(), 50);
        assert_eq!(p.take(1000).unwrap().capacity(), 20);
        assert!(p.take(1).is_none());
        assert_eq!(p.count, 0);
    }

    #[test]
    fn buffers_are_never_shortened_so_growing_again_fills_nothing() {
        // A fresh thread: an empty pool of its own.
        std::thread::spawn(|| {
            let mut big = take_buf::<f64>(1000);
            assert_eq!(big.len(), 1000);
            assert!(big.iter().all(|&v| v == 0.0));
            big.fill(7.0);
            give_bufs([big]);
            // A small request takes the buffer whole: its length stays.
            let small = take_buf::<f64>(10);
            assert!(small.len() >= 10 && small.capacity() >= 1000);
            give_bufs([small]);
            // Asked for the whole length again: the old values are still there (nothing was
            // filled with zeros), as the pool's callers expect ("values left by earlier use").
            let again = take_buf::<f64>(1000);
            assert_eq!(again.len(), 1000);
            assert!(again.iter().all(|&v| v == 7.0));
            // Growing past it zeroes only the new part.
            let mut b = again;
            fit_buf(&mut b, 1500);
            assert!(b[..1000].iter().all(|&v| v == 7.0) && b[1000..1500].iter().all(|&v| v == 0.0));
            fit_buf(&mut b, 20);
            assert_eq!(b.len(), 1500);
        })
        .join()
        .unwrap();
    }
}
