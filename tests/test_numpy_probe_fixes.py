"""NumPy semantics found broken by a differential probe of ordinary NumPy code (2026-12-04),
each checked against NumPy itself:

- `x[mask] = v` with a boolean mask over the leading axes writes whole rows (it used to
  broadcast the mask along the trailing axis), and a mask whose shape does not lead the
  array's is NumPy's IndexError;
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def _zero_rows(x, row_value):
    x[x[:, 0] > 0] = 0.0               # a mask over rows, a scalar
    y = x.copy()
    y[y.sum(axis=1) < -1.0] = row_value  # a mask over rows, a value broadcast along a row
    return y


zero_rows = flowjit.jit(_zero_rows, fallback=False)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(0, 7), cols=st.sampled_from([1, 2, 3, 5]), seed=st.integers(0, 99))
def test_a_row_mask_writes_whole_rows(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    row_value = rng.standard_normal(cols)
    mine, theirs = x.copy(), x.copy()
    _same(zero_rows(mine, row_value), _zero_rows(theirs, row_value))
    _same(mine, theirs)                # the argument is written as NumPy writes it


def test_a_mask_over_two_leading_axes_of_a_3d_array():
    def f(x):
        x[x[:, :, 0] > 0.5] = -1.0
        return x

    x = np.random.default_rng(3).standard_normal((4, 3, 2))
    _same(flowjit.jit(f, fallback=False)(x.copy()), f(x.copy()))


@pytest.mark.parametrize("array_shape, mask_shape", [((3, 3), (1,)), ((3,), (3, 1))])
def test_a_mask_that_does_not_lead_the_array_is_an_index_error(array_shape, mask_shape):
    def f(x, m):
        x[m] = 1.0
        return x

    for fn in (f, flowjit.jit(f, fallback=False)):
        with pytest.raises(IndexError):
            fn(np.zeros(array_shape), np.ones(mask_shape, bool))
