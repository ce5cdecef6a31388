//! Numba's `__cuda_array_interface__` (versions 2 and 3): a description of CUDA device memory.
//!
//! Parsing never touches the memory; the result says where it is, on [`DeviceKind::Cuda`], and
//! which stream the producer last used it on.
//!
//! ```
//! use gridbuf::arrays::interface::CudaArrayInterfaceDict;
//! let dict = CudaArrayInterfaceDict {
//!     version: Some(3),
//!     shape: Some(vec![8, 8]),
//!     typestr: Some("<f4".into()),
//!     data: Some((0x7f00_0000_0000, false)),
//!     stream: Some(1),
//!     ..Default::default()
//! };
//! let info = dict.parse()?;
//! assert_eq!((info.strides.clone(), info.stream), (vec![32, 4], Some(1)));
//! # Ok::<(), gridbuf::Error>(())
//! ```

use super::array_interface::export_layout;
use super::fields::{missing, parse_layout, parse_pointer};
use crate::arrays::array_info::{ArrayDevice, ArrayInfo, DeviceKind, Interface};
use crate::error::{Error, Result};

/// The newest version of the CUDA array interface this module reads (2 is read as well).
pub const CUDA_ARRAY_INTERFACE_VERSION: i64 = 3;

/// `stream` value naming CUDA's legacy default stream.
pub const LEGACY_DEFAULT_STREAM: i64 = 1;

/// `stream` value naming CUDA's per-thread default stream.
pub const PER_THREAD_DEFAULT_STREAM: i64 = 2;

/// The contents of a `__cuda_array_interface__` dict, as plain Rust values.
///
/// `None` means the key is absent (or `None` in Python, for optional keys). `version`, `shape`,
/// `typestr` and `data` are required.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaArrayInterfaceDict {
    /// `version`: 2 or 3.
    pub version: Option<i64>,
    /// `shape`: one extent per axis.
    pub shape: Option<Vec<i64>>,
    /// `typestr`, such as `"<f4"`.
    pub typestr: Option<String>,
    /// `descr` as `(name, typestr)` pairs; when given it must be `[("", typestr)]`.
    pub descr: Option<Vec<(String, String)>>,
    /// `data`: the `(device pointer, read_only)` tuple; the pointer may be 0 for empty arrays.
    pub data: Option<(u64, bool)>,
    /// `strides` in bytes; `None` means C order.
    pub strides: Option<Vec<i64>>,
    /// Whether `mask` is present and not `None` (masked arrays are refused).
    pub has_mask: bool,
    /// `stream` (version 3): `None` when no synchronisation is needed, 1 for the legacy
    /// default stream, 2 for the per-thread default stream, else a `cudaStream_t` handle.
    /// 0 is disallowed by the specification, being ambiguous.
    pub stream: Option<i64>,
}

