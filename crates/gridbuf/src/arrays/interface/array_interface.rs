//! NumPy's `__array_interface__` (version 3), and the per-device entries of the
//! `__gt_data_interface__` (GDP-3), which use the same keys.
//!
//! The binding extracts the Python dict into an [`ArrayInterfaceDict`] (type errors are its
//! job); [`ArrayInterfaceDict::parse`] checks the values and returns an [`ArrayInfo`].
//!
//! ```
//! use gridbuf::arrays::interface::{ArrayInterfaceDict, DataField};
//! let dict = ArrayInterfaceDict {
//!     version: Some(3),
//!     shape: Some(vec![3, 4]),
//!     typestr: Some("<f8".into()),
//!     data: DataField::Pointer { ptr: 0x1000, readonly: false },
//!     strides: Some(vec![-32, 8]),
//!     ..Default::default()
//! };
//! let info = dict.parse()?;
//! assert_eq!(info.byte_bounds()?, (0x1000 - 64, 0x1000 + 32));
//! # Ok::<(), gridbuf::Error>(())
//! ```

use super::fields::{missing, parse_layout, parse_pointer};
use crate::arrays::array_info::format_tuple;
use crate::arrays::array_info::{ArrayDevice, ArrayInfo, Interface};
use crate::error::{Error, Result};

/// The version of the array interface this module reads.
pub const ARRAY_INTERFACE_VERSION: i64 = 3;

/// The `data` entry of an `__array_interface__`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DataField {
    /// A `(pointer, read_only)` tuple.
    Pointer {
        /// Address of the element at index zero.
        ptr: u64,
        /// Whether the data may not be written.
        readonly: bool,
    },
    /// An object exposing the buffer protocol (`data` was such an object, or `data` was absent
    /// or `None` and the binding acquired the buffer of the object itself); `offset` applies.
    Buffer {
        /// `Py_buffer.buf`: the start of the buffer.
        ptr: usize,
        /// `Py_buffer.len`: the buffer's length in bytes.
        len: usize,
        /// `Py_buffer.readonly`.
        readonly: bool,
    },
    /// `data` absent or `None`: the object exposes its memory through the buffer protocol.
    /// Parsing fails with [`Error::BufferProtocolRequired`]; the binding acquires the buffer,
    /// stores it as [`DataField::Buffer`] and parses again.
    #[default]
    None,
}

/// The contents of an `__array_interface__` dict, as plain Rust values.
///
/// `None` means the key is absent (or, for optional keys, `None` in Python). `typestr` is
/// required, as are `shape` and `version` for `__array_interface__`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArrayInterfaceDict {
    /// `version`: must be 3 for `__array_interface__`; not checked for data-interface entries,
    /// which may forward either array interface.
    pub version: Option<i64>,
    /// `shape`: one extent per axis.
    pub shape: Option<Vec<i64>>,
    /// `typestr`, such as `"<f8"`.
    pub typestr: Option<String>,
    /// `descr` as `(name, typestr)` pairs; when given it must be `[("", typestr)]`.
    pub descr: Option<Vec<(String, String)>>,
    /// `data`.
    pub data: DataField,
    /// `strides` in bytes; `None` means C order.
    pub strides: Option<Vec<i64>>,
    /// `offset` in bytes into a buffer `data`. NumPy ignores it for a pointer tuple; gridbuf
    /// refuses a non-zero offset there rather than guess.
    pub offset: Option<i64>,
    /// Whether `mask` is present and not `None` (masked arrays are refused).
    pub has_mask: bool,
}

impl ArrayInterfaceDict {
    /// Whether the memory has to come from the object's buffer protocol (`data` absent or
    /// `None`). The binding may check this before [`ArrayInterfaceDict::parse`] to avoid the
    /// [`Error::BufferProtocolRequired`] round trip.
    pub fn needs_buffer(&self) -> bool {
        matches!(self.data, DataField::None)
    }

    /// Parses an `__array_interface__` of host memory.
    pub fn parse(&self) -> Result<ArrayInfo> {
        self.parse_as(Interface::ArrayInterface, ArrayDevice::CPU)
    }

