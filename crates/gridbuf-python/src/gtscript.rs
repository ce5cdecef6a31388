//! gtscript programs: the IR text from `gridbuf.gtscript` compiled once by the core, and run on
//! the NumPy views the stencil binder hands over (each view covers the domain widened by the
//! field's extent, in the field's dims order).

use crate::errors::{to_py, IntoPyResult};
use gridbuf::gtscript::{self, FieldMem, Lane, Lanes, Plan, Ty, Value};
use gridbuf::kernels::PARALLEL_MIN_POINTS;
use gridbuf::runtime::interrupt::{run_watched, Interrupt};
use gridbuf::Error;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyDict, PyFloat, PyInt, PyList, PyTuple};
use std::sync::{Arc, Mutex};

/// A compiled gtscript stencil body.
#[pyclass(frozen, module = "gridbuf", name = "GtProgram")]
pub struct GtProgram {
    /// The plan and the machine code of its statements (None where this machine has no code
    /// generator), shared with the other stencils defined from the same IR text
    /// (`gtscript::programs`).
    shared: Arc<gtscript::programs::Compiled>,
    /// Per field: whether the stencil reads it at K levels computed at run time (its view then
    /// spans the array's whole K axis: such reads may reach any level inside the array).
    whole_k: Vec<bool>,
}

/// Compiles the IR text of a gtscript definition (see `gridbuf::gtscript::ir`), or finds it
/// compiled for a stencil defined from the same text (`gtscript::programs`).
#[pyfunction]
pub fn gtscript_compile(py: Python<'_>, ir: &str) -> PyResult<GtProgram> {
    let shared = gtscript::programs::compile_shared(ir).py(py)?;
    let whole_k = var_k_read(&shared.plan);
    Ok(GtProgram { shared, whole_k })
}

/// Tier two's state as the text `GtProgram.tier_two` gives.
fn tier_text(s: gtscript::jit::TierState) -> String {
    use gtscript::jit::TierState;
    match s {
        TierState::Idle => "idle".into(),
        TierState::Pending => "pending".into(),
        TierState::Ready(n) => format!("ready: {n}"),
        TierState::Failed(e) => format!("failed: {e}"),
    }
}

/// Whether a scalar is complex: a Python `complex` (NumPy's `complex128` is one) or a NumPy
/// scalar of a complex dtype (`complex64`), which convert to a float by dropping their
/// imaginary part.
fn is_complex(v: &Bound<'_, PyAny>) -> bool {
    if v.is_instance_of::<PyComplex>() {
        return true;
    }
    if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() {
        return false;
    }
    v.getattr(pyo3::intern!(v.py(), "dtype"))
        .and_then(|d| d.getattr(pyo3::intern!(v.py(), "kind")))
        .and_then(|k| k.extract::<String>())
        .is_ok_and(|k| k == "c")
}

