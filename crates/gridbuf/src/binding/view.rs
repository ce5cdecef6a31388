//! Typed 3-D views of bound fields for native kernels.

use crate::arrays::array_info::{ArrayInfo, DType, Element};
use crate::error::{Error, Result};
use ndarray::{ArrayView3, ArrayViewMut3, Axis, Ix3, RawArrayViewMut, ShapeBuilder};
use std::ptr::NonNull;

/// A raw mutable 3-D view (ndarray has no alias for it).
type RawArrayViewMut3<T> = RawArrayViewMut<T, Ix3>;

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
