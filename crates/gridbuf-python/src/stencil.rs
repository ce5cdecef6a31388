//! Stencil objects: the argument binder in front of native Rust kernels and Python kernels.
//!
//! A call reads every field once (`argument::read_arg`: its memory through the array
//! interfaces, and what it declares: dims, origin, data-interface halo, callbacks), binds it with the core binder (cached under the full call key,
//! never a hash alone), checks pointer overlaps, then runs the kernel between the data
//! interface's acquire / touch / release calls.

use crate::argument::{callbacks_of_arg, read_arg, Arg};
use crate::errors::{to_py, IntoPyResult};
use crate::metadata::{EntryCallbacks, PyHooks};
use gridbuf::arrays::array_info::{ArrayInfo, DType};
use gridbuf::binding::{
    bind, parse_intent, ArgMeta, BoundCall, CallCache, CallKey, CallOrigin, FieldParam, Signature,
    Signatures, View3,
};
use gridbuf::kernels::Kernel;
use gridbuf::Device;
use ndarray::{ArrayView3, ArrayViewMut3};
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::sync::Arc;

/// What runs behind the binder.
enum Body {
    /// A native kernel (its signatures per dtype are the stencil's).
    Native { kernel: &'static dyn Kernel },
    /// A Python callable that receives NumPy views and the scalar keywords.
    Python {
        func: Py<PyAny>,
        descrs: Vec<Py<PyArrayDescr>>,
    },
}

/// A stencil: a signature, a kernel and the cache of checked calls.
#[pyclass(frozen, module = "gridbuf", name = "Stencil")]
pub struct Stencil {
    name: String,
    /// The signatures per dtype; `sigs.default` names the fields.
    sigs: Signatures,
    body: Body,
    scalars: Vec<String>,
    /// The checked calls, by call key (the core binder's cache).
    cache: CallCache<Prepared>,
    /// Warn in GT4Py's words (a stencil behind gridbuf's GT4Py backend), else in gridbuf's.
    gt4py_warnings: bool,
}

fn origin_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<isize>> {
    crate::convert::isize_seq(obj, "origin").map(gridbuf::AxisVec::into_vec)
}

fn parse_origin(origin: Option<&Bound<'_, PyAny>>) -> PyResult<CallOrigin> {
    let Some(origin) = origin.filter(|o| !o.is_none()) else {
        return Ok(CallOrigin::Default);
    };
    if let Ok(d) = origin.cast::<PyDict>() {
        let mut default = None;
        let mut fields = Vec::new();
        for (k, v) in d.iter() {
            let k = k.cast::<PyString>().map_err(|_| {
                crate::convert::type_error(
                    "origin",
                    origin,
                    "expected field names (str) as the keys of an origin dict",
                )
            })?;
            // The message names the entry, `origin["out"]`: that name is written only for the
            // message (formatting it at every call took 6 % of a small stencil's call).
            let v = match crate::convert::isize_seq(&v, "origin") {
                Ok(v) => v,
                Err(_) => crate::convert::isize_seq(&v, &format!("origin[{:?}]", k.to_str()?))?,
            }
            .into_vec();
            if k.to_str()? == "_all_" {
                default = Some(v);
            } else {
                fields.push((k.to_str()?.to_owned(), v));
            }
        }
        fields.sort();
        return Ok(CallOrigin::PerField { default, fields });
    }
    Ok(CallOrigin::All(origin_list(origin)?))
}

/// The data-interface callbacks of the fields (acquire, touch, release), when any field has a
/// data interface.
fn hooks<'py>(args: &[Arg<'py>]) -> Option<PyHooks<'py>> {
    if args.iter().all(|a| a.callbacks.is_none()) {
        return None;
    }
    Some(hooks_of(args.iter().map(|a| a.callbacks.clone())))
}

/// The hooks of fields with these callbacks (`None`: no data interface described the field).
fn hooks_of<'py>(callbacks: impl Iterator<Item = Option<EntryCallbacks<'py>>>) -> PyHooks<'py> {
    PyHooks {
        per_field: callbacks.map(|c| c.unwrap_or([None, None, None])).collect(),
    }
}

