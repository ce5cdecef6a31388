//! Checks a [`Program`] and plans its execution: the extents every temporary and field is
//! needed over, which temporaries live in block buffers and which need storage across levels,
//! what each block loads and stores, every statement compiled to a register tape, and, per axis,
//! the sweep schedule (each statement's delay in planes, the temporaries' rolling window) where
//! the stencil can run as sweeps.

pub(crate) mod extents;
pub(crate) mod guarded;
pub(crate) mod masked;
pub(crate) mod model;
pub mod schedule;
#[cfg(test)]
pub(crate) mod schedule_tests;
pub(crate) mod sweep;
pub(crate) mod tape;

use crate::gtscript::ir::{def_error, Access, IterOrder, KIndex, Program, Ty};
use crate::gtscript::plan::extents::{extents, shifted, union, Extents, ZERO};
// The tape types are part of a plan's public shape.
use crate::error::{Error, Result};
use crate::gtscript::passes::types::type_of;
use crate::gtscript::plan::model::Slots;
pub use crate::gtscript::plan::model::{
    Flow, Kind, Lanes, Plan, Reach, SectionPlan, SectionSweep, StmtPlan, Transfer,
};
use crate::gtscript::plan::sweep::plan_sweeps;
use crate::gtscript::plan::tape::{compile, fuse, quantity, Regs, ZERO_SRC};
pub use crate::gtscript::plan::tape::{Instr, Op, Src};

/// Adds `reach` and the K levels `k` of quantity `q` to its transfer in `list` (a new one if
/// it has none).
fn add_transfer(list: &mut Vec<Transfer>, slots: &mut Slots, q: u32, reach: Reach, k: (i32, i32)) {
    match slots.get(q) {
        Some(i) => {
            let t = &mut list[i];
            t.reach = union(t.reach, reach);
            t.k = (t.k.0.max(k.0), t.k.1.max(k.1));
        }
        None => {
            slots.set(q, list.len());
            list.push(Transfer { q, reach, k });
        }
    }
}

/// The fewest levels for which every interval fits, as GT4Py's `compute_min_k_size`.
fn min_k_size(p: &Program) -> usize {
    let (mut from_start, mut from_end, mut biggest) = (0i64, 0i64, 0i64);
    for s in &p.sections {
        match (s.start.from_end, s.end.from_end) {
            (false, true) => {
                if s.start.offset != 0 || s.end.offset != 0 {
                    biggest = biggest.max(s.start.offset - s.end.offset + 1);
                }
            }
            (false, false) => {
                from_start = from_start.max(s.end.offset);
                biggest = biggest.max(s.end.offset);
            }
            _ => {
                from_end = from_end.max(-s.start.offset);
                biggest = biggest.max(-s.start.offset);
            }
        }
    }
    (from_start + from_end).max(biggest).max(0) as usize
}

fn lanes(p: &Program, sections: &[SectionPlan]) -> Lanes {
    let mut decl = p
        .fields
        .iter()
        .map(|f| f.ty)
        .chain(p.scalars.iter().map(|s| s.ty));
    let Some(first) = decl.next() else {
        return Lanes::Wide;
    };
    let float = [Ty::F64, Ty::F32].into_iter().find(|&f| f == first);
    let Some(f) = float else { return Lanes::Wide };
    let ok = |t: Ty| t == f || t == Ty::Bool;
    let homogeneous = decl.all(|t| t == f)
        && p.temps.iter().all(|t| t.ty.is_none_or(ok))
        && sections
            .iter()
            .flat_map(|s| &s.stmts)
            .flat_map(|st| &st.tape)
            .all(|ins| ok(ins.ty) && !matches!(ins.op, Op::Cast(t) if !ok(t)));
    match (homogeneous, f) {
        (true, Ty::F64) => Lanes::F64,
        (true, _) => Lanes::F32,
        _ => Lanes::Wide,
    }
}

