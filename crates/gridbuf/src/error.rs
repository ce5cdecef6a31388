//! The one error type of the core, with every message gridbuf shows. The Python bindings only
//! convert: [`Error::class`] says which exception class to raise, and `Display` is the message.

/// Everything that can go wrong in the gridbuf core.
///
/// Messages are one sentence that names the parameter and the offending value and says what
/// would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter has the right type but a value that is not allowed.
    #[error("{}", InvalidValueMessage::new(param, value, expected))]
    InvalidValue {
        /// Name of the parameter or field.
        param: String,
        /// The offending value, formatted for the message; empty where the message names no
        /// value (then it reads `invalid {param}: {expected}`).
        value: String,
        /// What would have been valid.
        expected: String,
    },
    /// A parameter has a type that cannot be used.
    #[error("{}", InvalidTypeMessage::new(param, value, expected))]
    InvalidType {
        /// Name of the parameter or field.
        param: String,
        /// The offending value or its type, formatted for the message.
        value: String,
        /// What would have been valid.
        expected: String,
    },
    /// A preset name that is not registered.
    #[error("unknown preset {name:?} for {param}; registered presets are: {}", .valid.join(", "))]
    UnknownPreset {
        /// Name of the parameter (`backend` or `defaults`).
        param: String,
        /// The name that was asked for.
        name: String,
        /// Every registered name, sorted.
        valid: Vec<String>,
    },
    /// A preset name that is registered already and may not be silently replaced.
    #[error("preset {name:?} is already registered; pass replace=True to replace it")]
    PresetExists {
        /// The name that was asked for.
        name: String,
    },
    /// Shape, stride or size arithmetic that does not fit the address space.
    #[error("{param} {value} is too large: {what} overflows the address space")]
    Overflow {
        /// Name of the parameter whose value is too large.
        param: String,
        /// The offending value, formatted for the message.
        value: String,
        /// The quantity that overflowed (e.g. "the byte size").
        what: String,
    },
    /// An array-interface dict lacks a key its specification requires.
    #[error("{interface} has no '{key}' key: expected {expected}")]
    MissingKey {
        /// The interface, such as `__array_interface__`.
        interface: String,
        /// The missing key, such as `shape`.
        key: String,
        /// What the key should hold.
        expected: String,
    },
    /// An `__array_interface__` whose `data` is missing or `None`: by the specification the
    /// object itself exposes the memory through the buffer protocol. The caller (the Python
    /// binding) acquires that buffer and parses again with the buffer's pointer and length.
    #[error("{interface}['data'] is None, so the memory must be read through the object's buffer protocol")]
    BufferProtocolRequired {
        /// The interface whose `data` is `None`, such as `__array_interface__`.
        interface: String,
    },
    /// A value that cannot be represented in the type it is converted to (such as `300` as an
    /// `int8`): worded like [`Error::InvalidValue`], raised as an overflow.
    #[error("{}", InvalidValueMessage::new(param, value, expected))]
    OutOfRange {
        /// Name of the parameter.
        param: String,
        /// The offending value, formatted for the message.
        value: String,
        /// What would have been valid.
        expected: String,
    },
    /// Memory on a device the operation cannot use, or a device (or its array library) that is
    /// needed but not available.
    #[error("{message}")]
    Device {
        /// The whole sentence, composed by the constructors of this module.
        message: String,
    },
    /// A `data` key that is None for device memory, which no buffer protocol exposes.
    #[error(
        "{field} is None: device memory has no buffer protocol to read it through; expected a \
         (pointer, read_only) tuple"
    )]
    NoBufferProtocol {
        /// The key, such as `__gt_data_interface__['data']`.
        field: String,
    },
    /// A sentence that does not follow the `invalid {param} {value}: {expected}` pattern (the
    /// argument errors of a stencil call, a dims entry of the wrong type, ...), composed by the
    /// constructors of this module.
    #[error("{message}")]
    Message {
        /// The exception class it is raised as.
        class: ErrorClass,
        /// The whole sentence.
        message: String,
    },
    /// The allocator could not provide the memory.
    #[error("cannot allocate {bytes} bytes aligned to {alignment} bytes: out of memory")]
    OutOfMemory {
        /// Requested size in bytes.
        bytes: usize,
        /// Requested alignment in bytes.
        alignment: usize,
    },
}

