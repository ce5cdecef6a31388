//! Property tests of the decomposition and the halo exchange plan, without MPI: every rank of a
//! random process grid is simulated in this process, packs its messages, the buffers are
//! "delivered" to the peers, unpacked, and every point of every field is compared with what it
//! must hold (its own value in the interior, its mirror in exchanged halos, the sentinel
//! elsewhere).

#![allow(clippy::needless_range_loop)]

use gridbuf::distribution::decomposition::Decomposition;
use gridbuf::distribution::halo_exchange::{ExchangePlan, FieldLayout};
use proptest::prelude::*;

/// A field of the test: layout on every rank is derived from these.
#[derive(Clone, Debug)]
struct FieldSpec {
    itemsize: usize,
    /// Array axis order: position of each decomposed dim, then the extra axis (if any) last.
    perm: Vec<usize>,
    /// Memory order: axes from innermost to outermost.
    mem: Vec<usize>,
    extra: usize,
    halo: Vec<(usize, usize)>,
    widths: Vec<(usize, usize)>,
    stagger: Vec<usize>,
    pad: usize,
}

#[derive(Clone, Debug)]
struct Case {
    global: Vec<usize>,
    procs: Vec<usize>,
    periodic: Vec<bool>,
    corners: bool,
    fields: Vec<FieldSpec>,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|nd| {
            (
                proptest::collection::vec((1usize..=3, 0usize..=4, any::<bool>()), nd),
                any::<bool>(),
                proptest::collection::vec(
                    (
                        prop_oneof![Just(2usize), Just(4), Just(8)],
                        proptest::collection::vec(
                            (0usize..=2, 0usize..=2, 0usize..=2, 0usize..=2, 0usize..=1),
                            nd,
                        ),
                        0usize..=2,
                        any::<u64>(),
                        0usize..=3,
                    ),
                    1..=3,
                ),
            )
        })
        .prop_map(|(dims, corners, fields)| {
            let nd = dims.len();
            let procs: Vec<usize> = dims.iter().map(|d| d.0).collect();
            let global: Vec<usize> = dims.iter().map(|d| d.0 + d.0 * d.1 / 2 + d.1).collect();
            let periodic: Vec<bool> = dims.iter().map(|d| d.2).collect();
            let min_block: Vec<usize> = (0..nd).map(|d| global[d] / procs[d]).collect();
            let fields = fields
                .into_iter()
                .map(|(itemsize, per_dim, extra, seed, pad)| {
                    let ndim = nd + usize::from(extra > 0);
                    let perm = shuffle((0..ndim).collect(), seed);
                    let mem = shuffle((0..ndim).collect(), seed >> 20);
                    let halo: Vec<(usize, usize)> = per_dim.iter().map(|p| (p.0, p.1)).collect();
                    let widths = per_dim
                        .iter()
                        .enumerate()
                        .map(|(d, p)| {
                            (
                                p.2.min(p.0).min(min_block[d]),
                                p.3.min(p.1).min(min_block[d]),
                            )
                        })
                        .collect();
                    FieldSpec {
                        itemsize,
                        perm,
                        mem,
                        extra,
                        halo,
                        widths,
                        stagger: per_dim.iter().map(|p| p.4).collect(),
                        pad,
                    }
                })
                .collect();
            Case {
                global,
                procs,
                periodic,
                corners,
                fields,
            }
        })
}

fn shuffle(mut v: Vec<usize>, mut seed: u64) -> Vec<usize> {
    for i in (1..v.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (seed >> 33) as usize % (i + 1);
        v.swap(i, j);
    }
    v
}

/// The value a field holds at a global position (decomposed dims wrapped where periodic, then
/// the extra axis index), as `itemsize` bytes never all zero (zero is the sentinel).
fn value(f: usize, key: &[usize], itemsize: usize) -> Vec<u8> {
    let mut h: u64 = 0xcbf29ce484222325 ^ f as u64;
    for &k in key {
        h = (h ^ k as u64).wrapping_mul(0x100000001b3);
        h ^= h >> 29;
    }
    let mut b = h.to_le_bytes()[..itemsize].to_vec();
    b[0] |= 1;
    b
}