/// Runs `run` between the callbacks in the core's order (`gridbuf::binding::callbacks`).
fn around<T>(
    hooks: Option<PyHooks<'_>>,
    sig: &Signature,
    run: impl FnOnce() -> PyResult<T>,
) -> PyResult<T> {
    let Some(mut hooks) = hooks else { return run() };
    let outputs = sig
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.intent.is_output())
        .map(|(i, _)| i);
    let n = hooks.per_field.len();
    gridbuf::binding::callbacks::around(&mut hooks, n, outputs, run)
}

impl Stencil {
    /// Extracts the fields and scalars of a call and binds it (from the cache when possible).
    fn prepare<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        origin: Option<&Bound<'py, PyAny>>,
        domain: Option<&Bound<'py, PyAny>>,
        validate: bool,
    ) -> PyResult<Prepare<'py, '_>> {
        let n = self.sigs.default.fields.len();
        if args.len() != n {
            let names: Vec<&str> = self
                .sigs
                .default
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            return Err(to_py(
                py,
                gridbuf::Error::stencil_arity(&self.name, &names, args.len()),
            ));
        }
        let mut fields = Vec::with_capacity(n);
        for (obj, f) in args.iter().zip(&self.sigs.default.fields) {
            let wrap = |e: PyErr| to_py(py, gridbuf::Error::stencil_field(&f.name, &self.name, e));
            fields.push(read_arg(py, &obj).map_err(wrap)?);
        }
        let sig = self.sigs.for_first(fields.first().map(|a| a.info.dtype));
        let origin = parse_origin(origin)?;
        let domain = match domain.filter(|d| !d.is_none()) {
            Some(d) => Some(crate::convert::usize_seq(d, "domain")?),
            None => None,
        };
        let pairs: Vec<(&ArrayInfo, &ArgMeta)> =
            fields.iter().map(|a| (&a.info, &a.meta)).collect();
        let bound = self.binding(
            py,
            sig,
            &fields,
            &pairs,
            &origin,
            domain.as_deref(),
            validate,
        )?;
        let ptrs: Vec<usize> = fields.iter().map(|a| a.info.ptr).collect();
        bound.call.check_overlaps(sig, &ptrs).py(py)?;
        Ok(Prepare {
            fields,
            ptrs,
            bound,
            sig,
        })
    }

    /// The checked binding of a call: the last call's when the key matches (compared field by
    /// field, without building a key or hashing it), else the cache's, else a new one.
    #[allow(clippy::too_many_arguments)]
    fn binding(
        &self,
        py: Python<'_>,
        sig: &Signature,
        fields: &[Arg<'_>],
        pairs: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
        validate: bool,
    ) -> PyResult<Arc<Prepared>> {
        let (cached, key) = self.cache.get(pairs, origin, domain, validate);
        let bound = match (cached, key) {
            (Some(b), _) => b,
            (None, key) => {
                let call = bind(sig, pairs, origin, domain, validate).py(py)?;
                let b = Arc::new(match self.body {
                    Body::Native { .. } => Prepared::native(call, sig, fields).py(py)?,
                    Body::Python { .. } => Prepared { call, views: None },
                });
                for w in &b.call.warnings {
                    let message = match self.gt4py_warnings {
                        true => w.gt4py_message(),
                        false => Some(w.message()),
                    };
                    let Some(message) = message else { continue };
                    PyErr::warn(
                        py,
                        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                        &std::ffi::CString::new(message).unwrap_or_default(),
                        1,
                    )?;
                }
                let key = key.unwrap_or_else(|| CallKey::new(pairs, origin, domain, validate));
                self.cache.insert(key, Arc::clone(&b));
                b
            }
        };
        Ok(bound)
    }

    fn scalar_kwargs<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.scalars.is_empty() && kwargs.is_none_or(|kw| kw.is_empty()) {
            return Ok(None); // the common native-kernel call: no dict to build
        }
        let out = PyDict::new(py);
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let name = k.cast::<PyString>()?.to_str()?.to_owned();
                if !self.scalars.contains(&name) {
                    let shown = crate::convert::repr(&k);
                    let err = gridbuf::Error::stencil_keyword(shown, &self.name, &self.scalars);
                    return Err(to_py(py, err));
                }
                out.set_item(k, v)?;
            }
        }
        for s in &self.scalars {
            if !out.contains(s)? {
                return Err(to_py(
                    py,
                    gridbuf::Error::stencil_missing_scalar(&self.name, s),
                ));
            }
        }
        Ok(Some(out))
    }
}