/// Checks and plans a program.
pub fn plan(program: Program) -> Result<Plan> {
    let p = &program;
    let n_comp: usize = p.fields.iter().map(|f| f.components()).sum();
    let nq = n_comp + p.temps.len();
    let field_of = |q: usize| -> Option<usize> {
        let mut acc = 0;
        for (i, f) in p.fields.iter().enumerate() {
            acc += f.components();
            if q < acc {
                return Some(i);
            }
        }
        None
    };
    let Accesses {
        field_written,
        written_in_comp,
        sections_of,
        k_margin,
        var_read,
    } = accesses(p, nq)?;
    let guards = check_loop_conditions(p)?;
    check_written_reads(p, &written_in_comp)?;
    // Horizontal extents, without and with regions (see `extents`).
    let reach = extents(p, n_comp, false)?.reach;
    let Extents {
        reach: mut extent,
        min_domain,
        accessed,
    } = extents(p, n_comp, true)?;
    let stmt_reach = |tq: usize| if tq >= n_comp { reach[tq] } else { ZERO };
    check_reads_beyond_domain(p, &stmt_reach, &written_in_comp)?;
    let kinds: Vec<Kind> = (0..nq)
        .map(|q| {
            if q < n_comp {
                let field = field_of(q).unwrap_or(0);
                let first: usize = p.fields[..field].iter().map(|f| f.components()).sum();
                Kind::Field {
                    field,
                    comp: q - first,
                }
            } else if k_margin[q] > 0
                || var_read[q]
                || sections_of[q].len() > 1
                || !p.temps[q - n_comp].axes[2]
            {
                Kind::Stored {
                    reach: reach[q],
                    k_margin: k_margin[q],
                    axes: p.temps[q - n_comp].axes,
                }
            } else {
                Kind::Local
            }
        })
        .collect();
    // Field extents for the binder, as GT4Py plans them: the union of the field's accesses,
    // signed (a field read only at `a[1, 0, 0]` needs no point at the origin, and its origin
    // may be -1); a written field covers the domain.
    let mut horizontal: Vec<Option<Reach>> = vec![None; p.fields.len()];
    for q in 0..n_comp {
        if let Kind::Field { field, .. } = kinds[q] {
            let mut r = accessed[q];
            if field_written[field] {
                r = Some(r.map_or(ZERO, |r| union(r, ZERO)));
            }
            if let Some(r) = r {
                let h = &mut horizontal[field];
                *h = Some(h.map_or(r, |h| union(h, r)));
            }
        }
    }
    let mut field_extent = vec![[(0i64, 0i64); 3]; p.fields.len()];
    for (e, h) in field_extent.iter_mut().zip(&horizontal) {
        let r = h.unwrap_or(ZERO).map(i64::from);
        e[0] = (r[0], r[1]);
        e[1] = (r[2], r[3]);
    }
    // Loads and stores of a field are cut to its extent: never outside the binder's view.
    for q in 0..n_comp {
        if let Kind::Field { field, .. } = kinds[q] {
            extent[q] = horizontal[field].unwrap_or(ZERO);
        }
    }
    let mut sections = Vec::with_capacity(p.sections.len());
    let mut max_regs = 1;
    // Where each quantity is in the section's lists being built.
    let mut slot = [(); 7].map(|_| Slots::new(nq));
    let mut k_extent = vec![KExtent::default(); p.fields.len()];
    for (s, guards) in p.sections.iter().zip(&guards) {
        sections.push(plan_section(
            p,
            s,
            &kinds,
            &stmt_reach,
            &mut k_extent,
            guards,
            &mut slot,
            &mut max_regs,
        ));
    }
    for (e, k) in field_extent.iter_mut().zip(&k_extent) {
        e[2] = k.extent();
    }
    let first_output = field_written.iter().position(|&w| w);
    let lanes = lanes(&program, &sections);
    let mut plan = Plan {
        extent,
        min_domain: min_domain.map(|n| n.max(0) as usize),
        lanes,
        min_k: min_k_size(&program),
        kinds,
        field_extent,
        field_written,
        sections,
        max_regs,
        first_output,
        program,
        sweeps: [None, None, None],
    };
    plan.sweeps = std::array::from_fn(|axis| plan_sweeps(&plan, axis));
    Ok(plan)
}

/// A field's K extent as its static accesses decide it (see [`KExtent::extent`]).
#[derive(Copy, Clone, Debug)]
struct KExtent {
    /// The most levels below the domain's first that an access in an interval counted from
    /// the start reaches (negative: that far above it); `i64::MIN` when none does.
    lo: i64,
    /// Likewise above the domain's last, for intervals counted from the end.
    hi: i64,
    /// Whether an access in an interval counted from the end (from the start) leaves the
    /// lower (upper) side undecided.
    lo_free: bool,
    hi_free: bool,
}

