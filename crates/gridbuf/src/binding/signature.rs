//! What a stencil declares: its fields ([`FieldParam`]) and [`Signature`], the intent names,
//! and the signatures of a native kernel for each dtype it runs on ([`Signatures`]).

use crate::allocation::preset::Device;
use crate::arrays::array_info::DType;
use crate::error::{Error, Result};
use crate::geometry::dims::Dim;
use crate::kernels::{Intent, Kernel};

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
    /// Reach around the domain per entry of `dims`, as (lower, upper): the points before the
    /// origin and after the domain the kernel accesses (zero on data dims). Negative where the
    /// kernel stays that far inside (a field read only at `a[1, 0, 0]` has the lower extent -1:
    /// its view starts one point after the origin, so the origin may be -1, as in GT4Py).
    pub extent: Vec<(isize, isize)>,
    /// Whether the kernel reads, writes or updates the field.
    pub intent: Intent,
    /// Preferred layout map over `dims` (a mismatch only warns).
    pub layout: Option<Vec<usize>>,
    /// Preferred alignment in bytes of the first domain point (a mismatch only warns).
    pub alignment: Option<usize>,
    /// Per entry of `dims`: whether the view spans the whole array along it, not only the
    /// domain and extent (a gtscript stencil reading the field at K levels computed at run
    /// time may read any level inside the array, as GT4Py's compiled backends do). The extent
    /// is checked all the same.
    pub whole: Vec<bool>,
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
            whole: vec![false; n],
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
            crate::geometry::dims::validate_dims(&f.dims, f.dims.len())?;
            if f.whole.len() != f.dims.len() {
                return Err(Error::invalid(
                    format!("whole of field {:?}", f.name),
                    f.whole.len(),
                    format!("one entry per dim ({})", f.dims.len()),
                ));
            }
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
                crate::geometry::layout::validate_layout(l, f.dims.len())?;
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

    /// The position of `dim` among the domain dims.
    pub(crate) fn domain_index(&self, dim: Dim) -> Option<usize> {
        self.domain_dims.iter().position(|&d| d == dim)
    }
}

/// Parses an intent name: `"in"`, `"out"` or `"inout"`.
pub fn parse_intent(name: &str) -> Result<Intent> {
    match name {
        "in" => Ok(Intent::In),
        "out" => Ok(Intent::Out),
        "inout" => Ok(Intent::InOut),
        _ => Err(Error::invalid(
            "intent",
            name,
            "expected \"in\", \"out\" or \"inout\"",
        )),
    }
}

/// The signature of a native kernel for fields of `dtype`: its fields with dims `IJK`.
pub fn native_signature(kernel: &dyn Kernel, dtype: DType) -> Result<Signature> {
    let ijk = vec![Dim::I, Dim::J, Dim::K];
    let fields = kernel
        .fields()
        .iter()
        .map(|f| FieldParam {
            extent: (0..3)
                .map(|a| (f.extent.lower[a] as isize, f.extent.upper[a] as isize))
                .collect(),
            intent: f.intent,
            ..FieldParam::new(f.name, dtype, ijk.clone())
        })
        .collect();
    Signature::new(fields, Device::Cpu)
}

/// The signatures a stencil is checked against, by dtype: the first is the default (and the
/// only one of a Python kernel); a native kernel also runs on float32 fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signatures {
    /// The signature for every call whose first field is not float32 (float64 for native kernels).
    pub default: Signature,
    /// The signature for calls whose first field is float32, if the kernel has one.
    pub float32: Option<Signature>,
}

impl Signatures {
    /// The float64 and float32 signatures of a native kernel.
    pub fn native(kernel: &dyn Kernel) -> Result<Signatures> {
        Ok(Signatures {
            default: native_signature(kernel, DType::FLOAT64)?,
            float32: Some(native_signature(kernel, DType::FLOAT32)?),
        })
    }

    /// One signature for every dtype (a Python kernel's).
    pub fn single(sig: Signature) -> Signatures {
        Signatures {
            default: sig,
            float32: None,
        }
    }

    /// The signature a call is checked against: chosen by the dtype of its first field.
    pub fn for_first(&self, first: Option<DType>) -> &Signature {
        match (&self.float32, first) {
            (Some(sig), Some(dtype)) if dtype == DType::FLOAT32 => sig,
            _ => &self.default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_parse_by_name() {
        assert_eq!(parse_intent("inout").unwrap(), Intent::InOut);
        assert!(parse_intent("write")
            .unwrap_err()
            .to_string()
            .contains("\"write\""));
    }

    #[test]
    fn native_kernels_dispatch_on_the_first_dtype() {
        let kernel = crate::kernels::by_name("copy").unwrap();
        let sigs = Signatures::native(kernel).unwrap();
        assert_eq!(
            sigs.for_first(Some(DType::FLOAT32)).fields[0].dtype,
            DType::FLOAT32
        );
        assert_eq!(
            sigs.for_first(Some(DType::FLOAT64)).fields[0].dtype,
            DType::FLOAT64
        );
        assert_eq!(sigs.for_first(None).fields[0].dtype, DType::FLOAT64);
        let single = Signatures::single(sigs.default.clone());
        assert_eq!(
            single.for_first(Some(DType::FLOAT32)).fields[0].dtype,
            DType::FLOAT64
        );
    }
}
