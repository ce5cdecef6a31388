//! Property test of mixed-type stencils: random programs over fields of every gtscript type
//! (GT4Py's typing rules decide where conversions go), run by the interpreter and by the
//! machine code on 64-bit lanes, in blocks and with several threads; every written field must
//! agree byte for byte (NaN with NaN).

use crate::gtscript::ir::Ty;
use crate::gtscript::{compile, Value};
use crate::gtscript::{run, FieldMem, Jit, Lane};
use crate::kernels::exec::Threads;
use proptest::prelude::*;

const TYPES: [Ty; 7] = Ty::ALL;

#[derive(Clone, Debug)]
enum Raw {
    Leaf(u8, [i8; 2]),
    Un(u8, Box<Raw>),
    Bin(u8, Box<Raw>, Box<Raw>),
    Sel(Box<Raw>, Box<Raw>, Box<Raw>),
    Cast(u8, Box<Raw>),
}

// `exp` and `log` call math functions: selects over them make guarded runs (`tape::guard`).
const UN: [&str; 10] = [
    "neg", "abs", "sqrt", "floor", "ceil", "trunc", "isnan", "isinf", "exp", "log",
];
// `and`, `or`, `not` and comparisons make tier two's boolean masks (`cgen::tape::Kind::M`),
// which every other use reads as 1 or 0.
const BIN: [&str; 16] = [
    "add", "sub", "mul", "div", "mod", "floordiv", "min", "max", "lt", "le", "gt", "ge", "eq",
    "ne", "and", "or",
];
const LITS: [&str; 10] = [
    "int64 0",
    "int64 3",
    "int64 -7",
    "int64 200",
    "float64 0.5",
    "float64 -2.5",
    "float64 1e10",
    "float64 nan",
    "bool 1",
    "float64 -0.0",
];

