//! Inlining of temporaries that are read only at their own point, by one later statement of the
//! same section: `flx_raw = lap[1, 0, 0] - lap; flx = 0 if flx_raw * d > 0 else flx_raw`
//! becomes one statement. The value never goes through a block buffer, and the statement's
//! row loop (and its bounds checks) disappear. Measured on hdiff, 256x256x80 float64: 10.9 ms
//! with six statements, 9.8 ms with four.
//!
//! A temporary `t` written by statement `d` and read by statement `r` is inlined when:
//! - `d` is the only statement anywhere that writes `t`, and it does not read `t`;
//! - every read of `t` is at offset (0, 0, 0), all in `r`, which comes after `d` in the same
//!   section;
//! - no statement from `d + 1` to `r` writes anything `d` reads (so the inlined expression
//!   reads the same values the temporary was computed from);
//! - the cost model below allows it.
//!
//! The result is the same arithmetic on the same values, in the same order.
//!
//! # Cost model
//!
//! Inlining copies `d`'s expression into every read of `t` in `r`. Without a limit a chain
//! `t1 = t0 * t0; t2 = t1 * t1; ...` doubles the expression at each step (22 statements
//! needed more than 2 GiB), and a chain of single-use temporaries becomes one expression as
//! deep as the chain (every recursive pass down to the JIT would follow it, and the IR parser
//! refuses expressions nested deeper than 200). So a temporary stays a temporary when:
//! - it is read more than once by `r` and its expression has more than [`MAX_COPIED`] nodes
//!   (or calls a math function, which has no instruction), or `r` would grow past
//!   [`MAX_NODES_COPYING`] nodes: the copies would cost more than the buffer's store and load
//!   they save;
//! - inlining would grow `r`'s expression beyond [`MAX_NODES`] nodes or [`MAX_DEPTH`] levels
//!   (a statement already larger from the definition itself may still take a temporary that
//!   does not make it grow, e.g. `t = a`).
//!
//! Why these numbers: a temporary read once moves its expression, copying nothing: the
//! program's size stays the same and only depth and the size of one statement's machine code
//! need a bound. 64 levels are well under the parser's limit of 200 and keep every recursive
//! pass (typing, tapes, the planner's walks, the JIT's emitters) shallow; 4096 nodes keep one
//! statement's function to a few thousand instructions (a long tape runs one step per
//! iteration, see `jit`), compiled in milliseconds, while a fan of 1,000 temporaries
//! summed by one statement still folds into it (with 256 nodes, a fan of 300 ran 16 times
//! slower than fully inlined: 270 block buffers written and read). A temporary read k > 1
//! times computes its expression k times: 16 nodes per copy is about eight arithmetic
//! operations, the cost of the memory round trip it replaces, and statements that copy stay
//! under 256 nodes, so duplicated work stays small; hdiff's `flx_raw` (3 nodes, read twice)
//! is inlined as before.
//!
//! # Cost of the pass
//!
//! One pass over the statements in order, near-linear in the program's size: the reads of
//! every temporary are counted once, each statement's size and depth are kept and updated
//! as definitions are substituted into it (they never grow past the bounds above), and "is
//! anything `d` reads written between `d` and `r`" is a binary search in each quantity's
//! sorted list of writers. A statement is walked once, and again only after a substitution
//! that brought in reads of other temporaries (which may then qualify). `merge_branches`
//! is one pass per section. The two alternate until no branches merge (in practice at most
//! twice). A chain of 10,000 single-use temporaries: 26 ms, 323 statements left (before, the
//! pass restarted its scan from the first temporary after every success: 4.6 s to define a
//! chain of 1,000, one expression as deep as the chain); 10,000 squarings `t_k = t_(k-1) *
//! t_(k-1)`: 8 ms, 2,500 statements left (before: more than 2 GiB for 22).

use crate::gtscript::ir::{Access, Expr, Program, Stmt, UnOp};

