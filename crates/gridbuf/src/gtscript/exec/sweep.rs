//! Sweeps: a tile runs each section plane by plane along one axis, every statement a fixed
//! number of planes behind the sweep front, so the temporaries between statements live in a
//! rolling window of a few planes (in cache) and each field is read in one pass in memory order.
//!
//! The block schedule (`tile::run_block`) runs each statement over a whole block before the
//! next, so a stencil whose statements read memory (the first and the last of hdiff) walks
//! memory once per such statement, and the planes between statements are recomputed at the
//! edges of every block. A sweep interleaves the statements plane by plane instead, as the
//! native kernels do (hdiff 256x256x80 on gt:cpu_ifirst: see the gtscript table of benchmarks/README.md).

use crate::error::Result;
use crate::gtscript::exec::launch::Code;
use crate::gtscript::exec::launch::{run_loop_code, run_statement};
use crate::gtscript::jit::abi::LoopCode;
use crate::gtscript::plan::{Kind, Plan, SectionSweep};
use crate::gtscript::rt::interp::STRIP;
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{Geo, Mem};
use crate::gtscript::rt::pool::{fit_buf, give_bufs, take_buf};
use crate::kernels::exec::{self, SimdTask};
use crate::runtime::interrupt::Interrupt;

/// What a sweeping tile reads.
pub(crate) struct SweepCtx<'a, T> {
    pub(crate) plan: &'a Plan,
    pub(crate) sweeps: &'a [SectionSweep],
    /// What runs each statement, and its code.
    pub(crate) code: &'a Code<'a>,
    /// Every field component, each with unit stride along `order[2]`.
    pub(crate) mems: &'a [Mem],
    pub(crate) scalars: &'a [T],
    /// Sweep axis, the other axis across planes, the unit-stride axis.
    pub(crate) order: [usize; 3],
    /// Per section: resolved [start, end).
    pub(crate) ranges: &'a [(usize, usize)],
    /// Where statements may run.
    pub(crate) clips: &'a crate::gtscript::exec::clip::Clips,
    /// The call's interrupt flag (for point functions' signature; straight runs never read it).
    pub(crate) stop: &'a Interrupt<'a>,
}

