"""`flowjit.jit`: trace a Python function once per signature, compile it, call it fast.

A `JitFunction` keeps one compiled entry per signature (compiler/tracing.py: dtype, rank
and which sizes are 1 per array; value per Python scalar), so new sizes reuse the kernel.
An entry is either one compiled cluster (the whole function became ONE numba function:
the call costs one dispatch) or, when some op cannot be compiled, the traced graph run by
the Session executor with reference kernels (logged once, with the reason).  The target
that compiles it is the function's own (`jit(fn, target="cpu" | "reference")`,
runtime/targets.py), so its entries never mix kernels of two targets.

Every compile is logged on the `flowjit.jit` logger with its reason (first call, or which
part of the signature changed).  `f.lower(*args)` returns the text of every stage.

Ordinary NumPy functions trace too (compiler/np_array.py): when the code reads an array's
size (`x.shape[0]`, `len(x)`, an in-place slice update) the function is retraced with exact
sizes and from then on compiles per shape (logged once). Arguments the function mutates
are written back after each call. When tracing meets something it cannot represent (a
GraphBreak: `if` on a traced value, `float(x)`, an unsupported NumPy function, ...), the
function runs as plain Python for that signature, with one warning naming the construct and
the line (as torch.compile reports graph breaks); `fallback=False` raises
`errors.UnimplementedError` instead.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time

import numpy as np

from ..compiler.core.ir import NodeKind
from ..compiler.lowering import NotLowerable
from ..compiler.np_array import GraphBreak, NeedsStaticShapes, TracedArray
from .report_html import lowered_html
from .jit_errors import (TOO_DEEP, InvalidIndexError, InvalidValueError,  # noqa: F401
                         as_numpy_error, failure_reason, internal_failure)
from ..compiler.pipeline import Stages, compile_cluster
from ..compiler.autograph import converted
from ..compiler.tracing import has_control_flow, live_ops, rebuild, signature_of, trace
from ..errors import InvalidArgumentError, UnimplementedError
from .config import ConfigProto, JitPolicy, jit_options
from .session import Session
from .targets import DEFAULT as DEFAULT_TARGET
from .targets import get_target, target_kind

log = logging.getLogger("flowjit.jit")
_IS_ONE = (1).__eq__
_TRUSTED = 0x101  # NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED (and dtype.isnative)
_SEEN_LIMIT = 256  # remembered argument layouts per function (then the memo starts over)
# timed calls of each kind before a new signature's kernel is kept (FLOWJIT_JIT_MEASURE_RUNS)
MEASURE_RUNS = int(os.environ.get("FLOWJIT_JIT_MEASURE_RUNS", "3") or 3)
SLOWER_MARGIN = 1.1  # a kernel slower than this times plain NumPy is dropped
STRICT = False  # tests: flowjit's own failures while tracing or compiling raise (no fallback)


def graph_text(graph, ops=None) -> str:
    """One line per op (of `ops`, default all the graph's): name = Type(inputs) -> dtype
    shape."""
    lines = []
    for op in (graph.get_operations() if ops is None else ops):
        ins = ", ".join(t.name for t in op.inputs)
        outs = ", ".join(f"{t.dtype.name}{t.shape}" for t in op.outputs)
        lines.append(f"{op.name} = {op.type}({ins}) -> {outs}")
    return "\n".join(lines)


class _Compiled:
    """An entry that runs one compiled kernel."""

    __slots__ = ("constants", "template", "out_constants", "cluster", "trace", "single",
                 "writebacks", "donated")
    python = False

    def __init__(self, cluster, tr):
        self.constants = tuple(cluster.constants)
        self.template = tr.template
        self.out_constants = tr.constants
        self.cluster = cluster
        self.trace = tr
        self.writebacks = tr.writebacks
        # arguments the kernel overwrites in place (a scatter into a donated argument)
        schedule = getattr(cluster, "schedule", None)
        reused = schedule.reuse.values() if schedule is not None else ()
        self.donated = tuple(sorted({n.attr[0] for n in reused if n.kind is NodeKind.INPUT}))
        self.single = self.template == ("t", 0) and not self.out_constants \
            and not self.writebacks

    def _unshared(self, arrays):
        """`arrays`, with a private copy of each donated argument that shares memory with
        another argument (the kernel would otherwise read what it has already written);
        the caller's array still receives the result through the write-back. A read-only
        donated argument is refused before the kernel could write into it."""
        arrays = list(arrays)
        for p in self.donated:
            if not arrays[p].flags.writeable:   # as NumPy's own write would fail
                raise ValueError(f"argument {p} is read-only, but the function assigns to it "
                                 "(assignment destination is read-only)")
            if any(j != p and isinstance(b, np.ndarray) and np.may_share_memory(arrays[p], b)
                   for j, b in enumerate(arrays)):
                arrays[p] = arrays[p].copy()
        return arrays

    def call_checked(self, arrays):
        """__call__ for arrays JitFunction's fast path has checked (layout flags, and dtype
        and rank through the signature): the kernel's trusted entry when it has one."""
        trusted = getattr(self.cluster.kernel, "call_trusted", None)
        if trusted is None:
            return self(arrays)
        given = arrays
        if self.donated:
            arrays = self._unshared(arrays)
        try:
            outs = trusted([*arrays, *self.constants] if self.constants else arrays)
        except np.linalg.LinAlgError:
            raise   # a singular matrix: NumPy's own error, as NumPy raises it
        except (ValueError, ZeroDivisionError) as e:
            raise as_numpy_error(f"{e} (in compiled function)") from None
        return self._finish(given, outs)

    def __call__(self, arrays):
        given = arrays
        if self.donated:
            arrays = self._unshared(arrays)
        try:
            outs = self.cluster.kernel(*arrays, *self.constants)  # swapped to the entry point
        except np.linalg.LinAlgError:
            raise
        except (ValueError, ZeroDivisionError) as e:
            raise as_numpy_error(f"{e} (in compiled function)") from None
        return self._finish(given, outs)

    def _finish(self, arrays, outs):
        if self.single:
            return outs[0]
        for arg, out in self.writebacks:
            target, value = arrays[arg], outs[out]
            if arg in self.donated and value.ctypes.data == target.ctypes.data:
                continue   # the kernel wrote into the argument itself
            np.copyto(target, value, casting="unsafe")
        return rebuild(self.template, list(outs), self.out_constants)


