//! The executor: tiles of the domain, each statement run by its machine code ([`crate::gtscript::jit`]) or by
//! the tape interpreter.
//!
//! The domain is cut into tiles that run in parallel: I/J tiles, or slabs of the outermost
//! memory axis for stencils that need no block buffers (see `run`). A tile runs every
//! section in order;
//! a section runs in blocks (several K levels for PARALLEL, one level at a time in order for
//! FORWARD and BACKWARD). A block copies what it reads into flat buffers that share one
//! geometry (the tile's core widened by the section's halo, its innermost axis the unit-stride
//! axis of the output's layout), so a read at an offset is a fixed shift of a flat index. Each
//! statement then runs over its region: its compiled code walks all rows of an outer step in one
//! call, keeping intermediates in vector registers; the interpreter runs the register tape in
//! strips of `STRIP` points, every instruction one tight loop over a strip, which the
//! compiler vectorises, so the dispatch per instruction is paid once per strip. Points at the ends of
//! rows mix neighbouring rows; they are computed but never reach a stored point. Finally the
//! block copies what it wrote back to memory.

#[cfg(test)]
mod buffer_tests;
pub(crate) mod clip;
#[cfg(test)]
mod jit_tests;
pub(crate) mod launch;
#[cfg(test)]
mod straight_tests;
pub(crate) mod strip;
pub(crate) mod sweep;
#[cfg(test)]
mod tests;
pub(crate) mod tile;
#[cfg(test)]
mod typed_tests;

use crate::error::{Error, Result};
use crate::gtscript::exec::clip::Clips;
use crate::gtscript::exec::launch::Code;
use crate::gtscript::exec::sweep::{plane_points, sweep_order, sweep_tiles, SweepCtx, SweepTask};
use crate::gtscript::exec::tile::{Ctx, Tile, TileTask, BLOCK_POINTS};
use crate::gtscript::ir::Value;
use crate::gtscript::jit::Jit;
use crate::gtscript::plan::schedule::{Layout, Schedule};
use crate::gtscript::plan::{k_bounds_error, k_write_error, Kind, Lanes, Plan};
use crate::gtscript::rt::lane::{Elem, Lane};
use crate::gtscript::rt::mem::{FieldMem, Mem};
use crate::kernels::exec::{self, Threads};
use crate::runtime::interrupt::Interrupt;
use std::sync::Mutex;

/// Runs a planned stencil on `fields` (one entry per field component, in quantity order) over
/// `domain` (I, J, K; 1 along an axis no field has), with `scalars` in declaration order
/// (each a value of its declared type),
/// using the compiled statements of `jit` (made from this `plan`) where it has them.
///
/// Checks first that every K read stays inside the fields' views, so an error leaves every
/// field untouched.
///
/// # Safety
/// Every [`FieldMem`] must describe memory that is alive for the call, aligned for `T`, inside
/// its allocation for every index within `shape`, not written by anyone else during the call,
/// and, for components of written fields, writable and overlapping no other component's memory.
pub unsafe fn run<T: Elem>(
    plan: &Plan,
    jit: Option<&Jit>,
    fields: &[FieldMem],
    scalars: &[Value],
    domain: [usize; 3],
    threads: Threads,
) -> Result<()> {
    // SAFETY: the caller's promises are `run_interruptible`'s.
    unsafe {
        run_interruptible::<T>(
            plan,
            jit,
            fields,
            scalars,
            domain,
            threads,
            &Interrupt::never(),
        )
    }
}

/// Compiles now what calls on memory laid out by `order` (GT4Py's layout map of I, J and K:
/// the axis with the largest value has unit stride) would compile when they first need it
/// (see [`Jit::compile_for_layout`]), spread over `threads`: a stencil's definition does this
/// for the layout its backend allocates, so that its first call runs at the speed of later
/// ones. The layout is the one [`run`] picks: the unit-stride axis of the plan's first written
/// field. `jit` must be the code made from `plan`. Nothing is compiled twice; errors stay
/// where a call asks for the code.
pub fn prepare_layout(plan: &Plan, jit: &Jit, order: [i64; 3], threads: Threads) {
    let Some(first) = plan.first_output else {
        return;
    };
    let axes = plan.program.fields[first].axes;
    let Some(axis) = (0..3).filter(|&a| axes[a]).max_by_key(|&a| order[a]) else {
        return;
    };
    let layout = Layout::from_axis(axis);
    match jit.lanes() {
        Lanes::F64 => jit.compile_for_layout::<f64>(plan, layout, threads),
        Lanes::F32 => jit.compile_for_layout::<f32>(plan, layout, threads),
        Lanes::Wide => jit.compile_for_layout::<Lane>(plan, layout, threads),
    }
}

