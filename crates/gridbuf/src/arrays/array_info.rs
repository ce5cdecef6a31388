//! [`ArrayInfo`]: what gridbuf knows about any array it is handed, whichever interface described it.
//!
//! An `ArrayInfo` is a plain description: an address, a shape, byte strides, an element type
//! ([`DType`]), the device the memory lives on and whether it may be written. The parsers in
//! [`crate::arrays::interface`] build one from the array interface, the CUDA array interface, the buffer
//! protocol or DLPack; [`ArrayInfo::agrees_with`] checks that two interfaces of one object describe
//! the same array, and [`ArrayInfo::as_array_view`] turns a host array into an `ndarray` view for
//! Rust callers after checking everything that can be checked.
//!
//! ```
//! use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, DType, Interface};
//! let data: Vec<f64> = (0..12).map(f64::from).collect();
//! let ptr = data.as_ptr().expose_provenance();
//! // A 3 x 4 C-ordered array, read through a view whose rows run backwards.
//! let info = ArrayInfo::new(ptr + 8 * 8, vec![3, 4], vec![-32, 8], DType::FLOAT64,
//!                           ArrayDevice::CPU, Interface::Native)?;
//! // SAFETY: `data` outlives the view and nothing writes to it meanwhile.
//! let view = unsafe { info.as_array_view::<f64>()? };
//! assert_eq!(view[[0, 1]], 9.0);
//! assert_eq!(view[[2, 3]], 3.0);
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::error::{Error, Result};
use ndarray::{ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder};
use std::ptr::NonNull;

pub use crate::arrays::device::{ArrayDevice, DeviceKind};
pub(crate) use crate::arrays::dtype::parse_typestr;
pub use crate::arrays::dtype::{ByteOrder, DType, DTypeKind, Element};
pub use crate::arrays::interface::Interface;

/// The bytes an array touches, relative to its pointer: `low` (zero or negative) is the offset
/// of the lowest byte, `high` (positive) one past the highest. Empty arrays touch nothing and
/// have `low == high == 0`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ByteSpan {
    /// Offset of the lowest byte touched (at most 0).
    pub low: isize,
    /// Offset one past the highest byte touched.
    pub high: isize,
}

impl ByteSpan {
    /// Number of bytes from the lowest to one past the highest byte touched.
    pub fn len(self) -> usize {
        // `nbytes_span` checked that `high - low` fits an isize, and `low <= 0 <= high`.
        self.high.abs_diff(self.low)
    }

    /// Whether the array touches no memory.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// Byte strides of a C-ordered (row-major) array, checked for overflow.
pub fn c_strides(shape: &[usize], itemsize: usize) -> Result<Vec<isize>> {
    let overflow =
        || crate::Error::overflow_shown("shape", format_tuple(shape), "the C-order strides");
    let mut strides = vec![0isize; shape.len()];
    let mut acc = isize::try_from(itemsize).map_err(|_| overflow())?;
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = acc;
        let extent = isize::try_from(extent.max(1)).map_err(|_| overflow())?;
        acc = acc.checked_mul(extent).ok_or_else(overflow)?;
    }
    Ok(strides)
}

pub(crate) use crate::error::format_tuple;

/// A description of an N-dimensional array in memory somebody else owns.
///
/// Fields are public so that binding code can build and adjust one, but only a value that
/// passes [`ArrayInfo::validate`] (as everything the constructors and parsers return does)
/// describes a consistent array; the methods re-check what they rely on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    /// Address of the element at index zero (not necessarily the lowest address).
    pub ptr: usize,
    /// Extent of every axis.
    pub shape: Vec<usize>,
    /// Byte step along every axis; may be negative or zero.
    pub strides: Vec<isize>,
    /// The element type.
    pub dtype: DType,
    /// Where the memory lives.
    pub device: ArrayDevice,
    /// Whether the producer forbids writing.
    pub readonly: bool,
    /// The interface this description came from.
    pub interface: Interface,
    /// The CUDA stream the producer last used the data on (CUDA array interface v3); `None`
    /// where no synchronisation is needed or the interface has no such notion.
    pub stream: Option<i64>,
}

