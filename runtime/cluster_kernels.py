"""The compile policy of one cluster: its kernels per input signature and the tiers.

`ClusterKernels` (one per cluster and boundary, shared by every session and plan of a
graph: runtime/clustering.py's `_shared_kernels`) decides, per signature, whether the
cluster's compiled kernel or its ops' reference kernels run a step, as the JitPolicy says
(runtime/config.py; the tiers are explained in runtime/clustering.py's docstring and in
docs/architecture.md): compile before the first run ("always"), or look the kernel up in the
target's caches on the first run, queue a background compile once the signature is hot
(runtime/compile_queue.py), install the result between two runs, and time the new kernel's
first runs against the reference kernels, keeping the faster ("auto").
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import weakref

from .. import dtypes
from ..compiler.lowering import NotLowerable
from .trace_events import record_compile
from ..compiler.pipeline import compile_cluster
from . import compile_queue
from .config import JitPolicy
from ..compiler.tiers import Tier
from .targets import get_target

log = logging.getLogger("flowjit.jit")

SLOWER_MARGIN = 1.1  # a new kernel slower than this times the best reference run is dropped


class ClusterKernels:
    """Compiled kernels of one cluster, per signature, with what the policy needs to know:
    each signature's reference runs and time, its queued compiles, its trial timings."""

    def __init__(self, name: str):
        self.name = name
        self.lock = threading.Lock()
        self.runs: collections.Counter = collections.Counter()      # signature -> runs
        self.seconds: collections.Counter = collections.Counter()   # ... -> reference time
        self.best: dict = {}      # signature -> fastest run of what runs it now (seconds)
        self.entries: dict = {}   # signature -> CompiledCluster, or None (reference kernels)
        self.tiers: dict = {}     # signature -> Tier of its compiled kernel
        self.ready: dict = {}     # signature -> [(tier, result)] of background compiles
        self.queued: set = set()  # (signature, tier) handed to the background compiler
        self.specs: dict = {}     # signature -> the compiler's input specs
        self.final: set = set()   # signatures that run with reference kernels for good
        self.trials: dict = {}    # signature -> (runs, timings, entry replaced, its tier)
        self.challengers: dict = {}  # signature -> [runs left, step, specs]: its quick
                                     # kernel, looked up in the cache and tried after them
        self.decisions: dict = {}  # signature -> how it runs and why (explain())
        self.compile_seconds: dict = {}   # signature -> {tier name: seconds to compile}
        self.compile_count = 0
        self.compiled_runs = 0   # calls served by a compiled kernel (a statistic for tests)

    def entry(self, step, arrays, key, strict: bool = False):
        """The compiled kernel for these inputs, or None to run the reference kernels."""
        if key not in self.ready:
            entry = self.entries.get(key, False)
            if entry is not False:
                return entry
        with self.lock:
            if key in self.ready:        # a background compile finished: swap it in now
                for tier, result in self.ready.pop(key):
                    self._install(step, key, tier, result)
                return self.entries.get(key)
            if key in self.entries:
                return self.entries[key]
            options = step.options
            if options.policy is JitPolicy.ALWAYS:
                self.entries[key] = entry = self._compile(step, _specs(arrays), key, strict)
                self._record_tier(key, entry)
                return entry
            self.runs[key] += 1
            if self.runs[key] == 1 and options.from_cache:
                found = self._from_cache(step, _specs(arrays), key, strict)
                if found is not None or key in self.entries:   # cached, or not lowerable
                    return found
            tier = Tier.QUICK if options.quick_tier else Tier.OPTIMIZED
            if ((key, tier) not in self.queued
                    and self.runs[key] - 1 >= options.background_after_runs
                    and self.seconds[key] >= options.background_after_seconds):
                self._queue(step, _specs(arrays), key, tier, strict)
            return None

    def _from_cache(self, step, specs, key, strict: bool):
        """The optimized kernel, else the quick one, if the target has it without compiling;
        running a quick one queues the optimized compile."""
        tiers = (Tier.OPTIMIZED, Tier.QUICK) if step.options.quick_tier else (Tier.OPTIMIZED,)
        found = self._compile(step, specs, key, strict, cached_only=True, tier=tiers)
        if found is None:   # not there (or not lowerable: reference kernels, recorded)
            return None
        self.entries[key] = found
        self._record_tier(key, found)
        self.decisions[key] = f"compiled kernel ({self.tiers[key].value} tier) from " \
                              "the kernel cache"
        if self.tiers[key] is Tier.QUICK:
            self._queue(step, specs, key, Tier.OPTIMIZED, strict)
        elif step.options.quick_tier and step.options.measure_runs > 0:
            # the quick kernel, if cached too, can be the faster one (small sizes, where the
            # optimized kernel's parallel loops and run-time tests cost more than they
            # save): after the optimized kernel's first runs it is looked up and tried
            # (then, not now: the lookup lowers the cluster again, ~0.1 s)
            self.challengers[key] = [step.options.measure_runs, weakref.ref(step), specs]
        return found

    def interpreted(self, key, seconds: float) -> None:
        """Account one run of `key` with the reference kernels."""
        self.seconds[key] += seconds
        best = self.best.get(key)
        if best is None or seconds < best:
            self.best[key] = seconds

    def _queue(self, step, specs, key, tier: Tier, strict: bool) -> None:
        """Hand `key`'s compile at `tier` to the background compiler (a worker process
        compiles it where the target can: Target.compile's `isolated`)."""
        self.queued.add((key, tier))
        ref = weakref.ref(step)

        def work():
            alive = ref()
            return None if alive is None else self._compile(alive, specs, key, strict,
                                                            tier=tier, isolated=True)

        def done(result):
            with self.lock:
                if key not in self.final:
                    self.ready.setdefault(key, []).append((tier, result))

        compile_queue.submit(compile_queue.Job(
            work=work, done=done, alive=lambda: ref() is not None,
            priority=lambda: self.seconds[key] / (1 if tier is Tier.QUICK else 2),
            isolated=get_target(step.options.target).isolates_compiles()))

    def _install(self, step, key, tier: Tier, compiled) -> None:
        """Swap a background compile's result in for `key` (None: nothing to install)."""
        if compiled is None:
            return
        previous, previous_tier = self.entries.get(key), self.tiers.get(key)
        self.entries[key] = compiled
        self._record_tier(key, compiled)
        new_tier = self.tiers[key]
        was = "reference kernels" if previous is None else f"its {previous_tier.value} kernel"
        log.info("flowjit: %s (%s) now runs its %s compiled kernel, after %d runs with %s",
                 self.name, step._op_names(), new_tier.value, self.runs[key], was)
        if step.options.measure_runs > 0 and key in self.best:
            self.trials[key] = (step.options.measure_runs, [], previous, previous_tier)
        self.decisions[key] = f"compiled kernel ({new_tier.value} tier, compiled in the " \
                              "background)" if previous_tier is not Tier.OPTIMIZED else \
            f"compiled kernel ({new_tier.value} tier, from the kernel cache, on trial)"
        specs = self.specs.get(key)
        if new_tier is Tier.QUICK and previous_tier is not Tier.OPTIMIZED and \
                specs is not None and (key, Tier.OPTIMIZED) not in self.queued:
            self._queue(step, specs, key, Tier.OPTIMIZED, False)   # next, while this runs

    def _record_tier(self, key, compiled) -> None:
        if compiled is not None:
            self.tiers[key] = Tier(compiled.metadata.get("tier", Tier.OPTIMIZED.value))

    def timed(self, key, seconds: float) -> None:
        """One timed run of a compiled kernel.  A new kernel is on trial: after
        `measure_runs` runs, the faster of it and what ran before (the reference kernels or
        the quick kernel) is kept."""
        if key not in self.trials:   # the kernel that runs now: its best time
            best = self.best.get(key)
            if best is None or seconds < best:
                self.best[key] = seconds
            challenger = self.challengers.get(key)
            if challenger is not None:
                challenger[0] -= 1
                if challenger[0] <= 0:
                    self._challenge(key, *challenger[1:])
            return
        with self.lock:
            runs, trial, previous, previous_tier = self.trials.get(key, (0, None, None, None))
            if trial is None:
                return
            trial.append(seconds)
            if len(trial) < runs:
                return
            del self.trials[key]
            new, old = min(trial), self.best[key]
            tier = self.tiers[key]
            was = "the reference kernels" if previous is None else \
                f"the {previous_tier.value} compiled kernel"
            if new > SLOWER_MARGIN * old:
                self.entries[key] = previous
                if previous is None:
                    self.tiers.pop(key, None)
                else:
                    self.tiers[key] = previous_tier
                why = (f"{was}: faster than the {tier.value} compiled kernel "
                       f"({old * 1e6:.1f} us against {new * 1e6:.1f} us per run)")
                log.info("flowjit: %s signature %s runs with %s", self.name, key, why)
            else:
                self.best[key] = new
                why = (f"compiled kernel ({tier.value} tier): {new * 1e6:.1f} us per run "
                       f"against {old * 1e6:.1f} us with {was}")
            if previous_tier is Tier.OPTIMIZED:
                why += "; both tiers from the kernel cache"
            self.decisions[key] = why

    def _challenge(self, key, step_ref, specs) -> None:
        """Look up the quick kernel of `key` in the caches and, if it is there (and differs
        from the optimized one), hand it to entry() to install on trial before the next run."""
        self.challengers.pop(key, None)
        step = step_ref()
        if step is None:
            return
        quick = self._compile(step, specs, key, False, cached_only=True, tier=Tier.QUICK,
                              count=False)
        if quick is not None and quick.metadata.get("tier") == Tier.QUICK.value:
            with self.lock:
                if key not in self.final:
                    self.ready.setdefault(key, []).append((Tier.QUICK, quick))

    def _compile(self, step, specs, key, strict: bool, cached_only: bool = False,
                 tier: Tier = Tier.OPTIMIZED, isolated: bool = False, count: bool = True):
        """The compiled kernel (None: reference kernels, recorded in `entries` when the
        cluster cannot be compiled); `cached_only`: look in the target's caches only;
        `count`: count it in compile_count (a challenger's lookup is not counted)."""
        self.specs[key] = specs
        started = time.perf_counter()
        try:
            compiled = compile_cluster(list(step.compiled_ops), list(step.inputs), specs,
                                       list(step.outputs), step.describe(),
                                       target=get_target(step.options.target),
                                       cached_only=cached_only, tier=tier, isolated=isolated)
        except NotLowerable as e:
            log.info("flowjit: %s (%s) runs with reference kernels: %s", self.name,
                     step._op_names(), e)
            self.final.add(key)
            self.entries[key] = None
            self.decisions[key] = f"reference kernels: {e}"
            return None
        except Exception as e:  # noqa: BLE001 - a compiler bug must not break the program
            if strict:
                raise
            log.warning("flowjit: compiling %s (%s) failed, using reference kernels: %r",
                        self.name, step._op_names(), e)
            if self.entries.get(key) is None:   # (a quick kernel running stays)
                self.final.add(key)
                self.entries[key] = None
                self.decisions[key] = f"reference kernels: the compiler failed ({e!r})"
            return None
        if compiled is None:
            return None
        if not cached_only:
            got = compiled.metadata.get("tier", Tier.OPTIMIZED.value)
            finished = time.perf_counter()
            self.compile_seconds.setdefault(key, {})[got] = finished - started
            record_compile(f"compile {self.name} ({step.options.target.name.lower()}, "
                           f"{got})", started, finished)
        self.compile_count += count
        log.info("flowjit: compiled %s (%s) for signature %s", self.name, step._op_names(),
                 key)
        return compiled

    def explain(self, key) -> str:
        """How signature `key` runs and why, with its compile times (a kernel from the
        cache took none; one in the compile worker is timed as this process waited)."""
        why = self.decisions.get(key, "reference kernels (not compiled yet)")
        times = self.compile_seconds.get(key)
        if times:
            why += "; compile time: " + ", ".join(f"{t} {s:.2f} s" for t, s in times.items())
        return why

    def give_up(self, key, reason: str):
        """Run this signature with reference kernels from now on (a compiler failure)."""
        self.final.add(key)
        self.entries[key] = None
        self.tiers.pop(key, None)
        self.decisions[key] = f"reference kernels: {reason}"
        log.warning("flowjit: %s runs with reference kernels: %s", self.name, reason)


def _specs(arrays) -> list:
    """The compiler's input specs of a call: dtype and which sizes are 1, per array."""
    return [(dtypes.as_dtype(a.dtype), tuple(1 if d == 1 else None for d in a.shape))
            for a in arrays]
