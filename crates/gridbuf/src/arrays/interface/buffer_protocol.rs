//! The Python buffer protocol (PEP 3118): a `Py_buffer` acquired with `PyBUF_RECORDS_RO` (or
//! `PyBUF_STRIDES` plus `PyBUF_FORMAT`), turned into an [`ArrayInfo`].
//!
//! ```
//! use gridbuf::arrays::interface::BufferView;
//! let view = BufferView {
//!     ptr: 0x1000,
//!     len: 96,
//!     readonly: true,
//!     itemsize: 8,
//!     format: Some("<d".into()),
//!     shape: Some(vec![3, 4]),
//!     strides: None,
//!     has_suboffsets: false,
//! };
//! let info = view.parse()?;
//! assert!(info.is_c_contiguous() && info.readonly);
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::arrays::array_info::{c_strides, format_tuple};
use crate::arrays::array_info::{ArrayDevice, ArrayInfo, DType, Interface};
use crate::error::{Error, Result};

/// The fields of a `Py_buffer`, as plain Rust values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BufferView {
    /// `buf`: address of the element at index zero.
    pub ptr: usize,
    /// `len`: `product(shape) * itemsize` in bytes.
    pub len: usize,
    /// `readonly`.
    pub readonly: bool,
    /// `itemsize` in bytes.
    pub itemsize: usize,
    /// `format`; `None` (NULL) means unsigned bytes, `"B"`.
    pub format: Option<String>,
    /// `shape`; `None` (NULL) means one axis of `len / itemsize` items.
    pub shape: Option<Vec<isize>>,
    /// `strides` in bytes; `None` (NULL) means C order.
    pub strides: Option<Vec<isize>>,
    /// Whether `suboffsets` is non-NULL (PIL-style indirect arrays are refused).
    pub has_suboffsets: bool,
}

impl BufferView {
    /// Checks the fields and describes the host array.
    pub fn parse(&self) -> Result<ArrayInfo> {
        let iface = Interface::Buffer;
        let dtype = DType::from_buffer_format(self.format.as_deref().unwrap_or("B"))?;
        if self.itemsize != dtype.itemsize() {
            return Err(Error::invalid(
                iface.field("itemsize"),
                self.itemsize,
                format!(
                    "expected {}, the size of the format's type {dtype}",
                    dtype.itemsize()
                ),
            ));
        }
        if self.has_suboffsets {
            return Err(crate::Error::value_shown(
                iface.field("suboffsets"),
                "non-NULL",
                "indirect (PIL-style) buffers are not supported; expected NULL",
            ));
        }
        let shape = match &self.shape {
            None => {
                if self.len % self.itemsize != 0 {
                    return Err(Error::invalid(
                        iface.field("len"),
                        self.len,
                        format!("expected a multiple of the item size {}", self.itemsize),
                    ));
                }
                vec![self.len / self.itemsize]
            }
            Some(shape) => shape
                .iter()
                .map(|&n| {
                    usize::try_from(n).map_err(|_| {
                        crate::Error::value_shown(
                            iface.field("shape"),
                            format_tuple(shape),
                            "extents must be non-negative",
                        )
                    })
                })
                .collect::<Result<Vec<usize>>>()?,
        };
        let strides = match &self.strides {
            None => c_strides(&shape, dtype.itemsize())?,
            Some(strides) => {
                if strides.len() != shape.len() {
                    return Err(crate::Error::value_shown(
                        iface.field("strides"),
                        format_tuple(strides),
                        format!(
                            "expected one stride per axis of shape {}, {} in all",
                            format_tuple(&shape),
                            shape.len()
                        ),
                    ));
                }
                strides.clone()
            }
        };
        let mut info = ArrayInfo::new(self.ptr, shape, strides, dtype, ArrayDevice::CPU, iface)?;
        info.readonly = self.readonly;
        let nbytes = info.nbytes()?;
        if nbytes != self.len {
            return Err(crate::Error::value_shown(
                iface.field("len"),
                self.len.to_string(),
                format!(
                    "expected {nbytes}, the shape {} times the item size {}",
                    format_tuple(&info.shape),
                    self.itemsize
                ),
            ));
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(format: &str, itemsize: usize, shape: &[isize]) -> BufferView {
        let n: isize = shape.iter().product();
        BufferView {
            ptr: 4096,
            len: n.unsigned_abs() * itemsize,
            readonly: false,
            itemsize,
            format: Some(format.to_owned()),
            shape: Some(shape.to_vec()),
            strides: None,
            has_suboffsets: false,
        }
    }

    #[test]
    fn valid_forms() {
        let info = view("d", 8, &[3, 4]).parse().unwrap();
        assert_eq!(
            (info.strides.clone(), info.dtype),
            (vec![32, 8], DType::FLOAT64)
        );
        assert_eq!(info.interface, Interface::Buffer);
        let mut v = view(">i", 4, &[2, 3]);
        v.strides = Some(vec![-4, 8]);
        v.readonly = true;
        let info = v.parse().unwrap();
        assert_eq!(info.dtype.to_typestr(), ">i4");
        assert!(info.readonly && !info.is_c_contiguous());
        let bytes = BufferView {
            ptr: 8,
            len: 10,
            itemsize: 1,
            ..Default::default()
        };
        let info = bytes.parse().unwrap();
        assert_eq!((info.shape.clone(), info.dtype), (vec![10], DType::UINT8));
    }

    #[test]
    fn errors_name_the_field() {
        let check = |v: BufferView, needle: &str| {
            let msg = v.parse().unwrap_err().to_string();
            assert!(msg.contains("buffer protocol Py_buffer."), "{msg}");
            assert!(msg.contains(needle), "{msg}");
        };
        check(view("g", 16, &[2]), "long double");
        check(view("d", 4, &[2]), "Py_buffer.itemsize 4");
        let mut v = view("d", 8, &[2]);
        v.has_suboffsets = true;
        check(v, "suboffsets");
        check(view("d", 8, &[2, -1]), "non-negative");
        let mut v = view("d", 8, &[2, 2]);
        v.strides = Some(vec![8]);
        check(v, "one stride per axis");
        let mut v = view("d", 8, &[2, 2]);
        v.len = 8;
        check(v, "Py_buffer.len 8");
        let v = BufferView {
            ptr: 8,
            len: 10,
            itemsize: 4,
            format: Some("i".into()),
            ..Default::default()
        };
        check(v, "multiple of the item size");
    }
}
