"""flowjit's own GEMM (targets/cpu/gemm.py, gemm_ukernel.py) against NumPy in float64.

Shapes are drawn to cross every edge of the blocking: rows beyond one MC block and not a
multiple of MR, columns not a multiple of NR (and below half a tile, where BLAS takes
over), reduction lengths of 0, 1 and beyond one KC slice, and transposed or strided
operands and outputs.
"""

import functools
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import numba
from numba import njit, types

import flowjit as tf
from flowjit.targets.cpu import gemm as gemm_module
from flowjit.targets.cpu.gemm import (GEMMS, KC, MC, gemm_parallel, gram_product,
                                      gram_product_t, matmul_into, triangle_bound)
from flowjit.targets.cpu.gemm_pack import transpose_block
from flowjit.targets.cpu.gemm_tiles import lanes, narrow_columns, tile_shape
from flowjit.targets.cpu.matmul_code import gemm_mode

TOL = {"float32": 2e-5, "float64": 1e-12}


@njit
def _matmul_into(a, b, out):
    matmul_into(a, b, out)


@njit
def _gemm_parallel(a, b, out):
    gemm_parallel(a, b, out, 2)


@functools.cache
def _serial_gemm(dtype_name: str):
    """The serial GEMM of `dtype_name` for arrays of any layout, as the shared library and
    the kernels call it (one compiled specialization, not one per layout drawn)."""
    gemm = GEMMS[dtype_name]
    matrix = types.Array(numba.from_dtype(np.dtype(dtype_name)), 2, "A")
    vector = types.Array(numba.from_dtype(np.dtype(dtype_name)), 1, "A")

    @njit((matrix, matrix, matrix, vector, types.int64))
    def serial(a, b, out, bias, epilogue):
        gemm(a, b, out, bias, epilogue)

    return serial


def _serial(a, b, out, bias=None, epilogue=0):
    """The serial GEMM of out's dtype, with the epilogue flags (gemm_ukernel.EPILOGUE_*)."""
    bias = np.empty(0, out.dtype) if bias is None else bias
    _serial_gemm(out.dtype.name)(a, b, out, bias, epilogue)


def _check(a, b, out):
    reference = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + 1.0
    worst = np.max(np.abs(out - reference) / scale) if out.size else 0.0
    assert worst <= TOL[out.dtype.name], (a.shape, b.shape, out.dtype, worst)


DIMS = [1, 2, 3, 4, 5, 7, 8, 9, 13, 23, 24, 47, 49, 97, 145, 151]
dims = st.sampled_from(DIMS)


@settings(max_examples=25, deadline=None)
@given(m=dims, n=dims, k=st.sampled_from([0, 1, 5, 31, 255, 257, 300]),
       dtype=st.sampled_from(["float32", "float64"]),
       transposed=st.sampled_from([(False, False), (True, False), (False, True), (True, True)]),
       seed=st.integers(0, 2**16))
def test_gemm_matches_numpy_on_drawn_shapes_and_layouts(m, n, k, dtype, transposed, seed):
    rng = np.random.default_rng(seed)
    ta, tb = transposed
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    a, b = (a.T if ta else a), (b.T if tb else b)
    out = np.full((m, n), np.nan, dtype)
    _serial(a, b, out)
    _check(a, b, out)
    via = np.full((m, n), np.nan, dtype)      # batched products' entry (BLAS for narrow n)
    _matmul_into(a, b, via)
    _check(a, b, via)