class _Interpreted:
    """An entry that runs the traced graph with the reference kernels."""

    python = False

    def __init__(self, tr, reason: str):
        self.trace = tr
        self.reason = reason
        self.session = Session(graph=tr.graph)

    def __call__(self, arrays):
        feeds = dict(zip(self.trace.placeholders, arrays))
        try:
            outs = self.session.run(self.trace.outputs, feeds)
        except InvalidArgumentError as e:
            if isinstance(e, (ValueError, IndexError)):
                raise
            raise as_numpy_error(e.message, e.node_def, e.op) from None
        outs = [np.asarray(o) if np.ndim(o) == 0 else o for o in outs]
        for arg, out in self.trace.writebacks:
            np.copyto(arrays[arg], outs[out], casting="unsafe")
        return rebuild(self.trace.template, outs, self.trace.constants)

    call_checked = __call__


class _Python:
    """An entry that runs the function as plain Python (after a graph break, or when it
    measured faster than its compiled kernel: `measured`)."""

    python = True

    def __init__(self, fn, reason: str, measured: bool = False):
        self.fn = fn
        self.reason = reason
        self.measured = measured
        self.trace = None

    def __call__(self, args):
        return self.fn(*args)

    call_checked = __call__


class _Trial:
    """A new compiled entry of ordinary NumPy code on trial: its first `runs` calls run the
    compiled kernel and the next `runs` the plain function, each timed, and then the
    faster is kept for good (`JitFunction._decide`): a user never pays
    for compiling code NumPy runs faster."""

    python = False

    def __init__(self, owner, key, compiled: _Compiled, runs: int):
        self.owner, self.key, self.compiled = owner, key, compiled
        self.trace = compiled.trace
        self.runs = runs
        self.times: tuple = ([], [])   # (compiled, plain Python) seconds per call

    def __call__(self, arrays):
        return self.compiled(arrays)

    def call_checked(self, args):
        return self.alternate(lambda: self.owner.fn(*args),
                              lambda: self.compiled.call_checked(args))

    def alternate(self, plain_call, compiled_call):
        """The result of `plain_call()` or `compiled_call()`, whichever's turn it is, timed;
        a plain call that raises is answered by the compiled kernel (which reports bad
        input as every other call does)."""
        kernel_times, python_times = self.times
        # the kernel's runs first, then the plain function's: alternating, each plain call
        # met the threads the kernel had just woken (measured: plain NumPy looked 1.3-2x
        # slower than when it runs call after call)
        plain = len(kernel_times) >= self.runs
        start = time.perf_counter()
        if plain:
            try:
                result = plain_call()
            except Exception:   # noqa: BLE001 - see above
                return compiled_call()
        else:
            result = compiled_call()
        (python_times if plain else kernel_times).append(time.perf_counter() - start)
        if len(python_times) >= self.runs:
            self.owner._decide(self)
        return result