impl Default for KExtent {
    fn default() -> KExtent {
        KExtent {
            lo: i64::MIN,
            hi: i64::MIN,
            lo_free: false,
            hi_free: false,
        }
    }
}

impl KExtent {
    /// An access at the K offset `k` in section `s`: GT4Py's K boundary (`Plan::k_boundary`).
    fn access(&mut self, s: &crate::gtscript::ir::Section, k: i64) {
        if s.start.from_end {
            self.lo_free = true;
        } else {
            self.lo = self.lo.max(-(s.start.offset + k));
        }
        if s.end.from_end {
            self.hi = self.hi.max(s.end.offset + k);
        } else {
            self.hi_free = true;
        }
    }

    /// The (lower, upper) extent: GT4Py's K boundary where every access decides a side
    /// (negative where they all stay inside the domain, so that the view starts or ends
    /// there), else at least zero (an access in an interval counted from the other end of
    /// the domain may reach its edge; the run-time K check refuses what leaves the view).
    fn extent(&self) -> (i64, i64) {
        let side = |v: i64, free: bool| {
            if v == i64::MIN {
                0
            } else if free {
                v.max(0)
            } else {
                v
            }
        };
        (side(self.lo, self.lo_free), side(self.hi, self.hi_free))
    }
}

/// A step of [`plan`]: the plan of section `s` (its statements' tapes, what its blocks load
/// and store, its halo, its K reads and writes), with `kinds` the quantities' kinds and
/// `stmt_reach(q)` how far beyond a tile's core a statement writing `q` runs; adds the
/// section's K accesses of each field to `k_extent`, its registers to `max_regs`; `slot`:
/// scratch lists (see [`Slots`]).
#[allow(clippy::too_many_arguments)]
fn plan_section(
    p: &Program,
    s: &crate::gtscript::ir::Section,
    kinds: &[Kind],
    stmt_reach: &impl Fn(usize) -> Reach,
    k_extent: &mut [KExtent],
    guards: &[Vec<i32>],
    slot: &mut [Slots; 7],
    max_regs: &mut usize,
) -> SectionPlan {
    let mut stmts = Vec::new();
    let mut loads: Vec<Transfer> = Vec::new();
    let mut stores: Vec<Transfer> = Vec::new();
    let mut quantities: Vec<u32> = Vec::new();
    let mut halo = [(0i32, 0i32); 3];
    let mut k_reads: Vec<(u32, i32, i32)> = Vec::new();
    let mut k_writes: Vec<(u32, i32, i32)> = Vec::new();
    let mut var_reads: Vec<u32> = Vec::new();
    slot.iter_mut().for_each(Slots::clear);
    let [q_slot, load_slot, store_slot, k_read_slot, k_write_slot, var_slot, written] = slot;
    let add_q = |q: usize, quantities: &mut Vec<u32>, q_slot: &mut Slots| {
        if q_slot.get(q as u32).is_none() {
            q_slot.set(q as u32, quantities.len());
            quantities.push(q as u32);
        }
    };
    for st in &s.stmts {
        let tq = quantity(p, st.target);
        let se = stmt_reach(tq);
        let mut tape = Vec::new();
        let mut regs = Regs {
            free: Vec::new(),
            count: 0,
        };
        // A write at a run-time level: the index, then the value, then the store (the
        // index's register stays held while the value is computed: `compile` never frees the
        // register of the value it returns).
        let index = st.k_var.as_ref().map(|k| {
            let at = compile(k, p, &mut tape, &mut regs);
            (at, type_of(p, k))
        });
        let last = compile(&st.expr, p, &mut tape, &mut regs);
        if let Some((at, ity)) = index {
            let dst = regs.take();
            tape.push(Instr {
                op: Op::StoreK(tq as u32, ity),
                dst,
                args: [at, last, ZERO_SRC],
                ty: type_of(p, &st.expr),
            });
        } else if !matches!(last, Src::Reg(_)) || tape.is_empty() {
            let dst = regs.take();
            tape.push(Instr {
                op: Op::Mov,
                dst,
                args: [last, ZERO_SRC, ZERO_SRC],
                ty: type_of(p, &st.expr),
            });
        }
        *max_regs = (*max_regs).max(regs.count as usize);
        let tape = fuse(tape);
        let direct = tape.last().is_some_and(|i| {
            !i.args
                .iter()
                .any(|a| matches!(a, Src::Q(q, _) if *q as usize == tq))
                && !matches!(i.op, Op::LoadK(..) | Op::StoreK(..))
        });
        let scatter = st.k_var.is_some();
        if scatter && var_slot.get(tq as u32).is_none() {
            // Written at run-time levels: straight to memory, like a run-time read.
            var_slot.set(tq as u32, var_reads.len());
            var_reads.push(tq as u32);
        }
        halo[0] = (halo[0].0.max(se[0]), halo[0].1.max(se[1]));
        halo[1] = (halo[1].0.max(se[2]), halo[1].1.max(se[3]));
        st.reads(&mut |a, off| {
            let q = quantity(p, a);
            add_q(q, &mut quantities, q_slot);
            if !matches!(kinds[q], Kind::Local) {
                let r = shifted(se, off);
                add_transfer(&mut loads, load_slot, q as u32, r, (-off[2], off[2]));
            }
            if matches!(kinds[q], Kind::Field { .. }) {
                match k_read_slot.get(q as u32) {
                    Some(i) => {
                        let t = &mut k_reads[i];
                        t.1 = t.1.min(off[2]);
                        t.2 = t.2.max(off[2]);
                    }
                    None => {
                        k_read_slot.set(q as u32, k_reads.len());
                        k_reads.push((q as u32, off[2], off[2]));
                    }
                }
                // Static K extent of the field, as GT4Py computes it.
                if let Kind::Field { field, .. } = kinds[q] {
                    k_extent[field].access(s, i64::from(off[2]));
                }
            }
        });
        st.var_reads(&mut |a, _| {
            let q = quantity(p, a) as u32;
            if var_slot.get(q).is_none() {
                var_slot.set(q, var_reads.len());
                var_reads.push(q);
            }
        });
        add_q(tq, &mut quantities, q_slot);
        written.set(tq as u32, 0);
        // A statement restricted to a region leaves the rest of its target as it was:
        // what goes back to memory is loaded first.
        let ko = st.k_offset;
        if st.region.is_some() && !matches!(kinds[tq], Kind::Local) {
            add_transfer(&mut loads, load_slot, tq as u32, se, (-ko, ko));
        }
        if !matches!(kinds[tq], Kind::Local) && !scatter {
            // Stores cover the levels written: the core's, shifted by the K offset.
            add_transfer(&mut stores, store_slot, tq as u32, se, (-ko, ko));
            if ko != 0 {
                // A quantity written at a K offset is loaded over every level stored, so
                // that a level of the stored box no statement writes keeps its value.
                add_transfer(&mut loads, load_slot, tq as u32, se, (-ko, ko));
            }
        }
        if let (Kind::Field { field, .. }, false) = (kinds[tq], scatter) {
            match k_write_slot.get(tq as u32) {
                Some(i) => {
                    let t = &mut k_writes[i];
                    (t.1, t.2) = (t.1.min(ko), t.2.max(ko));
                }
                None => {
                    k_write_slot.set(tq as u32, k_writes.len());
                    k_writes.push((tq as u32, ko, ko));
                }
            }
            // Static K extent of the written field, as GT4Py computes it.
            k_extent[field].access(s, i64::from(ko));
        }
        stmts.push(StmtPlan {
            target: tq as u32,
            reach: se,
            tape,
            direct,
            region: st.region,
            k_offset: ko,
            guard: guards.get(stmts.len()).cloned().unwrap_or_default(),
        });
    }
    for t in &stores {
        halo[2] = (halo[2].0.max(t.k.0), halo[2].1.max(t.k.1));
    }
    let write_through: Vec<u32> = var_reads
        .iter()
        .copied()
        .filter(|&q| written.get(q).is_some())
        .collect();
    let mut scattered: Vec<u32> = stmts
        .iter()
        .filter(|st| st.scatter())
        .map(|st| st.target)
        .collect();
    scattered.sort_unstable();
    scattered.dedup();
    for t in &loads {
        halo[0] = (halo[0].0.max(t.reach[0]), halo[0].1.max(t.reach[1]));
        halo[1] = (halo[1].0.max(t.reach[2]), halo[1].1.max(t.reach[3]));
        halo[2] = (halo[2].0.max(t.k.0), halo[2].1.max(t.k.1));
    }
    let h = |v: (i32, i32)| (v.0.max(0) as usize, v.1.max(0) as usize);
    SectionPlan {
        order: s.order,
        start: s.start,
        end: s.end,
        stmts,
        loads,
        stores,
        quantities,
        halo: [h(halo[0]), h(halo[1]), h(halo[2])],
        k_reads,
        flow: flow(s),
        k_writes,
        var_reads,
        write_through,
        scattered,
    }
}

