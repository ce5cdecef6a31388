//! Horizontal regions (`with horizontal(region[I[0], :])`): GT4Py's rule for how far a
//! statement restricted to a region reads beyond the compute domain, and the boxes a region
//! covers in a given domain; and the planning step that computes both extents ([`extents`]).
//!
//! Two extents are planned per quantity. The *reach* ignores regions: every tile computes its
//! temporaries over its core widened by the reach, so tile-local values never depend on another
//! tile. The *extent* is GT4Py's: where the region lies along an axis restricts what the
//! statement reads on that side of the domain (a statement in `region[I[0], :]` reading
//! `a[1, 0, 0]` needs no halo of `a` on the high I side). At run time every statement's box is
//! its tile's box widened by the reach, cut to the region and to the domain widened by its
//! target's extent; both bounds are planned, so every read stays inside what is loaded, and
//! every field is read only within the extent the binder checked against its halo.

use crate::error::Result;
use crate::gtscript::ir::{def_error, Level, Program, Region};
use crate::gtscript::plan::model::Reach;
use crate::gtscript::plan::tape::quantity;

/// Where one side of a statement's box lies, after cutting it to a region.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Side {
    /// This far beyond the domain's edge (negative: inside).
    Beyond(i32),
    /// At the region's bound on the other end of the domain (GT4Py counts no extent for it;
    /// [`Restricted::min_domain`] keeps that true).
    Far,
}

/// What a statement restricted to a region reads, as GT4Py plans it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Restricted {
    /// Per axis I, J: the (lower, upper) sides of the statement's box.
    sides: [(Side, Side); 2],
    /// Per axis: the bound on the far side of the domain, where `sides` says `Far` (lower:
    /// the region's start counted from the end; upper: its end counted from the start).
    far: [(i64, i64); 2],
}

/// GT4Py's `mask_overlap_with_extent` along one axis: the box `[-lo, n + hi)` of a statement
/// cut to the region's `[start, end)`; `None` when GT4Py finds no overlap.
fn cut(lo: i32, hi: i32, start: Option<Level>, end: Option<Level>) -> Option<(Side, Side)> {
    let lower = match start {
        None => Side::Beyond(lo),
        Some(s) if !s.from_end => Side::Beyond(lo.min(-(s.offset as i32))),
        Some(_) => Side::Far,
    };
    let upper = match end {
        None => Side::Beyond(hi),
        Some(e) if e.from_end => Side::Beyond(hi.min(e.offset as i32)),
        Some(_) => Side::Far,
    };
    // GT4Py drops the access when the region lies wholly before (after) the box and its other
    // bound counts from the same end of the domain.
    let start_before = match start {
        None => true,
        Some(s) => !s.from_end && -lo > s.offset as i32,
    };
    if let (true, Some(e)) = (start_before, end) {
        if !e.from_end && e.offset as i32 <= -lo {
            return None;
        }
    }
    let end_after = match end {
        None => true,
        Some(e) => e.from_end && hi < e.offset as i32,
    };
    if let (true, Some(s)) = (end_after, start) {
        if s.from_end && s.offset as i32 > hi {
            return None;
        }
    }
    Some((lower, upper))
}

impl Restricted {
    /// The box of a statement with extent `r` (I lower, I upper, J lower, J upper) cut to
    /// `region`; `None` when GT4Py finds that they do not overlap.
    pub(crate) fn new(r: Reach, region: &Region) -> Option<Restricted> {
        let mut sides = [(Side::Far, Side::Far); 2];
        let mut far = [(0, 0); 2];
        for a in 0..2 {
            let (start, end) = region.bounds[a];
            sides[a] = cut(r[2 * a], r[2 * a + 1], start, end)?;
            far[a] = (start.map_or(0, |s| s.offset), end.map_or(0, |e| e.offset));
        }
        Some(Restricted { sides, far })
    }

    /// How far a read at horizontal offset `off` reaches beyond the domain (never less than
    /// zero, as GT4Py unions every access's extent with zero).
    pub(crate) fn read(&self, off: [i32; 3]) -> Reach {
        let mut out = [0; 4];
        for a in 0..2 {
            let (lo, hi) = self.sides[a];
            if let Side::Beyond(l) = lo {
                out[2 * a] = (l - off[a]).max(0);
            }
            if let Side::Beyond(h) = hi {
                out[2 * a + 1] = (h + off[a]).max(0);
            }
        }
        out
    }

    /// The fewest points per axis I, J for which the `Far` sides hold: a box that starts at
    /// `n + s` and is read at offset `o` stays at or above index 0 when `n >= -(s + o)`, one
    /// that ends at `e` stays below `n` when `n >= e + o`.
    pub(crate) fn min_domain(&self, off: [i32; 3]) -> [i64; 2] {
        let mut out = [0; 2];
        for a in 0..2 {
            let (lo, hi) = self.sides[a];
            let o = off[a] as i64;
            if lo == Side::Far {
                out[a] = out[a].max(-(self.far[a].0 + o));
            }
            if hi == Side::Far {
                out[a] = out[a].max(self.far[a].1 + o);
            }
        }
        out
    }
}

/// The box `[lo, hi)` per axis I, J (as I lower, I upper, J lower, J upper) a region covers
/// in a domain of `n` points; unbounded sides are far beyond any domain.
pub(crate) fn region_box(region: Option<&Region>, n: [usize; 2]) -> [i64; 4] {
    const FAR: i64 = 1 << 40;
    let mut out = [-FAR, FAR, -FAR, FAR];
    if let Some(r) = region {
        for a in 0..2 {
            if let Some(s) = r.bounds[a].0 {
                out[2 * a] = s.at(n[a]);
            }
            if let Some(e) = r.bounds[a].1 {
                out[2 * a + 1] = e.at(n[a]);
            }
        }
    }
    out
}