impl CudaArrayInterfaceDict {
    /// Checks the values and describes the device array. The device number is unknown (the
    /// pointer's CUDA context decides), so the result's `device.id` is `None`.
    pub fn parse(&self) -> Result<ArrayInfo> {
        let interface = Interface::CudaArrayInterface;
        match self.version {
            None => {
                return Err(missing(
                    interface,
                    "version",
                    "the interface version, 2 or 3",
                ))
            }
            Some(2 | 3) => {}
            Some(v) => {
                return Err(Error::invalid(
                    interface.field("version"),
                    v,
                    "expected version 2 or 3, the ones gridbuf reads",
                ))
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
        let (ptr, readonly) = self
            .data
            .ok_or_else(|| missing(interface, "data", "a (device pointer, read_only) tuple"))?;
        match self.stream {
            Some(0) => {
                return Err(Error::invalid(
                    interface.field("stream"),
                    0,
                    "0 is disallowed by the specification because it is ambiguous; expected \
                     None, 1 (legacy default stream), 2 (per-thread default stream) or a stream \
                     handle",
                ))
            }
            Some(s) if s < 0 => {
                return Err(Error::invalid(
                    interface.field("stream"),
                    s,
                    "expected None, 1 (legacy default stream), 2 (per-thread default stream) or \
                     a positive stream handle",
                ))
            }
            _ => {}
        }
        let device = ArrayDevice {
            kind: DeviceKind::Cuda,
            id: None,
        };
        let mut info = ArrayInfo::new(
            parse_pointer(interface, ptr)?,
            layout.shape,
            layout.strides,
            layout.dtype,
            device,
            interface,
        )?;
        info.readonly = readonly;
        info.stream = self.stream;
        Ok(info)
    }

    /// The version 3 `__cuda_array_interface__` describing `info` (whose device should be a
    /// CUDA one): `strides` `None` when exactly C order, `stream` from `info`. Fails only for an
    /// extent that does not fit an `i64`.
    pub fn from_info(info: &ArrayInfo) -> Result<CudaArrayInterfaceDict> {
        let (shape, strides) = export_layout(info)?;
        let typestr = info.dtype.to_typestr();
        Ok(CudaArrayInterfaceDict {
            version: Some(CUDA_ARRAY_INTERFACE_VERSION),
            shape: Some(shape),
            descr: Some(vec![(String::new(), typestr.clone())]),
            typestr: Some(typestr),
            // usize is at most 64 bits wide on every supported platform.
            data: Some((info.ptr as u64, info.readonly)),
            strides,
            has_mask: false,
            stream: info.stream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::array_info::DType;

    fn dict(shape: &[i64], typestr: &str, ptr: u64) -> CudaArrayInterfaceDict {
        CudaArrayInterfaceDict {
            version: Some(3),
            shape: Some(shape.to_vec()),
            typestr: Some(typestr.to_owned()),
            data: Some((ptr, false)),
            ..Default::default()
        }
    }

    fn err(d: &CudaArrayInterfaceDict) -> String {
        d.parse().unwrap_err().to_string()
    }

    #[test]
    fn describes_device_memory() {
        let mut d = dict(&[4, 5], "<c8", 1 << 40);
        d.strides = Some(vec![8, 32]);
        d.data = Some((1 << 40, true));
        d.stream = Some(0x5555_0000);
        let info = d.parse().unwrap();
        assert_eq!(info.device.kind, DeviceKind::Cuda);
        assert_eq!(info.device.id, None);
        assert_eq!(info.dtype, DType::COMPLEX64);
        assert!(info.is_f_contiguous() && info.readonly);
        assert_eq!(info.stream, Some(0x5555_0000));
        assert_eq!(info.interface, Interface::CudaArrayInterface);
        // A device array cannot be viewed from the host.
        // SAFETY: refused before any memory is touched.
        assert!(unsafe { info.as_array_view::<f32>() }.is_err());
    }

    #[test]
    fn versions_and_streams() {
        let mut d = dict(&[2], "<f8", 256);
        d.version = Some(2);
        d.parse().unwrap();
        for stream in [
            None,
            Some(LEGACY_DEFAULT_STREAM),
            Some(PER_THREAD_DEFAULT_STREAM),
        ] {
            d.stream = stream;
            assert_eq!(d.parse().unwrap().stream, stream);
        }
        d.stream = Some(0);
        let msg = err(&d);
        assert!(
            msg.contains("__cuda_array_interface__['stream'] 0"),
            "{msg}"
        );
        assert!(msg.contains("ambiguous"), "{msg}");
        d.stream = Some(-3);
        assert!(err(&d).contains("positive stream handle"));
        d.stream = None;
        for bad in [0, 1, 4] {
            d.version = Some(bad);
            assert!(err(&d).contains("__cuda_array_interface__['version']"));
        }
        d.version = None;
        assert!(matches!(d.parse(), Err(Error::MissingKey { ref key, .. }) if key == "version"));
    }

    #[test]
    fn value_errors_name_interface_and_key() {
        let check = |d: CudaArrayInterfaceDict, key: &str, needle: &str| {
            let msg = err(&d);
            assert!(
                msg.contains(&format!("__cuda_array_interface__['{key}']"))
                    || msg.starts_with(&format!("__cuda_array_interface__ has no '{key}'")),
                "{msg}"
            );
            assert!(msg.contains(needle), "{msg}");
        };
        check(dict(&[2, -2], "<f8", 256), "shape", "non-negative");
        check(dict(&[2], "|O", 256), "typestr", "object");
        check(dict(&[2], "<f8", 0), "data", "null pointer");
        let mut d = dict(&[2], "<f8", 256);
        d.data = None;
        check(d, "data", "device pointer");
        let mut d = dict(&[2], "<f8", 256);
        d.shape = None;
        check(d, "shape", "extents");
        let mut d = dict(&[2], "<f8", 256);
        d.typestr = None;
        check(d, "typestr", "typestr");
        let mut d = dict(&[2, 2], "<f8", 256);
        d.strides = Some(vec![8, 8, 8]);
        check(d, "strides", "one stride per axis");
        let mut d = dict(&[2], "<f8", 256);
        d.has_mask = true;
        check(d, "mask", "masked");
        let mut d = dict(&[3, 3], "<f8", 1 << 20);
        d.strides = Some(vec![i64::MIN, 8]);
        assert!(matches!(d.parse(), Err(Error::Overflow { .. })));
        // Empty arrays may have a null pointer.
        dict(&[0], "<f8", 0).parse().unwrap();
    }

    #[test]
    fn from_info_round_trips() {
        let mut d = dict(&[3, 4], ">f8", 1 << 33);
        d.strides = Some(vec![-8, 24]);
        d.stream = Some(2);
        let info = d.parse().unwrap();
        assert_eq!(
            CudaArrayInterfaceDict::from_info(&info)
                .unwrap()
                .parse()
                .unwrap(),
            info
        );
    }
}
