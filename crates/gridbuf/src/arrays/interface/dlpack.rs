//! DLPack: the C structs of the DLPack 1.0 ABI, the conversion of a `DLTensor` into an
//! [`ArrayInfo`], and [`DLPackOwner`], which keeps a producer's memory alive and releases it.
//!
//! The structs are defined here rather than taken from a crate: `dlpack` 0.2 predates DLPack 1.0
//! (no versioned tensor, no flags), and `dlpark` needs a newer Rust than this workspace's minimum
//! and brings dependencies for what are six `#[repr(C)]` declarations.
//!
//! How the binding consumes a capsule from `obj.__dlpack__(max_version=(1, 0))`: take the
//! pointer out of a capsule named `"dltensor_versioned"` (or, from older producers that ignore
//! `max_version`, `"dltensor"`), rename the capsule to `"used_dltensor_versioned"` (or
//! `"used_dltensor"`) so that its destructor leaves the tensor alone, and hand the pointer to
//! [`DLPackOwner::from_versioned`] (or [`DLPackOwner::from_legacy`]). Keep the owner alive as long
//! as any view of the memory (for example as the `base` of a NumPy array); dropping it calls
//! the producer's deleter exactly once.

use crate::arrays::array_info::{
    c_strides, format_tuple, ArrayDevice, ArrayInfo, DType, DTypeKind, DeviceKind, Interface,
};
use crate::error::{Error, Result};
use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;

/// A DLPack ABI version: a major change alters the layout of [`DLManagedTensorVersioned`]
/// after its `flags`; a minor change only adds codes.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DLPackVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// The DLPack version whose layout this module declares; pass it as `max_version`.
pub const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };

/// Flag of [`DLManagedTensorVersioned::flags`]: the tensor must not be written.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// Flag of [`DLManagedTensorVersioned::flags`]: the producer copied the data for this export.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;

/// `DLDeviceType` codes (a C `int` enum, kept as plain integers so unknown values are safe).
pub mod device_type {
    /// `kDLCPU`: host memory.
    pub const CPU: i32 = 1;
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: i32 = 2;
    /// `kDLCUDAHost`: page-locked host memory (`cudaMallocHost`).
    pub const CUDA_HOST: i32 = 3;
    /// `kDLOpenCL`.
    pub const OPENCL: i32 = 4;
    /// `kDLVulkan`.
    pub const VULKAN: i32 = 7;
    /// `kDLMetal`.
    pub const METAL: i32 = 8;
    /// `kDLVPI`.
    pub const VPI: i32 = 9;
    /// `kDLROCM`: ROCm device memory.
    pub const ROCM: i32 = 10;
    /// `kDLROCMHost`: page-locked host memory (`hipMallocHost`).
    pub const ROCM_HOST: i32 = 11;
    /// `kDLExtDev`.
    pub const EXT_DEV: i32 = 12;
    /// `kDLCUDAManaged`: CUDA managed memory (`cudaMallocManaged`).
    pub const CUDA_MANAGED: i32 = 13;
    /// `kDLOneAPI`.
    pub const ONE_API: i32 = 14;
    /// `kDLWebGPU`.
    pub const WEBGPU: i32 = 15;
    /// `kDLHexagon`.
    pub const HEXAGON: i32 = 16;
    /// `kDLMAIA`.
    pub const MAIA: i32 = 17;
}

/// `DLDataTypeCode` values.
pub mod type_code {
    /// `kDLInt`: signed integer.
    pub const INT: u8 = 0;
    /// `kDLUInt`: unsigned integer.
    pub const UINT: u8 = 1;
    /// `kDLFloat`: IEEE float.
    pub const FLOAT: u8 = 2;
    /// `kDLOpaqueHandle`.
    pub const OPAQUE_HANDLE: u8 = 3;
    /// `kDLBfloat`: bfloat16.
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`: complex of two floats.
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`.
    pub const BOOL: u8 = 6;
}

/// A device: type code and number (`DLDevice`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// A [`device_type`] code.
    pub device_type: i32,
    /// Device number; 0 for host memory.
    pub device_id: i32,
}

