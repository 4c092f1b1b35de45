"""Running cached kernel object code in a process that never imports numba.

numba's own disk cache still pays ~0.5 s on the first call of a fresh process (importing
numba and building its typing and target machinery).  A cached flowjit kernel is instead
the object code of a C-ABI entry point (`flowjit_entry(args, meta)`, see build.py) that
calls the numba-compiled kernel; this module loads it with llvmlite's MCJIT and calls it
through ctypes, importing only llvmlite and numba's C extension modules (its runtime: NRT
memory management, helper functions, the threading layer for prange loops).

`ensure_runtime()` loads those extensions *by file*, under their usual module names, so a
later `import numba` in the same process reuses them instead of initializing them twice;
it registers their symbols with LLVM exactly as numba does, and starts the threading layer
numba itself would choose (NUMBA_THREADING_LAYER and NUMBA_THREADING_LAYER_PRIORITY, read
as numba reads them), so numba, if imported later, agrees without any environment change;
where that choice would be TBB, numba is imported and starts it.

`NativeKernel(files)` is called like the numba dispatcher: `kernel(*arrays) -> tuple of
arrays`.  The entry point is made a Python builtin function (a METH_FASTCALL PyMethodDef
pointing at it), so a call costs what a builtin's does; it receives the input array
objects, releases the GIL while the kernel runs, and returns the tuple of output arrays,
boxed by NRT's own function (each owns a reference to its memory); an output that is an
input's memory is copied.  When the entry point reports an
exception (a size check failed, division by zero, ...) the call is repeated with the numba
build of the same source, which raises the real exception — errors are rare, so they may
pay for the compile.

Loading numba's extensions by path and reading NumPy's array fields at fixed offsets rely
on those libraries' private layouts, so buffer_pool.private_layouts() checks the installed
versions against the ranges this code and the pool were written for; outside them it logs
one line and everything here takes the supported path (docs/architecture.md, "Manners in
the user's process"): numba is imported as usual, and NativeKernel(...) gives a
PlainKernel, which hands every call to numba's dispatcher.  None of this changes another
library's state: the tuning that does (thread_affinity.py, openblas_spin.py) runs from here
only once the user opted in.
"""

from __future__ import annotations

import builtins
import ctypes
import glob
import importlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
import threading

import numpy as np

from . import openblas_spin, thread_affinity
from .buffer_pool import ensure_pool, private_layouts

log = logging.getLogger("flowjit.cache")

_lock = threading.RLock()
_runtime: dict | None = None
_engines: list = []           # keep every loaded engine (and its code) alive


def _numba_dir() -> str:
    mod = sys.modules.get("numba")
    if mod is not None:
        return os.path.dirname(mod.__file__)
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("numba is not installed")
    return list(spec.submodule_search_locations)[0]


