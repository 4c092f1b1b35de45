"""Turning generated kernel source into a callable, through the kernel caches.

`build_kernel(source, name)`: the source is executed as a real module (its text is
registered with `linecache` so tracebacks and `inspect.getsource` show it) and the kernel is
compiled with `numba.njit(parallel=<prange loops only, if any>, error_model="numpy",
nogil=True)`.
Compilation is lazy, on the first call.

`build_cached(program, make_source) -> (kernel, source)` is what the CPU target calls
(targets/cpu/target.py, its instance of the target protocol): it
keys the optimized IR (cache.py), returns a kernel already built in this process, else
loads the entry from the disk cache (native.py: no numba import, no compile), else calls
`make_source()`, compiles the kernel with numba and a C-ABI entry point for it with
`numba.cfunc`, which then serves this process's calls too, and stores a cache entry on a
writer thread, so the first result does not wait for the disk (`wait_for_cache_writes()`):
`kernel.o` (the kernel's object code, as numba compiled it), `entry.o` (the entry point's,
calling the kernel by symbol):

    flowjit_entry(self, args, nargs) -> a new reference to the tuple of output arrays,
                                        or to None when the kernel raised
    (METH_FASTCALL: native.py makes it a Python builtin function, called with the arrays)
    self: an int64 NumPy array of the addresses of numpy.ndarray and of each output's
          dtype object
    args: per input the address of its NumPy array object (C-contiguous, aligned)

plus `kernel.json` (entry name, input and output dtypes and ranks, external symbols it
needs) and `source.py` (the generated source, shown by `lower()` and used to report errors).
"""

from __future__ import annotations

import hashlib
import warnings
import json
import linecache
import logging
import threading

from ...compiler.core.ir import Program
from ...compiler.tiers import Tier
from . import cache, native   # native now, not at the first hit: code and key must agree
from .blas_threads import single_threaded_blas
from .matmul_code import gemm_mode, split_blocks

log = logging.getLogger("flowjit.cache")

NJIT_OPTIONS = dict(error_model="numpy", nogil=True)
ABI = "flowjit_entry-7"
ENTRY_FILES = ("kernel.o", "entry.o", "kernel.json", "source.py")
_built: dict = {}   # key -> (kernel, source): kernels built or loaded in this process
_writers: list = []  # threads writing cache entries (the first result need not wait for them)
cache.static_material()   # fingerprint the code files now, when this code was loaded


# numba's performance notes about our generated kernels ("parallel=True but no
# transformation...", "prange ... more than one exit") are about code we chose on purpose
# (both loop versions live in one function); they name the kernel's file, so only they are
# silenced, never warnings about the user's own numba code.
warnings.filterwarnings("ignore", message=r"(?s).*<flowjit-kernel-")


# Only the generated `prange` loops run on numba's thread pool.  With plain parallel=True
# numba also turns array statements (`part.fill(x)`, `buf[...] = part[0]`, array expressions)
# into parallel loops that launch the pool whatever their size: ~1-2 us each on an idle
# machine, milliseconds when other processes hold the cores (measured on the W5 step).
PRANGE_ONLY = {"prange": True, "comprehension": False, "reduction": False,
               "inplace_binop": False, "setitem": False, "numpy": False, "stencil": False,
               "fusion": False}


def build_kernel(source: str, name: str = "kernel"):
    """Execute `source`, wrap its `name` function with numba and return the dispatcher."""
    import numba  # lazy: numba/LLVM load only when compiling (cached kernels run without them)

    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<flowjit-kernel-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": f"flowjit_kernel_{digest}"}
    exec(compile(source, filename, "exec"), namespace)
    for sub in namespace.get("SUBKERNELS", ()):   # a while loop's condition and body
        namespace[sub] = numba.njit(parallel=_parallel(source, sub),
                                    **NJIT_OPTIONS)(namespace[sub])
    return numba.njit(parallel=_parallel(source, name), **NJIT_OPTIONS)(namespace[name])


def _parallel(source: str, name: str):
    """numba's `parallel` option for function `name` of `source`: prange loops only, when
    its own text has one."""
    start = source.find(f"\ndef {name}(")
    end = source.find("\ndef ", start + 1)
    text = source[start:end if end >= 0 else len(source)]
    return PRANGE_ONLY if "prange(" in text else False


def kernel_key(program: Program, tier: Tier = Tier.OPTIMIZED) -> tuple:
    """(cache key, key material) of `program`'s CPU kernel at `tier`: the IR, this target's
    options (the target's name among them: targets/target.py, "cache key") and the static
    material (cache.py)."""
    material = cache.key_material(program, {**NJIT_OPTIONS, "abi": ABI, "target": "cpu",
                                            "split_blocks": split_blocks(),
                                            "gemm": gemm_mode(), "tier": tier.value})
    return cache.key_of(material), material