#[pymethods]
impl GtProgram {
    /// The fields as the binder takes them: dicts with name, dims, data_shape, extent, intent;
    /// also GT4Py's K boundary of each (`k_boundary`, for GT4Py's field_info).
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let p = &self.shared.plan.program;
        let k_boundary = self.shared.plan.k_boundary();
        let whole_k = &self.whole_k;
        for (i, f) in p.fields.iter().enumerate() {
            let d = PyDict::new(py);
            let mut dims = f.dims();
            let mut extent: Vec<(i64, i64)> = (0..3)
                .filter(|&a| f.axes[a])
                .map(|a| self.shared.plan.field_extent[i][a])
                .collect();
            for n in 0..f.data_shape.len() {
                dims.push_str(&n.to_string());
                extent.push((0, 0));
            }
            d.set_item("name", &f.name)?;
            d.set_item("dtype", f.ty.name())?;
            d.set_item("dims", dims)?;
            d.set_item("data_shape", f.data_shape.clone())?;
            d.set_item("extent", extent)?;
            d.set_item(
                "intent",
                if self.shared.plan.field_written[i] {
                    "inout"
                } else {
                    "in"
                },
            )?;
            d.set_item("k_boundary", k_boundary[i])?;
            // Reads at run-time K levels may reach any level inside the array: the binder's
            // view spans its whole K axis.
            let whole: Vec<bool> = (0..3)
                .filter(|&a| f.axes[a])
                .map(|a| a == 2 && whole_k[i])
                .chain(f.data_shape.iter().map(|_| false))
                .collect();
            d.set_item("whole", whole)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Names of the scalar parameters.
    #[getter]
    fn scalars(&self) -> Vec<String> {
        self.shared
            .plan
            .program
            .scalars
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// The fewest K levels a call may have, from the intervals (GT4Py's
    /// `min_sequential_axis_size`).
    #[getter]
    fn min_k(&self) -> usize {
        self.shared.plan.min_k
    }

    /// Where tier two (C compiled in the background) stands: "idle", "pending", "ready: N" (N
    /// functions replaced), "failed: why", or "none" without tier-one code.
    #[getter]
    fn tier_two(&self) -> String {
        match &self.shared.jit {
            Some(j) => tier_text(j.tier_two_state()),
            None => "none".into(),
        }
    }

    /// Waits up to `timeout` seconds while tier two is pending (the GIL released); returns
    /// where it stands, as `tier_two`.
    fn wait_tier_two(&self, py: Python<'_>, timeout: f64) -> PyResult<String> {
        let t = std::time::Duration::try_from_secs_f64(timeout).map_err(|_| {
            to_py(
                py,
                Error::invalid("timeout", timeout, "a non-negative number of seconds"),
            )
        })?;
        Ok(match &self.shared.jit {
            Some(j) => {
                let j = Arc::clone(j);
                tier_text(py.detach(move || j.wait_tier_two(t)))
            }
            None => "none".into(),
        })
    }

    /// Compiles, before any call, the code calls compile when they first need it, for memory
    /// laid out as `order` says (GT4Py's layout map of I, J and K: the largest number is the
    /// unit-stride axis), the GIL released: a stencil's definition calls it with its backend's
    /// layout. Nothing without tier-one code or without a written field.
    fn prepare(&self, py: Python<'_>, order: [i64; 3]) {
        let Some(jit) = &self.shared.jit else {
            return;
        };
        let plan = &self.shared.plan;
        let threads = gridbuf::runtime::threads::configured();
        py.detach(|| gtscript::prepare_layout(plan, jit, order, threads));
    }

    /// NumPy names of the scalar parameters' types.
    #[getter]
    fn scalar_dtypes(&self) -> Vec<&'static str> {
        self.shared
            .plan
            .program
            .scalars
            .iter()
            .map(|s| s.ty.name())
            .collect()
    }

    /// Runs the program on the binder's views (positional, field order) and scalars.
    #[pyo3(signature = (*views, **scalars))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        views: &Bound<'py, PyTuple>,
        scalars: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<()> {
        self.run(py, views, None, scalars)
    }
}

/// Per field: whether the plan reads it at K levels computed at run time.
fn var_k_read(plan: &Plan) -> Vec<bool> {
    let mut out = vec![false; plan.program.fields.len()];
    for &q in plan.sections.iter().flat_map(|s| &s.var_reads) {
        if let gridbuf::gtscript::plan::Kind::Field { field, .. } = plan.kinds[q as usize] {
            out[field] = true;
        }
    }
    out
}

impl GtProgram {
    /// Runs the program on views of the fields. With the binder's `call`, the domain and each
    /// field's origin along the axes its view spans whole are the call's; without it (the
    /// views cut to the domain and extents) they follow from the extents.
    pub(crate) fn run<'py>(
        &self,
        py: Python<'py>,
        views: &Bound<'py, PyTuple>,
        call: Option<&gridbuf::binding::BoundCall>,
        scalars: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<()> {
        let plan = &self.shared.plan;
        let p = &plan.program;
        if views.len() != p.fields.len() {
            return Err(to_py(
                py,
                Error::gtscript_arity(&p.name, p.fields.len(), views.len()),
            ));
        }
        let mut vals = Vec::with_capacity(p.scalars.len());
        for s in &p.scalars {
            let v = scalars
                .and_then(|d| d.get_item(&s.name).ok().flatten())
                .ok_or_else(|| to_py(py, Error::gtscript_missing_scalar(&p.name, &s.name)))?;
            let bad =
                |what: &str| crate::convert::type_error(&format!("scalar {:?}", s.name), &v, what);
            // Floats take any real number (rounded to float32 where declared so); integers
            // and booleans only values of their kind, as GT4Py checks them.
            let x = match s.ty {
                Ty::F64 | Ty::F32 => {
                    if is_complex(&v) {
                        return Err(bad(
                            "expected a real number, not a complex one (its imaginary part would be lost)",
                        ));
                    }
                    Value::F(
                        v.extract::<f64>()
                            .map_err(|_| bad("expected a real number"))?,
                    )
                }
                Ty::Bool => {
                    Value::I(v.extract::<bool>().map_err(|_| bad("expected a bool"))? as i64)
                }
                _ => {
                    if v.is_instance_of::<pyo3::types::PyBool>()
                        || v.is_instance_of::<pyo3::types::PyFloat>()
                    {
                        return Err(bad(&format!(
                            "expected an integer for a {} parameter",
                            s.ty.name()
                        )));
                    }
                    let x = v
                        .extract::<i64>()
                        .ok()
                        .filter(|&x| gridbuf::gtscript::types::wrap(x, s.ty) == x);
                    Value::I(x.ok_or_else(|| {
                        bad(&format!(
                            "expected an integer in the range of {} (GT4Py takes no other)",
                            s.ty.name()
                        ))
                    })?)
                }
            };
            vals.push(gridbuf::gtscript::types::convert(x, s.ty));
        }
        let mut mems = Vec::new();
        let mut domain = [0usize, 0, 0];
        let mut have = [false; 3];
        let whole_k = &self.whole_k;
        if let Some(c) = call {
            // The binder's domain, per axis some field has (its domain dims, in I, J, K order).
            let mut it = c.domain.iter();
            for a in 0..3 {
                if p.fields.iter().any(|f| f.axes[a]) {
                    domain[a] = *it
                        .next()
                        .ok_or_else(|| to_py(py, Error::gtscript_view(&p.name)))?;
                    have[a] = true;
                }
            }
        }
        for (i, (f, v)) in p.fields.iter().zip(views.iter()).enumerate() {
            let itemsize = f.ty.itemsize();
            let arr = v.cast::<PyUntypedArray>()?;
            let shape = arr.shape();
            let strides = arr.strides();
            let n_cart = f.axes.iter().filter(|&&a| a).count();
            if shape.len() != n_cart + f.data_shape.len() || arr.dtype().itemsize() != itemsize {
                return Err(to_py(py, Error::gtscript_view(&f.name)));
            }
            let addr = crate::numpy_interop::data_ptr(arr) as usize;
            let written = plan.field_written[i];
            if written && !crate::numpy_interop::is_writeable(arr) {
                return Err(to_py(py, Error::gtscript_readonly(&f.name, &p.name)));
            }
            if addr % itemsize != 0 || strides.iter().any(|s| s % itemsize as isize != 0) {
                return Err(to_py(py, Error::gtscript_misaligned(&f.name)));
            }
            let mut fshape = [1usize; 3];
            let mut fstrides = [0isize; 3];
            let mut origin = [0i64; 3];
            let mut ax = 0;
            for a in 0..3 {
                if f.axes[a] {
                    fshape[a] = shape[ax];
                    fstrides[a] = strides[ax] / itemsize as isize;
                    let (lo, hi) = plan.field_extent[i][a];
                    origin[a] = lo;
                    if let Some(c) = call.filter(|_| a == 2 && whole_k[i]) {
                        // The binder's view spans the whole K axis: the domain's first level
                        // is at the call's origin (checked with the extents by the binder).
                        origin[a] = *c.fields[i]
                            .origin
                            .get(ax)
                            .ok_or_else(|| to_py(py, Error::gtscript_view(&f.name)))?
                            as i64;
                    }
                    let n = (shape[ax] as i64 - lo - hi).max(0) as usize;
                    if !have[a] {
                        domain[a] = n;
                        have[a] = true;
                    }
                    ax += 1;
                }
            }
            // Components: every index of the data dims, C order.
            let data_strides: Vec<isize> = strides[n_cart..]
                .iter()
                .map(|s| s / itemsize as isize)
                .collect();
            for c in 0..f.components() {
                let mut rem = c;
                let mut off = 0isize;
                for d in (0..f.data_shape.len()).rev() {
                    off += (rem % f.data_shape[d]) as isize * data_strides[d];
                    rem /= f.data_shape[d];
                }
                mems.push(FieldMem {
                    addr: (addr as isize + off * itemsize as isize) as usize,
                    shape: fshape,
                    strides: fstrides,
                    origin,
                    axes: f.axes,
                    writable: written,
                    ty: f.ty,
                });
            }
        }
        for a in 0..3 {
            if !have[a] {
                domain[a] = 1;
            }
        }
        let plan = Arc::clone(&self.shared.plan);
        let jit = self.shared.jit.clone();
        // Ctrl-C: the thread that called polls Python's signal handlers (see
        // `gridbuf::runtime::interrupt`); the handler's exception (KeyboardInterrupt) is raised after
        // the stencil stopped at its next tile or loop pass.
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let poll = || {
            Python::attach(|py| {
                // Let other Python threads run (a timer thread may be the one that interrupts).
                py.detach(|| ());
                py.check_signals().map_err(|e| {
                    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                })
            })
            .is_err()
        };
        let stop = Interrupt::polled(&poll);
        let threads = gridbuf::runtime::threads::configured();
        let run = || -> gridbuf::Result<()> {
            // SAFETY: the views come from the stencil binder, which checked that each lies
            // inside its array (origin, domain and extent on every axis, in elements of the
            // stencil's own size), that outputs overlap no other argument, and keeps the arrays
            // alive for the call; above we checked dtype size, alignment and writeability of
            // written fields. The views' shapes are what `FieldMem` carries, and the evaluator
            // checks every block against them.
            unsafe {
                // One call per lane type.
                macro_rules! run_as {
                    ($t:ty) => {
                        gtscript::run_interruptible::<$t>(
                            &plan,
                            jit.as_deref(),
                            &mems,
                            &vals,
                            domain,
                            threads,
                            &stop,
                        )
                    };
                }
                match plan.lanes {
                    Lanes::F64 => run_as!(f64),
                    Lanes::F32 => run_as!(f32),
                    Lanes::Wide => run_as!(Lane),
                }
            }
        };
        // Small domains run on this thread in microseconds with the GIL held, polling between
        // tiles; a stencil with `while` loops, whose compiled loops only read the flag, runs on
        // another thread while this one polls.
        let points = domain.iter().try_fold(1usize, |p, &n| p.checked_mul(n));
        let small = points.is_some_and(|n| n < PARALLEL_MIN_POINTS);
        let looped = plan.has_loops();
        let result = if small && !looped {
            run()
        } else {
            py.detach(|| run_watched(&stop, looped, run))
        };
        if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        result.py(py)
    }

    fn __repr__(&self) -> String {
        format!("GtProgram({:?})", self.shared.plan.program.name)
    }
}
