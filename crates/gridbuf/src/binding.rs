//! Stencil argument binding: from the arrays of a call to checked views in the kernel's dims
//! order, with the compute domain worked out and every safety check done once per distinct
//! call layout.
//!
//! The binder is pure: it sees [`ArrayInfo`]s plus what the arrays declare (dims, origin, data
//! interface halo) and returns a [`BoundCall`] that says, per field, where its view starts
//! relative to the array's pointer and which shape and strides it has in the kernel's order.
//! A `BoundCall` depends only on a [`CallKey`] (dtype, shape, strides, dims, origin, device of
//! every field, plus the call's origin and domain), never on the pointers, so callers cache it
//! under that key; what does depend on pointers (overlap of outputs with other arguments) is
//! checked per call by [`BoundCall::check_overlaps`].

pub mod callbacks;

use crate::array_info::{ArrayDevice, ArrayInfo, DType, Element};
use crate::dims::Dim;
use crate::error::{Error, Result};
use crate::kernels::Intent;
use crate::preset::Device;
use ndarray::{ArrayView3, ArrayViewMut3, Axis, Ix3, RawArrayViewMut, ShapeBuilder};

/// A raw mutable 3-D view (ndarray has no alias for it).
type RawArrayViewMut3<T> = RawArrayViewMut<T, Ix3>;
use std::ptr::NonNull;

/// One field of a stencil's signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldParam {
    /// Argument name.
    pub name: String,
    /// Exact dtype the kernel needs.
    pub dtype: DType,
    /// Dims in the order the kernel indexes the field.
    pub dims: Vec<Dim>,
    /// Required extents of the data dims, in the order they appear in `dims` (`None`: any).
    pub data_shape: Option<Vec<usize>>,
    /// Halo read around the domain per entry of `dims`, as (lower, upper); zero on data dims.
    pub extent: Vec<(usize, usize)>,
    /// Whether the kernel reads, writes or updates the field.
    pub intent: Intent,
    /// Preferred layout map over `dims` (a mismatch only warns).
    pub layout: Option<Vec<usize>>,
    /// Preferred alignment in bytes of the first domain point (a mismatch only warns).
    pub alignment: Option<usize>,
}

impl FieldParam {
    /// A field with the given dims, no extent, intent `In` and no layout preference.
    pub fn new(name: &str, dtype: DType, dims: Vec<Dim>) -> FieldParam {
        let n = dims.len();
        FieldParam {
            name: name.into(),
            dtype,
            dims,
            data_shape: None,
            extent: vec![(0, 0); n],
            intent: Intent::In,
            layout: None,
            alignment: None,
        }
    }
}

/// A stencil's fields and the device it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Fields in argument order.
    pub fields: Vec<FieldParam>,
    /// The Cartesian dims of the domain, in I, J, K order (the union over the fields).
    pub domain_dims: Vec<Dim>,
    /// Where the kernel runs.
    pub device: Device,
}

impl Signature {
    /// Checks the fields (unique names, valid dims, extents per dim) and derives the domain dims.
    pub fn new(fields: Vec<FieldParam>, device: Device) -> Result<Signature> {
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(Error::invalid(
                    "signature",
                    &f.name,
                    "field names must be unique",
                ));
            }
            crate::dims::validate_dims(&f.dims, f.dims.len())?;
            if f.extent.len() != f.dims.len() {
                return Err(Error::invalid(
                    format!("extent of field {:?}", f.name),
                    &f.extent,
                    "expected one (lower, upper) pair per dim",
                ));
            }
            let n_data = f
                .dims
                .iter()
                .filter(|d| d.cartesian_index().is_none())
                .count();
            if let Some(ds) = &f.data_shape {
                if ds.len() != n_data {
                    return Err(Error::invalid(
                        format!("data_shape of field {:?}", f.name),
                        ds,
                        format!("expected one extent per data dim, {n_data} in all"),
                    ));
                }
            }
            if let Some(l) = &f.layout {
                crate::layout::validate_layout(l, f.dims.len())?;
            }
        }
        let mut domain_dims: Vec<Dim> = [Dim::I, Dim::J, Dim::K]
            .into_iter()
            .filter(|d| fields.iter().any(|f| f.dims.contains(d)))
            .collect();
        domain_dims.dedup();
        Ok(Signature {
            fields,
            domain_dims,
            device,
        })
    }

    fn domain_index(&self, dim: Dim) -> Option<usize> {
        self.domain_dims.iter().position(|&d| d == dim)
    }
}

