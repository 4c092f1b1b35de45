"""TF 1.x convolution programs match TensorFlow's recorded results.

The programs live in `fixtures/conv_cases.py` (conv2d for every padding with strides and
dilations, depthwise_conv2d, conv2d_transpose, conv1d, convolution, atrous and separable
convolutions, second derivatives through the backprop ops, and a small CNN trained by
gradient descent); `fixtures/record_conv_cases.py` ran them with TensorFlow and stored
`fixtures/conv_cases.npz`.  Here each runs unchanged with flowjit: with the ops' reference
kernels, and compiled by the reference target; the CNN training program also compiled for
the CPU (one compile).
"""

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, load_recorded_programs, recorded_result
from flowjit.runtime import clustering
from flowjit.runtime import session as session_module

PROGRAMS, RECORDED = load_recorded_programs("conv_cases")
# float32 sums of up to 5x5x64 products in another order than TensorFlow's kernels
TOLERANCES = {np.dtype(np.float32): (2e-4, 2e-5)}


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


def _check(name):
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)


@pytest.mark.parametrize("policy", ["never", "reference"])
@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name, policy, monkeypatch):
    monkeypatch.setattr(clustering, "STRICT", True)
    if policy == "reference":
        monkeypatch.setattr(session_module, "jit_options",
                            lambda config: tf.JitOptions.always(target="reference"))
    else:
        monkeypatch.setenv("FLOWJIT_JIT", policy)
    _check(name)


def test_cnn_training_compiled_for_the_cpu_matches_tensorflow(monkeypatch):
    monkeypatch.setattr(clustering, "STRICT", True)
    monkeypatch.setenv("FLOWJIT_JIT", "always")
    _check("small_cnn_training")