def _aliased_writes(writebacks, arrays) -> bool:
    """Whether an argument the function writes to shares memory with another argument.

    NumPy then shows the write through the other argument (`a += 1` changes what `b.sum()`
    reads when b is a); a trace sees independent arrays, so such calls run as plain Python."""
    for p, _ in writebacks:
        written = arrays[p]
        for j, other in enumerate(arrays):
            if j != p and isinstance(other, np.ndarray) and \
                    np.may_share_memory(written, other):
                return True
    return False


def _untraceable_argument(args, kwargs):
    """The type of the first argument (also inside lists and tuples) that is not traced
    as a plain array: a TracedArray (a call inside another function's trace) or a proper
    ndarray subclass; None when there is none."""
    def find(a):
        if isinstance(a, TracedArray):
            return TracedArray
        if isinstance(a, np.ndarray):
            return None if type(a) is np.ndarray else type(a)
        if isinstance(a, (list, tuple)):
            for x in a:
                found = find(x)
                if found is not None:
                    return found
        return None

    for a in list(args) + list(kwargs.values()):
        found = find(a)
        if found is not None:
            return found
    return None


def _arrays(args, kwargs, static_names, originals=None):
    flat = []

    def visit(a):
        if isinstance(a, np.ndarray):
            if a.flags.num & _TRUSTED != _TRUSTED or not a.dtype.isnative:  # strided,
                # misaligned or byte-swapped: a C-ordered native copy
                a_copy = np.array(a, dtype=a.dtype.newbyteorder("="), order="C")
                flat.append(a_copy)
            else:
                flat.append(a)
            if originals is not None:
                originals.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x)

    for a in args:
        visit(a)
    for k in sorted(kwargs):
        if k not in static_names:
            visit(kwargs[k])
    return flat


