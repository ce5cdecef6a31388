//! I/J tiles and slabs: the blocks each tile runs section by section, by the executor the
//! schedule names (the cut of the domain into tiles is `exec::run`'s).

use crate::error::{Error, Result};
use crate::gtscript::exec::clip::{clip, reach_box, Clips};
use crate::gtscript::exec::launch::Code;
use crate::gtscript::exec::launch::{run_columns, run_loop_code, run_points, run_statement};
use crate::gtscript::exec::strip::any_set;
use crate::gtscript::ir::IterOrder;
use crate::gtscript::jit::abi::LoopCode;
use crate::gtscript::plan::schedule::{PointWalk, Schedule, SectionExec};
use crate::gtscript::plan::{Kind, Plan, SectionPlan};
use crate::gtscript::rt::interp::STRIP;
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{transfer, Geo, Mem, VarMem};
use crate::gtscript::rt::pool::{fit_buf, give_bufs, take_buf};
use crate::kernels::exec::{self, SimdTask};
use crate::runtime::interrupt::Interrupt;

/// Target number of points of a block buffer.
pub(crate) const BLOCK_POINTS: usize = 8192;

/// A tile: its core in I and J, and the K levels it runs (all of them unless every section
/// is PARALLEL and the stencil needs no block buffers, see `run`).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Tile {
    pub(crate) lo: [i64; 2],
    pub(crate) hi: [i64; 2],
    pub(crate) k: (usize, usize),
}

/// Everything a tile reads.
pub(crate) struct Ctx<'a, T> {
    pub(crate) plan: &'a Plan,
    /// What runs each section, and its code.
    pub(crate) code: &'a Code<'a>,
    pub(crate) mems: &'a [Mem],
    pub(crate) scalars: &'a [T],
    pub(crate) nk: usize,
    /// Unit-stride axis of the output's layout.
    pub(crate) inner: usize,
    /// K levels per PARALLEL block.
    pub(crate) kc: usize,
    /// Per section: resolved [start, end).
    pub(crate) ranges: &'a [(usize, usize)],
    /// Whether FORWARD and BACKWARD sections walk columns (`column`): then stored
    /// temporaries are K fastest.
    pub(crate) walk: bool,
    /// Where statements and transfers may run.
    pub(crate) clips: &'a Clips,
    /// Checked before each tile and at each pass of a `while` loop.
    pub(crate) stop: &'a Interrupt<'a>,
}

pub(crate) struct TileTask<'a, T> {
    pub(crate) ctx: &'a Ctx<'a, T>,
    pub(crate) tile: Tile,
}

impl<T: Elem> SimdTask for TileTask<'_, T> {
    type Output = Result<()>;
    #[inline(always)]
    fn run(self) -> Result<()> {
        let r = run_tile(self.ctx, self.tile);
        // Streaming stores are weakly ordered: make them visible before the task ends.
        exec::fence();
        r
    }
}

