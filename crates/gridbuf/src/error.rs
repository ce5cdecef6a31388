//! The one error type of the core and the helpers that compose its messages. The Python bindings
//! map each variant to an exception class; every message is composed here or by the rule that
//! fails, never in the bindings.

/// Everything that can go wrong in the gridbuf core.
///
/// Messages are one sentence that names the parameter and the offending value and says what
/// would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter has the right type but a value that is not allowed.
    #[error("invalid {param} {value}: {expected}")]
    InvalidValue {
        /// Name of the parameter or field.
        param: String,
        /// The offending value, formatted for the message.
        value: String,
        /// What would have been valid.
        expected: String,
    },
    /// A parameter has a type that cannot be used.
    #[error("invalid type for {param} ({value}): {expected}")]
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
    /// The allocator could not provide the memory.
    #[error("cannot allocate {bytes} bytes aligned to {alignment} bytes: out of memory")]
    OutOfMemory {
        /// Requested size in bytes.
        bytes: usize,
        /// Requested alignment in bytes.
        alignment: usize,
    },
}

/// Result type of the gridbuf core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
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

    /// Shorthand for [`Error::Overflow`].
    pub fn overflow(param: impl Into<String>, value: impl std::fmt::Debug, what: &str) -> Self {
        Error::Overflow {
            param: param.into(),
            value: format!("{value:?}"),
            what: what.into(),
        }
    }
}

/// An [`Error::InvalidValue`] whose value is already formatted for the message (not quoted).
pub fn invalid_raw(
    param: impl Into<String>,
    value: impl Into<String>,
    expected: impl Into<String>,
) -> Error {
    Error::InvalidValue {
        param: param.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// An [`Error::Overflow`] whose value is already formatted for the message (not quoted).
pub fn overflow_raw(param: impl Into<String>, value: impl Into<String>, what: &str) -> Error {
    Error::Overflow {
        param: param.into(),
        value: value.into(),
        what: what.into(),
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

/// Formats (lower, upper) pairs as Python prints a tuple of tuples: `((1, 1), (0, 2))`.
pub fn format_pairs(pairs: &[(usize, usize)]) -> String {
    let items: Vec<String> = pairs.iter().map(|(a, b)| format!("({a}, {b})")).collect();
    format_tuple(&items)
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
}
