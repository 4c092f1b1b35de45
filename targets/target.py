"""The target protocol: what every code generator receives, returns, caches and can render.

A target turns one optimized kernel-IR program into a callable kernel (docs/architecture.md,
"Layers").  It is a `Target`: a small frozen record of data and plain functions, one
module-level instance per implementation (`targets/cpu/target.py`, `targets/reference/
target.py`); there are no target classes to subclass.  A new target (CUDA) is one more
instance and one more `TargetKind`; compiler/ does not change, and runtime/targets.py is
the only place that maps kinds to instances.

What a target receives (from compiler/pipeline.py, which never imports targets/):
- the optimized `Program` (compiler/core/ir.py), after every IR pass;
- the target-neutral `Schedule` (compiler/schedule.py), made with the target's own
  `schedule_options` (the hook through which a target asks for choices that pay off only
  on its kind of machine: column-reduction loop nests, GEMM epilogues);
- the `KernelSignature` (compiler/signature.py): input dtypes and static shapes, output
  dtypes and ranks, donated inputs.

What it returns: a `CompiledKernel` — `kernel(*inputs, *constants) -> tuple of outputs`
(C-contiguous arrays of the outputs' dtypes; a failed run-time check raises ValueError, a
singular matrix np.linalg.LinAlgError), its `source` text, extra pipeline `stages` (name,
text or a function giving the text) and `metadata` (at least "target" and "cache_key").

Its cache key: `cache_key(program, signature)` is a hex digest of everything the kernel
depends on — at least the target kind, the canonical IR (targets/fingerprint.py) and the
signature; a target adds its options and the versions of the tools it compiles with.
Kernel caches (in memory, on disk, and the runtime's per-signature tables) key on it, so
two targets never share a kernel.

Its capabilities: which node kinds, scalar operations, reduction combiners, library
routines and dtypes it renders.  The pipeline asks `capabilities.missing(program)` before
scheduling; a program that uses anything else runs with the ops' reference kernels
(NotLowerable), never half-compiled.

`render(program, schedule, signature)` gives the text a person reads for explain/dump (the
generated source) without building anything.

The `tier` (compiler/tiers.py) says how much to optimize: a QUICK kernel is the one that
compiles fastest, for the tiered policy's first compiled runs; tiers have their own cache
keys.  `isolated=True` asks the target to compile in a separate process where it can (the
tiered policy's background compiles: a compile holding this process's GIL would slow the
steps that run meanwhile); the kernel returned serves this process all the same.
`lookup(program, schedule, signature, tier)` returns the `CompiledKernel` when the target has it
without compiling (in memory or in its disk cache, or when building costs nothing, as for the
reference interpreter), else None.  The runtime's tiered policy (runtime/clustering.py) asks
it on a cluster's first run: a cached kernel runs from the first step, anything else is
compiled in the background.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Callable

from ..compiler.core import ir
from ..compiler.core.ir import Combiner, NodeKind, Program, Routine, Scalar
from ..compiler.schedule import ScheduleOptions
from ..compiler.signature import KernelSignature


class TargetKind(enum.Enum):
    """The targets flowjit knows; the API accepts their values as strings ("cpu")."""

    CPU = "cpu"
    REFERENCE = "reference"
    CUDA = "cuda"

    @classmethod
    def parse(cls, value) -> TargetKind:
        """`value` (a TargetKind or its name, any case) as a TargetKind; ValueError naming
        the known targets otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        known = ", ".join(repr(k.value) for k in cls)
        raise ValueError(f"unknown target {value!r}; flowjit's targets are {known}")


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a target renders; `missing(program)` names the first thing it does not."""

    node_kinds: frozenset
    scalar_ops: frozenset
    combiners: frozenset
    routines: frozenset
    dtypes: frozenset   # dtype names ("float32", "bool", ...), for nodes and expressions

    def missing(self, program: Program) -> str | None:
        """None when every node and expression of `program` is rendered, else a reason."""
        seen: set = set()
        for node in program.nodes():
            if node.kind not in self.node_kinds:
                return f"{node.kind.value} nodes ({node.name})"
            if node.dtype.name not in self.dtypes:
                return f"{node.dtype.name} values ({node.name})"
            if node.kind is NodeKind.REDUCE and node.attr not in self.combiners:
                return f"{node.attr.value} reductions ({node.name})"
            if node.kind is NodeKind.LIBCALL and node.attr not in self.routines:
                return f"the {node.attr.value} routine ({node.name})"
            if node.kind is NodeKind.WHILE:
                reason = self.missing(node.attr.cond) or self.missing(node.attr.body)
                if reason:
                    return f"{reason}, in while loop {node.name}"
            exprs = list(node.shape) + list(node.rshape)
            if node.body is not None:
                exprs.append(node.body)
            reason = self._exprs_missing(exprs, seen)
            if reason:
                return f"{reason} ({node.name})"
        return self._exprs_missing([cond for cond, _ in program.checks], seen)

    def _exprs_missing(self, exprs, seen: set) -> str | None:
        for root in exprs:
            for e in ir.walk(root):
                if id(e) in seen:
                    continue
                seen.add(id(e))
                if e.op not in self.scalar_ops:
                    return f"the scalar operation {e.op.value}"
                if e.dtype.name not in self.dtypes:
                    return f"{e.dtype.name} values"
        return None


ALL_NODE_KINDS = frozenset(NodeKind)
ALL_SCALAR_OPS = frozenset(Scalar)
ALL_COMBINERS = frozenset(Combiner)
ALL_ROUTINES = frozenset(Routine)
REAL_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                         "uint32", "uint64", "float16", "float32", "float64"})
COMPLEX_DTYPES = frozenset({"complex64", "complex128"})   # made only by ops that allow them
                                                          # (ops/lower_util.py: complex_ok)


@dataclasses.dataclass(frozen=True)
class CompiledKernel:
    """What `Target.compile` returns (module docstring)."""

    kernel: Callable
    source: str
    stages: tuple = ()          # ((name, text or a function giving it), ...)
    metadata: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Target:
    """One target: its kind, capabilities and schedule requests, and its functions.

    compile(program, schedule, signature, tier=Tier.OPTIMIZED, isolated=False)
        -> CompiledKernel
    cache_key(program, signature) -> str (hex digest)
    render(program, schedule, signature) -> str (the source a person reads)
    lookup(program, schedule, signature, tier=Tier.OPTIMIZED) -> CompiledKernel | None
        (no compiling)
    """

    kind: TargetKind
    capabilities: Capabilities
    schedule_options: ScheduleOptions
    compile: Callable
    cache_key: Callable
    render: Callable
    lookup: Callable
    description: str = ""
    isolates_compiles: Callable = lambda: False   # does compile(isolated=True) use another
    # process now (the CPU target: when a disk cache is there to hand the kernel back)
    set_thread_count: Callable = lambda count: None   # threads the kernels launched from
    # the calling thread may use (thread-local: a runtime device's share of the cores)
    concurrent_launches: Callable = lambda: True   # may kernels be called from several
    # threads at once (numba's workqueue threading layer: no)

    def __repr__(self):
        return f"<flowjit target {self.kind.value}>"


__all__ = ["ALL_COMBINERS", "ALL_NODE_KINDS", "ALL_ROUTINES", "ALL_SCALAR_OPS", "Capabilities",
           "CompiledKernel", "KernelSignature", "REAL_DTYPES", "ScheduleOptions", "Target",
           "TargetKind"]