/// The message of [`Error::InvalidValue`] (and [`Error::OutOfRange`]) from borrowed parts:
/// `invalid {param} {value}: {expected}`, or `invalid {param}: {expected}` for an empty value.
/// A binding that raises such an error at once formats this, without building the [`Error`].
#[derive(Copy, Clone, Debug)]
pub struct InvalidValueMessage<'a> {
    param: &'a str,
    value: &'a str,
    expected: &'a str,
}

impl<'a> InvalidValueMessage<'a> {
    /// The message for `param`, its value as shown, and what would be valid.
    pub fn new(param: &'a str, value: &'a str, expected: &'a str) -> Self {
        InvalidValueMessage {
            param,
            value,
            expected,
        }
    }
}

impl std::fmt::Display for InvalidValueMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let InvalidValueMessage {
            param,
            value,
            expected,
        } = self;
        if value.is_empty() {
            write!(f, "invalid {param}: {expected}")
        } else {
            write!(f, "invalid {param} {value}: {expected}")
        }
    }
}

/// The message of [`Error::InvalidType`] from borrowed parts:
/// `invalid type for {param} ({value}): {expected}`.
#[derive(Copy, Clone, Debug)]
pub struct InvalidTypeMessage<'a> {
    param: &'a str,
    value: &'a str,
    expected: &'a str,
}

impl<'a> InvalidTypeMessage<'a> {
    /// The message for `param`, its value (or type) as shown, and what would be valid.
    pub fn new(param: &'a str, value: &'a str, expected: &'a str) -> Self {
        InvalidTypeMessage {
            param,
            value,
            expected,
        }
    }
}

impl std::fmt::Display for InvalidTypeMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let InvalidTypeMessage {
            param,
            value,
            expected,
        } = self;
        write!(f, "invalid type for {param} ({value}): {expected}")
    }
}

/// The category of an [`Error`], which picks the exception class a binding raises. Every
/// category but `Base` is also one of the language's built-in error kinds (a `ValueError`, ...).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// No more specific category (`GridbufError`).
    Base,
    /// A value that is not valid (`GridbufValueError`, a `ValueError`).
    Value,
    /// A type that cannot be used (`GridbufTypeError`, a `TypeError`).
    Type,
    /// A size that does not fit, or a value out of a type's range (`GridbufOverflowError`, an
    /// `OverflowError`).
    Overflow,
    /// Memory that could not be obtained (`GridbufMemoryError`, a `MemoryError`).
    Memory,
    /// A preset name that is not registered (`UnknownPresetError`, a `GridbufValueError` and a
    /// `RuntimeError`, as GT4Py raises).
    UnknownPreset,
    /// A device that is missing or cannot be used (`GridbufDeviceError`, a `RuntimeError`).
    Device,
    /// A computation stopped at a safe point because an interrupt was requested (Python's
    /// `KeyboardInterrupt`; see [`crate::runtime::interrupt`]).
    Interrupted,
}

/// Result type of the gridbuf core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The category of this error, which picks the exception class.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidValue { .. }
            | Error::PresetExists { .. }
            | Error::MissingKey { .. }
            | Error::NoBufferProtocol { .. } => ErrorClass::Value,
            Error::InvalidType { .. } | Error::BufferProtocolRequired { .. } => ErrorClass::Type,
            Error::UnknownPreset { .. } => ErrorClass::UnknownPreset,
            Error::Overflow { .. } | Error::OutOfRange { .. } => ErrorClass::Overflow,
            Error::OutOfMemory { .. } => ErrorClass::Memory,
            Error::Device { .. } => ErrorClass::Device,
            Error::Message { class, .. } => *class,
        }
    }

    /// Shorthand for [`Error::InvalidValue`].
    pub fn invalid(
        param: impl Into<String>,
        value: impl std::fmt::Debug,
        expected: impl Into<String>,
    ) -> Self {
        Error::InvalidValue {
            param: param.into(),
            value: format!("{value:?}"),
            expected: expected.into(),
        }
    }

    /// A computation stopped by [`crate::runtime::interrupt::Interrupt`]; what it wrote before stays.
    pub fn interrupted() -> Self {
        Error::Message {
            class: ErrorClass::Interrupted,
            message: "stencil interrupted; the points computed before the interrupt were written"
                .into(),
        }
    }

    /// Shorthand for [`Error::Overflow`].
    pub fn overflow(param: impl Into<String>, value: impl std::fmt::Debug, what: &str) -> Self {
        Error::Overflow {
            param: param.into(),
            value: format!("{value:?}"),
            what: what.into(),
        }
    }
}