impl ArrayInfo {
    /// Describes a writable array without a stream and checks it (see [`ArrayInfo::validate`]).
    pub fn new(
        ptr: usize,
        shape: Vec<usize>,
        strides: Vec<isize>,
        dtype: DType,
        device: ArrayDevice,
        interface: Interface,
    ) -> Result<ArrayInfo> {
        let info = ArrayInfo {
            ptr,
            shape,
            strides,
            dtype,
            device,
            readonly: false,
            interface,
            stream: None,
        };
        info.validate()?;
        Ok(info)
    }

    /// Describes a writable C-ordered array and checks it.
    pub fn c_contiguous(
        ptr: usize,
        shape: Vec<usize>,
        dtype: DType,
        device: ArrayDevice,
        interface: Interface,
    ) -> Result<ArrayInfo> {
        let strides = c_strides(&shape, dtype.itemsize())?;
        ArrayInfo::new(ptr, shape, strides, dtype, device, interface)
    }

    /// Checks that the description is consistent: one stride per axis, an element count and a
    /// byte span that fit an `isize`, a non-null pointer for a non-empty array, and addresses
    /// that stay inside the address space.
    pub fn validate(&self) -> Result<()> {
        self.size()?;
        self.byte_bounds()?;
        if self.ptr == 0 && self.size()? > 0 {
            return Err(crate::Error::value_shown(
                self.interface.field("data"),
                "a null pointer",
                format!(
                    "an array of shape {} needs the address of its data",
                    format_tuple(&self.shape)
                ),
            ));
        }
        Ok(())
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements, checked to fit an `isize`.
    pub fn size(&self) -> Result<usize> {
        let overflow = || {
            crate::Error::overflow_shown(
                self.interface.field("shape"),
                format_tuple(&self.shape),
                "the number of elements",
            )
        };
        let size = self
            .shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(overflow)?;
        isize::try_from(size).map_err(|_| overflow())?;
        Ok(size)
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0)
    }

    /// Number of bytes of the elements (`size * itemsize`), checked.
    pub fn nbytes(&self) -> Result<usize> {
        self.size()?
            .checked_mul(self.dtype.itemsize())
            .filter(|&n| isize::try_from(n).is_ok())
            .ok_or_else(|| {
                crate::Error::overflow_shown(
                    self.interface.field("shape"),
                    format_tuple(&self.shape),
                    "the number of bytes",
                )
            })
    }

    /// The lowest and one-past-highest byte the array touches, relative to `ptr`.
    ///
    /// Fails when the strides do not match the shape or the span does not fit an `isize`.
    pub fn nbytes_span(&self) -> Result<ByteSpan> {
        if self.strides.len() != self.shape.len() {
            return Err(crate::Error::value_shown(
                self.interface.field("strides"),
                format_tuple(&self.strides),
                format!(
                    "expected one stride per axis of shape {}, {} in all",
                    format_tuple(&self.shape),
                    self.shape.len()
                ),
            ));
        }
        if self.is_empty() {
            return Ok(ByteSpan { low: 0, high: 0 });
        }
        let overflow = || {
            crate::Error::overflow_shown(
                self.interface.field("strides"),
                format_tuple(&self.strides),
                format!(
                    "the byte span of shape {} with these strides",
                    format_tuple(&self.shape)
                )
                .as_str(),
            )
        };
        let mut low = 0isize;
        let mut high = isize::try_from(self.dtype.itemsize()).map_err(|_| overflow())?;
        for (&extent, &stride) in self.shape.iter().zip(&self.strides) {
            let reach = isize::try_from(extent - 1)
                .ok()
                .and_then(|n| n.checked_mul(stride))
                .ok_or_else(overflow)?;
            if reach < 0 {
                low = low.checked_add(reach).ok_or_else(overflow)?;
            } else {
                high = high.checked_add(reach).ok_or_else(overflow)?;
            }
        }
        high.checked_sub(low).ok_or_else(overflow)?;
        Ok(ByteSpan { low, high })
    }

    /// The absolute addresses `(low, high)` of the lowest byte touched and one past the highest,
    /// as NumPy's `byte_bounds` gives them; `(ptr, ptr)` for an empty array.
    pub fn byte_bounds(&self) -> Result<(usize, usize)> {
        let span = self.nbytes_span()?;
        let overflow = || {
            crate::Error::overflow_shown(
                self.interface.field("data"),
                format!("{:#x}", self.ptr),
                "the address of the last byte",
            )
        };
        let low = self
            .ptr
            .checked_sub(span.low.unsigned_abs())
            .ok_or_else(overflow)?;
        let high = self
            .ptr
            .checked_add(span.high.unsigned_abs())
            .ok_or_else(overflow)?;
        Ok((low, high))
    }