/// What one argument says about itself besides its memory; the default declares nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ArgMeta {
    /// Dims in the array's index order, if it declares them (else the kernel's order is assumed).
    pub dims: Option<Vec<Dim>>,
    /// `__gt_origin__` in the array's index order.
    pub origin: Option<Vec<usize>>,
    /// Lower halo of its data interface, in the array's index order.
    pub halo_lower: Option<Vec<usize>>,
}

/// The origin given at the call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum CallOrigin {
    /// None given: each field's `__gt_origin__`, else its data-interface lower halo, else zero.
    #[default]
    Default,
    /// One origin for every field, one entry per domain dim (I, J, K order).
    All(Vec<usize>),
    /// Per field name; `default` (the `"_all_"` entry) for the others. Each tuple has one entry
    /// per dim of the field in the kernel's order, or one per domain dim.
    PerField {
        /// `"_all_"`: per domain dim.
        default: Option<Vec<usize>>,
        /// (field name, origin).
        fields: Vec<(String, Vec<usize>)>,
    },
}

/// Per field of a [`CallKey`]: dtype, shape, strides, device, read-only flag and declarations.
pub type FieldKey = (DType, Vec<usize>, Vec<isize>, ArrayDevice, bool, ArgMeta);

/// Converts an origin in array index order to the kernel's order.
type FromArray<'a> = &'a dyn Fn(&[usize], &str) -> Result<Vec<usize>>;

/// Everything a [`BoundCall`] depends on: a call with an equal key binds identically.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallKey {
    /// Per field: dtype, shape, strides, device and what the array declares.
    pub fields: Vec<FieldKey>,
    /// The call's origin.
    pub origin: CallOrigin,
    /// The call's domain (per domain dim), if given.
    pub domain: Option<Vec<usize>>,
}

impl CallKey {
    /// The key of a call.
    pub fn new(
        args: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
    ) -> CallKey {
        CallKey {
            fields: args
                .iter()
                .map(|(i, m)| {
                    (
                        i.dtype,
                        i.shape.clone(),
                        i.strides.clone(),
                        i.device,
                        i.readonly,
                        (*m).clone(),
                    )
                })
                .collect(),
            origin: origin.clone(),
            domain: domain.map(<[usize]>::to_vec),
        }
    }

    /// Whether this key equals `CallKey::new(args, origin, domain)`, without building that key.
    pub fn matches(
        &self,
        args: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
    ) -> bool {
        self.fields.len() == args.len()
            && self.fields.iter().zip(args).all(|(k, (i, m))| {
                k.0 == i.dtype
                    && k.1 == i.shape
                    && k.2 == i.strides
                    && k.3 == i.device
                    && k.4 == i.readonly
                    && k.5 == **m
            })
            && self.origin == *origin
            && self.domain.as_deref() == domain
    }
}

/// A field's view as the kernel sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundField {
    /// Byte offset of the view's first element from the array's pointer.
    pub byte_offset: isize,
    /// Shape in the kernel's dims order: the domain widened by the extent, full data dims.
    pub shape: Vec<usize>,
    /// Byte strides in the kernel's dims order.
    pub strides: Vec<isize>,
    /// Lowest and highest byte (exclusive) the view touches, relative to the array's pointer.
    pub span: (isize, isize),
    /// The origin used, in the kernel's dims order.
    pub origin: Vec<usize>,
}

/// A bound field's view as a typed 3-D `ndarray` view, checked once when the call is bound.
///
/// The cache key of a call fixes everything these checks depend on (dtype, shape, strides,
/// writeability) except the array's address, so a rerun only checks that the address is
/// aligned for the element type and then builds the view without allocating.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View3 {
    /// Byte offset of the lowest address the view touches from the array's pointer; `None` for
    /// an empty view.
    low: Option<isize>,
    shape: [usize; 3],
    /// Element strides, non-negative; `inverted` axes run backwards from `low`.
    strides: [usize; 3],
    inverted: [bool; 3],
    dtype: DType,
    writable: bool,
}