/// Formats a sequence as Python prints a tuple: `(3, 4)`, `(3,)`, `()`.
pub fn format_tuple<T: std::fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// A value shown in a message (a Python `repr`), cut after 200 characters and marked with
/// `...` where it was cut, so that a huge dict does not drown the message.
pub fn shorten_shown(shown: String) -> String {
    const MAX: usize = 200;
    match shown.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &shown[..cut]),
        None => shown,
    }
}

/// Formats (lower, upper) pairs as Python prints a tuple of tuples: `((1, 1), (0, 2))`.
pub fn format_pairs(pairs: &[(usize, usize)]) -> String {
    let items: Vec<String> = pairs.iter().map(|(a, b)| format!("({a}, {b})")).collect();
    format_tuple(&items)
}

/// The messages of the Python binding. Values arrive already shown (a Python `repr`), and
/// reasons are the text of the Python exception that caused the error.
impl Error {
    /// [`Error::InvalidValue`] with a value already formatted for the message.
    pub fn value_shown(
        param: impl Into<String>,
        shown: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Error::InvalidValue {
            param: param.into(),
            value: shown.into(),
            expected: expected.into(),
        }
    }

    /// [`Error::InvalidType`] with a value already formatted for the message.
    pub fn type_shown(
        param: impl Into<String>,
        shown: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Error::InvalidType {
            param: param.into(),
            value: shown.into(),
            expected: expected.into(),
        }
    }

    /// [`Error::Overflow`] with a value already formatted for the message.
    pub fn overflow_shown(
        param: impl Into<String>,
        shown: impl Into<String>,
        what: impl Into<String>,
    ) -> Self {
        Error::Overflow {
            param: param.into(),
            value: shown.into(),
            what: what.into(),
        }
    }

    /// Both names of an aliased keyword were given.
    pub fn alias_conflict(name: &str, alias: &str, shown: impl Into<String>) -> Self {
        Error::value_shown(
            alias,
            shown,
            format!("{alias}= is an alias of {name}=; give only one of them"),
        )
    }

    /// A `dtype` argument that NumPy does not understand.
    pub fn dtype_not_understood(shown: impl Into<String>, reason: &str) -> Self {
        Error::type_shown(
            "dtype",
            shown,
            format!("expected a NumPy dtype or something numpy.dtype accepts ({reason})"),
        )
    }

    /// A dtype gridbuf cannot describe: not bool, integer, float or complex.
    pub fn unsupported_dtype(shown: impl Into<String>) -> Self {
        Error::value_shown(
            "dtype",
            shown,
            "expected a bool, integer, float or complex dtype",
        )
    }

    /// A `fill_value` NumPy cannot convert to the dtype; `overflow` where the value is out of
    /// the dtype's range.
    pub fn fill_value_unconvertible(
        shown: impl Into<String>,
        dtype: &str,
        reason: &str,
        overflow: bool,
    ) -> Self {
        let param = "fill_value".to_owned();
        let value = shown.into();
        let expected = format!("cannot convert it to dtype {dtype} ({reason})");
        if overflow {
            Error::OutOfRange {
                param,
                value,
                expected,
            }
        } else {
            Error::InvalidValue {
                param,
                value,
                expected,
            }
        }
    }

    /// `from_array` data that `numpy.asarray` refuses; `bad_type` where it refused the type
    /// rather than a value.
    pub fn not_array_like(shown: impl Into<String>, reason: &str, bad_type: bool) -> Self {
        let expected = format!("expected an array-like that numpy.asarray accepts ({reason})");
        if bad_type {
            Error::type_shown("data", shown, expected)
        } else {
            Error::value_shown("data", shown, expected)
        }
    }

