//! Tier two: C from the same plan and schedule as the Cranelift code, compiled by the
//! system's C compiler in the background and swapped in while calls run.
//!
//! Cranelift gives a first result in milliseconds; an optimising C compiler gives faster code
//! (vectors as wide as the machine's, better scheduling) a second or so later. At a
//! stencil's first call ([`start`]; or at its definition, see [`Mode`]) it writes C for what the
//! tier-one code computes (`source`: each row, point and walk function, each the
//! instruction-for-instruction semantics of its Cranelift function), and one process-wide
//! worker thread compiles it (`compiler`: the system's `cc`, cached on disk by source,
//! compiler and processor), loads it and replaces each function in its [`SwapFn`] slot: one
//! atomic store, so a call runs either tier's function whole, and never waits for tier two.
//! Anything that fails (no compiler, a compiler error, an unwritable cache) leaves the
//! stencil on tier one and prints one warning per process.
//!
//! Environment: `GRIDBUF_TIER2=0` switches tier two off, `GRIDBUF_TIER2=define` compiles it
//! when the stencil is defined (the definition waits: for benchmarks and batch jobs);
//! `GRIDBUF_TIER2_CACHE` chooses the cache directory; `CC` the compiler.

pub(crate) mod compiler;
pub(crate) mod source;
pub(crate) mod tape;
pub(crate) mod vectorise;

use crate::gtscript::cgen::tape::MathTable;
use crate::gtscript::jit::abi::{LoopCode, LoopFn, PartCode, RowFn, SwapFn, TierState, TierTwo};
use crate::gtscript::jit::point::{self, Part, PointRange};
use crate::gtscript::jit::Jit;
use crate::gtscript::plan::schedule::{Layout, PointWalk};
use crate::gtscript::plan::Plan;
use crate::runtime::env;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// When tier two is compiled (`GRIDBUF_TIER2`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Never (`GRIDBUF_TIER2=0`).
    Off,
    /// In the background, from a stencil's first call (the default).
    Background,
    /// When the stencil is defined, before the definition returns (`GRIDBUF_TIER2=define`).
    Define,
}

/// The mode `GRIDBUF_TIER2` asks for (read at each definition, so tests may change it; a
/// stencil keeps the mode of its definition).
pub fn mode() -> Mode {
    let expected = "0, off, false or no; define; 1, on, true, yes or background";
    env::read("GRIDBUF_TIER2", expected, |v| {
        match v.to_ascii_lowercase().as_str() {
            "define" => Some(Mode::Define),
            "background" => Some(Mode::Background),
            other => env::parse_flag(other).map(|on| if on { Mode::Background } else { Mode::Off }),
        }
    })
    .unwrap_or(Mode::Background)
}

/// Whether tier two calls the C library's vector math functions (glibc's libmvec, where this
/// process can load it; `GRIDBUF_VECTOR_MATH=0` says no, for results bit for bit tier one's).
/// Read at each definition, as [`mode`].
pub fn vector_math() -> bool {
    env::flag("GRIDBUF_VECTOR_MATH", true) && libmvec_present()
}

