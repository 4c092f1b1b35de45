"""`variable_scope` and `get_variable`: named, shareable variables (TensorFlow 1.x).

A variable scope prefixes the names of variables made by `get_variable` (and opens a name
scope of the same name for other ops).  Sharing follows TensorFlow: inside
`variable_scope(..., reuse=True)` `get_variable` returns the existing variable and fails if
there is none; with reuse off it creates one and fails if the name is taken; `AUTO_REUSE`
does whichever applies.  The store of variables made by `get_variable` lives in the graph's
collections, so it belongs to the graph.
"""

from __future__ import annotations

import contextlib
import enum
import threading

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor, get_default_graph
from ..compiler.core.shapes import as_shape
from .init_ops import glorot_uniform_initializer, zeros_initializer
from .variables import Variable

__all__ = ["variable_scope", "get_variable", "get_variable_scope", "AUTO_REUSE",
           "VariableScope"]


class _Reuse(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _Reuse.AUTO_REUSE


class VariableScope:
    """The current variable scope: its name, reuse mode, default initializer and dtype."""

    def __init__(self, name="", reuse=None, initializer=None, dtype=_dtypes.float32):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = _dtypes.as_dtype(dtype)
        self.original_name_scope = name + "/" if name else ""

    def reuse_variables(self):
        """Make later get_variable calls in this scope reuse existing variables."""
        self.reuse = True


_local = threading.local()


def _scope_stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_variable_scope() -> VariableScope:
    stack = _scope_stack()
    return stack[-1] if stack else VariableScope()


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """Open a variable scope (and a name scope) named `name_or_scope` or `default_name`."""
    parent = get_variable_scope()
    graph = get_default_graph()
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        inherited_reuse = name_or_scope.reuse
    else:
        local = name_or_scope
        if local is None:
            if default_name is None:
                raise ValueError("variable_scope needs a name or a default_name.")
            local = _unique_default(graph, parent, default_name)
        full = f"{parent.name}/{local}" if parent.name else local
        inherited_reuse = parent.reuse
    if reuse is False:
        reuse = None  # TensorFlow: reuse=False inherits
    scope = VariableScope(full, reuse if reuse is not None else inherited_reuse,
                          initializer or parent.initializer, dtype or parent.dtype)
    _scope_stack().append(scope)
    try:
        if auxiliary_name_scope:
            leaf = full.rsplit("/", 1)[-1]
            with graph.name_scope(leaf) as ns:
                scope.original_name_scope = ns
                yield scope
        else:
            yield scope
    finally:
        _scope_stack().pop()


def _unique_default(graph, parent, default_name):
    counts = graph.__dict__.setdefault("_variable_scope_counts", {})
    key = f"{parent.name}/{default_name}" if parent.name else default_name
    n = counts.get(key, 0)
    counts[key] = n + 1
    return default_name if n == 0 else f"{default_name}_{n}"


def _store(graph) -> dict:
    """Variables made by get_variable, by full name; kept on the graph they belong to."""
    return graph.__dict__.setdefault("_variable_store", {})


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """Get the variable `scope/name`, creating it unless the scope reuses variables."""
    scope = get_variable_scope()
    graph = get_default_graph()
    full = f"{scope.name}/{name}" if scope.name else name
    store = _store(graph)
    existing = store.get(full)
    if existing is not None:
        if scope.reuse is None:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in variable_scope?")
        if shape is not None and not existing.shape.is_compatible_with(as_shape(shape)):
            raise ValueError(f"Trying to share variable {full}, but specified shape "
                             f"{as_shape(shape)} and found shape {existing.shape}.")
        if dtype is not None and existing.dtype is not _dtypes.as_dtype(dtype):
            raise ValueError(f"Trying to share variable {full}, but specified dtype "
                             f"{_dtypes.as_dtype(dtype).name} and found dtype "
                             f"{existing.dtype.name}.")
        return existing
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "variable_scope?")
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else scope.dtype
    init = initializer if initializer is not None else scope.initializer
    if isinstance(init, (Tensor, np.ndarray, list, tuple, int, float)) and not callable(init):
        if shape is not None and isinstance(init, Tensor):
            raise ValueError(f"get_variable {full}: if initializer is a constant or a tensor, "
                             "do not specify shape.")
        initial_value = init
    else:
        if shape is None:
            raise ValueError(f"get_variable {full}: the shape must be given when the "
                             "initializer is not a constant or a tensor.")
        if init is None:
            init = glorot_uniform_initializer() if dtype.is_floating else zeros_initializer()
        dims = as_shape(shape)
        initial_value = lambda: init(dims, dtype=dtype)  # noqa: E731 - deferred build
    var = Variable(initial_value, trainable=True if trainable is None else trainable,
                   collections=collections, validate_shape=validate_shape, name=full + "/",
                   dtype=dtype if not callable(initial_value) else None)
    store[full] = var
    return var