/// Runs every section of the tile with core `[lo, hi)` (I, J, K) as a sweep.
#[inline(always)]
pub(crate) fn run_sweep_tile<T: Elem>(
    ctx: &SweepCtx<'_, T>,
    lo: [i64; 3],
    hi: [i64; 3],
) -> Result<()> {
    let plan = ctx.plan;
    let nq = plan.kinds.len();
    let direct: Vec<Option<Mem>> = (0..nq)
        .map(|q| match plan.kinds[q] {
            Kind::Field { .. } => Some(ctx.mems[q]),
            _ => None,
        })
        .collect();
    let [s_axis, _, _] = ctx.order;
    let mut bufs: Vec<Vec<T>> = vec![Vec::new(); nq];
    let mut regs: Vec<Vec<T>> = (0..plan.max_regs + 1).map(|_| take_buf(STRIP)).collect();
    for (s, (sec, &(ks, ke))) in plan.sections.iter().zip(ctx.ranges).enumerate() {
        let (ks, ke) = (ks.max(lo[2] as usize), ke.min(hi[2] as usize));
        if ks >= ke {
            continue;
        }
        let sweep = &ctx.sweeps[s];
        let core_lo = [lo[0], lo[1], ks as i64];
        let core_hi = [hi[0], hi[1], ke as i64];
        let mut blo = [0i64; 3];
        let mut n = [0usize; 3];
        for a in 0..3 {
            blo[a] = core_lo[a] - sec.halo[a].0 as i64;
            n[a] = (core_hi[a] - core_lo[a]) as usize + sec.halo[a].0 + sec.halo[a].1;
        }
        let geo = Geo::ordered(blo, n, ctx.order, sweep.window);
        for &q in &sec.quantities {
            if direct[q as usize].is_none() {
                fit_buf(&mut bufs[q as usize], geo.len);
            }
        }
        // Each statement's region along every axis.
        let regions: Vec<([i64; 3], [i64; 3])> = sec
            .stmts
            .iter()
            .zip(ctx.clips.stmt(s))
            .map(|(st, &c)| {
                let (rlo, rhi) =
                    crate::gtscript::exec::clip::reach_box(core_lo, core_hi, st.reach, (0, 0));
                crate::gtscript::exec::clip::clip(rlo, rhi, c)
            })
            .collect();
        let live = |t: usize| (0..3).all(|a| regions[t].1[a] > regions[t].0[a]);
        // The sweep front runs from the first plane any statement computes to past the last.
        let (first, last) = (0..sec.stmts.len())
            .filter(|&t| live(t))
            .map(|t| (regions[t].0[s_axis], regions[t].1[s_axis], sweep.delay[t]))
            .fold((i64::MAX, i64::MIN), |(f, l), (lo, hi, d)| {
                (f.min(lo + d), l.max(hi + d))
            });
        for x in first..last {
            // Past the statements of a fused run that just ran.
            let mut skip_to = 0;
            for (t, st) in sec.stmts.iter().enumerate() {
                if t < skip_to {
                    continue;
                }
                let p = x - sweep.delay[t];
                let (mut rlo, mut rhi) = regions[t];
                if !live(t) || p < rlo[s_axis] || p >= rhi[s_axis] {
                    continue;
                }
                (rlo[s_axis], rhi[s_axis]) = (p, p + 1);
                // A straight run (tier two's fused run of float code, or a mixed-type straight
                // point run of either tier; sweeps hold no `while` loops and no run-time K
                // reads), where its statements share this one's region and delay: one pass
                // over the plane instead of one per statement.
                let shares = |lc: &&LoopCode| {
                    (t..lc.exit)
                        .all(|u| regions[u] == regions[t] && sweep.delay[u] == sweep.delay[t])
                };
                let run = match ctx.code.fused::<T>(s, t).filter(shares) {
                    Some(lc) => Some(lc),
                    None => ctx.code.point_loop::<T>(s, t)?.filter(shares),
                };
                if let Some(lc) = run.filter(|lc| lc.vk.is_empty()) {
                    run_loop_code(
                        lc,
                        &geo,
                        &mut bufs,
                        &regs,
                        &direct,
                        &[],
                        ctx.scalars,
                        rlo,
                        rhi,
                        ctx.stop,
                    )?;
                    skip_to = lc.exit;
                    continue;
                }
                let code = ctx.code.stmt::<T>(s, t)?;
                run_statement(
                    code,
                    st,
                    &geo,
                    &mut bufs,
                    &mut regs,
                    &direct,
                    &[],
                    ctx.scalars,
                    rlo,
                    rhi,
                )?;
            }
        }
    }
    give_bufs(bufs);
    give_bufs(regs);
    Ok(())
}

/// Most points of one plane of a sweep's block buffers (the unit-stride axis times a piece of
/// the other axis), whatever their bytes. Tests use small planes, so that the small domains of
/// the property tests are cut into many tiles.
const PLANE_POINTS: usize = if cfg!(test) { 40 } else { 1 << 17 };

/// Fewest points of a plane that [`SWEEP_BUFFER_BYTES`] cuts to: below that each statement's
/// set-up per row outweighs what the cache saves.
const MIN_PLANE_POINTS: usize = if cfg!(test) { 1 } else { 2048 };

/// How many bytes the block buffers of one section's planes (every buffered temporary times
/// its window) may take: planes are cut so that they stay in a core's L2 cache (half of the
/// 2 MiB of the Xeon the budget was measured on, all of a Zen 3 core's) until the sweep's
/// later statements read them back. hdiff and ppm 256x256x80, ms on tier two, budgets 128 KiB,
/// 256 KiB, 512 KiB, 1 MiB and whole planes: hdiff gt:cpu_ifirst 6.6 / 6.3 / 6.2 / 6.5 / 7.3,
/// gt:cpu_kfirst 6.5-6.9 / 6.0 / 5.8-6.1 / 6.5 / 6.4; ppm gt:cpu_ifirst 6.5 / 6.1 / 6.1-6.2 /
/// 5.9-6.5 / 9.3, gt:cpu_kfirst 6.9-7.2 / 6.5 / 6.0-6.2 / 6.0-6.3 / 7.9-8.0.
const SWEEP_BUFFER_BYTES: usize = 512 << 10;

