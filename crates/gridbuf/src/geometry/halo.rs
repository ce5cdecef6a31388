//! Halos: per axis, the (lower, upper) number of elements of an array that lie outside its
//! compute domain. This module holds the one halo rule of gridbuf; allocation plans, labelled
//! fields, data interfaces and the Python `Field` all go through it.
//!
//! ```
//! use gridbuf::geometry::halo::{normalize, HaloEntry};
//! let halo = normalize(&[HaloEntry::Width(2), HaloEntry::Pair(1, 0)], &[10, 5], None, "halo")?;
//! assert_eq!(halo[..], [(2, 2), (1, 0)]);
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::error::{format_pairs, format_tuple, Result};
use crate::geometry::axes::AxisVec;
use crate::geometry::dims::{format_dims, Dim};
use std::fmt;

/// What every halo entry must be, for messages.
const EXPECTED: &str = "expected one non-negative int or (lower, upper) pair per axis";

/// One axis of a halo as a caller gives it: one width for both sides, or a (lower, upper) pair.
/// Widths are signed so that a negative width is reported as such rather than wrapped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HaloEntry {
    /// The same width below and above.
    Width(i64),
    /// Separate widths below and above.
    Pair(i64, i64),
}

impl fmt::Display for HaloEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HaloEntry::Width(w) => write!(f, "{w}"),
            HaloEntry::Pair(lo, hi) => write!(f, "({lo}, {hi})"),
        }
    }
}

/// Normalises a halo given per axis as a width or a (lower, upper) pair into (lower, upper)
/// pairs, and checks with [`check_fits`] that it fits `shape`.
///
/// `dims`, when given, names each axis's dim in the message; `param` names the argument (such as
/// `halo` or `__gt_data_interface__['halo']`).
pub fn normalize(
    entries: &[HaloEntry],
    shape: &[usize],
    dims: Option<&[Dim]>,
    param: &str,
) -> Result<AxisVec<(usize, usize)>> {
    let value = || format_tuple(entries);
    let to_width = |w: i64| {
        usize::try_from(w).map_err(|_| crate::Error::value_shown(param, value(), EXPECTED))
    };
    let pairs = entries
        .iter()
        .map(|&e| match e {
            HaloEntry::Width(w) => to_width(w).map(|w| (w, w)),
            HaloEntry::Pair(lo, hi) => Ok((to_width(lo)?, to_width(hi)?)),
        })
        .collect::<Result<AxisVec<_>>>()?;
    check_fits_as(shape, &pairs, dims, param, &value)?;
    Ok(pairs)
}

/// Checks that a halo has one (lower, upper) pair per axis of `shape` and that on every axis the
/// two widths together are at most the extent (a halo may fill an axis, leaving an empty
/// domain).
///
/// `dims`, when given, names each axis's dim in the message; `param` names the argument.
///
/// ```
/// use gridbuf::geometry::halo::check_fits;
/// assert!(check_fits(&[10, 4], &[(5, 5), (0, 0)], None, "halo").is_ok());
/// let err = check_fits(&[10, 4], &[(5, 6), (0, 0)], None, "halo").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid halo ((5, 6), (0, 0)): the halo of axis 0 (5 + 6) is larger than its extent 10"
/// );
/// ```
pub fn check_fits(
    shape: &[usize],
    halo: &[(usize, usize)],
    dims: Option<&[Dim]>,
    param: &str,
) -> Result<()> {
    check_fits_as(shape, halo, dims, param, &|| format_pairs(halo))
}

fn check_fits_as(
    shape: &[usize],
    halo: &[(usize, usize)],
    dims: Option<&[Dim]>,
    param: &str,
    value: &dyn Fn() -> String,
) -> Result<()> {
    if halo.len() != shape.len() {
        return Err(crate::Error::value_shown(
            param,
            value(),
            format!("{EXPECTED}, {} in all", shape.len()),
        ));
    }
    for (axis, (&(lo, hi), &n)) in halo.iter().zip(shape).enumerate() {
        if lo.checked_add(hi).is_none_or(|w| w > n) {
            let place = match dims {
                Some(d) if d.len() == shape.len() => {
                    format!("axis {axis} (dim '{}' of dims {})", d[axis], format_dims(d))
                }
                _ => format!("axis {axis}"),
            };
            return Err(crate::Error::value_shown(
                param,
                value(),
                format!("the halo of {place} ({lo} + {hi}) is larger than its extent {n}"),
            ));
        }
    }
    Ok(())
}

/// The lower widths of a halo: the index of the first domain element per axis (the default
/// origin and aligned index of a field with that halo).
pub fn lower(halo: &[(usize, usize)]) -> AxisVec<usize> {
    halo.iter().map(|&(lo, _)| lo).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_parameter_value_and_axis() {
        let err = check_fits(
            &[3, 3],
            &[(2, 2), (0, 0)],
            None,
            "__gt_data_interface__['halo']",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "invalid __gt_data_interface__['halo'] ((2, 2), (0, 0)): the halo of axis 0 (2 + 2) is larger than its extent 3"
        );
        let dims = [Dim::I, Dim::J];
        let err = check_fits(&[3, 3], &[(0, 0), (3, 1)], Some(&dims), "halo")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the halo of axis 1 (dim 'J' of dims ('I', 'J')) (3 + 1)"),
            "{err}"
        );
        let err = check_fits(&[3], &[(0, 0), (0, 0)], None, "halo")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("per axis, 1 in all"), "{err}");
    }

    #[test]
    fn normalize_widths_and_pairs() {
        let h = normalize(
            &[HaloEntry::Width(1), HaloEntry::Pair(0, 3)],
            &[2, 3],
            None,
            "halo",
        );
        assert_eq!(h.unwrap()[..], [(1, 1), (0, 3)]);
        let err = normalize(&[HaloEntry::Width(-1)], &[2], None, "halo").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid halo (-1,): expected one non-negative int or (lower, upper) pair per axis"
        );
        let err = normalize(&[HaloEntry::Pair(2, 1)], &[2], None, "halo").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("invalid halo ((2, 1),): the halo of axis 0"));
    }

    #[test]
    fn overflowing_widths_do_not_fit() {
        assert!(check_fits(&[usize::MAX], &[(usize::MAX, 1)], None, "halo").is_err());
        assert!(check_fits(&[], &[], None, "halo").is_ok());
    }
}
