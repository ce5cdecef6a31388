"""scripts/check_import_cycles.py on small synthetic crates written to tmp_path."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_import_cycles.py"


def _crate(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "crate" / "src"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _run(*roots: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, roots)], capture_output=True, text=True, check=False)


def _checker() -> Any:
    spec = importlib.util.spec_from_file_location("check_import_cycles", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cycles(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stdout.splitlines() if "->" in line and not line.startswith("#")]


def test_a_cycle_through_super_is_found_and_printed(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod eval;\n",
            "eval/mod.rs": "mod a;\nmod b;\n",
            "eval/a.rs": "use super::b::Thing;\npub struct Other;\n",
            "eval/b.rs": "use super::a::Other;\npub struct Thing;\n",
        },
    )
    result = _run(src / "eval")
    assert result.returncode == 1
    assert _cycles(result) == ["a.rs -> b.rs -> a.rs"]


def test_a_clean_tree_passes_and_mod_declarations_are_no_edges(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod eval;\npub mod util;\n",
            "util.rs": "pub fn helper() {}\n",
            # the parent declares its children and re-exports one: mod.rs -> a.rs only
            "eval/mod.rs": "mod a;\nmod b;\npub use a::Thing;\n",
            "eval/a.rs": "use super::b::helper2;\nuse crate::util::helper;\npub struct Thing;\n",
            "eval/b.rs": "pub fn helper2() { crate::util::helper() }\n",
        },
    )
    result = _run(src / "eval", src)
    assert result.returncode == 0, result.stdout
    assert _cycles(result) == []


def test_pub_use_of_a_child_in_mod_rs_is_an_edge(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod eval;\n",
            "eval/mod.rs": "mod a;\npub use a::Thing;\npub const STRIP: usize = 8;\n",
            "eval/a.rs": "pub struct Thing([u8; super::STRIP]);\n",
        },
    )
    result = _run(src / "eval")
    assert result.returncode == 1
    assert _cycles(result) == ["a.rs -> mod.rs -> a.rs"]


def test_multi_line_use_blocks_and_inline_paths_are_seen(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod gtscript;\n",
            "gtscript/mod.rs": "pub mod plan;\npub mod eval;\n",
            "gtscript/plan.rs": (
                "use super::{\n"
                "    eval::{\n"
                "        jit::Jit as J,\n"
                "        Other,\n"
                "    },\n"
                "};\n"
                "pub struct Plan;\n"
            ),
            "gtscript/eval/mod.rs": "pub mod jit;\npub mod tile;\npub struct Other;\n",
            # an inline path in code, no use line
            "gtscript/eval/jit.rs": "pub struct Jit;\nfn f() -> crate::gtscript::plan::Plan { crate::gtscript::plan::Plan }\n",
            # an inline super:: call
            "gtscript/eval/tile.rs": "fn g() { super::jit::compile(); }\n",
        },
    )
    result = _run(src / "gtscript")
    assert result.returncode == 1
    assert _cycles(result) == ["eval/jit.rs -> plan.rs -> eval/jit.rs"]
    # the edges themselves: the brace block names jit.rs and (eval::Other) eval/mod.rs; tile.rs's
    # inline super::jit:: call is an edge on no cycle; mod.rs declaring its children is none
    graph = _checker().import_graph(src / "gtscript")
    root = (src / "gtscript").resolve()
    edges = {(str(a.relative_to(root)), str(b.relative_to(root))) for a, bs in graph.items() for b in bs}
    assert edges == {
        ("plan.rs", "eval/jit.rs"),
        ("plan.rs", "eval/mod.rs"),
        ("eval/jit.rs", "plan.rs"),
        ("eval/tile.rs", "eval/jit.rs"),
    }


def test_inline_super_call_makes_a_cycle(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "mod eval;\n",
            "eval/mod.rs": "mod jit;\nmod tile;\n",
            "eval/jit.rs": "pub fn compile() { let _ = super::tile::Tile::new(); }\n",
            "eval/tile.rs": "pub struct Tile;\nfn g() { super::jit::compile(); }\n",
        },
    )
    assert _cycles(_run(src / "eval")) == ["jit.rs -> tile.rs -> jit.rs"]


def test_test_modules_and_test_files_are_ignored(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "mod eval;\n",
            "eval/mod.rs": "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod b_tests;\n",
            "eval/a.rs": (
                "pub struct A;\n"
                "#[cfg(test)]\n"
                "mod tests {\n"
                "    use super::super::b::B;\n"
                "    #[test]\n"
                "    fn t() { let _ = super::super::b::B; }\n"
                "}\n"
            ),
            "eval/b.rs": (
                "use super::a::A;\n"
                "// use super::a::never; a comment\n"
                'const S: &str = "super::a::not_code";\n'
                "#[cfg(test)]\n"
                "use super::a::TestOnly;\n"
                "pub struct B;\n"
            ),
            "eval/tests.rs": "use super::b::B;\nuse super::a::A;\n",
            "eval/b_tests.rs": "use super::b::B;\nuse super::a::A;\n",
        },
    )
    result = _run(src / "eval")
    assert result.returncode == 0, result.stdout
    # without the cfg(test) block, a.rs -> b.rs would close a cycle with b.rs -> a.rs
    (src / "eval" / "a.rs").write_text("pub struct A;\nfn f() { let _ = super::b::B; }\n")
    assert _cycles(_run(src / "eval")) == ["a.rs -> b.rs -> a.rs"]


def test_each_root_is_checked_separately_and_crate_paths_resolve_from_src(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "mod x;\nmod y;\n",
            "x/mod.rs": "mod p;\nmod q;\n",
            "x/p.rs": "use crate::x::q::Q;\npub struct P;\n",
            "x/q.rs": "pub struct Q(crate::x::p::P);\n",
            "y/mod.rs": "mod r;\n",
            "y/r.rs": "pub struct R;\n",
        },
    )
    result = _run(src / "y", src / "x")
    assert result.returncode == 1
    assert _cycles(result) == ["p.rs -> q.rs -> p.rs"]
    assert _run(src / "y").returncode == 0


def test_usage_errors(tmp_path: Path) -> None:
    assert _run().returncode == 2
    assert _run(tmp_path / "missing").returncode == 2