/// Whether glibc's vector math library loads in this process (x86-64 Linux with glibc only:
/// the functions' vector names follow that platform's vector ABI).
fn libmvec_present() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    {
        static PRESENT: OnceLock<bool> = OnceLock::new();
        // SAFETY: libmvec is a part of the C library this process runs on; loading it runs
        // only glibc's own initialisers.
        *PRESENT.get_or_init(|| unsafe { libloading::Library::new(compiler::LIBMVEC) }.is_ok())
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Tier two of `jit` (made from `plan`) as [`mode`] asks at its definition: none, compiled
/// and installed now, or wanted at the first call ([`start`]); with vector math where
/// [`vector_math`] says, then.
pub fn at_definition(plan: &Plan, jit: &Jit) {
    match mode() {
        Mode::Off => {}
        Mode::Background => jit.want_tier_two(vector_math()),
        Mode::Define => {
            if let Some(job) = prepare(plan, jit, vector_math(), None) {
                job.run();
            }
        }
    }
}

/// Starts tier two of `jit` (made from `plan`) at its first call, on `layout`, where its
/// definition asked for that ([`at_definition`]): installed at once where the disk cache holds
/// its module (a warm cache: loading costs about what the first call does, and every call is
/// then tier two's), else its compilation is handed back, queued for the worker when the
/// caller drops it (at the end of the call: see [`Queued`]); every later call returns at once.
pub fn start(plan: &Plan, jit: &Jit, layout: Layout) -> Option<Queued> {
    let tier = jit.tier_two();
    if tier.started.load(Ordering::Relaxed) || !tier.wanted.load(Ordering::Acquire) {
        return None;
    }
    let vector_math = tier.vector_math.load(Ordering::Relaxed);
    let job = prepare(plan, jit, vector_math, Some(layout))?;
    match compiler::load_cached(&job.text, job.build) {
        Some(lib) => {
            job.finish(Ok(lib));
            None
        }
        None => Some(Queued(Some(job))),
    }
}

/// A first call's tier-two compilation, queued for the worker when dropped: the call that
/// started it holds it until it returns, so the compiler takes no core from that call, whose
/// tier one it could not replace in time anyway (on 2 cores, pace's heavy physics stencils'
/// first calls at C48 took 1.3-1.5x as long with the compiler started as they began).
pub struct Queued(Option<Job>);

impl Drop for Queued {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            queue(job);
        }
    }
}

/// Compiles and installs tier two of `jit` (made from `plan`) now, whatever the mode, unless
/// it was started before, with vector math where [`vector_math`] says; returns where it
/// stands (for tests and benchmarks).
pub fn install_now(plan: &Plan, jit: &Jit) -> TierState {
    if let Some(job) = prepare(plan, jit, vector_math(), None) {
        job.run();
    }
    jit.tier_two_state()
}

/// Marks tier two of `jit` started and writes its C (with vector math where `vector_math`
/// says; rows compiled on first use where calls on `layout` run them, all for `None`); the
/// job that compiles and installs it, `None` where it was started before or there is nothing
/// to compile.
fn prepare(plan: &Plan, jit: &Jit, vector_math: bool, layout: Option<Layout>) -> Option<Job> {
    let tier = jit.tier_two();
    if tier.started.swap(true, Ordering::AcqRel) {
        return None;
    }
    // Pending from here, not only once the C is written: a waiter that comes meanwhile waits.
    tier.set(TierState::Pending);
    // Rows compiled on first use that tier two writes C for: it swaps their functions.
    if let Err(e) = jit.compile_rows_for_tier_two(plan, layout) {
        tier.set(TierState::Failed(e.to_string()));
        return None;
    }
    let src = source::module(plan, jit, &MathTable::new(vector_math), layout);
    if src.is_empty() {
        tier.set(TierState::Failed("no function to compile".into()));
        return None;
    }
    let rows = src
        .rows
        .iter()
        .filter_map(|(name, s, t)| Some((name.clone(), Arc::clone(&jit.stmt_code(*s, *t)?.f))))
        .collect();
    let loops = src
        .loops
        .iter()
        .filter_map(|(name, s, t)| {
            Some((name.clone(), Arc::clone(&jit.point_loop_code(*s, *t)?.f)))
        })
        .collect();
    let walks = src
        .walks
        .iter()
        .map(|(name, s, w)| (name.clone(), (*s, *w as usize)))
        .collect();
    // The fused runs' and tier-two-only walks' interfaces, as tier one's point functions of
    // the same parts have.
    let interface = |name: &String, s: usize, range: PointRange| {
        let (t, exit) = (range.first, range.exit);
        let part = Part::new(plan, s, &range);
        let (operands, outs, vk, parts) = point::interface(std::slice::from_ref(&part));
        let run = FusedRun {
            s,
            t,
            exit,
            operands,
            outs,
            vk,
            parts,
        };
        (name.clone(), run)
    };
    let fused = src
        .fused
        .iter()
        .map(|(name, s, t, exit)| {
            let range = PointRange {
                first: *t,
                exit: *exit,
                walk: None,
            };
            interface(name, *s, range)
        })
        .collect();
    let levels = src
        .levels
        .iter()
        .map(|(name, s)| {
            let range = PointRange {
                first: 0,
                exit: plan.sections[*s].stmts.len(),
                walk: Some(PointWalk::Levels),
            };
            interface(name, *s, range)
        })
        .collect();
    let statements = plan.sections.iter().map(|sec| sec.stmts.len()).collect();
    // Scalar loops want other tuning than straight code (see `compiler::Build::loops`).
    let build = compiler::Build {
        vector_math,
        loops: plan.has_loops(),
    };
    Some(Job {
        text: src.text,
        build,
        rows,
        loops,
        walks,
        fused,
        levels,
        statements,
        tier: Arc::downgrade(tier),
        name: plan.program.name.clone(),
    })
}