/// The most nodes a statement's expression may grow to by inlining (see the module docs).
pub(crate) const MAX_NODES: usize = 4096;
/// The most nodes a statement's expression may grow to by inlining a temporary it reads more
/// than once (see the module docs).
pub(crate) const MAX_NODES_COPYING: usize = 256;
/// The deepest a statement's expression may grow to by inlining (see the module docs).
pub(crate) const MAX_DEPTH: usize = 64;
/// The most nodes of an expression that is copied into more than one read.
pub(crate) const MAX_COPIED: usize = 16;

/// Inlines every temporary that qualifies (see the module documentation), until none does,
/// and drops the temporaries no statement mentions any more.
pub(crate) fn inline_temps(p: &mut Program) {
    loop {
        inline_pass(p);
        if !merge_branches(p) {
            break;
        }
    }
    drop_unmentioned(p);
}

/// Node count and depth of an expression (a leaf: 1 and 1).
pub(crate) fn measure(e: &Expr) -> (usize, usize) {
    match e {
        Expr::Read(..) | Expr::Scalar(_) | Expr::Const(..) => (1, 1),
        Expr::Un(_, a) | Expr::Cast(_, a) | Expr::ReadK(_, _, a) => {
            let (n, d) = measure(a);
            (n + 1, d + 1)
        }
        Expr::Bin(_, a, b) => {
            let (na, da) = measure(a);
            let (nb, db) = measure(b);
            (na + nb + 1, da.max(db) + 1)
        }
        Expr::Select(c, a, b) => {
            let (nc, dc) = measure(c);
            let (na, da) = measure(a);
            let (nb, db) = measure(b);
            (nc + na + nb + 1, dc.max(da).max(db) + 1)
        }
    }
}

/// A set of small indices that empties in O(1) (`clear` bumps a generation), with a value
/// per member.
struct Marks {
    gen: Vec<u32>,
    val: Vec<usize>,
    now: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            gen: vec![0; n],
            val: vec![0; n],
            now: 1,
        }
    }

    fn clear(&mut self) {
        self.now += 1;
    }

    fn get(&self, i: usize) -> Option<usize> {
        (self.gen[i] == self.now).then(|| self.val[i])
    }

    fn set(&mut self, i: usize, v: usize) {
        self.gen[i] = self.now;
        self.val[i] = v;
    }
}

/// The reads of temporaries at their own point in `e`, in order of first read: (temporary,
/// number of reads, depth of the deepest one with the root at depth 1). `pos` is scratch.
fn temp_reads(e: &Expr, pos: &mut Marks) -> Vec<(usize, usize, usize)> {
    fn walk(e: &Expr, at: usize, pos: &mut Marks, out: &mut Vec<(usize, usize, usize)>) {
        match e {
            Expr::Read(Access::Temp(t), [0, 0, 0]) => match pos.get(*t) {
                Some(i) => {
                    out[i].1 += 1;
                    out[i].2 = out[i].2.max(at);
                }
                None => {
                    pos.set(*t, out.len());
                    out.push((*t, 1, at));
                }
            },
            Expr::Read(..) | Expr::Scalar(_) | Expr::Const(..) => {}
            Expr::Un(_, a) | Expr::Cast(_, a) | Expr::ReadK(_, _, a) => walk(a, at + 1, pos, out),
            Expr::Bin(_, a, b) => {
                walk(a, at + 1, pos, out);
                walk(b, at + 1, pos, out);
            }
            Expr::Select(c, a, b) => {
                walk(c, at + 1, pos, out);
                walk(a, at + 1, pos, out);
                walk(b, at + 1, pos, out);
            }
        }
    }
    pos.clear();
    let mut out = Vec::new();
    walk(e, 1, pos, &mut out);
    out
}

/// Replaces every read of a temporary at its own point in `e` that `sub` maps to an index of
/// `values` by a copy of that value.
fn substitute(e: &mut Expr, sub: &Marks, values: &[Expr]) {
    e.reads_mut(&mut |n| {
        if let Expr::Read(Access::Temp(t), [0, 0, 0]) = n {
            if let Some(i) = sub.get(*t) {
                *n = values[i].clone();
            }
        }
    });
}

