"""Unmodified NumPy code under `flowjit.jit`: every kernel of `numpy_corpus.CORPUS` against
plain NumPy on identical copies of tiny, odd-sized arguments.

Owns the checks that a jitted corpus kernel returns what NumPy returns (same structure, dtype,
shape and values within the kernel's tolerance, NaN in the same places), leaves every argument
it mutates exactly as NumPy leaves it (within tolerance) and every other argument untouched,
on a first call and on a second call with new values of the same shapes (the cached path).
Also checks, without flowjit, that the corpus records describe their kernels (the declared
`mutates` are the arguments NumPy changes, argument shapes do not depend on the values).
The benchmark harness (`benchmarks/numpy_corpus.py`) is run once on the tiny sizes, without
asserting timings: its checks catch wrong outputs, and a failing variant is reported per
kernel, not raised.
"""

import io

import numpy as np
import pytest
from numpy_corpus import BY_NAME, CORPUS, copy_args

import flowjit
from flowjit.benchmarks import numpy_corpus as bench

# Per kernel, compiling included.  Only a guard against a hang (a hang fails the test, not the
# session): never a timing check, so it is far above any compile seen (CI once took >15 s for
# one kernel on a loaded 2-core machine).
JIT_SECONDS = 240
NAMES = [k.name for k in CORPUS]
KERNELS = dict(zip(NAMES, CORPUS))


def _shapes(args):
    return [(np.shape(a), np.asarray(a).dtype) for a in args]