/// What the statements of a program write and read, per quantity (see [`accesses`]).
struct Accesses {
    /// Per field: whether the stencil writes it.
    field_written: Vec<bool>,
    /// Per quantity: the computations that write it, in order.
    written_in_comp: Vec<Vec<usize>>,
    /// Per quantity: the sections that write or read it, in order.
    sections_of: Vec<Vec<usize>>,
    /// Per quantity: the largest K offset it is written or read at.
    k_margin: Vec<usize>,
    /// Per quantity: whether it is read at K levels computed at run time.
    var_read: Vec<bool>,
}

/// The first step of [`plan`]: which quantities are written, where; offsets along missing
/// axes; self reads (each checked by GT4Py's rules).
fn accesses(p: &Program, nq: usize) -> Result<Accesses> {
    // Which quantities are written, where; offsets along missing axes; self reads.
    let mut field_written = vec![false; p.fields.len()];
    let mut written_in_comp: Vec<Vec<usize>> = vec![Vec::new(); nq];
    let mut sections_of: Vec<Vec<usize>> = vec![Vec::new(); nq];
    let mut k_margin = vec![0usize; nq];
    // Quantities read at K levels computed at run time.
    let mut var_read = vec![false; nq];
    for (si, s) in p.sections.iter().enumerate() {
        for st in &s.stmts {
            let tq = quantity(p, st.target);
            if let Access::Field { field, .. } = st.target {
                let f = &p.fields[field];
                if !f.axes[0] || !f.axes[1] {
                    return Err(def_error(
                        st.line,
                        format!(
                            "assignment to field {:?} with dims {}: fields without an I or J axis cannot be written (GT4Py refuses it too)",
                            f.name,
                            f.dims()
                        ),
                    ));
                }
                field_written[field] = true;
            }
            let target_axes = match st.target {
                Access::Field { field, .. } => p.fields[field].axes,
                Access::Temp(t) => p.temps[t].axes,
            };
            if !target_axes[2] && s.order == IterOrder::Parallel {
                return Err(def_error(
                    st.line,
                    format!(
                        "assignment to {:?}, which has no K axis, in a PARALLEL computation: write it in a FORWARD or BACKWARD one (GT4Py's rule)",
                        name_of(p, st.target)
                    ),
                ));
            }
            // Sections (and their computations) come in order: each list stays sorted.
            if written_in_comp[tq].last() != Some(&s.computation) {
                written_in_comp[tq].push(s.computation);
            }
            if sections_of[tq].last() != Some(&si) {
                sections_of[tq].push(si);
            }
            if st.k_offset != 0 {
                check_k_write(p, s.order, st)?;
                k_margin[tq] = k_margin[tq].max(st.k_offset.unsigned_abs() as usize);
            }
            if st.k_var.is_some() {
                check_k_write(p, s.order, st)?;
                // Written at run-time levels: stored, and reached only through its memory.
                var_read[tq] = true;
            }
            let mut err = None;
            st.var_reads(&mut |a, k| {
                let q = quantity(p, a);
                if sections_of[q].last() != Some(&si) {
                    sections_of[q].push(si);
                }
                var_read[q] = true;
                let axes = match a {
                    Access::Field { field, .. } => p.fields[field].axes,
                    Access::Temp(t) => p.temps[t].axes,
                };
                let what = match k {
                    KIndex::Relative => "a variable K offset",
                    KIndex::Absolute => "an absolute K index (.at(K=...))",
                };
                if !axes[2] {
                    err.get_or_insert(def_error(
                        st.line,
                        format!("{what} on {:?}, which has no K axis", name_of(p, a)),
                    ));
                } else if k == KIndex::Relative && (!axes[0] || !axes[1]) {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "{what} on {:?}, which has no I or J axis: GT4Py's numpy backend fails on it",
                            name_of(p, a)
                        ),
                    ));
                }
            });
            st.reads(&mut |a, off| {
                let q = quantity(p, a);
                if sections_of[q].last() != Some(&si) {
                    sections_of[q].push(si);
                }
                k_margin[q] = k_margin[q].max(off[2].unsigned_abs() as usize);
                let axes = match a {
                    Access::Field { field, .. } => p.fields[field].axes,
                    Access::Temp(t) => p.temps[t].axes,
                };
                for (ax, name) in ["I", "J", "K"].iter().enumerate() {
                    if !axes[ax] && off[ax] != 0 {
                        err.get_or_insert(def_error(
                            st.line,
                            format!(
                                "offset {} along {name} on {:?}, which has no {name} axis",
                                off[ax],
                                name_of(p, a)
                            ),
                        ));
                    }
                }
                if q == tq && (off[0] != 0 || off[1] != 0) {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "{:?} is read at a horizontal offset in its own assignment",
                            name_of(p, a)
                        ),
                    ));
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
    }
    Ok(Accesses {
        field_written,
        written_in_comp,
        sections_of,
        k_margin,
        var_read,
    })
}