def _extension(fullname: str):
    """numba's C extension `fullname`, loaded from its file without importing numba (by a
    plain import of numba where private_layouts() says its layout is not known)."""
    mod = sys.modules.get(fullname)
    if mod is not None:
        return mod
    if not private_layouts()["native"]:
        return importlib.import_module(fullname)
    rel = fullname.split(".")[1:]
    pattern = os.path.join(_numba_dir(), *rel[:-1], rel[-1] + ".*" +
                           ("pyd" if sys.platform == "win32" else "so"))
    paths = glob.glob(pattern)
    if not paths:
        raise ImportError(f"no extension file for {fullname}")
    loader = importlib.machinery.ExtensionFileLoader(fullname, paths[0])
    spec = importlib.util.spec_from_file_location(fullname, paths[0], loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules[fullname] = mod
    return mod


def _num_threads() -> int:
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


_THREAD_SYMBOLS = (("numba_parallel_for", "parallel_for"), ("do_scheduling_signed", None),
                   ("do_scheduling_unsigned", None), ("allocate_sched", None),
                   ("deallocate_sched", None), ("get_num_threads", None),
                   ("set_num_threads", None), ("get_thread_id", None),
                   ("set_parallel_chunksize", None), ("get_parallel_chunksize", None),
                   ("get_sched_size", None))


def _layer_order() -> list:
    """The threading layers numba would try, in its order (numba.np.ufunc.parallel's
    _launch_threads, reading the same environment variables as numba's config)."""
    wanted = os.environ.get("NUMBA_THREADING_LAYER", "default").strip().lower()
    if wanted in ("tbb", "omp", "workqueue"):
        return [wanted]
    if wanted in ("safe", "threadsafe", "forksafe"):
        return {"safe": ["tbb"], "threadsafe": ["tbb", "omp"],
                "forksafe": ["tbb", "workqueue"] if sys.platform.startswith("linux")
                else ["tbb", "omp", "workqueue"]}[wanted]
    return os.environ.get("NUMBA_THREADING_LAYER_PRIORITY", "tbb omp workqueue").split()


def _tbb_usable() -> bool:
    """Whether numba would accept the TBB library here (its own test: TBB 2021.6 or later)."""
    name = {"win32": "tbb12.dll", "darwin": "libtbb.12.dylib"}.get(sys.platform,
                                                                   "libtbb.so.12")
    try:
        version = ctypes.CDLL(name).TBB_runtime_interface_version
    except (OSError, AttributeError):
        return False
    version.restype, version.argtypes = ctypes.c_int, []
    return version() >= 12060


def _start_threading(ll):
    thread_affinity.bound_spinning()            # these three do nothing unless the user
    openblas_spin.bound_openblas_spinning()     # opted in (thread_affinity.tuning_enabled)
    order = _layer_order()
    if ("numba.np.ufunc.parallel" in sys.modules or not private_layouts()["native"]
            or (order[:1] == ["tbb"] and _tbb_usable())):
        from numba.np.ufunc import parallel  # numba's own launcher (imports numba)

        parallel._launch_threads()
        _runtime["layer_name"] = parallel._threading_layer
        limit = parallel.NUM_THREADS
        _runtime["set_threads"] = lambda count: parallel.set_num_threads(
            max(1, min(int(count), limit)))
        if parallel._threading_layer == "omp":
            _runtime["layer"] = (sys.modules["numba.np.ufunc.omppool"],
                                 parallel.get_num_threads())
            thread_affinity.pin_workers(*_runtime["layer"])
        return
    lib = None
    for name in [n for n in order if n != "tbb"]:
        try:
            lib = _extension(f"numba.np.ufunc.{name}pool" if name != "workqueue"
                             else "numba.np.ufunc.workqueue")
            break
        except ImportError:
            continue
    if lib is None:
        raise ImportError("no numba threading layer could be loaded")
    for symbol, attr in _THREAD_SYMBOLS:
        ll.add_symbol(symbol, getattr(lib, attr or symbol))
    n = _num_threads()
    ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.launch_threads)(n)
    set_threads = ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.set_num_threads)
    set_threads(n)
    _runtime["layer_name"] = name
    _runtime["set_threads"] = lambda count: set_threads(max(1, min(int(count), n)))
    if name == "omp":
        _runtime["layer"] = (lib, n)
        thread_affinity.pin_workers(lib, n)


def tune_running_threads() -> dict:
    """Apply the thread tuning to a thread pool already started before the user opted in
    (runtime/process_tuning.py calls it): pin the omp layer's workers; returns {thread
    number: cpu} of the pinned workers ({} when there is no such pool or nothing to do)."""
    with _lock:
        layer = (_runtime or {}).get("layer")
    return thread_affinity.pin_workers(*layer) if layer is not None else {}


def set_thread_count(count: int) -> None:
    """Let kernels launched from the calling thread use `count` threads of the pool (the
    threading layer's own thread-local setting, numba.set_num_threads; nothing else in the
    process changes).  Before any parallel kernel ran there is no pool yet: nothing to do,
    and the device executor sets it again before each kernel."""
    with _lock:
        setter = (_runtime or {}).get("set_threads")
    if setter is not None:
        setter(count)


def concurrent_launches() -> bool:
    """Whether kernels may be launched from several threads at once: numba's tbb and omp
    layers are thread-safe, its workqueue layer is not (it aborts the process).  Before the
    layer is started, the answer for the layer numba would pick first."""
    global _first_choice
    runtime = _runtime
    layer = runtime.get("layer_name") if runtime is not None else None
    if layer is None:
        if _first_choice is None:
            _first_choice = _layer_order()[0]
        layer = _first_choice
    return layer != "workqueue"


