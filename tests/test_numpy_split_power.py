"""np.split and friends, np.allclose, np.linalg.matrix_power, np.degrees/np.radians and
`ufunc.outer` under flowjit.jit, against NumPy (compiler/np_functions_split.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit

RNG = np.random.default_rng(11)


def _same_pieces(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
       sections=st.one_of(st.integers(1, 5),
                          st.lists(st.integers(-9, 9), min_size=0, max_size=4)),
       axis=st.integers(-3, 2), exact=st.booleans())
def test_split_and_array_split_match_numpy(shape, sections, axis, exact):
    a = RNG.standard_normal(shape)
    fn = np.split if exact else np.array_split
    try:
        want = fn(a, sections, axis=axis)
    except (ValueError, IndexError) as e:
        with pytest.raises(type(e)):
            flowjit.jit(lambda x: fn(x, sections, axis=axis))(a)
        return
    got = flowjit.jit(lambda x: [p * 2.0 for p in fn(x, sections, axis=axis)])(a)
    _same_pieces(got, [p * 2.0 for p in want])


@pytest.mark.parametrize("name, shape, sections", [
    ("hsplit", (4, 6), 3), ("hsplit", (6,), [2, 5]), ("vsplit", (4, 3), 2),
    ("dsplit", (2, 3, 4), [1]), ("vsplit", (5,), 5), ("dsplit", (2, 4), 2)])
def test_fixed_axis_splits_match_numpy(name, shape, sections):
    fn = getattr(np, name)
    a = RNG.standard_normal(shape)
    try:
        want = fn(a, sections)
    except ValueError:
        with pytest.raises(ValueError, match="dimensions"):
            flowjit.jit(lambda x: fn(x, sections))(a)
        return
    _same_pieces(flowjit.jit(lambda x: fn(x, sections))(a), want)


def test_split_pieces_are_views_whose_writes_reach_the_argument():
    def halve_first(x):
        first, _ = np.split(x, 2)
        first *= 0.5

    a = RNG.standard_normal((4, 3))
    want = a.copy()
    halve_first(want)
    flowjit.jit(halve_first)(a)
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("delta, rtol, equal_nan", [
    (1e-12, 1e-5, False), (1e-3, 1e-5, False), (1e-3, 1e-2, False), (0.0, 1e-5, True)])
def test_allclose_matches_numpy(delta, rtol, equal_nan):
    a = RNG.standard_normal((5, 4))
    a[1, 2] = np.nan
    f = flowjit.jit(lambda x, y: np.allclose(x, y, rtol=rtol, equal_nan=equal_nan))
    assert bool(f(a, a + delta)) == np.allclose(a, a + delta, rtol=rtol, equal_nan=equal_nan)


@pytest.mark.parametrize("n", [-2, 0, 1, 3, 6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_matrix_power_matches_numpy(n, dtype):
    a = (RNG.standard_normal((2, 4, 4)) + 3 * np.eye(4)).astype(dtype) if dtype != np.int64 \
        else RNG.integers(-2, 3, (2, 4, 4))
    if n < 0 and dtype == np.int64:
        return   # NumPy: integer matrices cannot be inverted
    want = np.linalg.matrix_power(a, n)
    got = flowjit.jit(lambda x: np.linalg.matrix_power(x, n))(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_matrix_power_of_a_non_square_matrix_is_numpys_error():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        flowjit.jit(lambda x: np.linalg.matrix_power(x, 2))(np.ones((3, 4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_degrees_and_radians_match_numpy(dtype):
    x = (RNG.standard_normal(9) * 4).astype(dtype)
    got = flowjit.jit(lambda v: (np.degrees(v), np.radians(v)))(x)
    for g, w in zip(got, (np.degrees(x), np.radians(x))):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6 if g.dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("ufunc", [np.subtract, np.maximum, np.power, np.greater, np.arctan2])
@pytest.mark.parametrize("shapes", [((2, 3), (4,)), ((), (2, 2))])
def test_ufunc_outer_matches_numpy(ufunc, shapes):
    a = np.abs(RNG.standard_normal(shapes[0])) + 0.5
    b = RNG.standard_normal(shapes[1])
    want = ufunc.outer(a, b)
    got = flowjit.jit(lambda x, y: ufunc.outer(x, y))(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(flowjit.jit(lambda y: ufunc.outer([1.5, 2.0], y))(b),
                               ufunc.outer([1.5, 2.0], b), rtol=1e-13)