class JitFunction:
    """A traced-and-compiled version of a Python function (see `flowjit.jit`)."""

    def __init__(self, fn, static_argnames=(), fallback=True, target=DEFAULT_TARGET,
                 measure_runs: int | None = None):
        self.fn = fn
        self.static_argnames = frozenset(static_argnames or ())
        self.fallback = fallback
        self.measure_runs = measure_runs
        self.target = get_target(target)   # a name is turned into the target at once
        self.exact_shapes = False   # set once the function reads sizes (NumPy-style code)
        self._entries: dict = {}
        # (dtype, shape, flags) of each positional array -> its entry's call_checked, for
        # calls whose arrays all passed the fast path's checks (C-contiguous, aligned, native)
        self._seen: dict = {}
        self.compile_count = 0
        # one trace and compile at a time: concurrent first calls from several threads would
        # otherwise race on exact_shapes and _entries (a thread tracing while another turned
        # exact_shapes on re-raised NeedsStaticShapes); calls of compiled signatures take no lock
        self._build_lock = threading.RLock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if not kwargs:
            # fastest path: these very dtypes, shapes and layout flags were seen before
            try:
                # the type too: a NumPy scalar (np.float64(5.0)) has the dtype, shape and
                # flags of a 0-d array, and an ndarray subclass those of an ndarray
                if len(args) == 1:
                    a = args[0]
                    seen = (type(a), a.dtype, a.shape, a.flags.num)
                elif len(args) == 2:
                    a, b = args
                    seen = (type(a), a.dtype, a.shape, a.flags.num,
                            type(b), b.dtype, b.shape, b.flags.num)
                else:
                    seen = tuple([(type(a), a.dtype, a.shape, a.flags.num) for a in args])
                call = self._seen.get(seen)
            except (AttributeError, TypeError, GraphBreak):   # GraphBreak: a traced array
                call = seen = None
            if call is not None:
                return call(args)
            # fast path: positional C-contiguous arrays (the common call), keyed cheaply
            # (C-contiguous, aligned, native byte order: what the kernel's trusted entry
            # needs beyond the dtype and rank in the key; anything else takes the slow path)
            try:
                if self.exact_shapes:
                    key = tuple([(a.dtype.char, a.shape) for a in args
                                 if type(a) is np.ndarray and
                                 a.flags.num & _TRUSTED == _TRUSTED and a.dtype.isnative])
                else:
                    key = tuple([(a.dtype.char, tuple(map(_IS_ONE, a.shape))) for a in args
                                 if type(a) is np.ndarray and
                                 a.flags.num & _TRUSTED == _TRUSTED and a.dtype.isnative])
            except (AttributeError, GraphBreak):
                key = None
            if key is not None and len(key) == len(args):
                entry = self._entries.get(key)
                if entry is not None:
                    call = self._fast_caller(entry)
                    if seen is not None:
                        if len(self._seen) >= _SEEN_LIMIT:
                            self._seen.clear()
                        self._seen[seen] = call
                    return call(args)
        untraceable = _untraceable_argument(args, kwargs)
        if untraceable is TracedArray:
            # called while another jitted function is being traced: trace through this
            # one's body too (its control flow converted), so the outer kernel includes it
            return converted(self.fn)(*args, **kwargs)
        if untraceable is not None:
            return self._run_subclass(untraceable, args, kwargs)
        key = signature_of(args, kwargs, self.static_argnames, self.exact_shapes)
        entry = self._entries.get(key)
        if entry is None:
            entry, key = self._build(key, args, kwargs)
        if entry.python:
            return self.fn(*args, **kwargs)
        if type(entry) is _Trial:
            return entry.alternate(lambda: self.fn(*args, **kwargs),
                                   lambda: self._call_entry(entry.compiled, args, kwargs))
        return self._call_entry(entry, args, kwargs)

    def _call_entry(self, entry, args, kwargs):
        """A call of a compiled or interpreted entry through the general path (keyword
        arguments, nested lists, strided arrays, arguments written to)."""
        originals: list = []
        arrays = _arrays(args, kwargs, self.static_argnames, originals)
        if not getattr(entry.trace, "writebacks", None):
            return entry(arrays)
        if _aliased_writes(entry.trace.writebacks, originals):
            return self.fn(*args, **kwargs)
        result = entry(arrays)
        for arg, _ in entry.trace.writebacks:
            if arrays[arg] is not originals[arg]:
                np.copyto(originals[arg], arrays[arg])
        return result

    def _run_subclass(self, subclass, args, kwargs):
        """An ndarray subclass argument (np.ma.MaskedArray, np.matrix, ...) changes what
        NumPy's operations mean (masks, matrix products), which a trace of plain arrays
        would silently drop: the call runs as plain Python (fallback=False: an error)."""
        why = (f"argument of type {subclass.__module__}.{subclass.__qualname__}, an "
               "ndarray subclass whose operations differ from ndarray's")
        if not self.fallback:
            raise UnimplementedError(None, None, f"flowjit.jit cannot trace "
                                     f"{self.__name__}: {why}; pass np.asarray(x) to "
                                     "compile it as a plain array")
        log.info("flowjit.jit: %s runs as plain Python: %s", self.__name__, why)
        return self.fn(*args, **kwargs)

    def _fast_caller(self, entry):
        """entry.call_checked, guarded for a function that writes to its arguments: a call
        whose written argument shares memory with another argument runs as plain Python."""
        writes = getattr(entry.trace, "writebacks", None)
        if not writes:
            return entry.call_checked
        fn, call = self.fn, entry.call_checked

        def guarded(arrays):
            return fn(*arrays) if _aliased_writes(writes, arrays) else call(arrays)

        return guarded

    def _reason(self, key) -> str:
        if not self._entries:
            return "first call"
        for old in self._entries:
            if len(old) != len(key):
                continue
            diffs = [f"argument {i}: {o} -> {n}" for i, (o, n) in enumerate(zip(old, key))
                     if o != n]
            if diffs:
                return "new signature (" + "; ".join(diffs) + ")"
        return "new signature"

    def _trace(self, key, args, kwargs):
        """(trace or None, key): retraces with exact sizes when the code reads them; None
        (a graph break) when the function must run as plain Python."""
        exact = self.exact_shapes
        try:
            return trace(self.fn, args, kwargs, self.static_argnames, exact), key
        except NeedsStaticShapes as e:
            if exact:
                raise
            self.exact_shapes = True
            self._entries.clear()
            self._seen.clear()
            log.info("flowjit.jit: %s reads array sizes (%s); compiling per shape",
                     self.__name__, e)
            key = signature_of(args, kwargs, self.static_argnames, True)
            return self._trace(key, args, kwargs)

    def _build(self, key, args, kwargs):
        with self._build_lock:
            # another thread may have built it, or turned exact_shapes on, meanwhile
            key = signature_of(args, kwargs, self.static_argnames, self.exact_shapes)
            entry = self._entries.get(key)
            if entry is not None:
                return entry, key
            return self._build_locked(key, args, kwargs)

    def _build_locked(self, key, args, kwargs):
        reason = self._reason(key)
        try:
            try:
                tr, key = self._trace(key, args, kwargs)
            except GraphBreak:
                raise
            except Exception as e:  # noqa: BLE001 - flowjit's own failure: plain Python
                if STRICT or not internal_failure(e, tracing=True):
                    raise
                raise GraphBreak(failure_reason(e, "tracing")) from None
        except GraphBreak as e:
            if not self.fallback:
                raise UnimplementedError(None, None, f"flowjit.jit cannot trace "
                                         f"{self.__name__}: {e}") from None
            log.warning("flowjit.jit: graph break in %s: %s; running it as plain Python",
                        self.__name__, e)
            entry = _Python(self.fn, str(e))
            # the trace may have switched to exact shapes before it broke: key it so
            key = signature_of(args, kwargs, self.static_argnames, self.exact_shapes)
            self._entries[key] = entry
            return entry, key
        ops = [op for op in tr.graph.get_operations() if op.type != "Placeholder"]
        control_flow = has_control_flow(ops)
        if control_flow:   # converted loops and ifs (docs/architecture.md "Python control
            ops = live_ops(tr)   # flow in @jit"): without the ops of abandoned attempts
        try:
            cluster = compile_cluster(ops, tr.placeholders, tr.specs, tr.outputs,
                                      graph_text(tr.graph, ops), donated=tr.writebacks,
                                      target=self.target)
            entry = _Compiled(cluster, tr)
            log.info("flowjit.jit: compiled %s (%s)", self.__name__, reason)
            runs = MEASURE_RUNS if self.measure_runs is None else self.measure_runs
            if runs > 0 and tr.numpy_code and \
                    jit_options(ConfigProto()).policy is not JitPolicy.ALWAYS:
                entry = _Trial(self, key, entry, runs)
        except Exception as e:  # noqa: BLE001 - flowjit's own failure: not compiled
            if not isinstance(e, NotLowerable):
                if STRICT or not internal_failure(e, tracing=False):
                    raise
                e = failure_reason(e, "compiling")
            if tr.numpy_code and not control_flow:   # the plain function is NumPy itself:
                # faster than the reference kernels run op by op, and the same semantics;
                # graph loops and conds run in the Session (loops of compiled clusters)
                entry = _Python(self.fn, f"not compiled: {e}", measured=True)
                log.warning("flowjit.jit: %s runs as plain Python, not compiled: %s (%s)",
                            self.__name__, e, reason)
            else:
                entry = _Interpreted(tr, str(e))
                log.warning("flowjit.jit: %s runs with reference kernels, not compiled: "
                            "%s (%s)", self.__name__, e, reason)
        self.compile_count += 1
        self._entries[key] = entry
        return entry, key

    def _decide(self, trial: _Trial) -> None:
        """End `trial`: keep the compiled kernel unless the plain function was faster by
        more than SLOWER_MARGIN, with the reason in `lower()` and a log line."""
        with self._build_lock:
            if self._entries.get(trial.key) is not trial:
                return
            kernel, python = (min(t) for t in trial.times)
            if kernel > SLOWER_MARGIN * python:
                why = (f"plain NumPy measured faster than the compiled kernel "
                       f"({python * 1e6:.1f} us against {kernel * 1e6:.1f} us per call)")
                entry = _Python(self.fn, why, measured=True)
                log.info("flowjit.jit: %s runs as plain Python: %s", self.__name__, why)
            else:
                entry = trial.compiled
                entry.cluster.stages.add("measured", (
                    f"compiled kernel kept: {kernel * 1e6:.1f} us per call against "
                    f"{python * 1e6:.1f} us for plain NumPy"))
            self._entries[trial.key] = entry
            self._seen.clear()

    def lower(self, *args, **kwargs):
        """Everything the compiler did for these arguments: a `Lowered` report."""
        key = signature_of(args, kwargs, self.static_argnames, self.exact_shapes)
        entry = self._entries.get(key) or self._build(key, args, kwargs)[0]
        return Lowered(entry)


