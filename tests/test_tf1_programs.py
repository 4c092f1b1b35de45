"""Whole-program acceptance tests: TF 1.x programs under flowjit vs TensorFlow's results.

The programs live in `fixtures/tf1_programs.py` (plain TF1 code taking the module as an
argument); `fixtures/record_tf1.py` ran them under `tensorflow.compat.v1` and stored the
results in `fixtures/tf1_programs.npz`.  Here each program runs under flowjit and must give
the same nesting, the same dtypes and shapes, and the same values (exactly for integers,
booleans and strings; `allclose` for floating point), under the compile-always policy
(FLOWJIT_JIT=always), so what runs is the compiled kernels.
"""

import importlib.util
import os

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def _load_programs():
    spec = importlib.util.spec_from_file_location("flowjit_tf1_programs",
                                                  os.path.join(FIXTURES, "tf1_programs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROGRAMS = _load_programs()
RECORDED = dict(np.load(os.path.join(FIXTURES, "tf1_programs.npz")))
TOLERANCES = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (2e-5, 2e-5),
              np.dtype(np.float64): (1e-10, 1e-12)}


def _expected(name):
    structure = str(RECORDED[f"{name}:structure"])
    leaves, i = [], 0
    while f"{name}:{i}" in RECORDED:
        leaves.append(RECORDED[f"{name}:{i}"])
        i += 1
    return structure, leaves


def test_fixture_covers_every_program_and_is_small():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)
    assert len(PROGRAMS.PROGRAMS) >= 8
    assert os.path.getsize(os.path.join(FIXTURES, "tf1_programs.npz")) < 200_000


@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name, compiled_calls, monkeypatch):
    monkeypatch.setenv("FLOWJIT_JIT", "always")   # the compile-always policy
    want_structure, want = _expected(name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    print(f"{name}: {len(compiled_calls)} compiled kernel calls")
    assert compiled_calls, "no compiled kernel ran"   # every program has a cluster
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)


def test_programs_leave_no_global_state():
    """Programs build in their own graph: the default graph stays empty."""
    PROGRAMS.run_program(tf, "nested_fetches")
    assert tf.get_default_graph().get_operations() == []
