"""The reference target's instance of the target protocol (targets/target.py).

Compiling is free: the kernel is a closure that interprets the optimized program with
NumPy each time it is called (interpreter.py), so nothing is generated, built or cached on
disk.  Its capabilities are the whole kernel IR on real dtypes (float16 included: NumPy
computes it), every routine and combiner.  It asks the schedule for no target-specific
choice (`ScheduleOptions()`); the schedule still decides which donated argument a result
is written into, and the interpreter follows that, so a caller sees the same in-place
writes as from the CPU target.
"""

from __future__ import annotations

import hashlib

from ...compiler.core.ir_text import program_text
from ...compiler.schedule import ScheduleOptions
from ..fingerprint import ir_fingerprint
from ..target import (ALL_COMBINERS, ALL_NODE_KINDS, ALL_ROUTINES, COMPLEX_DTYPES,
                     Capabilities, CompiledKernel, REAL_DTYPES, Target, TargetKind)
from . import interpreter, scalars

FORMAT = "flowjit-reference-1"   # change when the interpreter's meaning of the IR changes


def cache_key(program, signature) -> str:
    """sha256 of the target, its format, the canonical IR and the signature."""
    text = "\n".join((TargetKind.REFERENCE.value, FORMAT, signature.describe(),
                      ir_fingerprint(program)))
    return hashlib.sha256(text.encode()).hexdigest()


def render(program, schedule, signature) -> str:
    """The "source" of a reference kernel: the program it interprets."""
    return ("# reference target: each node below is evaluated whole, in order, with NumPy\n"
            f"# (targets/reference/interpreter.py); signature {signature.describe()}\n"
            + program_text(program))


def compile_kernel(program, schedule, signature, tier=None, isolated=False) -> CompiledKernel:
    """A kernel interpreting `program` (nothing is built; the tier and isolation make no
    difference here)."""

    def kernel(*arrays):
        return interpreter.run(program, schedule, arrays)

    kernel.__name__ = kernel.__qualname__ = "reference_kernel"
    key = cache_key(program, signature)
    return CompiledKernel(kernel, render(program, schedule, signature),
                          metadata={"target": TargetKind.REFERENCE.value, "cache_key": key})


CAPABILITIES = Capabilities(node_kinds=ALL_NODE_KINDS, scalar_ops=scalars.SUPPORTED,
                            combiners=ALL_COMBINERS, routines=ALL_ROUTINES,
                            dtypes=REAL_DTYPES | COMPLEX_DTYPES)

TARGET = Target(kind=TargetKind.REFERENCE, capabilities=CAPABILITIES,
                schedule_options=ScheduleOptions(), compile=compile_kernel,
                cache_key=cache_key, render=render, lookup=compile_kernel,
                description="NumPy interpreter of the kernel IR (the oracle; no numba)")