fn raw() -> impl Strategy<Value = Raw> {
    let leaf = (any::<u8>(), [-1i8..=1, -1i8..=1]).prop_map(|(k, o)| Raw::Leaf(k, o));
    leaf.prop_recursive(4, 20, 3, |inner| {
        prop_oneof![
            2 => (any::<u8>(), inner.clone()).prop_map(|(o, a)| Raw::Un(o, Box::new(a))),
            5 => (any::<u8>(), inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| Raw::Bin(o, Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| Raw::Sel(Box::new(c), Box::new(a), Box::new(b))),
            1 => (any::<u8>(), inner).prop_map(|(t, a)| Raw::Cast(t, Box::new(a))),
        ]
    })
}

/// Renders `e` over `n_in` input fields of types `tys`; returns the text and the value's type
/// as far as the rules below need it (whether it is a boolean).
fn render(e: &Raw, tys: &[Ty], out: &mut String) -> bool {
    match e {
        Raw::Leaf(k, o) => {
            let k = *k as usize;
            if k % 5 == 4 {
                out.push_str(&format!("lit {}", LITS[k / 5 % LITS.len()]));
                LITS[k / 5 % LITS.len()].starts_with("bool")
            } else {
                let f = k % tys.len();
                out.push_str(&format!("f {f} 0 {} {} 0", o[0], o[1]));
                tys[f] == Ty::Bool
            }
        }
        Raw::Un(o, a) => {
            let op = UN[*o as usize % UN.len()];
            let mut s = String::new();
            let b = render(a, tys, &mut s);
            if op == "neg" && b {
                out.push_str("not ");
                out.push_str(&s);
                return true;
            }
            out.push_str(op);
            out.push(' ');
            out.push_str(&s);
            matches!(op, "isnan" | "isinf")
                || (b && matches!(op, "abs" | "floor" | "ceil" | "trunc"))
        }
        Raw::Bin(o, a, b) => {
            let op = BIN[*o as usize % BIN.len()];
            let (mut x, mut y) = (String::new(), String::new());
            let (bx, by) = (render(a, tys, &mut x), render(b, tys, &mut y));
            let cmp = matches!(op, "lt" | "le" | "gt" | "ge" | "eq" | "ne");
            if matches!(op, "and" | "or") {
                // Logic on booleans only: others compared with zero first.
                for (v, b) in [(&mut x, bx), (&mut y, by)] {
                    if !b {
                        *v = format!("ne {v} lit int64 0");
                    }
                }
                out.push_str(&format!("{op} {x} {y}"));
                return true;
            }
            if bx && by && !cmp {
                // Arithmetic on two booleans is refused: make one an int8.
                x = format!("cast int8 {x}");
            }
            out.push_str(&format!("{op} {x} {y}"));
            cmp
        }
        Raw::Sel(c, a, b) => {
            let mut s = String::new();
            if !render(c, tys, &mut s) {
                s = format!("ne {s} lit int64 0");
            }
            let (mut x, mut y) = (String::new(), String::new());
            let bx = render(a, tys, &mut x);
            let by = render(b, tys, &mut y);
            out.push_str(&format!("sel {s} {x} {y}"));
            bx && by
        }
        Raw::Cast(t, a) => {
            let t = TYPES[*t as usize % TYPES.len()];
            out.push_str(&format!("cast {} ", t.name()));
            render(a, tys, out);
            t == Ty::Bool
        }
    }
}

/// One field's memory: bytes of elements of `ty`, C order over (I, J, K).
#[derive(Clone)]
struct Buf {
    ty: Ty,
    data: Vec<u64>,
}

fn fill(ty: Ty, n: usize, seed: &mut u64) -> Buf {
    let mut data = vec![0u64; (n * ty.itemsize()).div_ceil(8)];
    let bytes = unsafe_bytes(&mut data);
    for i in 0..n {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (*seed >> 33) as i64;
        let v = match ty {
            Ty::F64 | Ty::F32 => {
                let specials = [0.0, -0.0, f64::NAN, f64::INFINITY, 1e20, -3.5, 2.5];
                if r % 9 == 0 {
                    Value::F(specials[(r / 9) as usize % specials.len()])
                } else {
                    Value::F((r % 2001 - 1000) as f64 / 8.0)
                }
            }
            _ => Value::I(if r % 7 == 0 { r << 20 } else { r % 300 - 150 }),
        };
        let v = crate::gtscript::passes::types::convert(v, ty);
        let at = i * ty.itemsize();
        let (f, x) = match v {
            Value::F(f) => (f, 0),
            Value::I(x) => (0.0, x),
        };
        match ty {
            Ty::Bool => bytes[at] = (x != 0) as u8,
            Ty::I8 => bytes[at] = x as i8 as u8,
            Ty::I16 => bytes[at..at + 2].copy_from_slice(&(x as i16).to_ne_bytes()),
            Ty::I32 => bytes[at..at + 4].copy_from_slice(&(x as i32).to_ne_bytes()),
            Ty::I64 => bytes[at..at + 8].copy_from_slice(&x.to_ne_bytes()),
            Ty::F32 => bytes[at..at + 4].copy_from_slice(&(f as f32).to_ne_bytes()),
            Ty::F64 => bytes[at..at + 8].copy_from_slice(&f.to_ne_bytes()),
        }
    }
    Buf { ty, data }
}

fn unsafe_bytes(v: &mut [u64]) -> &mut [u8] {
    let n = v.len() * 8;
    // SAFETY: any bytes are valid `u8`s; the slice covers exactly the vector's memory, which
    // stays borrowed mutably for the slice's life.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), n) }
}

/// Element `i` of a float buffer as an f64 (else None), for NaN-tolerant comparison.
fn float_at(b: &Buf, i: usize) -> Option<f64> {
    let bytes: Vec<u8> = b.data.iter().flat_map(|w| w.to_ne_bytes()).collect();
    match b.ty {
        Ty::F64 => Some(f64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().ok()?)),
        Ty::F32 => Some(f32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().ok()?) as f64),
        _ => None,
    }
}

fn check(tys: Vec<Ty>, out_tys: Vec<Ty>, exprs: Vec<Raw>, seed: u64) -> Result<(), TestCaseError> {
    check_in(tys, out_tys, exprs, seed, None)
}

