//! The typed IR of a gtscript stencil and its text form.
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
//! ```
//!
//! Expressions: `f FIELD COMPONENT DI DJ DK`, `t TEMP DI DJ DK`, `s SCALAR`, `c VALUE`, an
//! operator name followed by its operands (`add a b`, `neg a`, `sel cond a b`, ...). The unary
//! functions are GT4Py's native ones by their gtscript names (`sqrt`, `exp`, `log`, `log10`,
//! `sin` ... `atanh`, `gamma`, `cbrt`, `erf`, `erfc`, `floor`, `ceil`, `trunc`, `round`,
//! `round_away_from_zero`, `isfinite`, `isnan`, `isinf`); `mod` is NumPy's `remainder`.

use crate::error::{Error, Result};

/// Element type of a stencil's fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FloatType {
    /// `float64`
    F64,
    /// `float32`
    F32,
}

/// Iteration order of a computation along K.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IterOrder {
    /// Levels in any order; no level reads what another writes in the same computation.
    Parallel,
    /// Levels from the bottom up.
    Forward,
    /// Levels from the top down.
    Backward,
}

/// One bound of an interval: an offset from the start or from the end of the K domain.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// Counted from the end of the domain (else from the start).
    pub from_end: bool,
    /// The offset.
    pub offset: i64,
}

impl Level {
    /// The level for a domain of `nk` levels, clamped to `0..=nk`.
    pub fn resolve(self, nk: usize) -> usize {
        let base = if self.from_end { nk as i64 } else { 0 };
        (base + self.offset).clamp(0, nk as i64) as usize
    }
}

/// Unary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
    Sqrt,
    Exp,
    Log,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    /// The gamma function.
    Gamma,
    Cbrt,
    Erf,
    Erfc,
    Floor,
    Ceil,
    Trunc,
    /// To the nearest integer, half to even (NumPy's `round`).
    Round,
    /// To the nearest integer, half away from zero.
    RoundAway,
    IsFinite,
    IsNan,
    IsInf,
}

/// Binary operators; comparisons and boolean operators give 1 or 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Mod,
    FloorDiv,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// Where a value is read from, at a relative offset (I, J, K).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Component `comp` (flattened data-dim index) of field `field`.
    Field {
        /// Index in [`Program::fields`].
        field: usize,
        /// Flattened data-dim index (0 without data dims).
        comp: usize,
    },
    /// A temporary.
    Temp(usize),
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A read of a field or temporary at an offset.
    Read(Access, [i32; 3]),
    /// A scalar parameter.
    Scalar(usize),
    /// A literal.
    Const(f64),
    /// A unary operation.
    Un(UnOp, Box<Expr>),
    /// A binary operation.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `a if cond else b` (cond nonzero).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Calls `f` on every read node (`Expr::Read`), mutably, so a pass can rewrite or replace it.
    pub fn reads_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            Expr::Read(..) => f(self),
            Expr::Scalar(_) | Expr::Const(_) => {}
            Expr::Un(_, a) => a.reads_mut(f),
            Expr::Bin(_, a, b) => {
                a.reads_mut(f);
                b.reads_mut(f);
            }
            Expr::Select(c, a, b) => {
                c.reads_mut(f);
                a.reads_mut(f);
                b.reads_mut(f);
            }
        }
    }

    /// Calls `f` on every read in the expression.
    pub fn reads(&self, f: &mut impl FnMut(Access, [i32; 3])) {
        match self {
            Expr::Read(a, o) => f(*a, *o),
            Expr::Scalar(_) | Expr::Const(_) => {}
            Expr::Un(_, a) => a.reads(f),
            Expr::Bin(_, a, b) => {
                a.reads(f);
                b.reads(f);
            }
            Expr::Select(c, a, b) => {
                c.reads(f);
                a.reads(f);
                b.reads(f);
            }
        }
    }
}

/// An assignment `target = expr` at offset zero.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// Line of the definition it comes from (for messages).
    pub line: u32,
    /// What it writes.
    pub target: Access,
    /// The value.
    pub expr: Expr,
}

/// A field parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl {
    /// Name.
    pub name: String,
    /// Whether it has an I, J, K axis.
    pub axes: [bool; 3],
    /// Data-dim extents.
    pub data_shape: Vec<usize>,
}

impl FieldDecl {
    /// Number of components (product of the data-dim extents).
    pub fn components(&self) -> usize {
        self.data_shape.iter().product()
    }

    /// The dims string (`"IJK"`, `"IJ"`, `"K"`, ...).
    pub fn dims(&self) -> String {
        "IJK"
            .chars()
            .zip(self.axes)
            .filter(|(_, a)| *a)
            .map(|(c, _)| c)
            .collect()
    }
}

/// One `with computation(order), interval(start, end)` block.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Index of the computation it belongs to (blocks of one `computation` share it).
    pub computation: usize,
    /// Iteration order.
    pub order: IterOrder,
    /// First level.
    pub start: Level,
    /// One past the last level.
    pub end: Level,
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
}

/// A parsed stencil.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Name.
    pub name: String,
    /// Element type of every field.
    pub dtype: FloatType,
    /// Field parameters in argument order.
    pub fields: Vec<FieldDecl>,
    /// Scalar parameters in argument order.
    pub scalars: Vec<String>,
    /// Temporaries.
    pub temps: Vec<String>,
    /// Sections in execution order.
    pub sections: Vec<Section>,
}

/// A definition error: names the construct and the line.
pub(crate) fn def_error(line: u32, message: impl Into<String>) -> Error {
    Error::InvalidValue {
        param: "stencil definition".into(),
        value: format!("at line {line}"),
        expected: message.into(),
    }
}

