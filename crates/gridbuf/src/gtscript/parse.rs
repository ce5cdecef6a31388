//! The text form of the IR, read into a [`Program`] by [`Program::parse`].
//!
//! The Python frontend lowers a definition to a short text, one declaration or statement per
//! line, with expressions in prefix notation; [`Program::parse`] reads it back. The text is the
//! whole interface between the frontend and the core, so the core can be tested without Python.
//!
//! ```text
//! stencil NAME DTYPE                  # DTYPE: float64 | float32
//! field NAME DIMS N0 N1 ...           # DIMS among I, J, K; Nd: data-dim extents
//! scalar NAME
//! temp NAME
//! comp ORDER                          # PARALLEL | FORWARD | BACKWARD
//! interval S|E OFFSET S|E OFFSET      # bounds from the start (S) or the end (E) of K
//! stmt LINE f FIELD COMPONENT EXPR    # assignment to a field component
//! stmt LINE t TEMP EXPR               # assignment to a temporary
//! region ILO IHI JLO JHI              # the next statement runs only in this horizontal box
//! while                               # the statement before is a loop's condition (a mask)
//! endwhile                            # end of the innermost open loop's body
//! stmtk LINE DK f FIELD COMPONENT EXPR # assignment at the K offset DK (FORWARD/BACKWARD)
//! stmtk LINE DK t TEMP EXPR
//! stmtkv LINE f FIELD COMPONENT IDX EXPR # assignment at the point's level plus the integer
//! stmtkv LINE t TEMP IDX EXPR            # IDX, computed at run time (FORWARD/BACKWARD)
//! ```
//!
//! A region bound is `S OFFSET` or `E OFFSET` (from the start or the end of the compute
//! domain along that axis) or `*` (unbounded); the box is `[LO, HI)`, GT4Py's
//! `region[I[0] + LO : ..., ...]`. A `while` loop runs its body while any point of the block
//! has its mask set; the frontend masks the body's statements with it.
//!
//! Expressions: `f FIELD COMPONENT DI DJ DK`, `t TEMP DI DJ DK`, `s SCALAR`, `c VALUE`, an
//! operator name followed by its operands (`add a b`, `neg a`, `sel cond a b`, ...). A read at a
//! K level computed at run time is `kvar f FIELD COMPONENT EXPR` or `kvar t TEMP EXPR` (the level
//! of the point plus the integer EXPR, GT4Py's variable K offset `a[0, 0, idx]`) or `kabs ...`
//! (the level EXPR counted from the domain's first level, GT4Py's `a.at(K=idx)`). The unary
//! functions are GT4Py's native ones by their gtscript names (`sqrt`, `exp`, `log`, `log10`,
//! `sin` ... `atanh`, `gamma`, `cbrt`, `erf`, `erfc`, `floor`, `ceil`, `trunc`, `round`,
//! `round_away_from_zero`, `isfinite`, `isnan`, `isinf`); `mod` is NumPy's `remainder`. Each
//! operator's name, types and code are its entry in [`super::ops`].
//!
//! A part of a statement's expression that occurs in it more than once may be written once:
//! `let N EXPR` stands for EXPR and names it N (0, 1, ... in the order they appear in the
//! statement), and a later `ref N` in the same statement stands for the same expression again.
//! The two read as the expression written out in full (the frontend's inlined functions copy a
//! local into every place that reads it, which written out grows with the product of the
//! copies); the planner computes equal parts of a statement once (`plan::tape`).

use crate::error::{Error, Result};
use crate::gtscript::ir::{
    Access, Expr, FieldDecl, IterOrder, KIndex, Level, Loop, Program, Region, ScalarDecl, Section,
    Stmt, TempDecl, Ty, Value,
};

fn parse_dims(dims: &str, ln: usize) -> Result<[bool; 3]> {
    if dims.chars().any(|c| !"IJK".contains(c)) || dims.is_empty() {
        return Err(ir_error(ln, format!("bad dims {dims:?}")));
    }
    Ok([dims.contains('I'), dims.contains('J'), dims.contains('K')])
}