def assert_same(got, ref, kernel, where="result"):
    """`got` matches NumPy's `ref`: structure, shape, dtype, values (kernel's tolerance), NaNs."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{where}: {type(got).__name__}, not a tuple"
        assert len(got) == len(ref), f"{where}: {len(got)} values, NumPy returns {len(ref)}"
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same(g, r, kernel, f"{where}[{i}]")
        return
    if ref is None:
        assert got is None, f"{where}: {type(got).__name__}, NumPy returns None"
        return
    g, r = np.asarray(got), np.asarray(ref)
    assert g.shape == r.shape, f"{where}: shape {g.shape}, NumPy {r.shape}"
    assert g.dtype == r.dtype, f"{where}: dtype {g.dtype}, NumPy {r.dtype}"
    if r.dtype.kind in "fc":
        assert np.array_equal(np.isnan(g), np.isnan(r)), f"{where}: NaNs in other places"
    rtol, atol = kernel.tolerance(r.dtype)
    np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)


def _check_call(jitted, kernel, seed):
    args = kernel.make_args(np.random.default_rng(seed), "small")
    pristine, ref_args, jit_args = copy_args(args), copy_args(args), copy_args(args)
    ref = kernel.fn(*ref_args)
    got = jitted(*jit_args)
    assert_same(got, ref, kernel)
    for i, (before, after_ref, after_jit) in enumerate(zip(pristine, ref_args, jit_args)):
        if not isinstance(before, np.ndarray):
            continue
        if i in kernel.mutates:
            assert_same(after_jit, after_ref, kernel, f"argument {i} after the call")
        else:
            assert np.array_equal(after_jit, before, equal_nan=True), \
                f"argument {i} changed, but NumPy leaves it alone"


@pytest.mark.parametrize("name", NAMES)
def test_jit_matches_numpy(name):
    """flowjit.jit of the unchanged kernel: results and mutated arguments equal NumPy's, on
    a first call and on a cached second call with new values."""
    kernel = KERNELS[name]
    jitted = flowjit.jit(kernel.fn, static_argnames=kernel.static_argnames)
    with bench.time_limit(JIT_SECONDS):
        _check_call(jitted, kernel, seed=0)
        _check_call(jitted, kernel, seed=1)


@pytest.mark.parametrize("name", NAMES)
def test_corpus_record_describes_its_kernel(name):
    """Plain NumPy: the kernel changes exactly the arguments its record lists in `mutates`,
    and argument shapes/dtypes do not depend on the random values (one compiled signature)."""
    kernel = KERNELS[name]
    args = kernel.make_args(np.random.default_rng(0), "small")
    other = kernel.make_args(np.random.default_rng(1), "small")
    assert _shapes(args) == _shapes(other)
    assert [type(a) for a in args] == [type(a) for a in other]
    for param in kernel.static_argnames:
        assert param in kernel.fn.__code__.co_varnames[:kernel.fn.__code__.co_argcount]
    work = copy_args(args)
    kernel.fn(*work)
    changed = {i for i, (a, b) in enumerate(zip(args, work))
               if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True)}
    assert changed == set(kernel.mutates)


def test_corpus_names_are_unique_and_cover_both_dtypes():
    """One record per name; float32 and float64 kernels both present."""
    assert len(set(NAMES)) == len(NAMES)
    dtypes = {np.asarray(a).dtype for k in CORPUS
              for a in k.make_args(np.random.default_rng(0), "small")}
    assert {np.dtype(np.float32), np.dtype(np.float64)} <= dtypes


def test_benchmark_compare_flags_wrong_outputs():
    """The benchmark's check: values beyond tolerance, NaN elsewhere, other shapes or
    structure are wrong; another dtype is only a note."""
    k = BY_NAME["softmax"]
    ref = np.array([[1.0, np.nan], [3.0, 4.0]], dtype=np.float32)
    assert bench.compare(ref.copy(), ref, k)[0] == ""
    message, worst, notes = bench.compare(ref.astype(np.float64), ref, k)
    assert message == "" and notes and worst == 0.0
    assert "tolerance" in bench.compare(ref + 1e-2, ref, k)[0]
    assert "NaN" in bench.compare(np.nan_to_num(ref), ref, k)[0]
    assert "shape" in bench.compare(ref[:1], ref, k)[0]
    assert bench.compare((ref,), (ref, ref), k)[0]
    assert bench.compare(None, None, k)[0] == ""


def test_benchmark_harness_runs_every_kernel():
    """NumPy only, tiny sizes, one repetition: every kernel is checked, timed and reported
    (fresh-copy kernels through their own batches), and the summary is printed."""
    out = io.StringIO()
    result = bench.run(None, ("numpy",), repeats=1, target_seconds=0.001, threads=1, out=out,
                       size="small")
    rows = result["rows"]
    assert [r["kernel"] for r in rows] == NAMES
    for row in rows:
        assert row["status"] == "ok" and row["speedup"] == 1.0
        assert row["min_s"] <= row["median_s"] <= row["max_s"]
        assert row["error_vs_tolerance"] == 0.0
    text = out.getvalue()
    assert "Summary: speedup" in text and "fresh copies per call" in text
    assert all(name in text for name in NAMES)


def test_benchmark_reports_flowjit_per_kernel():
    """flowjit rows of two kernels it compiles: timed, never FAILED or WRONG."""
    out = io.StringIO()
    names = ["grad_laplacian", "softmax"]
    result = bench.run(names, ("numpy", "flowjit"), repeats=1, target_seconds=0.001,
                       threads=1, out=out, size="small", check_timeout=JIT_SECONDS)
    rows = result["rows"]
    assert [(r["kernel"], r["variant"]) for r in rows] == \
        [(n, v) for n in names for v in ("numpy", "flowjit.jit")]
    for row in rows[1::2]:
        assert row["status"] == "ok", row   # a WRONG (or FAILED) row fails the test
        assert row["median_s"] is not None
    assert "flowjit.jit" in out.getvalue()


def test_pythran_exports_follow_the_arguments():
    """The pythran module of a kernel: its unchanged source after an export line typed from
    the arguments (dtype and rank of arrays, Python scalars), and a name that changes with
    the source; nothing is built (pythran need not be installed)."""
    from flowjit.benchmarks import pythran_build

    k = BY_NAME["edit_distance"]
    args = k.make_args(np.random.default_rng(0), "bench")
    source = pythran_build.module_source(k.fn, args)
    assert source.startswith("#pythran export edit_distance(int64[:], int64[:])\n")
    assert "import numpy as np" in source and "def edit_distance(s, t):" in source
    k = BY_NAME["gauss_seidel"]
    source = pythran_build.module_source(k.fn, k.make_args(np.random.default_rng(0), "small"))
    assert source.startswith("#pythran export gauss_seidel(float64[:,:], float64[:,:], float, "
                             "int)\n")
    assert pythran_build.export_type(np.zeros(3, dtype=np.float32)) == "float32[:]"
    assert pythran_build.export_type(np.zeros((2, 2), dtype=bool)) == "bool[:,:]"
    assert pythran_build.export_type(True) == "bool"
    assert pythran_build.export_type(1j) == "complex"
    other = pythran_build.module_source(BY_NAME["cholesky"].fn, (np.zeros((3, 3)),))
    assert pythran_build.module_name(k.fn, source) != pythran_build.module_name(k.fn, other)
    reason = pythran_build.rejection_reason(
        "WARNING: ignored\nCRITICAL: I am in trouble.\n/tmp/x/k.py:3:4 error: Unsupported "
        "attribute 'pad' for module 'numpy'\n----\n", "/tmp/x/k.py")
    assert reason == "<kernel>:3:4 error: Unsupported attribute 'pad' for module 'numpy'"


def test_benchmark_pythran_unsupported_when_not_installed(monkeypatch):
    """Without pythran the benchmark still runs: its rows are unsupported, with the reason."""
    from flowjit.benchmarks import pythran_build

    monkeypatch.setattr(pythran_build, "available", lambda: False)
    out = io.StringIO()
    result = bench.run(["linear_recurrence"], ("numpy", "pythran"), repeats=1,
                       target_seconds=0.001, threads=1, out=out, size="small")
    rows = result["rows"]
    assert [(r["variant"], r["status"]) for r in rows] == \
        [("numpy", "ok"), ("pythran", "unsupported")]
    assert "not installed" in rows[1]["reason"]
