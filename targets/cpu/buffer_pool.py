"""The buffer pool: large kernel buffers are recycled instead of faulted in afresh.

A kernel that returns a 40 MB array allocates it on every call. glibc serves blocks above its
mmap threshold (at most 32 MiB) with a fresh mmap, and Linux then zero-fills every page on first
touch: for W1 at 10^7 float32 elements that cost ~1.5-3 ms a call, as much as half the fused
loop itself. ML runtimes keep freed device and host memory for reuse (TensorFlow's BFC
allocator, PyTorch's caching allocator); this module does the same for flowjit's CPU kernels.

Every buffer of POOL_MIN_BYTES or more that generated code allocates (`large_buffers.
empty_buffer`) is an NRT MemInfo whose memory comes from numba's external-allocator hook
(`NRT_MemInfo_alloc_external`) with this pool as the allocator. When the last reference dies,
NRT hands the block back to the pool, which keeps it while the pool holds at most `limit` bytes
and frees it otherwise. The next request that fits a kept block (capacity between the request
and 1.25x it) reuses it: no page faults, and its pages stay backed by transparent huge pages
(advised once, when the block is first allocated).

The pool is a few small functions in LLVM IR compiled once per process with llvmlite's MCJIT
(a few ms); their symbols are registered with LLVM under fixed names, so kernels compiled by
numba here and cached object code loaded in a fresh process (native.py, no numba import) call
the same pool. State: 32 slots of (block, capacity) under a spin lock; the lock is held for a
scan of the slots only, never across malloc or free. The engine is deliberately never freed,
since arrays released at interpreter exit still return their blocks through it.

Python API: `configure(limit_bytes)` (the cap; 0 disables keeping blocks), `clear()` frees
every kept block, `stats()`. `FLOWJIT_BUFFER_POOL_MB` sets the initial cap (default 512).

The pool relies on numba's private NRT_MemInfo layout (48 bytes before the data), and
native.py on numba's extension modules and NumPy's array fields: `private_layouts()` checks
the installed versions against NUMBA_VERSIONS and NUMPY_VERSIONS, the ranges this code was
written for, and outside them logs one line (docs/architecture.md, "Manners in the user's
process"); the pool is then off, kernel buffers come from NRT's plain allocation, and
`stats()` reports zeros.  The pool changes no other library's state: it allocates through
numba's external-allocator interface and keeps only its own blocks.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import sys
import threading

POOL_MIN_BYTES = 4 << 20   # buffers from this size on come from the pool
SLOTS = 32
_DEFAULT_LIMIT_MB = 512
_ALLOC_SYMBOL = "flowjit_pool_new"

_lock = threading.Lock()
_state: dict | None = None
log = logging.getLogger("flowjit.cache")
# [first, past the last) (major, minor) versions whose private layouts this module and
# native.py were written against (numba: extension modules and NRT_MemInfo; NumPy:
# PyArrayObject's data, nd and dimensions at bytes 16, 24, 32)
NUMBA_VERSIONS = ((0, 59), (0, 69))
NUMPY_VERSIONS = ((1, 24), (3, 0))
_support: dict = {}   # {"native": bool, "pool": bool} once checked
_support_lock = threading.Lock()


def _installed_version(name: str):
    """(major, minor) of the installed distribution `name`, without importing it, or None."""
    mod = sys.modules.get(name)
    text = getattr(mod, "__version__", None) if mod is not None else None
    if text is None:
        try:
            from importlib.metadata import version  # lazy: used once

            text = version(name)
        except Exception:  # noqa: BLE001 - not installed or no metadata: unknown
            return None
    found = re.match(r"(\d+)\.(\d+)", str(text))
    return (int(found.group(1)), int(found.group(2))) if found else None


def private_layouts() -> dict:
    """{"native": whether the fast native loader may run, "pool": whether the buffer pool
    may}: both need numba in NUMBA_VERSIONS, the loader also NumPy in NUMPY_VERSIONS.  The
    first call that finds one outside logs one line; the answer is kept for the process."""
    with _support_lock:
        if not _support:
            numba_v, numpy_v = _installed_version("numba"), _installed_version("numpy")
            numba_ok = numba_v is not None and NUMBA_VERSIONS[0] <= numba_v < NUMBA_VERSIONS[1]
            numpy_ok = numpy_v is not None and NUMPY_VERSIONS[0] <= numpy_v < NUMPY_VERSIONS[1]
            _support.update(native=numba_ok and numpy_ok, pool=numba_ok)
            if not (numba_ok and numpy_ok):
                log.warning(
                    "flowjit: numba %s / NumPy %s are outside the versions its native kernel "
                    "loader%s was written for (numba %s-%s, NumPy %s-%s); using numba's plain "
                    "dispatch%s", _dotted(numba_v), _dotted(numpy_v),
                    "" if numba_ok else " and buffer pool", _dotted(NUMBA_VERSIONS[0]),
                    _dotted((NUMBA_VERSIONS[1][0], NUMBA_VERSIONS[1][1] - 1)),
                    _dotted(NUMPY_VERSIONS[0]), f"{NUMPY_VERSIONS[1][0] - 1}.x",
                    "" if numba_ok else " and allocation")
        return dict(_support)


def _dotted(version) -> str:
    return "unknown" if version is None else ".".join(map(str, version))

# The header in front of each block's MemInfo: the raw malloc pointer, then the capacity.
# The block handed to NRT starts 48 bytes (sizeof(NRT_MemInfo)) before a 64-byte boundary,
# so the array data NRT places right after the MemInfo is 64-byte aligned.
_IR = r"""
@flowjit_pool_lock = global i32 0
@flowjit_pool_limit = global i64 LIMIT
@flowjit_pool_cached = global i64 0
@flowjit_pool_stats = global [4 x i64] zeroinitializer
@ptrs = internal global [SLOTS x ptr] zeroinitializer
@caps = internal global [SLOTS x i64] zeroinitializer
@allocator = internal global { ptr, ptr, ptr, ptr }
    { ptr @pool_malloc, ptr @pool_realloc, ptr @pool_free, ptr null }