/// What [`Stencil::prepare`] hands to a call: the extracted fields, their array pointers, the
/// checked binding and the signature it was checked against.
struct Prepare<'py, 's> {
    fields: Vec<Arg<'py>>,
    ptrs: Vec<usize>,
    bound: Arc<Prepared>,
    sig: &'s Signature,
}

/// What the binder resolved for a call: its domain and each field's origin, by name.
fn resolved<'py>(
    py: Python<'py>,
    sig: &Signature,
    bound: &Prepared,
) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
    let origins = PyDict::new(py);
    for (f, b) in sig.fields.iter().zip(&bound.call.fields) {
        origins.set_item(&f.name, PyTuple::new(py, &b.origin)?)?;
    }
    Ok((PyTuple::new(py, &bound.call.domain)?, origins))
}

/// A checked binding and, for a native kernel, every field's typed view recipe.
struct Prepared {
    call: BoundCall,
    /// Per field, in signature order; `None` for Python kernels, which get NumPy views.
    views: Option<Vec<View3>>,
}

impl Prepared {
    /// Checks once that every bound field can be handed to a native kernel as a typed view.
    fn native(call: BoundCall, sig: &Signature, fields: &[Arg<'_>]) -> gridbuf::Result<Prepared> {
        let f32 = fields
            .first()
            .is_some_and(|a| a.info.dtype == DType::FLOAT32);
        let mut views = Vec::with_capacity(fields.len());
        for ((a, b), f) in fields.iter().zip(&call.fields).zip(&sig.fields) {
            let info = ArrayInfo {
                ptr: (a.info.ptr as isize).wrapping_add(b.byte_offset) as usize,
                shape: b.shape.clone(),
                strides: b.strides.clone(),
                ..a.info.clone()
            };
            let out = f.intent.is_output();
            let view = if f32 {
                View3::new::<f32>(&info, a.info.ptr, out)
            } else {
                View3::new::<f64>(&info, a.info.ptr, out)
            };
            views.push(view.map_err(|e| gridbuf::Error::kernel_view(&f.name, &e))?);
        }
        Ok(Prepared {
            call,
            views: Some(views),
        })
    }
}

/// Runs a native kernel on the arrays at `ptrs`, with the GIL released unless the domain is small.
fn run_native(
    py: Python<'_>,
    kernel: &'static dyn Kernel,
    sig: &Signature,
    ptrs: &[usize],
    prepared: &Prepared,
) -> PyResult<()> {
    let domain = &prepared.call.domain;
    let (Ok(domain3), Some(views)) = (<[usize; 3]>::try_from(domain.as_slice()), &prepared.views)
    else {
        return Err(to_py(py, gridbuf::Error::native_domain_not_3d()));
    };
    let f32 = sig
        .fields
        .first()
        .is_some_and(|f| f.dtype == DType::FLOAT32);
    let run = || -> gridbuf::Result<()> {
        if f32 {
            run_typed::<f32>(kernel, sig, ptrs, views, domain3)
        } else {
            run_typed::<f64>(kernel, sig, ptrs, views, domain3)
        }
    };
    // Small domains run on this thread in microseconds: releasing and re-taking the GIL would
    // cost a good part of that, and no other thread could use the pause.
    let points = domain3.iter().try_fold(1usize, |p, &n| p.checked_mul(n));
    let small = points.is_some_and(|p| p < gridbuf::kernels::PARALLEL_MIN_POINTS);
    crate::numpy_interop::detach_if(py, !small, run).py(py)
}

fn run_typed<T: gridbuf::kernels::Float + gridbuf::arrays::array_info::Element>(
    kernel: &'static dyn Kernel,
    sig: &Signature,
    ptrs: &[usize],
    views: &[View3],
    domain: [usize; 3],
) -> gridbuf::Result<()> {
    let n_out = sig.fields.iter().filter(|f| f.intent.is_output()).count();
    let mut inputs: Vec<ArrayView3<'_, T>> = Vec::with_capacity(views.len() - n_out);
    let mut outputs: Vec<ArrayViewMut3<'_, T>> = Vec::with_capacity(n_out);
    for ((v, f), &ptr) in views.iter().zip(&sig.fields).zip(ptrs) {
        let named = |e: gridbuf::Error| gridbuf::Error::kernel_view(&f.name, &e);
        // SAFETY: the binder checked that every view lies inside its array (origin, domain and
        // extent against the shape on every axis) and that no output overlaps another argument;
        // `View3::new` checked dtype, stride multiples and (outputs) writeability and distinct
        // elements for this dtype, shape and strides, which the cache key fixes, and `view*`
        // check the address's alignment; the arrays are kept alive by the caller's frame (their
        // Python objects) for the whole call.
        unsafe {
            if f.intent.is_output() {
                outputs.push(v.view_mut::<T>(ptr).map_err(named)?);
            } else {
                inputs.push(v.view::<T>(ptr).map_err(named)?);
            }
        }
    }
    gridbuf::kernels::run::<T>(
        kernel,
        &inputs,
        &mut outputs,
        domain,
        gridbuf::runtime::threads::configured(),
    )
}

/// Runs a Python kernel on the views of a bound call: a compiled gtscript program directly,
/// with the call's domain and origins (its views of fields read at run-time K levels span the
/// whole array, so their origin is not their lower extent); any other callable with the views.
fn call_python<'py>(
    func: &Bound<'py, PyAny>,
    views: &Bound<'py, PyTuple>,
    call: &BoundCall,
    scalars: Option<&Bound<'py, PyDict>>,
) -> PyResult<()> {
    if let Ok(program) = func.cast::<crate::gtscript::GtProgram>() {
        return program.get().run(func.py(), views, Some(call), scalars);
    }
    func.call(views, scalars).map(|_| ())
}