/// [`run`], stopping with [`Error::interrupted`] once `stop` is requested: it is checked before
/// each tile and at every pass of a `while` loop. Tiles finished before stay written; a tile
/// stopped in a loop has written what its statements before the loop wrote.
///
/// # Safety
/// As for [`run`].
pub unsafe fn run_interruptible<T: Elem>(
    plan: &Plan,
    jit: Option<&Jit>,
    fields: &[FieldMem],
    scalars: &[Value],
    domain: [usize; 3],
    threads: Threads,
    stop: &Interrupt<'_>,
) -> Result<()> {
    let n_comp = plan
        .kinds
        .iter()
        .filter(|k| matches!(k, Kind::Field { .. }))
        .count();
    if fields.len() != n_comp || scalars.len() != plan.program.scalars.len() {
        return Err(Error::invalid(
            "gtscript call",
            (fields.len(), scalars.len()),
            format!(
                "{n_comp} field components and {} scalars",
                plan.program.scalars.len()
            ),
        ));
    }
    let nk = domain[2];
    if nk < plan.min_k && !domain.contains(&0) {
        return Err(Error::invalid(
            "domain",
            domain,
            format!(
                "a K domain of at least {} levels: the intervals of stencil {:?} need them",
                plan.min_k, plan.program.name
            ),
        ));
    }
    let ranges: Vec<(usize, usize)> = plan
        .sections
        .iter()
        .map(|s| (s.start.resolve(nk), s.end.resolve(nk)))
        .collect();
    // K bounds of every field read, before anything is written.
    for (sec, &(ks, ke)) in plan.sections.iter().zip(&ranges) {
        if ks >= ke {
            continue;
        }
        let reads = sec.k_reads.iter().map(|r| (r, false));
        for (&(q, dmin, dmax), write) in reads.chain(sec.k_writes.iter().map(|w| (w, true))) {
            let f = &fields[q as usize];
            if !f.axes[2] {
                continue;
            }
            let lo = ks as i64 + dmin as i64;
            let hi = ke as i64 - 1 + dmax as i64;
            let below = f.origin[2];
            let above = f.shape[2] as i64 - below;
            if lo < -below || hi >= above {
                let Kind::Field { field, .. } = plan.kinds[q as usize] else {
                    continue;
                };
                let level = if lo < -below { lo } else { hi };
                let name = &plan.program.fields[field].name;
                return Err(if write {
                    k_write_error(name, level, nk)
                } else {
                    k_bounds_error(name, level, nk)
                });
            }
        }
    }
    if domain.contains(&0) {
        return Ok(());
    }
    // The extents of statements in regions at the far end of an axis hold from a few points
    // on (see `plan::extents`).
    if (0..2).any(|a| domain[a] < plan.min_domain[a]) {
        return Err(Error::invalid(
            "domain",
            domain,
            format!(
                "at least {} points along I and {} along J: the horizontal regions of stencil {:?} reach that far from the domain's other end",
                plan.min_domain[0], plan.min_domain[1], plan.program.name
            ),
        ));
    }
    let clips = Clips::new(plan, domain);
    // Streaming stores only for what nothing reads back (nor writes at run-time levels).
    let read: Vec<bool> = (0..fields.len())
        .map(|q| {
            plan.sections.iter().any(|s| {
                s.loads.iter().any(|t| t.q as usize == q) || s.var_reads.contains(&(q as u32))
            })
        })
        .collect();
    let mems: Vec<Mem> = fields
        .iter()
        .zip(&read)
        .map(|(f, &r)| Mem {
            addr: f.addr,
            shape: f.shape,
            strides: f.strides,
            origin: f.origin,
            axes: f.axes,
            writable: f.writable,
            stream: f.writable
                && !r
                && T::native(f.ty)
                && exec::streaming::<T>(f.shape.iter().product()),
            ty: f.ty,
            native: T::native(f.ty),
        })
        .collect();
    // The output's unit-stride axis.
    let inner = plan
        .first_output
        .and_then(|field| {
            let q = plan
                .kinds
                .iter()
                .position(|k| matches!(k, Kind::Field { field: f, .. } if *f == field))?;
            let f = &fields[q];
            (0..3)
                .filter(|&a| f.axes[a] && domain[a] > 1)
                .min_by_key(|&a| (f.strides[a].unsigned_abs(), 2 - a))
        })
        .unwrap_or(0);
    // The schedule of this call's layout, code generation on where `jit` was compiled for
    // `T` (see `Schedule`).
    let layout = Layout::from_axis(inner);
    let jit = jit.filter(|j| j.lanes() == T::LANES);
    // At the first call on this layout, what only calls compile is compiled side by side;
    // tier two starts (it never waits for it), its compilation queued when this call returns.
    let _tier_two = jit.and_then(|j| {
        j.prepare::<T>(plan, layout, threads);
        crate::gtscript::cgen::start(plan, j, layout)
    });
    let interpreted;
    let code = match jit {
        Some(j) => Code {
            plan,
            jit: Some(j),
            schedule: j.schedule(),
            layout: j.layout_schedule(plan, layout),
        },
        None => {
            let schedule = Schedule::new(plan, false);
            let for_layout = schedule.for_layout(plan, layout);
            interpreted = (schedule, for_layout);
            Code {
                plan,
                jit: None,
                schedule: &interpreted.0,
                layout: &interpreted.1,
            }
        }
    };
    let scal: Vec<T> = scalars.iter().map(|&v| T::from_value(v)).collect();
    let points = domain.iter().product::<usize>();
    let threads = if exec::parallel(threads, points) {
        threads
    } else {
        Threads::ONE
    };
    let want = if code.layout.tile_per_thread {
        threads.get()
    } else {
        exec::tasks_wanted(threads)
    };
    // Slabs where the schedule allows them (`LayoutSchedule::slabs`) and every field is
    // read and written in place (unit stride along `inner`, of the element type); else
    // sweeps where the plan has them along the axis memory and domain pick; else I/J tiles.
    let light = code.layout.slabs
        && mems
            .iter()
            .all(|m| m.native && m.axes[inner] && m.strides[inner] == 1);
    if !light {
        if let Some(order) = sweep_order(plan, &mems, inner, domain) {
            if let Some(sweeps) = &plan.sweeps[order[0]] {
                let ctx = SweepCtx {
                    plan,
                    sweeps,
                    code: &code,
                    mems: &mems,
                    scalars: &scal,
                    order,
                    ranges: &ranges,
                    clips: &clips,
                    stop,
                };
                return run_all(
                    threads,
                    stop,
                    sweep_tiles(
                        domain,
                        order,
                        threads.get(),
                        plane_points(plan, sweeps, std::mem::size_of::<T>()),
                    ),
                    |(lo, hi)| exec::simd(SweepTask { ctx: &ctx, lo, hi }),
                );
            }
        }
    }
    let mut tiles = Vec::new();
    let kc = if light {
        let outer = if inner == 2 { 0 } else { 2 };
        let n = domain[outer];
        let step = n.div_ceil(want.min(n).max(1)).max(1);
        for a in (0..n).step_by(step) {
            let (lo, hi) = (a, (a + step).min(n));
            tiles.push(if outer == 0 {
                Tile {
                    lo: [lo as i64, 0],
                    hi: [hi as i64, domain[1] as i64],
                    k: (0, nk),
                }
            } else {
                Tile {
                    lo: [0, 0],
                    hi: [domain[0] as i64, domain[1] as i64],
                    k: (lo, hi),
                }
            });
        }
        nk
    } else {
        let (ti, tj, kc) = if inner == 2 {
            // Rows along K: whole columns when they are not too long (16x16 columns measured
            // best for hdiff; wider tiles or shorter column pieces were slower).
            (16, 16, if nk <= 128 { nk } else { 64 })
        } else {
            // Whole rows along the inner horizontal axis, a few rows of the other.
            let (nr, nh) = if inner == 0 {
                (domain[0], domain[1])
            } else {
                (domain[1], domain[0])
            };
            let tr = nr.min(512);
            let tiles_r = nr.div_ceil(tr);
            // Up to 32 rows per level: long sequential runs for the hardware prefetcher (16 rows
            // measured 10-15 % slower on the laplacian and hdiff; 64 rows or several levels per
            // block no faster).
            let th = (nh * tiles_r).div_ceil(want).clamp(4, 32).min(nh);
            let kc = (BLOCK_POINTS / ((tr + 4) * (th + 4))).max(1);
            if inner == 0 {
                (tr, th, kc)
            } else {
                (th, tr, kc)
            }
        };
        for i0 in (0..domain[0]).step_by(ti) {
            for j0 in (0..domain[1]).step_by(tj) {
                tiles.push(Tile {
                    lo: [i0 as i64, j0 as i64],
                    hi: [
                        (i0 + ti).min(domain[0]) as i64,
                        (j0 + tj).min(domain[1]) as i64,
                    ],
                    k: (0, nk),
                });
            }
        }
        kc
    };
    // FORWARD and BACKWARD sections walk columns where the schedule says so
    // (`LayoutSchedule::walk_columns`).
    let walk = code.layout.walk_columns;
    let ctx = Ctx {
        plan,
        code: &code,
        mems: &mems,
        scalars: &scal,
        nk,
        inner,
        kc,
        ranges: &ranges,
        clips: &clips,
        walk,
        stop,
    };
    run_all(threads, stop, tiles, |tile| {
        exec::simd(TileTask { ctx: &ctx, tile })
    })
}

/// Runs `f` on every task, each after a check of `stop`; the first error any returns.
fn run_all<I: Send>(
    threads: Threads,
    stop: &Interrupt<'_>,
    tasks: Vec<I>,
    f: impl Fn(I) -> Result<()> + Sync,
) -> Result<()> {
    let error: Mutex<Option<Error>> = Mutex::new(None);
    crate::runtime::threads::run_each(threads, tasks, |task| {
        if let Err(e) = stop.check().and_then(|()| f(task)) {
            error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(e);
        }
    });
    match error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
