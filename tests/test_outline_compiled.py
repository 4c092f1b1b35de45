"""Outlined kernels through numba: a NumPy function of rows (softmax, row and column
reductions, a select) compiles to a kernel that targets/cpu/outline.py cuts into parts
(here from 30 lines, in parts of about 10, so a small kernel is cut into several and the
cold compile stays near 10 s), and the compiled parts compute what NumPy computes, for
sizes from 2 to 19 and with NaN inputs."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import flowjit
from flowjit.targets.cpu import outline


def rows(x, y):
    """Row and column statistics of tanh(x) * y, and its row softmax."""
    a = np.tanh(x) * y
    b = a.sum(axis=1)
    c = np.exp(a - a.max(axis=1, keepdims=True))
    d = c / c.sum(axis=1, keepdims=True)
    e = (d * y).mean()
    g = np.where(d > 0.1, x, -y).min(axis=0)
    return b, d, e, g


compiled_rows = flowjit.jit(rows, measure_runs=0, fallback=False)   # always the kernel


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch):
    """Cut from 30 lines into parts of ~10 (the kernel compiles on its first call, inside
    a test)."""
    monkeypatch.setattr(outline, "MIN_LINES", 30)
    monkeypatch.setattr(outline, "CHUNK_LINES", 10)


def _args(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, m)), rng.random((n, m))


def test_kernel_is_compiled_as_parts():
    lowered = compiled_rows.lower(*_args(7, 5))
    assert lowered.compiled
    tree = ast.parse(lowered.source)
    listed = next(n for n in tree.body if isinstance(n, ast.Assign)
                  and n.targets[0].id == "SUBKERNELS")
    parts = [p for p in ast.literal_eval(listed.value) if "_p" in p]
    assert len(parts) >= 3, lowered.source


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 19), m=st.integers(2, 19), seed=st.integers(0, 3),
       nan=st.booleans())
def test_outlined_kernel_matches_numpy(n, m, seed, nan):
    x, y = _args(n, m, seed)
    if nan:
        x[n // 2, m // 2] = np.nan
    got = compiled_rows(x, y)
    want = rows(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert compiled_rows.lower(x, y).compiled