/// Most points of one plane of `plan`'s sweeps for elements of `elem` bytes: the largest plane
/// whose buffers fit [`SWEEP_BUFFER_BYTES`] in every section, at least [`MIN_PLANE_POINTS`]
/// and at most [`PLANE_POINTS`].
pub(crate) fn plane_points(plan: &Plan, sweeps: &[SectionSweep], elem: usize) -> usize {
    let per_point = plan
        .sections
        .iter()
        .zip(sweeps)
        .map(|(sec, sweep)| {
            let buffered = sec
                .quantities
                .iter()
                .filter(|&&q| !matches!(plan.kinds[q as usize], Kind::Field { .. }))
                .count();
            buffered * sweep.window
        })
        .max()
        .unwrap_or(0)
        .saturating_mul(elem)
        .max(1);
    (SWEEP_BUFFER_BYTES / per_point).clamp(MIN_PLANE_POINTS, PLANE_POINTS)
}

/// Shortest sweep when the sweep axis is cut for parallelism: each sweep starts by filling
/// its window.
const MIN_SWEEP: usize = if cfg!(test) { 3 } else { 32 };

/// The tiles (core `[lo, hi)` per axis I, J, K) of a sweep over `domain` along `order[0]`
/// for `threads` threads: the sweep axis cut into up to four sweeps per thread of at least
/// [`MIN_SWEEP`] planes, and the other axis into pieces whose planes hold at most
/// `plane_points` points (see [`plane_points`]), more only where the sweeps alone leave a
/// thread idle.
pub(crate) fn sweep_tiles(
    domain: [usize; 3],
    order: [usize; 3],
    threads: usize,
    plane_points: usize,
) -> Vec<([i64; 3], [i64; 3])> {
    let [s, r, i] = order;
    let s_tiles = (4 * threads).min(domain[s] / MIN_SWEEP).max(1);
    let r_tiles = domain[r]
        .div_ceil((plane_points / (domain[i] + 4)).max(1))
        .max(threads.div_ceil(s_tiles))
        .clamp(1, domain[r].max(1));
    let ts = domain[s].div_ceil(s_tiles).max(1);
    let tr = domain[r].div_ceil(r_tiles).max(1);
    let mut tiles = Vec::new();
    for s0 in (0..domain[s]).step_by(ts) {
        for r0 in (0..domain[r]).step_by(tr) {
            let mut lo = [0i64; 3];
            let mut hi = [domain[0] as i64, domain[1] as i64, domain[2] as i64];
            (lo[s], hi[s]) = (s0 as i64, (s0 + ts).min(domain[s]) as i64);
            (lo[r], hi[r]) = (r0 as i64, (r0 + tr).min(domain[r]) as i64);
            tiles.push((lo, hi));
        }
    }
    tiles
}

/// The axes of a sweep (sweep axis, the other axis across planes, `inner`) when every field
/// component has unit stride along `inner`: the sweep follows the output's outermost memory
/// axis, so each field is read plane after plane in memory order.
pub(crate) fn sweep_order(
    plan: &Plan,
    mems: &[Mem],
    inner: usize,
    domain: [usize; 3],
) -> Option<[usize; 3]> {
    if !mems
        .iter()
        .all(|m| m.native && m.axes[inner] && m.strides[inner] == 1)
    {
        return None;
    }
    let out = plan.first_output.and_then(|field| {
        let q = plan
            .kinds
            .iter()
            .position(|k| matches!(k, Kind::Field { field: f, .. } if *f == field))?;
        Some(mems[q])
    })?;
    let (a, b) = match inner {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let key = |x: usize| (out.axes[x] && domain[x] > 1, out.strides[x].unsigned_abs());
    Some(if key(a) >= key(b) {
        [a, b, inner]
    } else {
        [b, a, inner]
    })
}

/// One sweeping tile, as a task of the pool.
pub(crate) struct SweepTask<'a, T> {
    pub(crate) ctx: &'a SweepCtx<'a, T>,
    pub(crate) lo: [i64; 3],
    pub(crate) hi: [i64; 3],
}