    /// Whether the elements are laid out in C order without gaps (NumPy's rule: axes of extent
    /// 1 may have any stride, empty arrays are contiguous).
    pub fn is_c_contiguous(&self) -> bool {
        self.is_contiguous_in(self.shape.len(), |n, axis| n - 1 - axis)
    }

    /// Whether the elements are laid out in Fortran order without gaps (NumPy's rule).
    pub fn is_f_contiguous(&self) -> bool {
        self.is_contiguous_in(self.shape.len(), |_, axis| axis)
    }

    /// Contiguity with axes visited innermost first by `order(ndim, position)`.
    fn is_contiguous_in(&self, ndim: usize, order: impl Fn(usize, usize) -> usize) -> bool {
        if self.strides.len() != ndim {
            return false;
        }
        if self.is_empty() {
            return true;
        }
        let mut expected = Some(self.dtype.itemsize() as isize);
        for position in 0..ndim {
            let axis = order(ndim, position);
            let extent = self.shape[axis];
            if extent == 1 {
                continue;
            }
            match expected {
                Some(e) if e == self.strides[axis] => {
                    expected = isize::try_from(extent).ok().and_then(|n| e.checked_mul(n));
                }
                _ => return false,
            }
        }
        true
    }

    /// Checks that `other`, from another interface of the same object, describes the same
    /// array: shape, dtype, pointer (unless the array is empty) and strides (only along axes of
    /// extent greater than 1, where they matter). The error names the first field that differs
    /// and both interfaces. Device and read-only flag are not compared: managed memory may be
    /// reported as host memory by one interface and as device memory by another, and whether to
    /// honour a read-only flag from either is the caller's policy.
    pub fn agrees_with(&self, other: &ArrayInfo) -> Result<()> {
        let mismatch = |field: &str, mine: String, theirs: String| Error::InvalidValue {
            param: field.to_owned(),
            value: format!("{theirs} from {}", other.interface.name()),
            expected: format!(
                "expected {mine} as {} gives, since every interface of one object must describe \
                 the same array",
                self.interface.name()
            ),
        };
        if self.shape != other.shape {
            return Err(mismatch(
                "shape",
                format_tuple(&self.shape),
                format_tuple(&other.shape),
            ));
        }
        if self.dtype != other.dtype {
            return Err(mismatch(
                "dtype",
                self.dtype.to_typestr(),
                other.dtype.to_typestr(),
            ));
        }
        if self.is_empty() {
            return Ok(());
        }
        if self.ptr != other.ptr {
            return Err(mismatch(
                "data pointer",
                format!("{:#x}", self.ptr),
                format!("{:#x}", other.ptr),
            ));
        }
        let differs = self
            .shape
            .iter()
            .enumerate()
            .any(|(axis, &n)| n > 1 && self.strides.get(axis) != other.strides.get(axis));
        if differs {
            return Err(mismatch(
                "strides",
                format_tuple(&self.strides),
                format_tuple(&other.strides),
            ));
        }
        Ok(())
    }

    /// A read-only `ndarray` view of a host array of element type `T`.
    ///
    /// Fails, without touching memory, when the memory is not host-accessible, the dtype is not
    /// `T`'s native dtype, the pointer is null or not aligned for `T`, a stride (of an axis of
    /// extent greater than 1) is not a multiple of the item size, or the description is
    /// inconsistent. Negative and zero strides are fine.
    ///
    /// # Safety
    ///
    /// The caller guarantees that every byte this description touches (see
    /// [`ArrayInfo::byte_bounds`]) belongs to one live allocation that stays alive and is not
    /// written through any other path for the lifetime `'a`, and, for `T = bool`, that every
    /// element holds 0 or 1.
    pub unsafe fn as_array_view<'a, T: Element>(&self) -> Result<ArrayViewD<'a, T>> {
        let parts = self.view_parts::<T>(false)?;
        let Some(base) = parts.base else {
            // SAFETY: an empty array reads no element, and a dangling, aligned pointer is what
            // ndarray itself uses for empty arrays.
            let view = unsafe {
                ArrayViewD::from_shape_ptr(IxDyn(&self.shape), NonNull::<T>::dangling().as_ptr())
            };
            return Ok(view);
        };
        let ptr = std::ptr::with_exposed_provenance::<T>(base);
        // SAFETY: `view_parts` checked that `base` is the non-null, `T`-aligned lowest address
        // of the array, that the element strides are non-negative and reach only addresses
        // inside the checked byte span (which fits an isize), and that the element count fits
        // an isize; the caller guarantees the span is one live allocation, unaliased by writes.
        let mut view =
            unsafe { ArrayViewD::from_shape_ptr(IxDyn(&self.shape).strides(parts.strides), ptr) };
        for axis in parts.inverted {
            view.invert_axis(Axis(axis));
        }
        Ok(view)
    }

