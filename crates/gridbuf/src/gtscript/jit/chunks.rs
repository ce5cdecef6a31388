//! What [`Jit::compile`](super::Jit::compile) compiles at definition (row functions and point
//! loops), cut into chunks of about equal work, each compiled in a module of its own on the
//! team: Cranelift compiles one function at a time.

use super::abi::{LoopCode, LoopFn, StmtCode, SwapFn};
use super::helpers::{jit_error, lane_types};
use super::module::{build_in_own_module, CodeMemory};
use super::point::{self, PointRange};
use super::row::{define_rows, row_codes};
use crate::error::Result;
use crate::gtscript::plan::Plan;
use crate::kernels::exec::Threads;
use std::sync::Arc;

/// The fewest row functions worth a module and a task of their own (a module costs tens of
/// microseconds to make; a row function, 0.1-1.5 ms to compile).
const ROWS_PER_CHUNK: usize = 4;

/// A part of what [`Jit::compile`] compiles, in a module of its own: row functions (section,
/// statement) or point loops (section, first statement, exit).
pub(super) enum ChunkTask {
    Rows(Vec<(usize, usize)>),
    Loops(Vec<(usize, usize, usize)>),
}

/// A compiled [`ChunkTask`]: the code memory its functions live in, and each one's code.
pub(super) struct Chunk {
    pub(super) memory: CodeMemory,
    pub(super) rows: Vec<(usize, usize, StmtCode)>,
    pub(super) loops: Vec<(usize, usize, LoopCode)>,
}

