"""TensorFlow's fused optimizer-update ops, as GraphDefs written by TensorFlow 1.x contain them.

Ops: ApplyGradientDescent(var, alpha, delta), ApplyMomentum(var, accum, lr, grad, momentum)
and ApplyAdam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad). The
variable inputs (var, and the slots accum / m, v) are references (`ref_inputs`, as for
Assign in variables.py): the op updates them in place, under the session's state lock, and
outputs var's new value, then each slot's new value (flowjit's addition: TensorFlow's ops
output var only, so a TensorFlow graph never reads the others; a compiled cluster installs
them as the slots' values, runtime/cluster_updates.py). The other inputs are values of var's
dtype; the hyperparameters are scalars. Attrs: `use_locking` (accepted and ignored: an
update always holds the lock) and, for Momentum and Adam, `use_nesterov`. The updates are
TensorFlow's kernels', in their order of operations:
- GradientDescent: var -= alpha * delta;
- Momentum: accum = accum * momentum + grad; var -= accum * lr (Nesterov: var -= grad * lr
  + accum * momentum * lr);
- Adam: lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
  v += (grad * grad - v) * (1 - beta2); var -= m * lr_t / (sqrt(v) + epsilon) (Nesterov:
  var -= (grad * (1 - beta1) + beta1 * m) * lr_t / (sqrt(v) + epsilon)).
They are STATEFUL and have no gradient.  Each lowers to elementwise code computing every
output from the same update functions the reference kernels run (on IR scalars), so an
imported training step compiles with its updates.  flowjit's optimizers (optimizers/)
build their updates from Assign/AssignSub instead; these ops are for imported graphs, built by the
functions here (TensorFlow's raw op names, not part of the `tf.*` namespace).
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable
from ..errors import InvalidArgumentError
from . import variables
from .builder import FLOATS, check_dtype, graph_for, make_op, to_tensor
from .lower_util import elementwise_lowering
from .registry import OpDef, Trait
from .variable_ref import VariableRef

# --- the updates (NumPy, on arrays of var's dtype; return the new values of the refs) -----------


def gradient_descent_update(var, alpha, delta):
    """TensorFlow's ApplyGradientDescent: (new var,)."""
    return (var - delta * alpha,)


