"""`flowjit.jit`: trace a Python function once per signature, compile it, call it fast.

A `JitFunction` keeps one compiled entry per signature (compiler/tracing.py: dtype, rank
and which sizes are 1 per array; value per Python scalar), so new sizes reuse the kernel.
An entry is either one compiled cluster (the whole function became ONE numba function:
the call costs one dispatch) or, when some op cannot be compiled, the traced graph run by
the Session executor with reference kernels (logged once, with the reason).

Every compile is logged on the `flowjit.jit` logger with its reason (first call, or which
part of the signature changed).  `f.lower(*args)` returns the text of every stage.
"""

from __future__ import annotations

import functools
import logging

import numpy as np

from ..compiler.lowering import NotLowerable
from ..compiler.pipeline import Stages, compile_cluster
from ..compiler.tracing import rebuild, signature_of, trace
from ..errors import InvalidArgumentError

log = logging.getLogger("flowjit.jit")
_IS_ONE = (1).__eq__


def graph_text(graph) -> str:
    """One line per op: name = Type(inputs) -> dtype shape."""
    lines = []
    for op in graph.get_operations():
        ins = ", ".join(t.name for t in op.inputs)
        outs = ", ".join(f"{t.dtype.name}{t.shape}" for t in op.outputs)
        lines.append(f"{op.name} = {op.type}({ins}) -> {outs}")
    return "\n".join(lines)


class _Compiled:
    """An entry that runs one compiled kernel."""

    __slots__ = ("kernel", "constants", "template", "out_constants", "cluster", "trace",
                 "single")

    def __init__(self, cluster, tr):
        self.kernel = cluster.kernel
        self.constants = tuple(cluster.constants)
        self.template = tr.template
        self.out_constants = tr.constants
        self.cluster = cluster
        self.trace = tr
        self.single = self.template == ("t", 0) and not self.out_constants

    def __call__(self, arrays):
        try:
            outs = self.kernel(*arrays, *self.constants)
        except (ValueError, ZeroDivisionError) as e:
            raise InvalidArgumentError(None, None, f"{e} (in compiled function)") from None
        if self.single:
            return outs[0]
        return rebuild(self.template, list(outs), self.out_constants)


class _Interpreted:
    """An entry that runs the traced graph with the reference kernels."""

    def __init__(self, tr, reason: str):
        from .session import Session

        self.trace = tr
        self.reason = reason
        self.session = Session(graph=tr.graph)

    def __call__(self, arrays):
        feeds = dict(zip(self.trace.placeholders, arrays))
        outs = self.session.run(self.trace.outputs, feeds)
        outs = [np.asarray(o) if np.ndim(o) == 0 else o for o in outs]
        return rebuild(self.trace.template, outs, self.trace.constants)


def _arrays(args, kwargs, static_names):
    flat = []

    def visit(a):
        if isinstance(a, np.ndarray):
            flat.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
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

    def __init__(self, fn, static_argnames=()):
        self.fn = fn
        self.static_argnames = frozenset(static_argnames or ())
        self._entries: dict = {}
        self.compile_count = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if not kwargs:
            # fast path: positional C-contiguous arrays (the common call), keyed cheaply
            try:
                key = tuple([(a.dtype.char, tuple(map(_IS_ONE, a.shape)))
                             for a in args if a.flags.c_contiguous])
            except AttributeError:
                key = None
            if key is not None and len(key) == len(args):
                entry = self._entries.get(key)
                if entry is not None:
                    return entry(args)
        key = signature_of(args, kwargs, self.static_argnames)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._build(key, args, kwargs)
        return entry(_arrays(args, kwargs, self.static_argnames))

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

    def _build(self, key, args, kwargs):
        reason = self._reason(key)
        tr = trace(self.fn, args, kwargs, self.static_argnames)
        ops = [op for op in tr.graph.get_operations() if op.type != "Placeholder"]
        try:
            cluster = compile_cluster(ops, tr.placeholders, tr.specs, tr.outputs,
                                      graph_text(tr.graph))
            entry = _Compiled(cluster, tr)
            log.info("flowjit.jit: compiled %s (%s)", self.__name__, reason)
        except NotLowerable as e:
            entry = _Interpreted(tr, str(e))
            log.warning("flowjit.jit: %s runs with reference kernels, not compiled: %s (%s)",
                        self.__name__, e, reason)
        self.compile_count += 1
        self._entries[key] = entry
        return entry

    def lower(self, *args, **kwargs):
        """Everything the compiler did for these arguments: a `Lowered` report."""
        key = signature_of(args, kwargs, self.static_argnames)
        entry = self._entries.get(key) or self._build(key, args, kwargs)
        return Lowered(entry)


class Lowered:
    """Text of each stage for one signature: graph, IR after each pass, schedule, source."""

    def __init__(self, entry):
        self.entry = entry
        if isinstance(entry, _Compiled):
            self.stages = entry.cluster.stages
            self.source = entry.cluster.source
            self.compiled = True
        else:
            self.stages = Stages()
            self.stages.add("graph", graph_text(entry.trace.graph))
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


def jit(fn=None, *, static_argnames=()):
    """Compile `fn` (Python code using flowjit ops) on first call per signature.

    Usable as `@jit`, `@jit(static_argnames=("n",))` or `jit(fn)`.  Arrays are abstract
    (dtype and rank); Python scalars and `static_argnames` are baked in.
    """
    if fn is None:
        return lambda f: JitFunction(f, static_argnames)
    return JitFunction(fn, static_argnames)
