//! Every operation of the IR ([`UnOp`], [`BinOp`]) and its facts, one table entry each: its
//! name in the IR text, its type rule (GT4Py's), which operand types GT4Py accepts, and how it
//! is computed (a Cranelift instruction, a short sequence, or an `extern "C"` math function
//! that the interpreter and the compiled code both call).
//!
//! The parser, the types pass, the inliner, the interpreter, the reference evaluator and both
//! code generators read these facts from here. To add a math function (one with no machine
//! instruction, like `tanh`): add its [`UnOp`] variant and one entry to [`UNARY`] (at the
//! variant's position), e.g.
//!
//! ```text
//! op1(U::Tanh, "tanh", FLOAT_FN, libm!(tanh, f64::tanh, f32::tanh)),
//! ```
//!
//! `libm!` defines the `extern "C"` functions (`gridbuf_tanh_f64`, `gridbuf_tanh_f32`) from
//! any Rust function of one float; everything else follows from the entry. Then add its name
//! to the property test's operators (`eval::jit_tests`, `UN`; a test checks it) and to the
//! Python frontend's list of functions.
//!
//! An operation computed by instructions (not a call) has code of its own besides its entry:
//! its scalar value in [`eval_un`] / [`eval_bin`] and its name in the kernels' list of
//! one-loop operations (`rt::interp`); on integers of mixed-type code, its forms in
//! `rt::lane` and `jit::wide`; a new kind of [`UnCode`] / [`BinCode`], its emission in
//! `jit::emit` and `jit::wide`.

pub mod math;
pub mod num;

use crate::gtscript::ir::{BinOp, Ty, UnOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::Opcode;
use num::Num;
pub use num::{Fn1, Fn2};

/// An operation with no machine instruction: one `extern "C"` function per float type, each
/// with the symbol name the compiled code imports it by. The interpreter calls the very same
/// functions, so both give the same bits.
#[derive(Copy, Clone, Debug)]
pub struct Math<F64, F32> {
    /// Symbol name and function for `float64`.
    pub f64: (&'static str, F64),
    /// Symbol name and function for `float32`.
    pub f32: (&'static str, F32),
}

/// The functions of a unary operation with no instruction.
pub type Math1 = Math<Fn1<f64>, Fn1<f32>>;
/// The functions of a binary operation with no instruction.
pub type Math2 = Math<Fn2<f64>, Fn2<f32>>;

/// How the type an operation computes in and its result's type follow from its operands'
/// common type (the largest in GT4Py's upcast order, [`Ty`]): NumPy's ufunc loops over
/// GT4Py's types, the smallest loop type at least as large as every operand.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TypeRule {
    /// Computes in the common type and gives a value of it (loops for every type).
    Common,
    /// Computes in the common type raised to at least this type and gives a value of that
    /// type: `Ty::I8` where NumPy has no `bool` loop, `Ty::F32` where it has float loops only.
    AtLeast(Ty),
    /// Computes in the common type and gives a boolean (comparisons, tests, logic).
    Predicate,
}

impl TypeRule {
    /// The type the operation computes in and its result's type, for operands whose common
    /// type is `common`.
    pub fn types(self, common: Ty) -> (Ty, Ty) {
        match self {
            TypeRule::Common => (common, common),
            TypeRule::AtLeast(t) => {
                let t = common.max(t);
                (t, t)
            }
            TypeRule::Predicate => (common, Ty::Bool),
        }
    }
}

/// Which operand types GT4Py accepts (the types pass refuses the others, with GT4Py's reason).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Operands {
    /// Every type.
    Any,
    /// Every type but `bool` (unary minus).
    NoBool,
    /// Booleans only (`not`, `and`, `or`).
    BoolOnly,
    /// Not two booleans (GT4Py's arithmetic operators; its native functions take them).
    NotBothBool,
}

/// What a float test compares its operand with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Against {
    /// Zero.
    Zero,
    /// Positive infinity.
    Infinity,
    /// The operand itself (a NaN test).
    Itself,
}

/// A test of a float that gives a boolean: `cc` between the operand (its magnitude where
/// `abs`) and [`Against`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Test {
    /// Whether the magnitude `|x|` is compared.
    pub abs: bool,
    /// The comparison.
    pub cc: FloatCC,
    /// What it is compared with.
    pub against: Against,
}

