//! The schedule of a few definitions, per layout and with code generation on and off, and
//! the code `Jit::compile` makes for it (exactly what the schedule names).

use crate::gtscript::plan::schedule::{Layout, PointWalk, Schedule, SectionExec, SectionSchedule};
use crate::gtscript::{compile, Jit, Lane, Lanes, Plan};

const BLOCKS: SectionExec = SectionExec::Blocks {
    copy_columns: false,
};
const BLOCKS_COPIED: SectionExec = SectionExec::Blocks { copy_columns: true };

/// `out = lap(lap(inp))` through a temporary.
fn laplacian() -> Plan {
    let lap = |q: &str| {
        format!("add mul c -4.0 {q} 0 0 0 add {q} 1 0 0 add {q} -1 0 0 add {q} 0 1 0 {q} 0 -1 0")
    };
    compile(&format!(
        "stencil l2 float64\nfield inp IJK\nfield out IJK\ntemp tmp\ncomp PARALLEL\n\
         interval S 0 E 0\nstmt 1 t 0 {}\nstmt 2 f 1 0 {}\n",
        lap("f 0 0"),
        lap("t 0")
    ))
    .unwrap()
}

/// The tridiagonal solve as the Python frontend writes it: two FORWARD sections, two
/// BACKWARD ones.
fn tridiagonal() -> Plan {
    compile(
        "stencil tridiag\nfield a float64 IJK\nfield b float64 IJK\n\
         field c float64 IJK\nfield d float64 IJK\nfield x float64 IJK\ntemp cp auto IJK\n\
         temp dp auto IJK\ntemp m auto IJK\ncomp FORWARD\ninterval S 0 S 1\n\
         stmt 19 t 0 div f 2 0 0 0 0 f 1 0 0 0 0\nstmt 20 t 1 div f 3 0 0 0 0 f 1 0 0 0 0\n\
         interval S 1 E 0\nstmt 22 t 2 sub f 1 0 0 0 0 mul f 0 0 0 0 0 t 0 0 0 -1\n\
         stmt 23 t 0 div f 2 0 0 0 0 t 2 0 0 0\n\
         stmt 24 t 1 div sub f 3 0 0 0 0 mul f 0 0 0 0 0 t 1 0 0 -1 t 2 0 0 0\n\
         comp BACKWARD\ninterval E -1 E 0\nstmt 27 f 4 0 t 1 0 0 0\ninterval S 0 E -1\n\
         stmt 29 f 4 0 sub t 1 0 0 0 mul t 0 0 0 0 f 4 0 0 0 1\n",
    )
    .unwrap()
}

/// A vertical search as a vertical remap does it: two FORWARD computations, each a `while`
/// loop per point that halves `out` until it is at most 1 (a first section without a loop
/// before them).
fn remap() -> Plan {
    let search = "comp FORWARD\ninterval S 0 E 0\n\
                  stmt 2 t 0 gt f 1 0 0 0 0 c 1.0\nwhile\n\
                  stmt 3 f 1 0 sel t 0 0 0 0 mul f 1 0 0 0 0 c 0.5 f 1 0 0 0 0\n\
                  endwhile\n";
    compile(&format!(
        "stencil remap float64\nfield a IJK\nfield out IJK\ntemp m bool\n\
         comp FORWARD\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 0\n{search}{search}"
    ))
    .unwrap()
}

/// A FORWARD section with a loop whose temporary `x` is first assigned under a mask (PyFV3's
/// `map_single.lagrangian_contributions`: `pr` and `qsum` are set in one branch of an `if`), so
/// a statement reads it where nothing has written it at the point: `x = sel(m, 2 * a, x)`.
fn masked_local() -> Plan {
    compile(
        "stencil ml float64\nfield a IJK\nfield out IJK\ntemp m bool\ntemp x\ntemp c bool\n\
         comp FORWARD\ninterval S 0 E 0\nstmt 1 t 0 gt f 0 0 0 0 0 c 0.0\n\
         stmt 2 t 1 sel t 0 0 0 0 mul f 0 0 0 0 0 c 2.0 t 1 0 0 0\n\
         stmt 3 f 1 0 sel t 0 0 0 0 t 1 0 0 0 f 0 0 0 0 0\n\
         stmt 4 t 2 lt f 1 0 0 0 0 c 1.0\nwhile\n\
         stmt 5 f 1 0 sel t 2 0 0 0 add f 1 0 0 0 0 c 1.0 f 1 0 0 0 0\nendwhile\n",
    )
    .unwrap()
}