def momentum_update(var, accum, lr, grad, momentum, use_nesterov=False):
    """TensorFlow's ApplyMomentum: (new var, new accum)."""
    accum = accum * momentum + grad
    if use_nesterov:
        return var - (grad * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


def adam_update(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                use_nesterov=False):
    """TensorFlow's ApplyAdam: (new var, new m, new v)."""
    one = _one(var)
    lr_t = lr * _sqrt(one - beta2_power) / (one - beta1_power)
    m = m + (grad - m) * (one - beta1)
    v = v + (grad * grad - v) * (one - beta2)
    if use_nesterov:
        step = (grad * (one - beta1) + beta1 * m) * lr_t / (_sqrt(v) + epsilon)
    else:
        step = m * lr_t / (_sqrt(v) + epsilon)
    return var - step, m, v


def _one(x):
    """1 in x's dtype (a NumPy array's, or an IR scalar's when lowering)."""
    return x.dtype.type(1) if isinstance(x, np.ndarray) else _IrScalar(ir.const(1, x.dtype),
                                                                       x.dtype)


def _sqrt(x):
    return x.sqrt() if hasattr(x, "sqrt") and not isinstance(x, np.ndarray) else np.sqrt(x)


# --- inference and kernels ----------------------------------------------------------------------

# per op: the names of its inputs, how many lead as references, which are scalars
_SIGNATURES = {
    "ApplyGradientDescent": (("var", "alpha", "delta"), 1, {"alpha"}),
    "ApplyMomentum": (("var", "accum", "lr", "grad", "momentum"), 2, {"lr", "momentum"}),
    "ApplyAdam": (("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                   "epsilon", "grad"), 3,
                  {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"}),
}


def _is_variable(t) -> bool:
    """Whether `t` is a variable reference, through the Enter and Switch ops that carry a
    variable into a while loop or cond."""
    while t.op.type in ("Enter", "Switch"):
        t = t.op.inputs[0]
    return t.op.op_def is variables.VARIABLE_V2


def _infer(op):
    names, refs, scalars = _SIGNATURES[op.type]
    var = op.inputs[0]
    check_dtype(var, FLOATS, "var")
    shape = var.shape
    for t, param in zip(op.inputs, names):
        if t.dtype is not var.dtype:
            raise TypeError(f"Input '{param}' of '{op.type}' Op has type {t.dtype.name} that "
                            f"does not match type {var.dtype.name} of argument 'var'.")
        if param in scalars:
            if t.shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims}: "
                                 f"'{param}' of {op.type} must be a scalar, got {t.shape}.")
            continue
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"Shapes must be equal: '{param}' of {op.type} has shape "
                             f"{t.shape}, 'var' has {shape}.")
        shape = shape.merge_with(t.shape)
    for t, param in zip(op.inputs[:refs], names):
        if not _is_variable(t):
            raise TypeError(f"Input '{param}' of '{op.type}' Op requires a variable (l-value) "
                            f"input, but {t.name} is produced by a {t.op.type} op.")
    return [(var.dtype, shape)] * refs


def _kernel(update, *flags):
    """The reference kernel of an update: reads the refs, checks the shapes, writes each ref
    (slots first, var last) and returns var's new value."""

    def kernel(ctx, inputs, attrs):
        names, refs, scalars = _SIGNATURES[ctx.op.type]
        for r, param in zip(inputs[:refs], names):
            if type(r) is not VariableRef:
                raise InvalidArgumentError(None, ctx.op, f"Input '{param}' must be a variable "
                                                         f"reference; a variable's value "
                                                         f"cannot be fed and then updated.")
        with ctx.state.lock:
            values = [r.read(ctx.op) for r in inputs[:refs]] + list(inputs[refs:])
            var = values[0]
            for value, param in zip(values[1:], names[1:]):
                if param in scalars and value.ndim != 0:
                    raise InvalidArgumentError(None, ctx.op, f"{param} is not a scalar: "
                                                             f"{list(value.shape)}")
                if param not in scalars and value.shape != var.shape:
                    raise InvalidArgumentError(None, ctx.op, f"var and {param} do not have the "
                                                             f"same shape{list(var.shape)} "
                                                             f"{list(value.shape)}")
            options = {flag: bool(attrs.get(flag, False)) for flag in flags}
            with np.errstate(all="ignore"):
                new = [np.asarray(x, dtype=var.dtype) for x in update(*values, **options)]
            for r, value in reversed(list(zip(inputs[1:refs], new[1:]))):
                r.assign(value)
            return [inputs[0].assign(new[0])] + new[1:]

    return kernel


def _op_def(name, update, *flags, doc, lower=None):
    refs = _SIGNATURES[name][1]
    return OpDef(name, _infer, _kernel(update, *flags), traits={Trait.STATEFUL},
                 ref_inputs=set(range(refs)), doc=doc, lower=lower)


_descend = elementwise_lowering(
    lambda dtype, var, alpha, delta: ir.make(S.SUB, dtype, (var, ir.make(S.MUL, dtype,
                                                                      (delta, alpha)))))


def _lower_gradient_descent(ctx, op, inputs):
    """var - delta * alpha, elementwise: the new value a compiled cluster installs as the
    variable's (runtime/cluster_updates.py), like AssignSub's."""
    var, alpha, delta = inputs
    if len(alpha.shape) != 0 or len(var.shape) != len(delta.shape):
        raise NotLowerable(f"{op.type} with a non-scalar alpha or a delta of another rank "
                           "(the reference kernel reports it)")
    for i, (a, b) in enumerate(zip(var.shape, delta.shape)):
        ctx.check_equal(a, b, f"{op.type} '{op.name}' requires delta to have var's shape "
                              f"(dimension {i} differs)")
    return _descend(ctx, op, inputs)


APPLY_GRADIENT_DESCENT = _op_def("ApplyGradientDescent", gradient_descent_update,
                                 doc="var -= alpha * delta, in place; outputs the new var.",
                                 lower=_lower_gradient_descent)
def _check_same_shapes(ctx, op, inputs, names, scalars):
    var = inputs[0]
    for node, param in zip(inputs[1:], names[1:]):
        if param in scalars:
            if len(node.shape) != 0:
                raise NotLowerable(f"{op.type}: '{param}' is not a scalar (the reference "
                                   "kernel reports it)")
            continue
        if len(node.shape) != len(var.shape):
            raise NotLowerable(f"{op.type}: '{param}' has another rank than var")
        for i, (a, b) in enumerate(zip(var.shape, node.shape)):
            ctx.check_equal(a, b, f"{op.type} '{op.name}' requires '{param}' to have var's "
                                  f"shape (dimension {i} differs)")


def _lowering_of(update, *flags):
    """Each output (var's and the slots' new values) as an elementwise function of the
    inputs, from the same NumPy-style `update` the reference kernel runs, applied to IR
    scalars (runtime/cluster_updates.py installs them as the variables' values)."""

    def lower(ctx, op, inputs):
        names, refs, scalars = _SIGNATURES[op.type]
        _check_same_shapes(ctx, op, inputs, names, scalars)
        dtype = op.outputs[0].dtype
        options = {flag: bool(op.get_attr(flag)) if flag in op.attrs else False
                   for flag in flags}
        return [elementwise_lowering(
            lambda dt, *xs, k=k: update(*[_IrScalar(x, dtype) for x in xs], **options)[k].node
        )(ctx, op, inputs)[0] for k in range(refs)]

    return lower


class _IrScalar:
    """An IR scalar with the arithmetic `momentum_update`/`adam_update` use, so the lowering
    computes exactly the reference kernel's expression, in its order of operations."""

    __slots__ = ("node", "dtype")

    def __init__(self, node, dtype):
        self.node, self.dtype = node, dtype

    def _wrap(self, other):
        if isinstance(other, _IrScalar):
            return other.node
        return ir.const(other, self.dtype)

    def _op(self, kind, *args):
        return _IrScalar(ir.make(kind, self.dtype, args), self.dtype)

    def __add__(self, o):
        return self._op(S.ADD, self.node, self._wrap(o))

    def __radd__(self, o):
        return self._op(S.ADD, self._wrap(o), self.node)

    def __sub__(self, o):
        return self._op(S.SUB, self.node, self._wrap(o))

    def __rsub__(self, o):
        return self._op(S.SUB, self._wrap(o), self.node)

    def __mul__(self, o):
        return self._op(S.MUL, self.node, self._wrap(o))

    def __rmul__(self, o):
        return self._op(S.MUL, self._wrap(o), self.node)

    def __truediv__(self, o):
        return self._op(S.DIV, self.node, self._wrap(o))

    def __rtruediv__(self, o):
        return self._op(S.DIV, self._wrap(o), self.node)

    def sqrt(self):
        return self._op(S.SQRT, self.node)


APPLY_MOMENTUM = _op_def("ApplyMomentum", momentum_update, "use_nesterov",
                         doc="The momentum update of var and accum, in place; outputs the "
                             "new var and accum.",
                         lower=_lowering_of(momentum_update, "use_nesterov"))
APPLY_ADAM = _op_def("ApplyAdam", adam_update, "use_nesterov",
                     doc="The Adam update of var, m and v, in place; outputs their new values.",
                     lower=_lowering_of(adam_update, "use_nesterov"))

OP_DEFS = (APPLY_GRADIENT_DESCENT, APPLY_MOMENTUM, APPLY_ADAM)


# --- functions (TensorFlow's raw ops) -----------------------------------------------------------


def _ref(x, param):
    t = x._as_graph_tensor() if isinstance(x, variables.Variable) else x
    if not isinstance(t, Tensor):
        raise TypeError(f"'{param}' must be a Variable or a variable's reference tensor, got "
                        f"{x!r}.")
    return t


def _build(op_def, refs, values, attrs, name) -> Tensor:
    names = _SIGNATURES[op_def.name][0]
    refs = [_ref(x, p) for x, p in zip(refs, names)]
    graph = graph_for(refs)
    var = refs[0]
    values = [to_tensor(x, dtype=None if isinstance(x, Tensor) else var.dtype, graph=graph,
                        name=p) for x, p in zip(values, names[len(refs):])]
    return make_op(op_def, refs + values, {"T": var.dtype, **attrs},
                   name or op_def.name).outputs[0]


def apply_gradient_descent(var, alpha, delta, use_locking=False, name=None) -> Tensor:
    """var -= alpha * delta on variable `var`; returns its new value."""
    return _build(APPLY_GRADIENT_DESCENT, [var], [alpha, delta],
                  {"use_locking": bool(use_locking)}, name)


def apply_momentum(var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False,
                   name=None) -> Tensor:
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * grad +
    lr * momentum * accum), on variables `var` and `accum`; returns var's new value."""
    return _build(APPLY_MOMENTUM, [var, accum], [lr, grad, momentum],
                  {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)},
                  name)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
               use_locking=False, use_nesterov=False, name=None) -> Tensor:
    """TensorFlow's Adam update of variables `var`, `m` and `v` (see the module docstring);
    returns var's new value."""
    return _build(APPLY_ADAM, [var, m, v],
                  [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad],
                  {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)},
                  name)