def build_cached(program: Program, make_source, keyed: tuple | None = None,
                 isolated: bool = False) -> tuple:
    """The kernel for `program` and its source, from the in-memory or disk cache when
    possible; `make_source()` generates the source on a miss.  `keyed`: `kernel_key(program)`
    when the caller has it already.  `isolated`: on a miss, the compile worker process
    (compile_worker.py) compiles the kernel into the disk cache, and this process loads it
    from there; should that fail, or without a disk cache, it compiles here."""
    key, material = keyed if keyed is not None else kernel_key(program)
    hit = cached(key, material)
    if hit is not None:
        return hit
    source = make_source()
    if isolated and cache.cache_dir() is not None:
        from . import compile_worker  # lazy: that module imports this one
        if compile_worker.compile_in_worker(source, key, material, kernel_io(program)):
            hit = cached(key, material)
            if hit is not None:
                return hit
    if "prange(" in source:   # start the thread pool as every path does (thread_affinity.py)
        native.ensure_runtime(parallel=True)
    kernel = build_kernel(source)
    if cache.cache_dir() is not None:
        kernel = _with_entry(key, material, source, program, kernel)
    kernel = single_threaded_blas(kernel, source)
    _built[key] = (kernel, source)
    return kernel, source


def cached(key: str, material: dict) -> tuple | None:
    """(kernel, source) built in this process or loaded from the disk cache (no numba, no
    compile), else None."""
    hit = _built.get(key)
    if hit is not None:
        return hit
    files = cache.read_entry(key, material, ENTRY_FILES)
    if files is None:
        return None
    source = files["source.py"].decode()
    try:
        kernel = native.NativeKernel(files, _lazy_build(source), ABI)
    except Exception as e:  # noqa: BLE001 - any failure to load means: rebuild
        cache.STATS["rejected"] += 1
        log.warning("flowjit cache: cannot load entry %s (%s: %s); recompiling",
                    key[:16], type(e).__name__, e)
        cache.discard_entry(key)
        return None
    log.info("flowjit cache: loaded kernel %s from %s", key[:16], cache.cache_dir())
    kernel = single_threaded_blas(kernel, source)
    _built[key] = (kernel, source)
    return kernel, source


def _with_entry(key: str, material: dict, source: str, program: Program, kernel):
    """Compile `kernel` now, for the C-contiguous arrays every caller passes, and its entry
    point (a few hundred ms: it calls the kernel by symbol); the entry point serves this
    process's calls as it serves a process that loads it from the cache (cheaper to call
    than numba's dispatcher, which would also compile the kernel again for read-only
    arrays), and a writer thread stores the cache entry.  Should the entry point fail,
    numba's dispatcher serves the calls and nothing is cached."""
    io = kernel_io(program)
    kernel.compile(_signature(io))
    try:
        files = compile_entry(source, io, kernel)
        entry = native.NativeKernel(files, lambda: kernel, ABI)
    except Exception as e:  # noqa: BLE001 - the kernel still works; only caching failed
        log.warning("flowjit cache: kernel %s not cached (%s: %s)", key[:16],
                    type(e).__name__, e)
        return kernel
    writer = threading.Thread(target=_store_entry, args=(key, material, files),
                              name=f"flowjit-cache-{key[:8]}")
    _writers.append(writer)
    writer.start()
    return entry


def _store_entry(key: str, material: dict, files: dict) -> None:
    """Write the cache entry (on a writer thread: the first result need not wait); this
    process may run code older than the files, and then its key would lie."""
    store_entry(key, material, files)


def kernel_io(program: Program) -> dict:
    """What a kernel's entry point needs of `program`, as plain data (it travels to the
    compile worker): (dtype name, rank) per input and output, and the donated pairs."""
    return {"inputs": [(_np_name(n.dtype), len(n.shape)) for n in program.inputs],
            "outputs": [(_np_name(n.dtype), len(n.shape)) for n in program.outputs],
            "donated": [list(pair) for pair in program.donated]}


def build_entry_files(source: str, io: dict) -> dict:
    """Compile `source`'s kernel and its entry point; the files of its cache entry (what
    the compile worker does with a request)."""
    if "prange(" in source:
        native.ensure_runtime(parallel=True)
    kernel = build_kernel(source)
    kernel.compile(_signature(io))
    return compile_entry(source, io, kernel)


def store_entry(key: str, material: dict, files: dict) -> bool:
    """Write a cache entry if this process's code is the code the key was made with."""
    if cache.code_fingerprint() != material["flowjit_code"]:
        log.info("flowjit cache: source files changed since this process started; "
                 "kernel %s not cached", key[:16])
        return False
    return cache.write_entry(key, material, files)


def _signature(io: dict) -> tuple:
    """numba argument types of a kernel with inputs `io["inputs"]`: C-contiguous arrays."""
    import numba  # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    import numpy as np
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba import types

    return tuple(types.Array(numba.from_dtype(np.dtype(dt)), rank, "C")
                 for dt, rank in io["inputs"])