    /// A mutable `ndarray` view of a host array of element type `T`.
    ///
    /// Fails like [`ArrayInfo::as_array_view`], and also when the array is read-only or when
    /// its elements might overlap (a zero stride, or strides that interleave), since a mutable
    /// view must reach every element through one index only.
    ///
    /// # Safety
    ///
    /// The caller guarantees that every byte this description touches belongs to one live,
    /// writable allocation that stays alive and is neither read nor written through any other
    /// path for the lifetime `'a`, and, for `T = bool`, that every element holds 0 or 1.
    pub unsafe fn as_array_view_mut<'a, T: Element>(&self) -> Result<ArrayViewMutD<'a, T>> {
        let parts = self.view_parts::<T>(true)?;
        let Some(base) = parts.base else {
            // SAFETY: an empty array touches no element; see `as_array_view`.
            let view = unsafe {
                ArrayViewMutD::from_shape_ptr(IxDyn(&self.shape), NonNull::<T>::dangling().as_ptr())
            };
            return Ok(view);
        };
        let ptr = std::ptr::with_exposed_provenance_mut::<T>(base);
        // SAFETY: as in `as_array_view`; in addition `view_parts` proved that no two indices
        // reach overlapping bytes, and the caller guarantees exclusive access for 'a.
        let mut view = unsafe {
            ArrayViewMutD::from_shape_ptr(IxDyn(&self.shape).strides(parts.strides), ptr)
        };
        for axis in parts.inverted {
            view.invert_axis(Axis(axis));
        }
        Ok(view)
    }

    /// Checks everything a view of `T` needs and computes the lowest address, non-negative
    /// element strides and the axes to invert afterwards.
    pub(crate) fn view_parts<T: Element>(&self, mutable: bool) -> Result<ViewParts> {
        let source = self.interface.name();
        if !self.device.is_host_accessible() {
            return Err(crate::Error::value_shown(
                "device",
                format!("{} from {source}", self.device),
                "expected host-accessible memory (cpu, cuda_host, cuda_managed or rocm_host) \
                 for an ndarray view",
            ));
        }
        if mutable && self.readonly {
            return Err(crate::Error::value_shown(
                "readonly",
                format!("true from {source}"),
                "expected a writable array for a mutable view",
            ));
        }
        if self.dtype != T::DTYPE {
            return Err(crate::Error::value_shown(
                "dtype",
                format!("{} from {source}", self.dtype),
                format!("expected {}, the element type of the view", T::DTYPE),
            ));
        }
        self.validate()?;
        let span = self.nbytes_span()?;
        if span.is_empty() {
            return Ok(ViewParts {
                base: None,
                strides: IxDyn::zeros(0),
                inverted: Vec::new(),
            });
        }
        let itemsize = std::mem::size_of::<T>();
        if self.ptr % std::mem::align_of::<T>() != 0 {
            return Err(crate::Error::value_shown(
                "data pointer",
                format!("{:#x} from {source}", self.ptr),
                format!(
                    "expected an address aligned to {} bytes for {}",
                    std::mem::align_of::<T>(),
                    T::DTYPE
                ),
            ));
        }
        // IxDyn keeps up to four axes inline, so the common view allocates nothing here.
        let mut strides = IxDyn::zeros(self.ndim());
        let mut inverted = Vec::new();
        for (axis, (&extent, &stride)) in self.shape.iter().zip(&self.strides).enumerate() {
            if extent <= 1 {
                continue;
            }
            if stride.unsigned_abs() % itemsize != 0 {
                return Err(crate::Error::value_shown(
                    "strides",
                    format!("{} from {source}", format_tuple(&self.strides)),
                    format!(
                        "expected multiples of the item size {itemsize} along axes longer than 1"
                    ),
                ));
            }
            strides[axis] = stride.unsigned_abs() / itemsize;
            if stride < 0 {
                inverted.push(axis);
            }
        }
        if mutable && self.may_self_overlap(itemsize) {
            return Err(crate::Error::value_shown(
                "strides",
                format!("{} from {source}", format_tuple(&self.strides)),
                format!(
                    "a mutable view needs elements that do not overlap, and with shape {} these \
                     strides may reach one element through two indices",
                    format_tuple(&self.shape)
                ),
            ));
        }
        let (base, _) = self.byte_bounds()?;
        Ok(ViewParts {
            base: Some(base),
            strides,
            inverted,
        })
    }

