//! Each thread's pool of reusable buffers (block buffers, tape registers, stored temporaries).

use crate::gtscript::rt::lane::Elem;

/// Buffers a pool keeps per thread at most.
const POOL_MAX: usize = 64;

/// A buffer of at least `len` elements from this thread's pool (values left by earlier use,
/// zero where it grows), or a new zeroed one. A buffer is never shortened: a later request
/// for more of it then fills nothing (pace's and PyFV3's stencils took the same buffers for
/// temporaries and for registers in turn, and zeroed them again at every call: a tenth of
/// `yppm.compute_y_flux`'s time). Its users index it by their own sizes.
pub(crate) fn take_buf<T: Elem>(len: usize) -> Vec<T> {
    let mut v = T::pool()
        .with(|p| {
            let mut p = p.borrow_mut();
            // The smallest that is big enough: a large block buffer handed out for a small
            // register would leave the next large request to reallocate (and zero) memory.
            let best = (0..p.len())
                .filter(|&i| p[i].capacity() >= len)
                .min_by_key(|&i| p[i].capacity());
            best.map(|i| p.swap_remove(i)).or_else(|| p.pop())
        })
        .unwrap_or_default();
    if v.len() < len {
        v.resize(len, T::ZERO);
    }
    v
}

/// Makes `b` a buffer of at least `len` elements: from this thread's pool if it has none yet,
/// else grown (a block buffer kept from the previous block or section; never shortened, see
/// [`take_buf`]).
pub(crate) fn fit_buf<T: Elem>(b: &mut Vec<T>, len: usize) {
    if b.capacity() == 0 {
        *b = take_buf(len);
    } else if b.len() < len {
        b.resize(len, T::ZERO);
    }
}

/// Returns buffers to this thread's pool.
pub(crate) fn give_bufs<T: Elem>(bufs: impl IntoIterator<Item = Vec<T>>) {
    T::pool().with(|p| {
        let mut p = p.borrow_mut();
        for b in bufs {
            if b.capacity() > 0 && p.len() < POOL_MAX {
                p.push(b);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{fit_buf, give_bufs, take_buf};

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