declare ptr @malloc(i64)
declare void @free(ptr)
declare i32 @madvise(ptr, i64, i32)
declare ptr @NRT_MemInfo_alloc_external(i64, ptr)

define internal void @lock() {
entry:
  br label %spin
spin:
  %r = cmpxchg weak ptr @flowjit_pool_lock, i32 0, i32 1 acquire monotonic
  %ok = extractvalue { i32, i1 } %r, 1
  br i1 %ok, label %done, label %spin
done:
  ret void
}

define internal void @unlock() {
  store atomic i32 0, ptr @flowjit_pool_lock release, align 4
  ret void
}

define internal void @count(i64 %which) {
  %p = getelementptr [4 x i64], ptr @flowjit_pool_stats, i64 0, i64 %which
  %v = load i64, ptr %p
  %v1 = add i64 %v, 1
  store i64 %v1, ptr %p
  ret void
}

define internal ptr @pool_malloc(i64 %size, ptr %opaque) {
entry:
  call void @lock()
  %slack = lshr i64 %size, 2
  %upper = add i64 %size, %slack
  br label %scan
scan:
  %i = phi i64 [ 0, %entry ], [ %inext, %scan ]
  %best = phi i64 [ -1, %entry ], [ %best2, %scan ]
  %bestcap = phi i64 [ -1, %entry ], [ %bestcap2, %scan ]
  %pp = getelementptr [SLOTS x ptr], ptr @ptrs, i64 0, i64 %i
  %p = load ptr, ptr %pp
  %cp = getelementptr [SLOTS x i64], ptr @caps, i64 0, i64 %i
  %c = load i64, ptr %cp
  %used = icmp ne ptr %p, null
  %fits = icmp uge i64 %c, %size
  %snug = icmp ule i64 %c, %upper
  %better = icmp ult i64 %c, %bestcap
  %t1 = and i1 %used, %fits
  %t2 = and i1 %snug, %better
  %take = and i1 %t1, %t2
  %best2 = select i1 %take, i64 %i, i64 %best
  %bestcap2 = select i1 %take, i64 %c, i64 %bestcap
  %inext = add i64 %i, 1
  %more = icmp ult i64 %inext, SLOTS
  br i1 %more, label %scan, label %decide
decide:
  %found = icmp sge i64 %best2, 0
  br i1 %found, label %hit, label %miss
hit:
  %hp = getelementptr [SLOTS x ptr], ptr @ptrs, i64 0, i64 %best2
  %block = load ptr, ptr %hp
  store ptr null, ptr %hp
  %cached = load i64, ptr @flowjit_pool_cached
  %cached2 = sub i64 %cached, %bestcap2
  store i64 %cached2, ptr @flowjit_pool_cached
  call void @count(i64 0)
  call void @unlock()
  ret ptr %block
miss:
  call void @count(i64 1)
  call void @unlock()
  %total = add i64 %size, 128
  %raw = call ptr @malloc(i64 %total)
  %null = icmp eq ptr %raw, null
  br i1 %null, label %fail, label %fresh
fail:
  ret ptr null
fresh:
  %rawi = ptrtoint ptr %raw to i64
  %t = add i64 %rawi, 127
  %aligned = and i64 %t, -64
  %blocki = sub i64 %aligned, 48
  %h0i = sub i64 %blocki, 16
  %h0 = inttoptr i64 %h0i to ptr
  store i64 %rawi, ptr %h0
  %h1i = sub i64 %blocki, 8
  %h1 = inttoptr i64 %h1i to ptr
  store i64 %size, ptr %h1
  %f0 = add i64 %rawi, 4095
  %first = and i64 %f0, -4096
  %endi = add i64 %rawi, %total
  %last = and i64 %endi, -4096
  %span = sub i64 %last, %first
  %huge = icmp sge i64 %span, HUGE_MIN
  br i1 %huge, label %advise, label %done
advise:
  %fp = inttoptr i64 %first to ptr
  %ignored = call i32 @madvise(ptr %fp, i64 %span, i32 14)
  br label %done
done:
  %block2 = inttoptr i64 %blocki to ptr
  ret ptr %block2
}

