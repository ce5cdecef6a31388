//! gridbuf's environment switches, read in one place: every on/off switch takes the same
//! spellings, and a value a switch does not take is reported once per process (naming the
//! variable, the value and what it takes) before the default is used, where six readers
//! each took any value they did not know as their default, silently
//! (`GRIDBUF_TIER2=defne` ran tier two in the background).
//!
//! ```
//! use gridbuf::runtime::env::parse_flag;
//! assert_eq!(parse_flag(" Off "), Some(false));
//! assert_eq!(parse_flag("1"), Some(true));
//! assert_eq!(parse_flag("defne"), None);
//! ```

use std::sync::Mutex;

/// What an on/off switch takes, as the warning about another value says it.
pub const FLAG_VALUES: &str = "0, off, false or no; 1, on, true or yes";

/// An on/off switch's value: `0`, `off`, `false` or `no` is off; `1`, `on`, `true` or `yes`
/// is on (any case, surrounding spaces allowed); None for anything else.
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "0" | "off" | "false" | "no" => Some(false),
        "1" | "on" | "true" | "yes" => Some(true),
        _ => None,
    }
}

/// The value of the environment variable `name` as `parse` reads it (given the value with
/// surrounding spaces removed); None where it is unset or empty, and where `parse` does not
/// take it, which is then reported once ([`warn_unknown`], with `expected`: what it takes).
pub fn read<T>(name: &str, expected: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    take(name, std::env::var_os(name).as_deref(), expected, parse)
}

/// [`read`] of the value `raw` of the variable `name`.
fn take<T>(
    name: &str,
    raw: Option<&std::ffi::OsStr>,
    expected: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Option<T> {
    let raw = raw?;
    let Some(text) = raw.to_str() else {
        warn_unknown(name, &raw.to_string_lossy(), expected);
        return None;
    };
    let value = text.trim();
    if value.is_empty() {
        return None;
    }
    let got = parse(value);
    if got.is_none() {
        warn_unknown(name, text, expected);
    }
    got
}

/// Whether the on/off switch `name` is on ([`parse_flag`]); `default` where it is unset,
/// empty or a value it does not take (reported once, see [`read`]).
pub fn flag(name: &str, default: bool) -> bool {
    read(name, FLAG_VALUES, parse_flag).unwrap_or(default)
}

/// [`flag`] of the value `raw`.
#[cfg(test)]
fn flag_of(raw: Option<&str>, default: bool) -> bool {
    take(
        "GRIDBUF_TEST",
        raw.map(std::ffi::OsStr::new),
        FLAG_VALUES,
        parse_flag,
    )
    .unwrap_or(default)
}

/// Prints to standard error, the first time in this process for this variable and value,
/// that the environment variable `name` holds `value`, which it does not take (`expected`:
/// what it takes), and that gridbuf uses its default.
pub fn warn_unknown(name: &str, value: &str, expected: &str) {
    static WARNED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.iter().any(|(n, v)| n == name && v == value) {
        return;
    }
    warned.push((name.to_owned(), value.to_owned()));
    eprintln!(
        "gridbuf: {name}={value:?} is not a value {name} takes (expected {expected}); \
         using its default"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_take_the_same_spellings_in_any_case() {
        for v in ["0", "off", "OFF", " false ", "No"] {
            assert_eq!(parse_flag(v), Some(false), "{v:?}");
        }
        for v in ["1", "on", "True", " yes"] {
            assert_eq!(parse_flag(v), Some(true), "{v:?}");
        }
        for v in ["", "2", "defne", "o n", "-1"] {
            assert_eq!(parse_flag(v), None, "{v:?}");
        }
    }

    #[test]
    fn unset_and_empty_are_the_default_and_unknown_values_are_not_taken() {
        assert!(flag_of(None, true) && !flag_of(None, false));
        assert!(flag_of(Some("  "), true) && !flag_of(Some(""), false));
        assert!(flag_of(Some("defne"), true) && !flag_of(Some("defne"), false));
        assert!(!flag_of(Some(" Off"), true) && flag_of(Some("yes"), false));
        let mut seen = None;
        let got = take(
            "GRIDBUF_TEST",
            Some(std::ffi::OsStr::new(" define ")),
            "any",
            |v| {
                seen = Some(v.to_owned());
                Some(7)
            },
        );
        assert_eq!((got, seen.as_deref()), (Some(7), Some("define")));
        assert_eq!(take("GRIDBUF_TEST", None, "any", |_| Some(7)), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_text_is_not_taken() {
        use std::os::unix::ffi::OsStrExt;
        let raw = std::ffi::OsStr::from_bytes(b"o\xffn");
        assert_eq!(
            take("GRIDBUF_TEST", Some(raw), FLAG_VALUES, parse_flag),
            None
        );
    }
}