/// A step of [`plan`]: the bodies of `while` loops change what their conditions read only in
/// their last statement, or where GT4Py's backends agree all the same (see below). Returns,
/// per section and statement, the levels (relative to the point) at which a write at a
/// run-time K level must leave its target unchanged ([`StmtPlan::guard`]).
fn check_loop_conditions(p: &Program) -> Result<Vec<Vec<Vec<i32>>>> {
    // GT4Py's numpy backend tests a `while` condition again before every statement of the
    // body, its compiled backends once per pass: they agree, and so gridbuf is defined, where
    // no statement but the body's last changes what the condition reads. Two more cases agree,
    // in a loop that neither holds another loop nor is held by one:
    // - every statement after the one that changes the condition writes only temporaries
    //   read nowhere but in the loop's body, at the point itself (a counter such as `lev`):
    //   where the condition turns false, numpy skips them and the compiled backends run them
    //   once more, which nothing reads afterwards (the loop ends there either way, since they
    //   change nothing the condition reads);
    // - the statement writes at a run-time K level (`A[0, 0, lev] = ...`) and the condition
    //   reads its target at the point's column only: it changes the condition only where it
    //   changes the target at a level the condition reads, which the statement refuses at run
    //   time (`StmtPlan::guard`).
    let mut guards: Vec<Vec<Vec<i32>>> = p
        .sections
        .iter()
        .map(|s| vec![Vec::new(); s.stmts.len()])
        .collect();
    for (si, s) in p.sections.iter().enumerate() {
        for l in &s.loops {
            let cond = &s.stmts[l.head - 1];
            let alone = s.loops.iter().all(|o| {
                o == l
                    || !((o.head <= l.head && l.end <= o.end)
                        || (l.head <= o.head && o.end <= l.end))
            });
            let body = s.stmts.iter().enumerate();
            for (u, st) in body.take(l.end.saturating_sub(1)).skip(l.head) {
                let mut reads = false;
                let mut levels: Vec<i32> = Vec::new();
                let mut elsewhere = false;
                cond.reads(&mut |a, off| {
                    if a == st.target {
                        reads = true;
                        if off[..2] == [0, 0] {
                            levels.push(off[2]);
                        } else {
                            elsewhere = true;
                        }
                    }
                });
                cond.var_reads(&mut |a, _| {
                    if a == st.target {
                        reads = true;
                        elsewhere = true;
                    }
                });
                if !reads {
                    continue;
                }
                if alone && (u + 1..l.end).all(|v| loop_local(p, si, l, &s.stmts[v])) {
                    continue;
                }
                if alone && st.k_var.is_some() && !elsewhere {
                    levels.sort_unstable();
                    levels.dedup();
                    guards[si][u] = levels;
                    continue;
                }
                return Err(def_error(
                    st.line,
                    format!(
                        "the while loop's body changes {:?}, which its condition reads, before its last statement: GT4Py's numpy backend tests the condition again before every statement of the body and its compiled backends once per pass, so they disagree here; change it in the body's last statement",
                        name_of(p, st.target)
                    ),
                ));
            }
        }
    }
    Ok(guards)
}