_first_choice = None   # the layer numba tries first (concurrent_launches, before it runs)


def ensure_runtime(parallel: bool) -> dict:
    """Load numba's runtime extensions and register their symbols (once per process)."""
    global _runtime
    with _lock:
        if _runtime is None:
            # lazy: numba/LLVM load only when compiling (cached kernels run without them)
            import llvmlite.binding as ll

            ll.initialize_native_target()
            ll.initialize_native_asmprinter()
            if not private_layouts()["native"]:   # the supported path: numba sets up NRT
                importlib.import_module("numba.core.runtime.nrt")
            helper = _extension("numba._helperlib")
            dynfunc = _extension("numba._dynfunc")
            numba_nrt_ready = "numba.core.runtime.nrt" in sys.modules
            nrt = _extension("numba.core.runtime._nrt_python")
            if not numba_nrt_ready:
                nrt.memsys_use_cpython_allocator()
            ll.add_symbol("_Py_NoneStruct", id(None))
            for helpers in (helper.c_helpers, dynfunc.c_helpers):
                for name, address in helpers.items():
                    ll.add_symbol("numba_" + name, address)
            for name, address in nrt.c_helpers.items():
                ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
            ensure_pool(nrt)   # kernels allocate their large buffers from the pool
            for obj in builtins.__dict__.values():
                if isinstance(obj, type) and issubclass(obj, BaseException):
                    ll.add_symbol(f"PyExc_{obj.__name__}", id(obj))
            _runtime = {
                "ll": ll, "threads": False, "layer": None,
                "layout_ok": private_layouts()["native"] and _array_layout_ok(),
            }
        if parallel and not _runtime["threads"]:
            _start_threading(_runtime["ll"])
            _runtime["threads"] = True
        return _runtime


