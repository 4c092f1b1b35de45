"""The on-disk kernel cache (targets/cpu/cache.py, native.py, build.py): real processes.

A fresh process finds a kernel compiled by another one and runs it without compiling or
importing numba; corrupt and stale entries are detected and never executed; two processes
filling one entry at once are safe; `flowjit.clear_cache()` empties the cache.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowjit
from flowjit.compiler.core import ir
from flowjit.targets.cpu import cache

WORKER = textwrap.dedent("""
    import json, logging, sys, time
    import numpy as np
    import flowjit as tf
    from flowjit.targets.cpu import cache

    logging.basicConfig()   # the cache's INFO lines ("loaded kernel ...") go to stderr
    logging.getLogger("flowjit.cache").setLevel(logging.INFO)
    f = tf.jit(lambda x, y: (x * 2.0 + y, x > y))
    x = np.arange(70001, dtype=np.float64)   # above the parallel threshold: prange runs
    y = np.full(70001, 3.0)
    start = time.perf_counter()
    a, b = f(x, y)
    seconds = time.perf_counter() - start
    ok = bool(np.array_equal(a, x * 2.0 + y) and np.array_equal(b, x > y)
              and a.dtype == np.float64 and b.dtype == np.bool_)
    a2, _ = f(x[:5].copy(), y[:5].copy())   # another size: same kernel
    ok = ok and bool(np.array_equal(a2, x[:5] * 2.0 + 3.0))
    big = np.ones(600_000)   # 4.8 MB outputs: from the buffer pool, reused by the 2nd call
    for _ in range(2):
        a3, _ = f(big, big)
        ok = ok and bool(np.all(a3 == 3.0))
        del a3, _
    from flowjit.targets.cpu import buffer_pool
    tf.wait_for_cache_writes()   # the entry is written on a writer thread
    result = {"ok": ok, "seconds": seconds, "stats": dict(cache.STATS),
              "pool": buffer_pool.stats(),
              "numba_imported": "numba" in sys.modules}
    if "--error" in sys.argv:
        try:
            f(x, y[:7].copy())
            result["error"] = None
        except tf.errors.InvalidArgumentError as e:
            result["error"] = str(e)
    print("RESULT " + json.dumps(result))
""")


def run_worker(cache_root, *flags, background=False):
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(cache_root))
    cmd = [sys.executable, "-c", WORKER, *flags]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return proc if background else finish(proc)


def finish(proc) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    result["log"] = err
    return result


def entries(root) -> list:
    return sorted(os.path.join(root, s, k) for s in os.listdir(root)
                  if os.path.isdir(os.path.join(root, s))
                  for k in os.listdir(os.path.join(root, s)))


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache directory filled by one cold process."""
    root = tmp_path_factory.mktemp("kcache") / "filled"
    cold = run_worker(root)
    assert cold["ok"] and cold["stats"]["stores"] == 1 and cold["stats"]["hits"] == 0
    print(f"\ncold process: first call {cold['seconds']:.3f} s (compile included)")
    return root, cold


def test_second_process_hits_without_numba(filled):
    root, cold = filled
    warm = run_worker(root, "--error")
    print(f"\nwarm process: first call {warm['seconds']:.3f} s "
          f"(cold was {cold['seconds']:.3f} s)")
    assert warm["ok"]
    assert warm["stats"] == {"hits": 1, "misses": 0, "stores": 0, "rejected": 0}
    assert warm["pool"]["hits"] >= 1 and not warm["numba_imported"]  # cached code uses the pool
    assert "flowjit cache: loaded kernel" in warm["log"]
    # The error path reruns with numba to raise the kernel's own message.
    assert "Incompatible shapes" in warm["error"]
    assert len(entries(root)) == 1


def _copy(root, dst):
    shutil.copytree(root, dst)
    [entry] = entries(dst)
    with open(os.path.join(entry, cache.MANIFEST)) as f:
        manifest = json.load(f)
    return entry, manifest


def _damage(path, how):
    data = open(path, "rb").read()
    if how == "truncate":
        data = data[:len(data) // 2]
    else:
        k = len(data) // 2
        data = data[:k] + bytes([data[k] ^ 0x01]) + data[k + 1:]
    open(path, "wb").write(data)


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_every_damaged_file_is_detected(filled, tmp_path, monkeypatch, how):
    root, _ = filled
    names = ("kernel.o", "kernel.json", "source.py", cache.MANIFEST)
    for name in names:
        dst = tmp_path / f"{how}-{name}"
        entry, manifest = _copy(root, dst)
        monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(dst))
        key, material = manifest["key"], manifest["material"]
        assert cache.read_entry(key, material, names[:3]) is not None  # intact: a hit
        _damage(os.path.join(entry, name), how)
        before = cache.STATS["rejected"]
        assert cache.read_entry(key, material, names[:3]) is None, name
        assert cache.STATS["rejected"] == before + 1
        assert not os.path.exists(entry), "a corrupt entry is removed"