impl View3 {
    /// Checks that `view` (a 3-D view inside the array at `array_ptr`) can be read as `T`, and
    /// written when `mutable` (writeable, no element reachable through two indices).
    pub fn new<T: Element>(view: &ArrayInfo, array_ptr: usize, mutable: bool) -> Result<View3> {
        if view.ndim() != 3 {
            return Err(Error::invalid(
                "view",
                format!("{} axes", view.ndim()),
                "native kernels take 3-D fields",
            ));
        }
        let parts = view.view_parts::<T>(mutable)?;
        let shape = [view.shape[0], view.shape[1], view.shape[2]];
        let mut strides = [0; 3];
        if parts.base.is_some() {
            for (a, s) in strides.iter_mut().enumerate() {
                *s = parts.strides[a];
            }
        }
        let mut inverted = [false; 3];
        for a in parts.inverted {
            inverted[a] = true;
        }
        Ok(View3 {
            low: parts
                .base
                .map(|b| (b as isize).wrapping_sub(array_ptr as isize)),
            shape,
            strides,
            inverted,
            dtype: T::DTYPE,
            writable: mutable,
        })
    }

    /// The pointer of the view's lowest element for the array at `array_ptr`, checked.
    fn base<T: Element>(&self, array_ptr: usize, mutable: bool) -> Result<Option<usize>> {
        if self.dtype != T::DTYPE || (mutable && !self.writable) {
            return Err(Error::invalid(
                "view",
                self.dtype.to_string(),
                format!("a view checked for {} (writable: {})", T::DTYPE, mutable),
            ));
        }
        let Some(low) = self.low else { return Ok(None) };
        let base = (array_ptr as isize).wrapping_add(low) as usize;
        if base % std::mem::align_of::<T>() != 0 {
            return Err(Error::invalid(
                "data pointer",
                format!("{array_ptr:#x}"),
                format!("an address aligned for {}", T::DTYPE),
            ));
        }
        Ok(Some(base))
    }

    /// The view of the array at `array_ptr` as a raw view (checked address, axes inverted).
    fn raw<T: Element>(&self, array_ptr: usize, mutable: bool) -> Result<RawArrayViewMut3<T>> {
        let shape = Ix3(self.shape[0], self.shape[1], self.shape[2]);
        let Some(base) = self.base::<T>(array_ptr, mutable)? else {
            // SAFETY: an empty view touches nothing; a dangling aligned pointer is what ndarray
            // uses for empty arrays itself.
            return Ok(unsafe {
                RawArrayViewMut3::from_shape_ptr(shape, NonNull::dangling().as_ptr())
            });
        };
        let strides = Ix3(self.strides[0], self.strides[1], self.strides[2]);
        // SAFETY: `new` checked (through `ArrayInfo::view_parts`) that these non-negative
        // element strides from the lowest address reach only bytes of the view, and `base`
        // that the address is aligned.
        let mut v = unsafe {
            RawArrayViewMut3::from_shape_ptr(
                shape.strides(strides),
                std::ptr::with_exposed_provenance_mut::<T>(base),
            )
        };
        for (a, &inv) in self.inverted.iter().enumerate() {
            if inv {
                v.invert_axis(Axis(a));
            }
        }
        Ok(v)
    }

    /// The view of the array at `array_ptr` for reading.
    ///
    /// # Safety
    /// The array at `array_ptr` must be the one this view was checked for, or one with the same
    /// dtype, shape and strides, alive and not written through another path for `'a`.
    pub unsafe fn view<'a, T: Element>(&self, array_ptr: usize) -> Result<ArrayView3<'a, T>> {
        let raw = self.raw::<T>(array_ptr, false)?;
        // SAFETY: the raw view is valid and aligned (see `raw`); liveness and the absence of
        // writes for 'a are the caller's contract.
        Ok(unsafe { raw.deref_into_view() })
    }

    /// The view of the array at `array_ptr` for writing.
    ///
    /// # Safety
    /// As for [`View3::view`], and nothing else may read or write the view's bytes for `'a`.
    pub unsafe fn view_mut<'a, T: Element>(
        &self,
        array_ptr: usize,
    ) -> Result<ArrayViewMut3<'a, T>> {
        let raw = self.raw::<T>(array_ptr, true)?;
        // SAFETY: as in `view`; `new` also checked that no two indices reach overlapping bytes,
        // and exclusive access for 'a is the caller's contract.
        Ok(unsafe { raw.deref_into_view_mut() })
    }
}

