//! The allocation plan: from a request (shape, dtype size, preset, keywords) to the padded
//! shape, byte strides and byte offset of an aligned array. Pure and checked: it allocates
//! nothing, so GPU presets can be planned on machines without a GPU.

use crate::allocation::preset::{check_alignment, Device, Preset};
use crate::bounded_cache::BoundedCache;
use crate::error::{Error, Result};
use crate::geometry::axes::AxisVec;
use crate::geometry::dims::{self, append_data_dims, default_dims, Dim};
use crate::geometry::halo;
use crate::geometry::layout::{axes_by_rank, validate_layout};
use crate::geometry::origin;
use std::sync::{Arc, Mutex, PoisonError};

/// Every CPU allocation puts its aligned element on at least a cache line.
pub const MIN_ALIGNMENT: usize = 64;

/// Most plans [`Plan::cached`] keeps.
pub const PLAN_CACHE_CAPACITY: usize = 256;

/// What the caller asks for; `None` fields take the preset's or the documented default.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanRequest {
    /// Shape of the array as given by the caller (halo included).
    pub shape: AxisVec<usize>,
    /// Size in bytes of one element of the scalar base type.
    pub itemsize: usize,
    /// Extra trailing axes from a subarray dtype such as `("f8", (2, 3))`.
    pub subarray_shape: Vec<usize>,
    /// The preset that gives device, layout and alignment defaults.
    pub preset: Arc<Preset>,
    /// Dims of the caller's axes; default `"IJK"[:ndim]` then data dims.
    pub dims: Option<AxisVec<Dim>>,
    /// Layout map over the caller's axes; overrides the preset's.
    pub layout: Option<AxisVec<usize>>,
    /// Row alignment in bytes; overrides the preset's.
    pub alignment: Option<usize>,
    /// Index of the element to align; default the lower halo.
    pub aligned_index: Option<AxisVec<usize>>,
    /// Per axis (lower, upper) halo widths included in the shape; default none.
    pub halo: Option<AxisVec<(usize, usize)>>,
}

impl PlanRequest {
    /// A request for `shape` with every keyword left to its default.
    pub fn new(shape: AxisVec<usize>, itemsize: usize, preset: Arc<Preset>) -> Self {
        PlanRequest {
            shape,
            itemsize,
            subarray_shape: Vec::new(),
            preset,
            dims: None,
            layout: None,
            alignment: None,
            aligned_index: None,
            halo: None,
        }
    }
}

/// A resolved allocation: everything needed to place an array in a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Shape of the array (subarray axes appended).
    pub shape: AxisVec<usize>,
    /// Shape of the memory block, with the unit-stride axis padded.
    pub padded_shape: AxisVec<usize>,
    /// Byte strides per axis.
    pub strides: AxisVec<usize>,
    /// Layout map per axis (see [`crate::geometry::layout`]).
    pub layout: AxisVec<usize>,
    /// Dims per axis.
    pub dims: AxisVec<Dim>,
    /// Halo per axis as (lower, upper).
    pub halo: AxisVec<(usize, usize)>,
    /// The index of the aligned element.
    pub aligned_index: AxisVec<usize>,
    /// Size in bytes of one element.
    pub itemsize: usize,
    /// Bytes the rows along the unit-stride axis are padded to (1: no padding).
    pub row_alignment: usize,
    /// Alignment in bytes of the aligned element: `max(row_alignment, 64)`.
    pub alignment: usize,
    /// Byte offset of element 0 from a base aligned to [`Plan::alignment`].
    pub byte_offset: usize,
    /// Bytes spanned by the padded array, from element 0 to the end.
    pub nbytes: usize,
    /// Where the array lives.
    pub device: Device,
    /// The preset the plan came from.
    pub preset: Arc<Preset>,
}

/// The per-axis metadata of a plan before its memory placement: shape (subarray axes
/// appended), dims, halo, aligned index and layout map.
struct Axes {
    shape: AxisVec<usize>,
    dims: AxisVec<Dim>,
    halo: AxisVec<(usize, usize)>,
    aligned_index: AxisVec<usize>,
    layout: AxisVec<usize>,
}

/// Where the axes lie in memory: the padded shape, byte strides and the bytes spanned.
struct Placement {
    padded_shape: AxisVec<usize>,
    strides: AxisVec<usize>,
    nbytes: usize,
}

