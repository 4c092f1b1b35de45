"""`flowjit.grad` and `flowjit.value_and_grad`: JAX-style gradients of jitted functions.

`grad(fn, argnums)` is a `JitFunction` whose traced function is "fn, then
`gradients(value, arguments[argnums])`": tracing `fn` (flowjit ops or NumPy code, as under
`flowjit.jit`) records the forward graph, compiler/gradients.py appends the reverse-mode
graph to it, and the whole graph — forward and backward — compiles as ONE cluster through
`compile_cluster`, with the same signature cache, recompile logging, reference-kernel
fallback and `.lower()` as `jit`. Nothing here knows about lowering: a gradient op the
compiler cannot lower makes that signature run interpreted, as any jitted function would.

Invariants and rules (JAX semantics):
- The differentiated output is a float scalar (rank 0); anything else is a TypeError naming
  the shape or dtype. Differentiated arguments must be floating-point arrays (or Python
  floats, passed as float64 0-d arrays), or lists/tuples of them; the gradient has the
  argument's structure, dtype and shape. Anything else is a TypeError naming the argument.
- An argument the value does not depend on gets zeros of its shape, never None.
- Composition: `grad(jit(f))` differentiates `f` (a JitFunction is unwrapped to its `.fn`);
  `jit(grad(f))` and `grad(grad(f))` work because a GradFunction called with traced
  arguments (inside another trace) runs its traced function inline, so the outer trace sees
  the gradient graph and — every op used by a gradient having a gradient itself — can
  differentiate it again.
- A graph break (a construct tracing cannot represent) is an error here: there is no plain
  Python fallback that could compute a gradient.

Signatures are exact shapes (a deliberate exception to DESIGN.md principle 5): with unknown
sizes the gradients of reductions and broadcasts (ops/reduction_ops.py, sum_to_shape.py) build
runtime shape arithmetic (Rank, Range, SelectV2 on shape vectors) that lowering cannot
compile, so a shape-generic gradient would always run interpreted. A gradient therefore
compiles once per shape, and a shape-generic `jit` that calls one retraces with exact sizes
(NeedsStaticShapes, logged once), as for NumPy code that reads sizes.
"""

from __future__ import annotations

import numpy as np

from ..compiler.gradients import gradients
from ..compiler.np_array import NeedsStaticShapes, TracedArray, as_tensor, is_traced, wrap
from ..compiler.np_module import traced_copy
from ..ops import indexed_slices
from ..ops.array_ops import zeros_like
from ..ops.basic_ops import constant
from .jit import JitFunction


def _argnums_tuple(argnums) -> tuple:
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),)
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in argnums):
        return tuple(int(i) for i in argnums)
    raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}.")


