//! Basic indexing: the dims, shape, halo and origin of the view an index selects.

use super::message::error;
use crate::error::{Error, Result};
use crate::geometry::dims::{format_dims, next_data_dim, Dim};

/// One item of an index, as Python gives it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// An integer: selects one element and drops the axis.
    Int(isize),
    /// A slice with Python's optional start, stop and step.
    Slice {
        /// First index, default the start of the traversal.
        start: Option<isize>,
        /// End (exclusive), default the end of the traversal.
        stop: Option<isize>,
        /// Step, default 1; 0 is an error.
        step: Option<isize>,
    },
    /// `...`: full slices over the axes not otherwise indexed.
    Ellipsis,
    /// `None` (`numpy.newaxis`): a new axis of length 1.
    NewAxis,
    /// An array, a list or a bool: advanced indexing.
    Advanced,
}

/// What an index selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Indexed {
    /// A view with labelled axes.
    View(IndexedView),
    /// One element (every axis had an integer).
    Element,
    /// Advanced indexing: the result is a copy without dims.
    Advanced,
}

/// Dims and domain of a basic-indexing view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedView {
    /// Axis of the indexed field each view axis comes from (`None` for a new axis).
    pub axes: Vec<Option<usize>>,
    /// Dims per view axis.
    pub dims: Vec<Dim>,
    /// Extent per view axis.
    pub shape: Vec<usize>,
    /// Halo per view axis: the view elements that lie in the field's halo.
    pub halo: Vec<(usize, usize)>,
    /// Origin per view axis.
    pub origin: Vec<usize>,
}

/// A slice resolved against an extent, as Python's `slice.indices`: (start, step, length).
pub fn resolve_slice(
    start: Option<isize>,
    stop: Option<isize>,
    step: Option<isize>,
    n: usize,
) -> Result<(isize, isize, usize)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(Error::invalid(
            "index",
            "slice step 0",
            "a slice step must not be zero",
        ));
    }
    let n = n as isize;
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let clamp = |v: isize| {
        if v < 0 {
            v.saturating_add(n).max(lower)
        } else {
            v.min(upper)
        }
    };
    let start = start.map_or(if step > 0 { lower } else { upper }, clamp);
    let stop = stop.map_or(if step > 0 { upper } else { lower }, clamp);
    let len = if step > 0 && stop > start {
        (stop - start - 1) / step + 1
    } else if step < 0 && start > stop {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    };
    Ok((start, step, len as usize))
}

/// Number of `i` in `0..m` with `start + i * step < bound`, for `step > 0`.
fn count_below(start: isize, step: isize, m: usize, bound: isize) -> usize {
    if bound <= start {
        0
    } else {
        let k = (bound - start + step - 1) / step;
        (k as usize).min(m)
    }
}

/// Number of `i` in `0..m` with `start - i * s >= bound`, for `s > 0`.
fn count_at_or_above(start: isize, s: isize, m: usize, bound: isize) -> usize {
    if start < bound {
        0
    } else {
        (((start - bound) / s + 1) as usize).min(m)
    }
}

/// Halo and origin of a slice view along one axis: the view elements before and after the
/// field's domain, in the view's order.
fn slice_domain(
    (start, step, m): (isize, isize, usize),
    n: usize,
    (lo, hi): (usize, usize),
    origin: usize,
) -> ((usize, usize), usize) {
    let (lo_i, end_i, origin_i) = (lo as isize, (n - hi) as isize, origin as isize);
    if step > 0 {
        let before = count_below(start, step, m, lo_i);
        let after = m - count_below(start, step, m, end_i);
        let halo = (before, after.min(m - before));
        let origin = if origin == lo {
            halo.0
        } else {
            count_below(start, step, m, origin_i)
        };
        (halo, origin)
    } else {
        let s = -step;
        let before = count_at_or_above(start, s, m, end_i);
        let after = m - count_at_or_above(start, s, m, lo_i);
        let halo = (before, after.min(m - before));
        (halo, halo.0)
    }
}

/// The dims, halo and origin of what `key` selects from a field with `dims`, `shape`, `halo`
/// and `origin` (basic indexing: an int drops its axis, a slice keeps it).
///
/// A `NewAxis` adds an axis of length 1 labelled with a new data dim, numbered after the data
/// dims the field has (a dim of length 1 counts as absent when broadcasting, so it changes no
/// result). An index NumPy rejects (too many indices, an int out of range, two ellipses) is an
/// error.
pub fn index(
    dims: &[Dim],
    shape: &[usize],
    halo: &[(usize, usize)],
    origin: &[usize],
    key: &[IndexItem],
) -> Result<Indexed> {
    let ndim = dims.len();
    if shape.len() != ndim || halo.len() != ndim || origin.len() != ndim {
        return Err(Error::invalid(
            "index",
            format_dims(dims),
            "dims, shape, halo and origin need one entry per axis",
        ));
    }
    if key.contains(&IndexItem::Advanced) {
        return Ok(Indexed::Advanced);
    }
    let n_ellipsis = key.iter().filter(|&&k| k == IndexItem::Ellipsis).count();
    let n_new = key.iter().filter(|&&k| k == IndexItem::NewAxis).count();
    let n_explicit = key.len() - n_ellipsis - n_new;
    if n_ellipsis > 1 || n_explicit > ndim {
        return Err(error(
            "index",
            format!("{key:?}"),
            format!(
                "the Field has {ndim} axes with dims {} and at most one ellipsis",
                format_dims(dims)
            ),
        ));
    }
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let mut items: Vec<IndexItem> = Vec::with_capacity(ndim + n_new);
    for &k in key {
        if k == IndexItem::Ellipsis {
            items.extend(std::iter::repeat_n(full, ndim - n_explicit));
        } else {
            items.push(k);
        }
    }
    items.extend(std::iter::repeat_n(full, ndim + n_new - items.len()));
    let mut next_data = next_data_dim(dims);
    let mut view = IndexedView {
        axes: Vec::new(),
        dims: Vec::new(),
        shape: Vec::new(),
        halo: Vec::new(),
        origin: Vec::new(),
    };
    let mut axis = 0;
    for item in items {
        if item == IndexItem::NewAxis {
            view.axes.push(None);
            view.dims.push(Dim::Data(next_data));
            next_data += 1;
            view.shape.push(1);
            view.halo.push((0, 0));
            view.origin.push(0);
            continue;
        }
        let n = shape[axis];
        match item {
            IndexItem::Int(i) => {
                let ok = if i < 0 {
                    i.unsigned_abs() <= n
                } else {
                    (i as usize) < n
                };
                if !ok {
                    return Err(error(
                        "index",
                        i.to_string(),
                        format!("axis {axis} (dim '{}') has length {n}", dims[axis]),
                    ));
                }
            }
            IndexItem::Slice { start, stop, step } => {
                let resolved = resolve_slice(start, stop, step, n)?;
                let (h, o) = slice_domain(resolved, n, halo[axis], origin[axis]);
                view.axes.push(Some(axis));
                view.dims.push(dims[axis]);
                view.shape.push(resolved.2);
                view.halo.push(h);
                view.origin.push(o);
            }
            IndexItem::Ellipsis | IndexItem::NewAxis | IndexItem::Advanced => unreachable!(),
        }
        axis += 1;
    }
    if view.axes.is_empty() {
        return Ok(Indexed::Element);
    }
    Ok(Indexed::View(view))
}