/// One pass over the statements in order: into each, the temporaries that qualify (see the
/// module docs), their definitions already final (inlined into before, being earlier).
fn inline_pass(p: &mut Program) {
    let nt = p.temps.len();
    if nt == 0 {
        return;
    }
    // Quantities: field components, then temporaries.
    let mut base = Vec::with_capacity(p.fields.len());
    let mut n_comp = 0;
    for f in &p.fields {
        base.push(n_comp);
        n_comp += f.components();
    }
    let q_of = |a: Access| match a {
        Access::Field { field, comp } => base[field] + comp,
        Access::Temp(t) => n_comp + t,
    };
    let no_loops: Vec<bool> = p.sections.iter().map(|s| s.loops.is_empty()).collect();
    let mut sec_of = Vec::new();
    let mut stmts: Vec<Stmt> = Vec::new();
    for (s, sec) in p.sections.iter_mut().enumerate() {
        for st in sec.stmts.drain(..) {
            sec_of.push(s);
            stmts.push(st);
        }
    }
    let n = stmts.len();
    // What never changes in the pass: temporaries that can never be inlined (2-D, written at
    // a K offset, read at another point or at a run-time level, or read by a statement that
    // writes them), each one's writers, each quantity's writing statements in order, and the
    // number of statements reading each temporary (which inlining updates).
    let mut blocked: Vec<bool> = p.temps.iter().map(|t| t.axes != [true; 3]).collect();
    let mut writers = vec![0u32; nt];
    let mut writer = vec![0usize; nt];
    let mut n_readers = vec![0usize; nt];
    let mut last_reader = vec![usize::MAX; nt];
    let mut writes: Vec<Vec<usize>> = vec![Vec::new(); n_comp + nt];
    let mut size = vec![0usize; n];
    let mut depth = vec![0usize; n];
    for (g, st) in stmts.iter().enumerate() {
        writes[q_of(st.target)].push(g);
        if let Access::Temp(t) = st.target {
            if writers[t] == 0 {
                writer[t] = g;
            }
            writers[t] += 1;
            blocked[t] |= st.k_offset != 0 || st.k_var.is_some();
        }
        // A temporary read by a run-time write level stays (nothing is inlined into it).
        if let Some(k) = &st.k_var {
            k.reads(&mut |a, _| {
                if let Access::Temp(t) = a {
                    blocked[t] = true;
                }
            });
        }
        st.expr.reads(&mut |a, off| {
            if let Access::Temp(t) = a {
                blocked[t] |= off != [0; 3] || st.target == a;
                if last_reader[t] != g {
                    last_reader[t] = g;
                    n_readers[t] += 1;
                }
            }
        });
        st.var_reads(&mut |a, _| {
            if let Access::Temp(t) = a {
                blocked[t] = true;
            }
        });
        (size[g], depth[g]) = measure(&st.expr);
    }
    let mut alive = vec![true; n];
    let mut pos = Marks::new(nt);
    let mut in_r = Marks::new(nt);
    let mut sub = Marks::new(nt);
    let mut seen = Marks::new(n_comp + nt);
    for r in 0..n {
        loop {
            let reads = temp_reads(&stmts[r].expr, &mut pos);
            let (mut cur_size, mut cur_depth) = (size[r], depth[r]);
            let mut chosen: Vec<usize> = Vec::new();
            for &(t, k, at) in &reads {
                if blocked[t] || writers[t] != 1 || n_readers[t] != 1 {
                    continue;
                }
                let d = writer[t];
                if sec_of[d] != sec_of[r] || d >= r || !no_loops[sec_of[d]] {
                    continue;
                }
                let def = &stmts[d];
                // A value computed in a region only is not the same everywhere else.
                if def.region.is_some() && def.region != stmts[r].region {
                    continue;
                }
                // A value read more than once is computed once per read when inlined: worth
                // it for a little arithmetic, not for a math function's call.
                let new_size = cur_size + k * (size[d] - 1);
                if k > 1
                    && (size[d] > MAX_COPIED || calls(&def.expr) || new_size > MAX_NODES_COPYING)
                {
                    continue;
                }
                let new_depth = cur_depth.max(at + depth[d] - 1);
                if (new_size > MAX_NODES && new_size > cur_size)
                    || (new_depth > MAX_DEPTH && new_depth > cur_depth)
                {
                    continue;
                }
                // Nothing `d` reads is written after it, up to `r`.
                seen.clear();
                let mut clash = false;
                let mut check = |a: Access| {
                    let q = q_of(a);
                    if seen.get(q).is_none() {
                        seen.set(q, 0);
                        let w = &writes[q];
                        let i = w.partition_point(|&x| x <= d);
                        clash |= w.get(i).is_some_and(|&x| x <= r);
                    }
                };
                def.expr.reads(&mut |a, _| check(a));
                def.expr.var_reads(&mut |a, _| check(a));
                if clash {
                    continue;
                }
                (cur_size, cur_depth) = (new_size, new_depth);
                chosen.push(t);
            }
            if chosen.is_empty() {
                break;
            }
            // The temporaries the definitions read are now read by `r` (one reader fewer
            // where `r` read them already); any of them may qualify now.
            in_r.clear();
            for &(t, _, _) in &reads {
                in_r.set(t, 0);
            }
            sub.clear();
            let mut values = Vec::with_capacity(chosen.len());
            let mut brought = false;
            for (i, &t) in chosen.iter().enumerate() {
                let d = writer[t];
                alive[d] = false;
                n_readers[t] = 0;
                sub.set(t, i);
                let value = std::mem::replace(&mut stmts[d].expr, Expr::Scalar(0));
                pos.clear();
                value.reads(&mut |a, _| {
                    if let Access::Temp(u) = a {
                        brought = true;
                        // Once per definition: `d` and `r` both read `u`, or `r` now does.
                        if pos.get(u).is_none() {
                            pos.set(u, 0);
                            match in_r.get(u) {
                                Some(_) => n_readers[u] -= 1,
                                None => in_r.set(u, 0),
                            }
                        }
                    }
                });
                values.push(value);
            }
            substitute(&mut stmts[r].expr, &sub, &values);
            (size[r], depth[r]) = (cur_size, cur_depth);
            if !brought {
                break;
            }
        }
    }
    for ((st, s), live) in stmts.into_iter().zip(sec_of).zip(alive) {
        if live {
            p.sections[s].stmts.push(st);
        }
    }
}

