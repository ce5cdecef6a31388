//! Formatting labelled operands for error messages.

use super::Operand;
use crate::error::{format_tuple, Error};
use crate::geometry::dims::{format_dims, Dim};

pub(super) fn describe(dims: &[Dim], shape: &[usize]) -> String {
    format!(
        "dims {} and shape {}",
        format_dims(dims),
        format_tuple(shape)
    )
}

pub(super) fn describe_operand(index: usize, op: &Operand) -> String {
    match op {
        Operand::Field(f) => format!(
            "operand {index} (a Field with {})",
            describe(&f.dims, &f.shape)
        ),
        Operand::Array(shape) => format!(
            "operand {index} (an array of shape {})",
            format_tuple(shape)
        ),
        Operand::Scalar => format!("operand {index} (a scalar)"),
    }
}

pub(super) fn error(param: &str, value: String, expected: String) -> Error {
    Error::InvalidValue {
        param: param.into(),
        value,
        expected,
    }
}

/// Formats a shape as Python prints it: `(3, 4)`, `(3,)`.
pub(super) fn format_shape(shape: &[usize]) -> String {
    format_tuple(shape)
}