/// The same loop in a PARALLEL computation: it cannot walk as a whole section, and runs
/// point by point in blocks.
fn parallel_loop() -> Plan {
    compile(
        "stencil pl float64\nfield a IJK\nfield out IJK\ntemp m bool\n\
         comp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 0\n\
         stmt 2 t 0 gt f 1 0 0 0 0 c 1.0\nwhile\n\
         stmt 3 f 1 0 sel t 0 0 0 0 mul f 1 0 0 0 0 c 0.5 f 1 0 0 0 0\nendwhile\n",
    )
    .unwrap()
}

/// A column sum through a 2-D temporary.
fn two_d_temporary() -> Plan {
    compile(
        "stencil s\nfield x float64 IJK\nfield out float64 IJK\ntemp t float64 IJ\n\
         comp FORWARD\ninterval S 0 S 1\nstmt 1 t 0 lit float64 0\n\
         comp FORWARD\ninterval S 0 E 0\nstmt 2 t 0 add t 0 0 0 0 f 0 0 0 0 0\nstmt 3 f 1 0 t 0 0 0 0\n",
    )
    .unwrap()
}

/// A PARALLEL section reading a field at K offsets.
fn k_offsets() -> Plan {
    compile(
        "stencil k float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 1 E -1\n\
         stmt 1 f 1 0 add f 0 0 0 0 -1 f 0 0 0 0 1\n",
    )
    .unwrap()
}

const LAYOUTS: [Layout; 3] = [Layout::I, Layout::J, Layout::K];

/// The executors of `plan` per layout I, J, K.
fn executors(schedule: &Schedule, plan: &Plan) -> [(bool, Vec<SectionExec>); 3] {
    LAYOUTS.map(|l| {
        let s = schedule.for_layout(plan, l);
        assert_eq!(s.layout, l);
        (s.walk_columns, s.sections)
    })
}

/// Without code generation every section runs in blocks, FORWARD and BACKWARD ones on
/// layouts with unit stride along K through I-fastest column copies, every statement by the
/// interpreter.
fn check_interpreted(plan: &Plan) {
    let off = Schedule::new(plan, false);
    assert!(!off.codegen);
    for (s, sec) in off.sections.iter().enumerate() {
        let n = plan.sections[s].stmts.len();
        assert_eq!(
            *sec,
            SectionSchedule {
                whole: false,
                column_run: None,
                column: false,
                levels: false,
                row: vec![false; n],
                point_loop: vec![None; n],
                fused: vec![None; n],
                handover: sec.handover.clone(),
                received: sec.received.clone(),
            }
        );
    }
    let vertical = |s: usize| plan.sections[s].order != crate::gtscript::ir::IterOrder::Parallel;
    for (l, (walk, secs)) in LAYOUTS.into_iter().zip(executors(&off, plan)) {
        assert!(!walk);
        for (s, e) in secs.into_iter().enumerate() {
            let copy = vertical(s) && l == Layout::K;
            assert_eq!(e, SectionExec::Blocks { copy_columns: copy }, "{l:?} {s}");
        }
    }
}

