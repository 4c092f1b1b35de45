"""TF 1.x RNN programs under flowjit against TensorFlow's recorded results.

The programs live in `fixtures/rnn_programs.py`; `fixtures/record_rnn_cases.py` ran them
under TensorFlow 2.21's `tensorflow.compat.v1` (cells from `tf.nn.rnn_cell`, the legacy
Keras) and stored `fixtures/rnn_cases.npz`.  Here the same source runs with its cells from
`tf.contrib.rnn`, as a TF 1.x program writes it, with every variable set to the same fixed
values: outputs, final states, gradients, variable names and an LSTM classifier's training
losses must agree.  Each program runs with the ops' reference kernels (no clusters: loops
on the control-flow executor) and compiled by the reference target (each while loop one
WHILE node of the kernel IR, interpreted: the lowering of the loops and their gradients,
without a numba compile; tests/test_rnn.py runs the CPU target's kernels).
"""

import importlib.util
import os

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, recorded_result
from flowjit.runtime import loop_steps

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
_spec = importlib.util.spec_from_file_location("flowjit_rnn_programs",
                                               os.path.join(FIXTURES, "rnn_programs.py"))
PROGRAMS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PROGRAMS)
RECORDED = dict(np.load(os.path.join(FIXTURES, "rnn_cases.npz")))
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-6)}
CONFIGS = {"reference kernels": tf.ConfigProto(jit=False),
           "compiled by the reference target": tf.ConfigProto(
               jit=tf.JitOptions.always(target="reference"))}


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name, config, monkeypatch, compiled_calls):
    make, init, loops = tf.Session, loop_steps.LoopStep.__init__, []

    def loop_step(step, *args, **kwargs):
        init(step, *args, **kwargs)
        loops.append(step)

    monkeypatch.setattr(tf, "Session", lambda *a, **k: make(*a, **{**k, "config":
                                                                    CONFIGS[config]}))
    monkeypatch.setattr(loop_steps.LoopStep, "__init__", loop_step)
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name, tf.contrib.rnn)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
    if config == "reference kernels":
        assert not loops and not compiled_calls
    else:   # every dynamic_rnn loop, forward and backward, ran as one compiled WHILE
        assert loops
        for step in loops:
            assert step.whole.name in compiled_calls, f"{step.name} was not compiled whole"
