"""The compiler pipeline: every stage, in order, by name; each can be dumped.

`compile_cluster(ops, inputs, specs, outputs, target=...)` lowers a cluster of graph ops to
kernel IR, runs the IR passes of `PASSES` in order, checks that the target renders every
node kind, scalar operation and dtype of the result, schedules (fusion and loop grouping,
then memory planning, with the target's `ScheduleOptions`) and hands the optimized program,
the schedule and the kernel signature to the target, which returns the compiled kernel.
`Stages` keeps the text of every stage (the target adds its own, such as the loop IR:
compiler/loop_ir.py); `FLOWJIT_DUMP=<dir>` writes them to files as they are produced
(docs/architecture.md, "The path of a computation").

The target is an argument, duck-typed: anything with the fields of the target protocol
(targets/target.py: `kind`, `capabilities.missing(program)`, `schedule_options`,
`compile(program, schedule, signature)`).  This module never imports a target (the layers
of docs/architecture.md); runtime/ picks one.
"""

from __future__ import annotations

import dataclasses
import os

from . import passes
from .flat_epilogues import flatten_product_epilogues
from .core import ir
from .core.ir_text import program_text
from .lowering import NotLowerable, lower_cluster
from .schedule import make_schedule
from .signature import signature_of
from .tiers import Tier

# The largest cluster (graph ops) and kernel (scalar operations, loop nests) handed to a
# target's compiler: numba's compile time grows faster than the source (measured: one loop
# nest of 900 operations compiled in 28 s, of 1500 in 41 s; 27 small nests in 18 s, 66 in
# over a minute), and lowering and the passes cost about a millisecond per op.  Larger ones
# raise NotLowerable up front, so a Session runs them with reference kernels and `jit` as
# plain Python, with the reason logged.
MAX_CLUSTER_OPS = 20_000
MAX_KERNEL_OPERATIONS = 5_000
MAX_LOOP_NESTS = 128

PASSES = (
    ("constant_fold", passes.constant_fold),
    ("simplify", passes.simplify),
    ("flat_epilogues", flatten_product_epilogues),
    ("cse", passes.eliminate_common_subexpressions),
    ("dce", passes.eliminate_dead_code),
)


@dataclasses.dataclass
class Stages:
    """Readable text of each pipeline stage, in order."""

    items: list = dataclasses.field(default_factory=list)

    def add(self, name: str, text):
        """Record stage `name`; `text` may be a function giving it, called when the text
        is first wanted (a stage that costs work to print, skipped on a cache hit)."""
        self.items.append((name, text))
        dump_dir = os.environ.get("FLOWJIT_DUMP")
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            index = len(self.items)
            if callable(text):   # dumping wants it now
                text = text()
                self.items[-1] = (name, text)
            with open(os.path.join(dump_dir, f"{index:02d}_{name}.txt"), "w") as f:
                f.write(text + "\n")

    def text(self, name: str) -> str:
        for k, (n, t) in enumerate(self.items):
            if n == name:
                if callable(t):
                    t = t()
                    self.items[k] = (n, t)
                return t
        raise KeyError(name)

    def __str__(self):
        return "\n\n".join(f"=== {n} ===\n{self.text(n)}" for n, _ in self.items)


@dataclasses.dataclass
class CompiledCluster:
    """A compiled cluster: call `kernel(*inputs, *constants)` to get a tuple of outputs.

    `target`: the kind of target that built it (targets/target.py `TargetKind`);
    `metadata`: what the target says about the kernel (its cache key among them)."""

    kernel: object
    source: str
    constants: list
    stages: Stages
    schedule: object
    target: object = None
    metadata: dict = dataclasses.field(default_factory=dict)


def optimize(program, stages: Stages):
    """Run every IR pass in order, recording each result."""
    for name, fn in PASSES:
        program = fn(program)
        stages.add(name, program_text(program))
    return program


def schedule_text(schedule) -> str:
    lines = ["fusion and grouping decisions:"] + [f"  {n}" for n in schedule.notes]
    for gi, g in enumerate(schedule.groups):
        members = ", ".join(m.name + (" (register)" if id(m) in schedule.local else "")
                            for m in g.members)
        # (whether a nest runs in parallel is the target's choice, shown in its source)
        lines.append(f"loop nest {gi} [{g.kind}] outer dims {len(g.outer)}: {members}")
    return "\n".join(lines)