struct Local {
    shape: Vec<usize>,
    strides: Vec<isize>,
    mem: Vec<u8>,
    /// For every decomposed dim: (array axis, block start, block len).
    block: Vec<(usize, usize, usize)>,
}

fn build_local(dec: &Decomposition, coords: &[usize], f: usize, s: &FieldSpec) -> Local {
    let nd = dec.ndim();
    let ndim = s.perm.len();
    let mut shape = vec![0; ndim];
    let mut block = Vec::new();
    for d in 0..nd {
        let a = s.perm[d];
        let (start, stop) = dec.block(d, coords[d]);
        shape[a] = s.halo[d].0 + (stop - start) + s.stagger[d] + s.halo[d].1;
        block.push((a, start, stop - start));
    }
    if ndim > nd {
        shape[s.perm[nd]] = s.extra;
    }
    let mut strides = vec![0isize; ndim];
    let mut step = s.itemsize;
    for (i, &a) in s.mem.iter().enumerate() {
        strides[a] = step as isize;
        step *= shape[a] + if i == 0 { s.pad } else { 0 };
    }
    let mut local = Local {
        shape: shape.clone(),
        strides,
        mem: vec![0u8; step.max(1)],
        block,
    };
    // Interior values.
    for idx in indices(&shape) {
        if let Some(key) = interior_key(dec, s, &local, &idx) {
            let off = offset(&local, &idx);
            local.mem[off..off + s.itemsize].copy_from_slice(&value(f, &key, s.itemsize));
        }
    }
    local
}

fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|v| {
                (0..n).map(move |i| {
                    let mut w = v.clone();
                    w.push(i);
                    w
                })
            })
            .collect();
    }
    out
}

fn offset(l: &Local, idx: &[usize]) -> usize {
    idx.iter()
        .zip(&l.strides)
        .map(|(&i, &s)| i as isize * s)
        .sum::<isize>() as usize
}

/// The key of a point inside the field's interior along every decomposed dim.
fn interior_key(
    dec: &Decomposition,
    s: &FieldSpec,
    l: &Local,
    idx: &[usize],
) -> Option<Vec<usize>> {
    let mut key = Vec::new();
    for (d, &(a, start, n)) in l.block.iter().enumerate() {
        let i = idx[a];
        if i < s.halo[d].0 || i >= s.halo[d].0 + n + s.stagger[d] {
            return None;
        }
        key.push(global_key(dec, d, (start + i - s.halo[d].0) as i64));
    }
    if s.perm.len() > dec.ndim() {
        key.push(idx[s.perm[dec.ndim()]]);
    }
    Some(key)
}

fn global_key(dec: &Decomposition, d: usize, g: i64) -> usize {
    let n = dec.global()[d] as i64;
    if dec.periodic()[d] {
        g.rem_euclid(n) as usize
    } else {
        g as usize
    }
}

/// What a point must hold after the exchange.
fn expected(
    dec: &Decomposition,
    coords: &[usize],
    corners: bool,
    f: usize,
    s: &FieldSpec,
    l: &Local,
    idx: &[usize],
) -> Vec<u8> {
    let sentinel = vec![0u8; s.itemsize];
    let mut offset = vec![0i8; dec.ndim()];
    let mut key = Vec::new();
    for (d, &(a, start, n)) in l.block.iter().enumerate() {
        let (hl, _) = s.halo[d];
        let (wl, wh) = s.widths[d];
        let i = idx[a] as i64;
        let (lo, hi) = (hl as i64, (hl + n + s.stagger[d]) as i64);
        if i < lo - wl as i64 || i >= hi + wh as i64 {
            return sentinel;
        }
        if i < lo {
            offset[d] = -1;
        } else if i >= hi {
            offset[d] = 1;
        }
        key.push(global_key(dec, d, start as i64 + i - hl as i64));
    }
    if s.perm.len() > dec.ndim() {
        key.push(idx[s.perm[dec.ndim()]]);
    }
    let nonzero = offset.iter().filter(|&&o| o != 0).count();
    if nonzero > 1 && !corners {
        return sentinel;
    }
    if nonzero > 0 && dec.shift(coords, &offset).is_none() {
        return sentinel;
    }
    // Non-periodic keys beyond the edge cannot occur here (no neighbour, returned above).
    value(f, &key, s.itemsize)
}

