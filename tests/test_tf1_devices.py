"""TF 1.x programs with `tf.device` blocks on two CPU devices, under flowjit vs TensorFlow's
recorded results.

The programs live in `fixtures/tf1_devices.py`; `fixtures/record_tf1.py` ran them under
TensorFlow 2.21's `tensorflow.compat.v1` (each with `ConfigProto(device_count={"CPU": 2},
log_device_placement=True)`) and stored `fixtures/tf1_devices.npz`.  Here each runs
unchanged with the reference kernels, compiled (numba), and with the reference target's
compiled kernels, and must agree with TensorFlow in nesting, dtypes, shapes and values;
its placement log names both devices.
"""

import importlib.util
import os

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded
from flowjit.runtime import session as session_module

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
_spec = importlib.util.spec_from_file_location("flowjit_tf1_devices",
                                               os.path.join(FIXTURES, "tf1_devices.py"))
PROGRAMS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PROGRAMS)
RECORDED = dict(np.load(os.path.join(FIXTURES, "tf1_devices.npz")))
# float64: 25 gradient steps summed in another order than TensorFlow drift by ~1e-8
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-7, 1e-9)}


def _expected(name):
    leaves, i = [], 0
    while f"{name}:{i}" in RECORDED:
        leaves.append(RECORDED[f"{name}:{i}"])
        i += 1
    return str(RECORDED[f"{name}:structure"]), leaves


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


@pytest.mark.parametrize("policy", ["never", "always", "reference"])
@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name, policy, monkeypatch, capsys):
    if policy == "reference":
        monkeypatch.setattr(session_module, "jit_options",
                            lambda config: tf.JitOptions.always(target="reference"))
    else:
        monkeypatch.setenv("FLOWJIT_JIT", policy)
    want_structure, want = _expected(name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
    log = capsys.readouterr().err
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in log
    assert "/job:localhost/replica:0/task:0/device:CPU:1" in log
