//! Filling memory with a repeated element at memory speed, on all configured threads for large
//! blocks ([`crate::runtime::threads`]).

use crate::runtime::threads::{self, Threads};
use std::mem::MaybeUninit;

/// Blocks larger than this are filled in parallel: below it, thread start-up costs more than it
/// saves.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
/// Bytes each parallel task fills in blocks below [`HUGE_CHUNK_MIN_BYTES`].
const CHUNK_BYTES: usize = 1 << 18;
/// Bytes each parallel task fills in large blocks: one transparent huge page, on huge-page
/// boundaries, so that each huge page is faulted in (zeroed by the kernel) by one thread only.
const HUGE_CHUNK_BYTES: usize = 2 << 20;
/// Blocks at least this large are cut into [`HUGE_CHUNK_BYTES`] tasks (at least four of them).
const HUGE_CHUNK_MIN_BYTES: usize = 8 << 20;
/// Size of the seed block that is written element by element and then copied from L1 cache.
const SEED_BYTES: usize = 4096;

/// Writes `pattern` (the bytes of one element) over `dst` repeatedly, on
/// [`threads::configured`] threads for large blocks.
///
/// `dst.len()` should be a multiple of `pattern.len()`; a trailing partial element gets the
/// pattern's leading bytes. An empty pattern leaves `dst` untouched.
pub fn fill_pattern(dst: &mut [MaybeUninit<u8>], pattern: &[u8]) {
    fill_pattern_with(threads::configured(), dst, pattern);
}

/// [`fill_pattern`] on `threads` threads.
///
/// A large block is cut into many more tasks than threads (256 KiB each, or one 2 MiB huge page
/// each on huge-page boundaries for blocks of 8 MiB and more), and every task can be taken by
/// any thread: a thread the operating system delays holds up one task, not a share of the block.
pub fn fill_pattern_with(threads: Threads, dst: &mut [MaybeUninit<u8>], pattern: &[u8]) {
    let p = pattern.len();
    if p == 0 || dst.is_empty() {
        return;
    }
    if dst.len() < PARALLEL_MIN_BYTES || threads.get() == 1 {
        fill_serial(dst, pattern);
        return;
    }
    let chunk = if dst.len() >= HUGE_CHUNK_MIN_BYTES {
        HUGE_CHUNK_BYTES
    } else {
        CHUNK_BYTES
    };
    let parts = split_on_boundaries(dst, chunk, p);
    threads::run_each(threads, parts, |c| fill_serial(c, pattern));
}

/// Cuts `dst` at the addresses that are multiples of `chunk` (each cut moved down to a whole
/// number of `p`-byte elements from the start, so that every part starts an element).
fn split_on_boundaries(
    dst: &mut [MaybeUninit<u8>],
    chunk: usize,
    p: usize,
) -> Vec<&mut [MaybeUninit<u8>]> {
    let start = dst.as_ptr() as usize;
    let len = dst.len();
    let mut parts = Vec::with_capacity(len / chunk + 2);
    let mut rest = dst;
    let mut done = 0usize;
    let mut cut = start.next_multiple_of(chunk) - start;
    while cut < len {
        let at = cut - cut % p;
        if at > done {
            let (head, tail) = rest.split_at_mut(at - done);
            parts.push(head);
            rest = tail;
            done = at;
        }
        cut += chunk;
    }
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts
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
        // SAFETY: every byte was initialised by `MaybeUninit::new` (and maybe overwritten).
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

    #[test]
    fn parallel_fills_keep_the_element_phase() {
        let two = Threads::new(2).unwrap();
        for (len, pattern) in [
            ((3 << 20) + 24, &[1u8, 2, 3][..]),
            (9 << 20, &7.25f64.to_ne_bytes()[..]),
            (
                (9 << 20) + 5 * 12,
                &[9u8, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2][..],
            ),
        ] {
            let mut v = vec![MaybeUninit::new(0xAAu8); len];
            // Start at an odd address so that the cuts are not multiples of the element size.
            fill_pattern_with(two, &mut v[1..], pattern);
            // SAFETY: every byte was initialised by `MaybeUninit::new` (and maybe overwritten).
            let v: Vec<u8> = v[1..].iter().map(|b| unsafe { b.assume_init() }).collect();
            let p = pattern.len();
            assert!(v.chunks(p).all(|c| c == &pattern[..c.len()]), "len {len}");
        }
    }

    #[test]
    fn cuts_cover_the_block_in_order() {
        let mut v = vec![MaybeUninit::new(0u8); 5 << 20];
        let base = v.as_ptr() as usize;
        let parts = split_on_boundaries(&mut v[3..], 1 << 18, 8);
        assert!(parts.len() >= 20);
        let mut next = base + 3;
        for part in &parts {
            assert_eq!(part.as_ptr() as usize, next);
            assert_eq!((next - base - 3) % 8, 0);
            next += part.len();
        }
        assert_eq!(next, base + (5 << 20));
    }
}