fn layouts(locals: &[Local], c: &Case) -> Vec<FieldLayout> {
    locals
        .iter()
        .zip(&c.fields)
        .map(|(l, s)| FieldLayout {
            shape: l.shape.clone(),
            strides: l.strides.clone(),
            itemsize: s.itemsize,
            axes: (0..c.global.len()).map(|d| Some(s.perm[d])).collect(),
            halo: s.halo.clone(),
            widths: s.widths.clone(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn simulated_exchange_fills_every_halo(c in case()) {
        let names: Vec<&str> = ["I", "J", "K"][..c.global.len()].to_vec();
        let dec = Decomposition::new(&names, &c.global, &c.procs, &c.periodic).unwrap();
        let size = dec.size();
        let mut ranks: Vec<Vec<Local>> = (0..size)
            .map(|r| {
                let coords = dec.coords(r).unwrap();
                c.fields.iter().enumerate().map(|(f, s)| build_local(&dec, &coords, f, s)).collect()
            })
            .collect();
        let plans: Vec<ExchangePlan> = (0..size)
            .map(|r| ExchangePlan::new(&dec, r, &layouts(&ranks[r], &c), c.corners).unwrap())
            .collect();
        // Pack everything first (as MPI would, before any receive completes). Even ranks pack
        // and unpack every message in one pass (`pack_all`, `unpack_all`), odd ranks message
        // by message: the bytes must be the same.
        let mut sent: Vec<Vec<Vec<u8>>> = Vec::new();
        for r in 0..size {
            let bases: Vec<*const u8> = ranks[r].iter().map(|l| l.mem.as_ptr()).collect();
            let mut bufs: Vec<Vec<u8>> =
                plans[r].messages.iter().map(|m| vec![0u8; m.send_bytes]).collect();
            if r % 2 == 0 {
                let mut slices: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                // SAFETY: bases point at element zero of live buffers with the plan's layout.
                unsafe { plans[r].pack_all(&bases, &mut slices, r % 4 == 0) };
            } else {
                for (m, buf) in bufs.iter_mut().enumerate() {
                    // SAFETY: as above.
                    unsafe { plans[r].pack(m, &bases, buf, m % 2 == 0) };
                }
            }
            sent.push(bufs);
        }
        for r in 0..size {
            let bases: Vec<*mut u8> = ranks[r].iter_mut().map(|l| l.mem.as_mut_ptr()).collect();
            let mut received: Vec<&[u8]> = Vec::new();
            for (m, msg) in plans[r].messages.iter().enumerate() {
                let p = msg.peer;
                let pm = plans[p].messages.iter().position(|x| x.peer == r).expect("peer lists me");
                let buf = &sent[p][pm];
                prop_assert_eq!(buf.len(), msg.recv_bytes);
                // SAFETY: as above; fields are distinct allocations. A message to this rank
                // itself is copied straight from interior to halo (the interior was packed for
                // every other message already, and unpacking writes halos only).
                unsafe {
                    if p == r {
                        plans[r].copy_local(m, &bases)
                    } else if r % 2 == 1 {
                        plans[r].unpack(m, &bases, buf, m % 2 == 1)
                    }
                };
                received.push(if p == r { &[] } else { buf });
            }
            if r % 2 == 0 {
                // SAFETY: as above.
                unsafe { plans[r].unpack_all(&bases, &received, r % 4 == 2) };
            }
        }
        for (r, fields) in ranks.iter().enumerate() {
            let coords = dec.coords(r).unwrap();
            for (f, (l, s)) in fields.iter().zip(&c.fields).enumerate() {
                for idx in indices(&l.shape) {
                    let off = offset(l, &idx);
                    let want = expected(&dec, &coords, c.corners, f, s, l, &idx);
                    prop_assert_eq!(&l.mem[off..off + s.itemsize], &want[..], "rank {} field {} index {:?}", r, f, idx);
                }
            }
        }
    }

    #[test]
    fn blocks_partition_and_owner_inverts(g in 1usize..200, p in 1usize..20) {
        prop_assume!(p <= g);
        let dec = Decomposition::new(&["I"], &[g], &[p], &[false]).unwrap();
        let mut next = 0;
        for c in 0..p {
            let (s, e) = dec.block(0, c);
            prop_assert_eq!(s, next);
            prop_assert!(e - s == g / p || e - s == g / p + 1);
            for i in s..e {
                prop_assert_eq!(dec.owner(0, i).unwrap(), c);
            }
            next = e;
        }
        prop_assert_eq!(next, g);
    }

    #[test]
    fn neighbour_relation_is_symmetric(procs in proptest::collection::vec(1usize..=4, 1..=3), periodic in proptest::collection::vec(any::<bool>(), 3), corners in any::<bool>()) {
        let nd = procs.len();
        let global: Vec<usize> = procs.iter().map(|p| p * 3).collect();
        let dec = Decomposition::new(&["I", "J", "K"][..nd], &global, &procs, &periodic[..nd]).unwrap();
        for r in 0..dec.size() {
            for nb in dec.neighbours(r, corners).unwrap() {
                let back: Vec<i8> = nb.offset.iter().map(|o| -o).collect();
                let theirs = dec.neighbours(nb.rank, corners).unwrap();
                prop_assert!(theirs.iter().any(|t| t.offset == back && t.rank == r));
            }
        }
    }
}

#[test]
fn bad_widths_and_shapes_are_rejected() {
    let dec = Decomposition::new(&["I"], &[10], &[2], &[true]).unwrap();
    let good = FieldLayout {
        shape: vec![9, 4],
        strides: vec![32, 8],
        itemsize: 8,
        axes: vec![Some(0)],
        halo: vec![(2, 2)],
        widths: vec![(2, 1)],
    };
    assert!(ExchangePlan::new(&dec, 0, std::slice::from_ref(&good), true).is_ok());
    let wide = FieldLayout {
        widths: vec![(3, 1)],
        ..good.clone()
    };
    let msg = ExchangePlan::new(&dec, 0, &[wide], true)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("widths of fields[0] along I"), "{msg}");
    let short = FieldLayout {
        shape: vec![7, 4],
        ..good.clone()
    };
    let msg = ExchangePlan::new(&dec, 0, &[short], true)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("interior has 3 points"), "{msg}");
    // A 3-point halo copied from a neighbour owning 2 points.
    let dec = Decomposition::new(&["I"], &[5], &[2], &[true]).unwrap();
    let thin = FieldLayout {
        shape: vec![9, 4],
        halo: vec![(3, 3)],
        widths: vec![(3, 3)],
        ..good
    };
    let msg = ExchangePlan::new(&dec, 0, &[thin], true)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("interior points of the neighbour"), "{msg}");
}

