"""np.searchsorted and np.interp under flowjit.jit, bit for bit against NumPy
(compiler/np_search.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit

_searchsorted = {side: flowjit.jit(lambda a, v, side=side: np.searchsorted(a, v, side=side))
                 for side in ("left", "right")}
_interp = flowjit.jit(lambda x, xp, fp: np.interp(x, xp, fp))
_interp_lr = flowjit.jit(lambda x, xp, fp: np.interp(x, xp, fp, left=-7.0, right=7.5))

values = st.one_of(st.floats(-5, 5), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]))


# The search is unrolled over the sorted array's static length: each length compiles once,
# so the drawn arrays take a few lengths only
@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from([1, 7, 40]), data=st.data(),
       v=st.lists(values, min_size=12, max_size=12),
       side=st.sampled_from(["left", "right"]), integer=st.booleans())
def test_searchsorted_matches_numpy(n, data, v, side, integer):
    a = data.draw(st.lists(values, min_size=n, max_size=n))
    a, v = np.sort(np.array(a)), np.array(v)   # NaNs sort last, as NumPy's order has them
    if integer:
        a = np.sort(np.nan_to_num(a, posinf=9, neginf=-9).astype(np.int64))
        v = np.nan_to_num(v, posinf=9, neginf=-9).astype(np.int64)
    got = _searchsorted[side](a, v)
    want = np.searchsorted(a, v, side=side)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_searchsorted_of_scalars_with_a_sorter_and_of_2d_values():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(50)
    f = flowjit.jit(lambda a, v: (np.searchsorted(a, 0.25, sorter=np.argsort(a)),
                                  np.searchsorted(np.sort(a), v)))
    v = rng.standard_normal((3, 4))
    got = f(a, v)
    np.testing.assert_array_equal(got[0], np.searchsorted(a, 0.25, sorter=np.argsort(a)))
    np.testing.assert_array_equal(got[1], np.searchsorted(np.sort(a), v))
    with pytest.raises(ValueError, match="side"):
        flowjit.jit(lambda a: np.searchsorted(a, 0.0, side="middle"))(a)
    # integers searched for floats (NaN last) and floats for integers, both sides
    ints = np.array([-3, 0, 0, 2, 5, 9])
    floats = np.array([-np.inf, -3.5, 0.0, 0.5, 2.0, 9.0, np.nan])
    g = flowjit.jit(lambda a, v: (np.searchsorted(a, v), np.searchsorted(a, v, "right")))
    for a_, v_ in ((ints, floats), (np.sort(floats), ints)):
        for got_, side in zip(g(a_, v_), ("left", "right")):
            np.testing.assert_array_equal(got_, np.searchsorted(a_, v_, side))


@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from([1, 2, 5, 10]), data=st.data(),
       fp=st.lists(st.one_of(st.floats(-3, 3), st.sampled_from([np.inf, -np.inf, np.nan])),
                   min_size=10, max_size=10),
       x=st.lists(st.one_of(st.floats(-6, 6), st.sampled_from([np.nan, np.inf, -np.inf])),
                  min_size=15, max_size=15),
       duplicate=st.booleans())
def test_interp_matches_numpy_bit_for_bit(n, data, fp, x, duplicate):
    xp = np.sort(np.array(data.draw(st.lists(st.floats(-4, 4), min_size=n, max_size=n,
                                             unique=True))))
    if duplicate and len(xp) > 2:
        xp[1] = xp[2]             # a repeated sample point: a step in fp
    fp = np.array(fp[:len(xp)])
    x = np.concatenate([np.array(x[:15 - n]), xp])   # every sample point exactly, too
    with np.errstate(all="ignore"):
        for f, want in ((_interp, np.interp(x, xp, fp)),
                        (_interp_lr, np.interp(x, xp, fp, left=-7.0, right=7.5))):
            got = f(x, xp, fp)
            assert got.dtype == want.dtype == np.float64
            np.testing.assert_array_equal(got, want)


def test_interp_of_float32_and_constant_tables_and_its_errors():
    x = np.linspace(-1, 3, 17, dtype=np.float32)
    f = flowjit.jit(lambda x: np.interp(x, [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(f(x), np.interp(x, [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]))
    with pytest.raises(ValueError, match="same length"):
        flowjit.jit(lambda x: np.interp(x, [0.0, 1.0], [1.0]))(x)
    with pytest.raises(ValueError, match="empty"):
        flowjit.jit(lambda x: np.interp(x, np.zeros(0), np.zeros(0)))(x)