    /// Parses a dict with array-interface keys that `interface` produced for memory on `device`;
    /// for example a `__gt_data_interface__` entry (`Interface::DataInterface`), whose
    /// device comes from its key in the outer dict.
    ///
    /// The version is checked only for `Interface::ArrayInterface`.
    pub fn parse_as(&self, interface: Interface, device: ArrayDevice) -> Result<ArrayInfo> {
        if self.needs_buffer() {
            return Err(Error::BufferProtocolRequired {
                interface: interface.name().to_owned(),
            });
        }
        if interface == Interface::ArrayInterface {
            match self.version {
                None => return Err(missing(interface, "version", "the interface version, 3")),
                Some(ARRAY_INTERFACE_VERSION) => {}
                Some(v) => {
                    return Err(Error::invalid(
                        interface.field("version"),
                        v,
                        "expected version 3, the only one gridbuf reads",
                    ))
                }
            }
        }
        let layout = parse_layout(
            interface,
            self.shape.as_deref(),
            self.typestr.as_deref(),
            self.descr.as_deref(),
            self.strides.as_deref(),
            self.has_mask,
        )?;
        let offset = match self.offset {
            None | Some(0) => 0usize,
            Some(o) if o < 0 => {
                return Err(Error::invalid(
                    interface.field("offset"),
                    o,
                    "expected a non-negative byte offset into the buffer",
                ))
            }
            Some(o) => match self.data {
                DataField::Pointer { .. } => {
                    return Err(Error::invalid(
                        interface.field("offset"),
                        o,
                        "an offset applies only when data is a buffer object or None; with a \
                         (pointer, read_only) tuple expected no offset or 0",
                    ))
                }
                _ => usize::try_from(o).map_err(|_| {
                    crate::Error::overflow_shown(
                        interface.field("offset"),
                        o.to_string(),
                        "the offset",
                    )
                })?,
            },
        };
        let (ptr, readonly, buffer) = match self.data {
            DataField::Pointer { ptr, readonly } => {
                (parse_pointer(interface, ptr)?, readonly, None)
            }
            DataField::Buffer { ptr, len, readonly } => {
                if offset > len {
                    return Err(crate::Error::value_shown(
                        interface.field("offset"),
                        offset.to_string(),
                        format!("expected at most the buffer's length, {len} bytes"),
                    ));
                }
                let start = ptr.checked_add(offset).ok_or_else(|| {
                    crate::Error::overflow_shown(
                        interface.field("offset"),
                        offset.to_string(),
                        "the buffer's address plus the offset",
                    )
                })?;
                (start, readonly, Some((ptr, len)))
            }
            DataField::None => unreachable!("handled by needs_buffer above"),
        };
        let mut info = ArrayInfo::new(
            ptr,
            layout.shape,
            layout.strides,
            layout.dtype,
            device,
            interface,
        )?;
        info.readonly = readonly;
        if let Some((buf, len)) = buffer {
            check_inside_buffer(&info, buf, len, offset)?;
        }
        Ok(info)
    }

    /// The `__array_interface__` describing `info`, as NumPy writes it: version 3, `descr`
    /// `[("", typestr)]`, and `strides` `None` when they are exactly the C-order strides.
    /// Fails only for an extent that does not fit an `i64`.
    pub fn from_info(info: &ArrayInfo) -> Result<ArrayInterfaceDict> {
        let (shape, strides) = export_layout(info)?;
        let typestr = info.dtype.to_typestr();
        Ok(ArrayInterfaceDict {
            version: Some(ARRAY_INTERFACE_VERSION),
            shape: Some(shape),
            descr: Some(vec![(String::new(), typestr.clone())]),
            typestr: Some(typestr),
            data: DataField::Pointer {
                ptr: info.ptr as u64,
                readonly: info.readonly,
            },
            strides,
            offset: None,
            has_mask: false,
        })
    }
}

/// Shape and strides as Python ints for export; strides `None` when exactly C order.
pub(crate) fn export_layout(info: &ArrayInfo) -> Result<(Vec<i64>, Option<Vec<i64>>)> {
    let to_i64 = |v: usize| {
        i64::try_from(v).map_err(|_| {
            crate::Error::overflow_shown(
                info.interface.field("shape"),
                format_tuple(&info.shape),
                "an extent as a 64-bit integer",
            )
        })
    };
    let shape = info
        .shape
        .iter()
        .map(|&n| to_i64(n))
        .collect::<Result<Vec<i64>>>()?;
    let c_order = crate::arrays::array_info::c_strides(&info.shape, info.dtype.itemsize())
        .is_ok_and(|c| c == info.strides);
    // isize is at most 64 bits wide on every supported platform, so the cast is lossless.
    let strides = (!c_order).then(|| info.strides.iter().map(|&s| s as i64).collect());
    Ok((shape, strides))
}