/// Messages over a mebibyte are packed by several threads: one periodic rank, its own
/// neighbour, with an I-halo of 40 planes (1.1 MiB per side), checked against the wrap.
#[test]
fn large_messages_pack_in_parallel_correctly() {
    let (h, n, nj, nk) = (40usize, 50usize, 60usize, 60usize);
    let ni = n + 2 * h;
    let dec = Decomposition::new(&["I"], &[n], &[1], &[true]).unwrap();
    // F order with I unit stride, so halo rows are short runs; and a padded J stride.
    let (si, sj) = (8usize, 8 * (ni + 3));
    let sk = sj * nj;
    let mut mem = vec![0f64; sk / 8 * nk];
    let at = |i: usize, j: usize, k: usize| (i * si + j * sj + k * sk) / 8;
    for k in 0..nk {
        for j in 0..nj {
            for i in h..h + n {
                mem[at(i, j, k)] = ((i - h) * 10_000 + j * 100 + k) as f64 + 0.5;
            }
        }
    }
    let layout = FieldLayout {
        shape: vec![ni, nj, nk],
        strides: vec![si as isize, sj as isize, sk as isize],
        itemsize: 8,
        axes: vec![Some(0)],
        halo: vec![(h, h)],
        widths: vec![(h, h)],
    };
    let plan = ExchangePlan::new(&dec, 0, &[layout], true).unwrap();
    assert_eq!(plan.messages.len(), 1);
    let m = &plan.messages[0];
    assert!(m.send_bytes >= 1 << 20);
    let mut buf = vec![0u8; m.send_bytes];
    let base = mem.as_mut_ptr() as *mut u8;
    // SAFETY: `base` is element zero of `mem`, which has the layout's shape and strides.
    unsafe {
        plan.pack(0, &[base as *const u8], &mut buf, true);
        plan.unpack(0, &[base], &buf, true);
    }
    for k in 0..nk {
        for j in 0..nj {
            for i in 0..ni {
                let g = (i + n - h) % n;
                assert_eq!(
                    mem[at(i, j, k)],
                    (g * 10_000 + j * 100 + k) as f64 + 0.5,
                    "{i} {j} {k}"
                );
            }
        }
    }
}

