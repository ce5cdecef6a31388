//! The system's C compiler and tier two's disk cache: finding the compiler once per process,
//! compiling a module to a shared object in a per-user cache directory that processes and MPI
//! ranks share (each writes under a name of its own, then renames), and loading it.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What every module is compiled with: optimised for this machine, with IEEE semantics kept
/// (no fast-math, no contraction into fused multiply-adds, so each operation rounds as tier
/// one's does); `-fno-math-errno` lets `sqrt` be the instruction and the math functions called
/// by name be vectorised (with vector math; else they are called through the table).
pub(crate) const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-fPIC",
    "-shared",
    "-fno-fast-math",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-strict-aliasing",
    "-w",
];

/// What gcc adds on x86-64 for a module with `while` loops (see [`Build::loops`]): keep
/// general-purpose values out of vector registers. Tuned for some processors (`-march=native`
/// on AMD Zen 3 here), gcc parked a loop walk's integers (row bases, the bounds of checked
/// run-time K reads) in XMM registers, a move each way per use on the loop's path: the vertical
/// remap's column walk 12.8 -> 10.3 ms (128 x 128 x 80, one thread). Not for every module:
/// a straight copy of many fields (pace's `copy_dycore_to_physics`) was 8 % slower with it.
const GCC_X86_LOOP_FLAGS: &[&str] =
    &["-mtune-ctrl=^inter_unit_moves_to_vec,^inter_unit_moves_from_vec"];

/// How a module is built, beside [`FLAGS`] (part of its cache key).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Build {
    /// It calls the vector math functions: linked with glibc's vector math library.
    pub vector_math: bool,
    /// It has `while` loops, run point by point: scalar code with branches, whose integers
    /// gcc is told to keep in general-purpose registers ([`GCC_X86_LOOP_FLAGS`]).
    pub loops: bool,
}

/// glibc's vector math library, by its file name (no development link needed).
pub(crate) const LIBMVEC: &str = "libmvec.so.1";

/// How long one compilation may take before it is abandoned (the stencil stays on tier one).
const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// A C compiler: its command (with any arguments `CC` names) and what identifies it in cache
/// keys (its version text, the flags and this machine's processor).
#[derive(Debug)]
pub(crate) struct Compiler {
    cmd: Vec<String>,
    /// What a module with `while` loops adds to [`FLAGS`] (see [`Build::loops`]).
    loop_flags: &'static [&'static str],
    id: String,
}

/// The compiler of this process: `CC` (a command and arguments), else `cc`, `gcc` or `clang`,
/// whichever answers `--version` first; the reason where none does.
pub(crate) fn compiler() -> Result<&'static Compiler, String> {
    static C: OnceLock<Result<Compiler, String>> = OnceLock::new();
    C.get_or_init(find).as_ref().map_err(Clone::clone)
}

fn find() -> Result<Compiler, String> {
    let named = std::env::var("CC").ok().filter(|c| !c.trim().is_empty());
    let candidates: Vec<String> = match &named {
        Some(cc) => vec![cc.clone()],
        None => ["cc", "gcc", "clang"].map(String::from).to_vec(),
    };
    for c in &candidates {
        let cmd: Vec<String> = c.split_whitespace().map(String::from).collect();
        let Ok(out) = Command::new(&cmd[0])
            .args(&cmd[1..])
            .arg("--version")
            .stdin(Stdio::null())
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let version = String::from_utf8_lossy(&out.stdout);
        let loop_flags = if cfg!(target_arch = "x86_64") && is_gcc(&version) {
            GCC_X86_LOOP_FLAGS
        } else {
            &[]
        };
        let id = format!(
            "{}\n{}\n{}\n{}\n{}",
            cmd.join(" "),
            version.lines().next().unwrap_or(""),
            FLAGS.join(" "),
            loop_flags.join(" "),
            processor()
        );
        return Ok(Compiler {
            cmd,
            loop_flags,
            id,
        });
    }
    Err(match named {
        Some(cc) => format!("the C compiler CC={cc:?} does not run"),
        None => "no C compiler found (cc, gcc, clang; set CC to name one)".to_string(),
    })
}

