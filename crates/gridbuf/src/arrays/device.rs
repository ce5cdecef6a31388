//! Devices: where an array's memory lives ([`DeviceKind`]) and which device it is
//! ([`ArrayDevice`]).

use crate::allocation::preset::Device;
use std::fmt;

/// Where an array's memory lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// Host memory.
    Cpu,
    /// CUDA device memory.
    Cuda,
    /// Page-locked host memory from `cudaMallocHost`, readable by host and device.
    CudaHost,
    /// CUDA managed (unified) memory from `cudaMallocManaged`, readable by host and device.
    CudaManaged,
    /// ROCm (HIP) device memory.
    Rocm,
    /// Page-locked host memory from `hipMallocHost`.
    RocmHost,
}

impl DeviceKind {
    /// A short lower-case name: `cpu`, `cuda`, `cuda_host`, `cuda_managed`, `rocm`, `rocm_host`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::CudaHost => "cuda_host",
            DeviceKind::CudaManaged => "cuda_managed",
            DeviceKind::Rocm => "rocm",
            DeviceKind::RocmHost => "rocm_host",
        }
    }
}

/// The device an array lives on: a kind and, where the interface says, a device number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayDevice {
    /// The kind of memory.
    pub kind: DeviceKind,
    /// The device number; `None` where the interface does not say (the CUDA array interface
    /// leaves it to the pointer's context).
    pub id: Option<i32>,
}

impl ArrayDevice {
    /// Host memory, device 0.
    pub const CPU: ArrayDevice = ArrayDevice {
        kind: DeviceKind::Cpu,
        id: Some(0),
    };

    /// Whether host code may dereference the memory: plain, page-locked and managed memory.
    ///
    /// Managed memory must not be touched by the host while a kernel uses it; that is part of
    /// the caller's promise in [`ArrayInfo::as_array_view`](crate::arrays::array_info::ArrayInfo::as_array_view).
    pub fn is_host_accessible(self) -> bool {
        matches!(
            self.kind,
            DeviceKind::Cpu | DeviceKind::CudaHost | DeviceKind::CudaManaged | DeviceKind::RocmHost
        )
    }

    /// Whether a stencil compiled for `device` can address this memory directly: host-readable
    /// memory for [`Device::Cpu`]; device, managed and page-locked memory for [`Device::Gpu`].
    pub fn accessible_from(self, device: Device) -> bool {
        match device {
            Device::Cpu => self.is_host_accessible(),
            Device::Gpu => !matches!(self.kind, DeviceKind::Cpu),
        }
    }
}

impl fmt::Display for ArrayDevice {
    /// `cpu:0`, `cuda:1`, or just `cuda` when the number is unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            Some(id) => write!(f, "{}:{id}", self.kind.name()),
            None => f.write_str(self.kind.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        let managed = ArrayDevice {
            kind: DeviceKind::CudaManaged,
            id: Some(1),
        };
        assert!(managed.accessible_from(Device::Cpu) && managed.accessible_from(Device::Gpu));
        assert!(!ArrayDevice::CPU.accessible_from(Device::Gpu));
        let cuda = ArrayDevice {
            kind: DeviceKind::Cuda,
            id: None,
        };
        assert!(!cuda.accessible_from(Device::Cpu));
        assert_eq!(cuda.to_string(), "cuda");
        assert_eq!(managed.to_string(), "cuda_managed:1");
    }
}