/// Sweeps: on an I-unit layout split along I, the low and high I-sides of one field (rows that
/// share memory) are one sweep of two members, and the remote sweeps cover every region of
/// every message to another process once.
#[test]
fn sides_of_one_row_are_swept_together() {
    // Two processes along I (periodic), one along J (its own neighbour); I unit stride.
    let dec = Decomposition::new(&["I", "J"], &[20, 8], &[2, 1], &[true, true]).unwrap();
    let (ni, nj, nk) = (16usize, 14usize, 4usize);
    let field = FieldLayout {
        shape: vec![ni, nj, nk],
        strides: vec![8, 8 * ni as isize, 8 * (ni * nj) as isize],
        itemsize: 8,
        axes: vec![Some(0), Some(1)],
        halo: vec![(3, 3), (3, 3)],
        widths: vec![(3, 3), (3, 3)],
    };
    let plan = ExchangePlan::new(&dec, 0, &[field.clone(), field], true).unwrap();
    let peers: Vec<usize> = plan.messages.iter().map(|m| m.peer).collect();
    assert_eq!(peers, vec![0, 1]);
    let remote = &plan.messages[1];
    for sweeps in [&plan.send_sweeps, &plan.recv_sweeps, &remote.send_sweeps] {
        // Per field: one sweep of the I-sides (low and high of every row), one of the corners.
        let sides: Vec<_> = sweeps
            .iter()
            .filter(|s| s.walk_counts == vec![nk, 8] && s.run == 24)
            .collect();
        assert_eq!(sides.len(), 2);
        for (f, s) in sides.iter().enumerate() {
            assert_eq!(s.members.len(), 2);
            assert!(s.members.iter().all(|m| m.field == f && m.message == 1));
            assert!(s.members[0].base < s.members[1].base, "memory order");
        }
        let mut covered: Vec<(usize, usize)> = sweeps
            .iter()
            .flat_map(|s| s.members.iter().map(|m| (m.field, m.offset)))
            .collect();
        covered.sort_unstable();
        let mut regions: Vec<(usize, usize)> =
            remote.send.iter().map(|r| (r.field, r.offset)).collect();
        if std::ptr::eq(sweeps, &plan.recv_sweeps) {
            regions = remote.recv.iter().map(|r| (r.field, r.offset)).collect();
        }
        regions.sort_unstable();
        assert_eq!(covered, regions);
    }
    // The message to this process itself (J wraps) is not in the remote sweeps.
    assert!(plan
        .send_sweeps
        .iter()
        .chain(&plan.recv_sweeps)
        .all(|s| s.members.iter().all(|m| m.message == 1)));
}