impl Plan {
    /// Resolves a request into a plan, checking every value.
    pub fn new(req: &PlanRequest) -> Result<Plan> {
        check_itemsize(req.itemsize)?;
        let axes = resolve_axes(req)?;
        let row_alignment = req.alignment.unwrap_or(req.preset.alignment);
        let items_per_row_block = items_per_row_block(row_alignment, req.itemsize)?;
        let placement = place(req, &axes, items_per_row_block)?;
        let alignment = row_alignment.max(MIN_ALIGNMENT);
        let byte_offset = aligned_offset(req, &axes.aligned_index, &placement, alignment)?;
        let Axes {
            shape,
            dims,
            halo,
            aligned_index,
            layout,
        } = axes;
        Ok(Plan {
            shape,
            padded_shape: placement.padded_shape,
            strides: placement.strides,
            layout,
            dims,
            halo,
            aligned_index,
            itemsize: req.itemsize,
            row_alignment,
            alignment,
            byte_offset,
            nbytes: placement.nbytes,
            device: req.preset.device,
            preset: Arc::clone(&req.preset),
        })
    }

    /// The plan for `req`, shared with earlier requests equal to it.
    ///
    /// A model allocates many fields of a few kinds (one shape, dtype and preset for dozens of
    /// fields), so planning each kind once saves most of the work of a small allocation. The
    /// whole request is the key (the preset compared by value, so a preset registered again
    /// with other values gets new plans); the cache holds at most [`PLAN_CACHE_CAPACITY`]
    /// plans and starts afresh when full. Errors are not cached.
    pub fn cached(req: &PlanRequest) -> Result<Arc<Plan>> {
        static CACHE: Mutex<Option<BoundedCache<PlanRequest, Arc<Plan>>>> = Mutex::new(None);
        let mut guard = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        let cache = guard.get_or_insert_with(|| BoundedCache::new(PLAN_CACHE_CAPACITY));
        if let Some(plan) = cache.get(req) {
            return Ok(Arc::clone(plan));
        }
        let plan = Arc::new(Plan::new(req)?);
        cache.insert(req.clone(), Arc::clone(&plan));
        Ok(plan)
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements of the (unpadded) array.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes a buffer must have so that an aligned base, the offset and the data fit.
    pub fn buffer_len(&self) -> usize {
        // Checked in `Plan::new`.
        self.byte_offset + self.nbytes
    }

    /// Whether an array with `shape`, byte `strides` and element 0 at `address` is the whole
    /// array of an allocation made with this plan whose element 0 is at `data_address` (the
    /// allocation itself or a view of all of it), so that its storage parameters are the plan's.
    pub fn is_whole(
        &self,
        shape: &[usize],
        strides: &[isize],
        address: usize,
        data_address: usize,
    ) -> bool {
        address == data_address
            && shape == &self.shape[..]
            && strides.len() == self.strides.len()
            && strides
                .iter()
                .zip(&self.strides)
                .all(|(&a, &b)| isize::try_from(b) == Ok(a))
    }

    /// Byte position of an element relative to element 0, or `None` if out of bounds.
    pub fn element_offset(&self, index: &[usize]) -> Option<usize> {
        if index.len() != self.ndim() || index.iter().zip(&self.shape).any(|(i, n)| i >= n) {
            return None;
        }
        Some(index.iter().zip(&self.strides).map(|(i, s)| i * s).sum())
    }
}

/// Step 1: elements must have a size.
fn check_itemsize(itemsize: usize) -> Result<()> {
    if itemsize == 0 {
        return Err(Error::invalid(
            "dtype",
            "itemsize 0",
            "expected a fixed-size numeric or bool dtype",
        ));
    }
    Ok(())
}

/// Step 2: checks the caller's dims, halo, aligned index and layout (or takes their
/// defaults), then appends the subarray axes as outermost data dims.
fn resolve_axes(req: &PlanRequest) -> Result<Axes> {
    let user_ndim = req.shape.len();
    let mut dims = match &req.dims {
        Some(dims) => {
            dims::validate(dims, Some(user_ndim), "dims")?;
            dims.clone()
        }
        None => default_dims(user_ndim),
    };
    let mut halo = match &req.halo {
        Some(h) => {
            halo::check_fits(&req.shape, h, Some(&dims), "halo")?;
            h.clone()
        }
        None => smallvec::smallvec![(0, 0); user_ndim],
    };
    let mut aligned_index = match &req.aligned_index {
        Some(ai) => {
            origin::check(ai, &req.shape, "aligned_index")?;
            ai.clone()
        }
        None => halo::lower(&halo),
    };
    let n_sub = req.subarray_shape.len();
    let layout = match &req.layout {
        Some(l) => {
            validate_layout(l, user_ndim)?;
            // Subarray axes are data dims: outermost, in order.
            Some(
                l.iter()
                    .map(|&j| j + n_sub)
                    .chain(0..n_sub)
                    .collect::<AxisVec<_>>(),
            )
        }
        None => None,
    };
    let mut shape = req.shape.clone();
    shape.extend_from_slice(&req.subarray_shape);
    append_data_dims(&mut dims, n_sub);
    halo.extend(std::iter::repeat_n((0, 0), n_sub));
    aligned_index.extend(std::iter::repeat_n(0, n_sub));
    let layout = layout.unwrap_or_else(|| req.preset.layout_map(&dims));
    Ok(Axes {
        shape,
        dims,
        halo,
        aligned_index,
        layout,
    })
}

/// Step 3: how many elements the unit-stride rows are padded to a multiple of.
fn items_per_row_block(row_alignment: usize, itemsize: usize) -> Result<usize> {
    check_alignment(row_alignment)?;
    if row_alignment % itemsize == 0 {
        Ok(row_alignment / itemsize)
    } else if itemsize % row_alignment == 0 {
        Ok(1)
    } else {
        Err(Error::invalid(
            "alignment",
            row_alignment,
            format!("expected a multiple or divisor of the element size {itemsize}"),
        ))
    }
}

/// Step 4: pads the unit-stride axis and computes the byte strides in layout order.
fn place(req: &PlanRequest, axes: &Axes, items_per_row_block: usize) -> Result<Placement> {
    let order = axes_by_rank(&axes.layout);
    let mut padded_shape = axes.shape.clone();
    if let Some(&unit_axis) = order.last() {
        let n = axes.shape[unit_axis];
        padded_shape[unit_axis] = n
            .div_ceil(items_per_row_block)
            .checked_mul(items_per_row_block)
            .ok_or_else(|| Error::overflow("shape", &req.shape, "the padded extent"))?;
    }
    let mut strides: AxisVec<usize> = smallvec::smallvec![0; axes.shape.len()];
    let mut acc = req.itemsize;
    for &axis in order.iter().rev() {
        strides[axis] = acc;
        acc = acc
            .checked_mul(padded_shape[axis])
            .ok_or_else(|| Error::overflow("shape", &req.shape, "the byte size"))?;
    }
    Ok(Placement {
        padded_shape,
        strides,
        nbytes: acc,
    })
}

/// Step 5: the byte offset of element 0 from an aligned base that puts the aligned element on
/// `alignment`, checking that offset, data and slack fit the address space.
fn aligned_offset(
    req: &PlanRequest,
    aligned_index: &[usize],
    placement: &Placement,
    alignment: usize,
) -> Result<usize> {
    // Address of the aligned element relative to element 0; it fits since every index is
    // at most its extent (one past the end at worst) and the extents fit in `nbytes`.
    let aligned_pos = aligned_index
        .iter()
        .zip(&placement.strides)
        .try_fold(0usize, |s, (&i, &st)| s.checked_add(i.checked_mul(st)?))
        .ok_or_else(|| Error::overflow("aligned_index", aligned_index, "the byte position"))?;
    let byte_offset = (alignment - aligned_pos % alignment) % alignment;
    // The buffer must hold the offset, the data and the slack to find an aligned base.
    placement
        .nbytes
        .checked_add(byte_offset)
        .and_then(|n| n.checked_add(alignment))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::overflow("shape", &req.shape, "the byte size"))?;
    Ok(byte_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocation::preset::lookup;

    fn plan(shape: &[usize], itemsize: usize, preset: &str) -> PlanRequest {
        PlanRequest::new(shape.into(), itemsize, lookup(preset, "backend").unwrap())
    }

    #[test]
    fn strides_match_gt4py_for_cpu_presets() {
        let p = Plan::new(&plan(&[10, 11, 12], 8, "gt:cpu_ifirst")).unwrap();
        assert_eq!(p.strides.to_vec(), vec![8, 80, 880]);
        let p = Plan::new(&plan(&[2, 3, 4], 8, "gt:cpu_kfirst")).unwrap();
        assert_eq!(p.strides.to_vec(), vec![96, 32, 8]);
        let mut req = plan(&[2, 3, 4, 5], 8, "gt:cpu_kfirst");
        req.dims = Some(
            crate::geometry::dims::parse_dims_str("IJK0")
                .unwrap()
                .into(),
        );
        assert_eq!(
            Plan::new(&req).unwrap().strides.to_vec(),
            vec![96, 32, 8, 192]
        );
    }

    #[test]
    fn gpu_rows_are_padded() {
        let p = Plan::new(&plan(&[10, 11, 12], 8, "gt:gpu")).unwrap();
        assert_eq!(p.padded_shape.to_vec(), vec![16, 11, 12]);
        assert_eq!(p.strides.to_vec(), vec![8, 128, 128 * 11]);
    }

    #[test]
    fn aligned_index_is_aligned() {
        let mut req = plan(&[10, 11, 12], 8, "gt:cpu_ifirst");
        req.aligned_index = Some(smallvec::smallvec![1, 1, 0]);
        let p = Plan::new(&req).unwrap();
        assert_eq!(
            (p.byte_offset + p.element_offset(&[1, 1, 0]).unwrap()) % 64,
            0
        );
    }

    #[test]
    fn subarray_dims_are_outermost_data_dims() {
        let mut req = plan(&[4, 5], 8, "gt:cpu_ifirst");
        req.subarray_shape = vec![2, 3];
        let p = Plan::new(&req).unwrap();
        assert_eq!(p.shape.to_vec(), vec![4, 5, 2, 3]);
        assert_eq!(p.layout.to_vec(), vec![3, 2, 0, 1]);
        assert_eq!(
            p.dims.to_vec(),
            vec![Dim::I, Dim::J, Dim::Data(0), Dim::Data(1)]
        );
    }

    #[test]
    fn halo_defaults_aligned_index_and_is_checked() {
        let mut req = plan(&[10, 10, 5], 8, "numpy");
        req.halo = Some(smallvec::smallvec![(3, 3), (2, 2), (0, 0)]);
        assert_eq!(
            Plan::new(&req).unwrap().aligned_index.to_vec(),
            vec![3, 2, 0]
        );
        req.halo = Some(smallvec::smallvec![(6, 6), (0, 0), (0, 0)]);
        assert!(Plan::new(&req).is_err());
    }

    #[test]
    fn whole_allocations() {
        let p = Plan::new(&plan(&[4, 5], 8, "C")).unwrap();
        assert!(p.is_whole(&[4, 5], &[40, 8], 64, 64));
        assert!(!p.is_whole(&[4, 5], &[40, 8], 72, 64));
        assert!(!p.is_whole(&[4, 4], &[40, 8], 64, 64));
        assert!(!p.is_whole(&[4, 5], &[40, -8], 64, 64));
        assert!(!p.is_whole(&[4, 5, 1], &[40, 8, 8], 64, 64));
    }

    #[test]
    fn cached_plans_are_shared_per_request() {
        let req = plan(&[7, 9, 11], 8, "gt:cpu_kfirst");
        let a = Plan::cached(&req).unwrap();
        let b = Plan::cached(&req.clone()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, Plan::new(&req).unwrap());
        let mut other = req.clone();
        other.aligned_index = Some(smallvec::smallvec![1, 1, 0]);
        let c = Plan::cached(&other).unwrap();
        assert_eq!(*c, Plan::new(&other).unwrap());
        assert!(!Arc::ptr_eq(&a, &c));
        // The same preset values under another identity still give equal plans; other
        // values (a preset registered again) give their own.
        let mut changed = (*req.preset).clone();
        changed.alignment = 128;
        let mut req2 = req.clone();
        req2.preset = Arc::new(changed);
        let d = Plan::cached(&req2).unwrap();
        assert_eq!(d.row_alignment, 128);
        assert_eq!(a.row_alignment, req.preset.alignment);
        assert_ne!(req.preset.alignment, 128);
        // Errors are returned every time, never cached.
        let mut bad = req.clone();
        bad.alignment = Some(3);
        assert!(Plan::cached(&bad).is_err());
        assert!(Plan::cached(&bad).is_err());
    }

    #[test]
    fn overflow_is_an_error() {
        let req = plan(&[usize::MAX / 2, 4], 8, "C");
        assert!(matches!(Plan::new(&req), Err(Error::Overflow { .. })));
    }

    #[test]
    fn zero_dim_and_zero_size() {
        let p = Plan::new(&plan(&[], 8, "C")).unwrap();
        assert_eq!(p.nbytes, 8);
        let p = Plan::new(&plan(&[3, 0, 2], 8, "C")).unwrap();
        assert_eq!(p.nbytes, 0);
    }
}
