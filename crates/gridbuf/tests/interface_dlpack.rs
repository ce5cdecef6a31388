//! `DLPackOwner` against a fake producer: the deleter runs exactly once, on any thread, also
//! when the tensor is refused; flags and versions are honoured; the memory reads back.

use gridbuf::arrays::array_info::{DType, DeviceKind};
use gridbuf::arrays::interface::dlpack::{
    device_type, type_code, DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_READ_ONLY,
};
use gridbuf::arrays::interface::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackOwner, DLPackVersion,
    DLTensor, DLPACK_VERSION,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the fake producer keeps alive for one export.
struct Producer {
    shape: Vec<i64>,
    strides: Vec<i64>,
    data: Vec<f64>,
    deleted: Arc<AtomicUsize>,
}

/// Builds the tensor over the producer's arrays; the producer is boxed, so they do not move.
fn tensor(ctx: &mut Producer, device_type: i32) -> DLTensor {
    DLTensor {
        data: ctx.data.as_mut_ptr().cast(),
        device: DLDevice {
            device_type,
            device_id: 0,
        },
        ndim: ctx.shape.len() as i32,
        dtype: DLDataType {
            code: type_code::FLOAT,
            bits: 64,
            lanes: 1,
        },
        shape: ctx.shape.as_mut_ptr(),
        strides: ctx.strides.as_mut_ptr(),
        byte_offset: 8,
    }
}

/// A 2 x 3 tensor viewing elements 1.. of `0, 1, ..., 6` with rows swapped (negative stride).
fn producer(deleted: &Arc<AtomicUsize>) -> Box<Producer> {
    Box::new(Producer {
        shape: vec![2, 3],
        strides: vec![-3, 1],
        data: (0..7).map(f64::from).collect(),
        deleted: Arc::clone(deleted),
    })
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    // SAFETY: `p` and its context were made by `Box::into_raw` in `export_versioned`.
    let managed = unsafe { Box::from_raw(p) };
    // SAFETY: as above.
    let ctx = unsafe { Box::from_raw(managed.manager_ctx.cast::<Producer>()) };
    ctx.deleted.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    // SAFETY: `p` and its context were made by `Box::into_raw` in `export_legacy`.
    let managed = unsafe { Box::from_raw(p) };
    // SAFETY: as above.
    let ctx = unsafe { Box::from_raw(managed.manager_ctx.cast::<Producer>()) };
    ctx.deleted.fetch_add(1, Ordering::SeqCst);
}

fn export_versioned(
    deleted: &Arc<AtomicUsize>,
    version: DLPackVersion,
    flags: u64,
    device_type: i32,
) -> *mut DLManagedTensorVersioned {
    let mut ctx = producer(deleted);
    // Element 4 is [0, 0]: rows start at 4 and 1 after moving back by the byte offset.
    let mut t = tensor(&mut ctx, device_type);
    t.byte_offset = 4 * 8;
    Box::into_raw(Box::new(DLManagedTensorVersioned {
        version,
        manager_ctx: Box::into_raw(ctx).cast::<c_void>(),
        deleter: Some(delete_versioned),
        flags,
        dl_tensor: t,
    }))
}

fn export_legacy(deleted: &Arc<AtomicUsize>) -> *mut DLManagedTensor {
    let mut ctx = producer(deleted);
    let mut t = tensor(&mut ctx, device_type::CPU);
    t.byte_offset = 4 * 8;
    Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: t,
        manager_ctx: Box::into_raw(ctx).cast::<c_void>(),
        deleter: Some(delete_legacy),
    }))
}

fn assert_send<T: Send>() {}

#[test]
fn owner_is_send() {
    assert_send::<DLPackOwner>();
}

