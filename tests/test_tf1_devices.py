"""TF 1.x programs with `tf.device` blocks on two CPU devices, under flowjit vs TensorFlow's
recorded results.

The programs live in `fixtures/tf1_devices.py`; `fixtures/record_tf1.py` ran them under
TensorFlow 2.21's `tensorflow.compat.v1` (each with `ConfigProto(device_count={"CPU": 2},
log_device_placement=True)`) and stored `fixtures/tf1_devices.npz`.  Here each runs
unchanged with the reference kernels, compiled (numba), and with the reference target's
compiled kernels, and must agree with TensorFlow in nesting, dtypes, shapes and values;
its placement log names both devices.
"""

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, load_recorded_programs, recorded_result
from flowjit.runtime import session as session_module

PROGRAMS, RECORDED = load_recorded_programs("tf1_devices")
# float64: 25 gradient steps summed in another order than TensorFlow drift by ~1e-8
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-7, 1e-9)}


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
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
    log = capsys.readouterr().err
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in log
    assert "/job:localhost/replica:0/task:0/device:CPU:1" in log