def load_object(objects, entry: str) -> int:
    """Load object files (bytes; they may refer to one another) with MCJIT,
    their other undefined symbols resolved against those registered with LLVM, and return
    the address of function `entry`; the code stays loaded for the life of the process.
    ensure_runtime() must have run."""
    ll = _runtime["ll"]
    target = ll.Target.from_default_triple()
    tm = target.create_target_machine(cpu=ll.get_host_cpu_name(),
                                      features=ll.get_host_cpu_features().flatten(),
                                      opt=3, codemodel="jitdefault")
    engine = ll.create_mcjit_compiler(ll.parse_assembly(""), tm)
    for obj in objects:
        engine.add_object_file(ll.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    address = engine.get_function_address(entry)
    if not address:
        raise LookupError(f"entry point {entry} not in the object code")
    with _lock:
        _engines.append(engine)
    return address


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_METH_FASTCALL = 0x0080
_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = (ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)
_method_defs: list = []       # a builtin function points at its PyMethodDef: keep them all


def _builtin(address: int, self_object, name: str):
    """A Python builtin function (METH_FASTCALL) whose C code is at `address`; it is called
    with its `self_object` and the positional arguments as an array of object pointers, as
    fast as any builtin (no ctypes conversion per call)."""
    method = _MethodDef(name.encode(), address, _METH_FASTCALL, None)
    with _lock:
        _method_defs.append(method)
    return _new_builtin(ctypes.addressof(method), self_object, None)


def provide_libraries(symbols) -> None:
    """Register the shared functions kernels call by symbol (the GEMM: gemm_library.py)
    that `symbols` names, loading or building them first."""
    from . import gemm_library

    gemm_library.provide_symbols(symbols)


def _array_layout_ok() -> bool:
    """Whether NumPy arrays here keep data, ndim and dimensions at the byte offsets the
    entry points read (16, 24, 32: the PyArrayObject fields after the object header)."""
    probe = np.zeros((3, 5), np.float32)[1:, :4]
    try:
        data = ctypes.c_int64.from_address(id(probe) + 16).value
        ndim = ctypes.c_int32.from_address(id(probe) + 24).value
        dims = ctypes.c_int64.from_address(id(probe) + 32).value
        shape = tuple(ctypes.c_int64.from_address(dims + 8 * k).value for k in range(2))
    except (ValueError, OSError):
        return False
    return (sys.maxsize > 2**32 and data == probe.ctypes.data and ndim == 2
            and shape == probe.shape)


class PlainKernel:
    """What NativeKernel(...) gives where private_layouts() rules the loader out: every call
    goes to numba's dispatcher (`fallback()`, built on first use), as a kernel without a
    cache entry is called."""

    def __init__(self, files: dict, fallback):
        self._fallback = fallback
        self.source = files["source.py"].decode()

    def __call__(self, *arrays):
        return self._fallback()(*arrays)

    def call_trusted(self, arrays):
        """Call with a list of checked arrays (the NativeKernel interface)."""
        return self._fallback()(*arrays)


class NativeKernel:
    """A cached kernel loaded from object code; call it like the numba dispatcher."""

    def __new__(cls, files: dict, fallback, abi: str):
        if not private_layouts()["native"]:
            return PlainKernel(files, fallback)   # numba's plain dispatch (module docstring)
        return super().__new__(cls)

    def __init__(self, files: dict, fallback, abi: str):
        meta = json.loads(files["kernel.json"].decode())
        if meta.get("abi") != abi:
            raise LookupError(f"entry made for ABI {meta.get('abi')!r}, this code is {abi!r}")
        rt = ensure_runtime(meta["parallel"])
        ll = rt["ll"]
        process = ctypes.CDLL(None)
        if not rt["layout_ok"]:
            raise LookupError("NumPy's array object layout is not the one entries read")
        provide_libraries(meta["symbols"])
        missing = [s for s in meta["symbols"]
                   if not ll.address_of_symbol(s) and not hasattr(process, s)]
        if missing:
            raise LookupError(f"unresolved symbols {missing[:5]}")
        address = load_object((files["kernel.o"], files["entry.o"]), meta["entry"])
        self._inputs = [(np.dtype(d), r) for d, r in meta["inputs"]]
        # outputs written into a donated input's array: handed back as that array, not copied
        self._donated = {k: p for p, k in meta.get("donated", ())}
        self._out_dtypes = [np.dtype(d) for d, _ in meta["outputs"]]  # kept alive: consts
        consts = np.array([id(np.ndarray)] + [id(d) for d in self._out_dtypes], np.int64)
        self._fn = _builtin(address, consts, meta["entry"])
        self._fallback = fallback
        self.source = files["source.py"].decode()

    def __call__(self, *arrays):
        if len(arrays) != len(self._inputs):
            raise TypeError(f"kernel takes {len(self._inputs)} arrays, got {len(arrays)}")
        for a, (dtype, rank) in zip(arrays, self._inputs):
            # C-contiguous and aligned (flags 0x1 | 0x100), of the compiled dtype and rank
            if ((a.dtype is not dtype and a.dtype != dtype) or a.ndim != rank
                    or (a.flags.num & 0x101) != 0x101):
                return self._fallback()(*arrays)
        return self._finish(self._fn(*arrays), arrays)

    def call_trusted(self, arrays):
        """Call with a list of arrays the caller has already checked: C-contiguous, aligned,
        of the compiled dtypes and ranks (runtime/clustering.py does, once per signature)."""
        return self._finish(self._fn(*arrays), arrays)

    def _finish(self, outs, arrays):
        if outs is None:   # the kernel raised
            log.info("flowjit: a cached kernel reported an error; rerunning it with numba "
                     "to raise it")
            return self._fallback()(*arrays)
        for y in outs:
            if y.base is None and not y.flags.owndata:
                # memory of an input, not NRT-owned: copy it while the inputs are alive,
                # unless the input was donated for this output (then it is that array)
                return tuple(self._alias(k, z, arrays) for k, z in enumerate(outs))
        return outs

    def _alias(self, k, z, arrays):
        if z.base is not None or z.flags.owndata:
            return z
        p = self._donated.get(k)
        if p is not None and arrays[p].ctypes.data == z.ctypes.data:
            return arrays[p]
        return np.array(z)
