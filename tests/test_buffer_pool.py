"""Kernel buffers (targets/cpu/large_buffers.py) and the buffer pool (buffer_pool.py).

`empty_buffer` must behave as np.empty for every shape and dtype, large buffers must be
recycled through the pool once freed and never while any reference is alive, the pool's cap
must hold, concurrent callers must each get their own buffers, and large buffers must be
backed by transparent huge pages where Linux offers them. (The fresh-process path, cached
object code calling the pool without numba, is tested in test_kernel_cache.py.) With a numba
outside the versions the pool and native.py were written for, both are off: kernels allocate
plainly and are called through numba's dispatcher, after one log line.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from numba import njit

import flowjit as tf
from flowjit.targets.cpu import buffer_pool
from flowjit.targets.cpu.large_buffers import empty_buffer

BIG = buffer_pool.POOL_MIN_BYTES // 4 + 1001   # float32 elements just above the pool's minimum


@njit(error_model="numpy")
def _filled(shape, value, dtype):
    buf = empty_buffer(shape, dtype)
    flat = buf.reshape(buf.size)
    for i in range(flat.shape[0]):
        flat[i] = value
    return buf


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.bool_,
                                   np.complex64])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 0, 2), (5, 3), (2, 3, 5),
                                   (BIG,), (2, BIG // 2 + 3)])
def test_empty_buffer_is_a_fresh_c_contiguous_array(shape, dtype):
    value = dtype(1)
    out = _filled(shape, value, dtype)
    assert out.shape == shape and out.dtype == dtype
    assert out.flags.c_contiguous and out.flags.writeable and out.flags.aligned
    assert out.ctypes.data % 64 == 0 or out.size == 0
    np.testing.assert_array_equal(out, np.full(shape, value, dtype))


@njit(error_model="numpy")
def _empty(n, m):
    return empty_buffer((n, m), np.float64)


def test_negative_or_overflowing_sizes_raise():
    with pytest.raises(ValueError, match="negative dimensions"):
        _empty(-1, 3)
    with pytest.raises(ValueError, match="too big"):
        _empty(2**40, 2**40)


def _double(x):
    return x * 2.0


@pytest.fixture
def pool_limit():
    old = buffer_pool.stats()["limit_bytes"]
    buffer_pool.clear()   # blocks kept by earlier tests would be better fits than this test's
    yield buffer_pool.configure
    buffer_pool.configure(old)


def test_a_freed_large_output_is_reused_and_a_live_one_never(pool_limit):
    pool_limit(256 << 20)
    f = tf.jit(_double)
    x = np.arange(BIG, dtype=np.float32)
    first = f(x)
    address = first.ctypes.data
    del first
    before = buffer_pool.stats()
    second = f(x)
    after = buffer_pool.stats()
    assert second.ctypes.data == address and after["hits"] == before["hits"] + 1
    # While results are alive every call gets new memory and no result changes.
    kept = [f(x + k) for k in range(3)]
    assert len({a.ctypes.data for a in kept + [second]}) == 4
    for k, a in enumerate(kept):
        np.testing.assert_array_equal(a, (x + k) * 2.0)
    np.testing.assert_array_equal(second, x * 2.0)
    view = kept[0][10:20]   # a view keeps its base's block out of the pool
    del kept
    np.testing.assert_array_equal(view, (x[10:20]) * 2.0)
    again = [f(x - 1) for _ in range(3)]
    assert view.ctypes.data not in {a.ctypes.data + 40 for a in again}
    np.testing.assert_array_equal(view, (x[10:20]) * 2.0)


def test_the_cap_bounds_what_the_pool_keeps(pool_limit):
    f = tf.jit(_double)
    x = np.ones(BIG, np.float32)
    pool_limit(0)
    assert buffer_pool.stats()["cached_bytes"] == 0
    released = buffer_pool.stats()["released"]
    f(x)
    assert buffer_pool.stats()["cached_bytes"] == 0
    assert buffer_pool.stats()["released"] == released + 1
    pool_limit(x.nbytes + (1 << 20))   # room for one block, not two
    a, b = f(x), f(x)
    del a, b
    stats = buffer_pool.stats()
    assert 0 < stats["cached_bytes"] <= x.nbytes + (1 << 20)
    buffer_pool.clear()
    assert buffer_pool.stats()["cached_bytes"] == 0
    with pytest.raises(ValueError, match=">= 0"):
        buffer_pool.configure(-1)


def test_concurrent_callers_get_their_own_buffers(pool_limit):
    pool_limit(256 << 20)
    f = tf.jit(_double)
    base = np.arange(BIG, dtype=np.float32)
    f(base)
    errors = []

    def work(k):
        x = base + k
        for _ in range(20):
            out = f(x)
            if not np.array_equal(out, x * 2.0):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _anon_huge_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        return int(re.search(r"AnonHugePages:\s+(\d+)", f.read()).group(1))


def test_large_buffers_get_huge_pages_where_linux_offers_them(pool_limit):
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = re.search(r"\[(\w+)\]", f.read()).group(1)
        _anon_huge_kb()
    except (OSError, AttributeError):
        pytest.skip("no transparent huge pages on this system")
    if mode == "never":
        pytest.skip("transparent huge pages are disabled on this system")
    pool_limit(0)   # a fresh block, not one kept from an earlier test
    before = _anon_huge_kb()
    buf = _filled(((64 << 20) // 4,), np.float32(0), np.float32)
    assert _anon_huge_kb() - before >= 2048, "a 64 MB kernel buffer got no huge page"
    del buf


def test_the_pool_is_on_for_the_versions_it_was_written_for():
    assert buffer_pool.private_layouts() == {"native": True, "pool": True}
    assert buffer_pool.pool_enabled()


OTHER_NUMBA = textwrap.dedent("""
    import json, logging
    import numpy as np
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("flowjit").addHandler(handler)
    import flowjit
    from flowjit.targets.cpu import buffer_pool, native
    buffer_pool.NUMBA_VERSIONS = ((0, 1), (0, 2))   # as if numba were another version
    f = flowjit.jit(lambda x: x * 2.0)
    x = np.arange(BIG, dtype=np.float32)
    ok = all(np.array_equal(f(x + k), (x + k) * 2.0) for k in range(3))
    flowjit.wait_for_cache_writes()
    kernel = f.lower(x).entry.cluster.kernel
    lines = [r.getMessage() for r in records if "outside the versions" in r.getMessage()]
    print("RESULT " + json.dumps({
        "ok": ok, "lines": lines, "support": buffer_pool.private_layouts(),
        "stats": buffer_pool.stats(), "kernel": type(kernel).__name__}))
""")


def test_another_numba_turns_the_pool_and_the_native_loader_off(tmp_path):
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", OTHER_NUMBA.replace("BIG", str(BIG))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    assert result["ok"]
    assert result["support"] == {"native": False, "pool": False}
    assert len(result["lines"]) == 1 and "numba 0.1-0.1" in result["lines"][0]
    assert result["stats"]["hits"] == result["stats"]["misses"] == 0
    assert result["kernel"] == "PlainKernel"   # numba's dispatcher serves the calls