/// Whether `--version` printed `version` is gcc's (under any name: `cc`, `gcc-12`, ...), whose
/// text names its copyright holder; clang's never does.
fn is_gcc(version: &str) -> bool {
    version.contains("Free Software Foundation") && !version.to_lowercase().contains("clang")
}

/// What `-march=native` depends on: this processor's model and feature flags (a cache shared
/// between machines then never hands one machine another's code).
fn processor() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let pick = |key: &str| {
        info.lines()
            .find(|l| l.starts_with(key))
            .map(|l| l.to_string())
            .unwrap_or_default()
    };
    format!("{} {}", pick("model name"), pick("flags"))
}

/// The cache directory: `GRIDBUF_TIER2_CACHE`, else `$XDG_CACHE_HOME/gridbuf/tier2`, else
/// `~/.cache/gridbuf/tier2`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GRIDBUF_TIER2_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("gridbuf").join("tier2"));
    }
    std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("gridbuf")
            .join("tier2")
    })
}

/// A name unique to this process and call, for files written before they are renamed.
fn unique(dir: &Path, key: &str, ext: &str) -> PathBuf {
    dir.join(format!(".{key}.{}.{ext}", serial()))
}

/// This process's id and a number new at each call.
fn serial() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}.{n}", std::process::id())
}

/// The cache key of `source` compiled by `c`: a hash of both (the entry also holds the
/// source, compared before the entry is used, so a collision costs a compilation, never a
/// wrong function).
fn key(c: &Compiler, source: &str, build: Build) -> String {
    let mut h1 = rustc_hash::FxHasher::default();
    (&c.id, source, build).hash(&mut h1);
    let mut h2 = std::collections::hash_map::DefaultHasher::new();
    (source, &c.id, build).hash(&mut h2);
    format!("{:016x}{:016x}", h1.finish(), h2.finish())
}

/// The shared object of `source`: from the cache when an entry holds this very source, else
/// compiled (into the cache, or into a private temporary directory where the cache cannot be
/// written) and loaded, built as `build` says.
pub(crate) fn load(source: &str, build: Build) -> Result<libloading::Library, String> {
    load_in(cache_dir(), source, build, CLAIM_WAIT)
}

/// The shared object of `source` where the cache holds it (compiled before, by this process
/// or another), loaded; None where it does not, or there is no compiler or cache directory.
pub(crate) fn load_cached(source: &str, build: Build) -> Option<libloading::Library> {
    let c = compiler().ok()?;
    cached(&cache_dir()?, &key(c, source, build), source)
}

/// [`load`] for a worker with other modules to compile: None at once where another process
/// holds a fresh claim on the entry (it is compiling it; ask again later), instead of waiting.
pub(crate) fn try_load(source: &str, build: Build) -> Result<Option<libloading::Library>, String> {
    try_load_in(cache_dir(), source, build, CLAIM_WAIT)
}

/// [`try_load`] with the cache in `cache` and `stale` for [`CLAIM_WAIT`].
fn try_load_in(
    cache: Option<PathBuf>,
    source: &str,
    build: Build,
    stale: Duration,
) -> Result<Option<libloading::Library>, String> {
    load_entry(cache, source, build, stale, false)
}

/// How long a process waits for a cache entry another process has claimed (see [`claim`])
/// before it compiles the module itself; a claim older than this is taken as abandoned.
const CLAIM_WAIT: Duration = Duration::from_secs(120);

/// [`load`] with the cache in `cache` (none: a private directory) and `wait` for [`CLAIM_WAIT`].
fn load_in(
    cache: Option<PathBuf>,
    source: &str,
    build: Build,
    wait: Duration,
) -> Result<libloading::Library, String> {
    load_entry(cache, source, build, wait, true)?
        .ok_or_else(|| "a claimed cache entry was not waited for (internal error)".into())
}