def compile_program(program, constants=(), stages: Stages | None = None, *, target,
                    cached_only: bool = False, tier: Tier = Tier.OPTIMIZED,
                    isolated: bool = False):
    """Optimize and schedule a kernel-IR program, and compile it with `target` (a target
    protocol object: module docstring).  NotLowerable when the target cannot render it.
    cached_only: return the kernel only if the target has it without compiling (its
    caches: `Target.lookup`), else None.  tier: how much the target optimizes
    (compiler/tiers.py); with `cached_only`, a tuple of tiers asks for each in turn.  isolated: compile in a separate process where the target can
    (the background compiles of the tiered policy: they must not hold this process's GIL)."""
    stages = stages if stages is not None else Stages()
    program = optimize(program, stages)
    program, constants = drop_unused_constants(program, list(constants))
    missing = target.capabilities.missing(program)
    if missing:
        raise NotLowerable(f"the {target.kind.value} target cannot run this cluster: {missing}")
    schedule = make_schedule(program, target.schedule_options)
    stages.add("schedule", schedule_text(schedule))
    _check_size(schedule, target)
    if cached_only:   # `tier` may be several: the first the target has
        for one in (tier if isinstance(tier, tuple) else (tier,)):
            compiled = target.lookup(program, schedule, signature_of(program), tier=one)
            if compiled is not None:
                break
    else:
        compiled = target.compile(program, schedule, signature_of(program), tier=tier,
                                  isolated=isolated)
    if compiled is None:
        return None
    for name, text in compiled.stages:
        stages.add(name, text)
    stages.add("source", compiled.source)
    return CompiledCluster(compiled.kernel, compiled.source, list(constants), stages, schedule,
                           target.kind, dict(compiled.metadata))


def _check_size(schedule, target) -> None:
    """NotLowerable for a kernel too large to hand to the target's compiler (see
    MAX_KERNEL_OPERATIONS)."""
    size, nests = kernel_operations(schedule), len(schedule.groups)
    if size > MAX_KERNEL_OPERATIONS or nests > MAX_LOOP_NESTS:
        raise NotLowerable(f"the kernel would have {size} scalar operations in {nests} loop "
                           f"nests, more than the {MAX_KERNEL_OPERATIONS} operations or "
                           f"{MAX_LOOP_NESTS} nests the {target.kind.value} target is asked "
                           "to compile (its compile time grows faster than the kernel)")


def kernel_operations(schedule) -> int:
    """The scalar operations in a schedule's loop nests (each distinct one per materialized
    node's resolved body): about the statements a target renders."""
    return sum(sum(1 for e in ir.walk(body) if e.args)
               for body in schedule.resolved.values() if body is not None)


def drop_unused_constants(program, constants: list):
    """(program, constants) without the constant inputs no node reads any more (e.g. the
    paddings of a Pad, read while lowering), so the kernel takes only the arrays it uses.
    Constants are the last inputs; kept inputs keep their positions (and parameter names)."""
    n_user = len(program.inputs) - len(constants)
    used = {id(n) for n in program.nodes()}
    for cond, _ in program.checks:
        used.update(id(e.attr) for e in ir.walk(cond) if e.op is ir.Scalar.LOAD)
    keep = [k for k in range(len(constants)) if id(program.inputs[n_user + k]) in used]
    if len(keep) == len(constants):
        return program, constants
    inputs = list(program.inputs[:n_user]) + [program.inputs[n_user + k] for k in keep]
    return (ir.Program(inputs, program.outputs, program.checks, program.donated),
            [constants[k] for k in keep])


def compile_cluster(ops, input_tensors, input_specs, output_tensors, graph_text: str = "",
                    donated=(), *, target, cached_only: bool = False,
                    tier: Tier = Tier.OPTIMIZED, isolated: bool = False):
    """Lower one cluster of graph ops and compile it with `target` (see compile_program;
    `cached_only`: None unless the target has the kernel without compiling).
    `donated`: (input position, output index) pairs whose input arrays the caller lets the
    kernel overwrite with that output (ir.Program.donated)."""
    if len(ops) > MAX_CLUSTER_OPS:   # refused before lowering (see MAX_CLUSTER_OPS)
        raise NotLowerable(f"the cluster has {len(ops)} ops, more than the "
                           f"{MAX_CLUSTER_OPS} compiled as one kernel")
    stages = Stages()
    if graph_text:
        stages.add("graph", graph_text)
    program, constants = lower_cluster(ops, input_tensors, input_specs, output_tensors)
    if donated:
        program = ir.Program(program.inputs, program.outputs, program.checks, donated)
    stages.add("lowered", program_text(program))
    return compile_program(program, [c for _, c in constants], stages, target=target,
                           cached_only=cached_only, tier=tier, isolated=isolated)
