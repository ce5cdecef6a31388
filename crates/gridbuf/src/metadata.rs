//! What an array declares about itself besides its memory: dims, origin and halo, checked by
//! one rule each. The Python layer (`gridbuf._metadata`, `gridbuf.Field`) and the stencil binder
//! call these; `source` names where the value came from (`"__gt_dims__"`, `"origin"`, ...) and
//! becomes the parameter named in the message.

use crate::dims::Dim;
use crate::error::{Error, Result};

/// Names formatted as a tuple of quoted strings, as messages show dims: `('I', 'J')`.
fn names_tuple<S: AsRef<str>>(names: &[S]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{}'", n.as_ref())).collect();
    match quoted.len() {
        1 => format!("({},)", quoted[0]),
        _ => format!("({})", quoted.join(", ")),
    }
}

/// Checks dims given as names (`"I"`, `"J"`, `"K"` or decimal strings such as `"0"`, each read
/// by [`Dim::parse`]): every name valid, none repeated and, when `ndim` is given, one name per
/// axis. Messages name `source` and show `value` (the dims as the caller received them), or the
/// names as a tuple.
pub fn check_dims<S: AsRef<str>>(
    names: &[S],
    ndim: Option<usize>,
    source: &str,
    value: Option<&str>,
) -> Result<Vec<Dim>> {
    let invalid = |expected: String| Error::InvalidValue {
        param: source.into(),
        value: value.map_or_else(|| names_tuple(names), str::to_owned),
        expected,
    };
    let dims = names
        .iter()
        .map(|n| {
            Dim::parse(n.as_ref()).map_err(|_| {
                invalid(format!(
                    "'{}' is not a dimension name (expected 'I', 'J', 'K' or a decimal string such as '0')",
                    n.as_ref()
                ))
            })
        })
        .collect::<Result<Vec<Dim>>>()?;
    if let Some(dup) = dims
        .iter()
        .enumerate()
        .find_map(|(i, d)| dims[..i].contains(d).then_some(d))
    {
        return Err(invalid(format!(
            "dimension '{dup}' appears more than once (each dimension may appear only once)"
        )));
    }
    if let Some(ndim) = ndim.filter(|&n| n != dims.len()) {
        return Err(invalid(format!(
            "expected one name per axis, {ndim} in all (the array has {ndim} axes)"
        )));
    }
    Ok(dims)
}

/// Checks an origin: one entry per axis of `shape` (when known), each between 0 and the axis
/// extent; without a shape, only that no entry is negative.
pub fn check_origin(origin: &[i64], shape: Option<&[usize]>, source: &str) -> Result<Vec<usize>> {
    let Some(shape) = shape else {
        return origin
            .iter()
            .map(|&o| usize::try_from(o))
            .collect::<std::result::Result<Vec<usize>, _>>()
            .map_err(|_| Error::invalid(source, origin, "entries must be non-negative"));
    };
    if origin.len() != shape.len() {
        return Err(Error::invalid(
            source,
            origin,
            format!("expected one entry per axis of the shape {shape:?}"),
        ));
    }
    origin
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(axis, (&o, &n))| match usize::try_from(o) {
            Ok(v) if v <= n => Ok(v),
            _ => Err(Error::invalid(
                source,
                origin,
                format!("entry {o} of axis {axis} must lie between 0 and the extent {n}"),
            )),
        })
        .collect()
}

/// Checks that a halo has one (lower, upper) pair per axis of `shape` and fits inside it;
/// messages name `param`, and `dims` when given.
pub fn check_halo(
    halo: &[(usize, usize)],
    shape: &[usize],
    dims: Option<&[Dim]>,
    param: &str,
) -> Result<()> {
    if halo.len() != shape.len() {
        return Err(Error::invalid(
            param,
            halo,
            format!(
                "expected one (lower, upper) pair per axis, {} in all",
                shape.len()
            ),
        ));
    }
    for (axis, (&(lo, hi), &n)) in halo.iter().zip(shape).enumerate() {
        if lo.checked_add(hi).is_none_or(|w| w > n) {
            let named: Vec<String> = dims
                .unwrap_or_default()
                .iter()
                .map(|d| d.to_string())
                .collect();
            let place = match named.get(axis) {
                Some(d) => format!("axis {axis} (dim '{d}' of dims {})", names_tuple(&named)),
                None => format!("axis {axis}"),
            };
            return Err(Error::invalid(
                param,
                halo,
                format!("the halo of {place} ({lo} + {hi}) is larger than its extent {n}"),
            ));
        }
    }
    Ok(())
}

/// Whether an array (shape, byte strides, address of its first element) is all of an
/// allocation planned with `planned` (shape, strides, address of the planned first element).
pub fn is_whole_allocation(
    array: (&[usize], &[isize], usize),
    planned: (&[usize], &[isize], usize),
) -> bool {
    array == planned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_named_after_their_source() {
        assert_eq!(
            check_dims(&["K", "J", "0"], Some(3), "dims", None).unwrap(),
            vec![Dim::K, Dim::J, Dim::Data(0)]
        );
        for (names, ndim) in [
            (&["I", "I"][..], None),
            (&["I", "x"], None),
            (&["I", "J"], Some(3)),
        ] {
            let err = check_dims(names, ndim, "__gt_dims__", None)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("invalid __gt_dims__"), "{err}");
        }
    }

    #[test]
    fn origin_lies_inside_the_shape() {
        assert_eq!(
            check_origin(&[0, 3], Some(&[4, 3]), "o").unwrap(),
            vec![0, 3]
        );
        assert!(check_origin(&[0, 4], Some(&[4, 3]), "o").is_err());
        assert!(check_origin(&[-1, 0], Some(&[4, 3]), "o").is_err());
        assert!(check_origin(&[0], Some(&[4, 3]), "o").is_err());
        assert!(check_origin(&[-1], None, "o").is_err());
        assert_eq!(check_origin(&[7], None, "o").unwrap(), vec![7]);
    }

    #[test]
    fn halo_fits() {
        assert!(check_halo(&[(1, 1), (0, 2)], &[2, 2], None, "halo").is_ok());
        assert!(check_halo(&[(1, 2)], &[2], None, "halo").is_err());
        assert!(check_halo(&[(1, 1)], &[2, 2], None, "halo").is_err());
        let err = check_halo(&[(0, 0), (2, 1)], &[2, 2], Some(&[Dim::K, Dim::J]), "halo")
            .unwrap_err()
            .to_string();
        assert!(err.contains("axis 1 (dim 'J' of dims ('K', 'J'))"), "{err}");
    }
}