    /// Whether two different indices might reach overlapping bytes. Sufficient test: sorted by
    /// stride magnitude, every axis must step over everything the inner axes reach.
    fn may_self_overlap(&self, itemsize: usize) -> bool {
        let long_axes = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(&n, _)| n > 1)
            .map(|(&n, &s)| (s.unsigned_abs(), n));
        // Views are checked on every stencil call: sort small arrays on the stack.
        let (mut inline, mut heap) = ([(0, 0); 8], Vec::new());
        let axes: &mut [(usize, usize)] = if self.ndim() <= inline.len() {
            let mut n = 0;
            for a in long_axes {
                inline[n] = a;
                n += 1;
            }
            &mut inline[..n]
        } else {
            heap.extend(long_axes);
            &mut heap
        };
        axes.sort_unstable();
        let mut reach = Some(itemsize);
        for &mut (stride, extent) in axes {
            match reach {
                Some(r) if stride >= r => {
                    reach = stride
                        .checked_mul(extent - 1)
                        .and_then(|x| x.checked_add(r));
                }
                _ => return true,
            }
        }
        false
    }
}

/// What `as_array_view` needs after the checks.
pub(crate) struct ViewParts {
    /// Lowest address touched; `None` for an empty array.
    pub(crate) base: Option<usize>,
    /// Element strides, all non-negative.
    pub(crate) strides: IxDyn,
    /// Axes whose byte stride is negative.
    pub(crate) inverted: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(ptr: usize, shape: &[usize], strides: &[isize], dtype: DType) -> ArrayInfo {
        ArrayInfo {
            ptr,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            dtype,
            device: ArrayDevice::CPU,
            readonly: false,
            interface: Interface::Native,
            stream: None,
        }
    }

    #[test]
    fn typestrs_parse_and_round_trip() {
        let ai = Interface::ArrayInterface;
        assert_eq!(DType::from_typestr("<f8", ai).unwrap(), DType::FLOAT64);
        assert_eq!(DType::from_typestr("=f4", ai).unwrap(), DType::FLOAT32);
        assert_eq!(DType::from_typestr("|b1", ai).unwrap(), DType::BOOL);
        assert_eq!(DType::from_typestr("<c16", ai).unwrap(), DType::COMPLEX128);
        assert_eq!(DType::from_typestr("|u1", ai).unwrap(), DType::UINT8);
        assert_eq!(DType::from_typestr("i2", ai).unwrap(), DType::INT16);
        let big = DType::from_typestr(">i4", ai).unwrap();
        assert_eq!(big.kind(), DTypeKind::Int);
        assert_eq!(big.itemsize(), 4);
        assert_eq!(big.byteorder().resolve(), ByteOrder::Big);
        assert_eq!(big.to_typestr(), ">i4");
        assert_eq!(DType::BOOL.to_typestr(), "|b1");
        assert_eq!(DType::INT8.to_typestr(), "|i1");
        for s in ["<f8", "|b1", ">i4", "<c16", ">c8", "<u2", "<f2", ">f8"] {
            let d = DType::from_typestr(s, ai).unwrap();
            assert_eq!(DType::from_typestr(&d.to_typestr(), ai).unwrap(), d);
        }
        // The explicit host order is the native order.
        let host = if cfg!(target_endian = "little") {
            "<f8"
        } else {
            ">f8"
        };
        assert!(DType::from_typestr(host, ai).unwrap().is_native());
        assert_eq!(DType::FLOAT64.to_typestr(), host);
    }

