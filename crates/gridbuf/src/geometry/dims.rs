//! Semantic dimensions: the Cartesian axes `I`, `J`, `K` and numbered data dimensions.

use crate::error::{Error, Result};
use crate::geometry::axes::AxisVec;
use std::fmt;

/// One semantic dimension of an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// First horizontal axis.
    I,
    /// Second horizontal axis.
    J,
    /// Vertical axis.
    K,
    /// A data dimension, named by a decimal string such as `"0"`.
    Data(u32),
}

impl Dim {
    /// Parses one name: `"I"`, `"J"`, `"K"` or a decimal string such as `"0"` or `"12"`.
    pub fn parse(name: &str) -> Result<Dim> {
        match name {
            "I" => Ok(Dim::I),
            "J" => Ok(Dim::J),
            "K" => Ok(Dim::K),
            _ if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) => {
                name.parse::<u32>().map(Dim::Data).map_err(|_| {
                    Error::invalid("dims", name, "data dimension numbers must fit in 32 bits")
                })
            }
            _ => Err(Error::invalid(
                "dims",
                name,
                "dimension names are \"I\", \"J\", \"K\" or decimal strings such as \"0\"",
            )),
        }
    }

    /// The Cartesian index of `I`, `J`, `K` (0, 1, 2); `None` for data dimensions.
    pub fn cartesian_index(self) -> Option<usize> {
        match self {
            Dim::I => Some(0),
            Dim::J => Some(1),
            Dim::K => Some(2),
            Dim::Data(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::I => f.write_str("I"),
            Dim::J => f.write_str("J"),
            Dim::K => f.write_str("K"),
            Dim::Data(n) => write!(f, "{n}"),
        }
    }
}

/// Parses a dims string in which every character is one dimension, such as `"IJK"` or `"IJ0"`.
pub fn parse_dims_str(dims: &str) -> Result<Vec<Dim>> {
    let mut buf = [0u8; 4];
    dims.chars()
        .map(|c| Dim::parse(c.encode_utf8(&mut buf)))
        .collect()
}

/// The default dims for `ndim` axes: `"IJK"[:ndim]`, then data dimensions `"0"`, `"1"`, ...
/// (GT4Py's default).
pub fn default_dims(ndim: usize) -> AxisVec<Dim> {
    const CARTESIAN: [Dim; 3] = [Dim::I, Dim::J, Dim::K];
    (0..ndim)
        .map(|axis| match CARTESIAN.get(axis) {
            Some(&dim) => dim,
            None => Dim::Data((axis - 3) as u32),
        })
        .collect()
}

/// Checks dims: no name may repeat and, when `ndim` is given, there must be one name per axis.
///
/// This is the one dims rule of gridbuf; every caller (allocation, presets, fields, data
/// interfaces, the binder) goes through it, so the messages agree. `param` names the argument in
/// the message, such as `dims` or `__gt_dims__`. A repeated name is reported before a wrong count.
///
/// ```
/// use gridbuf::geometry::dims::{validate, Dim};
/// assert!(validate(&[Dim::I, Dim::K], Some(2), "dims").is_ok());
/// let err = validate(&[Dim::I, Dim::I], None, "dims").unwrap_err();
/// assert_eq!(err.to_string(), "invalid dims ('I', 'I'): dimension 'I' appears more than once (each dimension may appear only once)");
/// ```
pub fn validate(dims: &[Dim], ndim: Option<usize>, param: &str) -> Result<()> {
    for (pos, dim) in dims.iter().enumerate() {
        if dims[..pos].contains(dim) {
            return Err(crate::Error::value_shown(
                param,
                format_dims(dims),
                format!("dimension '{dim}' appears more than once (each dimension may appear only once)"),
            ));
        }
    }
    match ndim {
        Some(n) if n != dims.len() => Err(crate::Error::value_shown(
            param,
            format_dims(dims),
            format!(
                "the array has {n} axes, so it needs one name per axis, {n} in all, not {}",
                dims.len()
            ),
        )),
        _ => Ok(()),
    }
}

/// Parses dimension names (each `"I"`, `"J"`, `"K"` or a decimal string) and checks them with
/// [`validate`]: the dims path for callers that hold names, such as Python's `__gt_dims__`.
/// Errors name `param` and the whole list.
///
/// ```
/// use gridbuf::geometry::dims::{parse_names, Dim};
/// assert_eq!(parse_names(&["I", "J", "0"], Some(3), "dims")?[..], [Dim::I, Dim::J, Dim::Data(0)]);
/// let err = parse_names(&["I", "X"], None, "__gt_dims__").unwrap_err();
/// assert!(err.to_string().starts_with("invalid __gt_dims__ ('I', 'X'): 'X' is not a dimension name"));
/// # Ok::<(), gridbuf::Error>(())
/// ```
pub fn parse_names<S: AsRef<str>>(
    names: &[S],
    ndim: Option<usize>,
    param: &str,
) -> Result<AxisVec<Dim>> {
    parse_names_as(names, ndim, param, None)
}