    /// `from_array` data that NumPy cannot convert to the requested dtype.
    pub fn data_unconvertible(shown: impl Into<String>, dtype: &str, reason: &str) -> Self {
        Error::value_shown(
            "data",
            shown,
            format!("cannot convert it to dtype {dtype} ({reason})"),
        )
    }

    /// `from_array` data whose shape does not end with the subarray shape of the dtype.
    pub fn subarray_shape_mismatch(
        shown: impl Into<String>,
        shape: &[usize],
        subarray_shape: &[usize],
    ) -> Self {
        Error::value_shown(
            "data",
            shown,
            format!(
                "its shape {shape:?} must end with the subarray shape {subarray_shape:?} of the \
                 dtype"
            ),
        )
    }

    /// An object that exposes none of the array interfaces gridbuf reads; `has_array` where it
    /// has only `__array__`.
    pub fn no_array_interface(type_name: &str, has_array: bool) -> Self {
        let mut expected = String::from(
            "expected an array exposing __gt_data_interface__, __array_interface__, \
             __cuda_array_interface__, __dlpack__ or the buffer protocol",
        );
        if has_array {
            expected.push_str(
                "; it has only __array__, which may copy, so pass numpy.asarray(obj) to copy it \
                 explicitly",
            );
        }
        Error::type_shown("array", type_name, expected)
    }

    /// `from_array` data in GPU memory (of type `type_name`) for a preset that allocates host
    /// memory.
    pub fn device_data_for_host_preset(type_name: &str, preset: &str) -> Self {
        Error::Device {
            message: format!(
                "invalid data ({type_name}): it lives in GPU memory, but backend {preset:?} \
                 allocates host memory; use a GPU preset (such as \"gt:gpu\"), managed=\"cuda\", \
                 or copy it to the host first (.get())"
            ),
        }
    }

    /// Memory on `device`, described by `interface`, that the host cannot read.
    pub fn not_host_accessible(device: impl std::fmt::Display, interface: &str) -> Self {
        Error::Device {
            message: format!(
                "cannot view {device} memory from {interface} as a NumPy array: the array lives \
                 on a GPU only, so use gridbuf.as_cupy, or copy it to the host first"
            ),
        }
    }

    /// An array with more axes than NumPy allows (`max`).
    pub fn too_many_axes(ndim: usize, interface: &str, max: usize) -> Self {
        Error::value_shown(
            "shape",
            format!("with {ndim} axes from {interface}"),
            format!("a NumPy array has at most {max}"),
        )
    }

    /// A `data` key that is None for device memory, which has no buffer protocol.
    pub fn device_data_none(field: &str) -> Self {
        Error::NoBufferProtocol {
            field: field.to_owned(),
        }
    }

    /// A `data` value without the buffer protocol: `data_none` where `data` is None and the
    /// object itself has no buffer protocol either.
    pub fn data_without_buffer(field: &str, data_none: bool, expected: &str) -> Self {
        let why = if data_none {
            "None, and the object has no buffer protocol to read the memory through"
        } else {
            "an object without the buffer protocol"
        };
        Error::type_shown(field, why, expected)
    }

    /// A `data` buffer that is not contiguous.
    pub fn noncontiguous_buffer(field: &str, shown: impl Into<String>, reason: &str) -> Self {
        Error::value_shown(
            field,
            shown,
            format!("expected a contiguous buffer ({reason})"),
        )
    }

    /// A `__dlpack_device__()` device type gridbuf does not read (`name` is DLPack's name).
    pub fn dlpack_device_type(device_type: i32, name: &str) -> Self {
        Error::value_shown(
            "__dlpack_device__() device type",
            format!("{device_type} ({name})"),
            "gridbuf reads kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3), kDLROCM (10), kDLROCMHost \
             (11) and kDLCUDAManaged (13)",
        )
    }