impl<T: Elem> SimdTask for SweepTask<'_, T> {
    type Output = Result<()>;
    #[inline(always)]
    fn run(self) -> Result<()> {
        let r = run_sweep_tile(self.ctx, self.lo, self.hi);
        exec::fence();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::compile;
    use proptest::prelude::*;

    const HDIFF: &str = "stencil hdiff float64\nfield inp IJK\nfield coeff IJK\nfield out IJK\n\
        temp lap\ntemp flx\ntemp fly\ncomp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 sub mul c 4.0 f 0 0 0 0 0 add add add f 0 0 -1 0 0 f 0 0 1 0 0 f 0 0 0 -1 0 f 0 0 0 1 0\n\
        stmt 2 t 1 sub t 0 1 0 0 t 0 0 0 0\n\
        stmt 3 t 2 sub t 0 0 1 0 t 0 0 0 0\n\
        stmt 4 f 2 0 sub f 0 0 0 0 0 mul f 1 0 0 0 0 sub add sub t 1 0 0 0 t 1 -1 0 0 t 2 0 0 0 t 2 0 -1 0\n";

    /// Along J, `fly` reads `lap` one plane ahead and `out` reads `fly` one plane back: they
    /// run one plane behind, and the temporaries need two planes.
    #[test]
    fn hdiff_sweeps() {
        let plan = compile(HDIFF).expect("plan");
        let along_j = plan.sweeps[1].as_ref().expect("sweeps along J");
        assert_eq!(along_j[0].delay, vec![0, 0, 1, 1]);
        assert_eq!(along_j[0].window, 2);
        let along_i = plan.sweeps[0].as_ref().expect("sweeps along I");
        assert_eq!(along_i[0].delay, vec![0, 1, 0, 1]);
        let along_k = plan.sweeps[2].as_ref().expect("sweeps along K");
        assert_eq!(
            (along_k[0].delay.clone(), along_k[0].window),
            (vec![0; 4], 1)
        );
    }

    /// FORWARD computations, temporaries stored across sections and written fields read at a K
    /// offset run in blocks.
    #[test]
    fn what_does_not_sweep() {
        for text in [
            "stencil s float64\nfield a IJK\nfield b IJK\ncomp FORWARD\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 0\n",
            "stencil s float64\nfield a IJK\nfield b IJK\ntemp t\ncomp PARALLEL\ninterval S 0 E 0\n\
             stmt 1 t 0 f 0 0 0 0 0\ncomp PARALLEL\ninterval S 0 E 0\nstmt 2 f 1 0 t 0 1 0 0\n",
            "stencil s float64\nfield a IJK\nfield b IJK\ncomp PARALLEL\ninterval S 0 E 0\n\
             stmt 1 f 1 0 f 0 0 0 0 0\ncomp PARALLEL\ninterval S 0 E -1\nstmt 2 f 0 0 f 1 0 0 0 1\n",
        ] {
            let plan = compile(text).expect(text);
            assert_eq!(plan.sweeps, [None, None, None], "{text}");
        }
    }

    proptest! {
        /// The tiles cover the domain exactly once.
        #[test]
        fn tiles_cover_the_domain(
            domain in proptest::array::uniform3(1usize..60),
            inner in 0usize..3,
            swap in any::<bool>(),
            threads in 1usize..20,
            plane in 1usize..200,
        ) {
            let (a, b) = match inner { 0 => (1, 2), 1 => (0, 2), _ => (0, 1) };
            let order = if swap { [b, a, inner] } else { [a, b, inner] };
            let mut count = vec![0u8; domain.iter().product()];
            for (lo, hi) in sweep_tiles(domain, order, threads, plane) {
                prop_assert!((0..3).all(|x| lo[x] < hi[x]));
                for i in lo[0]..hi[0] {
                    for j in lo[1]..hi[1] {
                        for k in lo[2]..hi[2] {
                            count[(i as usize * domain[1] + j as usize) * domain[2] + k as usize] += 1;
                        }
                    }
                }
            }
            prop_assert!(count.iter().all(|&c| c == 1));
        }
    }
}
