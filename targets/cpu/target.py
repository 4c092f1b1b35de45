"""The CPU target's instance of the target protocol (targets/target.py): numba, one function
per cluster.

A thin adapter: `compile_kernel` keys the program (build.kernel_key: the IR, the CPU
options, the target's name, the tool versions), takes the kernel from the in-memory or disk
cache or generates its source (codegen.py: loop program, CPU loop passes, rendering) and
builds it with numba (build.py).  The loop IR is reported as a stage of its own, built only
when someone reads it for a kernel loaded from the cache.

CPU-specific choices the target-neutral schedule makes only on request are requested here
(`SCHEDULE_OPTIONS`): column reductions get a loop nest of their own, which codegen
interchanges (rows outside, contiguous columns inside), and GEMM epilogues are looked for
(its GEMM applies bias and relu to tiles in registers).  numba has no float16 arithmetic on
the CPU, so float16 is not among the capabilities: such clusters run with the ops' reference
kernels.
"""

from __future__ import annotations

from ...compiler.schedule import ScheduleOptions
from ...compiler.tiers import Tier
from ..target import (ALL_COMBINERS, ALL_NODE_KINDS, ALL_ROUTINES, ALL_SCALAR_OPS,
                     COMPLEX_DTYPES, Capabilities, CompiledKernel, REAL_DTYPES, Target,
                     TargetKind)
from . import cache, native
from .build import build_cached, cached, kernel_key

SCHEDULE_OPTIONS = ScheduleOptions(column_reductions=True, gemm_epilogues=True)

CAPABILITIES = Capabilities(node_kinds=ALL_NODE_KINDS, scalar_ops=ALL_SCALAR_OPS,
                            combiners=ALL_COMBINERS, routines=ALL_ROUTINES,
                            dtypes=(REAL_DTYPES | COMPLEX_DTYPES) - {"float16"})


def cache_key(program, signature) -> str:
    """The CPU kernel's cache key (the disk cache's, build.kernel_key); the signature is
    part of the IR's fingerprint (every input's dtype and rank, the donated pairs)."""
    return kernel_key(program)[0]


def render(program, schedule, signature) -> str:
    """The numba source generated for `schedule` (nothing is compiled)."""
    return _generate(schedule, Tier.OPTIMIZED, {})


def compile_kernel(program, schedule, signature, tier: Tier = Tier.OPTIMIZED,
                   isolated: bool = False) -> CompiledKernel:
    """The numba kernel of `program` at `tier`, through the kernel caches (build.py);
    `isolated`: compiled by the compile worker process (compile_worker.py) when a disk
    cache is there to hand the kernel back through.  A QUICK kernel whose source is the
    OPTIMIZED one (static small sizes, no products) is built and reported as OPTIMIZED
    (metadata "tier"), so the runtime does not compile it twice."""
    generated: dict = {}
    sources: dict = {}   # tier -> source, each generated at most once

    def source_of(which: Tier) -> str:
        if which not in sources:
            sources[which] = _generate(schedule, which, generated if which is tier else {})
        return sources[which]

    if tier is Tier.QUICK and source_of(Tier.QUICK) == source_of(Tier.OPTIMIZED):
        tier = Tier.OPTIMIZED   # nothing to leave out: the quick kernel is the optimized one
    keyed = kernel_key(program, tier)
    kernel, source = build_cached(program, lambda: source_of(tier), keyed, isolated=isolated)
    loop_ir = generated.get("loop IR") or (lambda: _loop_ir_text(schedule, tier))
    return CompiledKernel(kernel, source, stages=(("loop IR", loop_ir),),
                          metadata={"target": TargetKind.CPU.value, "cache_key": keyed[0],
                                    "tier": tier.value})


def lookup_kernel(program, schedule, signature,
                  tier: Tier = Tier.OPTIMIZED) -> CompiledKernel | None:
    """The kernel of `program` at `tier` if this process built it or the disk cache holds
    it (nothing is compiled; numba is not imported), else None."""
    keyed = kernel_key(program, tier)
    hit = cached(*keyed)
    if hit is None:
        return None
    kernel, source = hit
    return CompiledKernel(kernel, source,
                          stages=(("loop IR", lambda: _loop_ir_text(schedule, tier)),),
                          metadata={"target": TargetKind.CPU.value, "cache_key": keyed[0],
                                    "tier": tier.value})


def _generate(schedule, tier: Tier, stages: dict) -> str:
    # lazy on purpose: codegen imports numba, which a process loading every kernel from
    # the disk cache never needs (build.py)
    from .codegen import generate_source  # lazy: that module imports numba

    return generate_source(schedule, stages=stages, tier=tier)


def _loop_ir_text(schedule, tier: Tier) -> str:
    """The loop IR of a kernel loaded from the cache, built when someone asks for it."""
    generated: dict = {}
    _generate(schedule, tier, generated)
    return generated["loop IR"]


TARGET = Target(kind=TargetKind.CPU, capabilities=CAPABILITIES,
                schedule_options=SCHEDULE_OPTIONS, compile=compile_kernel,
                cache_key=cache_key, render=render, lookup=lookup_kernel,
                description="numba: one generated function per cluster",
                isolates_compiles=lambda: cache.cache_dir() is not None,
                set_thread_count=native.set_thread_count,
                concurrent_launches=native.concurrent_launches)