    /// A DLPack tensor on another device than `__dlpack_device__()` said.
    pub fn dlpack_device_mismatch(
        tensor_device: impl std::fmt::Display,
        said: impl std::fmt::Display,
    ) -> Self {
        Error::value_shown(
            "__dlpack__ DLTensor.device",
            tensor_device.to_string(),
            format!("expected {said}, the device __dlpack_device__() gives"),
        )
    }

    /// A DLPack capsule that was consumed already.
    pub fn dlpack_capsule_consumed() -> Self {
        Error::value_shown(
            "__dlpack__() capsule",
            "",
            "it was already consumed (its name starts with \"used_\"); expected a fresh capsule \
             from every __dlpack__() call",
        )
    }

    /// A capsule that is not a DLPack tensor: `name` is its name (shown quoted), or None for a
    /// capsule without a name.
    pub fn dlpack_capsule_name(name: Option<&[u8]>) -> Self {
        let shown = match name {
            Some(n) => format!("{:?}", String::from_utf8_lossy(n)),
            None => "without a name".to_owned(),
        };
        Error::value_shown(
            "__dlpack__() capsule",
            shown,
            "expected a capsule named \"dltensor_versioned\" or \"dltensor\"",
        )
    }

    /// A DLPack capsule holding a null pointer.
    pub fn dlpack_null_capsule() -> Self {
        Error::value_shown("__dlpack__() capsule", "", "it holds a null pointer")
    }
}

/// The messages of the data interface and of what an array declares about itself (dims,
/// origin); `shown` values are Python `repr`s.
impl Error {
    /// A data interface (`attr`, such as `__gt_data_interface__`) with no entry gridbuf reads;
    /// `keys` is the list of its keys, shown.
    pub fn no_device_entry(attr: &str, keys: &str) -> Self {
        Error::value_shown(
            attr,
            format!("with the device keys {keys}"),
            "expected an entry for None or \"cpu\" (host memory), or for \"gpu\" or \"cuda\" \
             (GPU memory)",
        )
    }

    /// A `stream` of a data-interface entry (`field`) that is not a stream.
    pub fn data_interface_stream(field: &str, stream: i64) -> Self {
        Error::value_shown(
            field,
            stream.to_string(),
            "expected None, 1 (legacy default stream), 2 (per-thread default stream) or a \
             positive stream handle",
        )
    }

    /// One entry of dims (from `source`) that is not a name.
    pub fn dim_entry_type(source: &str, shown: &str) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!(
                "invalid type for {source} entry {shown}: expected a dimension name (str), an \
                 object with __gt_axis_name__, or an enum whose .value is a name"
            ),
        }
    }

    /// Dims (from `source`) that are neither a string nor a sequence of names.
    pub fn dims_not_names(source: &str, shown: impl Into<String>) -> Self {
        Error::type_shown(
            source,
            shown,
            "expected a string such as 'IJK' or a sequence of names",
        )
    }

    /// A DataArray whose data declares other dims than its own (both shown).
    pub fn dataarray_dims_differ(dims: impl Into<String>, declared: &str) -> Self {
        Error::value_shown(
            "DataArray dims",
            dims,
            format!("the underlying data declares the different dims {declared}"),
        )
    }

    /// A DataArray whose data's interface entry for device `key` declares other dims (all
    /// shown).
    pub fn dataarray_entry_dims_differ(dims: impl Into<String>, key: &str, declared: &str) -> Self {
        Error::value_shown(
            "DataArray dims",
            dims,
            format!("its data's interface for device {key} declares {declared}"),
        )
    }

    /// An origin (from `source`) that is not a sequence of ints.
    pub fn origin_not_ints(source: &str, shown: impl Into<String>) -> Self {
        Error::type_shown(source, shown, "expected a sequence of ints")
    }

    /// A `FieldMeta` whose dims, halo and origin (shown) disagree on the number of axes.
    pub fn field_meta_lengths(
        dims: &str,
        ndim: usize,
        halo: &str,
        halo_len: usize,
        origin: &str,
        origin_len: usize,
    ) -> Self {
        Error::value_shown(
            "FieldMeta",
            "",
            format!(
                "dims {dims} name {ndim} axes, but the halo {halo} has {halo_len} and the origin \
                 {origin} has {origin_len}"
            ),
        )
    }
}