/// [`load_in`] and [`try_load_in`]: where another process holds a claim on the entry younger
/// than `wait`, waits for it (`wait_claimed`) or returns what the cache holds now (None if it
/// holds nothing yet). Never None when it waits.
fn load_entry(
    cache: Option<PathBuf>,
    source: &str,
    build: Build,
    wait: Duration,
    wait_claimed: bool,
) -> Result<Option<libloading::Library>, String> {
    let c = compiler()?;
    let key = key(c, source, build);
    if let Some(dir) = cache {
        if let Some(lib) = cached(&dir, &key, source) {
            return Ok(Some(lib));
        }
        if make_dir(&dir).is_ok() {
            // MPI ranks define the same stencils at about the same time: one compiles each
            // module, the others wait for its entry (6 ranks on 2 cores, PyFV3's dynamical
            // core, 121 modules: each rank compiling all of them took 65 s).
            let claimed = claim(&dir, &key, wait);
            if claimed.is_none() {
                if !wait_claimed {
                    // Another process compiles it; it may have written the entry since.
                    return Ok(cached(&dir, &key, source));
                }
                let deadline = Instant::now() + wait;
                while Instant::now() < deadline && dir.join(format!("{key}.lock")).exists() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Some(lib) = cached(&dir, &key, source) {
                    return Ok(Some(lib));
                }
            }
            remove_abandoned(&dir, &key, ABANDONED_AFTER);
            let r = compile_into(c, &dir, &key, source, true, build);
            drop(claimed);
            if let Ok(lib) = r {
                static PRUNED: std::sync::Once = std::sync::Once::new();
                if let Some(limit) = cache_limit() {
                    PRUNED.call_once(|| prune(&dir, limit, &key));
                }
                return Ok(Some(lib));
            }
        }
    }
    // The cache directory cannot be written (or has none): a private one, removed after.
    let dir = std::env::temp_dir().join(format!("gridbuf-tier2-{}", serial()));
    make_dir(&dir).map_err(|e| format!("no directory to compile in: {e}"))?;
    let r = compile_into(c, &dir, &key, source, false, build);
    let _ = std::fs::remove_dir_all(&dir);
    r.map(Some)
}

/// The cache entry `key` of `dir` holding this very `source`, loaded; None where there is none
/// or it cannot be loaded (a corrupt entry, whose `.c` is then removed so it is compiled again).
fn cached(dir: &Path, key: &str, source: &str) -> Option<libloading::Library> {
    let (so, src) = (dir.join(format!("{key}.so")), dir.join(format!("{key}.c")));
    if !std::fs::read(&src).is_ok_and(|s| s == source.as_bytes()) {
        return None;
    }
    // SAFETY: the entry's source equals ours (the `.so` is renamed into place before its `.c`,
    // so a present `.c` means its `.so` was complete), compiled by this compiler for this
    // processor (both in the key); loading runs no code of ours but the compiler's static
    // initialisers, of which the module has none.
    match unsafe { libloading::Library::new(&so) } {
        Ok(lib) => {
            mark_used(&src);
            Some(lib)
        }
        Err(_) => {
            let _ = std::fs::remove_file(&src);
            None
        }
    }
}

/// This process's claim on compiling the cache entry `key`: the file `{key}.lock`, created
/// only if no other process holds it, removed when dropped.
struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Claims the entry `key` of `dir` for this process; None where another process holds a claim
/// younger than `stale` (it is compiling the module). An older claim is taken over (its
/// process died or hangs); where no lock file can be written, the entry is claimed without one.
fn claim(dir: &Path, key: &str, stale: Duration) -> Option<Claim> {
    let lock = dir.join(format!("{key}.lock"));
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(_) => return Some(Claim(lock)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let age = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok());
                if age.is_some_and(|a| a < stale) {
                    return None;
                }
                let _ = std::fs::remove_file(&lock);
            }
            Err(_) => break,
        }
    }
    Some(Claim(dir.join(format!(".{key}.{}.nolock", serial()))))
}