/// NumPy views of the bound fields for a Python kernel; each view's base keeps its source alive.
fn numpy_views<'py>(
    py: Python<'py>,
    fields: &[Arg<'py>],
    call: &BoundCall,
    descrs: &[Py<PyArrayDescr>],
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut out = Vec::with_capacity(fields.len());
    for ((a, v), d) in fields.iter().zip(&call.fields).zip(descrs) {
        let data = (a.info.ptr as isize).wrapping_add(v.byte_offset) as usize;
        // SAFETY: shape and strides describe a view the binder checked to lie inside the source
        // array, which is writeable unless read-only; the keepalive owns that memory.
        let arr = unsafe {
            crate::numpy_interop::array_from_raw_parts(
                py,
                d.bind(py).clone(),
                v.shape.iter().copied(),
                v.strides.iter().copied(),
                data as *mut std::os::raw::c_void,
                !a.info.readonly,
                a.keepalive.clone(),
            )?
        };
        out.push(arr);
    }
    Ok(out)
}

#[pymethods]
impl Stencil {
    /// Run the stencil on ``args`` (the fields, in signature order) and scalar keywords.
    ///
    /// Parameters
    /// ----------
    /// *args : array_like
    ///     The fields: any array gridbuf understands (NumPy, buffer protocol, DLPack, Field,
    ///     xarray DataArray, objects with a data interface).
    /// origin : tuple of int or dict, optional
    ///     Start of the compute domain: one tuple for every field (per domain dim), or a dict
    ///     from field name to tuple with ``"_all_"`` as the default. Else each field's
    ///     ``__gt_origin__``, else its data-interface lower halo, else zero.
    /// domain : tuple of int, optional
    ///     Extent of the compute domain; default the largest that fits every field.
    /// validate_args : bool, optional
    ///     ``False`` skips only what cannot make the call touch memory it was not handed: the
    ///     dtype's agreement with the stencil (a dtype of the same element size is then read as
    ///     the stencil's) and the layout warnings. The element size, device, writeability,
    ///     dims, bounds and overlap checks always run. A binding checked with some checks
    ///     skipped is cached apart, so a later validated call runs every check.
    /// resolved_into : dict, optional
    ///     Where to put what the binder resolved, as GT4Py's ``exec_info`` holds it: its
    ///     ``"domain"`` (a tuple) and ``"origin"`` (a dict from field name to origin), set before
    ///     the stencil runs (``resolve`` gives the same without running).
    /// **scalars
    ///     The stencil's scalar parameters.
    ///
    /// Raises
    /// ------
    /// GridbufValueError
    ///     A check failed; the message names the field and the axis.
    /// GridbufTypeError
    ///     Wrong number of fields, an argument that is not an array, a missing scalar.
    #[pyo3(signature = (*args, origin=None, domain=None, validate_args=true, resolved_into=None, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        origin: Option<&Bound<'py, PyAny>>,
        domain: Option<&Bound<'py, PyAny>>,
        validate_args: bool,
        resolved_into: Option<&Bound<'py, PyDict>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<()> {
        let scalars = self.scalar_kwargs(py, kwargs)?;
        let Prepare {
            fields,
            ptrs,
            bound,
            sig,
        } = self.prepare(py, args, origin, domain, validate_args)?;
        if let Some(d) = resolved_into {
            let (dom, origins) = resolved(py, sig, &bound)?;
            d.set_item("domain", dom)?;
            d.set_item("origin", origins)?;
        }
        around(hooks(&fields), sig, || match &self.body {
            Body::Native { kernel, .. } => run_native(py, *kernel, sig, &ptrs, &bound),
            Body::Python { func, descrs } => {
                let np_views = numpy_views(py, &fields, &bound.call, descrs)?;
                call_python(
                    func.bind(py),
                    &PyTuple::new(py, np_views)?,
                    &bound.call,
                    scalars.as_ref(),
                )
            }
        })
    }

    /// Check a call once and return a callable that reruns it on these exact arrays.
    ///
    /// Parameters
    /// ----------
    /// *args, origin, domain, validate_args, **scalars
    ///     As for calling the stencil.
    ///
    /// Returns
    /// -------
    /// BoundStencil
    ///     Calling it runs the kernel again with no per-call checks (the data interface's
    ///     acquire / touch / release still run).
    #[pyo3(signature = (*args, origin=None, domain=None, validate_args=true, **kwargs))]
    fn bind<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        origin: Option<&Bound<'py, PyAny>>,
        domain: Option<&Bound<'py, PyAny>>,
        validate_args: bool,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<BoundStencil> {
        let this = slf.get();
        let scalars = this.scalar_kwargs(py, kwargs)?;
        let Prepare {
            fields,
            ptrs,
            bound,
            sig,
        } = this.prepare(py, args, origin, domain, validate_args)?;
        let np_views = match &this.body {
            Body::Python { descrs, .. } => {
                Some(PyTuple::new(py, numpy_views(py, &fields, &bound.call, descrs)?)?.unbind())
            }
            Body::Native { .. } => None,
        };
        let has_callbacks = fields.iter().any(|a| a.callbacks.is_some());
        Ok(BoundStencil {
            stencil: slf.clone().unbind(),
            sig: sig.clone(),
            keepalive: PyList::new(py, fields.iter().map(|a| a.keepalive.clone()))?.unbind(),
            objects: args.clone().unbind(),
            ptrs,
            prepared: bound,
            np_views,
            scalars: scalars.map(Bound::unbind),
            has_callbacks,
        })
    }

    /// The compute domain and every field's origin a call with these arguments runs with (its
    /// checked binding, from the cache when there is one); nothing runs.
    ///
    /// Parameters
    /// ----------
    /// *args, origin, domain, validate_args
    ///     As for calling the stencil.
    ///
    /// Returns
    /// -------
    /// tuple
    ///     ``(domain, origins)``: the domain per domain dim, and a dict from field name to its
    ///     origin per dim of the field (data dims 0), in the field's dims order.
    #[pyo3(signature = (*args, origin=None, domain=None, validate_args=true))]
    fn resolve<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        origin: Option<&Bound<'py, PyAny>>,
        domain: Option<&Bound<'py, PyAny>>,
        validate_args: bool,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let Prepare { bound, sig, .. } = self.prepare(py, args, origin, domain, validate_args)?;
        resolved(py, sig, &bound)
    }

    /// The stencil's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The fields: a list of dicts with name, dtype, dims, extent, intent.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for f in &self.sigs.default.fields {
            let d = PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("dtype", f.dtype.name())?;
            d.set_item(
                "dims",
                f.dims.iter().map(|x| x.to_string()).collect::<String>(),
            )?;
            d.set_item("extent", f.extent.clone())?;
            d.set_item("intent", f.intent.name())?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Names of the scalar parameters.
    #[getter]
    fn scalars(&self) -> Vec<String> {
        self.scalars.clone()
    }

    /// Number of cached call layouts.
    #[getter]
    fn cache_size(&self) -> usize {
        self.cache.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Stencil({:?}, fields={:?}, scalars={:?})",
            self.name,
            self.sigs
                .default
                .fields
                .iter()
                .map(|f| &f.name)
                .collect::<Vec<_>>(),
            self.scalars
        )
    }
}