/// [`parse_names`], with the value shown in messages given as the caller received it (for
/// example the Python repr `'IJX'` of a dims string) instead of the tuple of names.
pub fn parse_names_as<S: AsRef<str>>(
    names: &[S],
    ndim: Option<usize>,
    param: &str,
    value: Option<&str>,
) -> Result<AxisVec<Dim>> {
    let shown = || match value {
        Some(v) => v.to_owned(),
        None => {
            let quoted: Vec<String> = names.iter().map(|n| format!("'{}'", n.as_ref())).collect();
            crate::error::format_tuple(&quoted)
        }
    };
    let dims = names
        .iter()
        .map(|name| {
            Dim::parse(name.as_ref()).map_err(|_| {
                crate::Error::value_shown(
                    param,
                    shown(),
                    format!(
                        "'{}' is not a dimension name (expected 'I', 'J', 'K' or a decimal string such as '0' that fits in 32 bits)",
                        name.as_ref()
                    ),
                )
            })
        })
        .collect::<Result<AxisVec<Dim>>>()?;
    validate(&dims, ndim, param).map_err(|err| match (err, value) {
        (
            crate::Error::InvalidValue {
                param, expected, ..
            },
            Some(v),
        ) => crate::Error::InvalidValue {
            param,
            value: v.to_owned(),
            expected,
        },
        (err, _) => err,
    })?;
    Ok(dims)
}

/// Checks that `dims` names `ndim` axes without repeating a name: [`validate`] for `dims`.
pub fn validate_dims(dims: &[Dim], ndim: usize) -> Result<()> {
    validate(dims, Some(ndim), "dims")
}

/// The number of the next data dimension: one more than the largest data dimension in `dims`,
/// or 0 when there is none. New axes (subarray axes, `numpy.newaxis`) are numbered from it so
/// that they never collide with the dims an array has.
///
/// ```
/// use gridbuf::geometry::dims::{next_data_dim, Dim};
/// assert_eq!(next_data_dim(&[Dim::I, Dim::J]), 0);
/// assert_eq!(next_data_dim(&[Dim::Data(2), Dim::K, Dim::Data(0)]), 3);
/// ```
pub fn next_data_dim(dims: &[Dim]) -> u32 {
    dims.iter()
        .filter_map(|d| match d {
            Dim::Data(n) => Some(n.saturating_add(1)),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Appends `count` data dimensions numbered from [`next_data_dim`].
pub fn append_data_dims(dims: &mut AxisVec<Dim>, count: usize) {
    let next = next_data_dim(dims);
    dims.extend((0..count as u32).map(|n| Dim::Data(next + n)));
}

/// Formats dims as a tuple of names, as Python prints them: `('I', 'J', '0')`.
pub fn format_dims(dims: &[Dim]) -> String {
    let names: Vec<String> = dims.iter().map(|d| format!("'{d}'")).collect();
    if names.len() == 1 {
        format!("({},)", names[0])
    } else {
        format!("({})", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        assert_eq!(Dim::parse("I").unwrap(), Dim::I);
        assert_eq!(Dim::parse("12").unwrap(), Dim::Data(12));
        assert!(Dim::parse("X").is_err());
        assert!(Dim::parse("").is_err());
        assert!(Dim::parse("-1").is_err());
        assert_eq!(
            parse_dims_str("KJ0").unwrap().to_vec(),
            vec![Dim::K, Dim::J, Dim::Data(0)]
        );
    }

    #[test]
    fn defaults_follow_gt4py() {
        assert_eq!(default_dims(2).to_vec(), vec![Dim::I, Dim::J]);
        assert_eq!(
            default_dims(5).to_vec(),
            vec![Dim::I, Dim::J, Dim::K, Dim::Data(0), Dim::Data(1)]
        );
    }

    #[test]
    fn validation_rejects_duplicates_and_wrong_length() {
        assert!(validate_dims(&[Dim::I, Dim::I], 2).is_err());
        assert!(validate_dims(&[Dim::I], 2).is_err());
        assert!(validate_dims(&[Dim::K, Dim::I], 2).is_ok());
        assert_eq!(
            validate(&[Dim::I], Some(2), "__gt_dims__").unwrap_err().to_string(),
            "invalid __gt_dims__ ('I',): the array has 2 axes, so it needs one name per axis, 2 in all, not 1"
        );
        assert!(validate(&[Dim::I, Dim::J, Dim::Data(0)], None, "dims").is_ok());
    }

    #[test]
    fn appended_data_dims_do_not_collide() {
        let mut dims: AxisVec<Dim> = smallvec::smallvec![Dim::I, Dim::Data(0)];
        append_data_dims(&mut dims, 2);
        assert_eq!(
            dims.to_vec(),
            vec![Dim::I, Dim::Data(0), Dim::Data(1), Dim::Data(2)]
        );
    }
}
