"""The reduction steps generated kernels use (targets/cpu/reduce_steps.py).

radd/rmax/rmin must give NumPy's results (NaN propagating through max/min, infinities
kept) and must let LLVM vectorize the reduction loop they sit in, with no fast-math flag on
any other instruction; the softmax a user writes must compile to those steps.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numba import njit

import flowjit as tf
from flowjit.targets.cpu.reduce_steps import radd, rmax, rmin


@njit(error_model="numpy")
def _reduce_rows(x, out):
    for i in range(x.shape[0]):
        s = x.dtype.type(0)
        hi = x.dtype.type(-np.inf)
        lo = x.dtype.type(np.inf)
        for j in range(x.shape[1]):
            v = x[i, j]
            s = radd(s, v)
            hi = rmax(hi, v)
            lo = rmin(lo, v)
        out[0, i] = s
        out[1, i] = hi
        out[2, i] = lo


def _run(x):
    out = np.empty((3, x.shape[0]), x.dtype)
    _reduce_rows(x, out)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_steps_match_numpy_with_special_values(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 37)).astype(dtype)
    x[1, 4] = np.nan                       # NaN anywhere poisons max, min and sum
    x[2, 36] = np.nan                      # ... also as the last element
    x[3, :] = -np.inf                      # all -inf
    x[4, 0], x[4, 9] = np.inf, -np.inf     # inf - inf in the sum
    out = _run(x)
    tol = dict(rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    np.testing.assert_allclose(out[0], x.sum(axis=1), **tol)
    np.testing.assert_array_equal(out[1], x.max(axis=1))
    np.testing.assert_array_equal(out[2], x.min(axis=1))


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 70)),
                  elements=st.one_of(st.floats(-1e6, 1e6),
                                     st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))))
def test_steps_hypothesis(x):
    out = _run(x)
    np.testing.assert_array_equal(out[1], x.max(axis=1))
    np.testing.assert_array_equal(out[2], x.min(axis=1))
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out[0], x.sum(axis=1), rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduction_loop_vectorizes_and_only_the_steps_are_relaxed(dtype):
    _run(np.ones((2, 3), dtype))
    sig = next(s for s in _reduce_rows.signatures if s[0].dtype.bitwidth == 8 * dtype().itemsize)
    ir = _reduce_rows.inspect_llvm(sig)
    lane, suffix = ("float", "f32") if dtype == np.float32 else ("double", "f64")
    assert re.search(rf"fadd reassoc nsz <\d+ x {lane}>", ir), "the sum did not vectorize"
    assert re.search(rf"llvm\.maximum\.v\d+{suffix}", ir), "the max did not vectorize"
    assert re.search(rf"llvm\.minimum\.v\d+{suffix}", ir), "the min did not vectorize"
    other_flags = re.findall(r"= (fmul|fsub|fdiv|fcmp) (fast|reassoc|nnan|ninf)", ir)
    assert not other_flags, other_flags


def test_softmax_compiles_to_the_vector_steps():
    @tf.jit
    def softmax(x):
        e = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))
        return e / tf.reduce_sum(e, axis=-1, keepdims=True)

    source = softmax.lower(np.ones((3, 5), np.float32)).source
    assert "rmax(" in source and "radd(" in source
