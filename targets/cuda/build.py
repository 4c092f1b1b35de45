"""Building generated CUDA modules with numba-cuda, the in-memory kernel cache, and PTX
(docs/architecture.md, "The CUDA target").

numba-cuda is imported here and only when a module is built: a CPU-only process never loads
it.  Whether kernels run on a GPU or on numba-cuda's simulator is numba-cuda's own setting
(`NUMBA_ENABLE_CUDASIM=1`, read when it is imported); flowjit never sets it, it asks
(`simulator()`) and generates the matching module (prelude.py).

`build(source)` executes the module text and returns its `run` function; kernels compile on
their first launch for each argument type, as numba-cuda does.  Modules are cached in this
process by cache key; kernels built from exec'd text have no file for numba-cuda's disk
cache, so a new process compiles again.

`ptx_of(source, cc)` compiles every kernel of a module to PTX for compute capability `cc`
without a GPU (NVVM from the NVIDIA compiler wheels), with the argument types a call
would give: the check that GPU code really builds, on any machine.
"""

from __future__ import annotations

import importlib.util
import os
import threading

_MODULES: dict = {}
_LOCK = threading.Lock()


def installed() -> bool:
    """Whether numba-cuda is installed (nothing is imported)."""
    return importlib.util.find_spec("numba_cuda") is not None


def simulator() -> bool:
    """Whether numba-cuda runs kernels on its simulator in this process (the user's
    NUMBA_ENABLE_CUDASIM setting, as numba-cuda reads it)."""
    if not installed():
        return False
    from numba import cuda

    return bool(getattr(cuda, "simulator_enabled", False)) or \
        os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_DEVICE_OK: list = []


def require_device() -> None:
    """RuntimeError, saying what to do, when kernels cannot run here: no GPU numba-cuda can
    use and no simulator (checked once per process)."""
    if _DEVICE_OK:
        return
    from numba import cuda

    if not (simulator() or cuda.is_available()):
        raise RuntimeError("the CUDA target's kernels need a GPU, and numba-cuda finds none "
                           "(no NVIDIA driver?). Set NUMBA_ENABLE_CUDASIM=1 before starting "
                           "Python to run them on numba-cuda's simulator; "
                           "jit(...).lower(...).stage('ptx') shows the PTX without a GPU.")
    _DEVICE_OK.append(True)


def version() -> str:
    if not installed():
        return "none"
    from importlib.metadata import version as dist_version

    return dist_version("numba-cuda")


def namespace(source: str) -> dict:
    """The executed module text (its kernels not compiled yet)."""
    scope: dict = {"__name__": "flowjit_cuda_kernel"}
    exec(compile(source, "<flowjit cuda kernel>", "exec"), scope)  # noqa: S102 - our text
    return scope


def build(key: str, source: str):
    """The `run` function of `source`, from this process's cache when built before."""
    run = _MODULES.get(key)
    if run is None:
        with _LOCK:
            run = _MODULES.get(key)
            if run is None:
                run = _MODULES[key] = namespace(source)["run"]
    return run


def cached(key: str):
    return _MODULES.get(key)


def kernel_names(scope: dict) -> list:
    """The names of the module's kernels (the `@cuda.jit` functions that are not helpers)."""
    return [name for name, value in scope.items()
            if name.startswith("_g") and hasattr(value, "py_func")]


def ptx_of(source: str, argument_types: dict, cc=(9, 0)) -> dict:
    """{kernel name: PTX text} for every kernel of `source`; `argument_types` gives, per
    kernel name, the numba type signature string a call would compile for."""
    from numba import cuda

    scope = namespace(source)
    out = {}
    for name in kernel_names(scope):
        ptx, _ = cuda.compile_ptx(scope[name].py_func, argument_types[name], cc=cc)
        out[name] = ptx
    return out


def device_capability(default=(9, 0)) -> tuple:
    """The compute capability of this process's GPU, else `default` (sm_90: an H100)."""
    from numba import cuda

    try:
        if cuda.is_available():
            return tuple(cuda.get_current_device().compute_capability)
    except Exception:  # noqa: BLE001 - no driver
        pass
    return default


def ptx_text(modules, cc=None) -> str:
    """Every kernel's PTX of `modules` ((name prefix, source, signatures): a cluster's
    module and its while loops' modules), each headed by its name and signature."""
    cc = cc or device_capability()
    parts = []
    for prefix, source, signatures in modules:
        for name, ptx in ptx_of(source, signatures, cc).items():
            parts.append(f"// ---- {prefix}{name}: {signatures[name]} "
                         f"(sm_{cc[0]}{cc[1]})\n{ptx}")
    return "\n".join(parts)