/// One stencil's tier two, waiting for the worker.
struct Job {
    text: String,
    /// How `text` is built: linked with libmvec where it calls the vector math functions,
    /// tuned for `while` loops where it has them.
    build: compiler::Build,
    /// The row functions' and loops' slots, by their functions' names in `text`.
    rows: Vec<(String, Arc<SwapFn<RowFn>>)>,
    loops: Vec<(String, Arc<SwapFn<LoopFn>>)>,
    /// The walks' functions' names and keys (see [`TierTwo::adopt`]).
    walks: Vec<(String, (usize, usize))>,
    /// The fused straight runs' functions' names and what they are handed.
    fused: Vec<(String, FusedRun)>,
    /// The tier-two-only walks of levels, likewise (each a whole section).
    levels: Vec<(String, FusedRun)>,
    /// The number of statements of each section (the shape of [`TierTwo::fused`]).
    statements: Vec<usize>,
    /// The stencil's tier two (gone when the stencil is dropped first: then nothing is done).
    tier: Weak<TierTwo>,
    /// The stencil's name, for the warning.
    name: String,
}

/// A fused straight run of float code (see
/// [`crate::gtscript::plan::schedule::SectionSchedule::fused`]), or a walk of a section's
/// levels that tier two alone has (see
/// [`crate::gtscript::plan::schedule::SectionSchedule::levels`]): its section, first statement,
/// one past its last, and what its point function is handed (see [`LoopCode`]).
struct FusedRun {
    s: usize,
    t: usize,
    exit: usize,
    operands: Vec<(u32, [i32; 3])>,
    outs: Vec<u32>,
    vk: Vec<(u32, crate::gtscript::ir::Ty)>,
    parts: Vec<PartCode>,
}

impl FusedRun {
    /// Its code, with tier two's function `f`.
    fn code(&self, f: LoopFn) -> LoopCode {
        LoopCode {
            f: Arc::new(SwapFn::new(f)),
            operands: self.operands.clone(),
            outs: self.outs.clone(),
            vk: self.vk.clone(),
            exit: self.exit,
            parts: self.parts.clone(),
        }
    }
}

impl Job {
    /// Compiles (or finds in the cache) the job's module and installs it.
    fn run(self) {
        let lib = compiler::load(&self.text, self.build);
        self.finish(lib);
    }

    /// As [`Job::run`], but gives the job back where another process is compiling its module
    /// (the worker runs its other jobs meanwhile).
    fn try_run(self) -> Option<Job> {
        match compiler::try_load(&self.text, self.build) {
            Ok(None) => Some(self),
            Ok(Some(lib)) => {
                self.finish(Ok(lib));
                None
            }
            Err(e) => {
                self.finish(Err(e));
                None
            }
        }
    }