/// An element type: code, bits and vector lanes (`DLDataType`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// A [`type_code`] value.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Vector lanes; 1 for scalars.
    pub lanes: u16,
}

/// A strided tensor that does not manage its memory (`DLTensor`).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct DLTensor {
    /// Start of the allocation (device pointer on GPUs); `byte_offset` leads to the element at
    /// index zero.
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of axes.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents; may be NULL when `ndim` is 0.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for C order (allowed before DLPack 1.2).
    pub strides: *mut i64,
    /// Bytes from `data` to the element at index zero.
    pub byte_offset: u64,
}

/// The pre-1.0 managed tensor, exported in capsules named `"dltensor"` (`DLManagedTensor`).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor and this struct; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// The DLPack 1.x managed tensor, exported in capsules named `"dltensor_versioned"`
/// (`DLManagedTensorVersioned`). Everything up to `flags` keeps its layout across major
/// versions, so the deleter can always be called.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The ABI version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor and this struct; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// Bit flags: [`DLPACK_FLAG_BITMASK_READ_ONLY`], [`DLPACK_FLAG_BITMASK_IS_COPIED`].
    pub flags: u64,
    /// The tensor (layout valid for major version 1 only).
    pub dl_tensor: DLTensor,
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<DLDevice>() == 8);
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLTensor>() == 48);
    assert!(offset_of!(DLTensor, shape) == 24);
    assert!(offset_of!(DLTensor, byte_offset) == 40);
    assert!(size_of::<DLManagedTensor>() == 64);
    assert!(offset_of!(DLManagedTensor, deleter) == 56);
    assert!(size_of::<DLManagedTensorVersioned>() == 80);
    assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
    assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};

/// Most axes a tensor may have: NumPy's limit, and a guard against reading garbage.
pub const MAX_NDIM: usize = 64;

/// The C name of a device type code, for messages.
pub fn device_type_name(code: i32) -> &'static str {
    use device_type::*;
    match code {
        CPU => "kDLCPU",
        CUDA => "kDLCUDA",
        CUDA_HOST => "kDLCUDAHost",
        OPENCL => "kDLOpenCL",
        VULKAN => "kDLVulkan",
        METAL => "kDLMetal",
        VPI => "kDLVPI",
        ROCM => "kDLROCM",
        ROCM_HOST => "kDLROCMHost",
        EXT_DEV => "kDLExtDev",
        CUDA_MANAGED => "kDLCUDAManaged",
        ONE_API => "kDLOneAPI",
        WEBGPU => "kDLWebGPU",
        HEXAGON => "kDLHexagon",
        MAIA => "kDLMAIA",
        _ => "unknown",
    }
}

impl DLDevice {
    /// The device in gridbuf's terms; fails for device types whose memory gridbuf cannot
    /// address (OpenCL, Vulkan, Metal, oneAPI, ...), naming the code.
    pub fn to_array_device(self) -> Result<ArrayDevice> {
        let kind = match self.device_type {
            device_type::CPU => DeviceKind::Cpu,
            device_type::CUDA => DeviceKind::Cuda,
            device_type::CUDA_HOST => DeviceKind::CudaHost,
            device_type::CUDA_MANAGED => DeviceKind::CudaManaged,
            device_type::ROCM => DeviceKind::Rocm,
            device_type::ROCM_HOST => DeviceKind::RocmHost,
            code => {
                return Err(crate::Error::value_shown(
                    Interface::DLPack.field("device.device_type"),
                    format!("{code} ({})", device_type_name(code)),
                    "expected kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3), kDLROCM (10), \
                     kDLROCMHost (11) or kDLCUDAManaged (13)",
                ))
            }
        };
        Ok(ArrayDevice {
            kind,
            id: Some(self.device_id),
        })
    }
}

