"""Graph sources and plumbing: Const, Placeholder, PlaceholderWithDefault, Identity,
StopGradient, NoOp.

Public functions: `constant`, `placeholder`, `placeholder_with_default`, `identity`,
`stop_gradient`, `no_op`, `group`.  StopGradient is an identity whose gradient is None
(autodiff treats its output as a constant); Identity and PlaceholderWithDefault pass the
gradient through.  A Const op holds its value as a read-only NumPy array in attr `value`
(its OpDef is made in conversion.py, which converts values to tensors, and listed here);
a Placeholder's kernel only runs when nobody fed it, and then raises the error TensorFlow
raises ("You must feed a value for placeholder tensor ...").
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from ..compiler.core.node import _as_operation
from ..compiler.core.shapes import as_shape, unknown_shape
from ..errors import InvalidArgumentError
from .builder import make_op, to_tensor
from .conversion import CONST, constant_array, constant_from_array  # noqa: F401 - Const
from .registry import OpDef, Trait, not_differentiable

def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A tensor holding `value` (TensorFlow's `tf.constant`).

    With `shape`, a scalar (or one-element) value is broadcast to it, a value with the same
    number of elements is reshaped to it, and fewer elements are padded with the last one
    (TF1's rule: constant([1, 2], shape=[2, 2]) is [[1, 2], [2, 2]]); more elements, or none,
    are a ValueError.
    """
    arr = constant_array(value, dtype)
    if shape is not None:
        shape = tuple(int(d) for d in as_shape(shape).as_list())
        if arr.shape != shape:
            if verify_shape:
                raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
            if arr.size == 1:
                arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
            elif arr.size == int(np.prod(shape)):
                arr = arr.reshape(shape)
            elif 0 < arr.size < int(np.prod(shape)):   # TF1 repeats the last value
                flat = arr.reshape(-1)
                arr = np.concatenate([flat, np.full(int(np.prod(shape)) - flat.size, flat[-1],
                                                    dtype=arr.dtype)]).reshape(shape)
            else:
                raise ValueError(f"constant '{name}': a value of {arr.size} elements (shape "
                                 f"{arr.shape}) cannot fill shape {shape}.")
    return constant_from_array(arr, name=name)


# --- Placeholder ---------------------------------------------------------------------------


def _placeholder_infer(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


def _describe_shape(shape):
    if shape.dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.dims) + "]"


def _placeholder_kernel(ctx, inputs, attrs):
    op = ctx.op if ctx is not None else None
    name = op.name if op is not None else "?"
    raise InvalidArgumentError(
        None, op, f"You must feed a value for placeholder tensor '{name}' with dtype "
                  f"{attrs['dtype'].name} and shape {_describe_shape(attrs['shape'])}")


PLACEHOLDER = OpDef("Placeholder", _placeholder_infer, _placeholder_kernel,
                    traits={Trait.SOURCE, Trait.RUNTIME_VALUE})


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed to every `Session.run` that needs it."""
    dtype = _dtypes.as_dtype(dtype)
    shape = unknown_shape() if shape is None else as_shape(shape)
    return get_default_graph().create_op(PLACEHOLDER, [], {"dtype": dtype, "shape": shape},
                                         name or "Placeholder").outputs[0]


def _with_default_infer(op):
    shape = op.get_attr("shape")
    given = op.inputs[0].shape
    if not shape.is_compatible_with(given):
        raise ValueError(f"The default value's shape {given} is not compatible with the "
                         f"declared shape {shape}.")
    return [(op.inputs[0].dtype, shape)]


def _identity_kernel(ctx, inputs, attrs):
    return [inputs[0]]


def _pass_through(op, g):
    return [g]


def _lower_identity(ctx, op, inputs):
    return [inputs[0]]


PLACEHOLDER_WITH_DEFAULT = OpDef("PlaceholderWithDefault", _with_default_infer,
                                 _identity_kernel, traits={Trait.RUNTIME_VALUE},
                                 gradient=_pass_through, lower=_lower_identity)


def placeholder_with_default(input, shape, name=None):
    """A tensor that is `input` unless fed; `shape` may be less specific than input's."""
    t = to_tensor(input)
    return make_op(PLACEHOLDER_WITH_DEFAULT, [t], {"shape": as_shape(shape)},
                   name or "PlaceholderWithDefault").outputs[0]


# --- Identity, NoOp, group -----------------------------------------------------------------


def _identity_infer(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


IDENTITY = OpDef("Identity", _identity_infer, _identity_kernel, gradient=_pass_through,
                 lower=_lower_identity)


def identity(input, name=None):
    """A tensor with the same value as `input` (reads a variable's current value)."""
    return make_op(IDENTITY, [to_tensor(input)], {}, name or "Identity").outputs[0]


STOP_GRADIENT = OpDef("StopGradient", _identity_infer, _identity_kernel,
                      gradient=not_differentiable,
                      lower=_lower_identity,
                      doc="identity in the forward pass; blocks gradients (they are None)")


def stop_gradient(input, name=None):
    """`input` unchanged, but `gradients` treats the result as a constant (no gradient)."""
    return make_op(STOP_GRADIENT, [to_tensor(input)], {}, name or "StopGradient").outputs[0]


def _lower_no_op(ctx, op, inputs):
    return []  # ordering only; a kernel runs its ops in order


NO_OP = OpDef("NoOp", lambda op: [], lambda ctx, inputs, attrs: [], traits={Trait.SOURCE},
              lower=_lower_no_op)


def no_op(name=None):
    """An op that does nothing; useful as a target with control dependencies."""
    return get_default_graph().create_op(NO_OP, [], {}, name or "NoOp")


def group(*inputs, name=None):
    """An op that runs after every op (or tensor's producer) in `inputs`."""
    flat = []
    for x in inputs:
        if isinstance(x, (list, tuple, set)):
            flat.extend(x)
        elif isinstance(x, dict):
            flat.extend(x.values())
        else:
            flat.append(x)
    ops = [_as_operation(x) for x in flat]
    graph = ops[0].graph if ops else get_default_graph()
    return graph.create_op(NO_OP, [], {}, name or "group_deps", control_inputs=ops)


OP_DEFS = (CONST, PLACEHOLDER, PLACEHOLDER_WITH_DEFAULT, IDENTITY, STOP_GRADIENT, NO_OP)