define internal ptr @pool_realloc(ptr %p, i64 %size, ptr %opaque) {
  ret ptr null
}

define internal void @release(ptr %block) {
  %bi = ptrtoint ptr %block to i64
  %h0i = sub i64 %bi, 16
  %h0 = inttoptr i64 %h0i to ptr
  %rawi = load i64, ptr %h0
  %raw = inttoptr i64 %rawi to ptr
  call void @free(ptr %raw)
  ret void
}

define internal void @pool_free(ptr %block, ptr %opaque) {
entry:
  %bi = ptrtoint ptr %block to i64
  %h1i = sub i64 %bi, 8
  %h1 = inttoptr i64 %h1i to ptr
  %cap = load i64, ptr %h1
  call void @lock()
  %limit = load i64, ptr @flowjit_pool_limit
  %cached = load i64, ptr @flowjit_pool_cached
  %newc = add i64 %cached, %cap
  %room = icmp ule i64 %newc, %limit
  br i1 %room, label %scan, label %drop
scan:
  %i = phi i64 [ 0, %entry ], [ %inext, %next ]
  %pp = getelementptr [SLOTS x ptr], ptr @ptrs, i64 0, i64 %i
  %p = load ptr, ptr %pp
  %empty = icmp eq ptr %p, null
  br i1 %empty, label %keep, label %next
next:
  %inext = add i64 %i, 1
  %more = icmp ult i64 %inext, SLOTS
  br i1 %more, label %scan, label %drop
keep:
  store ptr %block, ptr %pp
  %cp = getelementptr [SLOTS x i64], ptr @caps, i64 0, i64 %i
  store i64 %cap, ptr %cp
  store i64 %newc, ptr @flowjit_pool_cached
  call void @count(i64 2)
  call void @unlock()
  ret void
drop:
  call void @count(i64 3)
  call void @unlock()
  call void @release(ptr %block)
  ret void
}

define ptr @flowjit_pool_new(i64 %nbytes) {
  %mi = call ptr @NRT_MemInfo_alloc_external(i64 %nbytes, ptr @allocator)
  ret ptr %mi
}

define void @flowjit_pool_clear() {
entry:
  call void @lock()
  br label %scan
scan:
  %i = phi i64 [ 0, %entry ], [ %inext, %next ]
  %pp = getelementptr [SLOTS x ptr], ptr @ptrs, i64 0, i64 %i
  %p = load ptr, ptr %pp
  %used = icmp ne ptr %p, null
  br i1 %used, label %drop, label %next
drop:
  store ptr null, ptr %pp
  call void @release(ptr %p)
  br label %next
next:
  %inext = add i64 %i, 1
  %more = icmp ult i64 %inext, SLOTS
  br i1 %more, label %scan, label %done
done:
  store i64 0, ptr @flowjit_pool_cached
  call void @unlock()
  ret void
}
"""


def _initial_limit() -> int:
    text = os.environ.get("FLOWJIT_BUFFER_POOL_MB", "").strip()
    try:
        return max(0, int(float(text) * (1 << 20))) if text else _DEFAULT_LIMIT_MB << 20
    except ValueError:
        raise ValueError(f"FLOWJIT_BUFFER_POOL_MB must be a number of MiB, got {text!r}")


def _nrt_alloc_external_address(nrt_module) -> int:
    """Address of numba's exported NRT_MemInfo_alloc_external in its loaded runtime."""
    lib = ctypes.CDLL(nrt_module.__file__)
    return ctypes.cast(lib.NRT_MemInfo_alloc_external, ctypes.c_void_p).value


