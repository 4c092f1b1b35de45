"""Shared test set-up: a fresh default graph per test, strict kernel-output checking, and
the loop IR verified after every loop-IR pass (compiler/loop_verify.py)."""

import os

import pytest

os.environ.setdefault("FLOWJIT_VERIFY_LOOP_IR", "1")

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
