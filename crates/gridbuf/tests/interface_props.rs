//! Properties of the interface parsers and of `ArrayInfo`: random layouts round-trip through the
//! array interfaces and DLPack, interfaces of one array agree, spans match a brute-force walk,
//! and `ndarray` views read (and write) exactly the elements the strides name.

use gridbuf::arrays::array_info::{c_strides, ArrayDevice, ArrayInfo, DType, Interface};
use gridbuf::arrays::interface::dlpack::{device_type, type_code};
use gridbuf::arrays::interface::{
    array_info_from_dltensor, ArrayInterfaceDict, CudaArrayInterfaceDict, DLDataType, DLDevice,
    DLTensor, DataField,
};
use ndarray::Dimension;
use proptest::prelude::*;
use std::collections::HashSet;

const TYPESTRS: [&str; 14] = [
    "|b1", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", ">u8", "<f2", "<f4", ">f8", "<c8",
    ">c16",
];

/// Every multi-index of `shape`, in C order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &n in shape {
        all = all
            .into_iter()
            .flat_map(|idx| {
                (0..n).map(move |i| {
                    let mut next = idx.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    all
}

/// Offset of `idx` in units of the strides.
fn offset(idx: &[usize], strides: &[isize]) -> isize {
    idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum()
}

/// Shape, optional byte strides, typestr, pointer offset and read-only flag.
fn layout_case() -> impl Strategy<Value = (Vec<usize>, Option<Vec<i64>>, &'static str, u64, bool)> {
    (0usize..=4).prop_flat_map(|ndim| {
        (
            prop::collection::vec(0usize..6, ndim),
            prop::option::of(prop::collection::vec(-64i64..64, ndim)),
            prop::sample::select(TYPESTRS.to_vec()),
            0u64..(1 << 20),
            any::<bool>(),
        )
    })
}

/// Shape and element strides (negative and zero included).
fn view_case() -> impl Strategy<Value = (Vec<usize>, Vec<isize>)> {
    (0usize..=4).prop_flat_map(|ndim| {
        (
            prop::collection::vec(0usize..5, ndim),
            prop::collection::vec(-6isize..=6, ndim),
        )
    })
}

/// A buffer of `T` covering every element of a layout, and the index of element zero in it.
fn backing(shape: &[usize], strides: &[isize]) -> (usize, usize) {
    if shape.contains(&0) {
        return (0, 0);
    }
    let (mut low, mut high) = (0isize, 0isize);
    for (&n, &s) in shape.iter().zip(strides) {
        let reach = (n as isize - 1) * s;
        low += reach.min(0);
        high += reach.max(0);
    }
    ((high - low + 1) as usize, (-low) as usize)
}

proptest! {
    #[test]
    fn array_interface_round_trips(
        (shape, strides, typestr, off, readonly) in layout_case()
    ) {
        let ptr = (1u64 << 32) + off;
        let dict = ArrayInterfaceDict {
            version: Some(3),
            shape: Some(shape.iter().map(|&n| n as i64).collect()),
            typestr: Some(typestr.to_owned()),
            data: DataField::Pointer { ptr, readonly },
            strides: strides.clone(),
            ..Default::default()
        };
        let info = dict.parse().unwrap();
        let dtype = DType::from_typestr(typestr, Interface::ArrayInterface).unwrap();
        prop_assert_eq!(info.dtype, dtype);
        prop_assert_eq!(info.dtype.to_typestr(), typestr);
        prop_assert_eq!(&info.shape, &shape);
        let expected: Vec<isize> = match &strides {
            Some(s) => s.iter().map(|&s| s as isize).collect(),
            None => c_strides(&shape, dtype.itemsize()).unwrap(),
        };
        prop_assert_eq!(&info.strides, &expected);
        prop_assert_eq!((info.ptr as u64, info.readonly), (ptr, readonly));
        if strides.is_none() {
            prop_assert!(info.is_c_contiguous());
        }
        // Reflexive agreement, and exact round trips through both dict forms.
        info.agrees_with(&info).unwrap();
        let back = ArrayInterfaceDict::from_info(&info).unwrap().parse().unwrap();
        prop_assert_eq!(&back, &info);
        let cuda = CudaArrayInterfaceDict::from_info(&info).unwrap().parse().unwrap();
        prop_assert_eq!(cuda.interface, Interface::CudaArrayInterface);
        info.agrees_with(&cuda).unwrap();
        cuda.agrees_with(&info).unwrap();
    }

    #[test]
    fn span_matches_a_brute_force_walk(
        (shape, strides, typestr, _off, _ro) in layout_case()
    ) {
        let dtype = DType::from_typestr(typestr, Interface::ArrayInterface).unwrap();
        let strides: Vec<isize> = match strides {
            Some(s) => s.iter().map(|&s| s as isize).collect(),
            None => c_strides(&shape, dtype.itemsize()).unwrap(),
        };
        let info = ArrayInfo::new(1 << 32, shape.clone(), strides.clone(), dtype,
                                  ArrayDevice::CPU, Interface::Native).unwrap();
        let span = info.nbytes_span().unwrap();
        let offsets: Vec<isize> = indices(&shape).iter().map(|i| offset(i, &strides)).collect();
        if info.is_empty() {
            prop_assert!(span.is_empty());
        } else {
            prop_assert_eq!(span.low, *offsets.iter().min().unwrap());
            prop_assert_eq!(span.high, offsets.iter().max().unwrap() + dtype.itemsize() as isize);
            let (lo, hi) = info.byte_bounds().unwrap();
            prop_assert_eq!(hi - lo, span.len());
        }
    }

    #[test]
    fn disagreeing_interfaces_are_caught(
        (shape, strides, typestr, off, _ro) in layout_case(),
        which in 0usize..3,
    ) {
        let dtype = DType::from_typestr(typestr, Interface::ArrayInterface).unwrap();
        let strides: Vec<isize> = match strides {
            Some(s) => s.iter().map(|&s| s as isize).collect(),
            None => c_strides(&shape, dtype.itemsize()).unwrap(),
        };
        let a = ArrayInfo::new((1 << 32) + off as usize, shape.clone(), strides, dtype,
                               ArrayDevice::CPU, Interface::ArrayInterface).unwrap();
        let mut b = a.clone();
        b.interface = Interface::DLPack;
        let field = match which {
            0 => { b.shape.push(2); b.strides.push(8); "shape" }
            1 => {
                b.dtype = if dtype == DType::INT64 { DType::FLOAT64 } else { DType::INT64 };
                "dtype"
            }
            _ => { b.ptr += 8; "data pointer" }
        };
        let result = a.agrees_with(&b);
        if field == "data pointer" && a.is_empty() {
            prop_assert!(result.is_ok());
        } else {
            let msg = result.unwrap_err().to_string();
            prop_assert!(msg.starts_with(&format!("invalid {field} ")), "{}", msg);
            prop_assert!(msg.contains("__dlpack__") && msg.contains("__array_interface__"));
        }
    }

    #[test]
    fn dlpack_tensors_match_the_array_interface(
        (mut shape, elem_strides, code_bits, byte_offset) in (0usize..=4).prop_flat_map(|n| (
            prop::collection::vec(0i64..6, n),
            prop::option::of(prop::collection::vec(-9i64..9, n)),
            prop::sample::select(vec![(0u8, 8u8), (0, 32), (1, 16), (2, 32), (2, 64), (5, 128), (6, 8)]),
            0u64..4096,
        ))
    ) {
        let mut strides = elem_strides.clone();
        let data = 1usize << 32;
        let t = DLTensor {
            data: std::ptr::with_exposed_provenance_mut(data),
            device: DLDevice { device_type: device_type::CPU, device_id: 0 },
            ndim: shape.len() as i32,
            dtype: DLDataType { code: code_bits.0, bits: code_bits.1, lanes: 1 },
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset,
        };
        // SAFETY: `shape` and `strides` live until the end of the test.
        let info = unsafe { array_info_from_dltensor(&t, false) }.unwrap();
        let itemsize = usize::from(code_bits.1 / 8);
        prop_assert_eq!(info.dtype.itemsize(), itemsize);
        prop_assert_eq!(info.ptr, data + byte_offset as usize);
        let dict = ArrayInterfaceDict {
            version: Some(3),
            shape: Some(shape.clone()),
            typestr: Some(info.dtype.to_typestr()),
            data: DataField::Pointer { ptr: info.ptr as u64, readonly: false },
            strides: elem_strides.map(|s| s.iter().map(|&s| s * itemsize as i64).collect()),
            ..Default::default()
        };
        let from_dict = dict.parse().unwrap();
        info.agrees_with(&from_dict).unwrap();
        from_dict.agrees_with(&info).unwrap();
        if code_bits.0 == type_code::BOOL {
            prop_assert_eq!(info.dtype, DType::BOOL);
        }
    }

    #[test]
    fn views_read_the_elements_the_strides_name((shape, strides) in view_case()) {
        let (len, zero) = backing(&shape, &strides);
        let data: Vec<i64> = (0..len as i64).map(|x| 3 * x + 1).collect();
        let ptr = data.as_ptr().expose_provenance() + zero * 8;
        let byte_strides = strides.iter().map(|s| s * 8).collect();
        let info = ArrayInfo::new(ptr, shape.clone(), byte_strides, DType::INT64,
                                  ArrayDevice::CPU, Interface::Native).unwrap();
        // SAFETY: `data` covers every element and outlives the view; nothing writes to it.
        let view = unsafe { info.as_array_view::<i64>() }.unwrap();
        prop_assert_eq!(view.shape(), &shape[..]);
        for (idx, &value) in view.indexed_iter() {
            let at = (zero as isize + offset(idx.slice(), &strides)) as usize;
            prop_assert_eq!(value, data[at]);
        }
        prop_assert_eq!(view.len(), indices(&shape).len());
    }

    #[test]
    fn mutable_views_never_alias_and_write_in_place((shape, strides) in view_case()) {
        let (len, zero) = backing(&shape, &strides);
        let mut data = vec![u32::MAX; len];
        let ptr = data.as_mut_ptr().expose_provenance() + zero * 4;
        let byte_strides = strides.iter().map(|s| s * 4).collect();
        let info = ArrayInfo::new(ptr, shape.clone(), byte_strides, DType::UINT32,
                                  ArrayDevice::CPU, Interface::Native).unwrap();
        let all = indices(&shape);
        let offsets: Vec<usize> =
            all.iter().map(|i| (zero as isize + offset(i, &strides)) as usize).collect();
        // SAFETY: `data` covers every element and is not touched while the view lives.
        match unsafe { info.as_array_view_mut::<u32>() } {
            Ok(mut view) => {
                // Accepted layouts reach every element through one index only.
                prop_assert_eq!(offsets.iter().collect::<HashSet<_>>().len(), offsets.len());
                for (n, idx) in all.iter().enumerate() {
                    view[idx.as_slice()] = n as u32;
                }
                drop(view);
                for (n, &at) in offsets.iter().enumerate() {
                    prop_assert_eq!(data[at], n as u32);
                }
            }
            Err(e) => prop_assert!(e.to_string().contains("overlap"), "{}", e),
        }
    }

    #[test]
    fn permuted_flipped_dense_layouts_are_writable(
        (shape, order, flip) in (1usize..=4).prop_flat_map(|n| (
            prop::collection::vec(1usize..5, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(any::<bool>(), n),
        ))
    ) {
        let mut strides = vec![0isize; shape.len()];
        let mut acc = 1isize;
        for &axis in order.iter().rev() {
            strides[axis] = if flip[axis] { -acc } else { acc };
            acc *= shape[axis] as isize;
        }
        let (len, zero) = backing(&shape, &strides);
        prop_assert_eq!(len, acc as usize);
        let mut data = vec![0f32; len];
        let ptr = data.as_mut_ptr().expose_provenance() + zero * 4;
        let info = ArrayInfo::new(ptr, shape.clone(), strides.iter().map(|s| s * 4).collect(),
                                  DType::FLOAT32, ArrayDevice::CPU, Interface::Native).unwrap();
        // SAFETY: `data` covers every element and is not touched while the view lives.
        let mut view = unsafe { info.as_array_view_mut::<f32>() }.unwrap();
        view.fill(2.5);
        drop(view);
        prop_assert!(data.iter().all(|&x| x == 2.5));
    }
}
