//! Element types: [`DType`] (kind, size and byte order, as the array interface's typestr names
//! them), parsing typestrs, and the [`Element`] trait that ties a Rust type to its dtype.

use crate::arrays::interface::Interface;
use crate::error::{Error, Result};
use std::fmt;

/// The kind of an element type, as the array interface's typestr names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DTypeKind {
    /// Boolean, one byte holding 0 or 1 (`b`).
    Bool,
    /// Signed integer (`i`).
    Int,
    /// Unsigned integer (`u`).
    UInt,
    /// IEEE floating point (`f`).
    Float,
    /// Complex of two IEEE floats, real part first (`c`).
    Complex,
}

impl DTypeKind {
    /// The character of this kind in an array-interface typestr: `b`, `i`, `u`, `f` or `c`.
    pub fn typestr_char(self) -> char {
        match self {
            DTypeKind::Bool => 'b',
            DTypeKind::Int => 'i',
            DTypeKind::UInt => 'u',
            DTypeKind::Float => 'f',
            DTypeKind::Complex => 'c',
        }
    }

    /// The item sizes in bytes gridbuf supports for this kind.
    pub fn valid_itemsizes(self) -> &'static [usize] {
        match self {
            DTypeKind::Bool => &[1],
            DTypeKind::Int | DTypeKind::UInt => &[1, 2, 4, 8],
            DTypeKind::Float => &[2, 4, 8],
            DTypeKind::Complex => &[8, 16],
        }
    }
}

/// Byte order of multi-byte elements.
///
/// A [`DType`] stores [`ByteOrder::Native`] for every element in the host's order (and for
/// one-byte elements), so `Little` or `Big` only appears for non-native data and two dtypes
/// compare equal exactly when they describe the same bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// The host's byte order (or not applicable, for one-byte elements).
    Native,
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
}

impl ByteOrder {
    /// The byte order of the machine this code runs on.
    pub const HOST: ByteOrder = if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };

    /// `Little` or `Big`: `Native` resolved to the host's order.
    pub const fn resolve(self) -> ByteOrder {
        match self {
            ByteOrder::Native => ByteOrder::HOST,
            other => other,
        }
    }
}

/// A fixed-size numeric or boolean element type.
///
/// Object, string, void (structured) and datetime types cannot be described: gridbuf binds numeric
/// fields only.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DType {
    kind: DTypeKind,
    itemsize: usize,
    byteorder: ByteOrder,
}

/// The byte order a dtype stores: `Native` for one-byte items and for the host's order.
const fn normalize(itemsize: usize, byteorder: ByteOrder) -> ByteOrder {
    if itemsize == 1 {
        return ByteOrder::Native;
    }
    match (byteorder, ByteOrder::HOST) {
        (ByteOrder::Little, ByteOrder::Little) | (ByteOrder::Big, ByteOrder::Big) => {
            ByteOrder::Native
        }
        (order, _) => order,
    }
}

impl DType {
    /// `bool` (one byte).
    pub const BOOL: DType = DType::native(DTypeKind::Bool, 1);
    /// `int8`.
    pub const INT8: DType = DType::native(DTypeKind::Int, 1);
    /// `int16`.
    pub const INT16: DType = DType::native(DTypeKind::Int, 2);
    /// `int32`.
    pub const INT32: DType = DType::native(DTypeKind::Int, 4);
    /// `int64`.
    pub const INT64: DType = DType::native(DTypeKind::Int, 8);
    /// `uint8`.
    pub const UINT8: DType = DType::native(DTypeKind::UInt, 1);
    /// `uint16`.
    pub const UINT16: DType = DType::native(DTypeKind::UInt, 2);
    /// `uint32`.
    pub const UINT32: DType = DType::native(DTypeKind::UInt, 4);
    /// `uint64`.
    pub const UINT64: DType = DType::native(DTypeKind::UInt, 8);
    /// `float16` (IEEE half precision).
    pub const FLOAT16: DType = DType::native(DTypeKind::Float, 2);
    /// `float32`.
    pub const FLOAT32: DType = DType::native(DTypeKind::Float, 4);
    /// `float64`.
    pub const FLOAT64: DType = DType::native(DTypeKind::Float, 8);
    /// `complex64` (two `float32`).
    pub const COMPLEX64: DType = DType::native(DTypeKind::Complex, 8);
    /// `complex128` (two `float64`).
    pub const COMPLEX128: DType = DType::native(DTypeKind::Complex, 16);

