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
//! region ILO IHI JLO JHI              # the next statement runs only in this horizontal box
//! while                               # the statement before is a loop's condition (a mask)
//! endwhile                            # end of the innermost open loop's body
//! stmtk LINE DK f FIELD COMPONENT EXPR # assignment at the K offset DK (FORWARD/BACKWARD)
//! stmtk LINE DK t TEMP EXPR
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

use crate::error::{Error, Result};

/// A gtscript value type: GT4Py's data types, in the order GT4Py upcasts them (a binary
/// operation on two types computes in the later one).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ty {
    /// `bool`
    Bool,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

impl Ty {
    /// Every type, in upcast order.
    pub const ALL: [Ty; 7] = [
        Ty::Bool,
        Ty::I8,
        Ty::I16,
        Ty::I32,
        Ty::I64,
        Ty::F32,
        Ty::F64,
    ];

    /// NumPy's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::I8 => "int8",
            Ty::I16 => "int16",
            Ty::I32 => "int32",
            Ty::I64 => "int64",
            Ty::F32 => "float32",
            Ty::F64 => "float64",
        }
    }

    /// The type NumPy names `name`, if gtscript has it.
    pub fn parse(name: &str) -> Option<Ty> {
        Ty::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `float32` or `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    /// A signed integer type.
    pub fn is_int(self) -> bool {
        matches!(self, Ty::I8 | Ty::I16 | Ty::I32 | Ty::I64)
    }

    /// Bits of one value (1 for `bool`).
    pub fn bits(self) -> u32 {
        match self {
            Ty::Bool => 1,
            Ty::I8 => 8,
            Ty::I16 => 16,
            Ty::I32 | Ty::F32 => 32,
            Ty::I64 | Ty::F64 => 64,
        }
    }

    /// Bytes of one element in memory.
    pub fn itemsize(self) -> usize {
        match self {
            Ty::Bool | Ty::I8 => 1,
            Ty::I16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 => 8,
        }
    }

    /// The array dtype of the type.
    pub fn dtype(self) -> crate::dtype::DType {
        use crate::dtype::DType;
        match self {
            Ty::Bool => DType::BOOL,
            Ty::I8 => DType::INT8,
            Ty::I16 => DType::INT16,
            Ty::I32 => DType::INT32,
            Ty::I64 => DType::INT64,
            Ty::F32 => DType::FLOAT32,
            Ty::F64 => DType::FLOAT64,
        }
    }
}

/// A literal: a float, or an integer (booleans are 0 and 1).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Value {
    /// A float.
    F(f64),
    /// An integer.
    I(i64),
}

impl Value {
    /// The value as a float (integers rounded to the nearest `f64`).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::F(v) => v,
            Value::I(v) => v as f64,
        }
    }
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
    /// A literal of a type.
    Const(Value, Ty),
    /// A conversion to a type (NumPy's `astype`).
    Cast(Ty, Box<Expr>),
    /// A unary operation.
    Un(UnOp, Box<Expr>),
    /// A binary operation.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `a if cond else b` (cond nonzero).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A read at the point's I and J and a K level computed at run time from an integer
    /// expression: relative to the point's level (GT4Py's variable K offset) or absolute,
    /// counted from the domain's first level (`.at(K=...)`).
    ReadK(Access, KIndex, Box<Expr>),
}

/// How a [`Expr::ReadK`] index gives the level it reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum KIndex {
    /// The point's level plus the index (`a[0, 0, idx]`).
    Relative,
    /// The index itself, counted from the domain's first level (`a.at(K=idx)`).
    Absolute,
}

impl Expr {
    /// Calls `f` on every read node (`Expr::Read`), mutably, so a pass can rewrite or replace it.
    pub fn reads_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            Expr::Read(..) => f(self),
            Expr::Scalar(_) | Expr::Const(..) => {}
            Expr::Un(_, a) | Expr::Cast(_, a) => a.reads_mut(f),
            Expr::ReadK(_, _, i) => {
                i.reads_mut(f);
                f(self);
            }
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

    /// Calls `f` on every read at a static offset in the expression (the indices of reads at
    /// levels computed at run time included; see [`Expr::var_reads`] for those reads).
    pub fn reads(&self, f: &mut impl FnMut(Access, [i32; 3])) {
        match self {
            Expr::Read(a, o) => f(*a, *o),
            Expr::Scalar(_) | Expr::Const(..) => {}
            Expr::Un(_, a) | Expr::Cast(_, a) | Expr::ReadK(_, _, a) => a.reads(f),
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

impl Expr {
    /// Calls `f` on every read at a level computed at run time ([`Expr::ReadK`]).
    pub fn var_reads(&self, f: &mut impl FnMut(Access, KIndex)) {
        match self {
            Expr::Read(..) | Expr::Scalar(_) | Expr::Const(..) => {}
            Expr::ReadK(a, k, i) => {
                f(*a, *k);
                i.var_reads(f);
            }
            Expr::Un(_, a) | Expr::Cast(_, a) => a.var_reads(f),
            Expr::Bin(_, a, b) => {
                a.var_reads(f);
                b.var_reads(f);
            }
            Expr::Select(c, a, b) => {
                c.var_reads(f);
                a.var_reads(f);
                b.var_reads(f);
            }
        }
    }
}

/// An assignment `target = expr` at offset zero, or at the K offset `k_offset` (GT4Py's
/// `a[0, 0, 1] = ...` in FORWARD and BACKWARD computations).
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// Line of the definition it comes from (for messages).
    pub line: u32,
    /// What it writes.
    pub target: Access,
    /// The value.
    pub expr: Expr,
    /// The K offset it writes at (0 for most statements).
    pub k_offset: i32,
    /// The horizontal region it is restricted to (`with horizontal(region[...])`), if any.
    pub region: Option<Region>,
}

/// A horizontal region: per axis I and J, the first and one-past-the-last index, each from
/// the start or the end of the compute domain, or unbounded (`None`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// `[lower, upper)` bounds along I, then J.
    pub bounds: [(Option<Level>, Option<Level>); 2],
}

impl Level {
    /// The index the bound names in a domain of `n` points (not clamped: a region may reach
    /// into the halo).
    pub fn at(self, n: usize) -> i64 {
        if self.from_end {
            n as i64 + self.offset
        } else {
            self.offset
        }
    }
}

/// A `while` loop of a section: statement `head - 1` computes its mask, statements
/// `head..end` are its body (masked by the frontend).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Index of the body's first statement.
    pub head: usize,
    /// One past the body's last statement.
    pub end: usize,
}

/// A field parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl {
    /// Name.
    pub name: String,
    /// Element type.
    pub ty: Ty,
    /// Whether it has an I, J, K axis.
    pub axes: [bool; 3],
    /// Data-dim extents.
    pub data_shape: Vec<usize>,
}

/// A scalar parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalarDecl {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: Ty,
}

/// A temporary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempDecl {
    /// Name.
    pub name: String,
    /// Type: declared, or (None) that of its first assignment.
    pub ty: Option<Ty>,
    /// Whether it has an I, J, K axis: `[true, true, false]` for a 2-D temporary, one value
    /// per column carried across levels.
    pub axes: [bool; 3],
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
    /// Its `while` loops, each over a range of `stmts` (nested ranges for nested loops).
    pub loops: Vec<Loop>,
}

/// A parsed stencil.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Name.
    pub name: String,
    /// Field parameters in argument order.
    pub fields: Vec<FieldDecl>,
    /// Scalar parameters in argument order.
    pub scalars: Vec<ScalarDecl>,
    /// Temporaries.
    pub temps: Vec<TempDecl>,
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

fn parse_dims(dims: &str, ln: usize) -> Result<[bool; 3]> {
    if dims.chars().any(|c| !"IJK".contains(c)) || dims.is_empty() {
        return Err(ir_error(ln, format!("bad dims {dims:?}")));
    }
    Ok([dims.contains('I'), dims.contains('J'), dims.contains('K')])
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

    fn expr(&self, t: &mut Tokens<'_>, depth: usize, default: Ty) -> Result<Expr> {
        if depth > 200 {
            return Err(ir_error(t.line, "expression nested too deeply"));
        }
        let op = t.next()?;
        let unary = super::ops::un_named(op);
        if let Some(u) = unary {
            return Ok(Expr::Un(u, Box::new(self.expr(t, depth + 1, default)?)));
        }
        let binary = super::ops::bin_named(op);
        if let Some(b) = binary {
            let a = self.expr(t, depth + 1, default)?;
            let c = self.expr(t, depth + 1, default)?;
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
                    Box::new(self.expr(t, depth + 1, default)?),
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
                Ok(Expr::Cast(ty, Box::new(self.expr(t, depth + 1, default)?)))
            }
            "sel" => {
                let c = self.expr(t, depth + 1, default)?;
                let a = self.expr(t, depth + 1, default)?;
                let b = self.expr(t, depth + 1, default)?;
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
                "stmt" | "stmtk" => {
                    let line_no: u32 = t.num()?;
                    let k_offset: i32 = if kw == "stmtk" { t.num()? } else { 0 };
                    let kind = t.next()?;
                    if kind != "f" && kind != "t" {
                        return Err(ir_error(ln, "statement target must be f or t"));
                    }
                    let target = p.access(&mut t, kind)?;
                    let expr = p.expr(&mut t, 0, default)?;
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
}