class Lowered:
    """Text of each stage for one signature: graph, IR after each pass, schedule, source."""

    def __init__(self, entry):
        self.entry = entry
        if isinstance(entry, _Trial):
            entry = entry.compiled
        if isinstance(entry, _Compiled):
            self.stages = entry.cluster.stages
            self.source = entry.cluster.source
            self.compiled = True
        elif isinstance(entry, _Python):
            self.stages = Stages()
            self.stages.add("not compiled" if entry.measured else "not traced",
                            f"runs as plain Python: {entry.reason}")
            self.source = None
            self.compiled = False
        else:
            self.stages = Stages()
            ops = live_ops(entry.trace) if has_control_flow(
                entry.trace.graph.get_operations()) else None
            self.stages.add("graph", graph_text(entry.trace.graph, ops))
            self.stages.add("not compiled", f"runs with reference kernels: {entry.reason}")
            self.source = None
            self.compiled = False

    def stage(self, name: str) -> str:
        """The text of one stage (KeyError, naming the stages there are, if absent)."""
        try:
            return self.stages.text(name)
        except KeyError:
            names = ", ".join(n for n, _ in self.stages.items)
            raise KeyError(f"no stage {name!r}; stages: {names}") from None

    def __str__(self):
        return str(self.stages)

    def _repr_html_(self):
        """The report in a notebook: a summary line, then each stage as a collapsible
        section (runtime/report_html.py)."""
        return lowered_html(self)