    /// A native-order dtype; only for the constants above, whose sizes are valid.
    const fn native(kind: DTypeKind, itemsize: usize) -> DType {
        DType {
            kind,
            itemsize,
            byteorder: ByteOrder::Native,
        }
    }

    /// A dtype of `kind` with `itemsize` bytes in `byteorder`; the size must be one that
    /// [`DTypeKind::valid_itemsizes`] lists.
    pub fn new(kind: DTypeKind, itemsize: usize, byteorder: ByteOrder) -> Result<DType> {
        if !kind.valid_itemsizes().contains(&itemsize) {
            return Err(Error::invalid(
                "itemsize",
                itemsize,
                format!(
                    "a {kind:?} dtype has one of the sizes {:?} in bytes",
                    kind.valid_itemsizes()
                ),
            ));
        }
        Ok(DType {
            kind,
            itemsize,
            byteorder: normalize(itemsize, byteorder),
        })
    }

    /// The kind of element.
    pub fn kind(self) -> DTypeKind {
        self.kind
    }

    /// Size of one element in bytes.
    pub fn itemsize(self) -> usize {
        self.itemsize
    }

    /// Byte order; `Native` unless the elements are stored in the non-host order.
    pub fn byteorder(self) -> ByteOrder {
        self.byteorder
    }

    /// Whether the elements are in the host's byte order.
    pub fn is_native(self) -> bool {
        self.byteorder == ByteOrder::Native
    }

    /// Parses an array-interface typestr such as `"<f8"`, `"|b1"`, `">i4"`, `"<c16"` or `"=f4"`.
    ///
    /// `interface` names the source in error messages (`__array_interface__['typestr']`). A
    /// missing byte-order character means native order. Object (`O`), string (`S`, `U`), void
    /// (`V`, also structured dtypes), datetime (`M`, `m`) and bit-field (`t`) typestrs are
    /// rejected, as are sizes the kind does not have (`f16` long double, `c32`).
    pub fn from_typestr(typestr: &str, interface: Interface) -> Result<DType> {
        parse_typestr(typestr, interface, "typestr")
    }

    /// Parses a PEP 3118 buffer-protocol format such as `"d"`, `"<f"`, `"=q"`, `"?"` or `"Zd"`.
    ///
    /// An optional prefix sets the byte order: `@` (the default) native with native sizes, `=`
    /// native with standard sizes, `<` little-endian, `>` and `!` big-endian. In native-size
    /// mode `l`/`L` have the size of a C `long` and `n`/`N` that of `size_t`; in standard mode
    /// `l`/`L` have 4 bytes and `n`/`N` are not allowed. Long double (`g`, `Zg`), characters,
    /// strings, pointers, padding, structs and repeat counts are rejected.
    pub fn from_buffer_format(format: &str) -> Result<DType> {
        let reject = |expected: &str| {
            Error::invalid(
                Interface::Buffer.field("format"),
                format,
                expected.to_owned(),
            )
        };
        const SUPPORTED: &str =
            "expected one numeric item such as \"d\", \"<f\", \"=q\", \"?\" or \"Zd\"; \
             long double, char, string, pointer, padding and struct formats are not supported";
        let (order, native_sizes, code) = match format.as_bytes().first() {
            Some(b'@') => (ByteOrder::Native, true, &format[1..]),
            Some(b'=') => (ByteOrder::Native, false, &format[1..]),
            Some(b'<') => (ByteOrder::Little, false, &format[1..]),
            Some(b'>') | Some(b'!') => (ByteOrder::Big, false, &format[1..]),
            _ => (ByteOrder::Native, true, format),
        };
        use DTypeKind::{Bool, Complex, Float, Int, UInt};
        let c_long = std::mem::size_of::<std::ffi::c_long>();
        let (kind, itemsize) = match code {
            "?" => (Bool, 1),
            "b" => (Int, 1),
            "B" => (UInt, 1),
            "h" => (Int, 2),
            "H" => (UInt, 2),
            "i" => (Int, 4),
            "I" => (UInt, 4),
            "l" => (Int, if native_sizes { c_long } else { 4 }),
            "L" => (UInt, if native_sizes { c_long } else { 4 }),
            "q" => (Int, 8),
            "Q" => (UInt, 8),
            "n" if native_sizes => (Int, std::mem::size_of::<isize>()),
            "N" if native_sizes => (UInt, std::mem::size_of::<usize>()),
            "e" => (Float, 2),
            "f" => (Float, 4),
            "d" => (Float, 8),
            "Zf" => (Complex, 8),
            "Zd" => (Complex, 16),
            _ => return Err(reject(SUPPORTED)),
        };
        DType::new(kind, itemsize, order).map_err(|_| reject(SUPPORTED))
    }