/// `Jit::compile` makes exactly the code the schedule names, and says so.
fn check_compiled(plan: &Plan, schedule: &Schedule) {
    let Some(jit) = Jit::compile(plan).unwrap() else {
        return;
    };
    assert_eq!(jit.schedule(), schedule);
    macro_rules! per_lanes {
        ($t:ty) => {{
            for (s, sec) in schedule.sections.iter().enumerate() {
                assert_eq!(
                    jit.column::<$t>(plan, s).unwrap().is_some(),
                    sec.column,
                    "section {s}"
                );
                let run_of = sec.point_run_of();
                for t in 0..sec.row.len() {
                    // Not yet for a point run's statements, nor in a section with a column
                    // function: compiled when first asked for.
                    let eager = sec.row[t] && run_of[t].is_none() && !sec.column;
                    assert_eq!(jit.stmt_code(s, t).is_some(), eager, "{s} {t}");
                }
                for t in 0..sec.row.len() {
                    let row = jit.stmt::<$t>(plan, s, t).unwrap();
                    assert_eq!(row.is_some(), sec.row[t], "{s} {t}");
                    assert_eq!(
                        jit.point_loop::<$t>(s, t).map(|c| c.exit),
                        sec.point_loop[t],
                        "{s} {t}"
                    );
                }
                let levels = jit.point_section::<$t>(plan, s, PointWalk::Levels).unwrap();
                assert_eq!(levels.is_some(), sec.whole, "section {s}");
                let columns = jit
                    .point_section::<$t>(plan, s, PointWalk::Columns)
                    .unwrap();
                assert_eq!(
                    columns.map(|c| c.parts.len()),
                    (sec.column_run == Some(s)).then(|| schedule.column_run_len(s)),
                    "section {s}"
                );
            }
        }};
    }
    match plan.lanes {
        Lanes::F64 => per_lanes!(f64),
        Lanes::F32 => per_lanes!(f32),
        Lanes::Wide => per_lanes!(Lane),
    }
    for l in LAYOUTS {
        assert_eq!(*jit.layout_schedule(plan, l), schedule.for_layout(plan, l));
    }
}