/// As [`check`]; with `runs` (`PARALLEL` or `FORWARD`), in a section of that order whose first
/// statement writes a temporary that the last output then reads too (so the call runs in tiles
/// of blocks, where consecutive statements run as one point function, `schedule::point_runs`).
fn check_in(
    tys: Vec<Ty>,
    out_tys: Vec<Ty>,
    exprs: Vec<Raw>,
    seed: u64,
    runs: Option<&str>,
) -> Result<(), TestCaseError> {
    let n_in = tys.len();
    let mut text = String::from("stencil typed\n");
    for (i, t) in tys.iter().chain(&out_tys).enumerate() {
        text.push_str(&format!("field f{i} {} IJK\n", t.name()));
    }
    if runs.is_some() {
        text.push_str("temp tt auto IJK\n");
    }
    text.push_str(&format!(
        "comp {}\ninterval S 0 E 0\n",
        runs.unwrap_or("PARALLEL")
    ));
    for (o, e) in exprs.iter().enumerate() {
        let mut s = String::new();
        render(e, &tys, &mut s);
        if runs.is_some() && o == 0 {
            text.push_str(&format!("stmt 9 t 0 {s}\n"));
        }
        if runs.is_some() && o + 1 == exprs.len() {
            s = "t 0 0 0 0".to_string();
        }
        text.push_str(&format!("stmt {o} f {} 0 {s}\n", n_in + o));
    }
    let all: Vec<Ty> = tys.iter().chain(&out_tys).copied().collect();
    check_text(&text, &all, n_in, seed)
}