/// How a unary operation is computed on floats. On integers (mixed-type code only, see
/// `rt::lane` and `jit::wide`) the float functions never run (the types pass gives them a
/// float operand); the others have their integer forms there.
#[derive(Copy, Clone, Debug)]
pub enum UnCode {
    /// One Cranelift instruction of the float value (`fneg`, `fabs`, `sqrt`, `floor`, `ceil`,
    /// `trunc`, `nearest`).
    Inst(Opcode),
    /// GT4Py's round half away from zero, `copysign(floor(|x| + 0.5), x)` (an instruction
    /// sequence).
    RoundAway,
    /// A test giving a boolean.
    Test(Test),
    /// A math function (see [`Math`]).
    Call(Math1),
}

/// How a binary operation is computed.
#[derive(Copy, Clone, Debug)]
pub enum BinCode {
    /// One Cranelift float instruction (`fadd`, `fsub`, `fmul`, `fdiv`): the arithmetic the
    /// tape fuses in pairs (`Op::Bin2`). Integers have their own (wrapping, floored division).
    Arith(Opcode),
    /// NumPy's `minimum` or `maximum` (NaN wins, a tie gives the second operand).
    MinMax,
    /// A comparison, by its float and its (signed) integer condition code.
    Cmp(FloatCC, IntCC),
    /// `and` or `or` of booleans: the Cranelift instruction combining the two truth values
    /// (`band`, `bor`).
    Logic(Opcode),
    /// A math function on floats (see [`Math`]); integers have their own (`rt::lane`).
    Call(Math2),
}

/// A unary operation's facts.
#[derive(Copy, Clone, Debug)]
pub struct UnInfo {
    /// The operation (the entry's index in [`UNARY`]).
    pub op: UnOp,
    /// Its name in the IR text (GT4Py's gtscript name).
    pub name: &'static str,
    /// Its types (see [`TypeRule`]).
    pub rule: TypeRule,
    /// A GT4Py native function NumPy has float loops only for: GT4Py assumes it gives its
    /// operand's type, which the types pass checks on integer operands (`types::check`).
    pub float_fn: bool,
    /// The operand types GT4Py accepts.
    pub operands: Operands,
    /// How it is computed.
    pub code: UnCode,
}

/// A binary operation's facts.
#[derive(Copy, Clone, Debug)]
pub struct BinInfo {
    /// The operation (the entry's index in [`BINARY`]).
    pub op: BinOp,
    /// Its name in the IR text.
    pub name: &'static str,
    /// Its types (see [`TypeRule`]).
    pub rule: TypeRule,
    /// The operand types GT4Py accepts.
    pub operands: Operands,
    /// How it is computed.
    pub code: BinCode,
}

impl UnInfo {
    /// The math function computing it, where it has no instruction.
    pub fn math(&self) -> Option<Math1> {
        match self.code {
            UnCode::Call(m) => Some(m),
            _ => None,
        }
    }
}

impl BinInfo {
    /// The math function computing it on floats, where it has no instruction.
    pub fn math(&self) -> Option<Math2> {
        match self.code {
            BinCode::Call(m) => Some(m),
            _ => None,
        }
    }
}

/// The facts of `op`.
#[inline]
pub fn un(op: UnOp) -> &'static UnInfo {
    &UNARY[op as usize]
}

/// The facts of `op`.
#[inline]
pub fn bin(op: BinOp) -> &'static BinInfo {
    &BINARY[op as usize]
}

/// The unary operation the IR text names `name`.
pub fn un_named(name: &str) -> Option<UnOp> {
    UNARY.iter().find(|u| u.name == name).map(|u| u.op)
}

/// The binary operation the IR text names `name`.
pub fn bin_named(name: &str) -> Option<BinOp> {
    BINARY.iter().find(|b| b.name == name).map(|b| b.op)
}

/// The `extern "C"` functions (`gridbuf_NAME_f64`, `gridbuf_NAME_f32`) of a unary math
/// function, from the Rust functions computing it on `f64` and on `f32`: a [`UnCode::Call`].
macro_rules! libm {
    ($name:ident, $f64:expr, $f32:expr) => {
        UnCode::Call(Math {
            f64: (concat!("gridbuf_", stringify!($name), "_f64"), {
                extern "C" fn f(x: f64) -> f64 {
                    $f64(x)
                }
                f
            }),
            f32: (concat!("gridbuf_", stringify!($name), "_f32"), {
                extern "C" fn f(x: f32) -> f32 {
                    $f32(x)
                }
                f
            }),
        })
    };
}