impl DLDataType {
    /// The dtype in gridbuf's terms (DLPack data is always in native byte order). Fails for
    /// vector types (`lanes != 1`), bfloat16, opaque handles, sub-byte and 8-bit float types,
    /// and sizes the kind does not have.
    pub fn to_dtype(self) -> Result<DType> {
        let field = |key: &str| Interface::DLPack.field(key);
        if self.lanes != 1 {
            return Err(Error::invalid(
                field("dtype.lanes"),
                self.lanes,
                "vector types are not supported; expected 1 lane",
            ));
        }
        let kind = match self.code {
            type_code::INT => DTypeKind::Int,
            type_code::UINT => DTypeKind::UInt,
            type_code::FLOAT => DTypeKind::Float,
            type_code::COMPLEX => DTypeKind::Complex,
            type_code::BOOL => DTypeKind::Bool,
            code => {
                let what = match code {
                    type_code::BFLOAT => "bfloat16 (kDLBfloat)",
                    type_code::OPAQUE_HANDLE => "an opaque handle (kDLOpaqueHandle)",
                    7..=17 => "an 8-, 6- or 4-bit float",
                    _ => "an unknown type code",
                };
                return Err(crate::Error::value_shown(
                    field("dtype.code"),
                    format!("{code}, {what},"),
                    "expected a bool (6), int (0), uint (1), float (2) or complex (5) type",
                ));
            }
        };
        let bad_bits = || {
            Error::invalid(
                field("dtype.bits"),
                self.bits,
                format!(
                    "a {kind:?} element has one of the sizes {:?} in bytes, times 8 bits",
                    kind.valid_itemsizes()
                ),
            )
        };
        if self.bits % 8 != 0 {
            return Err(bad_bits());
        }
        DType::new(
            kind,
            usize::from(self.bits / 8),
            crate::arrays::array_info::ByteOrder::Native,
        )
        .map_err(|_| bad_bits())
    }

    /// The DLPack type of a native-order dtype; fails for non-native byte order, which DLPack
    /// cannot express.
    pub fn from_dtype(dtype: DType) -> Result<DLDataType> {
        if !dtype.is_native() {
            return Err(Error::invalid(
                "dtype",
                dtype.to_typestr(),
                "DLPack holds native byte order only; expected a native dtype",
            ));
        }
        let code = match dtype.kind() {
            DTypeKind::Bool => type_code::BOOL,
            DTypeKind::Int => type_code::INT,
            DTypeKind::UInt => type_code::UINT,
            DTypeKind::Float => type_code::FLOAT,
            DTypeKind::Complex => type_code::COMPLEX,
        };
        Ok(DLDataType {
            code,
            // Item sizes are at most 16 bytes, so the bit count fits a u8.
            bits: (dtype.itemsize() * 8) as u8,
            lanes: 1,
        })
    }
}

