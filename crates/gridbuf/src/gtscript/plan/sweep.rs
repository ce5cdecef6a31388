//! Sweep schedules, planned once per axis: for each PARALLEL section, how many planes each
//! statement runs behind the sweep front and how many planes its block buffers keep (see
//! `exec::sweep`, which runs them).

use crate::gtscript::ir::IterOrder;
use crate::gtscript::plan::model::{Kind, Plan, SectionSweep, Slots};
use crate::gtscript::plan::tape::Src;

/// Plans a sweep along `axis` for every section of `plan`, or `None` where one cannot run as
/// a sweep: a section that is not PARALLEL, a temporary stored across levels or sections, a
/// temporary read before it is written, a statement that reads its own target at another plane, or a written field read at another plane or at a K offset
/// (whose values a tile boundary would split).
pub(crate) fn plan_sweeps(plan: &Plan, axis: usize) -> Option<Vec<SectionSweep>> {
    if plan.kinds.iter().any(|k| matches!(k, Kind::Stored { .. }))
        || plan.sections.iter().any(|s| !s.var_reads.is_empty())
    {
        return None;
    }
    // A `while` loop repeats statements: blocks run it.
    if plan.program.sections.iter().any(|s| !s.loops.is_empty()) {
        return None;
    }
    let written_field = |q: u32| matches!(plan.kinds[q as usize], Kind::Field { field, .. } if plan.field_written[field]);
    let local = |q: u32| matches!(plan.kinds[q as usize], Kind::Local);
    let nq = plan.kinds.len();
    let mut out = Vec::with_capacity(plan.sections.len());
    // Per quantity, over the statements of the section before the current one: the delay of
    // its first and of its last writer, the largest delay of a writer, and the largest
    // `delay - lowest offset` of a reader (each kept as it goes, so the section is planned in
    // one pass, not one pass per statement). `pos`: where a quantity is in a statement's reads.
    let mut first_w: Vec<Option<i64>> = vec![None; nq];
    let mut last_w: Vec<Option<i64>> = vec![None; nq];
    let mut max_w: Vec<Option<i64>> = vec![None; nq];
    let mut max_r: Vec<Option<i64>> = vec![None; nq];
    let mut pos = Slots::new(nq);
    for sec in &plan.sections {
        if sec.order != IterOrder::Parallel {
            return None;
        }
        let n = sec.stmts.len();
        // Per statement: (quantity, lowest, highest offset along `axis`) of every read.
        let reads: Vec<Vec<(u32, i64, i64)>> = sec
            .stmts
            .iter()
            .map(|st| {
                let mut r: Vec<(u32, i64, i64)> = Vec::new();
                pos.clear();
                for src in st.tape.iter().flat_map(|ins| ins.args) {
                    let Src::Q(q, off) = src else { continue };
                    if written_field(q) && (off[2] != 0 || off[axis] != 0) {
                        return None;
                    }
                    let o = off[axis] as i64;
                    match pos.get(q) {
                        Some(i) => {
                            let e = &mut r[i];
                            (e.1, e.2) = (e.1.min(o), e.2.max(o));
                        }
                        None => {
                            pos.set(q, r.len());
                            r.push((q, o, o));
                        }
                    }
                }
                Some(r)
            })
            .collect::<Option<_>>()?;
        let mut delay = vec![0i64; n];
        let mut window = 1i64;
        for t in 0..n {
            let target = sec.stmts[t].target;
            let tq = target as usize;
            let mut d = 0;
            for &(q, lo, hi) in &reads[t] {
                if q == target && (lo, hi) != (0, 0) {
                    return None;
                }
                match last_w[q as usize] {
                    // Plane `p + hi` of `q` is written before this statement reads it.
                    Some(w) => d = d.max(w + hi),
                    None if local(q) && q != target => return None,
                    None => {}
                }
            }
            // After every earlier write of its target, and after every plane an earlier
            // statement reads of it is read.
            if let Some(w) = max_w[tq] {
                d = d.max(w);
            }
            if let Some(r) = max_r[tq] {
                d = d.max(r);
            }
            delay[t] = d;
            // The window holds every plane read since the first writer of a temporary, the
            // one furthest ahead, wrote the newest.
            for &(q, lo, _) in &reads[t] {
                if let Some(w) = first_w[q as usize] {
                    if local(q) {
                        window = window.max(d - lo - w + 1);
                    }
                }
            }
            for &(q, lo, _) in &reads[t] {
                let r = &mut max_r[q as usize];
                *r = Some(r.map_or(d - lo, |r| r.max(d - lo)));
            }
            first_w[tq].get_or_insert(d);
            last_w[tq] = Some(d);
            max_w[tq] = Some(max_w[tq].map_or(d, |w| w.max(d)));
        }
        // Back to empty for the next section.
        for st in &sec.stmts {
            let q = st.target as usize;
            (first_w[q], last_w[q], max_w[q]) = (None, None, None);
        }
        for r in &reads {
            for &(q, _, _) in r {
                max_r[q as usize] = None;
            }
        }
        out.push(SectionSweep {
            delay,
            window: window as usize,
        });
    }
    Some(out)
}