/// The messages of stencil calls.
impl Error {
    /// A call of `stencil` with `given` positional arguments where it takes the `fields`.
    pub fn stencil_arity(stencil: &str, fields: &[&str], given: usize) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!(
                "stencil {stencil:?} takes {} fields ({}) as positional arguments, but {given} \
                 were given",
                fields.len(),
                fields.join(", ")
            ),
        }
    }

    /// A field argument of `stencil` that could not be read, for `reason`.
    pub fn stencil_field(field: &str, stencil: &str, reason: impl std::fmt::Display) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!("field {field:?} of stencil {stencil:?}: {reason}"),
        }
    }

    /// A keyword argument (shown) that `stencil`, whose scalars are `scalars`, does not take.
    pub fn stencil_keyword(shown: impl Into<String>, stencil: &str, scalars: &[String]) -> Self {
        Error::type_shown(
            "keyword",
            shown,
            format!("stencil {stencil:?} takes the scalars {scalars:?}, origin, domain and validate_args"),
        )
    }

    /// A call of `stencil` without its scalar keyword argument `scalar`.
    pub fn stencil_missing_scalar(stencil: &str, scalar: &str) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!("stencil {stencil:?} needs the scalar keyword argument {scalar:?}"),
        }
    }

    /// A field (`name`) whose view a native kernel cannot take, for `reason`.
    pub fn kernel_view(name: &str, reason: &Error) -> Self {
        Error::invalid(
            format!("field {name:?}"),
            reason.to_string(),
            "a view a native kernel can take",
        )
    }

    /// A native kernel called on a domain that is not 3-D.
    pub fn native_domain_not_3d() -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: "native kernels need a 3-D domain (I, J, K)".to_owned(),
        }
    }

    /// A bound Python stencil without the views it was bound to (an internal error).
    pub fn bound_views_lost() -> Self {
        Error::Message {
            class: ErrorClass::Base,
            message: "bound Python stencil lost its views".to_owned(),
        }
    }

    /// A gtscript program called with `got` field views instead of `expected`.
    pub fn gtscript_arity(stencil: &str, expected: usize, got: usize) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!("stencil {stencil:?} takes {expected} fields, got {got}"),
        }
    }

    /// A gtscript program called without its scalar argument `scalar`.
    pub fn gtscript_missing_scalar(stencil: &str, scalar: &str) -> Self {
        Error::Message {
            class: ErrorClass::Type,
            message: format!("stencil {stencil:?} needs the scalar argument {scalar:?}"),
        }
    }

    /// A view handed to a gtscript program whose number of axes or item size does not match
    /// its field (the binder's views always match; this guards direct calls).
    pub fn gtscript_view(field: &str) -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: format!("field {field:?}: view of an unexpected shape or dtype"),
        }
    }

    /// A field a gtscript program writes, handed over read-only.
    pub fn gtscript_readonly(field: &str, stencil: &str) -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: format!(
                "field {field:?} is written by stencil {stencil:?} but its array is read-only"
            ),
        }
    }

    /// A view whose address or strides are not multiples of its item size.
    pub fn gtscript_misaligned(field: &str) -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: format!("field {field:?}: data or strides not aligned to its dtype"),
        }
    }

    /// A native kernel name that is not registered; `available` are the registered ones.
    pub fn unknown_kernel(name: &str, available: &[&str]) -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: format!(
                "unknown native kernel {name:?}; available: {}",
                available.join(", ")
            ),
        }
    }

    /// A field description of a Python stencil without the key `key`.
    pub fn field_description_misses(key: &str) -> Self {
        Error::Message {
            class: ErrorClass::Value,
            message: format!("field description misses {key:?}"),
        }
    }
}

/// The messages of halo exchanges and block decompositions.
impl Error {
    /// `specs` of another length (`len`) than the fields of an exchange.
    pub fn exchange_specs(len: usize) -> Self {
        Error::value_shown(
            "specs",
            len.to_string(),
            "expected one (axes, halo, widths) per field",
        )
    }

