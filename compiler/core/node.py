"""Graph nodes: `Operation` (an op applied to inputs) and `Tensor` (one of its outputs).

Both are immutable once their op is added to a Graph: an Operation's inputs, attributes and
outputs never change (the graph is append-only).  An Operation records the user frames that
created it (`traceback`, `creation_site`) so every error can point at the user's line.
`Tensor` identity is object identity (`==` is `is`, hash is a per-graph id), as in
TensorFlow 1.x; the arithmetic operators are installed by `ops/operators.py`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ... import dtypes as _dtypes
from ...errors import describe_op
from .session_hook import session_for
from .shapes import TensorShape, as_shape

if TYPE_CHECKING:
    from .graph import Graph

# this file is flowjit/compiler/core/node.py: three levels below the package directory
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_LIBRARY_PARTS = ("compiler", "ops", "runtime", "targets", "__init__.py", "dtypes.py",
                  "errors.py")
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
_internal_cache: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    """True for flowjit's own library files (not tests, examples or the demo)."""
    hit = _internal_cache.get(filename)
    if hit is None:
        rel = os.path.relpath(os.path.abspath(filename), _PACKAGE_DIR)
        hit = (rel.split(os.sep, 1)[0] in _LIBRARY_PARTS or filename.startswith("<frozen")
               or (os.path.abspath(filename).startswith(_STDLIB_DIR)
                   and "site-packages" not in filename))
        _internal_cache[filename] = hit
    return hit


def _user_frames(limit: int = 8):
    """The innermost frames of the calling code that lie outside flowjit's library."""
    frames = []
    f = sys._getframe(2)
    while f is not None and len(frames) < limit:
        filename = f.f_code.co_filename
        if not _is_internal(filename):
            frames.append((filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return tuple(frames)


def user_site() -> str:
    """'file:line in fn' of the innermost user frame calling into flowjit ('' if none)."""
    frames = _user_frames(limit=1)
    if not frames:
        return ""
    filename, lineno, fn = frames[0]
    return f"{filename}:{lineno} in {fn}"


class Tensor:
    """A symbolic handle to one output of an Operation (TensorFlow 1.x `tf.Tensor`).

    Python operators (+ - * / // % ** @, comparisons, indexing) are installed by
    `ops/operators.py`; `==` keeps identity semantics as in TensorFlow 1.x.
    """

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_id", "__weakref__")
    __array_priority__ = 100
    __array_ufunc__ = None  # make NumPy defer to our reflected operators

    def __init__(self, op: Operation, value_index: int, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape)
        self._id = op.graph._next_tensor_id()

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape):
        """Refine the static shape; ValueError if incompatible with what is known."""
        try:
            self._shape = self._shape.merge_with(as_shape(shape))
        except ValueError:
            raise ValueError(f"Tensor {self.name} has shape {self._shape}, which is not "
                             f"compatible with the requested shape {as_shape(shape)}; "
                             f"producer {describe_op(self._op)}") from None

    def consumers(self):
        return [op for op in self.graph._operations if self in op._inputs]

    def eval(self, feed_dict=None, session=None):
        """Run this tensor in `session` (default: the default session) and return its value."""
        return session_for(session, self.graph).run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError(f"Using a flowjit Tensor ({self.name}) as a Python bool is not "
                        "allowed: its value is only known when the graph runs. Use "
                        "flowjit.cond / where, or evaluate it with Session.run first.")

    def __iter__(self):
        raise TypeError(f"Tensor {self.name} is not iterable in graph mode; use "
                        "flowjit.unstack to split it along a dimension.")

    def __len__(self):
        raise TypeError(f"len() of a symbolic Tensor ({self.name}) is not defined; use "
                        "tensor.shape[0] or flowjit.shape(tensor)[0].")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert the symbolic Tensor {self.name} to a NumPy array; "
                        "run it in a Session to get its value.")


class Operation:
    """A node of the graph: an op type applied to input tensors, with attributes."""

    _cf_context = None   # the cond branch or while loop the op was built in (graph.py)
    _colocation = ()     # names of the ops it must share a device with (colocate_with)

    def __init__(self, graph: Graph, op_def, name: str, inputs, attrs: dict,
                 control_inputs, device: str, traceback):
        self._graph = graph
        self._op_def = op_def
        self._name = name
        self._inputs = tuple(inputs)
        self._attrs = dict(attrs)
        self._control_inputs = tuple(control_inputs)
        self._device = device
        self._traceback = traceback
        self._outputs: tuple[Tensor, ...] = ()
        self._id = len(graph._operations)

    # --- TensorFlow's Operation API --------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._op_def.name

    @property
    def op_def(self):
        return self._op_def

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def outputs(self) -> tuple:
        return self._outputs

    def values(self) -> tuple:
        return self._outputs

    @property
    def control_inputs(self) -> tuple:
        return self._control_inputs

    @property
    def device(self) -> str:
        return self._device

    @property
    def colocation_groups(self) -> list:
        """TensorFlow's `_class` list: b'loc:@name' for each op this one is colocated with."""
        return [f"loc:@{n}".encode() for n in self._colocation] or [f"loc:@{self._name}"
                                                                     .encode()]

    @property
    def attrs(self) -> dict:
        """A copy of this op's attributes."""
        return dict(self._attrs)

    def get_attr(self, name: str):
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' (op: '{self.type}') has no attr named "
                             f"'{name}'; it has {sorted(self._attrs)}.")
        return self._attrs[name]

    @property
    def traceback(self):
        """(filename, lineno, function) of the user frames that created this op, innermost first."""
        return list(self._traceback)

    @property
    def creation_site(self) -> str:
        if not self._traceback:
            return ""
        filename, lineno, fn = self._traceback[0]
        return f"{filename}:{lineno} in {fn}"

    @property
    def node_def(self):
        from .graph_def import node_def_for  # serialization lives beside the model

        return node_def_for(self)

    def run(self, feed_dict=None, session=None):
        """Run this op in `session` (default: the default session)."""
        session_for(session, self._graph).run(self, feed_dict)

    def _add_control_input(self, op: Operation):
        """Used only while the op is being built (e.g. by `group`); the graph stays append-only."""
        self._control_inputs = self._control_inputs + (op,)

    def __repr__(self):
        return f"<tf.Operation '{self._name}' type={self.type}>"


def _as_operation(x) -> Operation:
    if hasattr(x, "_as_graph_element"):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Control inputs must be Operations or Tensors, got {x!r}.")