/// Describes the tensor `t` points to; `readonly` comes from the managed tensor's flags.
///
/// Strides given in elements become byte strides (checked); NULL strides mean C order;
/// `byte_offset` is added to `data`. Fails, naming the field, for a NULL `t`, a device or dtype
/// gridbuf cannot use, a negative or too large `ndim`, a NULL `shape` or `strides` pointer
/// misaligned, negative extents, arithmetic that overflows, and a NULL `data` for a non-empty
/// tensor. The memory itself is never read.
///
/// # Safety
///
/// `t` is NULL or points to a `DLTensor` that is valid for reads, and when `ndim > 0` its
/// non-NULL `shape` and `strides` point to `ndim` readable `i64` values each.
pub unsafe fn array_info_from_dltensor(t: *const DLTensor, readonly: bool) -> Result<ArrayInfo> {
    let iface = Interface::DLPack;
    // SAFETY: the caller guarantees `t` is NULL or valid for reads; `as_ref` checks NULL.
    let Some(t) = (unsafe { t.as_ref() }) else {
        return Err(crate::Error::value_shown(
            "__dlpack__ DLTensor",
            "a null pointer",
            "expected a tensor; a capsule that was consumed already holds none",
        ));
    };
    let device = t.device.to_array_device()?;
    let dtype = t.dtype.to_dtype()?;
    let ndim = usize::try_from(t.ndim)
        .ok()
        .filter(|&n| n <= MAX_NDIM)
        .ok_or_else(|| {
            Error::invalid(
                iface.field("ndim"),
                t.ndim,
                format!("expected 0 to {MAX_NDIM} axes"),
            )
        })?;
    // SAFETY: `shape` is checked non-NULL and aligned, and the caller guarantees it points to
    // `ndim` readable values.
    let raw_shape = unsafe { read_i64s(t.shape, ndim, "shape")? };
    let shape = raw_shape
        .iter()
        .map(|&n| {
            usize::try_from(n).map_err(|_| {
                crate::Error::value_shown(
                    iface.field("shape"),
                    format_tuple(raw_shape),
                    "extents must be non-negative",
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let itemsize = dtype.itemsize();
    let strides = if t.strides.is_null() {
        c_strides(&shape, itemsize)?
    } else {
        // SAFETY: as for `shape`.
        let raw = unsafe { read_i64s(t.strides, ndim, "strides")? };
        raw.iter()
            .map(|&s| {
                isize::try_from(s)
                    .ok()
                    .and_then(|s| s.checked_mul(itemsize as isize))
                    .ok_or_else(|| {
                        crate::Error::overflow_shown(
                            iface.field("strides"),
                            format_tuple(raw),
                            "a stride in bytes",
                        )
                    })
            })
            .collect::<Result<Vec<isize>>>()?
    };
    let ptr = usize::try_from(t.byte_offset)
        .ok()
        .and_then(|offset| t.data.expose_provenance().checked_add(offset))
        .ok_or_else(|| {
            crate::Error::overflow_shown(
                iface.field("byte_offset"),
                t.byte_offset.to_string(),
                "the data pointer plus the byte offset",
            )
        })?;
    let mut info = ArrayInfo::new(ptr, shape, strides, dtype, device, iface)?;
    info.readonly = readonly;
    Ok(info)
}

/// Reads `n` values from a `shape` or `strides` array; a NULL pointer is an error unless `n` is 0.
///
/// # Safety
///
/// A non-NULL `ptr` points to `n` readable `i64` values that outlive the returned slice's use.
unsafe fn read_i64s<'a>(ptr: *const i64, n: usize, key: &str) -> Result<&'a [i64]> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() || !ptr.is_aligned() {
        return Err(crate::Error::value_shown(
            Interface::DLPack.field(key),
            format!("{ptr:p}"),
            "expected a non-NULL, 8-byte aligned pointer to one value per axis",
        ));
    }
    // SAFETY: non-NULL and aligned (checked above); the caller guarantees `n` readable values.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// Which managed-tensor struct an owner holds.
enum Managed {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
}

/// Owns a managed DLPack tensor taken from a producer and calls its deleter exactly once, when
/// dropped. Keep it alive as long as any view of the memory.
pub struct DLPackOwner {
    managed: Managed,
}

// SAFETY: the owner holds the only reference to the managed tensor (ownership moved to it in
// `from_legacy`/`from_versioned`), it reads the struct only through `&self`, and the
// constructors' contract requires a deleter that may run on any thread (the Python producers'
// deleters acquire the GIL themselves).
unsafe impl Send for DLPackOwner {}

impl DLPackOwner {
    /// Takes ownership of a legacy (pre-1.0, `"dltensor"` capsule) managed tensor.
    ///
    /// Fails for a NULL pointer (nothing is owned then).
    ///
    /// # Safety
    ///
    /// `ptr` is NULL or points to a valid `DLManagedTensor` whose ownership passes to the
    /// returned owner: nothing else calls its deleter (the capsule was renamed to
    /// `"used_dltensor"`), the struct and the arrays it points to stay valid until the deleter
    /// runs, and the deleter may be called from any thread.
    pub unsafe fn from_legacy(ptr: *mut DLManagedTensor) -> Result<DLPackOwner> {
        NonNull::new(ptr)
            .map(|p| DLPackOwner {
                managed: Managed::Legacy(p),
            })
            .ok_or_else(null_managed)
    }

    /// Takes ownership of a DLPack 1.x (`"dltensor_versioned"` capsule) managed tensor. Any
    /// version is accepted here, so that the deleter runs; [`DLPackOwner::array_info`] refuses a
    /// major version other than 1.
    ///
    /// Fails for a NULL pointer (nothing is owned then).
    ///
    /// # Safety
    ///
    /// As for [`DLPackOwner::from_legacy`], with a `DLManagedTensorVersioned` and a capsule
    /// renamed to `"used_dltensor_versioned"`.
    pub unsafe fn from_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<DLPackOwner> {
        NonNull::new(ptr)
            .map(|p| DLPackOwner {
                managed: Managed::Versioned(p),
            })
            .ok_or_else(null_managed)
    }

    /// The producer's ABI version; `None` for a legacy tensor.
    pub fn version(&self) -> Option<DLPackVersion> {
        match self.managed {
            Managed::Legacy(_) => None,
            // SAFETY: the constructor's contract keeps the struct valid while we own it; the
            // version field's place is the same in every major version.
            Managed::Versioned(p) => Some(unsafe { p.as_ref() }.version),
        }
    }

    /// The flags of a versioned tensor; 0 for a legacy one.
    pub fn flags(&self) -> u64 {
        match self.managed {
            Managed::Legacy(_) => 0,
            // SAFETY: as in `version`; `flags` also keeps its place across major versions.
            Managed::Versioned(p) => unsafe { p.as_ref() }.flags,
        }
    }

    /// Whether the producer forbids writing (the read-only flag; legacy tensors have no such
    /// flag and producers only export writable memory through them).
    pub fn is_readonly(&self) -> bool {
        self.flags() & DLPACK_FLAG_BITMASK_READ_ONLY != 0
    }

    /// Whether the producer copied the data for this export.
    pub fn is_copied(&self) -> bool {
        self.flags() & DLPACK_FLAG_BITMASK_IS_COPIED != 0
    }

    /// The tensor; fails for a versioned tensor whose major version is not 1, since its
    /// layout after `flags` is unknown.
    pub fn tensor(&self) -> Result<&DLTensor> {
        match self.managed {
            // SAFETY: the constructor's contract keeps the struct valid while we own it.
            Managed::Legacy(p) => Ok(&unsafe { p.as_ref() }.dl_tensor),
            Managed::Versioned(p) => {
                // SAFETY: as above; the version is read before anything layout-dependent.
                let managed = unsafe { p.as_ref() };
                if managed.version.major != DLPACK_VERSION.major {
                    return Err(crate::Error::value_shown(
                        "__dlpack__ version",
                        format!("{}.{}", managed.version.major, managed.version.minor),
                        "expected a DLPack 1.x tensor",
                    ));
                }
                Ok(&managed.dl_tensor)
            }
        }
    }

    /// Describes the owned tensor, read-only when the flags say so.
    pub fn array_info(&self) -> Result<ArrayInfo> {
        let tensor = self.tensor()?;
        // SAFETY: the constructor's contract makes the tensor and its shape and strides arrays
        // valid while we own it.
        unsafe { array_info_from_dltensor(tensor, self.is_readonly()) }
    }
}

fn null_managed() -> Error {
    crate::Error::value_shown(
        "__dlpack__ capsule",
        "a null pointer",
        "expected a managed tensor; a capsule that was consumed already holds none",
    )
}

impl Drop for DLPackOwner {
    fn drop(&mut self) {
        match self.managed {
            Managed::Legacy(p) => {
                // SAFETY: the struct is valid until its deleter runs, which happens only here,
                // once, since `drop` runs once and ownership was transferred to us.
                if let Some(deleter) = unsafe { p.as_ref() }.deleter {
                    // SAFETY: as above; the deleter frees the struct, which we never touch again.
                    unsafe { deleter(p.as_ptr()) }
                }
            }
            Managed::Versioned(p) => {
                // SAFETY: as for the legacy struct; `deleter` keeps its place in every version.
                if let Some(deleter) = unsafe { p.as_ref() }.deleter {
                    // SAFETY: as above.
                    unsafe { deleter(p.as_ptr()) }
                }
            }
        }
    }
}

impl fmt::Debug for DLPackOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ptr: *const c_void = match self.managed {
            Managed::Legacy(p) => p.as_ptr().cast(),
            Managed::Versioned(p) => p.as_ptr().cast(),
        };
        f.debug_struct("DLPackOwner")
            .field("managed", &ptr)
            .field("version", &self.version())
            .field("flags", &self.flags())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tensor over caller-owned arrays.
    fn tensor(shape: &mut [i64], strides: Option<&mut [i64]>, data: usize) -> DLTensor {
        DLTensor {
            data: std::ptr::with_exposed_provenance_mut(data),
            device: DLDevice {
                device_type: device_type::CPU,
                device_id: 0,
            },
            ndim: shape.len() as i32,
            dtype: DLDataType {
                code: type_code::FLOAT,
                bits: 64,
                lanes: 1,
            },
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        }
    }

    fn info(t: &DLTensor) -> Result<ArrayInfo> {
        // SAFETY: every test tensor points to live shape and strides arrays.
        unsafe { array_info_from_dltensor(t, false) }
    }

    #[test]
    fn c_order_and_explicit_strides() {
        let mut shape = [3, 4];
        let t = tensor(&mut shape, None, 4096);
        let i = info(&t).unwrap();
        assert_eq!(
            (i.shape.clone(), i.strides.clone()),
            (vec![3, 4], vec![32, 8])
        );
        assert_eq!(
            (i.device, i.interface, i.readonly),
            (ArrayDevice::CPU, Interface::DLPack, false)
        );
        let mut strides = [1, -3];
        let mut t = tensor(&mut shape, Some(&mut strides), 4096);
        t.byte_offset = 72;
        t.dtype = DLDataType {
            code: type_code::INT,
            bits: 16,
            lanes: 1,
        };
        let i = info(&t).unwrap();
        assert_eq!(i.strides, vec![2, -6]);
        assert_eq!(i.ptr, 4096 + 72);
        assert_eq!(i.dtype, DType::INT16);
        // SAFETY: as in `info`.
        let parsed = unsafe { array_info_from_dltensor(&t, true) };
        assert!(parsed.unwrap().readonly);
        // A scalar needs no shape pointer.
        let mut t = tensor(&mut [], None, 64);
        t.shape = std::ptr::null_mut();
        assert_eq!(info(&t).unwrap().ndim(), 0);
    }

    #[test]
    fn devices() {
        let mut shape = [2];
        let mut t = tensor(&mut shape, None, 4096);
        for (code, kind) in [
            (device_type::CUDA, DeviceKind::Cuda),
            (device_type::CUDA_HOST, DeviceKind::CudaHost),
            (device_type::CUDA_MANAGED, DeviceKind::CudaManaged),
            (device_type::ROCM, DeviceKind::Rocm),
            (device_type::ROCM_HOST, DeviceKind::RocmHost),
        ] {
            t.device = DLDevice {
                device_type: code,
                device_id: 3,
            };
            let d = info(&t).unwrap().device;
            assert_eq!((d.kind, d.id), (kind, Some(3)));
        }
        for bad in [
            device_type::OPENCL,
            device_type::METAL,
            device_type::ONE_API,
            0,
            99,
        ] {
            t.device.device_type = bad;
            let msg = info(&t).unwrap_err().to_string();
            assert!(
                msg.contains("__dlpack__ DLTensor.device.device_type"),
                "{msg}"
            );
            assert!(msg.contains(&format!(" {bad} (")), "{msg}");
        }
        t.device.device_type = device_type::VULKAN;
        assert!(info(&t).unwrap_err().to_string().contains("kDLVulkan"));
    }

    #[test]
    fn dtypes() {
        let ok = [
            (type_code::BOOL, 8, DType::BOOL),
            (type_code::INT, 8, DType::INT8),
            (type_code::INT, 64, DType::INT64),
            (type_code::UINT, 32, DType::UINT32),
            (type_code::FLOAT, 16, DType::FLOAT16),
            (type_code::FLOAT, 32, DType::FLOAT32),
            (type_code::COMPLEX, 64, DType::COMPLEX64),
            (type_code::COMPLEX, 128, DType::COMPLEX128),
        ];
        for (code, bits, dtype) in ok {
            let dl = DLDataType {
                code,
                bits,
                lanes: 1,
            };
            assert_eq!(dl.to_dtype().unwrap(), dtype);
            assert_eq!(DLDataType::from_dtype(dtype).unwrap(), dl);
        }
        let bad = |code, bits, lanes, needle: &str| {
            let msg = DLDataType { code, bits, lanes }
                .to_dtype()
                .unwrap_err()
                .to_string();
            assert!(msg.contains(needle), "{msg}");
        };
        bad(type_code::FLOAT, 32, 4, "DLTensor.dtype.lanes 4");
        bad(type_code::FLOAT, 32, 0, "DLTensor.dtype.lanes 0");
        bad(type_code::BFLOAT, 16, 1, "bfloat16");
        bad(type_code::OPAQUE_HANDLE, 64, 1, "opaque");
        bad(10, 8, 1, "8-, 6- or 4-bit float");
        bad(200, 8, 1, "DLTensor.dtype.code 200");
        bad(type_code::BOOL, 1, 1, "DLTensor.dtype.bits 1");
        bad(type_code::INT, 24, 1, "DLTensor.dtype.bits 24");
        bad(type_code::FLOAT, 128, 1, "DLTensor.dtype.bits 128");
        let swapped = DType::from_typestr(
            if cfg!(target_endian = "little") {
                ">f8"
            } else {
                "<f8"
            },
            Interface::Native,
        )
        .unwrap();
        assert!(DLDataType::from_dtype(swapped).is_err());
    }

    #[test]
    fn bad_tensors_name_the_field() {
        // SAFETY: NULL is allowed by the contract.
        let msg = unsafe { array_info_from_dltensor(std::ptr::null(), false) }
            .unwrap_err()
            .to_string();
        assert!(msg.contains("consumed"), "{msg}");
        let mut shape = [3, -1];
        let t = tensor(&mut shape, None, 4096);
        assert!(info(&t)
            .unwrap_err()
            .to_string()
            .contains("DLTensor.shape (3, -1)"));
        let mut shape = [3, 4];
        let mut t = tensor(&mut shape, None, 4096);
        t.ndim = -1;
        assert!(info(&t)
            .unwrap_err()
            .to_string()
            .contains("DLTensor.ndim -1"));
        t.ndim = 65;
        assert!(info(&t).unwrap_err().to_string().contains("0 to 64"));
        t.ndim = 2;
        t.shape = std::ptr::null_mut();
        assert!(info(&t).unwrap_err().to_string().contains("DLTensor.shape"));
        let mut t = tensor(&mut shape, None, 0);
        assert!(info(&t).unwrap_err().to_string().contains("null pointer"));
        t.data = std::ptr::with_exposed_provenance_mut(usize::MAX - 4);
        t.byte_offset = 8;
        assert!(matches!(info(&t), Err(Error::Overflow { .. })));
        let mut strides = [i64::MAX, 1];
        let t = tensor(&mut shape, Some(&mut strides), 4096);
        assert!(info(&t)
            .unwrap_err()
            .to_string()
            .contains("DLTensor.strides"));
        // An empty tensor may have a NULL data pointer.
        let mut empty = [0, 4];
        info(&tensor(&mut empty, None, 0)).unwrap();
    }

    #[test]
    fn null_managed_tensors_are_refused() {
        // SAFETY: NULL is allowed by the contract.
        assert!(unsafe { DLPackOwner::from_legacy(std::ptr::null_mut()) }.is_err());
        // SAFETY: as above.
        let err = unsafe { DLPackOwner::from_versioned(std::ptr::null_mut()) }.unwrap_err();
        assert!(err.to_string().contains("consumed"));
    }
}
