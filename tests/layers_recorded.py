"""Running the `tf.layers` / `tf.losses` / `tf.metrics` programs of fixtures/layers_cases.py
under flowjit and comparing them with what TensorFlow recorded (layers_cases.npz).

The programs open plain `tf.Session()`s; here they get a module whose `Session` compiles
every cluster before its first run for the reference target (the NumPy interpreter of the
kernel IR): the programs' clusters go through clustering, lowering and the IR passes at a
small cost; tests/test_layers.py compiles a training step for the CPU (numba) as well.
"""

import numpy as np

import flowjit as tf
from conftest import assert_like_recorded, load_recorded_programs, recorded_result

PROGRAMS, RECORDED = load_recorded_programs("layers_cases")
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.float64): (1e-10, 1e-12)}


class CompilingTF:
    """flowjit, but `Session()` compiles every cluster (for `target`) before its first run."""

    def __init__(self, target="reference"):
        self._config = tf.ConfigProto(jit=tf.JitOptions.always(target=target))

    def __getattr__(self, name):
        return getattr(tf, name)

    def Session(self, *args, **kwargs):  # noqa: N802 - TensorFlow's name
        kwargs.setdefault("config", self._config)
        return tf.Session(*args, **kwargs)


def check_program(name, compiled_calls):
    """Program `name` under flowjit gives what TensorFlow recorded, with compiled clusters."""
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(CompilingTF(), name)
    assert compiled_calls, f"{name}: no compiled kernel ran"
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)