/// `items` in at most `n` contiguous chunks of about equal `weight` (the k-th ends at k/n of
/// the total), none empty.
fn split_even<T>(items: Vec<T>, n: usize, weight: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let total: usize = items.iter().map(&weight).sum();
    let mut chunks: Vec<Vec<T>> = vec![Vec::new()];
    let mut done = 0;
    for item in items {
        if done * n >= total * chunks.len()
            && chunks.len() < n
            && !chunks[chunks.len() - 1].is_empty()
        {
            chunks.push(Vec::new());
        }
        done += weight(&item);
        if let Some(c) = chunks.last_mut() {
            c.push(item);
        }
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// The row functions `eager` and the point loops `point_loops` of `plan` as tasks for
/// [`compile_chunks`]: with more than one thread, each kind cut into up to two chunks per
/// thread of about equal work (tape length), so that a thread that finishes early takes
/// another (a row chunk holds at least [`ROWS_PER_CHUNK`] functions); with one, one of each.
pub(super) fn chunk_tasks(
    plan: &Plan,
    eager: Vec<(usize, usize)>,
    point_loops: Vec<(usize, usize, usize)>,
    threads: Threads,
) -> Vec<ChunkTask> {
    let most = if threads.get() < 2 {
        1
    } else {
        2 * threads.get()
    };
    let tape = |s: usize, t: usize| plan.sections[s].stmts[t].tape.len().max(1);
    let n_rows = (eager.len() / ROWS_PER_CHUNK).clamp(1, most);
    let n_loops = point_loops.len().clamp(1, most);
    let rows = split_even(eager, n_rows, |&(s, t)| tape(s, t));
    let loops = split_even(point_loops, n_loops, |&(s, t, exit)| {
        (t..exit).map(|u| tape(s, u)).sum::<usize>().max(1)
    });
    let mut tasks: Vec<ChunkTask> = loops.into_iter().map(ChunkTask::Loops).collect();
    tasks.extend(rows.into_iter().map(ChunkTask::Rows));
    tasks
}

/// Compiles each of `tasks` (see [`chunk_tasks`]) of `plan` in modules of its own, spread over
/// `threads` (Cranelift compiles one function at a time: pace's 181 definitions compile 1635
/// row functions and 109 point loops at definition, 0.9 s on one thread).
pub(super) fn compile_chunks(
    plan: &Plan,
    tasks: Vec<ChunkTask>,
    threads: Threads,
) -> Result<Vec<Chunk>> {
    let done: Vec<std::sync::Mutex<Option<Result<Chunk>>>> =
        tasks.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let indexed: Vec<(usize, ChunkTask)> = tasks.into_iter().enumerate().collect();
    crate::runtime::threads::run_each(threads, indexed, |(i, task)| {
        let got = match task {
            ChunkTask::Rows(stmts) => compile_rows_alone(plan, stmts.into_iter()),
            ChunkTask::Loops(parts) => compile_loops_alone(plan, &parts),
        };
        *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(got);
    });
    done.into_iter()
        .map(|cell| {
            cell.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(jit_error("a chunk of functions was not compiled")))
        })
        .collect()
}

/// Compiles the point loops `parts` (section, first statement, exit) of `plan` in a module of
/// their own, one function each.
fn compile_loops_alone(plan: &Plan, parts: &[(usize, usize, usize)]) -> Result<Chunk> {
    let (elem, wide) = lane_types(plan.lanes);
    let (module, ids) = build_in_own_module(|module, ctx, fctx| {
        let mut ids = Vec::with_capacity(parts.len());
        for &(s, t, exit) in parts {
            let range = PointRange {
                first: t,
                exit,
                walk: None,
            };
            let built = point::build(module, ctx, fctx, plan, &[(s, range)], elem, wide)?;
            ids.push((s, t, exit, built));
        }
        Ok(ids)
    })?;
    let memory = CodeMemory::finalize(vec![module])?;
    let mut loops = Vec::with_capacity(ids.len());
    for (s, t, exit, (id, operands, outs, vk, sizes)) in ids {
        let f = memory.function::<LoopFn>(0, id)?;
        let code = LoopCode {
            f: Arc::new(SwapFn::new(f)),
            operands,
            outs,
            vk,
            exit,
            parts: sizes,
        };
        loops.push((s, t, code));
    }
    Ok(Chunk {
        memory,
        rows: Vec::new(),
        loops,
    })
}

/// Compiles the row functions of `stmts` (section, statement) of `plan` in modules of their
/// own.
pub(super) fn compile_rows_alone(
    plan: &Plan,
    stmts: impl Iterator<Item = (usize, usize)>,
) -> Result<Chunk> {
    let mut plain = None;
    let (module, ids) = build_in_own_module(|module, ctx, fctx| {
        define_rows(module, &mut plain, ctx, fctx, plan, stmts)
    })?;
    let memory = CodeMemory::finalize(std::iter::once(module).chain(plain).collect())?;
    let codes = row_codes(&memory, ids)?;
    Ok(Chunk {
        memory,
        rows: codes,
        loops: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::jit::row_groups;
    use crate::gtscript::plan::schedule::Schedule;

    #[test]
    fn chunks_keep_the_order_and_share_the_work() {
        let items: Vec<usize> = (0..10).collect();
        let chunks = split_even(items.clone(), 3, |_| 1);
        assert_eq!(chunks, vec![vec![0, 1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]]);
        // A heavy item first: the others make the second chunk.
        assert_eq!(
            split_even(vec![10, 1, 1, 1, 1], 2, |&w| w),
            vec![vec![10], vec![1, 1, 1, 1]]
        );
        // Never more chunks than items, never an empty one.
        assert_eq!(split_even(vec![5, 5], 8, |&w| w), vec![vec![5], vec![5]]);
        assert!(split_even(Vec::<usize>::new(), 4, |&w| w).is_empty());
        assert_eq!(split_even(vec![1, 2, 3], 1, |&w| w), vec![vec![1, 2, 3]]);
    }

    #[test]
    fn chunks_are_compiled_alike_on_one_thread_and_on_several() {
        // A plan with enough statements for several row chunks: the same statements get code
        // on one thread and on two.
        let fields: String = (0..24)
            .map(|k| format!("field c{k} float64 IJK\n"))
            .collect();
        let body: String = (0..24)
            .map(|k| {
                format!(
                    "stmt {} f {} 0 mul lit float64 {k}.5 f 0 0 0 0 0\n",
                    k + 1,
                    k + 1
                )
            })
            .collect();
        let text = format!(
            "stencil chunks\nfield a float64 IJK\n{fields}comp PARALLEL\ninterval S 0 E 0\n{body}"
        );
        let plan = crate::gtscript::compile(&text).unwrap();
        let schedule = Schedule::new(&plan, true);
        let (group_of, _) = row_groups(&schedule);
        let eager: Vec<(usize, usize)> = (0..plan.sections[0].stmts.len())
            .filter(|&t| schedule.sections[0].row[t] && group_of[0][t].is_none())
            .map(|t| (0, t))
            .collect();
        let mut compiled = Vec::new();
        for threads in [1, 2] {
            let threads = Threads::new(threads).unwrap();
            let tasks = chunk_tasks(&plan, eager.clone(), Vec::new(), threads);
            let chunks = compile_chunks(&plan, tasks, threads).unwrap();
            let mut got: Vec<(usize, usize)> = chunks
                .iter()
                .flat_map(|c| c.rows.iter().map(|&(s, t, _)| (s, t)))
                .collect();
            got.sort_unstable();
            compiled.push((chunks.len(), got));
        }
        assert_eq!(compiled[0].0, 1);
        assert!(compiled[1].0 > 1, "{:?}", compiled[1].0);
        assert_eq!(compiled[0].1, eager);
        assert_eq!(compiled[1].1, eager);
    }
}
