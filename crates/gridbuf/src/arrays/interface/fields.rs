//! Validation shared by the dict-shaped interfaces: shape, typestr and descr, strides, mask.

use crate::arrays::array_info::{c_strides, format_tuple, parse_typestr};
use crate::arrays::array_info::{DType, Interface};
use crate::error::{Error, Result};

/// A [`Error::MissingKey`] for `key` of `interface`.
pub(crate) fn missing(interface: Interface, key: &str, expected: &str) -> Error {
    Error::MissingKey {
        interface: interface.name().to_owned(),
        key: key.to_owned(),
        expected: expected.to_owned(),
    }
}

/// Shape, byte strides and dtype of a dict-shaped interface.
pub(crate) struct Layout {
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub dtype: DType,
}

/// Validates the keys every dict-shaped interface shares. `strides: None` means C order.
pub(crate) fn parse_layout(
    interface: Interface,
    shape: Option<&[i64]>,
    typestr: Option<&str>,
    descr: Option<&[(String, String)]>,
    strides: Option<&[i64]>,
    has_mask: bool,
) -> Result<Layout> {
    let shape = parse_shape(interface, shape)?;
    let dtype = parse_dtype(interface, typestr, descr)?;
    if has_mask {
        return Err(crate::Error::value_shown(
            interface.field("mask"),
            "an array",
            "masked arrays are not supported; expected no mask (None)",
        ));
    }
    let strides = match strides {
        None => c_strides(&shape, dtype.itemsize()).map_err(|_| {
            crate::Error::overflow_shown(
                interface.field("shape"),
                format_tuple(&shape),
                "the C-order strides",
            )
        })?,
        Some(strides) => parse_strides(interface, strides, &shape)?,
    };
    Ok(Layout {
        shape,
        strides,
        dtype,
    })
}

/// Converts the extents, which must be non-negative.
pub(crate) fn parse_shape(interface: Interface, shape: Option<&[i64]>) -> Result<Vec<usize>> {
    let shape = shape.ok_or_else(|| {
        missing(
            interface,
            "shape",
            "a tuple of non-negative extents, one per axis",
        )
    })?;
    shape
        .iter()
        .map(|&n| {
            if n < 0 {
                return Err(crate::Error::value_shown(
                    interface.field("shape"),
                    format_tuple(shape),
                    "extents must be non-negative",
                ));
            }
            usize::try_from(n).map_err(|_| {
                crate::Error::overflow_shown(
                    interface.field("shape"),
                    format_tuple(shape),
                    "an extent",
                )
            })
        })
        .collect()
}

/// Parses the typestr and checks that `descr`, if given, describes the same single element.
pub(crate) fn parse_dtype(
    interface: Interface,
    typestr: Option<&str>,
    descr: Option<&[(String, String)]>,
) -> Result<DType> {
    let typestr = typestr.ok_or_else(|| {
        missing(
            interface,
            "typestr",
            "a typestr such as \"<f8\" giving byte order, kind and item size",
        )
    })?;
    let dtype = parse_typestr(typestr, interface, "typestr")?;
    if let Some(descr) = descr {
        let agrees = match descr {
            [(name, field)] if name.is_empty() => {
                parse_typestr(field, interface, "descr").ok() == Some(dtype)
            }
            _ => false,
        };
        if !agrees {
            let items: Vec<String> = descr
                .iter()
                .map(|(name, t)| format!("({name:?}, {t:?})"))
                .collect();
            return Err(crate::Error::value_shown(
                interface.field("descr"),
                format!("[{}]", items.join(", ")),
                format!(
                    "expected [(\"\", {typestr:?})], one unnamed field agreeing with the typestr; \
                     structured dtypes are not supported"
                ),
            ));
        }
    }
    Ok(dtype)
}

/// Converts byte strides, one per axis.
pub(crate) fn parse_strides(
    interface: Interface,
    strides: &[i64],
    shape: &[usize],
) -> Result<Vec<isize>> {
    if strides.len() != shape.len() {
        return Err(crate::Error::value_shown(
            interface.field("strides"),
            format_tuple(strides),
            format!(
                "expected one stride per axis of shape {}, {} in all",
                format_tuple(shape),
                shape.len()
            ),
        ));
    }
    strides
        .iter()
        .map(|&s| {
            isize::try_from(s).map_err(|_| {
                crate::Error::overflow_shown(
                    interface.field("strides"),
                    format_tuple(strides),
                    "a stride",
                )
            })
        })
        .collect()
}

/// Converts a pointer given as a Python int.
pub(crate) fn parse_pointer(interface: Interface, ptr: u64) -> Result<usize> {
    usize::try_from(ptr).map_err(|_| {
        crate::Error::overflow_shown(interface.field("data"), format!("{ptr:#x}"), "the pointer")
    })
}
