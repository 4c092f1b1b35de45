"""TF 1.x programs with control flow under flowjit vs TensorFlow's recorded results.

The programs live in `fixtures/tf1_control_flow.py`; `fixtures/record_tf1.py` ran them
under TensorFlow 2.21's `tensorflow.compat.v1` and stored `fixtures/tf1_control_flow.npz`.
Each runs here under the compile-always and the never-compile policies: plans holding
control flow run on the control-flow executor with the ops' reference kernels either way
(runtime/control_flow_executor.py), and both must agree with TensorFlow in nesting, dtypes,
shapes and values.
"""

import importlib.util
import os

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, recorded_result

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
_spec = importlib.util.spec_from_file_location("flowjit_tf1_control_flow",
                                               os.path.join(FIXTURES, "tf1_control_flow.py"))
PROGRAMS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PROGRAMS)
RECORDED = dict(np.load(os.path.join(FIXTURES, "tf1_control_flow.npz")))
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-10, 1e-12)}


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


@pytest.mark.parametrize("policy", ["always", "never"])
@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name, policy, monkeypatch):
    monkeypatch.setenv("FLOWJIT_JIT", policy)
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