def test_corrupt_object_code_is_rebuilt(filled, tmp_path):
    root, _ = filled
    entry, _ = _copy(root, tmp_path / "c")
    _damage(os.path.join(entry, "kernel.o"), "flip")
    rebuilt = run_worker(tmp_path / "c")
    assert rebuilt["ok"], rebuilt
    assert rebuilt["stats"]["rejected"] == 1 and rebuilt["stats"]["stores"] == 1
    assert "discarding invalid entry" in rebuilt["log"]
    again = run_worker(tmp_path / "c")
    assert again["ok"] and again["stats"]["hits"] == 1 and again["stats"]["rejected"] == 0


def test_stale_key_material_is_not_used(filled, tmp_path, monkeypatch):
    root, _ = filled
    entry, manifest = _copy(root, tmp_path / "s")
    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(tmp_path / "s"))
    names = ("kernel.o", "kernel.json", "source.py")
    stale = dict(manifest["material"], numba="0.0.0-other")
    # Another version gives another key: the entry is simply not found ...
    assert cache.key_of(stale) != manifest["key"]
    assert cache.read_entry(cache.key_of(stale), stale, names) is None
    assert os.path.exists(entry)
    # ... and an entry whose recorded material differs from the key's is rejected.
    before = cache.STATS["rejected"]
    assert cache.read_entry(manifest["key"], stale, names) is None
    assert cache.STATS["rejected"] == before + 1 and not os.path.exists(entry)


def test_two_processes_fill_the_same_entry(tmp_path, monkeypatch):
    root = tmp_path / "race"
    procs = [run_worker(root, background=True) for _ in range(2)]
    results = [finish(p) for p in procs]
    assert all(r["ok"] for r in results)
    [entry] = entries(root)
    assert not [n for n in os.listdir(os.path.dirname(entry)) if n.startswith(".tmp")]
    with open(os.path.join(entry, cache.MANIFEST)) as f:
        manifest = json.load(f)
    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(root))
    files = cache.read_entry(manifest["key"], manifest["material"],
                             ("kernel.o", "kernel.json", "source.py"))
    assert files is not None, "the entry left by the race is valid"


def test_clear_cache_and_cache_dir(filled, tmp_path, monkeypatch):
    root, _ = filled
    _copy(root, tmp_path / "k")
    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(tmp_path / "k"))
    assert flowjit.cache_dir() == str(tmp_path / "k")
    assert flowjit.clear_cache() == 1
    assert entries(tmp_path / "k") == []
    assert flowjit.clear_cache() == 0
    monkeypatch.setenv("FLOWJIT_CACHE_DIR", "off")
    assert flowjit.cache_dir() is None and flowjit.clear_cache() == 0
    monkeypatch.delenv("FLOWJIT_CACHE_DIR")
    assert flowjit.cache_dir().endswith(os.path.join("flowjit", "kernels"))


def _program(scale: float):
    x = ir.input_node(0, flowjit.float32, (None,))
    axes = ir.axis_vars(1)
    body = ir.make(ir.Scalar.MUL, flowjit.float32,
                   (ir.load(x, axes), ir.const(scale, flowjit.float32)))
    return ir.Program([x], [ir.compute(flowjit.float32, x.shape, axes, body)])


def test_ir_fingerprint_is_canonical():
    first = cache.ir_fingerprint(_program(2.0))
    gc.collect()
    ir.compute(flowjit.float64, (ir.index(3),), ir.axis_vars(1), ir.const(1.0, "float64"))
    program = _program(2.0)   # fresh node names, same structure
    assert cache.ir_fingerprint(program) == first
    assert cache.ir_fingerprint(_program(np.nextafter(2.0, 3.0))) != first
    material = cache.key_material(program, {"a": 1})
    assert cache.key_of(material) == cache.key_of(cache.key_material(_program(2.0), {"a": 1}))
    assert cache.key_of(material) != cache.key_of(cache.key_material(program, {"a": 2}))


STDOUT_WORKER = textwrap.dedent("""
    import io, sys, time
    import numpy as np
    import flowjit as tf

    from flowjit.targets.cpu import build

    f = tf.jit(lambda x: tf.exp(x) * 2)
    f(np.ones(5, np.float32))          # a miss: the entry compiles on a writer thread
    writers = list(build._writers)
    mine, real = io.StringIO(), sys.stdout
    sys.stdout = mine
    swapped = 0
    # watch sys.stdout for exactly as long as the writer runs (not a window of time)
    while any(w.is_alive() for w in writers):
        if sys.stdout is not mine:
            swapped += 1
            sys.stdout = mine
        time.sleep(0.001)
    tf.wait_for_cache_writes()
    swapped += sys.stdout is not mine
    sys.stdout = real
    print("WRITERS", len(writers))
    print("SWAPPED", swapped)
""")