#[test]
fn versioned_tensor_reads_back_and_is_deleted_once() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let raw = export_versioned(&deleted, DLPACK_VERSION, 0, device_type::CPU);
    // SAFETY: `raw` is a fresh export whose ownership passes to the owner.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    assert_eq!(owner.version(), Some(DLPACK_VERSION));
    assert!(!owner.is_readonly() && !owner.is_copied());
    let info = owner.array_info().unwrap();
    assert_eq!(info.dtype, DType::FLOAT64);
    assert_eq!(info.strides, vec![-24, 8]);
    assert!(!info.readonly);
    {
        // SAFETY: the owner keeps the producer's data alive and nothing else writes it.
        let view = unsafe { info.as_array_view::<f64>() }.unwrap();
        assert_eq!(
            view.iter().copied().collect::<Vec<_>>(),
            [4., 5., 6., 1., 2., 3.]
        );
    }
    {
        // SAFETY: as above, and no other view exists.
        let mut view = unsafe { info.as_array_view_mut::<f64>() }.unwrap();
        view[[1, 0]] = -1.0;
        assert_eq!(view[[1, 0]], -1.0);
    }
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn deleter_runs_on_another_thread() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let raw = export_versioned(&deleted, DLPACK_VERSION, 0, device_type::CPU);
    // SAFETY: as in the test above.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    std::thread::spawn(move || drop(owner)).join().unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn flags_are_honoured() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED;
    let raw = export_versioned(&deleted, DLPACK_VERSION, flags, device_type::CPU);
    // SAFETY: as above.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    assert!(owner.is_readonly() && owner.is_copied());
    let info = owner.array_info().unwrap();
    assert!(info.readonly);
    // SAFETY: refused before any memory is touched.
    let err = unsafe { info.as_array_view_mut::<f64>() }.unwrap_err();
    assert!(err.to_string().contains("writable"), "{err}");
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn unknown_major_version_is_refused_but_still_deleted() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let v2 = DLPackVersion { major: 2, minor: 0 };
    let raw = export_versioned(&deleted, v2, 0, device_type::CPU);
    // SAFETY: as above.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    let msg = owner.array_info().unwrap_err().to_string();
    assert!(msg.contains("2.0") && msg.contains("DLPack 1.x"), "{msg}");
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn refused_device_is_still_deleted() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let raw = export_versioned(&deleted, DLPACK_VERSION, 0, device_type::METAL);
    // SAFETY: as above.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    let msg = owner.array_info().unwrap_err().to_string();
    assert!(msg.contains("8 (kDLMetal)"), "{msg}");
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn gpu_tensors_are_described_not_touched() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let raw = export_versioned(&deleted, DLPACK_VERSION, 0, device_type::CUDA);
    // SAFETY: as above.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    let info = owner.array_info().unwrap();
    assert_eq!(info.device.kind, DeviceKind::Cuda);
    // SAFETY: refused before any memory is touched.
    assert!(unsafe { info.as_array_view::<f64>() }.is_err());
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn legacy_tensor_reads_back_and_is_deleted_once() {
    let deleted = Arc::new(AtomicUsize::new(0));
    // SAFETY: a fresh export whose ownership passes to the owner.
    let owner = unsafe { DLPackOwner::from_legacy(export_legacy(&deleted)) }.unwrap();
    assert_eq!((owner.version(), owner.flags()), (None, 0));
    let info = owner.array_info().unwrap();
    assert!(!info.readonly);
    // SAFETY: the owner keeps the data alive; nothing writes it.
    let first = unsafe { info.as_array_view::<f64>() }.unwrap()[[0, 0]];
    assert_eq!(first, 4.0);
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn missing_deleter_is_allowed() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let raw = export_versioned(&deleted, DLPACK_VERSION, 0, device_type::CPU);
    // SAFETY: `raw` is valid; we clear its deleter and free it ourselves after the owner.
    unsafe { (*raw).deleter = None };
    // SAFETY: ownership passes to the owner until it is dropped below.
    let owner = unsafe { DLPackOwner::from_versioned(raw) }.unwrap();
    drop(owner);
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    // SAFETY: the owner is gone and did not free anything; release what we made.
    unsafe { delete_versioned(raw) };
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}
