//! The typed IR of a gtscript stencil: its types, values, operations, expressions, statements,
//! sections and the program. Its text form is read by [`crate::gtscript::parse`].

use crate::error::Error;

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
    pub fn dtype(self) -> crate::arrays::dtype::DType {
        use crate::arrays::dtype::DType;
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
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
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
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
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

/// An assignment `target = expr` at offset zero, at the K offset `k_offset` (GT4Py's
/// `a[0, 0, 1] = ...` in FORWARD and BACKWARD computations), or at a K level computed at run
/// time, `k_var` (GT4Py's `a[0, 0, idx] = ...`, FORWARD and BACKWARD only).
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
    /// The K level it writes at, computed at run time: the point's level plus this integer
    /// expression (`k_offset` is then 0). Such a write goes straight to the target's memory,
    /// at a level checked against it (see `plan::StmtPlan::scatter`).
    pub k_var: Option<Expr>,
    /// The horizontal region it is restricted to (`with horizontal(region[...])`), if any.
    pub region: Option<Region>,
}

impl Stmt {
    /// Calls `f` on every read at a static offset of the statement: its value's and its
    /// run-time write level's (see [`Expr::reads`]).
    pub fn reads(&self, f: &mut impl FnMut(Access, [i32; 3])) {
        self.expr.reads(f);
        if let Some(k) = &self.k_var {
            k.reads(f);
        }
    }

    /// Calls `f` on every read at a run-time K level of the statement (see
    /// [`Expr::var_reads`]).
    pub fn var_reads(&self, f: &mut impl FnMut(Access, KIndex)) {
        self.expr.var_reads(f);
        if let Some(k) = &self.k_var {
            k.var_reads(f);
        }
    }
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