/// The functions of `math.rs` computing a binary operation: `gridbuf_NAME_f64` and
/// `gridbuf_NAME_f32`, a [`BinCode::Call`].
macro_rules! math2 {
    ($f64:ident, $f32:ident) => {
        BinCode::Call(Math {
            f64: (stringify!($f64), num::$f64),
            f32: (stringify!($f32), num::$f32),
        })
    };
}

/// The type rule, operand rule and float-function flag of GT4Py's native float functions.
const FLOAT_FN: (TypeRule, Operands, bool) = (TypeRule::AtLeast(Ty::F32), Operands::Any, true);
/// Those of `floor`, `ceil`, `trunc`, `abs`: loops for every type.
const ANY_TYPE: (TypeRule, Operands, bool) = (TypeRule::Common, Operands::Any, false);

const fn op1(
    op: UnOp,
    name: &'static str,
    (rule, operands, float_fn): (TypeRule, Operands, bool),
    code: UnCode,
) -> UnInfo {
    UnInfo {
        op,
        name,
        rule,
        float_fn,
        operands,
        code,
    }
}

const fn op2(
    op: BinOp,
    name: &'static str,
    rule: TypeRule,
    operands: Operands,
    code: BinCode,
) -> BinInfo {
    BinInfo {
        op,
        name,
        rule,
        operands,
        code,
    }
}

const fn test(abs: bool, cc: FloatCC, against: Against) -> UnCode {
    UnCode::Test(Test { abs, cc, against })
}

/// Every unary operation, in [`UnOp`]'s order.
pub static UNARY: &[UnInfo] = &{
    use TypeRule::*;
    use UnOp as U;
    const PREDICATE: (TypeRule, Operands, bool) = (Predicate, Operands::Any, false);
    [
        // NumPy's negative has no bool loop, and GT4Py refuses a boolean.
        op1(
            U::Neg,
            "neg",
            (AtLeast(Ty::I8), Operands::NoBool, false),
            UnCode::Inst(Opcode::Fneg),
        ),
        op1(
            U::Not,
            "not",
            (Predicate, Operands::BoolOnly, false),
            test(false, FloatCC::Equal, Against::Zero),
        ),
        op1(U::Abs, "abs", ANY_TYPE, UnCode::Inst(Opcode::Fabs)),
        op1(U::Sqrt, "sqrt", FLOAT_FN, UnCode::Inst(Opcode::Sqrt)),
        op1(U::Exp, "exp", FLOAT_FN, libm!(exp, f64::exp, f32::exp)),
        op1(U::Log, "log", FLOAT_FN, libm!(log, f64::ln, f32::ln)),
        op1(
            U::Log10,
            "log10",
            FLOAT_FN,
            libm!(log10, f64::log10, f32::log10),
        ),
        op1(U::Sin, "sin", FLOAT_FN, libm!(sin, f64::sin, f32::sin)),
        op1(U::Cos, "cos", FLOAT_FN, libm!(cos, f64::cos, f32::cos)),
        op1(U::Tan, "tan", FLOAT_FN, libm!(tan, f64::tan, f32::tan)),
        op1(U::Asin, "asin", FLOAT_FN, libm!(asin, f64::asin, f32::asin)),
        op1(U::Acos, "acos", FLOAT_FN, libm!(acos, f64::acos, f32::acos)),
        op1(U::Atan, "atan", FLOAT_FN, libm!(atan, f64::atan, f32::atan)),
        op1(U::Sinh, "sinh", FLOAT_FN, libm!(sinh, f64::sinh, f32::sinh)),
        op1(U::Cosh, "cosh", FLOAT_FN, libm!(cosh, f64::cosh, f32::cosh)),
        op1(U::Tanh, "tanh", FLOAT_FN, libm!(tanh, f64::tanh, f32::tanh)),
        // std's inverse hyperbolic functions are formulas of a few ulps: the `libm` crate's.
        op1(
            U::Asinh,
            "asinh",
            FLOAT_FN,
            libm!(asinh, libm::asinh, libm::asinhf),
        ),
        op1(
            U::Acosh,
            "acosh",
            FLOAT_FN,
            libm!(acosh, libm::acosh, libm::acoshf),
        ),
        op1(
            U::Atanh,
            "atanh",
            FLOAT_FN,
            libm!(atanh, libm::atanh, libm::atanhf),
        ),
        op1(
            U::Gamma,
            "gamma",
            FLOAT_FN,
            libm!(gamma, libm::tgamma, libm::tgammaf),
        ),
        op1(U::Cbrt, "cbrt", FLOAT_FN, libm!(cbrt, f64::cbrt, f32::cbrt)),
        op1(U::Erf, "erf", FLOAT_FN, libm!(erf, libm::erf, libm::erff)),
        op1(
            U::Erfc,
            "erfc",
            FLOAT_FN,
            libm!(erfc, libm::erfc, libm::erfcf),
        ),
        op1(U::Floor, "floor", ANY_TYPE, UnCode::Inst(Opcode::Floor)),
        op1(U::Ceil, "ceil", ANY_TYPE, UnCode::Inst(Opcode::Ceil)),
        op1(U::Trunc, "trunc", ANY_TYPE, UnCode::Inst(Opcode::Trunc)),
        op1(U::Round, "round", FLOAT_FN, UnCode::Inst(Opcode::Nearest)),
        op1(
            U::RoundAway,
            "round_away_from_zero",
            FLOAT_FN,
            UnCode::RoundAway,
        ),
        // NumPy's isfinite has integer loops, but GT4Py types it as a float function.
        op1(
            U::IsFinite,
            "isfinite",
            (Predicate, Operands::Any, true),
            test(true, FloatCC::LessThan, Against::Infinity),
        ),
        op1(
            U::IsNan,
            "isnan",
            PREDICATE,
            test(false, FloatCC::Unordered, Against::Itself),
        ),
        op1(
            U::IsInf,
            "isinf",
            PREDICATE,
            test(true, FloatCC::Equal, Against::Infinity),
        ),
    ]
};