def wait_for_cache_writes() -> None:
    """Block until every cache entry this process started writing is on disk (or failed).

    Entries are written by non-daemon threads, so the interpreter also waits for them at
    exit; a process killed meanwhile leaves no entry (writes are atomic), never a bad one."""
    while _writers:
        _writers.pop().join()


def _lazy_build(source: str):
    holder: list = []

    def get():
        if not holder:
            holder.append(build_kernel(source))
        return holder[0]

    return get


def _np_name(dtype) -> str:
    import numpy as np

    return np.dtype(dtype.np_dtype).name


def entry_source(inputs, outputs) -> str:
    """Source of the C-ABI entry point for inputs/outputs given as (dtype name, rank).

    It is a METH_FASTCALL function (native.py makes it a Python builtin): `self` is the
    address of an int64 NumPy array holding the consts, args[i] the address of input i's
    NumPy array object.  Data pointers and sizes are read from the PyArrayObject fields
    (data at byte 16, dimensions at 32), a layout that native.py verifies on the running
    NumPy before it loads any entry.  The GIL is released while the kernel runs."""
    lines = ["def flowjit_entry(self, args, nargs):",
             f"    if nargs != {len(inputs)}:",     # never read past the arguments given
             "        return new_none()",
             "    consts = array_at(self, (5,), np.int64)[2]"]
    for i, (dt, rank) in enumerate(inputs):
        lines.append(f"    h{i} = array_at(args[{i}], (5,), np.int64)")
        if rank == 0:
            lines.append(f"    in{i} = array_at(h{i}[2], (), np.{dt})")
        else:
            lines.append(f"    d{i} = array_at(h{i}[4], ({rank},), np.int64)")
            dims = "".join(f"d{i}[{j}], " for j in range(rank))
            lines.append(f"    in{i} = array_at(h{i}[2], ({dims}), np.{dt})")
    call = "".join(f"in{i}, " for i in range(len(inputs)))
    lines += ["    state = release_gil()", f"    ok, outs = call_kernel(({call}))",
              "    acquire_gil(state)", "    if not ok:", "        return new_none()",
              "    return box_outputs(outs, consts)"]
    return "\n".join(lines) + "\n"


def compile_entry(source: str, io: dict, kernel) -> dict:
    """Compile the C-ABI entry point of `kernel` (compiled already for `_signature(io)`;
    `io`: kernel_io(program)); the files of its cache entry.

    The entry calls the kernel by its symbol, so compiling it costs a few hundred ms: its
    module holds the wrapper only.  Linking the kernel in (as a numba function calling
    another would) re-optimized and compiled all the kernel's code a second time, as long
    as the kernel's own compile.  The kernel's object code is the one numba already made."""
    import numba  # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    import numpy as np
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba import types

    from . import native
    # lazy: that module imports numba
    from ._entry_intrinsics import (acquire_gil, array_at, box_outputs, kernel_caller,
                                    new_none, release_gil)

    compiled = kernel.overloads[_signature(io)]
    symbol = compiled.fndesc.mangled_name
    address = compiled.library.get_pointer_to_function(symbol)
    if not address:
        raise LookupError(f"kernel symbol {symbol} has no address")
    native.ensure_runtime(parallel=False)["ll"].add_symbol(symbol, address)
    inputs = [tuple(pair) for pair in io["inputs"]]
    outputs = [tuple(pair) for pair in io["outputs"]]
    ret = compiled.signature.return_type
    namespace = {"np": np, "array_at": array_at,
                 "call_kernel": kernel_caller(symbol, compiled.signature.args, ret),
                 "box_outputs": box_outputs,
                 "new_none": new_none, "release_gil": release_gil, "acquire_gil": acquire_gil}
    exec(compile(entry_source(inputs, outputs), "<flowjit-entry>", "exec"), namespace)
    sig = types.int64(types.int64, types.CPointer(types.int64), types.int64)
    entry = numba.cfunc(sig, **NJIT_OPTIONS)(namespace["flowjit_entry"])
    defined = {symbol}
    symbols: set = set()
    for library in (compiled.library, entry._library):
        module = library._final_module
        defined |= {f.name for f in module.functions if not f.is_declaration}
        symbols |= {f.name for f in module.functions
                    if f.is_declaration and not f.name.startswith("llvm.")}
        symbols |= {g.name for g in module.global_variables if g.is_declaration}
    kernel_obj = compiled.library.serialize_using_object_code()[2][0]
    entry_obj = entry._library.serialize_using_object_code()[2][0]
    # Output dtypes as numba typed the kernel (what the object code really returns).
    outputs = [(np.dtype(str(t.dtype)).name, t.ndim) for t in getattr(ret, "types", ())]
    meta = {"abi": ABI, "entry": entry.native_name, "inputs": inputs, "outputs": outputs,
            "parallel": "prange(" in source, "symbols": sorted(symbols - defined),
            "donated": [list(pair) for pair in io["donated"]]}
    return {"kernel.o": bytes(kernel_obj), "entry.o": bytes(entry_obj),
            "kernel.json": json.dumps(meta).encode(), "source.py": source.encode()}