#[inline(always)]
fn run_tile<T: Elem>(ctx: &Ctx<'_, T>, tile: Tile) -> Result<()> {
    let plan = ctx.plan;
    let nq = plan.kinds.len();
    // Stored temporaries of this tile, I fastest.
    let mut stored: Vec<Vec<T>> = vec![Vec::new(); nq];
    let mut mems: Vec<Mem> = Vec::with_capacity(ctx.mems.len() + nq);
    mems.extend_from_slice(ctx.mems);
    for (q, kind) in plan.kinds.iter().enumerate() {
        if let Kind::Stored {
            reach,
            k_margin,
            axes,
        } = *kind
        {
            let (lo, mut hi) = reach_box(
                [tile.lo[0], tile.lo[1], 0],
                [tile.hi[0], tile.hi[1], ctx.nk as i64],
                reach,
                (k_margin as i32, k_margin as i32),
            );
            if !axes[2] {
                // A 2-D temporary: one plane, which every level maps to.
                hi[2] = lo[2] + 1;
            }
            let n = [
                (hi[0] - lo[0]).max(0) as usize,
                (hi[1] - lo[1]).max(0) as usize,
                (hi[2] - lo[2]).max(0) as usize,
            ];
            let len = n[0] * n[1] * n[2];
            stored[q] = take_buf(len);
            // I fastest for rows along I; K fastest for columns walked along K.
            let strides = if ctx.walk {
                [(n[1] * n[2]) as isize, n[2] as isize, 1]
            } else {
                [1, n[0] as isize, (n[0] * n[1]) as isize]
            };
            if !axes[2] {
                // GT4Py leaves a 2-D temporary uninitialised; zeros make a read before the
                // first write at least repeatable.
                stored[q][..len].fill(T::ZERO);
            }
            mems.push(Mem {
                addr: stored[q].as_mut_ptr().expose_provenance(),
                shape: n,
                strides,
                origin: [-lo[0], -lo[1], -lo[2]],
                axes,
                writable: true,
                stream: false,
                ty: crate::gtscript::ir::Ty::F64,
                native: true,
            });
        } else {
            mems.push(Mem {
                addr: 0,
                shape: [0; 3],
                strides: [0; 3],
                origin: [0; 3],
                axes: [true; 3],
                writable: false,
                stream: false,
                ty: crate::gtscript::ir::Ty::F64,
                native: true,
            });
        }
    }
    let n_fields = ctx.mems.len();
    let mem_of = |q: usize| -> &Mem {
        match plan.kinds[q] {
            Kind::Field { .. } => &mems[q],
            _ => &mems[n_fields + q],
        }
    };
    let vmem = var_mems::<T>(plan, &mems, n_fields, ctx.nk);
    let mut bufs: Vec<Vec<T>> = vec![Vec::new(); nq];
    // The tape's registers and one scratch register for streamed stores.
    let mut regs: Vec<Vec<T>> = (0..plan.max_regs + 1).map(|_| take_buf(STRIP)).collect();
    let mut table = Vec::new();
    // What sections in blocks along `ctx.inner` read and write in place: the same for every
    // such section of the tile, so made once, when the first needs it.
    let mut direct_inner: Option<Vec<Option<Mem>>> = None;
    // Sections up to here ran as part of a run walking columns.
    let mut ran_until = 0;
    for (s, (sec, &(ks, ke))) in plan.sections.iter().zip(ctx.ranges).enumerate() {
        if s < ran_until {
            continue;
        }
        let clipped = |(ks, ke): (usize, usize)| (ks.max(tile.k.0), ke.min(tile.k.1));
        let layout = ctx.code.layout.layout;
        // Where the memory of this call refuses a compiled function (see `run_points`,
        // `run_columns`), the section runs in blocks.
        let blocks = Schedule::blocks(plan, s, layout);
        let mut exec = ctx.code.layout.sections[s];
        // Sections with loops as one point function: each column's levels, section after
        // section (walking columns), or each level's rows of I.
        if let SectionExec::Points { walk, end } = exec {
            let code = ctx.code.point_section::<T>(plan, s, walk)?;
            let levels: smallvec::SmallVec<[((usize, usize), bool); 4]> = code
                .parts
                .iter()
                .map(|p| {
                    let backward = plan.sections[p.section].order == IterOrder::Backward;
                    (clipped(ctx.ranges[p.section]), backward)
                })
                .collect();
            if run_points(
                code,
                &mem_of,
                &vmem,
                tile.lo,
                tile.hi,
                &levels,
                walk,
                ctx.scalars,
                ctx.stop,
            )? {
                ran_until = end;
                continue;
            }
            exec = blocks;
        }
        if let SectionExec::InRun { .. } = exec {
            // The run's point function refused this tile's memory.
            exec = blocks;
        }
        let (ks, ke) = clipped((ks, ke));
        if ks >= ke {
            continue;
        }
        if exec == SectionExec::Columns {
            let code = ctx.code.column::<T>(s)?;
            if run_columns(
                code,
                &mem_of,
                tile.lo,
                tile.hi,
                (ks, ke),
                ctx.scalars,
                &mut table,
            )? {
                continue;
            }
            exec = blocks;
        }
        // Tier two's walk of the section's levels, where it has one (its statements share one
        // region: the walk covers their one box of the tile, where they all have the same).
        if let (SectionExec::Blocks { .. }, Some(code)) = (exec, ctx.code.levels_walk::<T>(s)) {
            let (lo, hi) = ([tile.lo[0], tile.lo[1], 0], [tile.hi[0], tile.hi[1], 0]);
            let boxes = ctx.clips.stmt(s);
            let (blo, bhi) = clip(lo, hi, boxes[0]);
            if boxes.iter().all(|&b| clip(lo, hi, b) == (blo, bhi)) {
                if bhi[0] <= blo[0] || bhi[1] <= blo[1] {
                    continue;
                }
                let backward = sec.order == IterOrder::Backward;
                if run_points(
                    code,
                    &mem_of,
                    &vmem,
                    [blo[0], blo[1]],
                    [bhi[0], bhi[1]],
                    &[((ks, ke), backward)],
                    PointWalk::Levels,
                    ctx.scalars,
                    ctx.stop,
                )? {
                    continue;
                }
            }
        }
        let SectionExec::Blocks { copy_columns } = exec else {
            return Err(Error::invalid(
                "gtscript schedule",
                format!("{exec:?}"),
                "blocks where no compiled function runs a section (internal error)",
            ));
        };
        let levels: Vec<(usize, usize)> = match sec.order {
            IterOrder::Parallel => (ks..ke)
                .step_by(ctx.kc)
                .map(|k| (k, (k + ctx.kc).min(ke)))
                .collect(),
            IterOrder::Forward => (ks..ke).map(|k| (k, k + 1)).collect(),
            IterOrder::Backward => (ks..ke).rev().map(|k| (k, k + 1)).collect(),
        };
        // Fields and stored temporaries with unit stride along the inner axis are read and
        // written straight in memory. A statement's target row is only borrowed after every
        // operand that could reach it has been read (see `run_stmt`), and rows at other
        // offsets are other memory.
        // FORWARD and BACKWARD levels run one after another along rows of I, which a layout
        // with unit stride along K strides through: the tile's columns of each field go to an
        // I-fastest buffer once, in memory order, and the written ones come back at the end.
        let (columns, inner) = if copy_columns {
            (columns_in::<T>(plan, sec, &mems, tile, ks, ke)?, 0)
        } else {
            (Vec::new(), ctx.inner)
        };
        let with_columns;
        let direct: &[Option<Mem>] = if copy_columns {
            with_columns = direct_mems(plan, &mem_of, &columns, inner);
            &with_columns
        } else {
            direct_inner.get_or_insert_with(|| direct_mems::<T>(plan, &mem_of, &[], inner))
        };
        let mut shared = SharedBoxes::new();
        for (k0, k1) in levels {
            run_block(
                ctx,
                s,
                &mut bufs,
                &mut regs,
                &mem_of,
                direct,
                &vmem,
                tile,
                (k0, k1),
                inner,
                &mut shared,
            )?;
        }
        for mut c in columns {
            if sec.stores.iter().any(|t| t.q as usize == c.q) {
                c.copy(&mems[c.q], tile, ks, ke, false)?;
            }
            give_bufs([c.buf]);
        }
    }
    give_bufs(stored);
    give_bufs(bufs);
    give_bufs(regs);
    Ok(())
}