def _fn_name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _map_leaves(x, leaf_fn, path):
    """`x` with every non-list/tuple leaf replaced by leaf_fn(leaf, path)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_map_leaves(v, leaf_fn, f"{path}[{i}]") for i, v in enumerate(x))
    return leaf_fn(x, path)


def _is_float_value(x) -> bool:
    return isinstance(x, (float, np.floating)) or (
        isinstance(x, np.ndarray) and x.dtype.kind == "f")


def _diff_input(x, where: str, who: str):
    """(traced value to pass to fn, the tensor to differentiate with respect to)."""
    if is_traced(x):
        t = as_tensor(x)
        if not t.dtype.is_floating:
            raise TypeError(f"{who} requires floating-point inputs, but {where} has dtype "
                            f"{t.dtype.name}. Differentiate with respect to float arguments "
                            f"only (choose them with argnums).")
        return x, t
    if isinstance(x, (float, np.floating)) and not isinstance(x, bool):
        t = np.asarray(x, dtype=np.float64 if isinstance(x, float) else type(x))
        t = wrap(_constant(t))
        return t, as_tensor(t)
    kind = type(x).__name__ if not isinstance(x, np.ndarray) else f"{x.dtype} array"
    raise TypeError(f"{who} requires floating-point inputs, but {where} is {kind} "
                    f"({x!r:.60}). Differentiate with respect to float arguments only "
                    f"(choose them with argnums).")


def _constant(value: np.ndarray):

    return constant(value)


def _value_tensor(value, who: str):
    """The differentiated output as a float scalar tensor (TypeError otherwise)."""
    t = as_tensor(value)
    if t is None:
        if not _is_float_value(value):
            raise TypeError(f"{who} requires a float scalar output, but the function returned "
                            f"{type(value).__name__} ({value!r:.60}).")
        t = _constant(np.asarray(value))
    if t.shape.ndims != 0:
        shape = tuple(t.shape.as_list()) if t.shape.ndims is not None else "unknown"
        raise TypeError(f"{who}: gradient only defined for scalar-output functions. Output "
                        f"had shape: {shape}.")
    if not t.dtype.is_floating:
        raise TypeError(f"{who} requires real-valued outputs (a floating-point dtype), but "
                        f"the output has dtype {t.dtype.name}.")
    return t


def _gradient_body(fn, argnums: tuple, single: bool, has_aux: bool, with_value: bool,
                   who: str):
    """The traced function of a GradFunction: runs on traced arguments inside a graph."""

    def body(*args, **kwargs):
        if max(argnums) >= len(args) or min(argnums) < -len(args):
            raise TypeError(f"{who}: differentiating with respect to argnums={argnums} "
                            f"requires at least {max(argnums) + 1} positional arguments, "
                            f"but got {len(args)}.")
        args = list(args)
        xs_per_arg = []
        for i in argnums:
            xs: list = []

            def leaf(x, where, xs=xs):
                passed, t = _diff_input(x, where, who)
                xs.append(t)
                return passed

            args[i] = _map_leaves(args[i], leaf, f"argument {i % len(args)}")
            xs_per_arg.append(xs)
        out = traced_copy(fn)(*args, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{who} with has_aux=True requires the function to return a "
                                f"(value, aux) pair, got {type(out).__name__}.")
            value, aux = out
        else:
            value, aux = out, None
        y = _value_tensor(value, who)
        flat = [t for xs in xs_per_arg for t in xs]
        grads = [indexed_slices.dense(g) for g in gradients(y, flat, name="grad")]  # arrays
        grads = iter([wrap(g if g is not None else zeros_like(x))
                      for g, x in zip(grads, flat)])
        per_arg = tuple(_map_leaves(args[i], lambda _x, _p: next(grads), "")
                        for i in argnums)
        g = per_arg[0] if single else per_arg
        if with_value:
            return ((value, aux), g) if has_aux else (value, g)
        return (g, aux) if has_aux else g

    body.__name__ = body.__qualname__ = who
    body.__doc__ = getattr(fn, "__doc__", None)
    return body


def _promote_floats(args, argnums):
    """Python floats at argnums become float64 0-d arrays, so their value is not part of the
    signature (no recompile per value) and they are differentiable."""
    if not any(isinstance(args[i], float) for i in argnums if -len(args) <= i < len(args)):
        return args
    args = list(args)
    for i in argnums:
        if -len(args) <= i < len(args) and isinstance(args[i], float):
            args[i] = np.asarray(args[i], dtype=np.float64)
    return tuple(args)


def _leaves(args, kwargs) -> list:
    out: list = []

    def visit(x):
        if isinstance(x, (list, tuple)):
            for v in x:
                visit(v)
        elif isinstance(x, dict):
            for v in x.values():
                visit(v)
        else:
            out.append(x)

    visit(args)
    visit(kwargs)
    return out


class GradFunction(JitFunction):
    """A jitted gradient (see `flowjit.grad` / `flowjit.value_and_grad`)."""

    def __init__(self, fn, argnums=0, has_aux=False, with_value=False):
        static = fn.static_argnames if isinstance(fn, JitFunction) else ()
        inner = fn.fn if isinstance(fn, JitFunction) else fn
        if not callable(inner):
            raise TypeError(f"grad expects a callable, got {type(fn).__name__}.")
        self.argnums = _argnums_tuple(argnums)
        self.has_aux = bool(has_aux)
        kind = "value_and_grad" if with_value else "grad"
        body = _gradient_body(inner, self.argnums, not isinstance(argnums, (tuple, list)),
                              self.has_aux, with_value, f"{kind}({_fn_name(inner)})")
        super().__init__(body, static, fallback=False)
        self.exact_shapes = True    # see the module docstring: gradients compile per shape

    def __call__(self, *args, **kwargs):
        if any(is_traced(a) for a in _leaves(args, kwargs)):
            # inside another trace (jit(grad(f)), grad(grad(f))): inline the graph; an
            # enclosing shape-generic jit retraces with exact sizes (see the docstring)
            unknown = [a for a in _leaves(args, kwargs) if isinstance(a, TracedArray)
                       and not as_tensor(a).shape.is_fully_defined()]
            if unknown:
                raise NeedsStaticShapes(f"{self.__name__} needs exact array sizes")
            return self.fn(*args, **kwargs)
        return super().__call__(*_promote_floats(args, self.argnums), **kwargs)

    def lower(self, *args, **kwargs):
        """Everything the compiler did for the gradient at these arguments (`Lowered`)."""
        return super().lower(*_promote_floats(args, self.argnums), **kwargs)


def grad(fn, argnums=0, has_aux: bool = False) -> GradFunction:
    """The gradient of scalar-valued `fn` with respect to argument(s) `argnums`, compiled.

    `fn` takes arrays and returns a float scalar (flowjit ops or NumPy code, as under
    `flowjit.jit`; a `jit`-ed function is accepted too). `argnums`: an int (the result is
    one gradient) or a tuple of ints (a tuple of gradients); each differentiated argument is
    a float array, a Python float, or a list/tuple of them, and its gradient has the same
    structure, shape and dtype (zeros where the value does not depend on it). With
    `has_aux=True`, `fn` returns `(value, aux)` and the result is `(gradient, aux)`.
    Forward and backward compile together as one function per signature, like `jit`.
    """
    return GradFunction(fn, argnums, has_aux, with_value=False)


def value_and_grad(fn, argnums=0, has_aux: bool = False) -> GradFunction:
    """Like `grad`, but returns `(value, gradient)`; with `has_aux=True`, `fn` returns
    `(value, aux)` and the result is `((value, aux), gradient)`. One compiled function
    computes both."""
    return GradFunction(fn, argnums, has_aux, with_value=True)
