//! Which interface describes an object's array when it offers several: the one rule of
//! precedence, and which of the other interfaces must then agree with it.
//!
//! The binding asks an object for each [`Source`] in [`ORDER`] (through [`first`], which stops
//! at the first one offered, so that interfaces after it are never looked up), parses that one,
//! then reads the [`cross_checks`] of it and refuses the object where they disagree.
//!
//! Why this order: NumPy's own struct needs no attribute lookup; a data interface is the
//! object's own statement about its storage (and carries dims, halo and callbacks), so it wins
//! over the plain interfaces; host memory is preferred to device memory; `__dlpack__` comes
//! last of the interfaces, since calling it hands out ownership of the tensor; the buffer
//! protocol says least (no device, no dims).

use crate::arrays::device::DeviceKind;

/// A way an object can describe its array, in the binding's words.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// NumPy's C struct: an exact `numpy.ndarray`, or a subclass that keeps NumPy's
    /// `__array_interface__` and has no data interface (consistent by construction).
    NdarrayStruct,
    /// The host entry (key `None` or `"cpu"`) of `__gt_data_interface__` (or the older
    /// `__gt_interface__`).
    DataInterfaceHost,
    /// `__array_interface__` (version 3).
    ArrayInterface,
    /// The GPU entry (key `"gpu"` or `"cuda"`) of the data interface.
    DataInterfaceGpu,
    /// A data interface with neither a host nor a GPU entry, on an object with no
    /// `__array_interface__`: chosen to refuse the object (the interface it declares describes
    /// nothing), rather than to fall through to the interfaces after it.
    DataInterfaceWithoutEntry,
    /// `__cuda_array_interface__` (versions 2 and 3).
    CudaArrayInterface,
    /// `__dlpack__` (a versioned capsule where the producer can make one, else a legacy one).
    DLPack,
    /// The Python buffer protocol.
    BufferProtocol,
}

/// The order in which the interfaces are tried: the first one an object offers describes its
/// array.
pub const ORDER: [Source; 8] = [
    Source::NdarrayStruct,
    Source::DataInterfaceHost,
    Source::ArrayInterface,
    Source::DataInterfaceGpu,
    Source::DataInterfaceWithoutEntry,
    Source::CudaArrayInterface,
    Source::DLPack,
    Source::BufferProtocol,
];

/// The first source in [`ORDER`] that `offers` says the object has; `None` when it has none.
/// `offers` is asked in order and not after the first `true`, so a caller may look the
/// interfaces up lazily (and keep what it looked up); its first error is returned.
#[inline]
pub fn first<E>(mut offers: impl FnMut(Source) -> Result<bool, E>) -> Result<Option<Source>, E> {
    for source in ORDER {
        if offers(source)? {
            return Ok(Some(source));
        }
    }
    Ok(None)
}

/// The other interfaces that, where the object also offers them, are read besides `primary`
/// and must describe the same array (where one says read-only, the array is read-only), in the
/// order they are checked.
///
/// `entry_has_callbacks`: whether the data-interface entry that is `primary` has an `acquire`,
/// `touch` or `release` callback. Memory managed by them is accessed only through them, so the
/// plain `__array_interface__` is then not read (a plain read of a mirrored field syncs and
/// marks its host side modified, which would dirty every input of a stencil).
///
/// The buffer protocol is checked only where [`checks_buffer`] says so.
pub fn cross_checks(primary: Source, entry_has_callbacks: bool) -> &'static [Source] {
    use Source::*;
    match primary {
        DataInterfaceHost if entry_has_callbacks => &[BufferProtocol],
        DataInterfaceHost => &[ArrayInterface, BufferProtocol],
        ArrayInterface | CudaArrayInterface | DLPack => &[BufferProtocol],
        DataInterfaceGpu => &[CudaArrayInterface, BufferProtocol],
        NdarrayStruct | DataInterfaceWithoutEntry | BufferProtocol => &[],
    }
}

/// Whether the object's buffer protocol is read to check a description of memory on `device`:
/// only for host memory, and not when an interface already read its memory through the
/// object's own buffer (which then need not describe the array the same way).
pub fn checks_buffer(device: DeviceKind, read_through_buffer: bool) -> bool {
    device == DeviceKind::Cpu && !read_through_buffer
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first of `offered` by the rule.
    fn pick(offered: &[Source]) -> Option<Source> {
        first(|s| Ok::<_, ()>(offered.contains(&s))).unwrap()
    }

    #[test]
    fn the_order_is_the_documented_one() {
        use Source::*;
        assert_eq!(pick(&ORDER), Some(NdarrayStruct));
        assert_eq!(pick(&ORDER[1..]), Some(DataInterfaceHost));
        // A data interface's host entry wins over every plain interface.
        assert_eq!(
            pick(&[
                BufferProtocol,
                DLPack,
                CudaArrayInterface,
                ArrayInterface,
                DataInterfaceHost
            ]),
            Some(DataInterfaceHost)
        );
        // Host memory before device memory: the array interface before a GPU entry.
        assert_eq!(
            pick(&[DataInterfaceGpu, ArrayInterface]),
            Some(ArrayInterface)
        );
        assert_eq!(
            pick(&[CudaArrayInterface, DataInterfaceGpu]),
            Some(DataInterfaceGpu)
        );
        // A data interface with no usable entry refuses the object before the CUDA array
        // interface, DLPack or the buffer protocol are asked.
        assert_eq!(
            pick(&[
                BufferProtocol,
                DLPack,
                CudaArrayInterface,
                DataInterfaceWithoutEntry
            ]),
            Some(DataInterfaceWithoutEntry)
        );
        assert_eq!(
            pick(&[BufferProtocol, DLPack, CudaArrayInterface]),
            Some(CudaArrayInterface)
        );
        assert_eq!(pick(&[BufferProtocol, DLPack]), Some(DLPack));
        assert_eq!(pick(&[BufferProtocol]), Some(BufferProtocol));
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn first_stops_at_the_first_offered_and_passes_errors() {
        let mut asked = Vec::new();
        let got = first(|s| {
            asked.push(s);
            Ok::<_, ()>(s == Source::ArrayInterface)
        });
        assert_eq!(got, Ok(Some(Source::ArrayInterface)));
        assert_eq!(asked, ORDER[..3]);
        let err = first(|s| match s {
            Source::DataInterfaceHost => Err("broken"),
            _ => Ok(false),
        });
        assert_eq!(err, Err("broken"));
    }

    #[test]
    fn cross_checks_follow_the_primary() {
        use Source::*;
        assert_eq!(
            cross_checks(DataInterfaceHost, false),
            &[ArrayInterface, BufferProtocol]
        );
        assert_eq!(cross_checks(DataInterfaceHost, true), &[BufferProtocol]);
        assert_eq!(
            cross_checks(DataInterfaceGpu, false),
            &[CudaArrayInterface, BufferProtocol]
        );
        assert_eq!(cross_checks(ArrayInterface, false), &[BufferProtocol]);
        assert_eq!(cross_checks(DLPack, false), &[BufferProtocol]);
        assert!(cross_checks(NdarrayStruct, false).is_empty());
        assert!(cross_checks(BufferProtocol, false).is_empty());
        assert!(checks_buffer(DeviceKind::Cpu, false));
        assert!(!checks_buffer(DeviceKind::Cpu, true));
        assert!(!checks_buffer(DeviceKind::Cuda, false));
    }
}
