"""The timed trial of a jitted function's new signature (runtime/jit.py `_Trial`): its first
calls alternate between the compiled kernel and the plain NumPy function, and the faster is
kept, with the reason in `lower()`; results are NumPy's on every call; code built from
flowjit ops (not NumPy) is never run as plain Python."""

import time

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import jit as jit_module

X = np.linspace(-2.0, 2.0, 40).reshape(8, 5)


def _slow_kernels(monkeypatch):
    """Compile as usual, but every call of the kernel first sleeps 20 ms."""
    real = jit_module.compile_cluster

    def compile_slowly(*args, **kwargs):
        cluster = real(*args, **kwargs)
        kernel = cluster.kernel

        def slow(*arrays):
            time.sleep(0.02)
            return kernel(*arrays)

        cluster.kernel = slow
        return cluster

    monkeypatch.setattr(jit_module, "compile_cluster", compile_slowly)


def test_a_kernel_slower_than_numpy_is_dropped_for_plain_numpy_and_says_why(monkeypatch):
    _slow_kernels(monkeypatch)
    f = tf.jit(lambda x: np.tanh(x) * 2.0 + 1.0, measure_runs=3)
    for _ in range(8):
        np.testing.assert_allclose(f(X), np.tanh(X) * 2.0 + 1.0, rtol=1e-12)
    lowered = f.lower(X)
    assert not lowered.compiled
    assert "plain NumPy measured faster than the compiled kernel" in lowered.stage(
        "not compiled")


def test_a_kernel_faster_than_numpy_is_kept_and_says_why():
    def slow_in_python(x):
        time.sleep(0.02)   # runs at trace time and in every plain call, never compiled
        return np.exp(x) - x

    f = tf.jit(slow_in_python, measure_runs=2)
    for _ in range(6):
        np.testing.assert_allclose(f(X), np.exp(X) - X, rtol=1e-12)
    lowered = f.lower(X)
    assert lowered.compiled
    assert "compiled kernel kept" in lowered.stage("measured")


@pytest.mark.parametrize("runs", [0, 3])
def test_code_of_flowjit_ops_and_measure_runs_0_are_never_run_as_plain_python(monkeypatch,
                                                                           runs):
    _slow_kernels(monkeypatch)
    ops = tf.jit(lambda x: tf.tanh(x) * 2.0, measure_runs=3)   # flowjit ops: no trial
    numpy_code = tf.jit(lambda x: np.tanh(x) * 2.0, measure_runs=runs)
    for _ in range(8):
        np.testing.assert_allclose(ops(X), np.tanh(X) * 2.0, rtol=1e-12)
        np.testing.assert_allclose(numpy_code(X), np.tanh(X) * 2.0, rtol=1e-12)
    assert ops.lower(X).compiled
    assert numpy_code.lower(X).compiled is (runs == 0)


def test_numpy_code_the_compiler_cannot_take_runs_as_plain_numpy():
    """complex arithmetic is not compiled: the function runs as the NumPy it is (not op by op
    through the reference kernels), and says why; mixed with a flowjit op it never does."""
    z = (X + 1j * X[::-1]).astype(np.complex128)
    f = tf.jit(lambda z: (z * np.exp(-1j * z)).reshape(-1, 2))
    np.testing.assert_allclose(f(z), (z * np.exp(-1j * z)).reshape(-1, 2), rtol=1e-12)
    lowered = f.lower(z)
    assert not lowered.compiled
    assert "runs as plain Python: not compiled" in lowered.stage("not compiled")
    tf.set_random_seed(1)
    mixed = tf.jit(lambda x: x + tf.random_uniform(tf.shape(x), seed=3))
    noise = mixed(X) - X
    assert noise.min() >= 0 and noise.max() < 1
    assert "RandomUniform" in mixed.lower(X).stage("graph")
