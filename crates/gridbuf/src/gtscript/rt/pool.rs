//! Each thread's pool of reusable buffers (block buffers, tape registers, stored temporaries).

use crate::gtscript::rt::lane::Elem;

/// Buffers a pool keeps per thread at most.
const POOL_MAX: usize = 64;

/// A buffer of `len` elements from this thread's pool (values left by earlier use, zero where
/// it grows), or a new zeroed one.
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
    v.resize(len, T::ZERO);
    v
}

/// Makes `b` a buffer of `len` elements: from this thread's pool if it has none yet, else
/// resized (a block buffer kept from the previous block or section).
pub(crate) fn fit_buf<T: Elem>(b: &mut Vec<T>, len: usize) {
    if b.capacity() == 0 {
        *b = take_buf(len);
    } else if b.len() != len {
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