    /// The array-interface typestr, such as `"<f8"` or `"|b1"`: `|` for one-byte items, else the
    /// explicit byte order (`<` or `>`, never `=`), as NumPy writes it.
    pub fn to_typestr(self) -> String {
        let order = if self.itemsize == 1 {
            '|'
        } else {
            match self.byteorder.resolve() {
                ByteOrder::Big => '>',
                _ => '<',
            }
        };
        format!("{order}{}{}", self.kind.typestr_char(), self.itemsize)
    }

    /// The NumPy name of the type ignoring byte order, such as `"float64"` or `"bool"`.
    pub fn name(self) -> String {
        match self.kind {
            DTypeKind::Bool => "bool".to_owned(),
            DTypeKind::Int => format!("int{}", self.itemsize * 8),
            DTypeKind::UInt => format!("uint{}", self.itemsize * 8),
            DTypeKind::Float => format!("float{}", self.itemsize * 8),
            DTypeKind::Complex => format!("complex{}", self.itemsize * 8),
        }
    }
}

impl fmt::Display for DType {
    /// The NumPy name, with the byte order appended when it is not native: `float64`,
    /// `int32 (big-endian)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())?;
        match self.byteorder {
            ByteOrder::Native => Ok(()),
            ByteOrder::Little => f.write_str(" (little-endian)"),
            ByteOrder::Big => f.write_str(" (big-endian)"),
        }
    }
}

/// Parses a typestr; `key` names the dict key in error messages (`typestr` or `descr`).
pub(crate) fn parse_typestr(typestr: &str, interface: Interface, key: &str) -> Result<DType> {
    let err = |expected: String| Error::invalid(interface.field(key), typestr, expected);
    let (order, rest) = match typestr.as_bytes().first() {
        Some(b'<') => (ByteOrder::Little, &typestr[1..]),
        Some(b'>') => (ByteOrder::Big, &typestr[1..]),
        Some(b'|') | Some(b'=') => (ByteOrder::Native, &typestr[1..]),
        _ => (ByteOrder::Native, typestr),
    };
    let mut chars = rest.chars();
    let kind_char = chars.next();
    let size_str = chars.as_str();
    let kind = match kind_char {
        Some('b') => DTypeKind::Bool,
        Some('i') => DTypeKind::Int,
        Some('u') => DTypeKind::UInt,
        Some('f') => DTypeKind::Float,
        Some('c') => DTypeKind::Complex,
        Some('O' | 'S' | 'a' | 'U' | 'V' | 'M' | 'm' | 't') => {
            return Err(err(
                "object, string, void (structured), datetime and bit-field dtypes are not \
                 supported; expected a bool, integer, float or complex typestr such as \"<f8\""
                    .to_owned(),
            ))
        }
        _ => {
            return Err(err(
                "expected a byte order (<, >, | or =), a kind (b, i, u, f or c) and a size in \
                 bytes, such as \"<f8\""
                    .to_owned(),
            ))
        }
    };
    let itemsize: usize = match size_str.parse() {
        Ok(n) if size_str.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => {
            return Err(err(
                "expected the item size in bytes after the kind, such as \"<f8\"".to_owned(),
            ))
        }
    };
    if !kind.valid_itemsizes().contains(&itemsize) {
        return Err(err(format!(
            "a '{}' typestr has one of the sizes {:?} in bytes",
            kind.typestr_char(),
            kind.valid_itemsizes()
        )));
    }
    DType::new(kind, itemsize, order)
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust element type whose layout matches a [`DType`]: `bool`, `i8` to `i64`, `u8` to `u64`,
/// `f32` and `f64`. Sealed, so that [`ArrayInfo::as_array_view`](crate::arrays::array_info::ArrayInfo::as_array_view) can rely on `DTYPE` matching
/// the type's size and alignment.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The native-order dtype of this type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}

element!(
    bool => BOOL, i8 => INT8, i16 => INT16, i32 => INT32, i64 => INT64,
    u8 => UINT8, u16 => UINT16, u32 => UINT32, u64 => UINT64, f32 => FLOAT32, f64 => FLOAT64,
);