    #[test]
    fn unsupported_typestrs_name_interface_key_and_value() {
        for s in ["|O", "|S5", "<U3", "|V8", "<M8[ns]", "<m8", "|t8"] {
            let msg = DType::from_typestr(s, Interface::ArrayInterface)
                .unwrap_err()
                .to_string();
            assert!(msg.contains("__array_interface__['typestr']"), "{msg}");
            assert!(msg.contains(&format!("{s:?}")), "{msg}");
            assert!(msg.contains("object, string, void"), "{msg}");
        }
        for s in [
            "<f16", "<c32", "|b2", "<i3", "<f", "", "<", "<x8", "<f8 ", "<f+8", "<fé",
        ] {
            let err = DType::from_typestr(s, Interface::CudaArrayInterface).unwrap_err();
            assert!(
                err.to_string()
                    .contains("__cuda_array_interface__['typestr']"),
                "{err}"
            );
        }
    }

    #[test]
    fn buffer_formats_parse() {
        let c_long = std::mem::size_of::<std::ffi::c_long>();
        let cases: [(&str, DTypeKind, usize); 16] = [
            ("d", DTypeKind::Float, 8),
            ("@d", DTypeKind::Float, 8),
            ("f", DTypeKind::Float, 4),
            ("e", DTypeKind::Float, 2),
            ("?", DTypeKind::Bool, 1),
            ("b", DTypeKind::Int, 1),
            ("B", DTypeKind::UInt, 1),
            ("h", DTypeKind::Int, 2),
            ("i", DTypeKind::Int, 4),
            ("I", DTypeKind::UInt, 4),
            ("l", DTypeKind::Int, c_long),
            ("=l", DTypeKind::Int, 4),
            ("q", DTypeKind::Int, 8),
            ("Q", DTypeKind::UInt, 8),
            ("Zf", DTypeKind::Complex, 8),
            ("Zd", DTypeKind::Complex, 16),
        ];
        for (fmt, kind, size) in cases {
            let d = DType::from_buffer_format(fmt).unwrap();
            assert_eq!(
                (d.kind(), d.itemsize(), d.is_native()),
                (kind, size, true),
                "{fmt}"
            );
        }
        let big = DType::from_buffer_format(">i").unwrap();
        assert_eq!(
            (big.byteorder().resolve(), big.itemsize()),
            (ByteOrder::Big, 4)
        );
        assert_eq!(DType::from_buffer_format("!d").unwrap().to_typestr(), ">f8");
        assert_eq!(DType::from_buffer_format("<q").unwrap().to_typestr(), "<i8");
        assert_eq!(
            DType::from_buffer_format("n").unwrap().itemsize(),
            std::mem::size_of::<isize>()
        );
        for bad in [
            "g", "Zg", "c", "s", "5s", "P", "x", "O", "T{d:x:}", "2d", "=n", "", "dd",
        ] {
            let msg = DType::from_buffer_format(bad).unwrap_err().to_string();
            assert!(msg.contains("buffer protocol Py_buffer.format"), "{msg}");
        }
    }