impl BoundStencil {
    /// Runs `run` between the fields' data-interface callbacks, read again from the arguments
    /// (kept out of `__call__`, whose common path has none).
    #[inline(never)]
    fn run_with_callbacks(
        &self,
        py: Python<'_>,
        run: impl FnOnce() -> PyResult<()>,
    ) -> PyResult<()> {
        let callbacks = self
            .objects
            .bind(py)
            .iter()
            .map(|o| callbacks_of_arg(py, &o))
            .collect::<PyResult<Vec<_>>>()?;
        let hooks = match callbacks.iter().all(Option::is_none) {
            true => None,
            false => Some(hooks_of(callbacks.into_iter())),
        };
        around(hooks, &self.sig, run)
    }
}

/// A stencil bound to specific arrays: reruns with no per-call checks.
#[pyclass(frozen, module = "gridbuf", name = "BoundStencil")]
pub struct BoundStencil {
    stencil: Py<Stencil>,
    sig: Signature,
    /// Keeps every field's memory alive as long as the bound call exists.
    #[allow(dead_code)]
    keepalive: Py<PyList>,
    objects: Py<PyTuple>,
    /// Each field's array pointer at bind time.
    ptrs: Vec<usize>,
    prepared: Arc<Prepared>,
    np_views: Option<Py<PyTuple>>,
    scalars: Option<Py<PyDict>>,
    has_callbacks: bool,
}