def pool_enabled() -> bool:
    """Whether kernel buffers come from the pool (False: plain NRT allocation)."""
    return ensure_pool()["engine"] is not None


def ensure_pool(nrt_module=None) -> dict:
    """Compile the pool (once per process) and register `flowjit_pool_new` with LLVM; where
    private_layouts() rules the pool out, a state without one (engine None).

    `nrt_module` is numba's loaded `_nrt_python` extension (found by file when not given).
    """
    global _state
    with _lock:
        if _state is not None:
            return _state
        if not private_layouts()["pool"]:   # plain allocation (module docstring)
            _state = {"engine": None, "globals": None, "clear": lambda: None}
            return _state
        # lazy: numba/LLVM load only when compiling (cached kernels run without them)
        import llvmlite.binding as ll

        if nrt_module is None:   # loaded by file: a process running cached code has no numba
            from .native import _extension  # lazy: that module imports numba

            nrt_module = _extension("numba.core.runtime._nrt_python")
        ll.initialize_native_target()
        ll.initialize_native_asmprinter()
        ll.add_symbol("NRT_MemInfo_alloc_external", _nrt_alloc_external_address(nrt_module))
        text = (_IR.replace("SLOTS", str(SLOTS)).replace("HUGE_MIN", str(POOL_MIN_BYTES))
                .replace("LIMIT", str(_initial_limit())))
        module = ll.parse_assembly(text)
        module.verify()
        target = ll.Target.from_default_triple().create_target_machine(opt=2)
        engine = ll.create_mcjit_compiler(module, target)
        engine.finalize_object()
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))  # never freed: see the docstring
        address = engine.get_function_address(_ALLOC_SYMBOL)
        ll.add_symbol(_ALLOC_SYMBOL, address)
        globals_ = {name: engine.get_global_value_address(f"flowjit_pool_{name}")
                    for name in ("lock", "limit", "cached", "stats")}
        _state = {"engine": engine, "globals": globals_,
                  "clear": ctypes.CFUNCTYPE(None)(
                      engine.get_function_address("flowjit_pool_clear"))}
        if hasattr(os, "register_at_fork"):
            lock_word = ctypes.c_int32.from_address(globals_["lock"])
            os.register_at_fork(after_in_child=lambda: setattr(lock_word, "value", 0))
        return _state


def configure(limit_bytes: int) -> None:
    """Keep at most `limit_bytes` of freed large buffers for reuse (0: keep none)."""
    if limit_bytes < 0:
        raise ValueError(f"the buffer pool limit must be >= 0 bytes, got {limit_bytes}")
    state = ensure_pool()
    if state["globals"] is None:
        return   # the pool is off: nothing is kept anyway
    ctypes.c_int64.from_address(state["globals"]["limit"]).value = int(limit_bytes)
    if limit_bytes == 0:
        clear()


def clear() -> None:
    """Free every buffer the pool keeps (buffers in use are untouched)."""
    ensure_pool()["clear"]()


def stats() -> dict:
    """Counters: hits (requests served from the pool), misses (fresh allocations), kept and
    released (freed blocks kept or returned to the system), cached_bytes, limit_bytes."""
    g = ensure_pool()["globals"]
    if g is None:   # the pool is off
        return dict.fromkeys(("hits", "misses", "kept", "released", "cached_bytes",
                              "limit_bytes"), 0)
    counts = (ctypes.c_int64 * 4).from_address(g["stats"])
    return {"hits": counts[0], "misses": counts[1], "kept": counts[2], "released": counts[3],
            "cached_bytes": ctypes.c_int64.from_address(g["cached"]).value,
            "limit_bytes": ctypes.c_int64.from_address(g["limit"]).value}