/// Age past which a private file of a compilation (`.{key}.*`) is taken as left behind by a
/// process that ended while compiling (a model that exits before tier two lands leaves its
/// compiler's output): older than any compilation may run.
const ABANDONED_AFTER: Duration = Duration::from_secs(COMPILE_TIMEOUT.as_secs() + 60);

/// Removes the private files of entry `key` in `dir` older than `age`. Called by the process
/// that holds the entry's claim, before it compiles: no other process writes them then, but
/// one whose claim was taken over, within `age` of its start.
fn remove_abandoned(dir: &Path, key: &str, age: Duration) {
    let prefix = format!(".{key}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix))
        {
            continue;
        }
        let elapsed = entry.metadata().and_then(|m| m.modified()).ok();
        if elapsed
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a >= age)
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The cache's size limit when `GRIDBUF_TIER2_CACHE_MB` is unset: entries of a gridbuf version
/// or of stencils no longer used would otherwise pile up (a day of benchmarks here: 12 000
/// files, 154 MB).
const DEFAULT_CACHE_MB: u64 = 1024;

/// The most bytes the cache may hold: `GRIDBUF_TIER2_CACHE_MB` mebibytes, else
/// [`DEFAULT_CACHE_MB`] (also where it holds a value it does not take, reported once); None
/// (no limit) where it is 0.
fn cache_limit() -> Option<u64> {
    let mb = crate::runtime::env::read(
        "GRIDBUF_TIER2_CACHE_MB",
        "a whole number of mebibytes, 0 for no limit",
        |v| v.parse::<u64>().ok(),
    )
    .unwrap_or(DEFAULT_CACHE_MB);
    (mb > 0).then(|| mb.saturating_mul(1 << 20))
}

/// How stale an entry's mark of use may get before a load renews it: a model that defines its
/// stencils again writes to the cache at most once an hour per entry.
const MARK_EVERY: Duration = Duration::from_secs(3600);

/// Marks the entry whose source is `src` as used now (the file's modification time), so that
/// [`prune`] removes the entries used longest ago first.
fn mark_used(src: &Path) {
    let stale = std::fs::metadata(src)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= MARK_EVERY);
    if stale {
        if let Ok(f) = std::fs::File::options().append(true).open(src) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }
}

