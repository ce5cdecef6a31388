//! Binding a call: the checks of every field against the signature, the compute domain and
//! each field's view, in the kernel's dims order.

use super::call::{ArgMeta, CallOrigin};
use super::signature::{FieldParam, Signature};
use crate::arrays::array_info::ArrayInfo;
use crate::error::{Error, Result};

/// Converts an origin in array index order to the kernel's order.
type FromArray<'a> = &'a dyn Fn(&[isize], &str) -> Result<Vec<isize>>;

/// A field's view as the kernel sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundField {
    /// Byte offset of the view's first element from the array's pointer.
    pub byte_offset: isize,
    /// Shape in the kernel's dims order: the domain widened by the extent (the array's whole
    /// extent along the field's `whole` dims), full data dims.
    pub shape: Vec<usize>,
    /// Byte strides in the kernel's dims order.
    pub strides: Vec<isize>,
    /// Lowest and highest byte (exclusive) the view touches, relative to the array's pointer.
    pub span: (isize, isize),
    /// The origin used, in the kernel's dims order (negative where the stencil's lower extent
    /// lets it be: the view then starts after it).
    pub origin: Vec<isize>,
}

/// A checked binding of a call: the domain and every field's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundCall {
    /// Domain per domain dim (I, J, K order).
    pub domain: Vec<usize>,
    /// Per field, in signature order.
    pub fields: Vec<BoundField>,
    /// Layout or alignment mismatches that do not make the call wrong, only slower.
    pub warnings: Vec<BindWarning>,
}

/// A mismatch found when a call is bound that leaves the call correct, only slower.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindWarning {
    /// The field's strides do not follow the layout map the stencil prefers.
    Layout {
        /// The field's name.
        field: String,
        /// The preferred layout map over the field's dims.
        layout: Vec<usize>,
    },
    /// The field's first domain point is not aligned to the preferred number of bytes.
    Alignment {
        /// The field's name.
        field: String,
        /// The preferred alignment in bytes.
        bytes: usize,
    },
}

impl BindWarning {
    /// The warning in gridbuf's words.
    pub fn message(&self) -> String {
        match self {
            BindWarning::Layout { field, layout } => format!(
                "field {field:?} does not have the layout {layout:?} the stencil prefers; it runs correctly but may be slower"
            ),
            BindWarning::Alignment { field, bytes } => format!(
                "field {field:?} is not aligned to {bytes} bytes at the start of its view; it runs correctly but may be slower"
            ),
        }
    }

    /// The warning as GT4Py's stencil objects word it, for stencils that stand in for GT4Py's
    /// (its callers filter the warning by this text); `None` where GT4Py does not warn (it
    /// checks layouts only).
    pub fn gt4py_message(&self) -> Option<String> {
        match self {
            // GT4Py's text, missing spaces included: `StencilObject._validate_args`.
            BindWarning::Layout { field, .. } => Some(format!(
                "The layout of the field '{field}' is not recommended for this backend.This may lead to performance degradation. Please consider using theprovided allocators in `gt4py.storage`."
            )),
            BindWarning::Alignment { .. } => None,
        }
    }
}

/// A call error: one sentence naming the field (and axis where there is one).
fn call_error(message: String) -> Error {
    Error::InvalidValue {
        param: "stencil call".into(),
        value: String::new(),
        expected: message,
    }
}