@settings(max_examples=25, deadline=None)
@given(m=st.sampled_from([1, 9, 33, 150, 301]), n=st.sampled_from([24, 25, 97, 200, 481]),
       k=st.sampled_from([1, 64, 300]), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_threaded_gemm_splits_rows_or_columns_and_matches_numpy(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    _gemm_parallel(a, b, out)          # m < n splits columns, m >= n rows (when large)
    _check(a, b, out)
    _gemm_parallel(a.T.copy().T, b, out)
    _check(a, b, out)


@njit
def _grams(a, blocks):
    out = np.full((a.shape[0], a.shape[0]), np.nan, a.dtype)
    out_t = np.full((a.shape[1], a.shape[1]), np.nan, a.dtype)
    gram_product(a, out, blocks)
    gram_product_t(a, out_t, blocks)
    return out, out_t


@settings(max_examples=20, deadline=None)
@given(m=st.sampled_from([1, 7, 8, 9, 55, 150, 301]), k=st.sampled_from([0, 1, 64, 300]),
       blocks=st.sampled_from([1, 2, 3]), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_gram_products_multiply_one_triangle_mirrored_and_match_numpy(m, k, blocks, dtype,
                                                                      seed):
    """The symmetric mode skips the tiles above the diagonal and mirrors the lower triangle:
    every element is written (the outputs start as NaN) and the result is exactly symmetric,
    on sizes across tile edges and thread counts (row blocks of equal triangle area)."""
    a = np.random.default_rng(seed).standard_normal((m, k)).astype(dtype)
    out, out_t = _grams(a, blocks)
    _check(a, a.T, out)
    _check(a.T, a, out_t)
    np.testing.assert_array_equal(out, out.T)
    np.testing.assert_array_equal(out_t, out_t.T)


def test_triangle_bounds_cut_equal_areas_on_tile_rows():
    bounds = [triangle_bound(1000, blk, 4) for blk in range(5)]
    assert bounds[0] == 0 and bounds[-1] == 1000 and bounds == sorted(bounds)
    assert all(b % 8 == 0 for b in bounds[:-1])
    areas = np.diff(np.square(bounds)) / 2
    assert np.all(np.abs(areas - 1000 ** 2 / 8) < 0.05 * 1000 ** 2 / 8)   # 8-row steps


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blocking_edges_are_covered_by_the_drawn_sizes(dtype):
    """The drawn sizes cross this CPU's tile edges (the tile depends on the CPU:
    gemm_tiles.py): rows beyond MC that leave a partial row panel, columns that leave a
    partial column panel, both sides of the BLAS threshold, a reduction beyond KC."""
    mr, nr = tile_shape(dtype)
    narrow = narrow_columns(dtype)
    assert any(d > MC and d % mr for d in DIMS)
    assert any(d > nr and d % nr for d in DIMS)
    assert narrow - 1 in DIMS and narrow in DIMS and narrow + 1 in DIMS
    assert 300 > KC


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("full_panels, vectors", [(0, 1), (0, 2), (1, 1), (1, 2)])
@pytest.mark.parametrize("m", [8, 150])
def test_last_column_panel_of_whole_vectors_is_computed_narrow_and_in_bounds(
        dtype, full_panels, vectors, m):
    """A last panel of 1 or 2 whole vectors goes straight into C with a narrower kernel; the
    columns right of C (a NaN guard in the same rows) must stay untouched, and a k over KC
    makes the second slice accumulate.  m = 8 reads b in place, m = 150 packs it."""
    mr, nr = tile_shape(dtype)
    n = full_panels * nr + vectors * lanes(dtype)
    rng = np.random.default_rng(n + m)
    a = rng.standard_normal((m, KC + 44)).astype(dtype)
    b = rng.standard_normal((KC + 44, n)).astype(dtype)
    frame = np.full((m, n + 7), np.nan, dtype)
    _serial(a, b, frame[:, :n])
    _check(a, b, frame[:, :n])
    assert np.isnan(frame[:, n:]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_strided_output_and_sliced_operands(dtype):
    rng = np.random.default_rng(1)
    big_a = rng.standard_normal((90, 400)).astype(dtype)
    a = big_a[5:85:2, 3:303]                       # rows strided, not contiguous
    b = rng.standard_normal((300, 70)).astype(dtype)[:, ::2]
    frame = np.zeros((40, 60), dtype)
    window = frame[:, 12:47]                       # contiguous rows, row stride 60
    _serial(a, b, window)
    _check(a, b, window)
    assert not frame[:, :12].any() and not frame[:, 47:].any()
    columns = np.zeros((35, 40), dtype).T          # column-strided output: via a copy
    _serial(a, b, columns)
    _check(a, b, columns)


def test_special_values_propagate_as_in_numpy():
    a = np.ones((30, 40), np.float32)
    b = np.ones((40, 50), np.float32)
    a[3, 7] = np.nan
    b[5, 9] = np.inf
    out = np.empty((30, 50), np.float32)
    _serial(a, b, out)
    expected = a @ b
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(out[~np.isnan(expected)], expected[~np.isnan(expected)])


def test_micro_kernel_is_vector_fma_code():
    asm = "\n".join(GEMMS["float32"].inspect_asm().values())
    assert "vfmadd231ps" in asm
    assert "zmm" in asm or "ymm" in asm
    assert "flowjit_gemm_ukernel_float32" in "\n".join(GEMMS["float32"].inspect_llvm().values())


def test_jit_products_use_the_own_gemm_and_match_numpy():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 130)).astype(np.float32)
    bias = rng.standard_normal(130).astype(np.float32)
    f = tf.jit(lambda a, b, bias: tf.nn.relu(tf.matmul(a, b) + bias))
    expected = np.maximum(a.astype(np.float64) @ b + bias, 0)
    np.testing.assert_allclose(f(a, b, bias), expected, rtol=1e-4, atol=1e-4)
    assert "gemm_epilogue(" in f.lower(a, b, bias).source   # bias and relu in the GEMM


def test_gemm_mode_reads_the_environment(monkeypatch):
    monkeypatch.delenv("FLOWJIT_GEMM", raising=False)
    assert gemm_mode() == "own"
    monkeypatch.setenv("FLOWJIT_GEMM", "BLAS")
    assert gemm_mode() == "blas"
    monkeypatch.setenv("FLOWJIT_GEMM", "mkl")
    with pytest.raises(ValueError, match="FLOWJIT_GEMM"):
        gemm_mode()
    assert gemm_module.GEMMS.keys() == {"float32", "float64"}


_weight_gradient = tf.jit(lambda x, dz: tf.matmul(x, dz, transpose_a=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k, m, n", [(4099, 300, 8), (37, 24, 1), (5, 200, 23), (64, 7, 3)])
def test_weight_gradient_with_few_columns_runs_flipped_and_matches_numpy(dtype, k, m, n):
    rng = np.random.default_rng(k + m + n)
    x = rng.standard_normal((k, m)).astype(dtype)
    dz = rng.standard_normal((k, n)).astype(dtype)
    got = _weight_gradient(x, dz)
    assert got.shape == (m, n) and got.dtype == dtype
    _check(x.T, dz, got)
    source = _weight_gradient.lower(x, dz).source
    if n == 1:   # a matrix-vector product: a sum over k of the compiler's own, no GEMM
        assert "gemm_parallel(" not in source and "np.dot(" not in source
        assert "radd(" in source
    else:
        assert "gemm_parallel(in1.T, in0, buf2.T" in source   # (dz.T @ x).T, x read in place


SHARED_WORKER = """
import json, sys
import numpy as np
import flowjit as tf
from flowjit.targets.cpu import cache
rng = np.random.default_rng(0)
a, b = rng.standard_normal((70, 50)), rng.standard_normal((50, 90))
got = tf.jit(lambda a, b: tf.tanh(tf.matmul(a, b)))(a, b)
tf.wait_for_cache_writes()
print("RESULT " + json.dumps({"ok": bool(np.allclose(got, np.tanh(a @ b), atol=1e-12)),
                              "stats": dict(cache.STATS), "numba": "numba" in sys.modules}))
"""


def _run_shared_worker(root):
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(root), FLOWJIT_GEMM="own")
    proc = subprocess.run([sys.executable, "-c", SHARED_WORKER], env=env, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):]), proc.stderr


def test_shared_gemm_is_cached_loaded_without_numba_and_rebuilt_when_corrupt(tmp_path):
    """Kernels call the GEMM by symbol (gemm_entry.py); its object code is a cache entry of
    its own, loaded in a fresh process without numba, and rebuilt when damaged."""
    cold, _ = _run_shared_worker(tmp_path)
    assert cold["ok"] and cold["stats"]["stores"] == 2   # the kernel and the GEMM
    warm, _ = _run_shared_worker(tmp_path)
    assert warm["ok"] and not warm["numba"] and warm["stats"]["hits"] == 2
    [gemm_entry] = [os.path.dirname(p) for p in glob.glob(str(tmp_path / "*" / "*" / "gemm.o"))]
    path = os.path.join(gemm_entry, "gemm.o")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x01
    open(path, "wb").write(bytes(data))
    rebuilt, log = _run_shared_worker(tmp_path)
    assert rebuilt["ok"] and rebuilt["stats"]["rejected"] == 1
    assert rebuilt["stats"]["stores"] == 1 and "discarding invalid entry" in log
    again, _ = _run_shared_worker(tmp_path)
    assert again["ok"] and not again["numba"] and again["stats"]["rejected"] == 0


def test_kernels_hold_no_gemm_code_of_their_own():
    """The GEMM is linked by symbol, not compiled into every kernel that multiplies."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    b = rng.standard_normal((30, 50)).astype(np.float32)
    f = tf.jit(lambda a, b: tf.matmul(a, b) * 2.0)
    np.testing.assert_allclose(f(a, b), (a @ b) * 2, rtol=1e-5, atol=1e-5)
    kernel = f.lower(a, b).source
    assert "gemm_parallel(" in kernel
    ir_text = "\n".join(_kernel_llvm(f, a, b))
    assert "declare i64 @flowjit_gemm_float32(" in ir_text
    assert "flowjit_gemm_ukernel_float32" not in ir_text


def _kernel_llvm(f, *args):
    """The LLVM IR of the kernel `f` compiles for `args`, built anew with numba."""
    from numba import typeof

    from flowjit.targets.cpu.build import build_kernel

    kernel = build_kernel(f.lower(*args).source)
    kernel.compile(tuple(typeof(x) for x in args))
    return kernel.inspect_llvm().values()


@njit
def _transposed(src, src_off, lds, dst):
    transpose_block(src, src_off, lds, dst, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transpose_block_packs_eight_rows_k_major(dtype):
    """One vector of k values from each of 8 rows lds apart becomes the k-major panel
    order, written at the destination offset and nowhere else."""
    width = lanes(dtype)
    rows = np.arange(11 * 40, dtype=dtype).reshape(11, 40)
    dst = np.full(8 * width + 6, -1, dtype)
    _transposed(rows, 2 * 40 + 5, 40, dst)
    np.testing.assert_array_equal(dst[3:3 + 8 * width],
                                  rows[2:10, 5:5 + width].T.reshape(-1))
    assert (dst[:3] == -1).all() and (dst[3 + 8 * width:] == -1).all()