/// Whether statement `st` of loop `l` of section `si` writes only a temporary that nothing
/// reads outside the loop's body: a 3-D temporary, written at the point itself, read only by
/// the body's statements (not the condition), at the point itself.
fn loop_local(
    p: &Program,
    si: usize,
    l: &crate::gtscript::ir::Loop,
    st: &crate::gtscript::ir::Stmt,
) -> bool {
    let Access::Temp(t) = st.target else {
        return false;
    };
    if p.temps[t].axes != [true; 3] || st.k_offset != 0 || st.k_var.is_some() {
        return false;
    }
    p.sections.iter().enumerate().all(|(sj, sec)| {
        sec.stmts.iter().enumerate().all(|(v, other)| {
            let inside = sj == si && (l.head..l.end).contains(&v);
            let mut ok = true;
            other.reads(&mut |a, off| ok &= a != st.target || (inside && off == [0; 3]));
            other.var_reads(&mut |a, _| ok &= a != st.target);
            ok
        })
    })
}

/// A step of [`plan`]: written fields are not read at horizontal offsets, and, as GT4Py's
/// rule has it, nothing written in a PARALLEL interval is read in that same interval at another
/// level (a race), unless the interval is one level deep. Reads at K offsets of what another
/// interval wrote are sound: the intervals run one after the other, and the schedule keeps
/// them so (no K slabs, no sweeps where a written field is read at a K offset).
fn check_written_reads(p: &Program, written_in_comp: &[Vec<usize>]) -> Result<()> {
    // Reads of written quantities.
    for s in &p.sections {
        let one_level =
            s.start.from_end == s.end.from_end && (s.end.offset - s.start.offset).abs() == 1;
        let mut written_here: Vec<usize> =
            s.stmts.iter().map(|st| quantity(p, st.target)).collect();
        written_here.sort_unstable();
        written_here.dedup();
        let racy = |q: usize| {
            s.order == IterOrder::Parallel && !one_level && written_here.binary_search(&q).is_ok()
        };
        for st in &s.stmts {
            let mut err = None;
            st.reads(&mut |a, off| {
                let q = quantity(p, a);
                if matches!(a, Access::Field { .. })
                    && !written_in_comp[q].is_empty()
                    && (off[0] != 0 || off[1] != 0)
                {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "field {:?} is written by the stencil and read at the horizontal offset {:?}; copy it to a temporary in an earlier stencil or read another field",
                            name_of(p, a),
                            off
                        ),
                    ));
                }
                if off[2] != 0 && racy(q) {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "{:?} is written in this PARALLEL interval and read there at the vertical offset {} (a race; GT4Py refuses it too); use FORWARD or BACKWARD",
                            name_of(p, a),
                            off[2]
                        ),
                    ));
                }
            });
            st.var_reads(&mut |a, _| {
                let q = quantity(p, a);
                if racy(q) {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "{:?} is written in this PARALLEL interval and read there at a K level computed at run time (GT4Py refuses it); use FORWARD or BACKWARD",
                            name_of(p, a),
                        ),
                    ));
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// A step of [`plan`]: statements computed beyond the domain (`stmt_reach` of their target
/// nonzero) read no written field.
fn check_reads_beyond_domain(
    p: &Program,
    stmt_reach: &impl Fn(usize) -> Reach,
    written_in_comp: &[Vec<usize>],
) -> Result<()> {
    // A statement computed beyond the domain must not read a written field.
    for s in &p.sections {
        for st in &s.stmts {
            let se = stmt_reach(quantity(p, st.target));
            if se == ZERO {
                continue;
            }
            let mut err = None;
            let mut accesses = Vec::new();
            st.reads(&mut |a, _| accesses.push(a));
            st.var_reads(&mut |a, _| accesses.push(a));
            accesses.into_iter().for_each(|a| {
                if matches!(a, Access::Field { .. })
                    && !written_in_comp[quantity(p, a)].is_empty()
                {
                    err.get_or_insert(def_error(
                        st.line,
                        format!(
                            "field {:?} is written by the stencil and read by a temporary that is needed beyond the compute domain",
                            name_of(p, a)
                        ),
                    ));
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Where a section goes after each statement: on, or, at the end of a `while` loop's body,
/// back to its condition; a condition whose mask is nowhere set leaves its loop (and if that
/// ends an enclosing loop's body too, goes back to that one's condition).
fn flow(s: &crate::gtscript::ir::Section) -> Vec<Flow> {
    // The position reached by going on to `pos` from inside the loops `inside` is in: the
    // condition of the innermost one whose body ends there, else `pos` itself.
    let after = |pos: usize, inside: &dyn Fn(&crate::gtscript::ir::Loop) -> bool| {
        s.loops
            .iter()
            .filter(|l| l.end == pos && inside(l))
            .min_by_key(|l| l.end - l.head)
            .map_or(pos, |l| l.head - 1)
    };
    (0..s.stmts.len())
        .map(|t| {
            let next = after(t + 1, &|l| l.head <= t && t < l.end);
            let exit = s
                .loops
                .iter()
                .find(|l| l.head == t + 1)
                .map(|own| after(own.end, &|l| l.head < own.head && own.end <= l.end));
            Flow { next, exit }
        })
        .collect()
}

fn name_of(p: &Program, a: Access) -> String {
    match a {
        Access::Field { field, .. } => p.fields[field].name.clone(),
        Access::Temp(t) => p.temps[t].name.clone(),
    }
}

/// The error for a K read beyond a field's extent at run time.
pub(crate) fn k_bounds_error(field: &str, level: i64, nk: usize) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: String::new(),
        expected: format!(
            "field {field:?} would be read at level {level} of a K domain of {nk} levels, beyond its extent; pass a larger field, a larger K origin, or a larger domain"
        ),
    }
}

/// The error for a write at a K offset beyond a field's extent at run time.
pub(crate) fn k_write_error(field: &str, level: i64, nk: usize) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: String::new(),
        expected: format!(
            "field {field:?} would be written at level {level} of a K domain of {nk} levels (an assignment at a K offset), beyond its extent; pass a larger field, a larger K origin, or a larger domain"
        ),
    }
}

/// The error for a read at a K level computed at run time outside the levels it may read.
pub(crate) fn var_k_error(name: &str, level: i64, lo: i64, hi: i64) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: format!("level {level}"),
        expected: format!(
            "a K level of {name:?} from {lo} to {} for its variable K offset or .at(K=...) read (levels counted from the domain's first; a field's levels are those of its array, a temporary's the domain's)",
            hi - 1
        ),
    }
}