/// Checks and binds a call. With `validate = false` only the checks whose failure cannot reach
/// memory outside the arrays are skipped: the dtype's agreement with the signature (an element
/// of the same size, read as another type) and the layout warnings. Every check that keeps
/// memory safe always runs: the element size the kernel reads and writes, the device, the
/// writeability of outputs, dims, shapes and bounds.
///
/// The steps: [`check_call`] (number of fields, the given domain), then per field
/// [`check_memory`] (element size, device, writeability), with `validate` [`check_dtype`],
/// [`kernel_axes`] (which array axis each kernel dim is), [`check_data_shape`] and the origin;
/// then the domain (given, else [`largest_domain`]) and per field [`field_view`] (bounds, view,
/// layout warnings).
pub fn bind(
    sig: &Signature,
    args: &[(&ArrayInfo, &ArgMeta)],
    origin: &CallOrigin,
    domain: Option<&[usize]>,
    validate: bool,
) -> Result<BoundCall> {
    check_call(sig, args, domain)?;
    check_origin_names(sig, origin)?;
    // Per field: the permutation from kernel dims to array axes, and the origin in kernel order.
    let mut perms = Vec::with_capacity(args.len());
    let mut origins = Vec::with_capacity(args.len());
    for (f, (info, meta)) in sig.fields.iter().zip(args) {
        check_memory(sig, f, info)?;
        if validate {
            check_dtype(f, info)?;
        }
        let perm = kernel_axes(f, info, meta)?;
        check_data_shape(f, info, &perm)?;
        origins.push(resolve_origin(sig, f, info, meta, &perm, origin)?);
        perms.push(perm);
    }
    let domain = match domain {
        Some(d) => d.to_vec(),
        None => largest_domain(sig, args, &perms, &origins)?,
    };
    let mut fields = Vec::with_capacity(args.len());
    let mut warnings = Vec::new();
    for ((f, (info, _)), (perm, o)) in sig.fields.iter().zip(args).zip(perms.iter().zip(origins)) {
        fields.push(field_view(
            sig,
            f,
            info,
            perm,
            o,
            &domain,
            validate,
            &mut warnings,
        )?);
    }
    Ok(BoundCall {
        domain,
        fields,
        warnings,
    })
}

/// The number of fields, and the given domain: one positive extent per domain dim.
fn check_call(
    sig: &Signature,
    args: &[(&ArrayInfo, &ArgMeta)],
    domain: Option<&[usize]>,
) -> Result<()> {
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
                crate::geometry::dims::format_dims(&sig.domain_dims)
            )));
        }
        if let Some(a) = d.iter().position(|&n| n == 0) {
            return Err(call_error(format!(
                "domain {d:?} must be positive, but its extent along {} is 0",
                sig.domain_dims[a]
            )));
        }
    }
    Ok(())
}

/// The field's dtype is the signature's (skipped with `validate_args=False`: an element of the
/// same size read as another type stays inside the array, see [`check_memory`]).
fn check_dtype(f: &FieldParam, info: &ArrayInfo) -> Result<()> {
    if info.dtype != f.dtype {
        return Err(call_error(format!(
            "field {:?} has dtype {}, but the stencil needs {}",
            f.name, info.dtype, f.dtype
        )));
    }
    Ok(())
}

/// What keeps the kernel inside the field's memory, checked on every call whatever
/// `validate_args` says: the kernel's element size is the array's (the bounds are checked in
/// elements, so a larger element would reach past the last one), the memory is reachable from
/// the stencil's device, and an output is writeable.
fn check_memory(sig: &Signature, f: &FieldParam, info: &ArrayInfo) -> Result<()> {
    if info.dtype.itemsize() != f.dtype.itemsize() {
        return Err(call_error(format!(
            "field {:?} has dtype {} ({} bytes per element), but the stencil reads and writes {} ({} bytes); validate_args=False does not skip this check, since the stencil would reach past the array",
            f.name,
            info.dtype,
            info.dtype.itemsize(),
            f.dtype,
            f.dtype.itemsize()
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
    Ok(())
}

/// Per kernel dim of `f`, the array axis it is: the array's declared dims, else the kernel's
/// order.
fn kernel_axes(f: &FieldParam, info: &ArrayInfo, meta: &ArgMeta) -> Result<Vec<usize>> {
    if info.ndim() != f.dims.len() {
        return Err(call_error(format!(
            "field {:?} has {} axes, but the stencil declares the dims {}",
            f.name,
            info.ndim(),
            crate::geometry::dims::format_dims(&f.dims)
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
                            crate::geometry::dims::format_dims(arr_dims),
                            crate::geometry::dims::format_dims(&f.dims)
                        )))
                    }
                }
            }
            p
        }
    };
    Ok(perm)
}

/// The extents of the data dims, when the signature fixes them.
fn check_data_shape(f: &FieldParam, info: &ArrayInfo, perm: &[usize]) -> Result<()> {
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
    Ok(())
}

