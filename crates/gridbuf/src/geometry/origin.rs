//! Origins: per axis, an index between 0 and the extent (inclusive, so that an empty domain at
//! the end can be named). The one rule for `__gt_origin__`, stencil-call origins and the aligned
//! index of an allocation.
//!
//! ```
//! use gridbuf::geometry::origin::{check, validate};
//! assert_eq!(validate(&[1, 0], &[4, 4], "origin")?[..], [1, 0]);
//! assert!(check(&[5, 0], &[4, 4], "aligned_index").is_err());
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::error::{format_tuple, Result};
use crate::geometry::axes::AxisVec;
use std::fmt::Display;

/// Checks a signed origin against `shape` and returns it as indices: one entry per axis, each
/// between 0 and the axis extent. `param` names the argument in messages (such as `origin` or
/// `__gt_origin__`).
pub fn validate(origin: &[i64], shape: &[usize], param: &str) -> Result<AxisVec<usize>> {
    check_len(origin, shape, param)?;
    origin
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(axis, (&o, &n))| match usize::try_from(o) {
            Ok(i) if i <= n => Ok(i),
            _ => Err(out_of_range(origin, axis, o, n, param)),
        })
        .collect()
}

/// Checks a signed origin whose shape is not known: only that no entry is negative.
pub fn validate_unbounded(origin: &[i64], param: &str) -> Result<AxisVec<usize>> {
    origin
        .iter()
        .map(|&o| usize::try_from(o))
        .collect::<std::result::Result<AxisVec<usize>, _>>()
        .map_err(|_| {
            crate::Error::value_shown(
                param,
                format_tuple(origin),
                "entries must be non-negative".to_owned(),
            )
        })
}

/// Checks an origin (or aligned index) of indices against `shape`: one entry per axis, each at
/// most the axis extent.
pub fn check(origin: &[usize], shape: &[usize], param: &str) -> Result<()> {
    check_len(origin, shape, param)?;
    match origin.iter().zip(shape).position(|(&o, &n)| o > n) {
        Some(axis) => Err(out_of_range(origin, axis, origin[axis], shape[axis], param)),
        None => Ok(()),
    }
}

fn check_len<T: Display>(origin: &[T], shape: &[usize], param: &str) -> Result<()> {
    if origin.len() == shape.len() {
        return Ok(());
    }
    Err(crate::Error::value_shown(
        param,
        format_tuple(origin),
        format!(
            "expected one entry per axis of the shape {}",
            format_tuple(shape)
        ),
    ))
}

fn out_of_range<T: Display>(
    origin: &[T],
    axis: usize,
    value: impl Display,
    n: usize,
    param: &str,
) -> crate::Error {
    crate::Error::value_shown(
        param,
        format_tuple(origin),
        format!("entry {value} of axis {axis} must lie between 0 and the extent {n}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        assert_eq!(
            validate(&[1, -1], &[3, 3], "__gt_origin__")
                .unwrap_err()
                .to_string(),
            "invalid __gt_origin__ (1, -1): entry -1 of axis 1 must lie between 0 and the extent 3"
        );
        assert_eq!(
            check(&[1], &[3, 3], "origin").unwrap_err().to_string(),
            "invalid origin (1,): expected one entry per axis of the shape (3, 3)"
        );
        assert!(check(&[3, 0], &[3, 3], "origin").is_ok());
        assert!(check(&[], &[], "origin").is_ok());
    }
}
