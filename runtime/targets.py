"""Which target compiles a kernel: the one table from `TargetKind` to a target instance.

runtime/ is the only layer that picks a target (docs/architecture.md, "Layers"):
`flowjit.jit(fn, target=...)` and Session clustering (`JitOptions.target`) both resolve
their setting here.  Strings are accepted at the API ("cpu", "reference") and turned into a
`TargetKind` at once (`target_kind`); everything past the API passes the enum or the
target.  Adding a target (CUDA) adds one row to `_TARGETS`; compiler/ does not change.

- `cpu` (the default): numba, one generated function per cluster (targets/cpu/target.py);
- `reference`: the NumPy interpreter of the kernel IR, the oracle and the fallback
  (targets/reference/target.py); it never imports numba.
"""

from __future__ import annotations

from ..targets.cpu.build import wait_for_cache_writes
from ..targets.cpu.target import TARGET as CPU
from ..targets.cuda import build as cuda_build
from ..targets.cuda.target import TARGET as CUDA
from ..targets.reference.target import TARGET as REFERENCE
from ..targets.target import Target, TargetKind

DEFAULT = TargetKind.CPU

_TARGETS = {TargetKind.CPU: CPU, TargetKind.REFERENCE: REFERENCE, TargetKind.CUDA: CUDA}


def target_kind(value) -> TargetKind:
    """`value` (a TargetKind, a target or its name) as a TargetKind; ValueError otherwise."""
    if isinstance(value, Target):
        return value.kind
    return TargetKind.parse(value)


def get_target(value=DEFAULT) -> Target:
    """The target instance for `value` (a TargetKind or a name such as "reference");
    ImportError, saying what to install, for the CUDA target without numba-cuda."""
    kind = target_kind(value)
    if kind is TargetKind.CUDA and not cuda_build.installed():
        raise ImportError("target='cuda' needs numba-cuda, which is not installed: "
                          "pip install 'flowjit[cuda]' (or -e '.[cuda]' in a checkout)")
    return _TARGETS[kind]


def available() -> tuple:
    """The kinds of target this installation can compile for."""
    return tuple(_TARGETS)


def flush_caches() -> None:
    """Block until every kernel-cache entry this process started writing is on disk."""
    wait_for_cache_writes()
