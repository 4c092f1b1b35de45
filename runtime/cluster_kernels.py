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
import weakref

from .. import dtypes
from ..compiler.lowering import NotLowerable
from ..compiler.pipeline import compile_cluster
from . import compile_queue
from .config import JitPolicy
from .targets import get_target

log = logging.getLogger("flowjit.jit")

SLOWER_MARGIN = 1.1  # a new kernel slower than this times the best reference run is dropped


class ClusterKernels:
    """Compiled kernels of one cluster, per signature, with what the policy needs to know:
    each signature's reference runs and time, its queued compile, its trial timings."""

    def __init__(self, name: str):
        self.name = name
        self.lock = threading.Lock()
        self.runs: collections.Counter = collections.Counter()      # signature -> runs
        self.seconds: collections.Counter = collections.Counter()   # ... -> reference time
        self.best_reference: dict = {}   # signature -> fastest reference run (seconds)
        self.entries: dict = {}   # signature -> CompiledCluster, or None (reference kernels)
        self.ready: dict = {}     # signature -> a background compile's result, to install
        self.queued: set = set()  # signatures handed to the background compiler
        self.trials: dict = {}    # signature -> timings of a new kernel's first runs
        self.decisions: dict = {}  # signature -> how it runs and why (explain())
        self.compile_count = 0
        self.compiled_runs = 0   # calls served by a compiled kernel (a statistic for tests)

    def entry(self, step, arrays, key, strict: bool = False):
        """The compiled kernel for these inputs, or None to run the reference kernels."""
        entry = self.entries.get(key, False)
        if entry is not False:
            return entry
        with self.lock:
            if key in self.entries:
                return self.entries[key]
            options = step.options
            if options.policy is JitPolicy.ALWAYS:
                self.entries[key] = entry = self._compile(step, _specs(arrays), key, strict)
                return entry
            if key in self.ready:        # a background compile finished: swap it in now
                return self._install(step, key, self.ready.pop(key))
            self.runs[key] += 1
            if self.runs[key] == 1 and options.from_cache:
                found = self._compile(step, _specs(arrays), key, strict, cached_only=True)
                if found is not None or key in self.entries:   # cached, or not lowerable
                    self.entries[key] = found
                    if found is not None:
                        self.decisions[key] = "compiled kernel from the kernel cache"
                    return found
            if (key not in self.queued
                    and self.runs[key] - 1 >= options.background_after_runs
                    and self.seconds[key] >= options.background_after_seconds):
                self._queue(step, _specs(arrays), key, strict)
            return None

    def interpreted(self, key, seconds: float) -> None:
        """Account one run of `key` with the reference kernels."""
        self.seconds[key] += seconds
        best = self.best_reference.get(key)
        if best is None or seconds < best:
            self.best_reference[key] = seconds

    def _queue(self, step, specs, key, strict: bool) -> None:
        """Hand `key`'s compile to the background compiler."""
        self.queued.add(key)
        ref = weakref.ref(step)

        def work():
            alive = ref()
            return None if alive is None else self._compile(alive, specs, key, strict)

        def done(result):
            with self.lock:
                if key not in self.entries:
                    self.ready[key] = result

        compile_queue.submit(compile_queue.Job(
            work=work, done=done, alive=lambda: ref() is not None,
            priority=lambda: self.seconds[key]))

    def _install(self, step, key, compiled):
        """Swap the background compile's result in for `key` (None: reference kernels)."""
        self.entries[key] = compiled
        if compiled is not None:
            log.info("flowjit: %s (%s) now runs compiled, after %d reference runs",
                     self.name, step._op_names(), self.runs[key])
            if step.options.measure_runs > 0 and key in self.best_reference:
                self.trials[key] = (step.options.measure_runs, [])
            self.decisions[key] = "compiled kernel (compiled in the background)"
        return compiled

    def timed(self, key, seconds: float) -> None:
        """One timed run of a new kernel; after `measure_runs` of them, keep the faster."""
        with self.lock:
            runs, trial = self.trials.get(key, (0, None))
            if trial is None:
                return
            trial.append(seconds)
            if len(trial) < runs:
                return
            del self.trials[key]
            compiled, reference = min(trial), self.best_reference[key]
            if compiled > SLOWER_MARGIN * reference:
                self.entries[key] = None
                why = (f"reference kernels: faster than the compiled kernel "
                       f"({reference * 1e6:.1f} us against {compiled * 1e6:.1f} us per run)")
                log.info("flowjit: %s signature %s runs with %s", self.name, key, why)
            else:
                why = (f"compiled kernel: {compiled * 1e6:.1f} us per run against "
                       f"{reference * 1e6:.1f} us with the reference kernels")
            self.decisions[key] = why

    def _compile(self, step, specs, key, strict: bool, cached_only: bool = False):
        """The compiled kernel (None: reference kernels, recorded in `entries` when the
        cluster cannot be compiled); `cached_only`: look in the target's caches only."""
        try:
            compiled = compile_cluster(list(step.compiled_ops), list(step.inputs), specs,
                                       list(step.outputs), step.describe(),
                                       target=get_target(step.options.target),
                                       cached_only=cached_only)
        except NotLowerable as e:
            log.info("flowjit: %s (%s) runs with reference kernels: %s", self.name,
                     step._op_names(), e)
            self.entries[key] = None
            self.decisions[key] = f"reference kernels: {e}"
            return None
        except Exception as e:  # noqa: BLE001 - a compiler bug must not break the program
            if strict:
                raise
            log.warning("flowjit: compiling %s (%s) failed, using reference kernels: %r",
                        self.name, step._op_names(), e)
            self.entries[key] = None
            self.decisions[key] = f"reference kernels: the compiler failed ({e!r})"
            return None
        if compiled is None:
            return None
        self.compile_count += 1
        log.info("flowjit: compiled %s (%s) for signature %s", self.name, step._op_names(),
                 key)
        return compiled

    def give_up(self, key, reason: str):
        """Run this signature with reference kernels from now on (a compiler failure)."""
        self.entries[key] = None
        self.decisions[key] = f"reference kernels: {reason}"
        log.warning("flowjit: %s runs with reference kernels: %s", self.name, reason)


def _specs(arrays) -> list:
    """The compiler's input specs of a call: dtype and which sizes are 1, per array."""
    return [(dtypes.as_dtype(a.dtype), tuple(1 if d == 1 else None for d in a.shape))
            for a in arrays]