fn ir_error(line: usize, message: impl Into<String>) -> Error {
    Error::invalid("stencil IR", format!("line {}", line + 1), message.into())
}

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

    fn expr(&self, t: &mut Tokens<'_>, depth: usize) -> Result<Expr> {
        if depth > 200 {
            return Err(ir_error(t.line, "expression nested too deeply"));
        }
        let op = t.next()?;
        let unary = match op {
            "neg" => Some(UnOp::Neg),
            "not" => Some(UnOp::Not),
            "abs" => Some(UnOp::Abs),
            "sqrt" => Some(UnOp::Sqrt),
            "exp" => Some(UnOp::Exp),
            "log" => Some(UnOp::Log),
            "log10" => Some(UnOp::Log10),
            "sin" => Some(UnOp::Sin),
            "cos" => Some(UnOp::Cos),
            "tan" => Some(UnOp::Tan),
            "asin" => Some(UnOp::Asin),
            "acos" => Some(UnOp::Acos),
            "atan" => Some(UnOp::Atan),
            "sinh" => Some(UnOp::Sinh),
            "cosh" => Some(UnOp::Cosh),
            "tanh" => Some(UnOp::Tanh),
            "asinh" => Some(UnOp::Asinh),
            "acosh" => Some(UnOp::Acosh),
            "atanh" => Some(UnOp::Atanh),
            "gamma" => Some(UnOp::Gamma),
            "cbrt" => Some(UnOp::Cbrt),
            "erf" => Some(UnOp::Erf),
            "erfc" => Some(UnOp::Erfc),
            "floor" => Some(UnOp::Floor),
            "ceil" => Some(UnOp::Ceil),
            "trunc" => Some(UnOp::Trunc),
            "round" => Some(UnOp::Round),
            "round_away_from_zero" => Some(UnOp::RoundAway),
            "isfinite" => Some(UnOp::IsFinite),
            "isnan" => Some(UnOp::IsNan),
            "isinf" => Some(UnOp::IsInf),
            _ => None,
        };
        if let Some(u) = unary {
            return Ok(Expr::Un(u, Box::new(self.expr(t, depth + 1)?)));
        }
        let binary = match op {
            "add" => Some(BinOp::Add),
            "sub" => Some(BinOp::Sub),
            "mul" => Some(BinOp::Mul),
            "div" => Some(BinOp::Div),
            "pow" => Some(BinOp::Pow),
            "mod" => Some(BinOp::Mod),
            "floordiv" => Some(BinOp::FloorDiv),
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            "lt" => Some(BinOp::Lt),
            "le" => Some(BinOp::Le),
            "gt" => Some(BinOp::Gt),
            "ge" => Some(BinOp::Ge),
            "eq" => Some(BinOp::Eq),
            "ne" => Some(BinOp::Ne),
            "and" => Some(BinOp::And),
            "or" => Some(BinOp::Or),
            _ => None,
        };
        if let Some(b) = binary {
            let a = self.expr(t, depth + 1)?;
            let c = self.expr(t, depth + 1)?;
            return Ok(Expr::Bin(b, Box::new(a), Box::new(c)));
        }
        match op {
            "f" | "t" => {
                let a = self.access(t, op)?;
                let off = [t.num()?, t.num()?, t.num()?];
                Ok(Expr::Read(a, off))
            }
            "s" => Ok(Expr::Scalar(t.index(self.scalars.len(), "scalar")?)),
            "c" => Ok(Expr::Const(t.num()?)),
            "sel" => {
                let c = self.expr(t, depth + 1)?;
                let a = self.expr(t, depth + 1)?;
                let b = self.expr(t, depth + 1)?;
                Ok(Expr::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            _ => Err(ir_error(t.line, format!("unknown operator {op:?}"))),
        }
    }

    /// Parses the text form (see the module docs).
    pub fn parse(text: &str) -> Result<Program> {
        let mut p = Program {
            name: String::new(),
            dtype: FloatType::F64,
            fields: Vec::new(),
            scalars: Vec::new(),
            temps: Vec::new(),
            sections: Vec::new(),
        };
        let mut comp: Option<(usize, IterOrder)> = None;
        let mut n_comp = 0;
        for (ln, line) in text.lines().enumerate() {
            let mut t = Tokens {
                it: line.split_whitespace(),
                line: ln,
            };
            let Some(kw) = t.it.next() else { continue };
            match kw {
                "stencil" => {
                    p.name = t.next()?.to_owned();
                    p.dtype = match t.next()? {
                        "float64" => FloatType::F64,
                        "float32" => FloatType::F32,
                        d => {
                            return Err(ir_error(
                                ln,
                                format!("dtype {d:?}: expected float64 or float32"),
                            ))
                        }
                    };
                }
                "field" => {
                    let name = t.next()?.to_owned();
                    let dims = t.next()?;
                    let axes = [dims.contains('I'), dims.contains('J'), dims.contains('K')];
                    if dims.chars().any(|c| !"IJK".contains(c)) || dims.is_empty() {
                        return Err(ir_error(ln, format!("bad dims {dims:?}")));
                    }
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
                        axes,
                        data_shape,
                    });
                }
                "scalar" => p.scalars.push(t.next()?.to_owned()),
                "temp" => p.temps.push(t.next()?.to_owned()),
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
                    });
                }
                "stmt" => {
                    let line_no: u32 = t.num()?;
                    let kind = t.next()?;
                    if kind != "f" && kind != "t" {
                        return Err(ir_error(ln, "statement target must be f or t"));
                    }
                    let target = p.access(&mut t, kind)?;
                    let expr = p.expr(&mut t, 0)?;
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
                        });
                }
                k => return Err(ir_error(ln, format!("unknown keyword {k:?}"))),
            }
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
        assert!(Program::parse("stencil x float64\nfield a IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 0 0 f 1 0 0 0 0\n").is_err());
    }
}