/// Refuses an assignment at a K offset (static or computed at run time) where GT4Py refuses
/// it.
fn check_k_write(p: &Program, order: IterOrder, st: &crate::gtscript::ir::Stmt) -> Result<()> {
    let name = name_of(p, st.target);
    let offset = if st.k_var.is_some() {
        "a K offset computed at run time".to_owned()
    } else {
        format!("the K offset {}", st.k_offset)
    };
    if order == IterOrder::Parallel {
        return Err(def_error(
            st.line,
            format!(
                "assignment to {name:?} at {offset}: not available in PARALLEL computations (GT4Py's rule); use FORWARD or BACKWARD"
            ),
        ));
    }
    let axes = match st.target {
        Access::Field { field, .. } => p.fields[field].axes,
        Access::Temp(t) => p.temps[t].axes,
    };
    if !axes[2] {
        return Err(def_error(
            st.line,
            format!("assignment to {name:?} at {offset}: it has no K axis"),
        ));
    }
    Ok(())
}

/// The error for a write at a K level computed at run time outside the levels it may write.
pub(crate) fn var_k_write_error(name: &str, level: i64, lo: i64, hi: i64) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: format!("level {level}"),
        expected: format!(
            "a K level of {name:?} from {lo} to {} for its assignment at a variable K offset (levels counted from the domain's first; a field's levels are those of its array, a temporary's the domain's); nothing was written at that level",
            hi - 1
        ),
    }
}

/// The error for a write at a run-time K level that changes what a `while` loop's condition
/// reads before the body's last statement (see [`check_loop_conditions`]).
pub(crate) fn loop_guard_error(name: &str, level: i64) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: format!("level {level}"),
        expected: format!(
            "a while loop's body writes {name:?} at a variable K offset, at level {level}, which the loop's condition reads, before the body's last statement: GT4Py's numpy backend tests the condition again before every statement of the body and its compiled backends once per pass, so they disagree here; change it in the body's last statement"
        ),
    }
}
