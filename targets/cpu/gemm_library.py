"""Providing the shared GEMM functions (gemm_entry.py) to this process, by symbol.

`provide(dtype_name)` makes the symbol `flowjit_gemm_<dtype>` resolvable by LLVM here,
once per process: from the disk cache when an entry exists (its object code loaded with
MCJIT, as cached kernels are: native.py, no numba import), else by compiling the
`numba.cfunc` (5-8 s, once per machine while the cache holds it) and storing its object
code.  Kernels that call the GEMM are compiled and loaded only after their dtypes were
provided (the GEMM overloads in gemm.py call `provide` when a kernel is typed; native.py
calls `provide_symbols` with the symbols a cached kernel needs before loading it).

A cache entry here is keyed like a kernel's (cache.py: the flowjit code fingerprint, CPU,
versions) plus the dtype and this module's ABI tag; it is verified by the same manifest,
and a corrupt or unloadable one is discarded and rebuilt.
"""

from __future__ import annotations

import json
import logging
import threading

from . import cache, native

log = logging.getLogger("flowjit.cache")

ABI = "flowjit_gemm-2"
PREFIX = "flowjit_gemm_"
FILES = ("gemm.o", "gemm.json")
DTYPES = ("float32", "float64")
_lock = threading.RLock()
_provided: dict = {}    # dtype name -> address of its GEMM in this process
_keep: list = []        # compiled cfuncs, kept alive with their code


def _material(dtype_name: str) -> dict:
    return {**cache.static_material(), "library": "gemm", "dtype": dtype_name, "abi": ABI}


def provide(dtype_name: str) -> int:
    """Make `flowjit_gemm_<dtype_name>` resolvable in this process; its address."""
    if dtype_name not in DTYPES:
        raise ValueError(f"flowjit's GEMM has no {dtype_name!r} version (only {DTYPES})")
    with _lock:
        address = _provided.get(dtype_name)
        if address is None:
            address = _load(dtype_name) or _compile(dtype_name)
            native.ensure_runtime(parallel=True)["ll"].add_symbol(PREFIX + dtype_name,
                                                                   address)
            _provided[dtype_name] = address
        return address


def provide_symbols(symbols) -> None:
    """Provide every GEMM that `symbols` (undefined symbols of some object code) names."""
    for symbol in symbols:
        if symbol.startswith(PREFIX) and symbol[len(PREFIX):] in DTYPES:
            provide(symbol[len(PREFIX):])


def _load(dtype_name: str) -> int | None:
    material = _material(dtype_name)
    key = cache.key_of(material)
    files = cache.read_entry(key, material, FILES)
    if files is None:
        return None
    try:
        meta = json.loads(files["gemm.json"].decode())
        if meta.get("abi") != ABI:
            raise LookupError(f"entry made for ABI {meta.get('abi')!r}")
        native.ensure_runtime(parallel=True)
        address = native.load_object((files["gemm.o"],), meta["entry"])
        log.info("flowjit cache: loaded the %s GEMM from %s", dtype_name, cache.cache_dir())
        return address
    except Exception as e:  # noqa: BLE001 - any failure to load means: rebuild
        cache.STATS["rejected"] += 1
        log.warning("flowjit cache: cannot load the %s GEMM entry (%s: %s); recompiling",
                    dtype_name, type(e).__name__, e)
        cache.discard_entry(key)
        return None


def _compile(dtype_name: str) -> int:
    from .gemm_entry import compile_gemm  # lazy: that module imports numba

    log.info("flowjit: compiling the %s GEMM (once while the kernel cache keeps it)",
             dtype_name)
    cfunc = compile_gemm(dtype_name)
    _keep.append(cfunc)
    material = _material(dtype_name)
    if cache.cache_dir() is not None and cache.code_fingerprint() == material["flowjit_code"]:
        obj = cfunc._library.serialize_using_object_code()[2][0]
        meta = {"abi": ABI, "entry": cfunc.native_name}
        cache.write_entry(cache.key_of(material), material,
                          {"gemm.o": bytes(obj), "gemm.json": json.dumps(meta).encode()})
    return cfunc.address