/// Checks that every byte the array touches lies in the buffer `[buf, buf + len)`.
fn check_inside_buffer(info: &ArrayInfo, buf: usize, len: usize, offset: usize) -> Result<()> {
    if info.is_empty() {
        return Ok(());
    }
    let (low, high) = info.byte_bounds()?;
    let end = buf.checked_add(len).ok_or_else(|| {
        crate::Error::overflow_shown(
            info.interface.field("data"),
            format!("a buffer of {len} bytes at {buf:#x}"),
            "the buffer's end address",
        )
    })?;
    if low < buf || high > end {
        let rel = |a: usize| a as i128 - buf as i128;
        return Err(crate::Error::value_shown(
            info.interface.field("data"),
            format!("a buffer of {len} bytes"),
            format!(
                "shape {}, strides {} and offset {offset} reach bytes {} to {} of it",
                format_tuple(&info.shape),
                format_tuple(&info.strides),
                rel(low),
                rel(high)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::array_info::{DType, DeviceKind};

    fn dict(shape: &[i64], typestr: &str, ptr: u64) -> ArrayInterfaceDict {
        ArrayInterfaceDict {
            version: Some(3),
            shape: Some(shape.to_vec()),
            typestr: Some(typestr.to_owned()),
            data: DataField::Pointer {
                ptr,
                readonly: false,
            },
            ..Default::default()
        }
    }

    fn err(d: &ArrayInterfaceDict) -> String {
        d.parse().unwrap_err().to_string()
    }

    #[test]
    fn c_order_pointer() {
        let info = dict(&[3, 4], "<f8", 4096).parse().unwrap();
        assert_eq!(info.shape, vec![3, 4]);
        assert_eq!(info.strides, vec![32, 8]);
        assert_eq!(info.ptr, 4096);
        assert_eq!(info.interface, Interface::ArrayInterface);
        assert_eq!(info.device, ArrayDevice::CPU);
        assert!(info.is_c_contiguous() && !info.readonly && info.stream.is_none());
    }

    #[test]
    fn strided_readonly_with_descr() {
        let mut d = dict(&[3, 2], "|b1", 4096);
        d.strides = Some(vec![-4, 2]);
        d.descr = Some(vec![(String::new(), "|b1".into())]);
        d.data = DataField::Pointer {
            ptr: 4096,
            readonly: true,
        };
        let info = d.parse().unwrap();
        assert_eq!(info.dtype, DType::BOOL);
        assert_eq!(info.strides, vec![-4, 2]);
        assert!(info.readonly);
        assert_eq!(info.byte_bounds().unwrap(), (4088, 4099));
    }

    #[test]
    fn scalars_and_empty_arrays() {
        let info = dict(&[], "<i4", 64).parse().unwrap();
        assert_eq!((info.ndim(), info.nbytes().unwrap()), (0, 4));
        // A null pointer is fine when there is nothing to point at.
        let info = dict(&[0, 5], "<f4", 0).parse().unwrap();
        assert!(info.is_empty());
    }

    #[test]
    fn buffer_data_applies_offset_and_checks_length() {
        let mut d = dict(&[2, 3], "<f8", 0);
        d.data = DataField::Buffer {
            ptr: 1000,
            len: 64,
            readonly: true,
        };
        d.offset = Some(16);
        let info = d.parse().unwrap();
        assert_eq!((info.ptr, info.readonly), (1016, true));
        assert_eq!(info.byte_bounds().unwrap(), (1016, 1064));
        d.offset = Some(24);
        let msg = err(&d);
        assert!(msg.contains("__array_interface__['data']"), "{msg}");
        assert!(msg.contains("reach bytes 24 to 72"), "{msg}");
        d.offset = Some(65);
        assert!(err(&d).contains("at most the buffer's length"));
        d.offset = Some(-8);
        assert!(err(&d).contains("non-negative"));
        // Negative strides must not reach below the buffer either.
        d.offset = Some(0);
        d.strides = Some(vec![-24, 8]);
        assert!(err(&d).contains("reach bytes -24 to 24"));
    }

    #[test]
    fn data_none_asks_for_the_buffer_protocol() {
        let mut d = dict(&[4], "<f8", 0);
        d.data = DataField::None;
        assert!(d.needs_buffer());
        assert_eq!(
            d.parse().unwrap_err(),
            Error::BufferProtocolRequired {
                interface: "__array_interface__".into()
            }
        );
        assert!(err(&d).contains("buffer protocol"));
    }

    #[test]
    fn missing_keys() {
        let mut d = dict(&[4], "<f8", 8);
        d.shape = None;
        assert!(matches!(d.parse(), Err(Error::MissingKey { ref key, .. }) if key == "shape"));
        let mut d = dict(&[4], "<f8", 8);
        d.typestr = None;
        let msg = err(&d);
        assert!(
            msg.starts_with("__array_interface__ has no 'typestr' key"),
            "{msg}"
        );
        let mut d = dict(&[4], "<f8", 8);
        d.version = None;
        assert!(err(&d).contains("'version'"));
        d.version = Some(2);
        assert!(err(&d).contains("__array_interface__['version'] 2"));
        // Data-interface entries do not need a version.
        let info = d
            .parse_as(Interface::DataInterface, ArrayDevice::CPU)
            .unwrap();
        assert_eq!(info.interface, Interface::DataInterface);
    }

    #[test]
    fn value_errors_name_interface_and_key() {
        let check = |d: ArrayInterfaceDict, key: &str, needle: &str| {
            let msg = err(&d);
            assert!(
                msg.contains(&format!("__array_interface__['{key}']")),
                "{msg}"
            );
            assert!(msg.contains(needle), "{msg}");
        };
        check(dict(&[3, -1], "<f8", 8), "shape", "(3, -1)");
        check(dict(&[3], "|O", 8), "typestr", "\"|O\"");
        check(dict(&[3], "<U4", 8), "typestr", "not supported");
        let mut d = dict(&[3, 4], "<f8", 8);
        d.strides = Some(vec![8]);
        check(d, "strides", "one stride per axis");
        let mut d = dict(&[3], "<f8", 8);
        d.has_mask = true;
        check(d, "mask", "masked arrays");
        check(dict(&[3], "<f8", 0), "data", "null pointer");
        let mut d = dict(&[3], "<f8", 8);
        d.offset = Some(8);
        check(d, "offset", "pointer");
        let mut d = dict(&[3], "<f8", 8);
        d.descr = Some(vec![(String::new(), "<f4".into())]);
        check(d, "descr", "agreeing with the typestr");
        let mut d = dict(&[3], "|V8", 8);
        d.descr = Some(vec![("a".into(), "<f8".into())]);
        check(d, "typestr", "void");
        let mut d = dict(&[3], "<f8", 8);
        d.descr = Some(vec![("a".into(), "<f8".into())]);
        check(d, "descr", "structured");
    }

    #[test]
    fn overflowing_layouts_are_refused() {
        let mut d = dict(&[3, 3], "<f8", 1 << 20);
        d.strides = Some(vec![i64::MAX / 2, 8]);
        assert!(matches!(d.parse(), Err(Error::Overflow { .. })));
        let d = dict(&[i64::MAX, i64::MAX], "<f8", 8);
        assert!(matches!(d.parse(), Err(Error::Overflow { .. })));
        let d = dict(&[i64::MAX / 4], "<f8", 8);
        assert!(matches!(d.parse(), Err(Error::Overflow { .. })));
        let d = dict(&[4], "<f8", u64::MAX - 8);
        assert!(matches!(d.parse(), Err(Error::Overflow { .. })));
    }

    #[test]
    fn from_info_round_trips() {
        let mut d = dict(&[2, 3, 4], ">i2", 1 << 16);
        d.strides = Some(vec![2, 4, -12]);
        let info = d.parse().unwrap();
        let back = ArrayInterfaceDict::from_info(&info).unwrap();
        assert_eq!(back.typestr.as_deref(), Some(">i2"));
        assert_eq!(back.parse().unwrap(), info);
        let c = dict(&[2, 3], "<f4", 64).parse().unwrap();
        assert_eq!(ArrayInterfaceDict::from_info(&c).unwrap().strides, None);
    }

    #[test]
    fn data_interface_entries_keep_their_device() {
        let gpu = ArrayDevice {
            kind: DeviceKind::Cuda,
            id: None,
        };
        let info = dict(&[4], "<f4", 256)
            .parse_as(Interface::DataInterface, gpu)
            .unwrap();
        assert_eq!(info.device, gpu);
        let mut d = dict(&[-4], "<f4", 256);
        d.version = None;
        let msg = d
            .parse_as(Interface::DataInterface, gpu)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("__gt_data_interface__['shape']"), "{msg}");
    }
}