def test_background_cache_writes_leave_sys_stdout_alone(tmp_path):
    """numba's message highlighting (colorama) replaces sys.stdout globally; compiled on
    the writer thread, it used to undo a redirection made meanwhile by the main thread."""
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", None)
    out = subprocess.run([sys.executable, "-c", STDOUT_WORKER], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "WRITERS 1" in out.stdout and "SWAPPED 0" in out.stdout, out.stdout


def test_a_kernel_compiled_here_runs_its_entry_point(tmp_path, monkeypatch):
    """A kernel compiled in this process is called through its entry point from the first
    call on (as a process loading it from the cache would), with the same results."""
    from flowjit.targets.cpu import native

    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(tmp_path))
    f = flowjit.jit(lambda x, y: np.tanh(x * 1.25) - y / 3.0)
    x = np.linspace(-2.0, 2.0, 37)
    y = np.arange(37.0)
    first = f(x, y)
    assert type(f.lower(x, y).entry.cluster.kernel) is native.NativeKernel
    np.testing.assert_array_equal(f(x, y), first)
    np.testing.assert_allclose(first, np.tanh(x * 1.25) - y / 3.0, rtol=1e-12)
    kernel = f.lower(x, y).entry.cluster.kernel
    with pytest.raises(TypeError):      # the entry point checks its argument count
        kernel.call_trusted([x])


def test_entry_points_release_the_gil_while_the_kernel_runs(tmp_path, monkeypatch):
    """A cached kernel is called as a Python builtin (native.py); it drops the GIL for the
    kernel itself, so another Python thread runs meanwhile (Session's inter-op threads rely
    on it).  The kernel is serial (below the parallel threshold: numba's parallel regions
    drop the GIL on their own) and the switch interval long, so the other thread can only
    run while a call has let go of the GIL."""
    import threading

    from flowjit.targets.cpu import native
    from flowjit.targets.cpu.codegen import PARALLEL_MIN_WORK

    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(tmp_path))
    f = flowjit.jit(lambda x: np.sqrt(np.abs(np.sin(x * x) * 3.0 + np.exp(-x))))
    x = np.linspace(-5.0, 5.0, PARALLEL_MIN_WORK - 1)
    expected = np.sqrt(np.abs(np.sin(x * x) * 3.0 + np.exp(-x)))
    f(x)
    flowjit.wait_for_cache_writes()
    kernel = f.lower(x).entry.cluster.kernel
    assert type(kernel) is native.NativeKernel and "prange" in kernel.source
    counter, stop, ready = [0], threading.Event(), threading.Event()

    def spin():
        ready.set()
        while not stop.is_set():
            counter[0] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.05)   # more than 100 calls of the kernel take
    worker = threading.Thread(target=spin)
    ran = 0
    try:
        worker.start()
        ready.wait()
        for _ in range(100):
            before = counter[0]
            (result,) = kernel.call_trusted([x])
            ran = counter[0] - before
            if ran:
                break
    finally:
        stop.set()
        worker.join()
        sys.setswitchinterval(old)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    assert ran > 0, "the other thread never ran while the kernel did"


UNREAD_INPUT_WORKER = textwrap.dedent("""
    import json
    import numpy as np
    import flowjit as tf
    from flowjit.targets.cpu import cache

    x = tf.placeholder(tf.float32, None)
    n = tf.size(x) + 1                     # a size-1 x folds away: the kernel never reads x
    y = tf.range(1, 10, 3) * 2 + 1         # a cluster without inputs
    cfg = tf.ConfigProto(jit=tf.JitOptions(policy="always"))
    got = []
    with tf.Session(config=cfg) as s:
        for value in (np.ones([1], np.float32), np.float32(5.0)):
            for _ in range(3):
                got.append(int(s.run(n, {x: value})))
        for _ in range(3):
            got.append(s.run(y).tolist())
    tf.wait_for_cache_writes()
    print("RESULT " + json.dumps({"got": got, "stats": dict(cache.STATS)}))
""")


def test_unread_inputs_of_other_ranks_and_input_free_kernels(tmp_path):
    """The key records every input's dtype and rank: a kernel that never reads its input,
    compiled for a rank-1 feed, once served a rank-0 feed from the disk cache, whose entry
    point then read the dimensions of a 0-d array (a segfault).  A kernel without inputs
    is cached too (its entry point's source was invalid)."""
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(tmp_path))
    results = []
    for _ in range(2):                     # cold, then every kernel from the disk cache
        proc = subprocess.run([sys.executable, "-c", UNREAD_INPUT_WORKER], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "not cached" not in proc.stderr, proc.stderr[-2000:]
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
        results.append(json.loads(line[len("RESULT "):]))
    for result in results:
        assert result["got"] == [2] * 6 + [[3, 9, 15]] * 3
    assert results[0]["stats"]["stores"] >= 3 and results[1]["stats"]["stores"] == 0
    assert results[1]["stats"]["hits"] >= 3


def test_fingerprint_names_every_input_rank():
    def program(unread_shape):
        unread = ir.input_node(0, flowjit.float32, unread_shape)
        x = ir.input_node(1, flowjit.float32, (None,))
        axes = ir.axis_vars(1)
        out = ir.compute(flowjit.float32, x.shape, axes, ir.load(x, axes))
        return ir.Program([unread, x], [out])

    ranks = {cache.ir_fingerprint(program(shape)) for shape in [(), (1,), (None,), (1, 1)]}
    assert len(ranks) == 3      # (1,) and (None,) are both rank 1