fn ir_error(line: usize, message: impl Into<String>) -> Error {
    Error::invalid("stencil IR", format!("line {}", line + 1), message.into())
}

/// The parts of the statement being read that it named with `let`: each expression and its
/// height (levels of nesting), once read; the deepest level the statement has reached so far;
/// whether the token just read was a `let` (whose expression may not be another `let`, so
/// that every level of the parser's recursion reads a token of its own).
/// And the nodes the statement has so far, written out (`ref`s counted in full).
#[derive(Default)]
struct Shared {
    defs: Vec<Option<(Expr, usize, usize)>>,
    deepest: usize,
    after_let: bool,
    nodes: usize,
}

/// The deepest nesting an expression may have (the IR's limit, which the frontend knows as
/// `IR_MAX_DEPTH`).
const MAX_DEPTH: usize = 200;

/// The most nodes a statement's expression may have written out: `ref`s make an expression
/// that grows exponentially with the length of its text possible.
const MAX_NODES: usize = 1 << 22;

struct Tokens<'a> {
    it: std::str::SplitWhitespace<'a>,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Result<&'a str> {
        self.it
            .next()
            .ok_or_else(|| ir_error(self.line, "unexpected end of line"))
    }

    fn num<T: std::str::FromStr>(&mut self) -> Result<T> {
        let t = self.next()?;
        t.parse()
            .map_err(|_| ir_error(self.line, format!("expected a number, got {t:?}")))
    }

    fn index(&mut self, n: usize, what: &str) -> Result<usize> {
        let i: usize = self.num()?;
        if i >= n {
            return Err(ir_error(
                self.line,
                format!("{what} index {i} out of range"),
            ));
        }
        Ok(i)
    }

    fn ty(&mut self) -> Result<Ty> {
        let t = self.next()?;
        Ty::parse(t).ok_or_else(|| ir_error(self.line, format!("unknown type {t:?}")))
    }

    /// A type if the next token names one (else the token is left for the caller).
    fn opt_ty(&mut self) -> (Option<Ty>, Option<&'a str>) {
        match self.it.next() {
            Some(t) => match Ty::parse(t) {
                Some(ty) => (Some(ty), None),
                None => (None, Some(t)),
            },
            None => (None, None),
        }
    }

    /// A region bound: `S n`, `E n` or `*`.
    fn bound(&mut self) -> Result<Option<Level>> {
        let from_end = match self.next()? {
            "*" => return Ok(None),
            "S" => false,
            "E" => true,
            t => {
                return Err(ir_error(
                    self.line,
                    format!("expected S, E or *, got {t:?}"),
                ))
            }
        };
        Ok(Some(Level {
            from_end,
            offset: self.num()?,
        }))
    }

    fn level(&mut self) -> Result<Level> {
        let from_end = match self.next()? {
            "S" => false,
            "E" => true,
            t => return Err(ir_error(self.line, format!("expected S or E, got {t:?}"))),
        };
        Ok(Level {
            from_end,
            offset: self.num()?,
        })
    }
}

impl Program {
    fn access(&self, t: &mut Tokens<'_>, kind: &str) -> Result<Access> {
        match kind {
            "f" => {
                let field = t.index(self.fields.len(), "field")?;
                let comp = t.index(self.fields[field].components(), "component")?;
                Ok(Access::Field { field, comp })
            }
            _ => Ok(Access::Temp(t.index(self.temps.len(), "temporary")?)),
        }
    }

