"""Python operators on `Tensor` and `Variable`, mapped to graph ops.

`install()` (called once from `ops/__init__.py`) sets `+ - * / // % ** @`, unary `-`,
`abs`, `< <= > >=`, `& | ^ ~` and `[]` on both classes.  `==` and `!=` keep identity
semantics, as in TensorFlow 1.x graph mode, so tensors stay usable as dict keys.  Imported
only by `ops/__init__.py`, after every op module, so it imports the op functions by name.
"""

from __future__ import annotations

from ..compiler.core.graph import Tensor
from . import math_ops, matmul_ops
from .getitem_ops import tensor_getitem
from .variables import Variable


def _binary(fn_name, reflected=False):
    def method(self, other):
        fn = getattr(math_ops, fn_name, None) or getattr(matmul_ops, fn_name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{fn_name}__"
    return method


def _unary(fn_name):
    def method(self):
        return getattr(math_ops, fn_name)(self)

    return method


def _getitem(self, key):
    return tensor_getitem(self, key)


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "truediv",
    "floordiv": "floordiv", "mod": "floormod", "pow": "pow", "matmul": "matmul",
    "and": "logical_and", "or": "logical_or", "xor": "logical_xor",
}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "abs": "abs", "invert": "logical_not"}


def install():
    """Attach the operators to Tensor and Variable (idempotent)."""
    for cls in (Tensor, Variable):
        for dunder, fn in _BINARY.items():
            setattr(cls, f"__{dunder}__", _binary(fn))
            setattr(cls, f"__r{dunder}__", _binary(fn, reflected=True))
        for dunder, fn in _COMPARE.items():
            setattr(cls, f"__{dunder}__", _binary(fn))
        for dunder, fn in _UNARY.items():
            setattr(cls, f"__{dunder}__", _unary(fn))
        cls.__getitem__ = _getitem
        cls.__div__ = cls.__truediv__
    Variable.__array_priority__ = 100
    Variable.__array_ufunc__ = None