/// A checked binding of a call: the domain and every field's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundCall {
    /// Domain per domain dim (I, J, K order).
    pub domain: Vec<usize>,
    /// Per field, in signature order.
    pub fields: Vec<BoundField>,
    /// Layout or alignment mismatches that do not make the call wrong, only slower.
    pub warnings: Vec<String>,
}

/// A call error: one sentence naming the field (and axis where there is one).
fn call_error(message: String) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: String::new(),
        expected: message,
    }
}

/// Checks and binds a call. With `validate = false` only the checks that keep memory safe run
/// (bounds, shapes, dims); dtype, device, writeability and layout checks are skipped.
pub fn bind(
    sig: &Signature,
    args: &[(&ArrayInfo, &ArgMeta)],
    origin: &CallOrigin,
    domain: Option<&[usize]>,
    validate: bool,
) -> Result<BoundCall> {
    if args.len() != sig.fields.len() {
        return Err(call_error(format!(
            "the stencil takes {} fields ({}), but {} were given",
            sig.fields.len(),
            sig.fields
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            args.len()
        )));
    }
    let nd = sig.domain_dims.len();
    if let Some(d) = domain {
        if d.len() != nd {
            return Err(call_error(format!(
                "domain {d:?} must have one entry per domain dim {}",
                crate::dims::format_dims(&sig.domain_dims)
            )));
        }
        if let Some(a) = d.iter().position(|&n| n == 0) {
            return Err(call_error(format!(
                "domain {d:?} must be positive, but its extent along {} is 0",
                sig.domain_dims[a]
            )));
        }
    }
    // Per field: the permutation from kernel dims to array axes, and the origin in kernel order.
    let mut perms = Vec::with_capacity(args.len());
    let mut origins = Vec::with_capacity(args.len());
    for (f, (info, meta)) in sig.fields.iter().zip(args) {
        if validate {
            if info.dtype != f.dtype {
                return Err(call_error(format!(
                    "field {:?} has dtype {}, but the stencil needs {}",
                    f.name, info.dtype, f.dtype
                )));
            }
            if !info.device.accessible_from(sig.device) {
                return Err(call_error(format!(
                    "field {:?} lives in {} memory, which a {} stencil cannot use",
                    f.name,
                    info.device,
                    sig.device.name()
                )));
            }
            if f.intent.is_output() && info.readonly {
                return Err(call_error(format!(
                    "field {:?} is written by the stencil (intent {}), but the array is read-only",
                    f.name,
                    f.intent.name()
                )));
            }
        }
        if info.ndim() != f.dims.len() {
            return Err(call_error(format!(
                "field {:?} has {} axes, but the stencil declares the dims {}",
                f.name,
                info.ndim(),
                crate::dims::format_dims(&f.dims)
            )));
        }
        let perm: Vec<usize> = match &meta.dims {
            None => (0..f.dims.len()).collect(),
            Some(arr_dims) => {
                let mut p = Vec::with_capacity(f.dims.len());
                for d in &f.dims {
                    match arr_dims.iter().position(|a| a == d) {
                        Some(ax) => p.push(ax),
                        None => {
                            return Err(call_error(format!(
                                "field {:?} has the dims {}, but the stencil declares {}",
                                f.name,
                                crate::dims::format_dims(arr_dims),
                                crate::dims::format_dims(&f.dims)
                            )))
                        }
                    }
                }
                p
            }
        };
        // Data-dim extents.
        if let Some(ds) = &f.data_shape {
            let mut di = 0;
            for (a, d) in f.dims.iter().enumerate() {
                if d.cartesian_index().is_none() {
                    let n = info.shape[perm[a]];
                    if n != ds[di] {
                        return Err(call_error(format!(
                            "field {:?} has extent {n} along data dim {d}, but the stencil needs {}",
                            f.name, ds[di]
                        )));
                    }
                    di += 1;
                }
            }
        }
        origins.push(resolve_origin(sig, f, info, meta, &perm, origin)?);
        perms.push(perm);
    }
    // Domain: given, else the largest that fits every field.
    let domain: Vec<usize> = match domain {
        Some(d) => d.to_vec(),
        None => {
            let mut dom = vec![usize::MAX; nd];
            for ((f, (info, _)), (perm, o)) in
                sig.fields.iter().zip(args).zip(perms.iter().zip(&origins))
            {
                for (a, d) in f.dims.iter().enumerate() {
                    if let Some(di) = sig.domain_index(*d) {
                        let room = info.shape[perm[a]]
                            .saturating_sub(o[a])
                            .saturating_sub(f.extent[a].1);
                        dom[di] = dom[di].min(room);
                    }
                }
            }
            if let Some(di) = dom.iter().position(|&n| n == 0) {
                return Err(call_error(format!(
                    "no positive domain fits along {}: some field is too small for its origin and extent",
                    sig.domain_dims[di]
                )));
            }
            dom
        }
    };
    // Bounds per field and axis, and the views.
    let mut fields = Vec::with_capacity(args.len());
    let mut warnings = Vec::new();
    for ((f, (info, _)), (perm, o)) in sig.fields.iter().zip(args).zip(perms.iter().zip(origins)) {
        let mut shape = Vec::with_capacity(f.dims.len());
        let mut strides = Vec::with_capacity(f.dims.len());
        let mut offset: isize = 0;
        for (a, d) in f.dims.iter().enumerate() {
            let n = info.shape[perm[a]];
            let stride = info.strides[perm[a]];
            let (lo, hi) = f.extent[a];
            let (start, len) = match sig.domain_index(*d) {
                Some(di) => {
                    if o[a] < lo {
                        return Err(call_error(format!(
                            "field {:?} has origin {} along {d}, less than the lower extent {lo} the stencil reads",
                            f.name, o[a]
                        )));
                    }
                    let end = o[a].checked_add(domain[di]).and_then(|v| v.checked_add(hi));
                    if end.is_none_or(|e| e > n) {
                        return Err(call_error(format!(
                            "field {:?} is too small along {d}: origin {} + domain {} + upper extent {hi} exceeds its extent {n}",
                            f.name, o[a], domain[di]
                        )));
                    }
                    (o[a] - lo, domain[di] + lo + hi)
                }
                None => (0, n),
            };
            offset = (start as isize)
                .checked_mul(stride)
                .and_then(|s| offset.checked_add(s))
                .ok_or_else(|| {
                    Error::overflow(format!("field {:?}", f.name), start, "the view offset")
                })?;
            shape.push(len);
            strides.push(stride);
        }
        let view = ArrayInfo {
            ptr: 0,
            shape: shape.clone(),
            strides: strides.clone(),
            ..(*info).clone()
        };
        let span = view.nbytes_span()?;
        if validate {
            if let Some(l) = &f.layout {
                if !follows_layout(&shape, &strides, l) {
                    warnings.push(format!(
                        "field {:?} does not have the layout {l:?} the stencil prefers; it runs correctly but may be slower",
                        f.name
                    ));
                }
            }
            if let Some(al) = f.alignment {
                if (info.ptr as isize)
                    .wrapping_add(offset)
                    .rem_euclid(al as isize)
                    != 0
                {
                    warnings.push(format!(
                        "field {:?} is not aligned to {al} bytes at the start of its view; it runs correctly but may be slower",
                        f.name
                    ));
                }
            }
        }
        fields.push(BoundField {
            byte_offset: offset,
            shape,
            strides,
            span: (offset + span.low, offset + span.high),
            origin: o,
        });
    }
    Ok(BoundCall {
        domain,
        fields,
        warnings,
    })
}