def jit(fn=None, *, static_argnames=(), fallback=True, target="cpu",
        measure_runs: int | None = None):
    """Compile `fn` on first call per signature: Python code using flowjit ops, or ordinary
    NumPy code (np.* functions, methods, operators, indexing, in-place updates).

    Usable as `@jit`, `@jit(static_argnames=("n",))` or `jit(fn)`.  Arrays are abstract
    (dtype and rank; exact sizes once the code reads them); Python scalars and
    `static_argnames` are baked in. Arguments the function mutates are written back. With
    `fallback=True` (the default) a function tracing cannot represent runs as plain Python,
    with one warning saying why; `fallback=False` raises `errors.UnimplementedError`.
    `target` picks what compiles it (runtime/targets.py): "cpu" (numba, the default) or
    "reference" (the NumPy interpreter of the kernel IR, no numba); ValueError for others.
    `measure_runs` (None: FLOWJIT_JIT_MEASURE_RUNS, else 3): a new signature of ordinary
    NumPy code runs its next `measure_runs` calls compiled and as many more as the plain
    function, timed; the faster is kept (`lower()` says which and why), so compiling never
    makes a function slower than NumPy.  0 (or FLOWJIT_JIT=always): always the kernel.
    """
    target = target_kind(target)   # strings end at the API
    if fn is None:
        return lambda f: JitFunction(f, static_argnames, fallback, target, measure_runs)
    return JitFunction(fn, static_argnames, fallback, target, measure_runs)