fn reads_of(e: &Expr, t: Access) -> Vec<[i32; 3]> {
    let mut out = Vec::new();
    e.reads(&mut |a, off| {
        if a == t {
            out.push(off);
        }
    });
    out
}

/// Whether a statement reads `t` at a level computed at run time.
fn var_read(e: &Expr, t: Access) -> bool {
    let mut found = false;
    e.var_reads(&mut |a, _| found |= a == t);
    found
}

/// Whether `e` calls a math function (an operation with no machine instruction).
fn calls(e: &Expr) -> bool {
    match e {
        Expr::Read(..) | Expr::Scalar(_) | Expr::Const(..) => false,
        Expr::Un(op, a) => crate::gtscript::ops::un(*op).math().is_some() || calls(a),
        Expr::Cast(_, a) | Expr::ReadK(_, _, a) => calls(a),
        Expr::Bin(op, a, b) => {
            crate::gtscript::ops::bin(*op).math().is_some() || calls(a) || calls(b)
        }
        Expr::Select(c, a, b) => calls(c) || calls(a) || calls(b),
    }
}

/// Merges the two masked assignments an `if`/`else` becomes, `t = m ? a : t` followed by
/// `t = !m ? b : t`, into `t = m ? a : b`: at each point one branch applies, and the second
/// statement sees the first one's target unchanged wherever it applies (so `b` may read `t` at
/// its own point, not at another, where the first branch may have written it). One pass per
/// section; returns whether any pair merged.
pub(crate) fn merge_branches(p: &mut Program) -> bool {
    let mut merged = false;
    for sec in p.sections.iter_mut().filter(|s| s.loops.is_empty()) {
        let mut out: Vec<Stmt> = Vec::with_capacity(sec.stmts.len());
        for y in sec.stmts.drain(..) {
            if let Some(x) = out.last_mut() {
                if let Some(e) = merged_branches(x, &y) {
                    x.expr = e;
                    merged = true;
                    continue;
                }
            }
            out.push(y);
        }
        sec.stmts = out;
    }
    merged
}