#[pymethods]
impl BoundStencil {
    /// Run the bound call again.
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let stencil = self.stencil.get();
        let run = || match (&stencil.body, &self.np_views) {
            (Body::Native { kernel, .. }, _) => {
                run_native(py, *kernel, &self.sig, &self.ptrs, &self.prepared)
            }
            (Body::Python { func, .. }, Some(v)) => call_python(
                func.bind(py),
                v.bind(py),
                &self.prepared.call,
                self.scalars.as_ref().map(|d| d.bind(py)),
            ),
            (Body::Python { .. }, None) => Err(to_py(py, gridbuf::Error::bound_views_lost())),
        };
        if !self.has_callbacks {
            return run();
        }
        self.run_with_callbacks(py, run)
    }

    /// The compute domain of the bound call.
    #[getter]
    fn domain(&self) -> Vec<usize> {
        self.prepared.call.domain.clone()
    }
}

/// The native kernel registered under `name` as a Stencil (float64 and float32 fields).
#[pyfunction]
pub fn native_stencil(py: Python<'_>, name: &str) -> PyResult<Stencil> {
    let kernel = gridbuf::kernels::by_name(name).ok_or_else(|| {
        let names: Vec<&str> = gridbuf::kernels::all().iter().map(|k| k.name()).collect();
        to_py(py, gridbuf::Error::unknown_kernel(name, &names))
    })?;
    Ok(Stencil {
        name: name.to_owned(),
        sigs: Signatures::native(kernel).py(py)?,
        body: Body::Native { kernel },
        scalars: Vec::new(),
        cache: CallCache::default(),
        gt4py_warnings: false,
    })
}