/// The largest domain that fits every field from its origin, with its extent; when none does,
/// the error names the first field that leaves no room.
fn largest_domain(
    sig: &Signature,
    args: &[(&ArrayInfo, &ArgMeta)],
    perms: &[Vec<usize>],
    origins: &[Vec<isize>],
) -> Result<Vec<usize>> {
    let nd = sig.domain_dims.len();
    let mut dom = vec![usize::MAX; nd];
    for ((f, (info, _)), (perm, o)) in sig.fields.iter().zip(args).zip(perms.iter().zip(origins)) {
        for (a, d) in f.dims.iter().enumerate() {
            if let Some(di) = sig.domain_index(*d) {
                let n = info.shape[perm[a]];
                let hi = f.extent[a].1;
                // Shapes fit isize (the array's byte size does); origins and extents are small.
                let room = (n as i128 - o[a] as i128 - hi as i128).max(0) as usize;
                if room == 0 {
                    return Err(call_error(format!(
                        "no positive domain fits along {d}: field {:?} has extent {n} there, which leaves no point after its origin {} and the upper extent {hi} the stencil reads",
                        f.name, o[a]
                    )));
                }
                dom[di] = dom[di].min(room);
            }
        }
    }
    Ok(dom)
}

/// Every field name of a per-field origin is a field of the signature.
fn check_origin_names(sig: &Signature, origin: &CallOrigin) -> Result<()> {
    if let CallOrigin::PerField { fields, .. } = origin {
        for (name, _) in fields {
            if !sig.fields.iter().any(|f| &f.name == name) {
                return Err(call_error(format!(
                    "origin names {name:?}, which is not a field of the stencil (fields: {}; \"_all_\" sets the others)",
                    sig.fields
                        .iter()
                        .map(|f| format!("{:?}", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// The view of one field: its bounds checked along every axis, its offset, shape and strides in
/// the kernel's order, and (with `validate`) the layout and alignment warnings.
#[allow(clippy::too_many_arguments)]
fn field_view(
    sig: &Signature,
    f: &FieldParam,
    info: &ArrayInfo,
    perm: &[usize],
    o: Vec<isize>,
    domain: &[usize],
    validate: bool,
    warnings: &mut Vec<BindWarning>,
) -> Result<BoundField> {
    let mut shape = Vec::with_capacity(f.dims.len());
    let mut strides = Vec::with_capacity(f.dims.len());
    let mut offset: isize = 0;
    for (a, d) in f.dims.iter().enumerate() {
        let n = info.shape[perm[a]];
        let stride = info.strides[perm[a]];
        let (lo, hi) = f.extent[a];
        let (start, len) = match sig.domain_index(*d) {
            Some(di) => {
                // In i128: origins, extents and domains are checked here, so no sum of them
                // may wrap first.
                let (o_a, lo_w, hi_w) = (o[a] as i128, lo as i128, hi as i128);
                let first = o_a - lo_w;
                if first < 0 {
                    let what = if lo < 0 {
                        format!(
                            "the stencil reads it from {} points after the origin on (lower extent {lo}), so the origin must be at least {lo}",
                            -lo
                        )
                    } else {
                        format!("less than the lower extent {lo} the stencil reads")
                    };
                    return Err(call_error(format!(
                        "field {:?} has origin {} along {d}, {what}",
                        f.name, o[a]
                    )));
                }
                let end = o_a + domain[di] as i128 + hi_w;
                if end > n as i128 {
                    return Err(call_error(format!(
                        "field {:?} is too small along {d}: origin {} + domain {} + upper extent {hi} exceeds its extent {n}",
                        f.name, o[a], domain[di]
                    )));
                }
                if f.whole[a] {
                    (0, n)
                } else {
                    // `first <= n` here (`end <= n`, and a view that would end before it
                    // starts, where the extents leave no point, is empty).
                    let first = first.min(n as i128) as usize;
                    (first, (end.max(0) as usize).saturating_sub(first))
                }
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
    // The span of the elements the kernel touches: its element type, not the array's.
    let view = ArrayInfo {
        ptr: 0,
        shape: shape.clone(),
        strides: strides.clone(),
        dtype: f.dtype,
        ..(*info).clone()
    };
    let span = view.nbytes_span()?;
    if validate {
        if let Some(l) = &f.layout {
            if !follows_layout(&shape, &strides, l) {
                warnings.push(BindWarning::Layout {
                    field: f.name.clone(),
                    layout: l.clone(),
                });
            }
        }
        if let Some(al) = f.alignment {
            if (info.ptr as isize)
                .wrapping_add(offset)
                .rem_euclid(al as isize)
                != 0
            {
                warnings.push(BindWarning::Alignment {
                    field: f.name.clone(),
                    bytes: al,
                });
            }
        }
    }
    Ok(BoundField {
        byte_offset: offset,
        shape,
        strides,
        span: (offset + span.low, offset + span.high),
        origin: o,
    })
}

/// Whether strides decrease in the order the layout map gives (axes of extent 1 ignored).
fn follows_layout(shape: &[usize], strides: &[isize], layout: &[usize]) -> bool {
    let order = crate::geometry::layout::axes_by_rank(layout);
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
) -> Result<Vec<isize>> {
    let n = f.dims.len();
    // Per domain dim -> per field dim (data dims start at 0).
    let from_domain = |o: &[isize], what: &str| -> Result<Vec<isize>> {
        if o.len() != sig.domain_dims.len() {
            return Err(call_error(format!(
                "{what} {o:?} must have one entry per domain dim {}",
                crate::geometry::dims::format_dims(&sig.domain_dims)
            )));
        }
        Ok(f.dims
            .iter()
            .map(|d| sig.domain_index(*d).map_or(0, |di| o[di]))
            .collect())
    };
    let from_array = |o: &[isize], what: &str| -> Result<Vec<isize>> {
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

fn declared_origin(meta: &ArgMeta, from_array: FromArray<'_>, n: usize) -> Result<Vec<isize>> {
    // Declared origins and halos are sizes of the array (they fit isize).
    let signed = |v: &[usize]| v.iter().map(|&x| x as isize).collect::<Vec<_>>();
    if let Some(o) = &meta.origin {
        from_array(&signed(o), "__gt_origin__")
    } else if let Some(h) = &meta.halo_lower {
        from_array(&signed(h), "data interface halo")
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
    use crate::allocation::preset::Device;
    use crate::arrays::array_info::DType;
    use crate::binding::call::CallKey;
    use crate::binding::test_support::arr;
    use crate::geometry::dims::Dim;
    use crate::kernels::Intent;

    fn sig2(extent: isize) -> Signature {
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
    fn a_layout_mismatch_warns_only_when_validated_in_either_wording() {
        let mut sig = sig2(1);
        sig.fields[0].layout = Some(vec![0, 1, 2]); // C order (K fastest) preferred
        let (a, b) = (arr(&[10, 10, 5]), arr(&[10, 10, 5]));
        let mut f = a.clone();
        f.strides = vec![8, 80, 800]; // I fastest
        let m = ArgMeta::default();
        let origin = CallOrigin::All(vec![1, 1, 0]);
        let good = bind(&sig, &[(&a, &m), (&b, &m)], &origin, None, true).unwrap();
        assert!(good.warnings.is_empty());
        let bad = bind(&sig, &[(&f, &m), (&b, &m)], &origin, None, true).unwrap();
        assert_eq!(
            bad.warnings,
            vec![BindWarning::Layout {
                field: "inp".into(),
                layout: vec![0, 1, 2]
            }]
        );
        assert!(bad.warnings[0]
            .message()
            .contains("field \"inp\" does not have the layout"));
        let gt4py = bad.warnings[0].gt4py_message().unwrap();
        assert!(gt4py.starts_with("The layout of the field 'inp' is not recommended"));
        let unchecked = bind(&sig, &[(&f, &m), (&b, &m)], &origin, None, false).unwrap();
        assert!(unchecked.warnings.is_empty());
        let aligned = BindWarning::Alignment {
            field: "inp".into(),
            bytes: 64,
        };
        assert!(aligned.message().contains("aligned to 64 bytes"));
        assert_eq!(aligned.gt4py_message(), None); // GT4Py does not warn of alignment
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
        let key = CallKey::new(&[(&a, &m), (&b, &m)], &origin, None, true);
        assert!(key.matches(&[(&a, &m), (&b, &m)], &origin, None, true));
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
            assert!(!key.matches(&other, &origin, None, true));
            assert_ne!(key, CallKey::new(&other, &origin, None, true));
        }
        assert!(!key.matches(&[(&a, &m)], &origin, None, true));
        assert!(!key.matches(&[(&a, &m), (&b, &m)], &origin, None, false));
        assert!(!key.matches(&[(&a, &m), (&b, &m)], &CallOrigin::Default, None, true));
        assert!(!key.matches(&[(&a, &m), (&b, &m)], &origin, Some(&[8, 8, 5]), true));
    }
}