/// Whether strides decrease in the order the layout map gives (axes of extent 1 ignored).
fn follows_layout(shape: &[usize], strides: &[isize], layout: &[usize]) -> bool {
    let order = crate::layout::axes_by_rank(layout);
    let big: Vec<usize> = order.into_iter().filter(|&a| shape[a] > 1).collect();
    big.windows(2)
        .all(|w| strides[w[0]].unsigned_abs() >= strides[w[1]].unsigned_abs())
}

fn resolve_origin(
    sig: &Signature,
    f: &FieldParam,
    info: &ArrayInfo,
    meta: &ArgMeta,
    perm: &[usize],
    origin: &CallOrigin,
) -> Result<Vec<usize>> {
    let n = f.dims.len();
    // Per domain dim -> per field dim (data dims start at 0).
    let from_domain = |o: &[usize], what: &str| -> Result<Vec<usize>> {
        if o.len() != sig.domain_dims.len() {
            return Err(call_error(format!(
                "{what} {o:?} must have one entry per domain dim {}",
                crate::dims::format_dims(&sig.domain_dims)
            )));
        }
        Ok(f.dims
            .iter()
            .map(|d| sig.domain_index(*d).map_or(0, |di| o[di]))
            .collect())
    };
    let from_array = |o: &[usize], what: &str| -> Result<Vec<usize>> {
        if o.len() != info.ndim() {
            return Err(call_error(format!(
                "{what} {o:?} of field {:?} must have one entry per axis, {} in all",
                f.name,
                info.ndim()
            )));
        }
        Ok(perm.iter().map(|&ax| o[ax]).collect())
    };
    match origin {
        CallOrigin::All(o) => from_domain(o, "origin"),
        CallOrigin::PerField { default, fields } => {
            if let Some((_, o)) = fields.iter().find(|(name, _)| *name == f.name) {
                if o.len() == n {
                    Ok(o.clone())
                } else {
                    from_domain(o, &format!("origin of field {:?}", f.name))
                }
            } else if let Some(o) = default {
                from_domain(o, "origin \"_all_\"")
            } else {
                declared_origin(meta, &from_array, n)
            }
        }
        CallOrigin::Default => declared_origin(meta, &from_array, n),
    }
}

