"""openblas_spin: the spin bound written into NumPy's OpenBLAS, found through its ELF symbols.

Only with process tuning opted in (FLOWJIT_TUNE_PROCESS=1 here); by default the word is
left as OpenBLAS stored it (also checked in test_process_manners.py).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest

from flowjit.targets.cpu import openblas_spin

_READ_WORDS = """
import ctypes
from flowjit.targets.cpu import openblas_spin as s
def words():
    out = {}
    for path, base in s.loaded_openblas().items():
        found = s.timeout_symbol(path)
        if found is not None:
            out[path] = ctypes.c_uint32.from_address(base - found[1] + found[0]).value
    return out
"""


def _run(code: str, **env_changes) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_THREAD_TIMEOUT", "FLOWJIT_TUNE_PROCESS", "OMP_PROC_BIND",
                        "OMP_PLACES", "GOMP_CPU_AFFINITY")}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", _READ_WORDS + textwrap.dedent(code)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _numpy_openblas(paths) -> str:
    found = [p for p in paths if "numpy" in p]
    if not found:
        pytest.skip("NumPy is not linked to an OpenBLAS with a symbol table here")
    return found[0]


def test_address_holds_what_openblas_read_from_its_variable():
    # OpenBLAS stores 1 << OPENBLAS_THREAD_TIMEOUT: reading exactly that at the computed
    # address shows the address is right; flowjit then leaves the user's setting alone
    got = _run("""
        import json, numpy as np
        a = np.ones((64, 64)); a @ a
        before = words()
        print(json.dumps({"before": before, "result": s.bound_openblas_spinning(),
                          "after": words()}))
    """, OPENBLAS_THREAD_TIMEOUT="25", FLOWJIT_TUNE_PROCESS="1")
    path = _numpy_openblas(got["before"])
    assert got["before"][path] == 1 << 25
    assert got["result"] == {}
    assert got["after"][path] == 1 << 25


def test_a_parallel_kernel_bounds_numpy_openblas_spin_when_tuned():
    got = _run("""
        import json, numpy as np
        a = np.ones((64, 64)); a @ a
        before = words()
        import flowjit
        f = flowjit.jit(lambda x: flowjit.exp(x) * 2.0)
        x = np.linspace(-1, 1, 1 << 20)
        assert np.allclose(f(x), np.exp(x) * 2.0)
        print(json.dumps({"before": before, "after": words()}))
    """, FLOWJIT_TUNE_PROCESS="1")
    path = _numpy_openblas(got["before"])
    before = got["before"][path]
    assert before & (before - 1) == 0 and before >= 1 << 4
    assert got["after"][path] == min(before, openblas_spin.SPIN_CYCLES)


def test_off_by_default():
    got = _run("""
        import json, numpy as np
        before = words()
        result = s.bound_openblas_spinning()
        import flowjit
        f = flowjit.jit(lambda x: flowjit.exp(x) * 2.0)
        x = np.linspace(-1, 1, 1 << 20)
        assert np.allclose(f(x), np.exp(x) * 2.0)
        print(json.dumps({"result": result, "before": before, "after": words(),
                          "read": s.thread_timeouts()}))
    """)
    assert got["result"] == {}
    path = _numpy_openblas(got["after"])
    assert got["after"][path] == got["before"][path] > openblas_spin.SPIN_CYCLES  # OpenBLAS's
    assert got["read"] == got["after"]   # thread_timeouts() reads the same words


def test_libraries_without_the_symbol_are_left_alone(tmp_path):
    not_elf = tmp_path / "libopenblas_fake.so"
    not_elf.write_bytes(b"not an ELF file at all" * 4)
    assert openblas_spin.timeout_symbol(str(not_elf)) is None
    # a real shared object without `thread_timeout`: NumPy's own multiarray extension
    import numpy._core._multiarray_umath as umath
    assert openblas_spin.timeout_symbol(umath.__file__) is None


def test_string_table_offsets_include_shared_tails():
    table = b"\0openblas_thread_timeout\0thread_timeout\0thread_timeouts\0"
    offsets = openblas_spin._name_offsets(table, b"thread_timeout")
    assert offsets == [10, 25]
    for o in offsets:
        assert table[o:table.index(b"\0", o)] == b"thread_timeout"


def test_word_must_look_like_openblas_value(monkeypatch):
    # _bound_one reads the word first: anything but a power of two in OpenBLAS's range is
    # left as it is (here a buffer stands in for a library whose symbol means otherwise)
    buf = (ctypes.c_uint32 * 1)(12345)
    address = ctypes.addressof(buf)
    monkeypatch.setattr(openblas_spin, "timeout_symbol", lambda path: (0, 0))
    assert openblas_spin._bound_one("x", address) is None
    assert buf[0] == 12345
    buf[0] = 1 << 28
    assert openblas_spin._bound_one("x", address) == (1 << 28, openblas_spin.SPIN_CYCLES)
    assert buf[0] == openblas_spin.SPIN_CYCLES
    buf[0] = 1 << 10   # already shorter: kept
    assert openblas_spin._bound_one("x", address) == (1 << 10, 1 << 10)
    assert buf[0] == 1 << 10
