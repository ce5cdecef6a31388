"""gridbuf's environment switches (``crate::runtime::env``): every on/off switch takes the same
spellings, and a value a switch does not take is reported once per process on standard error,
naming the variable, the value and what it takes, before the default is used."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import gridbuf.gtscript as gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, interval

_PROBE = """
import numpy as np
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, interval

def double(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 2.0 * a

a = np.arange(96 * 96 * 20, dtype=np.float64).reshape(96, 96, 20)  # large enough to run on the team
for _ in range(2):  # two definitions and calls: each switch is reported once
    st = gtscript.stencil(backend="numpy", definition=double)
    out = np.zeros_like(a)
    st(a, out)
    assert np.array_equal(out, 2.0 * a)
print("tier two:", st.tier_two)
"""


def _run(tmp_path, **switches: str) -> subprocess.CompletedProcess:
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRIDBUF_")}
    env.update(switches)
    return subprocess.run([sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True, timeout=300)


def test_values_a_switch_does_not_take_are_reported_once_each(tmp_path):
    bad = {
        "GRIDBUF_TIER2": "defne",
        "GRIDBUF_NUM_THREADS": "all",
        "GRIDBUF_GTSCRIPT_JIT": "of",
        "GRIDBUF_GTSCRIPT_SWEEP": "2",
        "GRIDBUF_VECTOR_MATH": "-",
        "GRIDBUF_SPIN_US": "-5",
    }
    done = _run(tmp_path, **bad)
    for name, value in bad.items():
        said = [line for line in done.stderr.splitlines() if f"{name}={value!r}".replace("'", '"') in line]
        assert len(said) == 1, (name, done.stderr)
        assert "expected" in said[0] and "default" in said[0], said[0]
    # The defaults: tier two in the background from the first call.
    assert done.stdout.split("tier two:")[1].strip() != "idle", done.stdout


@pytest.mark.parametrize("off", ["0", "off", "OFF", " false ", "no"])
def test_tier_two_off_in_every_spelling(tmp_path, off):
    done = _run(tmp_path, GRIDBUF_TIER2=off)
    assert done.stdout.split("tier two:")[1].strip() == "idle", done.stdout
    assert "gridbuf:" not in done.stderr, done.stderr


@pytest.mark.parametrize("on", ["1", "on", "True", "yes", "background", ""])
def test_set_values_that_mean_the_default_are_not_reported(tmp_path, on):
    done = _run(tmp_path, GRIDBUF_TIER2=on, GRIDBUF_NUM_THREADS=" 2 ", GRIDBUF_GTSCRIPT_JIT="yes", GRIDBUF_SPIN_US="0")
    assert "gridbuf:" not in done.stderr, done.stderr
    assert done.stdout.split("tier two:")[1].strip() != "idle", done.stdout


def test_a_switch_read_at_each_definition_takes_the_new_spellings(monkeypatch):
    # GRIDBUF_GTSCRIPT_JIT=off (not only "0") keeps a stencil on the interpreter: same values.
    def double(a: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
        with computation(PARALLEL), interval(...):
            out = 2.0 * a  # noqa: F841

    a = np.random.default_rng(0).standard_normal((6, 5, 4))
    outs = []
    for jit in ("off", "on"):
        monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", jit)
        st = gtscript.stencil(backend="numpy", definition=double)
        out = np.zeros_like(a)
        st(a, out)
        outs.append(out)
    assert np.array_equal(outs[0], 2.0 * a) and np.array_equal(outs[1], outs[0])