/// Per quantity: the memory a block reads and writes in place, where it can (see
/// `run_tile`): a field's columns copied for the section, else a field or stored temporary of
/// the element type with unit stride along `inner`; `None` for the rest, which go through
/// block buffers.
fn direct_mems<'m, T>(
    plan: &Plan,
    mem_of: &impl Fn(usize) -> &'m Mem,
    columns: &[Columns<T>],
    inner: usize,
) -> Vec<Option<Mem>> {
    (0..plan.kinds.len())
        .map(|q| {
            if let Some(c) = columns.iter().find(|c| c.q == q) {
                return Some(c.mem);
            }
            if matches!(plan.kinds[q], Kind::Local) {
                return None;
            }
            let m = *mem_of(q);
            (m.native && m.axes[inner] && m.strides[inner] == 1).then_some(m)
        })
        .collect()
}

/// Per quantity: the memory its reads at run-time K levels take values from, where it has any:
/// a field's view, or a stored temporary's levels of the domain (GT4Py's temporaries have no
/// others).
fn var_mems<'p, T: Elem>(
    plan: &'p Plan,
    mems: &[Mem],
    n_fields: usize,
    nk: usize,
) -> Vec<Option<VarMem<'p>>> {
    let mut out = vec![None; plan.kinds.len()];
    for &q in plan.sections.iter().flat_map(|s| &s.var_reads) {
        let q = q as usize;
        let (mut mem, name) = match plan.kinds[q] {
            Kind::Field { field, .. } => (mems[q], &plan.program.fields[field].name),
            Kind::Stored { .. } => (mems[n_fields + q], &plan.program.temps[q - n_fields].name),
            Kind::Local => continue,
        };
        if !matches!(plan.kinds[q], Kind::Field { .. }) {
            // The storage's levels 0..nk only.
            let below = mem.origin[2];
            mem.addr = mem.addr.wrapping_add(
                (below as usize)
                    .wrapping_mul(mem.strides[2] as usize)
                    .wrapping_mul(std::mem::size_of::<T>()),
            );
            mem.origin[2] = 0;
            mem.shape[2] = nk.min(mem.shape[2].saturating_sub(below as usize));
        }
        out[q] = Some(VarMem { mem, name });
    }
    out
}

