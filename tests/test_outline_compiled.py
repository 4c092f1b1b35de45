"""Outlined kernels through numba: a long kernel (an MLP training step written in NumPy,
about 170 lines of generated code) is cut into parts (targets/cpu/outline.py), and the
compiled parts compute what NumPy computes, for sizes from 2 to 19 and with NaN inputs."""

from __future__ import annotations

import ast

import numpy as np
from hypothesis import given, settings, strategies as st

import flowjit


def mlp_step(x, y, w1, w2, w3):
    """One SGD step of a 3-layer MLP with softmax cross-entropy, gradients by hand."""
    h1 = np.tanh(x @ w1)
    h2 = np.maximum(h1 @ w2, 0.0)
    logits = h2 @ w3
    shifted = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    p = p / p.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(y * np.log(p + 1e-7), axis=1))
    d3 = (p - y) / x.shape[0]
    g3 = h2.T @ d3
    d2 = (d3 @ w3.T) * (h2 > 0)
    g2 = h1.T @ d2
    d1 = (d2 @ w2.T) * (1.0 - h1 * h1)
    g1 = x.T @ d1
    return loss, w1 - 0.1 * g1, w2 - 0.1 * g2, w3 - 0.1 * g3, np.abs(g1).max() + np.abs(g2).sum()


compiled_step = flowjit.jit(mlp_step, measure_runs=0, fallback=False)   # always the kernel


def _args(batch, n_in, h1, h2, classes, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((batch, n_in)),
            np.eye(classes)[rng.integers(0, classes, batch)],
            rng.standard_normal((n_in, h1)) * 0.3, rng.standard_normal((h1, h2)) * 0.3,
            rng.standard_normal((h2, classes)) * 0.3)


def test_long_kernel_is_compiled_as_parts():
    lowered = compiled_step.lower(*_args(16, 12, 9, 7, 5))
    assert lowered.compiled
    tree = ast.parse(lowered.source)
    listed = next(n for n in tree.body if isinstance(n, ast.Assign)
                  and n.targets[0].id == "SUBKERNELS")
    parts = [p for p in ast.literal_eval(listed.value) if "_p" in p]
    assert len(parts) >= 2, lowered.source


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(2, 19), n_in=st.integers(2, 19), h1=st.integers(2, 19),
       h2=st.integers(2, 19), classes=st.integers(2, 9), seed=st.integers(0, 3),
       nan=st.booleans())
def test_outlined_kernel_matches_numpy(batch, n_in, h1, h2, classes, seed, nan):
    args = _args(batch, n_in, h1, h2, classes, seed)
    if nan:
        args[0][0, 0] = np.nan
    got = compiled_step(*args)
    want = mlp_step(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    assert compiled_step.lower(*args).compiled