    /// Field `index` of an exchange in memory on a device (`kind`) other than the host.
    pub fn exchange_field_device(index: usize, kind: impl std::fmt::Debug) -> Self {
        Error::value_shown(
            format!("fields[{index}]"),
            format!("on {kind:?}"),
            "the halo exchange packs host memory only",
        )
    }

    /// Field `index` of an exchange that is read-only.
    pub fn exchange_field_readonly(index: usize) -> Self {
        Error::value_shown(
            format!("fields[{index}]"),
            "a read-only array",
            "halos are written, so the array must be writable",
        )
    }

    /// Field `index` of an exchange sharing memory with field `other`.
    pub fn exchange_fields_overlap(index: usize, other: usize) -> Self {
        Error::value_shown(
            format!("fields[{index}]"),
            format!("sharing memory with fields[{other}]"),
            "every field of one exchange must be a separate array",
        )
    }

    /// The message buffer `which[index]`, changed from Python after the plan made it (NumPy's
    /// `resize(..., refcheck=False)`, a new shape or dtype): it no longer is `need` contiguous
    /// bytes, so packing into it or unpacking from it would leave its memory.
    pub fn exchange_buffer_size(which: &str, index: usize, nbytes: usize, need: usize) -> Self {
        Error::value_shown(
            format!("{which}[{index}]"),
            format!("a buffer of {nbytes} bytes"),
            format!("the message needs its contiguous buffer of {need} bytes, as the plan made it; it was resized or reshaped since"),
        )
    }

    /// `copy_local` given message `index`, which goes to another process.
    pub fn copy_local_index(index: usize) -> Self {
        Error::value_shown(
            "index",
            index.to_string(),
            "copy_local takes a message to this process itself",
        )
    }

    /// A message `index` of a plan with `count` messages.
    pub fn message_index(index: usize, count: usize) -> Self {
        Error::value_shown(
            "index",
            index.to_string(),
            format!("this plan has {count} messages"),
        )
    }

    /// A process coordinate `coord` along dim `name`, which has `procs` processes.
    pub fn process_coord(coord: usize, name: &str, procs: usize) -> Self {
        Error::value_shown(
            "coord",
            coord.to_string(),
            format!("the process coordinates along {name} are 0..{procs}"),
        )
    }

    /// A dim index `dim` of a decomposition with `ndim` dims.
    pub fn decomposition_dim(dim: usize, ndim: usize) -> Self {
        Error::value_shown(
            "dim",
            dim.to_string(),
            format!("the decomposition has {ndim} dims"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_print_as_python() {
        assert_eq!(format_tuple::<usize>(&[]), "()");
        assert_eq!(format_tuple(&[3]), "(3,)");
        assert_eq!(format_tuple(&[3, 4]), "(3, 4)");
        assert_eq!(format_pairs(&[(1, 2)]), "((1, 2),)");
        assert_eq!(format_pairs(&[(1, 2), (0, 0)]), "((1, 2), (0, 0))");
    }

    #[test]
    fn shown_values_are_cut_after_200_characters() {
        assert_eq!(shorten_shown("{'a': 1}".into()), "{'a': 1}");
        let exact = "é".repeat(200);
        assert_eq!(shorten_shown(exact.clone()), exact);
        assert_eq!(shorten_shown("é".repeat(201)), format!("{exact}..."));
    }

    #[test]
    fn composed_messages_keep_their_class() {
        let e = Error::stencil_arity("hdiff", &["inp", "coeff", "out"], 2);
        assert_eq!(e.class(), ErrorClass::Type);
        assert_eq!(
            e.to_string(),
            "stencil \"hdiff\" takes 3 fields (inp, coeff, out) as positional arguments, but 2 \
             were given"
        );
        assert_eq!(Error::bound_views_lost().class(), ErrorClass::Base);
        assert_eq!(
            Error::field_meta_lengths("'IJ'", 2, "((0, 0),)", 1, "(0, 0)", 2).to_string(),
            "invalid FieldMeta: dims 'IJ' name 2 axes, but the halo ((0, 0),) has 1 and the \
             origin (0, 0) has 2"
        );
        assert_eq!(
            Error::exchange_field_readonly(1).to_string(),
            "invalid fields[1] a read-only array: halos are written, so the array must be writable"
        );
    }
}