/// Every binary operation, in [`BinOp`]'s order.
pub static BINARY: &[BinInfo] = &{
    use BinOp as B;
    use Operands::{Any, BoolOnly, NotBothBool};
    use TypeRule::*;
    const fn cmp(op: BinOp, name: &'static str, f: FloatCC, i: IntCC) -> BinInfo {
        op2(op, name, Predicate, Any, BinCode::Cmp(f, i))
    }
    [
        op2(
            B::Add,
            "add",
            Common,
            NotBothBool,
            BinCode::Arith(Opcode::Fadd),
        ),
        op2(
            B::Sub,
            "sub",
            Common,
            NotBothBool,
            BinCode::Arith(Opcode::Fsub),
        ),
        op2(
            B::Mul,
            "mul",
            Common,
            NotBothBool,
            BinCode::Arith(Opcode::Fmul),
        ),
        // NumPy's true_divide has float loops only (GT4Py has no float16).
        op2(
            B::Div,
            "div",
            AtLeast(Ty::F32),
            NotBothBool,
            BinCode::Arith(Opcode::Fdiv),
        ),
        // floor_divide, remainder and power have no bool loop.
        op2(
            B::Pow,
            "pow",
            AtLeast(Ty::I8),
            Any,
            math2!(gridbuf_pow_f64, gridbuf_pow_f32),
        ),
        op2(
            B::Mod,
            "mod",
            AtLeast(Ty::I8),
            Any,
            math2!(gridbuf_mod_f64, gridbuf_mod_f32),
        ),
        op2(
            B::FloorDiv,
            "floordiv",
            AtLeast(Ty::I8),
            NotBothBool,
            math2!(gridbuf_floordiv_f64, gridbuf_floordiv_f32),
        ),
        op2(B::Min, "min", Common, Any, BinCode::MinMax),
        op2(B::Max, "max", Common, Any, BinCode::MinMax),
        cmp(B::Lt, "lt", FloatCC::LessThan, IntCC::SignedLessThan),
        cmp(
            B::Le,
            "le",
            FloatCC::LessThanOrEqual,
            IntCC::SignedLessThanOrEqual,
        ),
        cmp(B::Gt, "gt", FloatCC::GreaterThan, IntCC::SignedGreaterThan),
        cmp(
            B::Ge,
            "ge",
            FloatCC::GreaterThanOrEqual,
            IntCC::SignedGreaterThanOrEqual,
        ),
        cmp(B::Eq, "eq", FloatCC::Equal, IntCC::Equal),
        cmp(B::Ne, "ne", FloatCC::NotEqual, IntCC::NotEqual),
        op2(
            B::And,
            "and",
            Predicate,
            BoolOnly,
            BinCode::Logic(Opcode::Band),
        ),
        op2(
            B::Or,
            "or",
            Predicate,
            BoolOnly,
            BinCode::Logic(Opcode::Bor),
        ),
    ]
};

