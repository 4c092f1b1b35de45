"""The CUDA target's instance of the target protocol (targets/target.py): numba-cuda, one
module of kernels and a host launcher per cluster.

`compile` generates the module (codegen.py) for the GPU or for numba-cuda's simulator,
whichever this process runs (build.simulator()), and returns a kernel whose call takes host
or device arrays and returns host arrays, as every target's kernel does; the runtime's GPU
device calls `kernel.on_device(*arrays, stream=...)` instead, which returns device arrays
(runtime/gpu_values.py).  Its capabilities leave out what it does not render: sorting and
LAPACK routines, complex and float16 values; the pipeline then runs such a
cluster with the reference kernels, and placement keeps such ops on the CPU.
"""

from __future__ import annotations

import hashlib

from ...compiler.core.ir import NodeKind
from ...compiler.schedule import ScheduleOptions
from ...compiler.tiers import Tier
from ..fingerprint import ir_fingerprint
from ..target import (ALL_COMBINERS, ALL_SCALAR_OPS, Capabilities, CompiledKernel,
                      REAL_DTYPES, Target, TargetKind)
from . import build
from .codegen import generate, generate_module

FORMAT = "flowjit-cuda-1"   # change when the generated code's meaning changes

CAPABILITIES = Capabilities(
    node_kinds=frozenset(NodeKind) - {NodeKind.LIBCALL},
    scalar_ops=ALL_SCALAR_OPS, combiners=ALL_COMBINERS, routines=frozenset(),
    dtypes=REAL_DTYPES - {"float16"})

SCHEDULE_OPTIONS = ScheduleOptions()   # no CPU-specific nests or GEMM epilogues


def cache_key(program, signature) -> str:
    """sha256 of the target, its format, GPU or simulator, numba-cuda's version, the
    signature and the canonical IR."""
    text = "\n".join((TargetKind.CUDA.value, FORMAT, str(build.simulator()), build.version(),
                      signature.describe(), ir_fingerprint(program)))
    return hashlib.sha256(text.encode()).hexdigest()


def render(program, schedule, signature) -> str:
    """The module generated for this process (GPU or simulator); nothing is compiled."""
    return generate(schedule, simulator=build.simulator())


class _Kernel:
    """A built module's `run`, callable as the protocol's kernel (host arrays out)."""

    __slots__ = ("run",)

    def __init__(self, run):
        self.run = run

    def on_device(self, *arrays, stream=0):
        """The outputs as device arrays (inputs: host or device arrays)."""
        build.require_device()
        return self.run(*arrays, stream=stream)

    def __call__(self, *arrays):
        build.require_device()
        outs = self.run(*arrays)
        return tuple(o.copy_to_host() for o in outs)


def compile_kernel(program, schedule, signature, tier: Tier = Tier.OPTIMIZED,
                   isolated: bool = False) -> CompiledKernel:
    """The kernel of `program`: one generated module for every tier (numba-cuda compiles
    each kernel on its first launch)."""
    key = cache_key(program, signature)
    simulated = build.simulator()
    source, signatures, nested = generate_module(schedule, simulator=simulated)
    run = build.build(key, source)
    modules = [("", source, signatures)] + list(nested)
    stages = () if simulated else (("ptx", lambda: build.ptx_text(modules)),)
    return CompiledKernel(_Kernel(run), source, stages=stages,
                          metadata={"target": TargetKind.CUDA.value, "cache_key": key,
                                    "tier": Tier.OPTIMIZED.value,
                                    "simulator": build.simulator()})


def lookup_kernel(program, schedule, signature, tier: Tier = Tier.OPTIMIZED):
    """The kernel when this process built it already, else None (nothing is compiled)."""
    key = cache_key(program, signature)
    run = build.cached(key)
    if run is None:
        return None
    return CompiledKernel(_Kernel(run), render(program, schedule, signature),
                          metadata={"target": TargetKind.CUDA.value, "cache_key": key,
                                    "tier": Tier.OPTIMIZED.value,
                                    "simulator": build.simulator()})


TARGET = Target(kind=TargetKind.CUDA, capabilities=CAPABILITIES,
                schedule_options=SCHEDULE_OPTIONS, compile=compile_kernel,
                cache_key=cache_key, render=render, lookup=lookup_kernel,
                description="numba-cuda: a module of kernels and a host launcher per cluster")
