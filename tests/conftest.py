"""Shared test set-up: a fresh default graph per test, strict kernel-output checking, the
loop IR verified after every loop-IR pass (compiler/loop_verify.py), and no timed trial of
jitted functions against plain NumPy (FLOWJIT_JIT_MEASURE_RUNS=0, runtime/jit.py; child
processes inherit it): the differential tests compare compiled kernels with NumPy, and a
trial could keep plain NumPy on a loaded machine; tests/test_jit_trial.py tests the trial
itself."""

import os

import pytest

os.environ.setdefault("FLOWJIT_VERIFY_LOOP_IR", "1")
os.environ["FLOWJIT_JIT_MEASURE_RUNS"] = "0"

import flowjit as tf
from flowjit.runtime import executor


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test starts with an empty default graph and kernel output checks on."""
    executor.CHECK_OUTPUTS = True
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()
    # kernel cache entries are written on background threads: let none outlive its test
    tf.wait_for_cache_writes()