/// The value of unary `op` at `x`, on floats of type `T` (booleans as 1 and 0): each operation's
/// scalar evaluation. The interpreter's kernels (`rt::interp`, one loop per operation, `op`
/// a constant there) and the reference evaluator compute with it. A math function
/// ([`UnCode::Call`]) is looked up at every call: the kernels resolve it once per strip.
#[inline(always)]
pub fn eval_un<T: Num>(op: UnOp, x: T) -> T {
    match op {
        UnOp::Neg => -x,
        UnOp::Not => truth(x == T::ZERO),
        UnOp::Abs => x.abs(),
        UnOp::Sqrt => x.sqrt(),
        UnOp::Floor => x.floor(),
        UnOp::Ceil => x.ceil(),
        UnOp::Trunc => x.trunc(),
        UnOp::Round => x.round_even(),
        UnOp::RoundAway => x.round_away(),
        UnOp::IsFinite => truth(x.is_finite()),
        UnOp::IsNan => truth(x.is_nan()),
        UnOp::IsInf => truth(x.is_inf()),
        _ => T::unary_fn(op)
            .expect("every other unary op has a function")
            .1(x),
    }
}

/// The value of binary `op` at `x` and `y` (see [`eval_un`]).
#[inline(always)]
pub fn eval_bin<T: Num>(op: BinOp, x: T, y: T) -> T {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        // NumPy's minimum and maximum: NaN wins, and a tie (0 and -0) gives the second.
        BinOp::Min => {
            if x < y || x.is_nan() {
                x
            } else {
                y
            }
        }
        BinOp::Max => {
            if x > y || x.is_nan() {
                x
            } else {
                y
            }
        }
        BinOp::Lt => truth(x < y),
        BinOp::Le => truth(x <= y),
        BinOp::Gt => truth(x > y),
        BinOp::Ge => truth(x >= y),
        BinOp::Eq => truth(x == y),
        BinOp::Ne => truth(x != y),
        BinOp::And => truth(x != T::ZERO && y != T::ZERO),
        BinOp::Or => truth(x != T::ZERO || y != T::ZERO),
        _ => T::binary_fn(op)
            .expect("every other binary op has a function")
            .1(x, y),
    }
}

/// 1 or 0.
#[inline(always)]
fn truth<T: Num>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

/// Every math function of the table by symbol name and address (both float types), for the
/// compiled code's symbol table.
pub fn math_symbols() -> Vec<(&'static str, *const u8)> {
    let un = UNARY.iter().filter_map(UnInfo::math).flat_map(|m| {
        [
            (m.f64.0, m.f64.1 as *const u8),
            (m.f32.0, m.f32.1 as *const u8),
        ]
    });
    let bin = BINARY.iter().filter_map(BinInfo::math).flat_map(|m| {
        [
            (m.f64.0, m.f64.1 as *const u8),
            (m.f32.0, m.f32.1 as *const u8),
        ]
    });
    un.chain(bin).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each entry sits at its operation's index, and names are unique.
    #[test]
    fn tables_are_in_enum_order() {
        for (i, u) in UNARY.iter().enumerate() {
            assert_eq!(u.op as usize, i, "{:?}", u.op);
            assert_eq!(un_named(u.name), Some(u.op));
        }
        for (i, b) in BINARY.iter().enumerate() {
            assert_eq!(b.op as usize, i, "{:?}", b.op);
            assert_eq!(bin_named(b.name), Some(b.op));
        }
        assert!(UNARY
            .iter()
            .all(|u| BINARY.iter().all(|b| b.name != u.name)));
    }
}
