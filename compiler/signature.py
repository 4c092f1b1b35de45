"""The signature a target compiles a kernel for: what its arguments and results look like.

A `KernelSignature` is derived from an optimized `Program` alone (`signature_of`): per input
its dtype and static shape (ints where the size is fixed, such as 1, None where it is a
run-time value), per output its dtype and rank, and the donated (input, output) pairs.  The
pipeline hands it to the target with the program and the schedule (targets/target.py, the
target protocol; docs/architecture.md, "Layers"), so a target can check and key what it
builds without walking the IR again.

Invariant: two programs with equal signatures take arguments of the same dtypes and ranks
and return results of the same dtypes and ranks; sizes are never part of it (one kernel
serves every size).
"""

from __future__ import annotations

import dataclasses

from .core.ir import Program


@dataclasses.dataclass(frozen=True)
class KernelSignature:
    """inputs: ((dtype, static shape), ...) by position; outputs: ((dtype, rank), ...);
    donated: ((input position, output index), ...) as in `Program.donated`."""

    inputs: tuple
    outputs: tuple
    donated: tuple = ()

    def describe(self) -> str:
        """A short text, e.g. `(float32[?, 1], int64[]) -> (float32 rank 2)`."""
        def dims(shape):
            return ", ".join("?" if d is None else str(d) for d in shape)

        ins = ", ".join(f"{dt.name}[{dims(shape)}]" for dt, shape in self.inputs)
        outs = ", ".join(f"{dt.name} rank {rank}" for dt, rank in self.outputs)
        return f"({ins}) -> ({outs})"


def signature_of(program: Program) -> KernelSignature:
    """The signature of `program`'s kernel (module docstring)."""
    return KernelSignature(
        inputs=tuple((n.dtype, tuple(n.attr[1])) for n in program.inputs),
        outputs=tuple((n.dtype, len(n.shape)) for n in program.outputs),
        donated=tuple(program.donated))