/// Names of the native kernels.
#[pyfunction]
pub fn native_kernel_names() -> Vec<&'static str> {
    gridbuf::kernels::all().iter().map(|k| k.name()).collect()
}

/// A Stencil around a Python function, from field descriptions built by `gridbuf.stencil`.
///
/// Each field is a dict with ``name``, ``dtype`` (a NumPy dtype), ``dims`` (str), ``extent``
/// (per dim a (lower, upper) pair), ``intent``, and optional ``data_shape``, ``layout``,
/// ``alignment``. ``warnings="gt4py"`` words the layout warning as GT4Py's stencil objects do
/// (and leaves out the alignment warning, which GT4Py does not give).
#[pyfunction]
#[pyo3(signature = (name, func, fields, scalars, device="cpu", warnings="gridbuf"))]
pub fn python_stencil(
    py: Python<'_>,
    name: &str,
    func: Py<PyAny>,
    fields: &Bound<'_, PyList>,
    scalars: Vec<String>,
    device: &str,
    warnings: &str,
) -> PyResult<Stencil> {
    let gt4py_warnings = match warnings {
        "gridbuf" => false,
        "gt4py" => true,
        other => {
            return Err(to_py(
                py,
                gridbuf::Error::invalid("warnings", other, "\"gridbuf\" or \"gt4py\""),
            ))
        }
    };
    let mut params = Vec::new();
    let mut descrs = Vec::new();
    for f in fields.iter() {
        let f = f.cast::<PyDict>()?;
        let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
            f.get_item(k)?
                .ok_or_else(|| to_py(py, gridbuf::Error::field_description_misses(k)))
        };
        let fname: String = get("name")?.extract()?;
        let descr = PyArrayDescr::new(py, get("dtype")?)?;
        let dtype = crate::numpy_interop::dtype_of_descr(&descr)?;
        let dims =
            gridbuf::geometry::dims::parse_dims_str(get("dims")?.cast::<PyString>()?.to_str()?)
                .py(py)?;
        let extent: Vec<(isize, isize)> = get("extent")?.extract()?;
        let intent = parse_intent(get("intent")?.cast::<PyString>()?.to_str()?).py(py)?;
        let opt = |k: &str| f.get_item(k).ok().flatten().filter(|v| !v.is_none());
        let data_shape = opt("data_shape").map(|v| v.extract()).transpose()?;
        let layout = opt("layout").map(|v| v.extract()).transpose()?;
        let alignment = opt("alignment").map(|v| v.extract()).transpose()?;
        let whole = opt("whole")
            .map(|v| v.extract())
            .transpose()?
            .unwrap_or_else(|| vec![false; dims.len()]);
        params.push(FieldParam {
            name: fname,
            dtype,
            dims,
            data_shape,
            extent,
            intent,
            layout,
            alignment,
            whole,
        });
        descrs.push(descr.unbind());
    }
    let device = Device::parse(device).py(py)?;
    let sig = Signature::new(params, device).py(py)?;
    Ok(Stencil {
        name: name.to_owned(),
        sigs: Signatures::single(sig),
        body: Body::Python { func, descrs },
        scalars,
        cache: CallCache::default(),
        gt4py_warnings,
    })
}
