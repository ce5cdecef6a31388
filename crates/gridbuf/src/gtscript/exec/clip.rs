//! Where statements and transfers may run: the horizontal boxes of one call, and the boxes
//! a tile's statements reach.

use crate::gtscript::plan::extents::region_box;
use crate::gtscript::plan::{Plan, Reach};

/// The horizontal boxes (I lower, I upper, J lower, J upper; domain coordinates) statements
/// and transfers are cut to in one call: each quantity's extent around the domain, and for
/// each statement that of its target, cut to its region.
pub(crate) struct Clips {
    /// Per quantity.
    pub(crate) quantity: Vec<[i64; 4]>,
    /// Per statement, section after section (`stmt` gives a section's).
    stmts: Vec<[i64; 4]>,
    /// Where each section's statements start in `stmts`, and where the last ends.
    starts: Vec<usize>,
}

impl Clips {
    pub(crate) fn new(plan: &Plan, domain: [usize; 3]) -> Clips {
        let quantity: Vec<[i64; 4]> = plan
            .extent
            .iter()
            .map(|e| {
                [
                    -(e[0] as i64),
                    domain[0] as i64 + e[1] as i64,
                    -(e[2] as i64),
                    domain[1] as i64 + e[3] as i64,
                ]
            })
            .collect();
        // One allocation for all statements (a call of a stencil of many sections made one per
        // section).
        let mut starts = Vec::with_capacity(plan.sections.len() + 1);
        let mut stmts = Vec::new();
        for sec in &plan.sections {
            starts.push(stmts.len());
            stmts.extend(sec.stmts.iter().map(|st| {
                let r = region_box(st.region.as_ref(), [domain[0], domain[1]]);
                let q = quantity[st.target as usize];
                [
                    r[0].max(q[0]),
                    r[1].min(q[1]),
                    r[2].max(q[2]),
                    r[3].min(q[3]),
                ]
            }));
        }
        starts.push(stmts.len());
        Clips {
            quantity,
            stmts,
            starts,
        }
    }

    /// The boxes of section `s`'s statements, in order.
    pub(crate) fn stmt(&self, s: usize) -> &[[i64; 4]] {
        &self.stmts[self.starts[s]..self.starts[s + 1]]
    }
}

/// The box `[lo, hi)` cut to the horizontal box `c`.
pub(crate) fn clip(lo: [i64; 3], hi: [i64; 3], c: [i64; 4]) -> ([i64; 3], [i64; 3]) {
    (
        [lo[0].max(c[0]), lo[1].max(c[2]), lo[2]],
        [hi[0].min(c[1]), hi[1].min(c[3]), hi[2]],
    )
}

pub(crate) fn reach_box(
    core_lo: [i64; 3],
    core_hi: [i64; 3],
    r: Reach,
    k: (i32, i32),
) -> ([i64; 3], [i64; 3]) {
    (
        [
            core_lo[0] - r[0] as i64,
            core_lo[1] - r[2] as i64,
            core_lo[2] - k.0 as i64,
        ],
        [
            core_hi[0] + r[1] as i64,
            core_hi[1] + r[3] as i64,
            core_hi[2] + k.1 as i64,
        ],
    )
}