/// A field's columns over a tile, I fastest (see `run_tile`).
struct Columns<T> {
    q: usize,
    buf: Vec<T>,
    /// The buffer as memory: the box `lo..hi` of domain coordinates.
    mem: Mem,
    lo: [i64; 3],
    hi: [i64; 3],
}

impl<T: Elem> Columns<T> {
    /// Copies between the field's memory `m` (unit stride along K) and the buffer: in
    /// (`load`) the whole box, out the tile's core over levels `ks..ke`.
    fn copy(&mut self, m: &Mem, tile: Tile, ks: usize, ke: usize, load: bool) -> Result<()> {
        let (lo, hi) = if load {
            (self.lo, self.hi)
        } else {
            (
                [tile.lo[0], tile.lo[1], ks as i64],
                [tile.hi[0], tile.hi[1], ke as i64],
            )
        };
        if (0..3).any(|a| hi[a] <= lo[a]) {
            return Ok(());
        }
        let base = m.check(lo, hi)?;
        let n = [0, 1, 2].map(|a| (self.hi[a] - self.lo[a]) as usize);
        let nk = (hi[2] - lo[2]) as usize;
        if (0..3).any(|a| lo[a] < self.lo[a] || hi[a] > self.hi[a]) {
            return Err(Error::invalid(
                "gtscript columns",
                (lo, hi),
                "a box inside the buffer (internal planning error)",
            ));
        }
        let len = self.buf.len();
        let buf = self.buf.as_mut_ptr();
        // A blocked transpose: eight levels of a column (a cache line of memory) at a time,
        // for every column of a row of I, so both sides move whole lines.
        let plane = n[0] * n[1];
        for j in lo[1]..hi[1] {
            for k0 in (0..nk).step_by(8) {
                let kn = (nk - k0).min(8);
                for i in lo[0]..hi[0] {
                    let off = base
                        + (i - lo[0]) as isize * m.strides[0]
                        + (j - lo[1]) as isize * m.strides[1];
                    let col =
                        std::ptr::with_exposed_provenance_mut::<T>(m.addr).wrapping_offset(off);
                    let at = ((lo[2] - self.lo[2]) as usize * n[1] + (j - self.lo[1]) as usize)
                        * n[0]
                        + (i - self.lo[0]) as usize;
                    for k in k0..k0 + kn {
                        let b = at + k * plane;
                        debug_assert!(b < len);
                        // SAFETY: `check` verified that the box lies inside the field's view
                        // (unit stride along K, so the column's `nk` elements are
                        // `col..col + nk`), which the caller of `run` vouched for, writable
                        // where written back (only fields the section stores, over this tile's
                        // core); `b` indexes the buffer, whose box contains this one (checked
                        // above). No reference to the buffer lives during the copy.
                        unsafe {
                            if load {
                                *buf.add(b) = *col.add(k);
                            } else {
                                *col.add(k) = *buf.add(b);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The columns of every field of section `sec` with all three axes and unit stride along K,
/// over the tile widened by the section's halo (within each field's view), levels `ks..ke`
/// widened likewise; loaded.
fn columns_in<T: Elem>(
    plan: &Plan,
    sec: &SectionPlan,
    mems: &[Mem],
    tile: Tile,
    ks: usize,
    ke: usize,
) -> Result<Vec<Columns<T>>> {
    let mut out = Vec::new();
    for &q in &sec.quantities {
        let q = q as usize;
        if !matches!(plan.kinds[q], Kind::Field { .. }) {
            continue;
        }
        let m = mems[q];
        if !(m.native && m.axes == [true; 3] && m.strides[2] == 1) || sec.no_columns(q as u32) {
            continue;
        }
        let mut lo = [
            tile.lo[0] - sec.halo[0].0 as i64,
            tile.lo[1] - sec.halo[1].0 as i64,
            ks as i64 - sec.halo[2].0 as i64,
        ];
        let mut hi = [
            tile.hi[0] + sec.halo[0].1 as i64,
            tile.hi[1] + sec.halo[1].1 as i64,
            ke as i64 + sec.halo[2].1 as i64,
        ];
        for a in 0..3 {
            lo[a] = lo[a].max(-m.origin[a]);
            hi[a] = hi[a].min(m.shape[a] as i64 - m.origin[a]).max(lo[a]);
        }
        let n = [0, 1, 2].map(|a| (hi[a] - lo[a]) as usize);
        let mut buf = take_buf::<T>(n[0] * n[1] * n[2]);
        let mem = Mem {
            addr: buf.as_mut_ptr().expose_provenance(),
            shape: n,
            strides: [1, n[0] as isize, (n[0] * n[1]) as isize],
            origin: [-lo[0], -lo[1], -lo[2]],
            axes: [true; 3],
            writable: m.writable,
            stream: false,
            ty: m.ty,
            native: true,
        };
        let mut c = Columns {
            q,
            buf,
            mem,
            lo,
            hi,
        };
        // A field the section only writes needs no copy in: its statements write every point
        // of the core at every level before it is copied back.
        if sec.loads.iter().any(|t| t.q as usize == q) {
            c.copy(&m, tile, ks, ke, true)?;
        }
        out.push(c);
    }
    Ok(out)
}

/// Per point function of a section of one tile (its first statement and the one after its
/// last): whether all its statements run over the first one's box. Every block of the section
/// asks the same question with the same answer: blocks differ only in K, where the boxes of all
/// statements are the block's levels.
type SharedBoxes = smallvec::SmallVec<[((usize, usize), bool); 4]>;

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_block<'m, T: Elem>(
    ctx: &Ctx<'_, T>,
    s: usize,
    bufs: &mut [Vec<T>],
    regs: &mut [Vec<T>],
    mem_of: &impl Fn(usize) -> &'m Mem,
    direct: &[Option<Mem>],
    vmem: &[Option<VarMem<'_>>],
    tile: Tile,
    (k0, k1): (usize, usize),
    inner: usize,
    shared: &mut SharedBoxes,
) -> Result<()> {
    let sec: &SectionPlan = &ctx.plan.sections[s];
    let core_lo = [tile.lo[0], tile.lo[1], k0 as i64];
    let core_hi = [tile.hi[0], tile.hi[1], k1 as i64];
    let lo = [
        core_lo[0] - sec.halo[0].0 as i64,
        core_lo[1] - sec.halo[1].0 as i64,
        core_lo[2] - sec.halo[2].0 as i64,
    ];
    let n = [
        (core_hi[0] - core_lo[0]) as usize + sec.halo[0].0 + sec.halo[0].1,
        (core_hi[1] - core_lo[1]) as usize + sec.halo[1].0 + sec.halo[1].1,
        (core_hi[2] - core_lo[2]) as usize + sec.halo[2].0 + sec.halo[2].1,
    ];
    let geo = Geo::new(lo, n, inner);
    let sch = &ctx.code.schedule.sections[s];
    let handover = &sch.handover;
    for &q in &sec.quantities {
        if direct[q as usize].is_some() || sch.received.binary_search(&q).is_ok() {
            continue;
        }
        fit_buf(&mut bufs[q as usize], geo.len);
    }
    // Statements before this one have had their buffers handed over.
    let mut handed = 0;
    let clips = ctx.clips;
    for t in &sec.loads {
        if direct[t.q as usize].is_some() {
            continue;
        }
        let (blo, bhi) = reach_box(core_lo, core_hi, t.reach, t.k);
        let (blo, bhi) = clip(blo, bhi, clips.quantity[t.q as usize]);
        if (0..3).any(|a| bhi[a] <= blo[a]) {
            continue;
        }
        transfer(
            mem_of(t.q as usize),
            &geo,
            &mut bufs[t.q as usize],
            blo,
            bhi,
            true,
        )?;
    }
    let mut t = 0;
    while t < sec.stmts.len() {
        // Once per block: a loop's statements run again.
        while handed <= t {
            for &(from, to) in &handover[handed] {
                bufs.swap(from as usize, to as usize);
            }
            handed += 1;
        }
        let st = &sec.stmts[t];
        let (rlo, rhi) = reach_box(core_lo, core_hi, st.reach, (0, 0));
        let (rlo, rhi) = clip(rlo, rhi, clips.stmt(s)[t]);
        let live = (0..3).all(|a| rhi[a] > rlo[a]);
        // A `while` loop or straight run compiled to run point by point (a straight run of
        // float code only once tier two has fused it), where all its statements share this
        // box (regions and extents can cut them differently).
        let mut shares_box = |lc: &&LoopCode| {
            if !live {
                return false;
            }
            let key = (t, lc.exit);
            if let Some(&(_, yes)) = shared.iter().find(|&&(k, _)| k == key) {
                return yes;
            }
            let yes = (t..lc.exit).all(|u| {
                let (lo, hi) = reach_box(core_lo, core_hi, sec.stmts[u].reach, (0, 0));
                clip(lo, hi, clips.stmt(s)[u]) == (rlo, rhi)
            });
            shared.push((key, yes));
            yes
        };
        let point_loop = match ctx.code.fused::<T>(s, t).filter(&mut shares_box) {
            Some(lc) => Some(lc),
            None => ctx.code.point_loop::<T>(s, t)?.filter(&mut shares_box),
        };
        if let Some(lc) = point_loop {
            run_loop_code(
                lc,
                &geo,
                bufs,
                regs,
                direct,
                vmem,
                ctx.scalars,
                rlo,
                rhi,
                ctx.stop,
            )?;
            t = lc.exit;
            continue;
        }
        if live {
            let code = ctx.code.stmt::<T>(s, t)?;
            run_statement(
                code,
                st,
                &geo,
                bufs,
                regs,
                direct,
                vmem,
                ctx.scalars,
                rlo,
                rhi,
            )?;
            let q = st.target as usize;
            if st.scatter() {
                // Written straight into memory at run-time levels: the block's copy of the
                // target is loaded again wherever the section reads it (every other write of
                // it went to memory at once: `write_through`).
                if direct[q].is_none() {
                    for t in sec.loads.iter().filter(|t| t.q == st.target) {
                        let (blo, bhi) = reach_box(core_lo, core_hi, t.reach, t.k);
                        let (blo, bhi) = clip(blo, bhi, clips.quantity[q]);
                        transfer(mem_of(q), &geo, &mut bufs[q], blo, bhi, true)?;
                    }
                }
            } else if direct[q].is_none() && sec.write_through.contains(&st.target) {
                // Read at run-time levels later: to memory now (see `SectionPlan::write_through`).
                let k = (-st.k_offset, st.k_offset);
                let (blo, bhi) = reach_box(core_lo, core_hi, st.reach, k);
                let (blo, bhi) = clip(blo, bhi, clips.stmt(s)[t]);
                transfer(mem_of(q), &geo, &mut bufs[q], blo, bhi, false)?;
            }
        }
        let flow = sec.flow[t];
        t = match flow.exit {
            // A `while` condition: its body runs again while any point of the block needs it.
            Some(exit) if !(live && any_set(st.target, &geo, bufs, direct, rlo, rhi)?) => exit,
            Some(_) => {
                ctx.stop.check()?;
                flow.next
            }
            None => flow.next,
        };
    }
    // Each buffer back to its first holder, for the next block.
    for swaps in handover[..handed].iter().rev() {
        for &(from, to) in swaps.iter().rev() {
            bufs.swap(from as usize, to as usize);
        }
    }
    for t in &sec.stores {
        // A quantity written at run-time levels went to memory at every write; its block copy
        // may be older than what a write at a run-time level put there.
        if direct[t.q as usize].is_some() || sec.scattered.contains(&t.q) {
            continue;
        }
        if matches!(ctx.plan.kinds[t.q as usize], Kind::Field { .. }) && t.reach != [0; 4] {
            return Err(Error::invalid(
                "gtscript block",
                t.reach,
                "field stores over the tile core only (internal planning error)",
            ));
        }
        let (blo, bhi) = reach_box(core_lo, core_hi, t.reach, t.k);
        let (blo, bhi) = clip(blo, bhi, clips.quantity[t.q as usize]);
        if (0..3).any(|a| bhi[a] <= blo[a]) {
            continue;
        }
        transfer(
            mem_of(t.q as usize),
            &geo,
            &mut bufs[t.q as usize],
            blo,
            bhi,
            false,
        )?;
    }
    Ok(())
}
