"""TF 1.x model programs (convolutions, tf.layers, RNN cells through `tf.contrib.rnn`,
tf.losses, tf.metrics) under flowjit vs TensorFlow's recorded results.

The programs live in `fixtures/tf1_models.py`; `fixtures/record_tf1.py tf1_models` ran them
under TensorFlow 2.21's `tensorflow.compat.v1` (with tf_keras's v1 cells and layers) and
stored `fixtures/tf1_models.npz`.  Here each runs unchanged, op by op with the reference
kernels and with every cluster compiled by the reference target (the compiler's IR run by
its interpreter: every lowering checked, no numba compile), and the CNN with every cluster
compiled by numba; each must agree with TensorFlow in nesting, dtypes, shapes, values and
variable names.
"""

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, load_recorded_programs, recorded_result
from flowjit.runtime import session as session_module

PROGRAMS, RECORDED = load_recorded_programs("tf1_models")
# float32 convolutions and recurrences summed in another order than TensorFlow's oneDNN
TOLERANCES = {np.dtype(np.float32): (2e-4, 2e-5), np.dtype(np.float64): (1e-9, 1e-12)}


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


CASES = [(name, policy) for name in sorted(PROGRAMS.PROGRAMS) for policy in ("never",
                                                                             "reference")]
CASES.append(("cnn_layers_metrics", "always"))      # numba compiles cost seconds each


@pytest.mark.parametrize("name,policy", CASES)
def test_model_program_matches_tensorflow(name, policy, compiled_calls, monkeypatch):
    if policy == "reference":
        monkeypatch.setattr(session_module, "jit_options",
                            lambda config: tf.JitOptions.always(target="reference"))
    else:
        monkeypatch.setenv("FLOWJIT_JIT", policy)
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
    if policy != "never":
        assert compiled_calls, "no compiled kernel ran"