    #[test]
    fn dtype_new_checks_sizes_and_normalizes_order() {
        assert!(DType::new(DTypeKind::Float, 16, ByteOrder::Native).is_err());
        assert!(DType::new(DTypeKind::Bool, 2, ByteOrder::Native).is_err());
        assert_eq!(
            DType::new(DTypeKind::Float, 8, ByteOrder::HOST).unwrap(),
            DType::FLOAT64
        );
        assert_eq!(
            DType::new(DTypeKind::UInt, 1, ByteOrder::Big).unwrap(),
            DType::UINT8
        );
        assert_eq!(DType::FLOAT32.to_string(), "float32");
        let swapped = if cfg!(target_endian = "little") {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        let d = DType::new(DTypeKind::Int, 4, swapped).unwrap();
        assert!(!d.is_native());
        assert!(d.to_string().starts_with("int32 ("));
        assert_eq!(DType::COMPLEX64.name(), "complex64");
    }

    #[test]
    fn spans_bounds_and_contiguity() {
        let a = host(1000, &[3, 4], &[32, 8], DType::FLOAT64);
        assert_eq!(a.nbytes_span().unwrap(), ByteSpan { low: 0, high: 96 });
        assert_eq!(a.byte_bounds().unwrap(), (1000, 1096));
        assert!(a.is_c_contiguous() && !a.is_f_contiguous());
        let flipped = host(1064, &[3, 4], &[-32, 8], DType::FLOAT64);
        assert_eq!(
            flipped.nbytes_span().unwrap(),
            ByteSpan { low: -64, high: 32 }
        );
        assert_eq!(flipped.byte_bounds().unwrap(), (1000, 1096));
        assert!(!flipped.is_c_contiguous());
        let f = host(8, &[3, 4], &[8, 24], DType::FLOAT64);
        assert!(f.is_f_contiguous() && !f.is_c_contiguous());
        // Axes of extent 1 may have any stride; empty arrays are contiguous and touch nothing.
        assert!(host(8, &[3, 1], &[8, 12345], DType::FLOAT64).is_c_contiguous());
        let empty = host(0, &[3, 0], &[-7, 3], DType::FLOAT64);
        assert!(empty.is_c_contiguous());
        assert!(empty.nbytes_span().unwrap().is_empty());
        empty.validate().unwrap();
        let scalar = host(16, &[], &[], DType::INT32);
        assert_eq!(scalar.nbytes_span().unwrap().len(), 4);
        assert_eq!(scalar.size().unwrap(), 1);
        assert_eq!(scalar.nbytes().unwrap(), 4);
        assert_eq!(
            c_strides(&[2, 0, 5], 4).unwrap(),
            vec![20, 20, 4],
            "zero extents count as 1, as NumPy does"
        );
    }

    #[test]
    fn validation_errors() {
        let msg = host(8, &[3, 4], &[8], DType::FLOAT64)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(msg.contains("one stride per axis"), "{msg}");
        let huge = host(8, &[usize::MAX / 2, 4], &[8, 8], DType::FLOAT64);
        assert!(matches!(huge.validate(), Err(Error::Overflow { .. })));
        let wide = host(8, &[3, 3], &[isize::MAX / 2, isize::MAX / 2], DType::INT8);
        assert!(matches!(wide.nbytes_span(), Err(Error::Overflow { .. })));
        let wrap = host(usize::MAX - 8, &[4], &[8], DType::FLOAT64);
        assert!(matches!(wrap.byte_bounds(), Err(Error::Overflow { .. })));
        let below = host(8, &[4], &[-8], DType::FLOAT64);
        assert!(matches!(below.byte_bounds(), Err(Error::Overflow { .. })));
        let null = host(0, &[2], &[8], DType::FLOAT64);
        assert!(null.validate().unwrap_err().to_string().contains("null"));
        assert!(matches!(
            c_strides(&[usize::MAX, 2], 8),
            Err(Error::Overflow { .. })
        ));
    }

    #[test]
    fn agreement_names_the_differing_field() {
        let a = host(4096, &[3, 4], &[32, 8], DType::FLOAT64);
        a.agrees_with(&a).unwrap();
        // Strides of axes of extent 1 do not matter.
        let b = host(4096, &[3, 1], &[8, 8], DType::FLOAT64);
        let mut c = b.clone();
        c.strides[1] = 999;
        c.interface = Interface::DLPack;
        b.agrees_with(&c).unwrap();
        let check = |other: ArrayInfo, field: &str| {
            let msg = a.agrees_with(&other).unwrap_err().to_string();
            assert!(msg.starts_with(&format!("invalid {field} ")), "{msg}");
            assert!(msg.contains("from __array_interface__"), "{msg}");
            assert!(msg.contains("as gridbuf gives"), "{msg}");
        };
        let other = |f: &dyn Fn(&mut ArrayInfo)| {
            let mut o = a.clone();
            o.interface = Interface::ArrayInterface;
            f(&mut o);
            o
        };
        check(other(&|o| o.shape = vec![3, 5]), "shape");
        check(other(&|o| o.shape = vec![3, 4, 1]), "shape");
        check(other(&|o| o.dtype = DType::INT64), "dtype");
        check(other(&|o| o.ptr = 4104), "data pointer");
        check(other(&|o| o.strides = vec![8, 24]), "strides");
        // Empty arrays may sit anywhere.
        let e = host(0, &[0, 4], &[32, 8], DType::FLOAT64);
        let mut f = e.clone();
        f.ptr = 77;
        f.strides = vec![1, 2];
        e.agrees_with(&f).unwrap();
    }

    #[test]
    fn views_read_the_right_elements() {
        let data: Vec<i32> = (0..24).collect();
        let base = data.as_ptr().expose_provenance();
        // A 4 x 3 view, columns backwards, rows every other row of a 8 x 3 block.
        let info = host(base + 2 * 4, &[4, 3], &[24, -4], DType::INT32);
        // SAFETY: `data` lives for the test and is not written.
        let view = unsafe { info.as_array_view::<i32>().unwrap() };
        for i in 0..4 {
            for j in 0..3 {
                assert_eq!(view[[i, j]], (6 * i + 2 - j) as i32);
            }
        }
        // A broadcast (zero-stride) axis is fine for reading.
        let bcast = host(base + 4, &[3, 2], &[0, 4], DType::INT32);
        // SAFETY: as above.
        let v = unsafe { bcast.as_array_view::<i32>().unwrap() };
        assert_eq!(v.iter().copied().collect::<Vec<_>>(), [1, 2, 1, 2, 1, 2]);
        // Empty arrays give empty views whatever their pointer.
        let empty = host(0, &[0, 3], &[12, 4], DType::INT32);
        // SAFETY: nothing is read.
        assert_eq!(unsafe { empty.as_array_view::<i32>().unwrap() }.len(), 0);
    }

    #[test]
    fn mutable_views_write_through() {
        let mut data = vec![0.0f64; 12];
        let base = data.as_mut_ptr().expose_provenance();
        let info = host(base + 11 * 8, &[3, 4], &[-32, -8], DType::FLOAT64);
        {
            // SAFETY: `data` is not touched while the view lives.
            let mut view = unsafe { info.as_array_view_mut::<f64>().unwrap() };
            view[[0, 0]] = 1.0;
            view[[2, 3]] = 2.0;
        }
        assert_eq!((data[11], data[0]), (1.0, 2.0));
    }

    #[test]
    fn views_refuse_what_they_cannot_do_safely() {
        let data = [0u64; 16];
        let base = data.as_ptr().expose_provenance();
        let ok = host(base, &[4, 4], &[32, 8], DType::UINT64);
        let msg = |info: &ArrayInfo| {
            // SAFETY: every case fails before touching memory; `data` is alive anyway.
            unsafe { info.as_array_view::<u64>() }
                .unwrap_err()
                .to_string()
        };
        let msg_mut = |info: &ArrayInfo| {
            // SAFETY: as above.
            unsafe { info.as_array_view_mut::<u64>() }
                .unwrap_err()
                .to_string()
        };
        let mut gpu = ok.clone();
        gpu.device = ArrayDevice {
            kind: DeviceKind::Cuda,
            id: Some(0),
        };
        assert!(msg(&gpu).contains("host-accessible"));
        let mut ro = ok.clone();
        ro.readonly = true;
        assert!(msg_mut(&ro).contains("writable"));
        // SAFETY: `data` lives and is not written.
        unsafe { ro.as_array_view::<u64>().unwrap() };
        // SAFETY: fails before touching memory.
        let wrong = unsafe { ok.as_array_view::<i64>() }
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("dtype") && wrong.contains("expected int64"),
            "{wrong}"
        );
        let mut misaligned = ok.clone();
        misaligned.ptr += 4;
        misaligned.shape = vec![3, 3];
        assert!(msg(&misaligned).contains("aligned"));
        let mut odd_stride = ok.clone();
        odd_stride.strides = vec![12, 8];
        odd_stride.shape = vec![2, 4];
        assert!(msg(&odd_stride).contains("multiples of the item size"));
        let mut overlap = ok.clone();
        overlap.strides = vec![8, 8];
        // SAFETY: `data` lives and is not written; the overlap is fine for reading.
        unsafe { overlap.as_array_view::<u64>().unwrap() };
        assert!(msg_mut(&overlap).contains("overlap"));
        let mut bcast = ok.clone();
        bcast.strides = vec![0, 8];
        assert!(msg_mut(&bcast).contains("overlap"));
        let mut null = ok.clone();
        null.ptr = 0;
        assert!(msg(&null).contains("null"));
    }
}
