"""TensorFlow's sparse optimizer updates: SparseApplyMomentum and SparseApplyAdagrad, the
updates its Momentum and Adagrad optimizers apply to the rows an IndexedSlices gradient
names (ops/indexed_slices.py; optimizers/ calls them with the rows of each index summed).

Inputs as TensorFlow's: SparseApplyMomentum(var, accum, lr, grad, indices, momentum) and
SparseApplyAdagrad(var, accum, lr, grad, indices); `var` and `accum` are variables (refs,
as for ApplyMomentum in training_ops.py), `grad` holds one row per index ([n] +
var.shape[1:]), `lr` and `momentum` are scalars.  For each i in order, with row = indices[i]
and g = grad[i] (a repeated index is updated again, as TensorFlow's kernels do):
- Momentum: accum[row] = accum[row] * momentum + g; var[row] -= lr * accum[row]
  (Nesterov: var[row] -= g * lr + accum[row] * momentum * lr);
- Adagrad: accum[row] += g * g (when `update_slots`); var[row] -= g * lr / sqrt(accum[row]).
Other rows keep their values.  Like training_ops' updates they output var's new value, then
accum's (flowjit's extra output), under the session's state lock; the rows are written into
the stored arrays when nothing else holds them (`VariableRef.writable_in_place`), else into
copies that replace them.  An index outside [0, var.shape[0]) is an InvalidArgumentError.  They
are STATEFUL, without gradient or lowering: the distinct indices they get come from a Unique
op, which no kernel compiles either.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.graph import Tensor
from ..errors import InvalidArgumentError
from . import training_ops
from .builder import FLOATS, INDEX_TYPES, check_dtype, make_op, to_tensor
from .registry import OpDef, Trait
from .variable_ref import VariableRef

# per op: the names of its inputs and which are scalars
_SIGNATURES = {
    "SparseApplyMomentum": (("var", "accum", "lr", "grad", "indices", "momentum"),
                            {"lr", "momentum"}),
    "SparseApplyAdagrad": (("var", "accum", "lr", "grad", "indices"), {"lr"}),
}


def _infer(op):
    names, scalars = _SIGNATURES[op.type]
    var, accum = op.inputs[:2]
    check_dtype(var, FLOATS, "var")
    for t, param in zip(op.inputs[:2], names):
        if not training_ops._is_variable(t):
            raise TypeError(f"Input '{param}' of '{op.type}' Op requires a variable (l-value) "
                            f"input, but {t.name} is produced by a {t.op.type} op.")
    if not var.shape.is_compatible_with(accum.shape):
        raise ValueError(f"{op.type}: var {var.shape} and accum {accum.shape} must have the "
                         f"same shape.")
    if var.shape.ndims == 0:
        raise ValueError(f"{op.type}: var must be at least 1 dimensional, got a scalar.")
    for t, param in zip(op.inputs, names):
        if param == "indices":
            check_dtype(t, INDEX_TYPES, "indices")
            if t.shape.ndims not in (None, 1):
                raise ValueError(f"{op.type}: indices must be a vector, got {t.shape}.")
            continue
        if t.dtype is not var.dtype:
            raise TypeError(f"Input '{param}' of '{op.type}' Op has type {t.dtype.name} that "
                            f"does not match type {var.dtype.name} of argument 'var'.")
        if param in scalars and t.shape.ndims not in (None, 0):
            raise ValueError(f"{op.type}: '{param}' must be a scalar, got {t.shape}.")
    grad, indices = op.inputs[3], op.inputs[4]
    want = indices.shape.concatenate(var.shape[1:]) if indices.shape.ndims == 1 else None
    if want is not None and not grad.shape.is_compatible_with(want):
        raise ValueError(f"{op.type}: grad must have shape [len(indices)] + var.shape[1:] = "
                         f"{want}, got {grad.shape}.")
    shape = var.shape.merge_with(accum.shape)
    return [(var.dtype, shape), (var.dtype, shape)]


def _check(ctx, var, accum, grad, indices, scalars):
    op = ctx.op
    for name, value in scalars.items():
        if np.ndim(value) != 0:
            raise InvalidArgumentError(None, op, f"{name} is not a scalar: "
                                                 f"{list(np.shape(value))}")
    if var.shape != accum.shape:
        raise InvalidArgumentError(None, op, f"var and accum do not have the same shape"
                                             f"{list(var.shape)} {list(accum.shape)}")
    if var.ndim == 0 or indices.ndim != 1:
        raise InvalidArgumentError(None, op, "var must be at least 1 dimensional and indices "
                                             "a vector")
    if grad.shape != indices.shape + var.shape[1:]:
        raise InvalidArgumentError(None, op, f"grad must be [len(indices)] + var.shape[1:]: "
                                             f"grad {list(grad.shape)}, indices "
                                             f"{list(indices.shape)}, var {list(var.shape)}")
    rows = indices.astype(np.intp)
    bad = (rows < 0) | (rows >= var.shape[0])
    if bad.any():
        k = int(np.argmax(bad))
        raise InvalidArgumentError(None, op, f"Index {rows[k]} at offset {k} in indices is out "
                                             f"of range")
    return rows


def _momentum_rows(var, accum, lr, g, momentum, use_nesterov):
    accum = accum * momentum + g
    if use_nesterov:
        return var - (g * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


def _adagrad_rows(var, accum, lr, g, update_slots):
    if update_slots:
        accum = accum + g * g
    return var - g * lr / np.sqrt(accum), accum


def _kernel(ctx, inputs, attrs):
    names, scalar_names = _SIGNATURES[ctx.op.type]
    refs, values = inputs[:2], dict(zip(names[2:], inputs[2:]))
    for r, param in zip(refs, names):
        if type(r) is not VariableRef:
            raise InvalidArgumentError(None, ctx.op, f"Input '{param}' must be a variable "
                                                     "reference; a variable's value cannot be "
                                                     "fed and then updated.")
    with ctx.state.lock:
        grad = values["grad"]
        rows = _check(ctx, refs[0].read(ctx.op), refs[1].read(ctx.op), grad, values["indices"],
                      {k: values[k] for k in scalar_names})
        # in place when nothing else holds the stored arrays (ops/variable_ref.py)
        var, accum = (r.writable_in_place() for r in refs)
        var, accum = (np.array(r.read(ctx.op), copy=True) if a is None else a
                      for r, a in zip(refs, (var, accum)))
        if ctx.op.type == "SparseApplyMomentum":
            args = (values["lr"], values["momentum"], bool(attrs.get("use_nesterov", False)))

            def update(v, a, g):
                return _momentum_rows(v, a, args[0], g, args[1], args[2])
        else:
            lr, update_slots = values["lr"], bool(attrs.get("update_slots", True))

            def update(v, a, g):
                return _adagrad_rows(v, a, lr, g, update_slots)
        try:
            with np.errstate(all="ignore"):
                if np.unique(rows).size == rows.size:   # distinct rows: all at once
                    var[rows], accum[rows] = update(var[rows], accum[rows], grad)
                else:
                    for i, row in enumerate(rows):       # in order, as TensorFlow's kernel
                        var[row], accum[row] = update(var[row], accum[row], grad[i])
        finally:
            var.flags.writeable = accum.flags.writeable = False
        refs[1].install(accum)
        return [refs[0].install(var), accum]


SPARSE_APPLY_MOMENTUM = OpDef("SparseApplyMomentum", _infer, _kernel, traits={Trait.STATEFUL},
                              ref_inputs={0, 1},
                              doc="The momentum update of the rows `indices` of var and "
                                  "accum, in place; outputs their new values.")
SPARSE_APPLY_ADAGRAD = OpDef("SparseApplyAdagrad", _infer, _kernel, traits={Trait.STATEFUL},
                             ref_inputs={0, 1},
                             doc="The Adagrad update of the rows `indices` of var and accum, "
                                 "in place; outputs their new values.")

OP_DEFS = (SPARSE_APPLY_MOMENTUM, SPARSE_APPLY_ADAGRAD)


def _build(op_def, var, accum, values, attrs, name) -> Tensor:
    names = _SIGNATURES[op_def.name][0]
    refs = [training_ops._ref(var, "var"), training_ops._ref(accum, "accum")]
    graph = refs[0].graph
    tensors = []
    for x, param in zip(values, names[2:]):
        dtype = None if isinstance(x, Tensor) or param == "indices" else refs[0].dtype
        tensors.append(to_tensor(x, dtype=dtype, graph=graph, name=param))
    return make_op(op_def, refs + tensors, {"T": refs[0].dtype, **attrs},
                   name or op_def.name).outputs[0]


def sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking=False,
                          use_nesterov=False, name=None) -> Tensor:
    """The momentum update of rows `indices` of variables `var` and `accum` (module
    docstring); returns var's new value."""
    return _build(SPARSE_APPLY_MOMENTUM, var, accum, [lr, grad, indices, momentum],
                  {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}, name)


def sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking=False, update_slots=True,
                         name=None) -> Tensor:
    """The Adagrad update of rows `indices` of variables `var` and `accum` (module
    docstring); returns var's new value."""
    return _build(SPARSE_APPLY_ADAGRAD, var, accum, [lr, grad, indices],
                  {"use_locking": bool(use_locking), "update_slots": bool(update_slots)}, name)
