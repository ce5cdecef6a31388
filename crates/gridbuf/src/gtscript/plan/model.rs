//! What a plan is: the planned statements, sections, quantities and their transfers, the
//! stencil's lanes and sweep schedules. The steps that make one are in [`super`].

use crate::gtscript::ir::{Access, IterOrder, Level, Program, Region, Ty};
use crate::gtscript::plan::tape::Instr;

/// Horizontal reach below and above a region: (I lower, I upper, J lower, J upper); negative
/// values shrink the region.
pub type Reach = [i32; 4];

/// A planned statement.
#[derive(Clone, Debug, PartialEq)]
pub struct StmtPlan {
    /// The quantity it writes.
    pub target: u32,
    /// The region it is computed over, around the block's core.
    pub reach: Reach,
    /// The expression as a register tape; the last instruction gives the value.
    pub tape: Vec<Instr>,
    /// Whether the last instruction may write the target's buffer directly (it does not read
    /// the target).
    pub direct: bool,
    /// The K offset it writes at (GT4Py's `a[0, 0, 1] = ...`; 0 for most statements).
    pub k_offset: i32,
    /// The horizontal region it is restricted to, if any.
    pub region: Option<Region>,
    /// Per level the condition of a `while` loop around it reads the target at (relative to
    /// the point): a write at a run-time level (see [`StmtPlan::scatter`]) that changes the
    /// value there is refused at run time (see `plan::check_loop_conditions`).
    pub guard: Vec<i32>,
}

impl StmtPlan {
    /// Whether the statement writes at a K level computed at run time (GT4Py's
    /// `a[0, 0, idx] = ...`): its tape ends in [`crate::gtscript::plan::Op::StoreK`], which
    /// stores each point's value straight into the target's memory at its checked level, and
    /// it writes no block buffer. Only the interpreter runs it (`schedule::supported`), in
    /// blocks.
    pub fn scatter(&self) -> bool {
        matches!(
            self.tape.last(),
            Some(Instr {
                op: crate::gtscript::plan::tape::Op::StoreK(..),
                ..
            })
        )
    }
}

/// Where a section goes after a statement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    /// The next statement (one past the last: the section is done).
    pub next: usize,
    /// For a `while` loop's condition: where to go when no point of the block has its mask
    /// set (past the loop).
    pub exit: Option<usize>,
}

/// A quantity moved between memory and block buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    /// The quantity.
    pub q: u32,
    /// Horizontal region around the core.
    pub reach: Reach,
    /// K levels below and above the core (loads only; stores cover the core).
    pub k: (i32, i32),
}

/// A planned section (one interval of one computation).
#[derive(Clone, Debug, PartialEq)]
pub struct SectionPlan {
    /// Iteration order.
    pub order: IterOrder,
    /// First level.
    pub start: Level,
    /// One past the last level.
    pub end: Level,
    /// Statements in order.
    pub stmts: Vec<StmtPlan>,
    /// What is read from memory before the statements.
    pub loads: Vec<Transfer>,
    /// What is written to memory after them.
    pub stores: Vec<Transfer>,
    /// Every quantity that has a block buffer in this section.
    pub quantities: Vec<u32>,
    /// Block halo: (lower, upper) per axis I, J, K.
    pub halo: [(usize, usize); 3],
    /// Per field component read: (quantity, lowest and highest K offset read), for the run-time
    /// check of K bounds.
    pub k_reads: Vec<(u32, i32, i32)>,
    /// Per statement: where to go after it (`while` loops jump back and out).
    pub flow: Vec<Flow>,
    /// Per field component written: (quantity, lowest and highest K offset written), for the
    /// run-time check of K bounds before anything is written.
    pub k_writes: Vec<(u32, i32, i32)>,
    /// Quantities read or written at K levels computed at run time
    /// ([`crate::gtscript::plan::Op::LoadK`], [`crate::gtscript::plan::Op::StoreK`]): read from
    /// their memory, never from block buffers or column copies.
    pub var_reads: Vec<u32>,
    /// Quantities both written and read at run-time levels in this section: each statement
    /// writing one stores what it wrote to memory at once (where it is not written there
    /// directly), so the run-time reads see every write before them, as in GT4Py.
    pub write_through: Vec<u32>,
    /// Quantities written at run-time levels in this section (a subset of `var_reads` and of
    /// `write_through`): their block buffers are loaded again from memory after each such
    /// write, and never stored back at the block's end (every write went to memory at once).
    pub scattered: Vec<u32>,
}

impl SectionPlan {
    /// Whether quantity `q` must not be copied to column buffers in this section: it is read
    /// at run-time levels, or written at a K offset.
    pub fn no_columns(&self, q: u32) -> bool {
        self.var_reads.contains(&q) || self.stores.iter().any(|t| t.q == q && t.k != (0, 0))
    }
}

/// What a quantity is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Component `comp` of field `field`.
    Field {
        /// Field index.
        field: usize,
        /// Component.
        comp: usize,
    },
    /// A temporary that lives in block buffers only.
    Local,
    /// A temporary stored for the whole tile and all levels (read at a K offset or in more
    /// than one section).
    Stored {
        /// Horizontal region around the tile core it is needed over.
        reach: Reach,
        /// Largest K offset it is read at, either way.
        k_margin: usize,
        /// Whether it has an I, J, K axis (a 2-D temporary has no K axis: one value per
        /// column, carried across levels).
        axes: [bool; 3],
    },
}

