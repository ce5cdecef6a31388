//! `GRIDBUF_NUM_THREADS` sets the thread count of fills, copies and kernels. The variable is
//! read once per process, so each case runs this test binary again as a child process with the
//! variable set and checks what the child saw.

use gridbuf::runtime::threads::{configured, Threads, ENV_VAR};
use std::process::Command;

/// Set in the child: the thread count it must see.
const EXPECT_VAR: &str = "GRIDBUF_TEST_EXPECT_THREADS";

/// Runs in the child only (the parent has no `EXPECT_VAR` and returns at once).
#[test]
fn child_sees_configured_threads() {
    let Ok(expected) = std::env::var(EXPECT_VAR) else {
        return;
    };
    let expected: usize = expected.parse().unwrap();
    assert_eq!(configured().get(), expected);
    // The team the parallel operations run on has that many threads.
    match gridbuf::runtime::threads::team(configured()) {
        Some(team) => assert_eq!(team.threads(), expected),
        None => assert_eq!(expected, 1),
    }
}

fn run_child(value: Option<&str>, expected: usize) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_sees_configured_threads",
        "--test-threads=1",
    ])
    .env(EXPECT_VAR, expected.to_string());
    match value {
        Some(v) => cmd.env(ENV_VAR, v),
        None => cmd.env_remove(ENV_VAR),
    };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{ENV_VAR}={value:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The child ran the test (it was not filtered out).
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
fn num_threads_is_honoured() {
    run_child(Some("1"), 1);
    run_child(Some("3"), 3);
    run_child(Some(" 5 "), 5);
}

#[test]
fn invalid_or_unset_means_every_core() {
    let all = Threads::available().get();
    run_child(None, all);
    run_child(Some("0"), all);
    run_child(Some("many"), all);
}