#[test]
fn parallel_laplacian_runs_rows_in_blocks() {
    let plan = laplacian();
    let on = Schedule::new(&plan, true);
    assert_eq!(
        on.sections,
        [SectionSchedule {
            whole: false,
            column_run: None,
            column: false,
            levels: false,
            row: vec![true, true],
            point_loop: vec![None, None],
            // The second statement reads the first one's temporary at offsets.
            fused: vec![None, None],
            handover: vec![vec![]; 2],
            received: vec![],
        }]
    );
    for (walk, secs) in executors(&on, &plan) {
        assert!(!walk);
        assert_eq!(secs, [BLOCKS]);
    }
    // A temporary: no slabs.
    assert!(LAYOUTS.iter().all(|&l| !on.for_layout(&plan, l).slabs));
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn tridiagonal_solve_walks_columns_where_k_has_unit_stride() {
    let plan = tridiagonal();
    let on = Schedule::new(&plan, true);
    for (s, sec) in on.sections.iter().enumerate() {
        let n = plan.sections[s].stmts.len();
        assert!(sec.column && !sec.whole && sec.column_run.is_none(), "{s}");
        assert_eq!(sec.row, vec![true; n]);
        assert_eq!(sec.point_loop, vec![None; n]);
    }
    assert!(LAYOUTS.iter().all(|&l| !on.for_layout(&plan, l).slabs));
    let [i, j, k] = executors(&on, &plan);
    assert_eq!(i, (false, vec![BLOCKS; 4]));
    assert_eq!(j, (false, vec![BLOCKS; 4]));
    assert_eq!(k, (true, vec![SectionExec::Columns; 4]));
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn remap_loops_walk_as_whole_sections() {
    let plan = remap();
    let on = Schedule::new(&plan, true);
    // The first section has no loop: a column function, and tier two's walk of levels (on
    // memory with unit stride along I, where tier one runs it in blocks). The two with loops
    // are one point function walking columns (one run), or each its own walking levels.
    assert_eq!(
        on.sections,
        [
            SectionSchedule {
                whole: false,
                column_run: None,
                column: true,
                levels: true,
                row: vec![true],
                point_loop: vec![None],
                fused: vec![None],
                handover: vec![vec![]],
                received: vec![],
            },
            SectionSchedule {
                whole: true,
                column_run: Some(1),
                column: false,
                levels: false,
                row: vec![false, false],
                point_loop: vec![None, None],
                fused: vec![None, None],
                handover: vec![vec![]; 2],
                received: vec![],
            },
            SectionSchedule {
                whole: true,
                column_run: Some(1),
                column: false,
                levels: false,
                row: vec![false, false],
                point_loop: vec![None, None],
                fused: vec![None, None],
                handover: vec![vec![]; 2],
                received: vec![],
            },
        ]
    );
    assert_eq!(on.column_run_len(1), 2);
    let [i, j, k] = executors(&on, &plan);
    let levels = |s: usize| SectionExec::Points {
        walk: PointWalk::Levels,
        end: s + 1,
    };
    assert_eq!(i, (false, vec![BLOCKS, levels(1), levels(2)]));
    // Unit stride along J: no walk; the whole sections' statements are interpreted.
    assert_eq!(j, (false, vec![BLOCKS; 3]));
    assert_eq!(
        k,
        (
            true,
            vec![
                SectionExec::Columns,
                SectionExec::Points {
                    walk: PointWalk::Columns,
                    end: 3
                },
                SectionExec::InRun { first: 1 },
            ]
        )
    );
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn masked_local_read_before_written_walks_as_a_whole_section() {
    // The point function starts `x` at zero at every point (GT4Py's temporary is uninitialised
    // where the mask is off; no later statement reads it there).
    let plan = masked_local();
    let on = Schedule::new(&plan, true);
    assert!(on.sections[0].whole);
    assert_eq!(on.sections[0].column_run, Some(0));
    let [i, _, k] = executors(&on, &plan);
    assert_eq!(
        i.1,
        vec![SectionExec::Points {
            walk: PointWalk::Levels,
            end: 1
        }]
    );
    assert_eq!(
        k.1,
        vec![SectionExec::Points {
            walk: PointWalk::Columns,
            end: 1
        }]
    );
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn parallel_loop_runs_point_by_point_in_blocks() {
    let plan = parallel_loop();
    let on = Schedule::new(&plan, true);
    assert_eq!(
        on.sections,
        [SectionSchedule {
            whole: false,
            column_run: None,
            column: false,
            levels: false,
            row: vec![true, true, true],
            point_loop: vec![None, Some(3), None],
            // Mixed-type code: its straight runs are point loops for both tiers.
            fused: vec![None; 3],
            handover: vec![vec![]; 3],
            received: vec![],
        }]
    );
    for (walk, secs) in executors(&on, &plan) {
        assert!(!walk);
        assert_eq!(secs, [BLOCKS]);
    }
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn two_d_temporary_walks_columns_where_k_has_unit_stride() {
    let plan = two_d_temporary();
    let on = Schedule::new(&plan, true);
    assert!(on.sections.iter().all(|s| s.column && !s.whole));
    let [i, j, k] = executors(&on, &plan);
    assert_eq!(i, (false, vec![BLOCKS; 2]));
    assert_eq!(j, (false, vec![BLOCKS; 2]));
    assert_eq!(k, (true, vec![SectionExec::Columns; 2]));
    // Without code, the FORWARD sections copy columns on that layout instead.
    let off = Schedule::new(&plan, false);
    assert_eq!(
        off.for_layout(&plan, Layout::K).sections,
        [BLOCKS_COPIED; 2]
    );
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

#[test]
fn parallel_k_offsets_run_rows_in_blocks_on_every_layout() {
    let plan = k_offsets();
    let on = Schedule::new(&plan, true);
    assert_eq!(on.sections[0].row, [true]);
    assert!(!on.sections[0].column && !on.sections[0].whole);
    for (walk, secs) in executors(&on, &plan) {
        assert!(!walk);
        assert_eq!(secs, [BLOCKS]);
    }
    // Fields only, the written one read at its own level: slabs on every layout (where the
    // call's memory allows), with code generation on or off.
    for codegen in [true, false] {
        let schedule = Schedule::new(&plan, codegen);
        assert!(LAYOUTS.iter().all(|&l| schedule.for_layout(&plan, l).slabs));
    }
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

/// A FORWARD section with a column function and one that reads a written temporary at a
/// horizontal offset (no column function): the stencil cannot walk columns, so both run in
/// blocks through column copies on a layout with unit stride along K.
#[test]
fn one_section_without_column_code_keeps_every_section_in_blocks() {
    let plan = compile(
        "stencil h\nfield a float64 IJK\nfield out float64 IJK\ntemp u auto IJK\n\
         comp FORWARD\ninterval S 0 S 1\nstmt 1 f 1 0 f 0 0 0 0 0\ninterval S 1 E 0\n\
         stmt 2 t 0 mul f 0 0 0 0 0 c 2.0\nstmt 3 f 1 0 add f 1 0 0 0 -1 t 0 1 0 0\n",
    )
    .unwrap();
    let on = Schedule::new(&plan, true);
    assert!(on.sections[0].column && !on.sections[1].column);
    let k = on.for_layout(&plan, Layout::K);
    assert!(!k.walk_columns);
    assert_eq!(k.sections, [BLOCKS_COPIED; 2]);
    check_interpreted(&plan);
    check_compiled(&plan, &on);
}

/// A field the stencil writes, read at another level by a later computation: slabs of K
/// would split it, so slabs only on the layout with unit stride along K (slabs of I).
#[test]
fn written_field_read_along_k_keeps_k_slabs_off() {
    let plan = compile(
        "stencil w float64\nfield a IJK\nfield out IJK\nfield b IJK\n\
         comp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 0\n\
         comp PARALLEL\ninterval S 0 E -1\nstmt 2 f 2 0 f 1 0 0 0 1\n",
    )
    .unwrap();
    for codegen in [true, false] {
        let schedule = Schedule::new(&plan, codegen);
        let slabs = LAYOUTS.map(|l| schedule.for_layout(&plan, l).slabs);
        assert_eq!(slabs, [false, false, true]);
    }
    check_interpreted(&plan);
    check_compiled(&plan, &Schedule::new(&plan, true));
}

/// Prints the schedule of the IR text in the file `GRIDBUF_SCHEDULE_IR` names (a tool for
/// looking at a production stencil's plan: `cargo test -- --ignored print_schedule`).
#[test]
#[ignore]
fn print_schedule() {
    let Ok(path) = std::env::var("GRIDBUF_SCHEDULE_IR") else {
        return;
    };
    let plan = compile(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schedule = Schedule::new(&plan, true);
    for (s, (sec, sch)) in plan.sections.iter().zip(&schedule.sections).enumerate() {
        let in_runs: usize = sch
            .point_loop
            .iter()
            .enumerate()
            .filter_map(|(t, e)| e.map(|e| e - t))
            .sum();
        println!(
            "section {s} {:?}: {} statements, whole {}, column {}, runs {:?}, {in_runs} statements in runs",
            sec.order,
            sec.stmts.len(),
            sch.whole,
            sch.column,
            sch.point_loop
                .iter()
                .enumerate()
                .filter_map(|(t, e)| e.map(|e| (t, e)))
                .collect::<Vec<_>>(),
        );
        let reaches: std::collections::BTreeSet<_> = sec.stmts.iter().map(|st| st.reach).collect();
        println!(
            "  reaches {reaches:?}, regions {}, quantities {}, handed over {}, halo {:?}",
            sec.stmts.iter().filter(|st| st.region.is_some()).count(),
            sec.quantities.len(),
            sch.handover.iter().flatten().count(),
            sec.halo
        );
        if std::env::var_os("GRIDBUF_SCHEDULE_STMTS").is_some() {
            for (t, st) in sec.stmts.iter().enumerate() {
                println!(
                    "  {t}: target {} reach {:?} region {:?} fused {:?}",
                    st.target, st.reach, st.region, sch.fused[t]
                );
            }
        }
    }
}

/// A mixed-type column sweep without loops (PyFV3's `fillz.fix_tracer`: a float field moved
/// down from the level above, an integer counter): `flag` adds a boolean field it reads.
fn mixed_sweep(flag: bool) -> Plan {
    let (decl, cond) = if flag {
        (
            "field ok bool IJK\n",
            "and lt f 0 0 0 0 -1 c 0.0 f 2 0 0 0 0",
        )
    } else {
        ("", "lt f 0 0 0 0 -1 c 0.0")
    };
    compile(&format!(
        "stencil ms float64\nfield q IJK\nfield n int64 IJK\n{decl}temp m bool\n\
         comp FORWARD\ninterval S 1 E 0\nstmt 1 t 0 {cond}\n\
         stmt 2 f 0 0 sel t 0 0 0 0 add f 0 0 0 0 0 f 0 0 0 0 -1 f 0 0 0 0 0\n\
         stmt 3 f 1 0 sel t 0 0 0 0 add f 1 0 0 0 0 lit int64 1 f 1 0 0 0 0\n"
    ))
    .unwrap()
}

#[test]
fn mixed_type_sweeps_without_loops_walk_columns_where_their_fields_are_read_in_place() {
    // float64 and int64 fields: one point function walks each column (no column function
    // computes in mixed types).
    let plan = mixed_sweep(false);
    assert_eq!(plan.lanes, Lanes::Wide);
    let on = Schedule::new(&plan, true);
    assert!(on.sections[0].whole && !on.sections[0].column);
    let [i, j, k] = executors(&on, &plan);
    let points = |walk| SectionExec::Points { walk, end: 1 };
    assert_eq!(i, (false, vec![points(PointWalk::Levels)]));
    assert_eq!(j, (false, vec![BLOCKS]));
    assert_eq!(k, (true, vec![points(PointWalk::Columns)]));
    check_interpreted(&plan);
    check_compiled(&plan, &on);
    // A boolean field, which the point function would refuse: blocks, statements compiled.
    let plan = mixed_sweep(true);
    let on = Schedule::new(&plan, true);
    assert!(!on.sections[0].whole);
    assert!(on.sections[0].row.iter().all(|&r| r));
    let [i, _, k] = executors(&on, &plan);
    assert_eq!(i, (false, vec![BLOCKS]));
    assert_eq!(k, (false, vec![BLOCKS_COPIED]));
    check_compiled(&plan, &on);
}

/// A chain of temporaries through a PARALLEL section, each read at an offset by the next (so
/// none is inlined): `a`, `b`, `c` (written again in a region of one J row) and `d`.
pub(crate) fn chain() -> Plan {
    compile(
        "stencil ch float64\nfield inp IJK\nfield out IJK\ntemp a\ntemp b\ntemp c\ntemp d\n\
         comp PARALLEL\ninterval S 0 E 0\n\
         stmt 1 t 0 mul f 0 0 0 0 0 c 2.0\n\
         stmt 2 t 1 add t 0 1 0 0 t 0 -1 0 0\n\
         stmt 3 t 2 mul t 1 0 1 0 c 3.0\n\
         region * * S 1 S 2\n\
         stmt 4 t 2 add t 2 0 0 0 c 100.0\n\
         stmt 5 t 3 add t 2 1 0 0 c 1.0\n\
         stmt 6 f 1 0 mul t 3 -1 0 0 t 2 0 0 0\n",
    )
    .unwrap()
}

/// A temporary `x` read in a `while` loop before the loop's body writes `y`, and `z` after
/// the loop.
pub(crate) fn loop_lives() -> Plan {
    compile(
        "stencil ll float64\nfield inp IJK\nfield out IJK\nfield acc IJK\ntemp x\ntemp m bool\n\
         temp y\ntemp z\ncomp PARALLEL\ninterval S 0 E 0\n\
         stmt 1 t 0 mul f 0 0 0 0 0 c 2.0\n\
         stmt 2 t 1 gt f 1 0 0 0 0 c 1.0\nwhile\n\
         stmt 3 f 2 0 sel t 1 0 0 0 add f 2 0 0 0 0 t 0 1 0 0 f 2 0 0 0 0\n\
         stmt 4 t 2 add c 0.25 mul f 0 0 0 0 0 f 0 0 0 0 0\n\
         stmt 5 f 1 0 sel t 1 0 0 0 sub f 1 0 0 0 0 t 2 1 0 0 f 1 0 0 0 0\n\
         endwhile\n\
         stmt 6 t 3 mul f 0 0 0 0 0 c 3.0\n\
         stmt 7 f 1 0 add t 3 1 0 0 f 1 0 0 0 0\n",
    )
    .unwrap()
}

/// A temporary's block buffer passes to one whose life starts after its own ends: in
/// statement order outside loops, and at the end of a `while` loop for what the loop reads
/// (`y`, written in the loop's body after `x`'s last read, does not take `x`'s buffer: the
/// next pass reads `x` again). With code generation on and off.
#[test]
fn block_buffers_pass_to_temporaries_born_after_their_holders_die() {
    let (chain, lives) = (chain(), loop_lives());
    for codegen in [false, true] {
        let handover = |plan: &Plan| Schedule::new(plan, codegen).sections[0].handover.clone();
        // a (2) to c (4) where c is first written; b (3) to d (5).
        assert_eq!(
            handover(&chain),
            [vec![], vec![], vec![(2, 4)], vec![], vec![(3, 5)], vec![]]
        );
        // x (3) to z (6) after the loop.
        let mut want = vec![vec![]; 7];
        want[5] = vec![(3, 6)];
        assert_eq!(handover(&lives), want);
        // The receivers, which blocks give no buffer of their own.
        let received = |plan: &Plan| Schedule::new(plan, codegen).sections[0].received.clone();
        assert_eq!(received(&chain), [4, 5]);
        assert_eq!(received(&lives), [6]);
    }
}

/// A mixed-type FORWARD section without loops (`a = a[0, 0, -1] + n`, then copies of `a`)
/// walks its levels on I-fastest memory as one point function. Over few 3-D quantities the
/// tiles stay several per thread (they stay in cache from walk to walk); over more than
/// `CACHED_VOLUMES` they are one per thread, as for sections in blocks.
#[test]
fn walks_of_levels_over_many_fields_take_one_tile_per_thread() {
    let plan = |copies: usize| {
        let mut text = "stencil wv float64\nfield a IJK\nfield n int64 IJK\n".to_string();
        for x in 0..copies {
            text += &format!("field e{x} IJK\n");
        }
        text += "comp FORWARD\ninterval S 1 E 0\nstmt 1 f 0 0 add f 0 0 0 0 -1 f 1 0 0 0 0\n";
        for x in 0..copies {
            text += &format!("stmt {} f {} 0 f 0 0 0 0 0\n", x + 2, x + 2);
        }
        compile(&text).unwrap()
    };
    for (copies, one_per_thread) in [(0, false), (6, false), (7, true), (12, true)] {
        let plan = plan(copies);
        assert_eq!(plan.lanes, Lanes::Wide);
        let on = Schedule::new(&plan, true).for_layout(&plan, Layout::I);
        assert_eq!(
            on.sections,
            [SectionExec::Points {
                walk: PointWalk::Levels,
                end: 1
            }]
        );
        assert_eq!(on.tile_per_thread, one_per_thread, "{copies} copies");
    }
}

/// One-float-type statements whose guarded math outweighs the rest, spread over more than 3
/// guarded runs (each statement `b = exp(a) if a < c else b`), keep their branches
/// (`plan::guarded::keeps_branches`): tier one runs them in point functions of up to 48
/// statements, as mixed-type code (row functions, eight lanes a step, would run almost every
/// arm), and tier two fuses them into one run of up to 1024 statements, where vectorised float
/// code is cut at 128.
#[test]
fn float_statements_that_keep_their_branches_run_as_points_and_fuse_long_runs() {
    let plan = |n: usize, guarded: bool| {
        let mut text =
            "stencil kb float64\nfield a IJK\nfield b IJK\ncomp PARALLEL\ninterval S 0 E 0\n"
                .to_string();
        for x in 0..n {
            let c = 0.1 * x as f64;
            text += &if guarded {
                format!(
                    "stmt {} f 1 0 sel lt f 0 0 0 0 0 c {c:?} exp f 0 0 0 0 0 f 1 0 0 0 0\n",
                    x + 1
                )
            } else {
                format!("stmt {} f 1 0 add f 1 0 0 0 0 c {c:?}\n", x + 1)
            };
        }
        compile(&text).unwrap()
    };
    for (n, runs) in [(3, None), (4, Some(4)), (60, Some(48))] {
        let p = plan(n, true);
        assert_eq!(p.lanes, Lanes::F64);
        assert_eq!(
            Schedule::new(&p, true).sections[0].point_loop[0],
            runs,
            "{n} arms"
        );
    }
    assert_eq!(
        Schedule::new(&plan(60, false), true).sections[0].point_loop[0],
        None
    );
    for (guarded, run) in [(true, 200), (false, 128)] {
        let p = plan(200, guarded);
        assert_eq!(
            Schedule::new(&p, true).sections[0].fused[0],
            Some(run),
            "guarded {guarded}"
        );
    }
}
