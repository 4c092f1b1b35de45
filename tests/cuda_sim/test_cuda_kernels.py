"""Each kind of CUDA kernel (flat, row-block, split reduction, matmul, transpose, scatter)
equals NumPy on the simulator, at sizes that pick each launch path, with NaN, infinities and
empty arrays (hypothesis draws shapes and values).  Every function is checked to have
really compiled for CUDA (`lower(...).compiled`), so NumPy is never compared with itself.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import flowjit
from flowjit.targets.cuda import codegen
from test_cuda_target import _recurrence
import test_targets
from test_targets import layernorm, softmax


def cuda_jit(fn):
    return flowjit.jit(fn, target="cuda", measure_runs=0)


def check(fn, *args, rtol=1e-5, atol=1e-6):
    jf = cuda_jit(fn)
    got = jf(*[a.copy() for a in args])
    assert jf.lower(*args).compiled, jf.lower(*args)
    want = fn(*[a.copy() for a in args])
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return jf


def chain(x, y):
    return np.where(x > y, np.tanh(x) * y, np.exp(-np.abs(y))) + 1.5


floats = st.floats(-50, 50, width=32)


@settings(max_examples=12, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=9),
                  elements=floats | st.sampled_from([np.nan, np.inf, -np.inf])))
def test_elementwise_chain_any_shape_with_specials(x):
    check(chain, x, (x[::-1] if x.ndim else x).copy())


@pytest.mark.parametrize("shape", [(3, 5), (2, 130), (1, 1), (0, 4), (200, 3)])
def test_softmax_flat_and_row_kernels(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check(softmax, x)


def test_layernorm_row_kernel_float64():
    rng = np.random.default_rng(2)
    x, g, b = rng.standard_normal((3, 100)), rng.standard_normal(100), rng.standard_normal(100)
    check(layernorm, x, g, b, rtol=1e-12, atol=1e-12)


def test_full_sum_takes_the_split_path_and_matches():
    x = np.random.default_rng(3).standard_normal(codegen.SPLIT_MIN_WORK + 77)
    jf = check(lambda v: v.sum(), x, rtol=1e-12, atol=1e-10)
    assert "_part" in jf.lower(x).source and "_fin" in jf.lower(x).source


@pytest.mark.parametrize("reduce", [np.max, np.min, np.argmax, np.argmin])
def test_extreme_reductions_with_nan_over_each_path(reduce):
    rng = np.random.default_rng(4)
    for shape, axis in (((7, 5), 1), ((3, 300), 1), ((codegen.SPLIT_MIN_WORK + 5,), 0)):
        x = rng.standard_normal(shape).astype(np.float32)
        x.flat[::7] = x.flat[::7].max() if reduce in (np.argmax, np.argmin) else np.nan
        check(lambda v: reduce(v, axis=axis), x)


def test_boolean_and_integer_reductions():
    x = np.random.default_rng(5).integers(-9, 9, (6, 70)).astype(np.int32)
    check(lambda v: (v > 0).any(axis=1), x)
    check(lambda v: (v > -8).all(axis=1), x)
    check(lambda v: (v * v).sum(axis=0), x)
    check(lambda v: np.prod(v[:, :5], axis=1), x)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 7, 3), (17, 33, 9), (64, 16, 65)])
def test_matmul_tiles_at_odd_sizes(m, k, n):
    rng = np.random.default_rng(m * k * n)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    check(lambda x, y: x @ y, a, b, rtol=1e-12, atol=1e-12)
    check(lambda x, y: x.T @ y.T, a.T.copy(), b.T.copy(), rtol=1e-12, atol=1e-12)


def test_batched_matmul_and_broadcast_batch():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 5, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4, 6)).astype(np.float32)
    check(lambda x, y: x @ y, a, b, rtol=1e-5, atol=1e-5)
    check(lambda x, y: x @ y, a, b[:1].copy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 9), (2, 33, 7), (1, 4)])
def test_transpose_through_shared_tiles(shape):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    jf = check(lambda v: np.swapaxes(v, -1, -2).copy(), x)
    assert "_transpose" in jf.lower(x).source


def test_scatter_last_write_wins_and_out_of_range_raises():
    def put(table, ids, rows):
        table[ids] = rows
        return table

    table = np.zeros((6, 3))
    ids = np.array([4, 1, 4])
    rows = np.arange(9.0).reshape(3, 3)
    jf = check(put, table, ids, rows)
    assert "_scatter" in jf.lower(table, ids, rows).source
    with pytest.raises((ValueError, IndexError)):
        jf(table.copy(), np.array([7, 0, 0]), rows)


def test_integer_arithmetic_wraps_and_divides_as_numpy():
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31 - 1, 50).astype(np.int32)
    b = rng.integers(1, 40, 50).astype(np.int32) * np.where(rng.random(50) < 0.5, -1, 1)
    b = b.astype(np.int32)
    check(lambda x, y: x * y + x // y - x % y, a, b)
    check(lambda x, y: (x << (y & 7)) ^ (x >> 3), a, np.abs(b))


@pytest.mark.parametrize("steps", [0, 1, 6])
def test_while_loop_runs_as_a_host_loop_over_cuda_modules(steps):
    x = np.linspace(-2, 2, 11).astype(np.float32)
    jf = check(_recurrence, x, np.array(steps))
    source = jf.lower(x, np.array(steps)).source
    assert "while _truth(" in source and "_w" in source


@pytest.mark.parametrize("name", sorted(test_targets.PROGRAMS))
def test_whole_programs_with_in_place_updates_equal_the_reference_target(name):
    """Softmax, layernorm, an MLP training step updating its weights in place, slices and
    scatters into arguments: CUDA and reference targets agree, arguments included."""
    fn, args = test_targets.PROGRAMS[name], test_targets._inputs(name)
    results = {}
    for target in ("reference", "cuda"):
        jitted = flowjit.jit(fn, target=target, fallback=False, measure_runs=0)
        mine = [a.copy() for a in args]
        for _ in range(2):   # twice: the in-place updates of arguments compound
            out = jitted(*mine)
        assert jitted.lower(*mine).compiled, f"{name} did not compile for {target}"
        results[target] = test_targets._flat(out) + mine
    for got, ref in zip(results["cuda"], results["reference"]):
        test_targets._close(got, ref, ref.dtype)
