//! Filling memory with a repeated element at memory speed, on all cores for large blocks.

use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Blocks larger than this are filled in parallel: below it, thread start-up costs more than it
/// saves.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
/// Bytes each parallel task fills: large enough to amortise scheduling, small enough to balance.
const CHUNK_BYTES: usize = 1 << 18;
/// Size of the seed block that is written element by element and then copied from L1 cache.
const SEED_BYTES: usize = 4096;

/// Writes `pattern` (the bytes of one element) over `dst` repeatedly.
///
/// `dst.len()` should be a multiple of `pattern.len()`; a trailing partial element gets the
/// pattern's leading bytes. An empty pattern leaves `dst` untouched.
pub fn fill_pattern(dst: &mut [MaybeUninit<u8>], pattern: &[u8]) {
    let p = pattern.len();
    if p == 0 || dst.is_empty() {
        return;
    }
    if dst.len() < PARALLEL_MIN_BYTES {
        fill_serial(dst, pattern);
        return;
    }
    let chunk = (CHUNK_BYTES / p).max(1) * p;
    dst.par_chunks_mut(chunk)
        .for_each(|c| fill_serial(c, pattern));
}

fn fill_serial(dst: &mut [MaybeUninit<u8>], pattern: &[u8]) {
    let p = pattern.len();
    // Seed: a whole number of elements, at most SEED_BYTES (or one element if that is larger).
    let seed_len = dst.len().min((SEED_BYTES / p).max(1) * p);
    let (seed, rest) = dst.split_at_mut(seed_len);
    for (d, s) in seed.iter_mut().zip(pattern.iter().cycle()) {
        d.write(*s);
    }
    // `rest` starts at a multiple of `p`, so copying the seed keeps the element phase.
    for chunk in rest.chunks_mut(seed_len) {
        chunk.copy_from_slice(&seed[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(len: usize, pattern: &[u8]) -> Vec<u8> {
        let mut v = vec![MaybeUninit::new(0xAAu8); len];
        fill_pattern(&mut v, pattern);
        v.into_iter().map(|b| unsafe { b.assume_init() }).collect()
    }

    #[test]
    fn fills_small_and_large() {
        for len in [0usize, 8, 24, 8 * 1000, 3 << 20] {
            let v = filled(len, &1.5f64.to_ne_bytes());
            assert!(v.chunks(8).all(|c| c == 1.5f64.to_ne_bytes()), "len {len}");
        }
        let v = filled(3 * 10_000, &[1, 2, 3]);
        assert!(v.chunks(3).all(|c| c == [1, 2, 3]));
    }
}