/// Runs the program `text` (fields of types `tys`, the first `n_in` read only) by the
/// interpreter and by the machine code on 1 and 2 threads; Err where a written field differs.
fn check_text(text: &str, tys: &[Ty], n_in: usize, seed: u64) -> Result<(), TestCaseError> {
    let plan = match compile(text) {
        Ok(p) => p,
        // Programs GT4Py refuses (integer powers, divisions used inside expressions, ...).
        Err(_) => return Ok(()),
    };
    let jit = Jit::compile(&plan).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).map_err(TestCaseError::fail)?;
    if std::env::var("GB_TYPED_STATS").is_ok() {
        eprintln!("ACCEPTED lanes={:?} jit={:?}", plan.lanes, jit);
    }
    let domain = [7usize, 5, 3];
    let shape = [domain[0] + 2, domain[1] + 2, domain[2]];
    let n = shape.iter().product();
    let mut s = seed | 1;
    let inputs: Vec<Buf> = tys.iter().map(|&t| fill(t, n, &mut s)).collect();
    let mut results = Vec::new();
    for (code, threads) in [
        (None, 1),
        (jit.as_ref(), 1),
        (jit.as_ref(), 2),
        (tier2.as_ref(), 1),
    ] {
        let mut bufs = inputs.clone();
        let mems: Vec<FieldMem> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| FieldMem {
                addr: b.data.as_mut_ptr().expose_provenance(),
                shape,
                strides: [(shape[1] * shape[2]) as isize, shape[2] as isize, 1],
                origin: [1, 1, 0],
                axes: [true; 3],
                writable: i >= n_in,
                ty: b.ty,
            })
            .collect();
        // SAFETY: each buffer holds `n` elements of its type, aligned (u64 storage), alive for
        // the call; written fields are separate buffers.
        unsafe {
            run::<Lane>(
                &plan,
                code,
                &mems,
                &[],
                domain,
                Threads::new(threads).expect("threads"),
            )
        }
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        results.push(bufs);
    }
    let want = &results[0];
    // Runners after the interpreter: tier one on 1 and 2 threads, tier two.
    for (runner, got) in ["tier one", "tier one, 2 threads", "tier two"]
        .iter()
        .zip(&results[1..])
    {
        for f in n_in..want.len() {
            for i in 0..n {
                let same = match (float_at(&want[f], i), float_at(&got[f], i)) {
                    (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    _ => {
                        let sz = want[f].ty.itemsize();
                        let (a, b) = (&want[f].data, &got[f].data);
                        let ab: Vec<u8> = a.iter().flat_map(|w| w.to_ne_bytes()).collect();
                        let bb: Vec<u8> = b.iter().flat_map(|w| w.to_ne_bytes()).collect();
                        ab[i * sz..(i + 1) * sz] == bb[i * sz..(i + 1) * sz]
                    }
                };
                prop_assert!(same, "field {f} element {i} differs on {runner}\n{text}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    /// The interpreter and the machine code agree on mixed-type programs.
    #[test]
    fn mixed_types_jit_matches_interpreter(
        tys in proptest::collection::vec(proptest::sample::select(TYPES.to_vec()), 1..4),
        outs in proptest::collection::vec(proptest::sample::select(TYPES.to_vec()), 1..3),
        exprs in proptest::collection::vec(raw(), 2),
        seed in any::<u64>(),
    ) {
        let exprs = exprs[..outs.len()].to_vec();
        check(tys, outs, exprs, seed)?;
    }

    /// The same with a temporary, in PARALLEL and FORWARD sections: straight runs of
    /// statements as one point function in blocks.
    #[test]
    fn mixed_types_point_runs_match_interpreter(
        tys in proptest::collection::vec(proptest::sample::select(TYPES.to_vec()), 1..4),
        outs in proptest::collection::vec(proptest::sample::select(TYPES.to_vec()), 1..3),
        exprs in proptest::collection::vec(raw(), 2),
        forward in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let exprs = exprs[..outs.len()].to_vec();
        check_in(tys, outs, exprs, seed, Some(if forward { "FORWARD" } else { "PARALLEL" }))?;
    }
}

/// Integer arithmetic wraps and floors as NumPy does, on both paths.
#[test]
fn integer_semantics() {
    let text =
        "stencil t\nfield a int8 IJK\nfield b int32 IJK\nfield o int8 IJK\nfield p int32 IJK\n\
        comp PARALLEL\ninterval S 0 E 0\nstmt 1 f 2 0 add f 0 0 0 0 0 f 0 0 0 0 0\n\
        stmt 2 f 3 0 mod f 1 0 0 0 0 lit int64 -3\n";
    let plan = compile(text).expect("plan");
    assert_eq!(plan.lanes, crate::gtscript::Lanes::Wide);
    let jit = Jit::compile(&plan).expect("jit");
    for code in [None, jit.as_ref()] {
        let mut a = [127i8, -128, 5, 0];
        let mut b = [7i32, -7, 0, 2];
        let mut o = [0i8; 4];
        let mut p = [0i32; 4];
        let mem = |addr: usize, ty, w| FieldMem {
            addr,
            shape: [4, 1, 1],
            strides: [1, 0, 0],
            origin: [0; 3],
            axes: [true; 3],
            writable: w,
            ty,
        };
        let mems = [
            mem(a.as_mut_ptr().expose_provenance(), Ty::I8, false),
            mem(b.as_mut_ptr().expose_provenance(), Ty::I32, false),
            mem(o.as_mut_ptr().expose_provenance(), Ty::I8, true),
            mem(p.as_mut_ptr().expose_provenance(), Ty::I32, true),
        ];
        // SAFETY: four arrays of four elements of their types, alive for the call.
        unsafe { run::<Lane>(&plan, code, &mems, &[], [4, 1, 1], Threads::ONE) }.expect("run");
        assert_eq!(o, [-2, 0, 10, 0]);
        // int32 % int64 literal computes in int64: -7 % -3 == -1, 7 % -3 == -2.
        assert_eq!(p, [-2, -1, 0, -1]);
    }
}

/// A mixed-type statement reading more than `CARRIED_OPERANDS` (quantity, offset) operands
/// keeps its row addresses on the stack (`jit::build`); it agrees with the interpreter.
#[test]
fn many_operands_on_wide_lanes() {
    let tys = [Ty::I32, Ty::F64, Ty::I16, Ty::F32, Ty::F64];
    let mut e = String::from("f 0 0 0 0 0");
    for f in 0..4 {
        for i in -1..=1 {
            for j in -1..=1 {
                e = format!("add {e} f {f} 0 {i} {j} 0");
            }
        }
    }
    let text = format!(
        "stencil wide\nfield a int32 IJK\nfield b float64 IJK\nfield c int16 IJK\nfield d float32 IJK\n\
         field o float64 IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 4 0 {e}\n"
    );
    let plan = compile(&text).expect("plan");
    assert_eq!(plan.lanes, crate::gtscript::Lanes::Wide);
    assert!(plan.sections[0].stmts[0].tape.len() > 36);
    check_text(&text, &tys, 4, 11).expect("agree");
}