    /// Installs the job's module `lib` (or records why there is none) in its stencil's tier
    /// two.
    fn finish(self, lib: Result<libloading::Library, String>) {
        let Some(tier) = self.tier.upgrade() else {
            return;
        };
        match lib.and_then(|lib| install(&self, &tier, lib)) {
            Ok(n) => tier.set(TierState::Ready(n)),
            Err(e) => {
                warn_once(&format!("stencil {:?}: {e}", self.name));
                tier.set(TierState::Failed(e));
            }
        }
    }
}

/// Keeps the job's loaded module `lib` in `tier` and replaces each slot's function by the
/// module's function of its name (the walks' in `tier`'s table, which each walk adopts);
/// returns how many functions it has.
fn install(job: &Job, tier: &TierTwo, lib: libloading::Library) -> Result<usize, String> {
    let table: Vec<*const u8> = crate::gtscript::ops::math_symbols()
        .into_iter()
        .map(|s| s.1)
        .collect();
    // SAFETY: `gb_init` and the functions are defined by the module `job.text` (`source`)
    // with exactly these C signatures: `void gb_init(void *const *)`, which copies as many
    // addresses as `math_symbols` has (the table's length, written into the module), and the
    // signatures of `RowFn` and `LoopFn`.
    let (rows, loops, walks, fused, levels) = unsafe {
        let init = lib
            .get::<unsafe extern "C" fn(*const *const u8)>(b"gb_init\0")
            .map_err(|e| e.to_string())?;
        init(table.as_ptr());
        let rows = symbols::<RowFn>(&lib, job.rows.iter().map(|r| &r.0))?;
        let loops = symbols::<LoopFn>(&lib, job.loops.iter().map(|r| &r.0))?;
        let walks = symbols::<LoopFn>(&lib, job.walks.iter().map(|r| &r.0))?;
        let fused = symbols::<LoopFn>(&lib, job.fused.iter().map(|r| &r.0))?;
        let levels = symbols::<LoopFn>(&lib, job.levels.iter().map(|r| &r.0))?;
        (rows, loops, walks, fused, levels)
    };
    // The library lives as long as `tier`, which the stencil's code keeps beside the slots.
    if tier.code.set(Box::new(lib)).is_err() {
        return Err("tier two installed twice".into());
    }
    for ((_, slot), f) in job.rows.iter().zip(rows) {
        // SAFETY: `f` computes what the slot's Cranelift function computes (`source` writes
        // each operation with its semantics, from the same tape), takes the same arguments,
        // and its library is kept by `tier` (set above), which the slot's owner keeps.
        unsafe { slot.replace(f) };
    }
    for ((_, slot), f) in job.loops.iter().zip(loops) {
        // SAFETY: as above, from the same parts (`jit::point::Part`) as the loop's function.
        unsafe { slot.replace(f) };
    }
    *tier.walks.lock().unwrap_or_else(|e| e.into_inner()) =
        job.walks.iter().map(|w| w.1).zip(walks).collect();
    tier.has_walks.store(true, Ordering::Release);
    // The fused runs' functions have no tier-one slot: calls find them in this table (set
    // once; `tier` keeps the library they live in).
    let mut table: Vec<Vec<Option<LoopCode>>> = job
        .statements
        .iter()
        .map(|&n| (0..n).map(|_| None).collect())
        .collect();
    for ((_, run), f) in job.fused.iter().zip(fused) {
        let slot = table
            .get_mut(run.s)
            .and_then(|sec| sec.get_mut(run.t))
            .ok_or("a fused run outside the plan")?;
        *slot = Some(run.code(f));
    }
    if tier.fused.set(table).is_err() {
        return Err("tier two's fused runs installed twice".into());
    }
    // Likewise the walks of levels tier one lacks, per section.
    let mut table: Vec<Option<LoopCode>> = job.statements.iter().map(|_| None).collect();
    for ((_, run), f) in job.levels.iter().zip(levels) {
        let slot = table.get_mut(run.s).ok_or("a walk outside the plan")?;
        *slot = Some(run.code(f));
    }
    if tier.levels.set(table).is_err() {
        return Err("tier two's walks of levels installed twice".into());
    }
    Ok(job.rows.len() + job.loops.len() + job.walks.len() + job.fused.len() + job.levels.len())
}