/// Whether `name` is a cache key as [`key`] writes it: 32 hexadecimal digits.
fn is_key(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Where the entries of `dir` take more than `limit` bytes, removes whole entries (the `.c`
/// first, which makes the entry unused, then the `.so`; no other file), those
/// used longest ago first, until they take at most three quarters of `limit`; never `keep`.
/// A process that has loaded a removed `.so` keeps it: the file is unlinked, not changed.
fn prune(dir: &Path, limit: u64, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // Per key: its files, their bytes, and when it was last used (its `.c`'s time).
    struct Entry {
        files: Vec<PathBuf>,
        bytes: u64,
        used: std::time::SystemTime,
    }
    let mut keys: std::collections::HashMap<String, Entry> = std::collections::HashMap::new();
    let mut total = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Only the cache's own entries: a directory named by `GRIDBUF_TIER2_CACHE` may hold
        // other files.
        let Some((key, ext)) = name.split_once('.') else {
            continue;
        };
        if !is_key(key) || !matches!(ext, "c" | "so") {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        total = total.saturating_add(meta.len());
        let e = keys.entry(key.to_string()).or_insert(Entry {
            files: Vec::new(),
            bytes: 0,
            used: std::time::UNIX_EPOCH,
        });
        e.files.push(entry.path());
        e.bytes = e.bytes.saturating_add(meta.len());
        if ext == "c" {
            e.used = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        }
    }
    if total <= limit {
        return;
    }
    let mut order: Vec<Entry> = keys
        .into_iter()
        .filter(|(k, _)| k != keep)
        .map(|(_, e)| e)
        .collect();
    order.sort_by_key(|e| e.used);
    let target = limit / 4 * 3;
    for mut e in order {
        if total <= target {
            break;
        }
        e.files
            .sort_by_key(|p| p.extension().is_none_or(|x| x != "c"));
        for f in &e.files {
            let _ = std::fs::remove_file(f);
        }
        total = total.saturating_sub(e.bytes);
    }
}

/// Creates `dir` (readable by its owner only, where it is new).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Compiles `source` in `dir` (built as `build` says) and loads it;
/// `publish`: rename it into the cache's entry `key` (the `.so`, then the `.c`).
fn compile_into(
    c: &Compiler,
    dir: &Path,
    key: &str,
    source: &str,
    publish: bool,
    build: Build,
) -> Result<libloading::Library, String> {
    let src = unique(dir, key, "c");
    let so = unique(dir, key, "so");
    let cleanup = |paths: &[&Path]| {
        for p in paths {
            let _ = std::fs::remove_file(p);
        }
    };
    std::fs::File::create(&src)
        .and_then(|mut f| f.write_all(source.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let err = unique(dir, key, "err");
    let result = run(c, &src, &so, &err, build);
    cleanup(&[&err]);
    if let Err(e) = result {
        cleanup(&[&src, &so]);
        return Err(e);
    }
    let path = if publish {
        let (so_at, src_at) = (dir.join(format!("{key}.so")), dir.join(format!("{key}.c")));
        let moved = std::fs::rename(&so, &so_at).and_then(|_| std::fs::rename(&src, &src_at));
        if moved.is_err() {
            cleanup(&[&src, &so]);
            return Err("cannot rename into the cache".into());
        }
        so_at
    } else {
        so.clone()
    };
    // SAFETY: the file was just compiled from `source` by `c` (and, where published, renamed
    // over an entry of the same key, whose content is the same module); the module has no
    // static initialisers.
    let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| e.to_string());
    if !publish {
        cleanup(&[&src, &so]);
    }
    lib
}

/// Runs the compiler on `src` to `so` (built as `build` says), its
/// error output (written to `err`) the error.
fn run(c: &Compiler, src: &Path, so: &Path, err: &Path, build: Build) -> Result<(), String> {
    let log =
        std::fs::File::create(err).map_err(|e| format!("cannot write {}: {e}", err.display()))?;
    let mut child = Command::new(&c.cmd[0])
        .args(&c.cmd[1..])
        .args(FLAGS)
        .args(if build.loops { c.loop_flags } else { &[] })
        .arg("-o")
        .arg(so)
        .arg(src)
        .args(if build.vector_math {
            vec![format!("-l:{LIBMVEC}"), "-lm".to_string()]
        } else {
            Vec::new()
        })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", c.cmd[0]))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let err = std::fs::read_to_string(err).unwrap_or_default();
                return if status.success() {
                    Ok(())
                } else {
                    let head: Vec<&str> = err.lines().take(5).collect();
                    Err(format!(
                        "{} failed ({status}): {}",
                        c.cmd[0],
                        head.join(" | ")
                    ))
                };
            }
            Ok(None) if start.elapsed() > COMPILE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} took over {COMPILE_TIMEOUT:?}", c.cmd[0]));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        claim, compiler, is_gcc, key, load_in, mark_used, prune, remove_abandoned, try_load_in,
        Build,
    };
    use std::time::{Duration, Instant};

    /// A module without vector math or loops.
    const PLAIN: Build = Build {
        vector_math: false,
        loops: false,
    };

    #[test]
    fn gcc_is_told_from_clang_by_its_version_text_under_any_name() {
        let gcc = "cc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n";
        let clang =
            "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n";
        assert!(is_gcc(gcc));
        assert!(!is_gcc(clang));
        // This machine's compiler takes the flags it is given for a module with loops.
        if let Some((dir, _)) = empty_cache("gridbuf-loop-flags") {
            let loops = Build {
                vector_math: false,
                loops: true,
            };
            let lib = load_in(Some(dir.clone()), SOURCE, loops, Duration::from_secs(60));
            assert_eq!(probe(&lib.unwrap()), 42);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    const SOURCE: &str = "int gb_probe(void) { return 42; }\n";

    /// An empty cache directory of its own for a test, and SOURCE's key; None without a C
    /// compiler.
    fn empty_cache(name: &str) -> Option<(std::path::PathBuf, String)> {
        let c = compiler().ok()?;
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Some((dir, key(c, SOURCE, PLAIN)))
    }

    fn probe(lib: &libloading::Library) -> i32 {
        // SAFETY: the module defines `gb_probe` with this signature (SOURCE above).
        unsafe {
            lib.get::<unsafe extern "C" fn() -> i32>(b"gb_probe")
                .map(|f| f())
        }
        .unwrap()
    }

    #[test]
    fn a_claimed_entry_is_waited_for_then_compiled_where_the_claim_ends_without_it() {
        let Some((dir, k)) = empty_cache("gridbuf-claim-test") else {
            return;
        };
        // "Another process" claims the entry, and gives up after 300 ms without writing it.
        let theirs = claim(&dir, &k, Duration::from_secs(60)).expect("first claim");
        assert!(
            claim(&dir, &k, Duration::from_secs(60)).is_none(),
            "a held claim is refused"
        );
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(theirs);
        });
        let t0 = Instant::now();
        let lib = load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_secs(60)).unwrap();
        assert!(
            t0.elapsed() >= Duration::from_millis(250),
            "it waited for the claim"
        );
        assert_eq!(probe(&lib), 42);
        release.join().unwrap();
        assert!(dir.join(format!("{k}.c")).exists() && !dir.join(format!("{k}.lock")).exists());
        // A claim older than the wait is taken over at once.
        std::fs::remove_file(dir.join(format!("{k}.c"))).unwrap();
        let old = claim(&dir, &k, Duration::from_secs(60)).unwrap();
        std::mem::forget(old);
        std::thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        let lib = load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_millis(20)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(30));
        assert_eq!(probe(&lib), 42);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_written_while_waiting_is_loaded_not_compiled_again() {
        let Some((dir, k)) = empty_cache("gridbuf-claim-test2") else {
            return;
        };
        let theirs = claim(&dir, &k, Duration::from_secs(60)).expect("first claim");
        // "The other process" compiles the entry (into the cache), then ends its claim.
        let d2 = dir.clone();
        let other = std::thread::spawn(move || {
            let lib = super::compile_into(compiler().unwrap(), &d2, &k, SOURCE, true, PLAIN);
            drop(theirs);
            lib.map(|l| probe(&l))
        });
        let lib = load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_secs(60)).unwrap();
        assert_eq!(probe(&lib), 42);
        assert_eq!(other.join().unwrap(), Ok(42));
        // One entry, no private files of a second compilation left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_worker_is_told_a_claimed_entry_is_busy_without_waiting() {
        let Some((dir, k)) = empty_cache("gridbuf-claim-test3") else {
            return;
        };
        let theirs = claim(&dir, &k, Duration::from_secs(60)).expect("first claim");
        let t0 = Instant::now();
        let busy = try_load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_secs(60)).unwrap();
        assert!(busy.is_none(), "claimed by another process: busy");
        assert!(t0.elapsed() < Duration::from_secs(5), "it did not wait");
        drop(theirs);
        let lib = try_load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_secs(60))
            .unwrap()
            .expect("compiled once the claim ended");
        assert_eq!(probe(&lib), 42);
        assert!(dir.join(format!("{k}.so")).exists() && !dir.join(format!("{k}.lock")).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_left_by_a_process_that_ended_while_compiling_are_removed_once_old() {
        let Some((dir, k)) = empty_cache("gridbuf-abandoned-test") else {
            return;
        };
        let write = |name: &str, age: Duration| {
            let f = std::fs::File::create(dir.join(name)).unwrap();
            f.set_modified(std::time::SystemTime::now() - age).unwrap();
        };
        let hour = Duration::from_secs(3600);
        write(&format!(".{k}.1.0.c"), hour);
        write(&format!(".{k}.1.1.so"), hour);
        write(&format!(".{k}.2.0.c"), Duration::ZERO); // a compilation under way
        write(".otherkey.1.0.c", hour); // another entry's
        remove_abandoned(&dir, &k, Duration::from_secs(600));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [format!(".{k}.2.0.c"), ".otherkey.1.0.c".to_string()]
        );
        // Compiling the entry removes the old leftovers, and writes none of its own.
        write(&format!(".{k}.3.0.so"), 2 * super::ABANDONED_AFTER);
        let lib = load_in(Some(dir.clone()), SOURCE, PLAIN, Duration::from_secs(60)).unwrap();
        assert_eq!(probe(&lib), 42);
        assert!(!dir.join(format!(".{k}.3.0.so")).exists());
        assert!(dir.join(format!("{k}.so")).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cache_over_its_limit_loses_the_entries_used_longest_ago() {
        let dir = std::env::temp_dir().join(format!("gridbuf-prune-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let hour = Duration::from_secs(3600);
        // Four entries of 1000 + 100 bytes, used 4, 3, 2 and 1 hours ago; a lock; another
        // process's private file.
        let keys = ["a", "b", "c", "d"].map(|k| k.repeat(32));
        for (i, key) in keys.iter().enumerate() {
            let age = hour * (4 - i as u32);
            for (ext, len) in [("so", 1000), ("c", 100)] {
                let f = std::fs::File::create(dir.join(format!("{key}.{ext}"))).unwrap();
                f.set_len(len).unwrap();
                f.set_modified(std::time::SystemTime::now() - age).unwrap();
            }
        }
        // A lock, another process's private file, and a file that is no entry of the cache,
        // larger than the limit: none of them is touched.
        std::fs::File::create(dir.join(format!("{}.lock", keys[0]))).unwrap();
        std::fs::File::create(dir.join(format!(".{}.7.0.c", keys[1]))).unwrap();
        let other = std::fs::File::create(dir.join("notes.so")).unwrap();
        other.set_len(10_000).unwrap();
        // Within the limit: nothing goes.
        prune(&dir, 4400, &keys[3]);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 11);
        // Over it: down to three quarters (3000 bytes), the oldest first (b, then c), never
        // `keep` (a, the oldest).
        prune(&dir, 4000, &keys[0]);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let (a, b, d) = (&keys[0], &keys[1], &keys[3]);
        let mut want = [
            format!(".{b}.7.0.c"),
            format!("{a}.c"),
            format!("{a}.lock"),
            format!("{a}.so"),
            format!("{d}.c"),
            format!("{d}.so"),
            "notes.so".to_string(),
        ];
        want.sort();
        assert_eq!(names, want);
        // A load marks an entry used where its mark is older than an hour, not otherwise.
        let age = |p: &std::path::Path| {
            std::fs::metadata(p)
                .unwrap()
                .modified()
                .unwrap()
                .elapsed()
                .unwrap()
        };
        mark_used(&dir.join(format!("{a}.c")));
        assert!(age(&dir.join(format!("{a}.c"))) < Duration::from_secs(60));
        let recent = dir.join(format!("{d}.c"));
        std::fs::File::options()
            .append(true)
            .open(&recent)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(600))
            .unwrap();
        mark_used(&recent);
        assert!(age(&recent) >= Duration::from_secs(590));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
