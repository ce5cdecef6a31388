//! Compiled programs shared by every stencil defined from the same IR text: a model builds
//! one definition many times (PyFV3's dynamical core makes 394 stencil objects from 151
//! distinct IR texts, each again in every MPI rank's process), and the plan and machine code
//! depend on nothing else but the settings read when it is compiled.

use super::{compile, machine_code, Jit, Plan};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, Weak};

/// A plan and its machine code (None where this machine has no code generator or
/// `GRIDBUF_GTSCRIPT_JIT=0` says none).
#[derive(Debug)]
pub struct Compiled {
    /// The checked, planned program.
    pub plan: Arc<Plan>,
    /// Its machine code: tier one, with tier two as [`super::cgen::at_definition`] asked.
    pub jit: Option<Arc<Jit>>,
}

/// What a compilation reads besides the IR text: the environment switches of [`compile`],
/// [`Jit::compile`] and tier two ([`super::cgen`]), as they are now. A program compiled under
/// other settings (a test turning tier two off, another cache directory or compiler) is not
/// shared with this one.
fn settings() -> Vec<Option<std::ffi::OsString>> {
    [
        "GRIDBUF_GTSCRIPT_SWEEP",
        "GRIDBUF_GTSCRIPT_JIT",
        "GRIDBUF_TIER2",
        "GRIDBUF_VECTOR_MATH",
        "GRIDBUF_TIER2_CACHE",
        "CC",
        "PATH",
    ]
    .iter()
    .map(std::env::var_os)
    .collect()
}

type Key = (String, Vec<Option<std::ffi::OsString>>);

/// The programs compiled so far that some stencil still holds, by IR text and settings.
static PROGRAMS: Mutex<Option<Programs>> = Mutex::new(None);

struct Programs {
    by_key: FxHashMap<Key, Weak<Compiled>>,
    /// Entries when dropped ones were last cleared out: they are again when there are twice
    /// as many (so the map stays at most twice the programs alive, at a constant cost per
    /// insertion).
    swept_at: usize,
}

/// The compiled program of the IR `text` ([`compile`] and [`machine_code`]), shared with the
/// stencils that were defined from the same text under the same settings and are alive.
/// Errors are not kept: the next definition reports them again.
pub fn compile_shared(text: &str) -> crate::Result<Arc<Compiled>> {
    let key: Key = (text.to_owned(), settings());
    if let Some(found) = lock()
        .as_ref()
        .and_then(|p| p.by_key.get(&key))
        .and_then(Weak::upgrade)
    {
        return Ok(found);
    }
    // Compiled outside the lock: another definition may compile meanwhile (two threads
    // defining one text both compile it; the later one's program is kept).
    let plan = compile(text)?;
    let jit = machine_code(&plan)?;
    let compiled = Arc::new(Compiled {
        plan: Arc::new(plan),
        jit: jit.map(Arc::new),
    });
    let mut guard = lock();
    let programs = guard.get_or_insert_with(|| Programs {
        by_key: FxHashMap::default(),
        swept_at: 0,
    });
    if programs.by_key.len() >= 2 * programs.swept_at.max(32) {
        programs.by_key.retain(|_, w| w.strong_count() > 0);
        programs.swept_at = programs.by_key.len();
    }
    programs.by_key.insert(key, Arc::downgrade(&compiled));
    Ok(compiled)
}

/// The map, whatever a thread that panicked while holding it left (entries are only
/// inserted whole).
fn lock() -> std::sync::MutexGuard<'static, Option<Programs>> {
    PROGRAMS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::compile_shared;
    use std::sync::Arc;

    const IR: &str = "stencil shared_test float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 add f 0 0 0 0 0 c 1.0\n";

    #[test]
    fn one_text_compiles_once_while_a_stencil_holds_it() {
        let a = compile_shared(IR).expect("compiles");
        let b = compile_shared(IR).expect("compiles");
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second definition shares the first's program"
        );
        let other = compile_shared(&IR.replace("c 1.0", "c 2.0")).expect("compiles");
        assert!(!Arc::ptr_eq(&a, &other), "another text is another program");
        let plan = Arc::downgrade(&a.plan);
        drop((a, b));
        assert!(plan.upgrade().is_none(), "the cache keeps no program alive");
        let again = compile_shared(IR).expect("compiles");
        assert!(!Arc::ptr_eq(&again, &other));
    }

    #[test]
    fn errors_are_reported_every_time() {
        let bad = "stencil bad float64\nfield a IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 0 0 add f 7 0 0 0 0\n";
        assert!(compile_shared(bad).is_err());
        assert!(compile_shared(bad).is_err());
    }
}