fn declared_origin(meta: &ArgMeta, from_array: FromArray<'_>, n: usize) -> Result<Vec<usize>> {
    if let Some(o) = &meta.origin {
        from_array(o, "__gt_origin__")
    } else if let Some(h) = &meta.halo_lower {
        from_array(h, "data interface halo")
    } else {
        Ok(vec![0; n])
    }
}

impl BoundCall {
    /// Checks that no output's view overlaps the memory of another argument's view, given the
    /// arrays' pointers (in signature order). Conservative: compares byte ranges.
    pub fn check_overlaps(&self, sig: &Signature, ptrs: &[usize]) -> Result<()> {
        let range = |i: usize| {
            let (lo, hi) = self.fields[i].span;
            (
                (ptrs[i] as isize).wrapping_add(lo),
                (ptrs[i] as isize).wrapping_add(hi),
            )
        };
        for (i, f) in sig.fields.iter().enumerate() {
            if !f.intent.is_output() || self.fields[i].shape.contains(&0) {
                continue;
            }
            let (a0, a1) = range(i);
            for (j, g) in sig.fields.iter().enumerate() {
                if i == j || self.fields[j].shape.contains(&0) {
                    continue;
                }
                let (b0, b1) = range(j);
                if a0 < b1 && b0 < a1 {
                    return Err(call_error(format!(
                        "output field {:?} may overlap the memory of field {:?} (their byte ranges intersect); pass separate arrays, e.g. a copy of one of them",
                        f.name, g.name
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array_info::{c_strides, Interface};

    fn arr(shape: &[usize]) -> ArrayInfo {
        ArrayInfo::new(
            0x10000,
            shape.to_vec(),
            c_strides(shape, 8).unwrap(),
            DType::FLOAT64,
            ArrayDevice::CPU,
            Interface::Native,
        )
        .unwrap()
    }

    fn sig2(extent: usize) -> Signature {
        let ijk = vec![Dim::I, Dim::J, Dim::K];
        let mut inp = FieldParam::new("inp", DType::FLOAT64, ijk.clone());
        inp.extent = vec![(extent, extent), (extent, extent), (0, 0)];
        let mut out = FieldParam::new("out", DType::FLOAT64, ijk);
        out.intent = Intent::Out;
        Signature::new(vec![inp, out], Device::Cpu).unwrap()
    }

    #[test]
    fn largest_domain_and_views() {
        let (a, b) = (arr(&[10, 10, 5]), arr(&[10, 10, 5]));
        let m = ArgMeta::default();
        let call = bind(
            &sig2(1),
            &[(&a, &m), (&b, &m)],
            &CallOrigin::All(vec![1, 1, 0]),
            None,
            true,
        )
        .unwrap();
        assert_eq!(call.domain, vec![8, 8, 5]);
        assert_eq!(call.fields[0].shape, vec![10, 10, 5]);
        assert_eq!(call.fields[0].byte_offset, 0);
        assert_eq!(call.fields[1].shape, vec![8, 8, 5]);
        assert_eq!(call.fields[1].byte_offset, (50 + 5) * 8);
    }

    #[test]
    fn permuted_dims_and_declared_origin() {
        let a = arr(&[5, 10, 10]); // K, J, I
        let b = arr(&[10, 10, 5]);
        let ma = ArgMeta {
            dims: Some(vec![Dim::K, Dim::J, Dim::I]),
            origin: Some(vec![0, 2, 2]),
            halo_lower: None,
        };
        let mb = ArgMeta {
            dims: None,
            origin: Some(vec![2, 2, 0]),
            halo_lower: None,
        };
        let call = bind(
            &sig2(1),
            &[(&a, &ma), (&b, &mb)],
            &CallOrigin::Default,
            None,
            true,
        )
        .unwrap();
        assert_eq!(call.fields[0].origin, vec![2, 2, 0]);
        assert_eq!(call.fields[0].strides, vec![8, 80, 800]);
        assert_eq!(call.domain, vec![7, 7, 5]);
    }

    #[test]
    fn checks_name_the_field_and_axis() {
        let (a, b) = (arr(&[10, 10, 5]), arr(&[10, 10, 5]));
        let m = ArgMeta::default();
        let err = bind(
            &sig2(1),
            &[(&a, &m), (&b, &m)],
            &CallOrigin::All(vec![0, 1, 0]),
            None,
            true,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"inp\"") && err.contains("along I"), "{err}");
        let err = bind(
            &sig2(1),
            &[(&a, &m), (&b, &m)],
            &CallOrigin::All(vec![1, 1, 0]),
            Some(&[9, 8, 5]),
            true,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("too small along I"), "{err}");
        let mut f32arr = arr(&[10, 10, 5]);
        f32arr.dtype = DType::FLOAT32;
        assert!(bind(
            &sig2(1),
            &[(&a, &m), (&f32arr, &m)],
            &CallOrigin::All(vec![1, 1, 0]),
            None,
            true
        )
        .is_err());
        let mut ro = arr(&[10, 10, 5]);
        ro.readonly = true;
        assert!(bind(
            &sig2(1),
            &[(&a, &m), (&ro, &m)],
            &CallOrigin::All(vec![1, 1, 0]),
            None,
            true
        )
        .is_err());
    }

    #[test]
    fn overlap_is_detected() {
        let a = arr(&[10, 10, 5]);
        let m = ArgMeta::default();
        let sig = sig2(1);
        let call = bind(
            &sig,
            &[(&a, &m), (&a, &m)],
            &CallOrigin::All(vec![1, 1, 0]),
            None,
            true,
        )
        .unwrap();
        assert!(call.check_overlaps(&sig, &[0x10000, 0x10000]).is_err());
        assert!(call.check_overlaps(&sig, &[0x10000, 0x20000]).is_ok());
    }

    #[test]
    fn key_matches_exactly_the_key_it_equals() {
        let (a, b) = (arr(&[10, 10, 5]), arr(&[10, 10, 5]));
        let m = ArgMeta::default();
        let origin = CallOrigin::All(vec![1, 1, 0]);
        let key = CallKey::new(&[(&a, &m), (&b, &m)], &origin, None);
        assert!(key.matches(&[(&a, &m), (&b, &m)], &origin, None));
        let mut f32arr = arr(&[10, 10, 5]);
        f32arr.dtype = DType::FLOAT32;
        let mut ro = arr(&[10, 10, 5]);
        ro.readonly = true;
        let strided = ArrayInfo {
            strides: vec![800, 80, 16],
            ..arr(&[10, 10, 5])
        };
        let declared = ArgMeta {
            origin: Some(vec![1, 1, 0]),
            ..m.clone()
        };
        for (x, mx) in [(&f32arr, &m), (&ro, &m), (&strided, &m), (&b, &declared)] {
            let other = [(&a, &m), (x, mx)];
            assert!(!key.matches(&other, &origin, None));
            assert_ne!(key, CallKey::new(&other, &origin, None));
        }
        assert!(!key.matches(&[(&a, &m)], &origin, None));
        assert!(!key.matches(&[(&a, &m), (&b, &m)], &CallOrigin::Default, None));
        assert!(!key.matches(&[(&a, &m), (&b, &m)], &origin, Some(&[8, 8, 5])));
    }
}