pub(crate) const ZERO: Reach = [0; 4];

pub(crate) fn union(a: Reach, b: Reach) -> Reach {
    [
        a[0].max(b[0]),
        a[1].max(b[1]),
        a[2].max(b[2]),
        a[3].max(b[3]),
    ]
}

/// A region reached from `r` by reading at `off`.
pub(crate) fn shifted(r: Reach, off: [i32; 3]) -> Reach {
    [r[0] - off[0], r[1] + off[0], r[2] - off[1], r[3] + off[1]]
}

/// What [`extents`] plans.
pub(crate) struct Extents {
    /// Per quantity: how far beyond the domain it is needed (at least zero on every side).
    pub(crate) reach: Vec<Reach>,
    /// The fewest points per axis I, J for which the extents of regions hold.
    pub(crate) min_domain: [i64; 2],
    /// Per quantity: the union of its accesses' extents alone, not widened to the domain's
    /// edge (GT4Py's field extents: a field read only at `a[1, 0, 0]` has the lower extent -1);
    /// `None` where it is not read. Region reads count at least zero, as in GT4Py.
    pub(crate) accessed: Vec<Option<Reach>>,
}

/// How far beyond the domain every quantity is needed: backwards over the statements until
/// nothing changes. With `regions`, a statement restricted to a region reads only what GT4Py
/// plans for it (see `extents`); `min_domain` is then the fewest points per axis I, J for
/// which that holds.
pub(crate) fn extents(p: &Program, n_comp: usize, regions: bool) -> Result<Extents> {
    let nq = n_comp + p.temps.len();
    let mut reach = vec![ZERO; nq];
    let mut min_domain = [0i64; 2];
    let mut accessed: Vec<Option<Reach>> = vec![None; nq];
    let access = |accessed: &mut Vec<Option<Reach>>, q: usize, r: Reach| {
        accessed[q] = Some(accessed[q].map_or(r, |a| union(a, r)));
    };
    for round in 0..33 {
        let before = reach.clone();
        // Recomputed in every round: the last one's is the fixed point's.
        accessed.iter_mut().for_each(|a| *a = None);
        for s in p.sections.iter().rev() {
            for st in s.stmts.iter().rev() {
                let tq = quantity(p, st.target);
                let se = if tq >= n_comp { reach[tq] } else { ZERO };
                let cut = match (&st.region, regions) {
                    (Some(r), true) => match Restricted::new(se, r) {
                        Some(c) => Some(c),
                        None => continue,
                    },
                    _ => None,
                };
                st.reads(&mut |a, off| {
                    let q = quantity(p, a);
                    let r = match &cut {
                        Some(c) => {
                            let m = c.min_domain(off);
                            min_domain = [min_domain[0].max(m[0]), min_domain[1].max(m[1])];
                            c.read(off)
                        }
                        None => shifted(se, off),
                    };
                    access(&mut accessed, q, r);
                    reach[q] = union(reach[q], union(ZERO, r));
                });
                // A read at a run-time K level reads at the point itself horizontally.
                st.var_reads(&mut |a, _| {
                    let q = quantity(p, a);
                    let r = match &cut {
                        Some(c) => c.read([0; 3]),
                        None => se,
                    };
                    access(&mut accessed, q, r);
                    reach[q] = union(reach[q], union(ZERO, r));
                });
            }
        }
        if before == reach {
            return Ok(Extents {
                reach,
                min_domain,
                accessed,
            });
        }
        if round == 32 {
            break;
        }
    }
    Err(def_error(
        p.sections
            .iter()
            .find_map(|s| s.stmts.first())
            .map_or(0, |s| s.line),
        "the horizontal extents of the temporaries grow without bound (a temporary feeds itself at a horizontal offset)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lv(from_end: bool, offset: i64) -> Option<Level> {
        Some(Level { from_end, offset })
    }

    /// `region[I[0], :]` (start S 0, end S 1) reading `a[1, 0, 0]` and `a[-1, 0, 0]`: no halo
    /// above (the region is at the start), one below for the read at -1.
    #[test]
    fn a_region_at_the_start_reads_no_halo_above() {
        let reg = Region {
            bounds: [(lv(false, 0), lv(false, 1)), (None, None)],
        };
        let r = Restricted::new([0; 4], &reg).expect("overlaps");
        assert_eq!(r.read([1, 0, 0]), [0, 0, 0, 0]);
        assert_eq!(r.read([-1, 0, 0]), [1, 0, 0, 0]);
        assert_eq!(r.read([0, 2, 0]), [0, 0, 0, 2]);
        // The box ends at index 1; read at +1 it stays inside from 2 points on.
        assert_eq!(r.min_domain([1, 0, 0]), [2, 0]);
    }

    /// `region[I[-1] + 1, :]` (in the halo above the end): a temporary with extent 1 above is
    /// computed there, so a read at +1 reaches two beyond the end. GT4Py drops accesses of a
    /// region that starts after the box ends (`region[I[-1] + 2, :]` for extent 0).
    #[test]
    fn a_region_beyond_the_end() {
        let reg = Region {
            bounds: [(lv(true, 0), lv(true, 1)), (None, None)],
        };
        let r = Restricted::new([0, 1, 0, 0], &reg).expect("overlaps");
        assert_eq!(r.read([1, 0, 0]), [0, 2, 0, 0]);
        let beyond = Region {
            bounds: [(lv(true, 1), lv(true, 2)), (None, None)],
        };
        assert_eq!(Restricted::new([0; 4], &beyond), None);
        assert_eq!(
            region_box(Some(&reg), [10, 4]),
            [10, 11, -(1 << 40), 1 << 40]
        );
    }
}
