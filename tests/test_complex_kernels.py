"""Complex tensors in compiled kernels: +, -, *, negation and data movement (reshape, slices,
transposes, concatenation) compile for complex64/complex128 and equal NumPy; ops that do not
compile complex values yet (division, exp, reductions, ...) say so and run as NumPy does.

Each compiled case checks `.lower()` shows generated source, so the comparison is between the
compiled kernel and NumPy, not NumPy and itself."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit

COMPLEX = ["complex64", "complex128"]


def _values(rng, shape, dtype, specials=False):
    re = rng.standard_normal(shape)
    im = rng.standard_normal(shape)
    if specials and re.size:
        flat_re, flat_im = re.reshape(-1), im.reshape(-1)
        flat_re[0], flat_im[-1] = np.inf, np.nan
    return (re + 1j * im).astype(dtype)


def _arith(x, y):
    return x * y + (x - y) * 2.0 - (-x)


def _butterfly(x, tw):
    """One radix-2 stage: halves of each block, the second twiddled, then sum and
    difference (reshape, slices, concatenate, complex multiply)."""
    y = x.reshape(-1, 2, tw.shape[0])
    top, bottom = y[:, 0], y[:, 1] * tw
    return np.concatenate((top + bottom, top - bottom), axis=-1).reshape(x.shape)


def _moves(x):
    return np.concatenate((x.T[::-1], x.T[:, ::2] if x.shape[1] % 2 == 0 else x.T), axis=1)


_ARITH = flowjit.jit(_arith)
_BUTTERFLY = flowjit.jit(_butterfly)
_MOVES = flowjit.jit(_moves)


def _assert_compiled(fn, *args):
    text = str(fn.lower(*args))
    assert "not compiled" not in text and "def kernel" in text, text[:500]


def _close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if dtype == "complex64" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@settings(max_examples=20, deadline=None)
@given(rows=st.sampled_from([0, 1, 3, 17]), cols=st.sampled_from([1, 2, 8, 33]),
       broadcast=st.booleans(), dtype=st.sampled_from(COMPLEX),
       specials=st.booleans(), seed=st.integers(0, 2**16))
def test_complex_arithmetic_compiles_and_matches_numpy(rows, cols, broadcast, dtype,
                                                        specials, seed):
    rng = np.random.default_rng(seed)
    x = _values(rng, (rows, cols), dtype, specials)
    y = _values(rng, (cols,) if broadcast else (rows, cols), dtype)
    _assert_compiled(_ARITH, x, y)
    with np.errstate(all="ignore"):
        want = _arith(x, y)
    _close(_ARITH(x, y), want, dtype)


@settings(max_examples=15, deadline=None)
@given(blocks=st.sampled_from([1, 2, 5]), half=st.sampled_from([1, 4, 7]),
       dtype=st.sampled_from(COMPLEX), seed=st.integers(0, 2**16))
def test_complex_butterfly_of_reshapes_slices_and_concatenation_compiles(blocks, half, dtype,
                                                                          seed):
    rng = np.random.default_rng(seed)
    x = _values(rng, (3, blocks * 2 * half), dtype)
    tw = _values(rng, (half,), dtype)
    _assert_compiled(_BUTTERFLY, x, tw)
    _close(_BUTTERFLY(x, tw), _butterfly(x, tw), dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("shape", [(4, 6), (5, 3), (1, 2)])
def test_complex_transposes_reversals_and_strided_slices_compile(dtype, shape):
    x = _values(np.random.default_rng(1), shape, dtype)
    _assert_compiled(_MOVES, x)
    np.testing.assert_array_equal(_MOVES(x), _moves(x))


def test_complex_ops_without_a_compiled_kernel_say_so_and_match_numpy():
    x = _values(np.random.default_rng(2), (4, 5), "complex128")
    f = flowjit.jit(lambda x: np.exp(x) / x.sum())
    np.testing.assert_allclose(f(x), np.exp(x) / x.sum(), rtol=1e-12)
    lowered = f.lower(x)
    assert not lowered.compiled
    assert "complex128" in lowered.stage("not compiled")