/// The one statement `x` and the next statement `y` make, if they are the two branches of
/// an `if`/`else` (see [`merge_branches`]).
fn merged_branches(x: &Stmt, y: &Stmt) -> Option<Expr> {
    // The point the statements write (at their K offset).
    let at = [0, 0, x.k_offset];
    let own = |e: &Expr| matches!(e, Expr::Read(a, o) if *a == x.target && *o == at);
    match (&x.expr, &y.expr) {
        (Expr::Select(m, a, old1), Expr::Select(nm, b, old2))
            if x.target == y.target
                && x.region == y.region
                && x.k_offset == y.k_offset
                && x.k_var.is_none()
                && y.k_var.is_none()
                && own(old1)
                && own(old2)
                && matches!(&**nm, Expr::Un(UnOp::Not, m2) if m2 == m)
                && reads_of(b, x.target).iter().all(|o| *o == at)
                && reads_of(m, x.target).is_empty()
                && !var_read(b, x.target)
                && !var_read(m, x.target) =>
        {
            Some(Expr::Select(m.clone(), a.clone(), b.clone()))
        }
        _ => None,
    }
}

/// Removes the temporaries no statement mentions, renumbering the others (one pass).
fn drop_unmentioned(p: &mut Program) {
    let nt = p.temps.len();
    let mut used = vec![false; nt];
    for st in p.sections.iter().flat_map(|s| &s.stmts) {
        let mut mark = |a: Access| {
            if let Access::Temp(t) = a {
                used[t] = true;
            }
        };
        mark(st.target);
        st.reads(&mut |a, _| mark(a));
        st.var_reads(&mut |a, _| mark(a));
    }
    if used.iter().all(|&u| u) {
        return;
    }
    let mut index = vec![0; nt];
    let mut next = 0;
    for t in 0..nt {
        index[t] = next;
        next += used[t] as usize;
    }
    let mut t = 0;
    p.temps.retain(|_| {
        t += 1;
        used[t - 1]
    });
    for st in p.sections.iter_mut().flat_map(|s| &mut s.stmts) {
        if let Access::Temp(u) = &mut st.target {
            *u = index[*u];
        }
        let mut renumber = |n: &mut Expr| {
            if let Expr::Read(Access::Temp(u), _) | Expr::ReadK(Access::Temp(u), ..) = n {
                *u = index[*u];
            }
        };
        st.expr.reads_mut(&mut renumber);
        if let Some(k) = &mut st.k_var {
            k.reads_mut(&mut renumber);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(body: &str) -> Program {
        let text = format!(
            "stencil s float64\nfield a IJK\nfield b IJK\ntemp x\ntemp y\ncomp PARALLEL\ninterval S 0 E 0\n{body}"
        );
        Program::parse(&text).unwrap()
    }
    #[test]
    fn single_use_at_own_point_is_inlined_and_dropped() {
        // x = a[1] - a; b = x * x  ->  b = (a[1] - a) * (a[1] - a)
        let mut p = program(
            "stmt 1 t 0 sub f 0 0 1 0 0 f 0 0 0 0 0\nstmt 2 f 1 0 mul t 0 0 0 0 t 0 0 0 0\n",
        );
        inline_temps(&mut p);
        assert_eq!(p.sections[0].stmts.len(), 1);
        assert!(p.temps.is_empty());
        let want =
            program("stmt 2 f 1 0 mul sub f 0 0 1 0 0 f 0 0 0 0 0 sub f 0 0 1 0 0 f 0 0 0 0 0\n");
        assert_eq!(p.sections[0].stmts, want.sections[0].stmts);
    }

    #[test]
    fn offset_reads_and_intervening_writes_keep_the_temporary() {
        // Read at an offset: kept.
        let mut p = program("stmt 1 t 0 f 0 0 0 0 0\nstmt 2 f 1 0 t 0 1 0 0\n");
        inline_temps(&mut p);
        assert_eq!(p.sections[0].stmts.len(), 2);
        // x = a; a = 1; b = x: inlining would read the new a.
        let mut p = program("stmt 1 t 0 f 0 0 0 0 0\nstmt 2 f 0 0 c 1.0\nstmt 3 f 1 0 t 0 0 0 0\n");
        inline_temps(&mut p);
        assert_eq!(p.sections[0].stmts.len(), 3);
        // x = a; b = x; y = x; b = y: y is inlined (b = x) and dropped, then x has two
        // readers and is kept (inlining would compute it twice).
        let mut p = program("stmt 1 t 0 f 0 0 0 0 0\nstmt 2 f 1 0 t 0 0 0 0\nstmt 3 t 1 t 0 0 0 0\nstmt 4 f 1 0 t 1 0 0 0\n");
        inline_temps(&mut p);
        let want =
            program("stmt 1 t 0 f 0 0 0 0 0\nstmt 2 f 1 0 t 0 0 0 0\nstmt 4 f 1 0 t 0 0 0 0\n");
        assert_eq!(p.sections[0].stmts, want.sections[0].stmts);
        assert_eq!(
            p.temps.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["x"]
        );
    }

    /// `if m: b = a[1] else: b = -a` is one select; a branch reading `b` at another point
    /// keeps two statements.
    #[test]
    fn if_else_branches_merge() {
        let mut p = program(
            "stmt 1 t 0 gt f 0 0 0 0 0 c 0\nstmt 2 f 1 0 sel t 0 0 0 0 f 0 0 1 0 0 f 1 0 0 0 0\n\
             stmt 3 f 1 0 sel not t 0 0 0 0 neg f 0 0 0 0 0 f 1 0 0 0 0\n",
        );
        inline_temps(&mut p);
        let stmts = &p.sections[0].stmts;
        assert_eq!(stmts.len(), 1, "{stmts:?}");
        assert!(
            matches!(&stmts[0].expr, Expr::Select(_, _, b) if matches!(**b, Expr::Un(UnOp::Neg, _)))
        );
        let mut q = program(
            "stmt 1 t 0 gt f 0 0 0 0 0 c 0\nstmt 2 f 1 0 sel t 0 0 0 0 f 0 0 1 0 0 f 1 0 0 0 0\n\
             stmt 3 f 1 0 sel not t 0 0 0 0 f 1 0 1 0 0 f 1 0 0 0 0\n",
        );
        merge_branches(&mut q);
        assert_eq!(q.sections[0].stmts.len(), 3);
    }

    /// A program of `n` temporaries `x0 .. x{n-1}` and one statement per temporary (`body`
    /// gives the expression of `x{k}`), then `b = x{n-1}`.
    fn chain(n: usize, body: impl Fn(usize) -> String) -> Program {
        let mut text = String::from("stencil s float64\nfield a IJK\nfield b IJK\n");
        for k in 0..n {
            text += &format!("temp x{k}\n");
        }
        text += "comp PARALLEL\ninterval S 0 E 0\n";
        for k in 0..n {
            text += &format!("stmt {k} t {k} {}\n", body(k));
        }
        text += &format!("stmt {n} f 1 0 t {} 0 0 0\n", n - 1);
        Program::parse(&text).unwrap()
    }

    fn nodes(p: &Program) -> usize {
        p.sections
            .iter()
            .flat_map(|s| &s.stmts)
            .map(|st| measure(&st.expr).0)
            .sum()
    }

    /// hdiff as the frontend writes it: `flx_raw` and `fly_raw` (3 nodes, each read twice by
    /// `flx` and `fly`) are inlined as before the cost model; `lap`, `flx`, `fly` are read at
    /// offsets and stay (the measured 10.9 -> 9.8 ms).
    #[test]
    fn hdiff_inlines_its_raw_fluxes() {
        let mut p = Program::parse(
            "stencil hdiff float64\nfield inp IJK\nfield coeff IJK\nfield out IJK\ntemp lap\n\
             temp flx_raw\ntemp flx\ntemp fly_raw\ntemp fly\ncomp PARALLEL\ninterval S 0 E 0\n\
             stmt 1 t 0 sub mul c 4.0 f 0 0 0 0 0 add add add f 0 0 -1 0 0 f 0 0 1 0 0 f 0 0 0 -1 0 f 0 0 0 1 0\n\
             stmt 2 t 1 sub t 0 1 0 0 t 0 0 0 0\n\
             stmt 3 t 2 sel gt mul t 1 0 0 0 sub f 0 0 1 0 0 f 0 0 0 0 0 c 0.0 c 0.0 t 1 0 0 0\n\
             stmt 4 t 3 sub t 0 0 1 0 t 0 0 0 0\n\
             stmt 5 t 4 sel gt mul t 3 0 0 0 sub f 0 0 0 1 0 f 0 0 0 0 0 c 0.0 c 0.0 t 3 0 0 0\n\
             stmt 6 f 2 0 sub f 0 0 0 0 0 mul f 1 0 0 0 0 sub add sub t 2 0 0 0 t 2 -1 0 0 t 4 0 0 0 t 4 0 -1 0\n",
        )
        .unwrap();
        inline_temps(&mut p);
        let lines: Vec<u32> = p.sections[0].stmts.iter().map(|s| s.line).collect();
        assert_eq!(lines, [1, 3, 5, 6]);
        let names: Vec<&str> = p.temps.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["lap", "flx", "fly"]);
    }

    /// `x{k} = x{k-1} * x{k-1}`: inlining doubles the expression at each step, so a chain
    /// keeps a temporary wherever the copy would exceed `MAX_COPIED` nodes: the program grows
    /// linearly with the chain (not as 2^30), and no statement is larger than the bounds.
    #[test]
    fn double_read_chain_stays_bounded() {
        let read = |k: usize| {
            if k == 0 {
                "f 0 0 0 0 0".to_owned()
            } else {
                format!("t {} 0 0 0", k - 1)
            }
        };
        for n in [30, 300] {
            let mut p = chain(n, |k| format!("mul {} {}", read(k), read(k)));
            let before = nodes(&p);
            inline_temps(&mut p);
            let stmts: Vec<&Stmt> = p.sections.iter().flat_map(|s| &s.stmts).collect();
            // Some temporaries inlined, others kept.
            assert!(
                stmts.len() < n + 1 && stmts.len() > n / 5,
                "{}",
                stmts.len()
            );
            assert!(nodes(&p) <= 8 * before, "{} nodes from {before}", nodes(&p));
            for st in stmts {
                let (size, depth) = measure(&st.expr);
                assert!(size <= MAX_NODES_COPYING && depth <= MAX_DEPTH);
            }
        }
    }

    /// `x{k} = x{k-1} * 0.5 + a`, each read once: inlined into chunks no deeper than
    /// `MAX_DEPTH`, the same operations in the same order.
    #[test]
    fn single_use_chain_respects_the_depth_bound() {
        let read = |k: usize| {
            if k == 0 {
                "f 0 0 0 0 0".to_owned()
            } else {
                format!("t {} 0 0 0", k - 1)
            }
        };
        let body = |k: usize| format!("add mul {} c 0.5 f 0 0 0 0 0", read(k));
        let n = 3000;
        let mut p = chain(n, body);
        inline_temps(&mut p);
        let stmts: Vec<&Stmt> = p.sections.iter().flat_map(|s| &s.stmts).collect();
        // Each statement holds about MAX_DEPTH / 2 steps of the chain.
        assert!(stmts.len() <= 2 * n * 2 / MAX_DEPTH + 2, "{}", stmts.len());
        assert!(stmts.len() >= n * 2 / MAX_DEPTH, "{}", stmts.len());
        for st in &stmts {
            assert!(measure(&st.expr).1 <= MAX_DEPTH);
        }
        // Unfolding every remaining temporary gives back the whole chain: the same expression
        // as inlining without bounds would (so the same arithmetic in the same order). (A
        // shorter chain: the unfolded expression is as deep as the chain.)
        let n = 100;
        let mut p = chain(n, body);
        inline_temps(&mut p);
        assert!(p.sections[0].stmts.len() > 2);
        let mut values: Vec<Option<Expr>> = vec![None; p.temps.len()];
        let mut last = None;
        for st in &p.sections[0].stmts {
            let mut e = st.expr.clone();
            e.reads_mut(&mut |r| {
                if let Expr::Read(Access::Temp(t), _) = r {
                    *r = values[*t].clone().unwrap();
                }
            });
            match st.target {
                Access::Temp(t) => values[t] = Some(e),
                _ => last = Some(e),
            }
        }
        let want = chain(n, body);
        let mut unfolded = Expr::Read(Access::Temp(n - 1), [0; 3]);
        for k in (0..n).rev() {
            let def = &want.sections[0].stmts[k].expr;
            unfolded.reads_mut(&mut |r| {
                if matches!(r, Expr::Read(Access::Temp(t), _) if *t == k) {
                    *r = def.clone();
                }
            });
        }
        assert!(last.unwrap() == unfolded);
    }

    /// A fan: many temporaries read once by one large sum. Up to `MAX_NODES` it takes them
    /// all; past it the sum is never grown, but a temporary whose inlining does not grow it
    /// (`x = a`) is still inlined.
    #[test]
    fn large_readers_take_only_what_keeps_them_in_bounds() {
        let fan = |n: usize| {
            let mut text = String::from("stencil s float64\nfield a IJK\nfield b IJK\n");
            for k in 0..n {
                text += &format!("temp x{k}\n");
            }
            text += "comp PARALLEL\ninterval S 0 E 0\n";
            for k in 0..n {
                if k % 2 == 0 {
                    text += &format!("stmt {k} t {k} mul f 0 0 1 0 0 c {k}\n");
                } else {
                    text += &format!("stmt {k} t {k} f 0 0 0 0 {}\n", k % 3);
                }
            }
            // A balanced sum of the temporaries.
            fn sum(lo: usize, hi: usize) -> String {
                if hi - lo == 1 {
                    format!("t {lo} 0 0 0")
                } else {
                    let mid = (lo + hi) / 2;
                    format!("add {} {}", sum(lo, mid), sum(mid, hi))
                }
            }
            text += &format!("stmt {n} f 1 0 {}\n", sum(0, n));
            text
        };
        let mut p = Program::parse(&fan(400)).unwrap();
        inline_temps(&mut p);
        assert_eq!(p.sections[0].stmts.len(), 1);
        assert_eq!(measure(&p.sections[0].stmts[0].expr).0, 799 + 200 * 2);
        let n = 3000;
        let text = fan(n);
        let mut p = Program::parse(&text).unwrap();
        let before = measure(&p.sections[0].stmts[n].expr);
        inline_temps(&mut p);
        let stmts = &p.sections[0].stmts;
        // The odd ones (one node each) are inlined, the even ones (3 nodes) kept.
        assert_eq!(stmts.len(), n / 2 + 1);
        assert_eq!(measure(&stmts[n / 2].expr), before);
    }
}
