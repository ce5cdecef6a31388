//! The order of the data interface's callbacks around a computation (GDP-3): `acquire` of every
//! field before it, then, only when it succeeded, `touch` of every output, and `release` of
//! every field that was acquired, whatever happened. The first error is the one reported; the
//! releases still run after it.
//!
//! The core only orders the calls; [`Hooks`] makes them (the Python binding calls the
//! callables a data interface holds).

/// The callbacks of the fields of one computation, by field index.
pub trait Hooks {
    /// What a callback can fail with.
    type Error;
    /// Calls `acquire` of field `i` (if it has one).
    fn acquire(&mut self, i: usize) -> Result<(), Self::Error>;
    /// Calls `touch` of field `i` (if it has one).
    fn touch(&mut self, i: usize) -> Result<(), Self::Error>;
    /// Calls `release` of field `i` (if it has one).
    fn release(&mut self, i: usize) -> Result<(), Self::Error>;
}

/// Fields `0..acquired` acquired, to be released by [`Acquired::finish`].
#[derive(Debug)]
#[must_use = "acquired fields must be released with finish"]
pub struct Acquired {
    acquired: usize,
}

impl Acquired {
    /// Acquires fields `0..n` in order. When one fails, the ones acquired before it are
    /// released and its error is returned.
    pub fn enter<H: Hooks>(hooks: &mut H, n: usize) -> Result<Acquired, H::Error> {
        for i in 0..n {
            if let Err(e) = hooks.acquire(i) {
                let _ = Acquired { acquired: i }.finish(hooks, std::iter::empty(), Ok(()));
                return Err(e);
            }
        }
        Ok(Acquired { acquired: n })
    }

    /// Ends the computation whose outcome is `result`: touches `outputs` if it succeeded, then
    /// releases every acquired field. Returns `result`, or the first callback error after a
    /// success.
    pub fn finish<H: Hooks, T>(
        self,
        hooks: &mut H,
        outputs: impl IntoIterator<Item = usize>,
        result: Result<T, H::Error>,
    ) -> Result<T, H::Error> {
        let mut result = result;
        if result.is_ok() {
            for i in outputs {
                if let Err(e) = hooks.touch(i) {
                    result = Err(e);
                    break;
                }
            }
        }
        for i in 0..self.acquired {
            if let Err(e) = hooks.release(i) {
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
        result
    }
}

/// Runs `run` between the callbacks of fields `0..n`, touching `outputs` after a success.
pub fn around<H: Hooks, T>(
    hooks: &mut H,
    n: usize,
    outputs: impl IntoIterator<Item = usize>,
    run: impl FnOnce() -> Result<T, H::Error>,
) -> Result<T, H::Error> {
    let acquired = Acquired::enter(hooks, n)?;
    let result = run();
    acquired.finish(hooks, outputs, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the calls; fails the call named in `fail`.
    #[derive(Default)]
    struct Log {
        calls: Vec<String>,
        fail: Option<String>,
    }

    impl Log {
        fn call(&mut self, what: &str, i: usize) -> Result<(), String> {
            let name = format!("{what}{i}");
            self.calls.push(name.clone());
            if self.fail.as_deref() == Some(name.as_str()) {
                return Err(name);
            }
            Ok(())
        }
    }

    impl Hooks for Log {
        type Error = String;
        fn acquire(&mut self, i: usize) -> Result<(), String> {
            self.call("a", i)
        }
        fn touch(&mut self, i: usize) -> Result<(), String> {
            self.call("t", i)
        }
        fn release(&mut self, i: usize) -> Result<(), String> {
            self.call("r", i)
        }
    }

    #[test]
    fn success_touches_outputs_then_releases_all() {
        let mut log = Log::default();
        assert_eq!(around(&mut log, 2, [1], || Ok(5)), Ok(5));
        assert_eq!(log.calls, ["a0", "a1", "t1", "r0", "r1"]);
    }

    #[test]
    fn failure_skips_touch_and_still_releases() {
        let mut log = Log::default();
        let got: Result<(), String> = around(&mut log, 2, [1], || Err("run".into()));
        assert_eq!(got, Err("run".into()));
        assert_eq!(log.calls, ["a0", "a1", "r0", "r1"]);
    }

    #[test]
    fn failed_acquire_releases_only_what_was_acquired() {
        let mut log = Log {
            fail: Some("a1".into()),
            ..Log::default()
        };
        let got = around(&mut log, 3, [2], || Ok(()));
        assert_eq!(got, Err("a1".into()));
        assert_eq!(log.calls, ["a0", "a1", "r0"]);
    }

    #[test]
    fn first_error_wins_and_every_release_runs() {
        let mut log = Log {
            fail: Some("r0".into()),
            ..Log::default()
        };
        assert_eq!(around(&mut log, 2, [], || Ok(())), Err("r0".into()));
        assert_eq!(log.calls, ["a0", "a1", "r0", "r1"]);
    }
}