/// The functions `names` of `lib`, as `F`.
///
/// # Safety
/// Each must be a function of type `F`.
unsafe fn symbols<'n, F: Copy>(
    lib: &libloading::Library,
    names: impl Iterator<Item = &'n String>,
) -> Result<Vec<F>, String> {
    names
        .map(|name| {
            // SAFETY: the caller's promise.
            unsafe { lib.get::<F>(format!("{name}\0").as_bytes()) }
                .map(|f| *f)
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Queues `job` for the process's one worker thread (started on first use).
fn queue(job: Job) {
    static WORKER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    let tx = WORKER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("gridbuf-tier2".into())
            .spawn(move || work(rx));
        if let Err(e) = spawned {
            warn_once(&format!("no worker thread: {e}"));
        }
        Mutex::new(tx)
    });
    let sent = tx.lock().unwrap_or_else(|e| e.into_inner()).send(job);
    if let Err(e) = sent {
        // The worker could not start: the job's stencil stays on tier one.
        let job = e.0;
        if let Some(tier) = job.tier.upgrade() {
            tier.set(TierState::Failed("no worker thread".into()));
        }
    }
}

/// The worker: runs the queued jobs in turn. A job whose module another process is compiling
/// (MPI ranks define the same stencils at about the same time) goes to the back of a list of
/// its own, tried again once no new job waits: the ranks then compile different modules side
/// by side, where waiting for each claim in turn made them compile one module at a time
/// (PyFV3's dynamical core on 6 ranks: 28 of its 121 modules compiled in three short runs).
fn work(rx: std::sync::mpsc::Receiver<Job>) {
    let mut deferred: std::collections::VecDeque<Job> = std::collections::VecDeque::new();
    loop {
        let job = match rx.try_recv() {
            Ok(job) => job,
            Err(std::sync::mpsc::TryRecvError::Disconnected) if deferred.is_empty() => return,
            Err(_) => match deferred.pop_front() {
                Some(job) => {
                    // Only jobs others are compiling: give them time before asking again.
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    job
                }
                None => match rx.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                },
            },
        };
        if let Some(busy) = job.try_run() {
            deferred.push_back(busy);
        }
    }
}

/// Prints `what` to standard error, the first time only in this process.
fn warn_once(what: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "gridbuf: tier two (C compiled in the background) is not available: {what}; \
             stencils keep their first-tier code (GRIDBUF_TIER2=0 switches tier two off)"
        );
    }
}

/// For tests: `plan`'s tier-one code with tier two installed, its math functions those of tier
/// one (no vector math: the C computes tier one's bits), or the reason it is not. A plan whose
/// statements have no row function gives its tier-one code (nothing to replace).
#[cfg(test)]
pub(crate) fn tier_two_of(plan: &Plan) -> Result<Option<Jit>, String> {
    let Some(jit) = Jit::compile(plan).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    if let Some(job) = prepare(plan, &jit, false, None) {
        job.run();
    }
    match jit.tier_two_state() {
        TierState::Ready(_) => Ok(Some(jit)),
        TierState::Failed(e) if e == "no function to compile" => Ok(Some(jit)),
        other => Err(format!("tier two: {other:?}")),
    }
}

/// For tests: the C source tier two writes for `plan` (compiled by `jit`), as
/// [`tier_two_of`] compiles it.
#[cfg(test)]
pub(crate) fn tier_two_source(plan: &Plan, jit: &Jit) -> String {
    source::module(plan, jit, &MathTable::new(false), None).text
}