/// A checked, planned stencil.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The program.
    pub program: Program,
    /// Per quantity: what it is.
    pub kinds: Vec<Kind>,
    /// Per field: (lower, upper) extent per axis I, J, K: how far beyond the domain it is
    /// accessed, negative where every access stays that far inside (see `plan::plan`). The
    /// binder's view of the field covers the domain widened by it.
    pub field_extent: Vec<[(i64, i64); 3]>,
    /// Per quantity: how far beyond the domain it is needed, as GT4Py plans it (regions
    /// restrict it; see `plan::extents`). Each statement runs at most over its target's extent.
    pub extent: Vec<Reach>,
    /// The fewest points along I and J for which the extents hold (see `plan::extents`).
    pub min_domain: [usize; 2],
    /// Per field: whether the stencil writes it.
    pub field_written: Vec<bool>,
    /// Sections in order.
    pub sections: Vec<SectionPlan>,
    /// The most registers any tape uses.
    pub max_regs: usize,
    /// Index of the first written field (its layout picks the loop order); None if none.
    pub first_output: Option<usize>,
    /// The fewest K levels a call may have (as GT4Py computes it from the intervals).
    pub min_k: usize,
    /// How the evaluator holds values.
    pub lanes: Lanes,
    /// Per sweep axis I, J, K: every section's sweep schedule along it, where the stencil can
    /// run as sweeps (see `exec::sweep`); `None` runs it in blocks.
    pub sweeps: [Option<Vec<SectionSweep>>; 3],
}

/// Per quantity, its position in a list being built (one list per section): what
/// `iter().find` found in time linear in the list, in constant time (a section with thousands
/// of quantities made the planner quadratic). `clear` empties it in constant time.
pub(crate) struct Slots {
    gen: Vec<u32>,
    pos: Vec<u32>,
    now: u32,
}

impl Slots {
    pub(crate) fn new(n: usize) -> Slots {
        Slots {
            gen: vec![0; n],
            pos: vec![0; n],
            now: 1,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.now += 1;
    }

    pub(crate) fn get(&self, q: u32) -> Option<usize> {
        (self.gen[q as usize] == self.now).then(|| self.pos[q as usize] as usize)
    }

    pub(crate) fn set(&mut self, q: u32, i: usize) {
        self.gen[q as usize] = self.now;
        self.pos[q as usize] = i as u32;
    }
}

impl Plan {
    /// Per field: GT4Py's K boundary (its `compute_k_boundary`), the levels below the domain's
    /// first and above its last that the stencil's static accesses (reads and writes) reach:
    /// an access at K offset `k` in an interval starting `s` levels after the domain's start
    /// reaches `-s - k` below it, and in one ending `e` levels from the domain's end, `e + k`
    /// above it. Negative where every access stays inside; 0 where no access decides.
    pub fn k_boundary(&self) -> Vec<(i64, i64)> {
        let mut out = vec![(i64::MIN, i64::MIN); self.program.fields.len()];
        for sec in &self.program.sections {
            let mut reach = |a: Access, k: i64| {
                let Access::Field { field, .. } = a else {
                    return;
                };
                let b = &mut out[field];
                if !sec.start.from_end {
                    b.0 = b.0.max(-sec.start.offset - k);
                }
                if sec.end.from_end {
                    b.1 = b.1.max(sec.end.offset + k);
                }
            };
            for stmt in &sec.stmts {
                stmt.reads(&mut |a, off| reach(a, i64::from(off[2])));
                // A write at a run-time level decides nothing (GT4Py skips such accesses).
                if stmt.k_var.is_none() {
                    reach(stmt.target, i64::from(stmt.k_offset));
                }
            }
        }
        let decided = |v: i64| if v == i64::MIN { 0 } else { v };
        out.into_iter()
            .map(|(lo, hi)| (decided(lo), decided(hi)))
            .collect()
    }

    /// Whether any section has a `while` loop: the only construct whose running time the
    /// domain does not bound.
    pub fn has_loops(&self) -> bool {
        self.sections
            .iter()
            .any(|s| s.flow.iter().any(|f| f.exit.is_some()))
    }

    /// The element type of quantity `q`: its field's, or its temporary's (as typed by
    /// [`crate::gtscript::passes::types::check`]).
    pub fn quantity_ty(&self, q: u32) -> Ty {
        match self.kinds[q as usize] {
            Kind::Field { field, .. } => self.program.fields[field].ty,
            _ => {
                let n_comp = self
                    .kinds
                    .iter()
                    .filter(|k| matches!(k, Kind::Field { .. }))
                    .count();
                self.program.temps[q as usize - n_comp]
                    .ty
                    .unwrap_or(Ty::F64)
            }
        }
    }
}

/// How the evaluator holds values: in the one float type of a stencil whose fields, scalars
/// and operations are all of that type (booleans as 1 and 0), else in 64-bit lanes that hold
/// any type ([`crate::gtscript::Lane`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// Everything `float64` (or boolean).
    F64,
    /// Everything `float32` (or boolean).
    F32,
    /// Mixed types.
    Wide,
}

impl Lanes {
    /// Whether memory of element type `ty` holds these lanes' values as they are, so compiled
    /// code reads and writes it in place (else its values are converted through buffers).
    pub fn native(self, ty: Ty) -> bool {
        match self {
            Lanes::F64 => ty == Ty::F64,
            Lanes::F32 => ty == Ty::F32,
            Lanes::Wide => matches!(ty, Ty::F64 | Ty::I64),
        }
    }
}

/// The sweep schedule of one section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionSweep {
    /// Per statement: how many planes it runs behind the sweep front.
    pub delay: Vec<i64>,
    /// Planes each block buffer holds.
    pub window: usize,
}
