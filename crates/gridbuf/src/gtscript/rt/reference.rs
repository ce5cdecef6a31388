//! The reference of the evaluator's property tests: GT4Py's semantics point by point on the
//! program as parsed, over arrays of deterministic random values (see `jit_tests`).

use crate::gtscript::ir::{Access, BinOp, Expr, IterOrder, Program, UnOp};
use crate::gtscript::ops::num::Num;
use crate::gtscript::plan::Plan;
use crate::gtscript::rt::mem::FieldMem;

/// A small deterministic generator (splitmix64) for the input values.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Mostly ordinary values (including negative, and small multiples of 0.5 so that
    /// comparisons, `mod` and `floordiv` meet ties), some special ones.
    pub(crate) fn value(&mut self) -> f64 {
        let r = self.next();
        match r % 32 {
            0 | 16 => 0.0,
            1 | 17 => -0.0,
            2 => f64::NAN,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            5 => 1e300,
            6 => -3e-310,
            7 => 1e-40,
            8..=15 => ((r >> 8) % 13) as f64 * 0.5 - 3.0,
            _ => ((r >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 20.0,
        }
    }
}

pub(crate) trait Elem: Num + crate::gtscript::rt::lane::Elem {
    fn same(self, other: Self) -> bool;
}

impl Elem for f64 {
    fn same(self, other: f64) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

impl Elem for f32 {
    fn same(self, other: f32) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

/// A field's array: its shape (1 along a missing axis), the domain's first point in it, the
/// axes it has and its values in C or I-fastest order.
#[derive(Clone)]
pub(crate) struct Arr<T> {
    pub(crate) shape: [usize; 3],
    pub(crate) lo: [i64; 3],
    pub(crate) axes: [bool; 3],
    pub(crate) fortran: bool,
    pub(crate) data: Vec<T>,
}

impl<T: Num> Arr<T> {
    pub(crate) fn strides(&self) -> [isize; 3] {
        let s = self.shape;
        let st = if self.fortran {
            [1, s[0], s[0] * s[1]]
        } else {
            [s[1] * s[2], s[2], 1]
        };
        [0, 1, 2].map(|a| if self.axes[a] { st[a] as isize } else { 0 })
    }

    /// The value at domain point `p`, or None outside the array.
    pub(crate) fn get(&self, p: [i64; 3]) -> Option<T> {
        let st = self.strides();
        let mut off = 0;
        for a in 0..3 {
            if !self.axes[a] {
                continue;
            }
            let x = p[a] + self.lo[a];
            if x < 0 || x >= self.shape[a] as i64 {
                return None;
            }
            off += x as isize * st[a];
        }
        Some(self.data[off as usize])
    }

    pub(crate) fn set(&mut self, p: [i64; 3], v: T) {
        let st = self.strides();
        let off: isize = (0..3).map(|a| (p[a] + self.lo[a]) as isize * st[a]).sum();
        self.data[off as usize] = v;
    }

    pub(crate) fn mem(&mut self, writable: bool) -> FieldMem {
        FieldMem {
            addr: self.data.as_mut_ptr().expose_provenance(),
            shape: self.shape,
            strides: self.strides(),
            origin: self.lo,
            axes: self.axes,
            writable,
            ty: if std::mem::size_of::<T>() == 8 {
                crate::gtscript::ir::Ty::F64
            } else {
                crate::gtscript::ir::Ty::F32
            },
        }
    }
}

/// Arrays for every field of `plan` over `domain`: the plan's extents plus `extra` on every
/// side of the axes the field has, filled from `rng`.
pub(crate) fn arrays<T: Num>(
    plan: &Plan,
    domain: [usize; 3],
    fortran: bool,
    extra: usize,
    rng: &mut Rng,
) -> Vec<Arr<T>> {
    plan.program
        .fields
        .iter()
        .zip(&plan.field_extent)
        .map(|(f, e)| {
            let mut shape = [1; 3];
            let mut lo = [0; 3];
            for a in 0..3 {
                if f.axes[a] {
                    lo[a] = e[a].0 + extra as i64;
                    shape[a] =
                        (domain[a] as i64 + e[a].0 + e[a].1 + 2 * extra as i64).max(0) as usize;
                }
            }
            let n = shape.iter().product();
            Arr {
                shape,
                lo,
                axes: f.axes,
                fortran,
                data: (0..n).map(|_| T::from_f64(rng.value())).collect(),
            }
        })
        .collect()
}

pub(crate) fn un<T: Num>(op: UnOp, x: T) -> T {
    let truth = |b: bool| if b { T::ONE } else { T::ZERO };
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
        _ => T::unary_fn(op).expect("a math function").1(x),
    }
}

pub(crate) fn bin<T: Num>(op: BinOp, x: T, y: T) -> T {
    let truth = |b: bool| if b { T::ONE } else { T::ZERO };
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Pow | BinOp::Mod | BinOp::FloorDiv => {
            T::binary_fn(op).expect("a math function").1(x, y)
        }
        // NumPy's minimum and maximum: NaN wins.
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
    }
}

/// Temporaries of the reference cover the domain widened by this many points in I and J.
pub(crate) const TEMP_MARGIN: i64 = 8;

/// GT4Py's semantics, point by point, on the program as parsed (temporaries not inlined):
/// sections in order; in a PARALLEL section each statement over the whole interval before the
/// next, in FORWARD and BACKWARD each level in turn. Temporaries are computed over the domain
/// widened by [`TEMP_MARGIN`] (values read outside an array are NaN: points whose value is
/// never needed). Returns the fields.
pub(crate) fn reference<T: Num>(
    p: &Program,
    fields: &mut [Arr<T>],
    scalars: &[T],
    domain: [usize; 3],
) -> Result<(), String> {
    let m = TEMP_MARGIN;
    let tshape = [
        domain[0] + 2 * m as usize,
        domain[1] + 2 * m as usize,
        domain[2],
    ];
    let mut temps: Vec<Arr<T>> = (0..p.temps.len())
        .map(|_| Arr {
            shape: tshape,
            lo: [m, m, 0],
            axes: [true; 3],
            fortran: false,
            data: vec![T::from_f64(f64::NAN); tshape.iter().product()],
        })
        .collect();
    let nk = domain[2];
    fn eval<T: Num>(
        e: &Expr,
        pt: [i64; 3],
        fields: &[Arr<T>],
        temps: &[Arr<T>],
        scalars: &[T],
    ) -> T {
        let nan = T::from_f64(f64::NAN);
        match e {
            Expr::Read(a, o) => {
                let q = [
                    pt[0] + o[0] as i64,
                    pt[1] + o[1] as i64,
                    pt[2] + o[2] as i64,
                ];
                match a {
                    Access::Field { field, .. } => fields[*field].get(q),
                    Access::Temp(t) => temps[*t].get(q),
                }
                .unwrap_or(nan)
            }
            // The property tests generate no reads at run-time K levels.
            Expr::ReadK(..) => nan,
            Expr::Scalar(s) => scalars[*s],
            Expr::Const(v, _) => T::from_f64(v.as_f64()),
            Expr::Cast(t, a) => {
                let v = eval(a, pt, fields, temps, scalars);
                if *t == crate::gtscript::ir::Ty::Bool {
                    if v != T::ZERO {
                        T::ONE
                    } else {
                        T::ZERO
                    }
                } else {
                    v
                }
            }
            Expr::Un(op, a) => un(*op, eval(a, pt, fields, temps, scalars)),
            Expr::Bin(op, a, b) => bin(
                *op,
                eval(a, pt, fields, temps, scalars),
                eval(b, pt, fields, temps, scalars),
            ),
            Expr::Select(c, a, b) => {
                let c = eval(c, pt, fields, temps, scalars);
                let a = eval(a, pt, fields, temps, scalars);
                let b = eval(b, pt, fields, temps, scalars);
                if c != T::ZERO {
                    a
                } else {
                    b
                }
            }
        }
    }
    let mut level = |st: &crate::gtscript::ir::Stmt, k: usize, fields: &mut [Arr<T>]| {
        let w = match st.target {
            Access::Temp(_) => m,
            Access::Field { .. } => 0,
        };
        let mut vals = Vec::new();
        for i in -w..domain[0] as i64 + w {
            for j in -w..domain[1] as i64 + w {
                let pt = [i, j, k as i64];
                vals.push((pt, eval(&st.expr, pt, fields, &temps, scalars)));
            }
        }
        for (pt, v) in vals {
            match st.target {
                Access::Temp(t) => temps[t].set(pt, v),
                Access::Field { field, .. } => fields[field].set(pt, v),
            }
        }
    };
    for s in &p.sections {
        let (ks, ke) = (s.start.resolve(nk), s.end.resolve(nk));
        if ks >= ke {
            continue;
        }
        match s.order {
            IterOrder::Parallel => {
                for st in &s.stmts {
                    for k in ks..ke {
                        level(st, k, fields);
                    }
                }
            }
            IterOrder::Forward | IterOrder::Backward => {
                let ks: Vec<usize> = if s.order == IterOrder::Forward {
                    (ks..ke).collect()
                } else {
                    (ks..ke).rev().collect()
                };
                for k in ks {
                    for st in &s.stmts {
                        level(st, k, fields);
                    }
                }
            }
        }
    }
    Ok(())
}
