"""NumPy random numbers inside a traced function: a graph break, never a frozen constant.

A call such as `np.random.rand(n)` or `rng.normal(size=n)` returns concrete numbers while the
function is traced; the compiled kernel would hold them as a constant and return the same
"random" numbers at every call.  So:

- the `np.random` a traced function sees (np_module.NUMPY.random) raises GraphBreak when a
  drawing function is called; `np.random.default_rng(seed)` still works, since its draws
  are the same at every call in NumPy too, but `default_rng()` without a seed breaks as
  well; the classes (Generator, RandomState, the bit generators) pass through unchanged, so
  `isinstance` works, and an unseeded one constructed inside the function is not caught;
- `CapturedGenerators(fn)` snapshots the state of every Generator / RandomState the function
  reaches through its globals, closure and defaults, and of NumPy's global legacy generator
  (helpers in other modules calling `np.random.rand`), and `check()` raises GraphBreak when
  the trace drew from one (and puts its state back).

With fallback (the default) the function then runs as plain Python: NumPy's own semantics.
"""

from __future__ import annotations

import pickle
import types

import numpy as np

from .np_array import GraphBreak

_CONSTRUCTORS = frozenset({"default_rng"})   # classes pass through (isinstance works)
_HINT = ("its numbers would be drawn once, when tracing, and frozen into the kernel; draw "
         "them outside and pass them in as an argument")


def _breaks(name: str):
    def draw(*args, **kwargs):
        raise GraphBreak(f"np.random.{name}() inside a jitted function", _HINT)
    draw.__name__ = name
    return draw


def _seeded_only(name: str, constructor):
    def construct(*args, **kwargs):
        seed = args[0] if args else kwargs.get("seed", kwargs.get("bit_generator"))
        if seed is None:
            raise GraphBreak(f"np.random.{name}() without a seed inside a jitted function",
                             _HINT)
        return constructor(*args, **kwargs)
    construct.__name__ = name
    return construct


class _TracingRandom(types.ModuleType):
    """numpy.random as a traced function sees it."""

    def __getattr__(self, name):
        value = getattr(np.random, name)
        if name in _CONSTRUCTORS:
            return _seeded_only(name, value)
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            return _breaks(name)
        return value


RANDOM = _TracingRandom("numpy.random")


def _generators(fn) -> list:
    """Generator / RandomState objects fn reaches directly (globals it names, closure cells,
    default arguments)."""
    found = []
    code = getattr(fn, "__code__", None)
    names = code.co_names if code is not None else ()
    candidates = [getattr(fn, "__globals__", {}).get(n) for n in names]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            candidates.append(cell.cell_contents)
        except ValueError:      # an empty cell
            continue
    candidates += list(getattr(fn, "__defaults__", None) or ())
    candidates.append(getattr(np.random.mtrand, "_rand", None))   # np.random.rand & co.
    for obj in candidates:
        if isinstance(obj, (np.random.Generator, np.random.RandomState)) and \
                all(obj is not f for f in found):
            found.append(obj)
    return found


def _state(obj) -> bytes:
    if isinstance(obj, np.random.Generator):
        return pickle.dumps(obj.bit_generator.state)
    return pickle.dumps(obj.get_state(legacy=False))


class CapturedGenerators:
    """The states of the generators `fn` captures, to tell whether a trace drew from them."""

    def __init__(self, fn):
        self.states = [(g, _state(g)) for g in _generators(fn)]

    def check(self) -> None:
        """GraphBreak when a captured generator's state changed (the trace drew from it); its
        state is put back, so the plain-Python run draws the numbers NumPy would have."""
        for generator, before in self.states:
            if _state(generator) != before:
                restore = pickle.loads(before)
                if isinstance(generator, np.random.Generator):
                    generator.bit_generator.state = restore
                else:
                    generator.set_state(restore)
                raise GraphBreak("drawing from a captured NumPy random generator inside a "
                                 "jitted function", _HINT)