    fn expr(&self, t: &mut Tokens<'_>, depth: usize, default: Ty, sh: &mut Shared) -> Result<Expr> {
        if depth > MAX_DEPTH {
            return Err(ir_error(t.line, "expression nested too deeply"));
        }
        sh.deepest = sh.deepest.max(depth);
        let after_let = std::mem::take(&mut sh.after_let);
        let op = t.next()?;
        if op != "let" && op != "ref" {
            sh.nodes += 1;
        }
        match op {
            "let" => {
                if after_let {
                    return Err(ir_error(t.line, "let directly inside let"));
                }
                let n = t.index(sh.defs.len() + 1, "shared expression")?;
                if n != sh.defs.len() {
                    let want = sh.defs.len();
                    return Err(ir_error(t.line, format!("let {n}: expected let {want}")));
                }
                sh.defs.push(None);
                let outer = std::mem::replace(&mut sh.deepest, depth);
                let before = sh.nodes;
                sh.after_let = true;
                let e = self.expr(t, depth, default, sh)?;
                let height = sh.deepest - depth + 1;
                sh.deepest = sh.deepest.max(outer);
                sh.defs[n] = Some((e.clone(), height, sh.nodes - before));
                return Ok(e);
            }
            "ref" => {
                let n = t.index(sh.defs.len(), "shared expression")?;
                let Some((e, height, nodes)) = &sh.defs[n] else {
                    return Err(ir_error(t.line, format!("ref {n} inside its own let")));
                };
                let deepest = depth + height - 1;
                if deepest > MAX_DEPTH {
                    return Err(ir_error(t.line, "expression nested too deeply"));
                }
                sh.nodes += nodes;
                if sh.nodes > MAX_NODES {
                    return Err(ir_error(
                        t.line,
                        format!("expression of more than {MAX_NODES} nodes written out"),
                    ));
                }
                sh.deepest = sh.deepest.max(deepest);
                return Ok(e.clone());
            }
            _ => {}
        }
        let unary = crate::gtscript::ops::un_named(op);
        if let Some(u) = unary {
            return Ok(Expr::Un(u, Box::new(self.expr(t, depth + 1, default, sh)?)));
        }
        let binary = crate::gtscript::ops::bin_named(op);
        if let Some(b) = binary {
            let a = self.expr(t, depth + 1, default, sh)?;
            let c = self.expr(t, depth + 1, default, sh)?;
            return Ok(Expr::Bin(b, Box::new(a), Box::new(c)));
        }
        match op {
            "f" | "t" => {
                let a = self.access(t, op)?;
                let off = [t.num()?, t.num()?, t.num()?];
                Ok(Expr::Read(a, off))
            }
            "kvar" | "kabs" => {
                let kind = t.next()?;
                if kind != "f" && kind != "t" {
                    return Err(ir_error(t.line, "a K-indexed read is of f or t"));
                }
                let a = self.access(t, kind)?;
                let k = if op == "kvar" {
                    KIndex::Relative
                } else {
                    KIndex::Absolute
                };
                Ok(Expr::ReadK(
                    a,
                    k,
                    Box::new(self.expr(t, depth + 1, default, sh)?),
                ))
            }
            "s" => Ok(Expr::Scalar(t.index(self.scalars.len(), "scalar")?)),
            "c" => Ok(Expr::Const(Value::F(t.num()?), default)),
            "lit" => {
                let ty = t.ty()?;
                let v = if ty.is_float() {
                    Value::F(t.num()?)
                } else {
                    Value::I(t.num()?)
                };
                Ok(Expr::Const(v, ty))
            }
            "cast" => {
                let ty = t.ty()?;
                Ok(Expr::Cast(
                    ty,
                    Box::new(self.expr(t, depth + 1, default, sh)?),
                ))
            }
            "sel" => {
                let c = self.expr(t, depth + 1, default, sh)?;
                let a = self.expr(t, depth + 1, default, sh)?;
                let b = self.expr(t, depth + 1, default, sh)?;
                Ok(Expr::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            _ => Err(ir_error(t.line, format!("unknown operator {op:?}"))),
        }
    }

    /// Parses the text form (see the module docs).
    pub fn parse(text: &str) -> Result<Program> {
        let mut p = Program {
            name: String::new(),
            fields: Vec::new(),
            scalars: Vec::new(),
            temps: Vec::new(),
            sections: Vec::new(),
        };
        // The type of declarations and `c` literals that name none.
        let mut default = Ty::F64;
        let mut comp: Option<(usize, IterOrder)> = None;
        let mut n_comp = 0;
        // A `region` line applies to the next statement; `while` lines open loops.
        let mut region: Option<Region> = None;
        let mut open_loops: Vec<usize> = Vec::new();
        for (ln, line) in text.lines().enumerate() {
            let mut t = Tokens {
                it: line.split_whitespace(),
                line: ln,
            };
            let Some(kw) = t.it.next() else { continue };
            match kw {
                "stencil" => {
                    p.name = t.next()?.to_owned();
                    if let Some(d) = t.it.next() {
                        default = Ty::parse(d).filter(|d| d.is_float()).ok_or_else(|| {
                            ir_error(ln, format!("dtype {d:?}: expected float64 or float32"))
                        })?;
                    }
                }
                "field" => {
                    let name = t.next()?.to_owned();
                    let (ty, rest) = t.opt_ty();
                    let dims = match rest {
                        Some(d) => d,
                        None => t.next()?,
                    };
                    let axes = parse_dims(dims, ln)?;
                    let mut data_shape = Vec::new();
                    for n in t.it.by_ref() {
                        data_shape.push(
                            n.parse::<usize>()
                                .map_err(|_| ir_error(ln, "bad data-dim extent"))?,
                        );
                    }
                    if data_shape.contains(&0) {
                        return Err(ir_error(ln, "data-dim extents must be positive"));
                    }
                    p.fields.push(FieldDecl {
                        name,
                        ty: ty.unwrap_or(default),
                        axes,
                        data_shape,
                    });
                }
                "scalar" => {
                    let name = t.next()?.to_owned();
                    let (ty, rest) = t.opt_ty();
                    if rest.is_some() {
                        return Err(ir_error(ln, "trailing tokens"));
                    }
                    p.scalars.push(ScalarDecl {
                        name,
                        ty: ty.unwrap_or(default),
                    })
                }
                "temp" => {
                    let name = t.next()?.to_owned();
                    let (ty, rest) = match t.opt_ty() {
                        (None, Some("auto")) => (None, t.it.next()),
                        (None, None) => (Some(default), None),
                        (Some(ty), _) => (Some(ty), t.it.next()),
                        other => other,
                    };
                    let axes = match rest {
                        Some(d) => parse_dims(d, ln)?,
                        None => [true; 3],
                    };
                    if axes != [true; 3] && axes != [true, true, false] {
                        return Err(ir_error(ln, "a temporary has dims IJK or IJ"));
                    }
                    p.temps.push(TempDecl { name, ty, axes })
                }
                "comp" => {
                    let order = match t.next()? {
                        "PARALLEL" => IterOrder::Parallel,
                        "FORWARD" => IterOrder::Forward,
                        "BACKWARD" => IterOrder::Backward,
                        o => return Err(ir_error(ln, format!("unknown order {o:?}"))),
                    };
                    comp = Some((n_comp, order));
                    n_comp += 1;
                }
                "interval" => {
                    let (computation, order) =
                        comp.ok_or_else(|| ir_error(ln, "interval outside a computation"))?;
                    let start = t.level()?;
                    let end = t.level()?;
                    p.sections.push(Section {
                        computation,
                        order,
                        start,
                        end,
                        stmts: Vec::new(),
                        loops: Vec::new(),
                    });
                    if !open_loops.is_empty() {
                        return Err(ir_error(ln, "interval inside a while loop"));
                    }
                }
                "stmt" | "stmtk" | "stmtkv" => {
                    let line_no: u32 = t.num()?;
                    let k_offset: i32 = if kw == "stmtk" { t.num()? } else { 0 };
                    let kind = t.next()?;
                    if kind != "f" && kind != "t" {
                        return Err(ir_error(ln, "statement target must be f or t"));
                    }
                    let target = p.access(&mut t, kind)?;
                    let k_var = if kw == "stmtkv" {
                        Some(p.expr(&mut t, 0, default, &mut Shared::default())?)
                    } else {
                        None
                    };
                    let expr = p.expr(&mut t, 0, default, &mut Shared::default())?;
                    if t.it.next().is_some() {
                        return Err(ir_error(ln, "trailing tokens"));
                    }
                    p.sections
                        .last_mut()
                        .ok_or_else(|| ir_error(ln, "statement outside an interval"))?
                        .stmts
                        .push(Stmt {
                            line: line_no,
                            target,
                            expr,
                            region: region.take(),
                            k_offset,
                            k_var,
                        });
                }
                "region" => {
                    let mut b = [(None, None); 2];
                    for axis in &mut b {
                        axis.0 = t.bound()?;
                        axis.1 = t.bound()?;
                    }
                    if t.it.next().is_some() {
                        return Err(ir_error(ln, "trailing tokens"));
                    }
                    region = Some(Region { bounds: b });
                }
                "while" => {
                    let sec = p
                        .sections
                        .last()
                        .filter(|s| !s.stmts.is_empty())
                        .ok_or_else(|| ir_error(ln, "while without a condition statement"))?;
                    open_loops.push(sec.stmts.len());
                }
                "endwhile" => {
                    let head = open_loops
                        .pop()
                        .ok_or_else(|| ir_error(ln, "endwhile without while"))?;
                    let sec = p
                        .sections
                        .last_mut()
                        .ok_or_else(|| ir_error(ln, "endwhile outside an interval"))?;
                    let end = sec.stmts.len();
                    sec.loops.push(Loop { head, end });
                }
                k => return Err(ir_error(ln, format!("unknown keyword {k:?}"))),
            }
        }
        if !open_loops.is_empty() || region.is_some() {
            return Err(ir_error(
                text.lines().count(),
                "a while loop without endwhile, or a region without its statement",
            ));
        }
        if p.fields.is_empty() {
            return Err(Error::invalid(
                "stencil definition",
                &p.name,
                "a stencil needs at least one field parameter",
            ));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::ir::BinOp;

    #[test]
    fn parses_a_laplacian() {
        let p = Program::parse(
            "stencil lap float64\nfield inp IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\n\
             stmt 3 f 1 0 sub mul c -4 f 0 0 0 0 0 add f 0 0 1 0 0 f 0 0 -1 0 0\n",
        )
        .unwrap();
        assert_eq!(p.fields.len(), 2);
        assert_eq!(p.sections[0].stmts[0].line, 3);
        assert!(Program::parse("stencil x float16\n").is_err());
        let p = Program::parse(
            "stencil t\nfield m bool IJK\nfield n int32 IJ\nfield o float32 IJK 3\nscalar s int64\n\
             temp a auto IJ\ntemp b float32\ncomp FORWARD\ninterval S 0 E 0\n\
             stmt 1 f 2 1 cast float32 add lit int64 3 f 1 0 0 0 0\n",
        )
        .unwrap();
        assert_eq!(p.fields[0].ty, Ty::Bool);
        assert_eq!(
            (p.fields[1].ty, p.fields[1].axes),
            (Ty::I32, [true, true, false])
        );
        assert_eq!(p.scalars[0].ty, Ty::I64);
        assert_eq!(
            (p.temps[0].ty, p.temps[0].axes),
            (None, [true, true, false])
        );
        assert_eq!(p.temps[1].ty, Some(Ty::F32));
        let q = Program::parse("stencil t\nfield a IJK\ntemp x float64 IJ\n").unwrap();
        assert_eq!(q.temps[0].axes, [true, true, false]);
        assert!(matches!(
            &p.sections[0].stmts[0].expr,
            Expr::Cast(Ty::F32, e) if matches!(**e, Expr::Bin(BinOp::Add, ref a, _) if **a == Expr::Const(Value::I(3), Ty::I64))
        ));
        assert!(Program::parse("stencil x float64\nfield a IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 0 0 f 1 0 0 0 0\n").is_err());
    }

    #[test]
    fn parses_k_offset_writes_and_run_time_levels() {
        let p = Program::parse(
            "stencil k float64\nfield a IJK\nfield i int32 IJK\ntemp t\ncomp FORWARD\ninterval S 0 E -1\n\
             stmtk 7 1 t 0 kvar f 0 0 f 1 0 0 0 0\nstmtk 8 -2 f 0 0 kabs t 0 add f 1 0 0 0 0 lit int64 1\n",
        )
        .unwrap();
        let s = &p.sections[0].stmts;
        assert_eq!(
            (s[0].line, s[0].k_offset, s[0].target),
            (7, 1, Access::Temp(0))
        );
        assert_eq!(s[1].k_offset, -2);
        let field = Access::Field { field: 0, comp: 0 };
        assert!(matches!(&s[0].expr, Expr::ReadK(a, KIndex::Relative, i)
            if *a == field && matches!(**i, Expr::Read(Access::Field { field: 1, .. }, [0, 0, 0]))));
        assert!(matches!(
            &s[1].expr,
            Expr::ReadK(Access::Temp(0), KIndex::Absolute, _)
        ));
        let mut var = Vec::new();
        s[1].expr.var_reads(&mut |a, k| var.push((a, k)));
        assert_eq!(var, [(Access::Temp(0), KIndex::Absolute)]);
        let mut fixed = Vec::new();
        s[1].expr.reads(&mut |a, o| fixed.push((a, o)));
        assert_eq!(fixed, [(Access::Field { field: 1, comp: 0 }, [0, 0, 0])]);
        assert!(Program::parse("stencil x float64\nfield a IJK\ncomp FORWARD\ninterval S 0 E 0\nstmt 1 f 0 0 kvar s 0 lit int64 0\n").is_err());
    }

    #[test]
    fn shared_parts_read_as_written_out() {
        let head = "stencil s float64\nfield a IJK\nfield b IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
        let shared = Program::parse(&format!(
            "{head}stmt 1 f 1 0 mul let 0 add exp let 1 log f 0 0 0 0 0 ref 1 sub ref 0 ref 1\n"
        ))
        .unwrap();
        let log = "log f 0 0 0 0 0";
        let full = Program::parse(&format!(
            "{head}stmt 1 f 1 0 mul add exp {log} {log} sub add exp {log} {log} {log}\n"
        ))
        .unwrap();
        assert_eq!(shared.sections, full.sections);
        let bad = |e: &str| {
            Program::parse(&format!("{head}stmt 1 f 1 0 {e}\n"))
                .unwrap_err()
                .to_string()
        };
        assert!(bad("add let 1 f 0 0 0 0 0 f 0 0 0 0 0").contains("out of range"));
        assert!(bad("add let 0 neg f 0 0 0 0 0 let 0 neg f 0 0 0 0 0").contains("expected let 1"));
        assert!(bad("add ref 0 f 0 0 0 0 0").contains("out of range"));
        assert!(bad("let 0 add ref 0 f 0 0 0 0 0").contains("inside its own let"));
        assert!(bad("let 0 let 1 f 0 0 0 0 0").contains("let directly inside let"));
        // Names are the statement's own.
        let two = format!("{head}stmt 1 f 1 0 let 0 neg f 0 0 0 0 0\nstmt 2 f 1 0 ref 0\n");
        assert!(Program::parse(&two).is_err());
        // Written out, neither deeper than the IR allows nor exponentially large.
        let chain = (1..=4).fold("let 0 neg f 0 0 0 0 0".to_string(), |e, n| {
            format!("add {e} let {n} {}ref {}", "neg ".repeat(59), n - 1)
        });
        assert!(bad(&chain).contains("nested too deeply"));
        let mut doubling = "let 0 add f 0 0 0 0 0 f 0 0 0 0 0".to_string();
        for n in 1..=30 {
            doubling = format!("add {doubling} let {n} add ref {} ref {}", n - 1, n - 1);
        }
        assert!(bad(&doubling).contains("nodes written out"));
    }
}
