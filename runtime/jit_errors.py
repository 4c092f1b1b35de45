"""The errors a jitted function raises for bad input, with the classes NumPy raises.

`InvalidValueError` (sizes that do not broadcast, ...) is an InvalidArgumentError and a
ValueError; `InvalidIndexError` (an index out of range) is an InvalidArgumentError and an
IndexError, so NumPy code's own `except ValueError` / `except IndexError` catch them.
`TOO_DEEP` is the reason logged when a traced chain is too deep for the compiler's passes
(the function then runs as plain Python); `internal_failure` says whether any other
exception that tracing or compiling raised is flowjit's own failure (the function then runs
as plain Python too, with `failure_reason`) rather than an error of the code or its input.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, OpError


class InvalidValueError(InvalidArgumentError, ValueError):
    """A jitted function's invalid argument (sizes that do not broadcast, ...):
    TensorFlow's InvalidArgumentError, and a ValueError as NumPy raises for the same
    mistake, so NumPy code's `except ValueError` catches it too."""


class InvalidIndexError(InvalidArgumentError, IndexError):
    """A jitted function's index out of range: TensorFlow's InvalidArgumentError, and the
    IndexError NumPy raises for the same index."""


def as_numpy_error(message: str, node_def=None, op=None):
    """The error for a jitted function's bad input, with the class NumPy would raise:
    IndexError for an index out of range, ValueError otherwise."""
    lowered = message.lower()
    cls = InvalidIndexError if ("out of bounds" in lowered or "out of range" in lowered) \
        else InvalidValueError
    return cls(node_def, op, message)


# A pass or the tracer that recursed once per node of a very long chain (an unrolled loop)
# ran out of Python's stack: the function runs as plain Python instead of crashing.
TOO_DEEP = ("the traced expression is too deep for the compiler (a long chain of dependent "
            "operations, as an unrolled loop makes)")


def internal_failure(error: BaseException, tracing: bool) -> bool:
    """Whether `error`, raised while tracing (`tracing`) or compiling a jitted function, is a
    failure of flowjit itself, which the plain NumPy code would not meet (a RecursionError,
    an AssertionError, a KeyError in a pass, numba's errors, ...).  Errors of the code or its
    input are not: flowjit's error classes, and the ValueError and IndexError a size or
    index mismatch raises; while tracing also the TypeError and ArithmeticError the
    function's own code raises as NumPy would."""
    own = (OpError, ValueError, IndexError) + ((TypeError, ArithmeticError) if tracing else ())
    return isinstance(error, Exception) and not isinstance(error, own)


def failure_reason(error: BaseException, stage: str) -> str:
    """The logged reason for an internal failure while `stage` ("tracing", "compiling")."""
    if isinstance(error, RecursionError):
        return TOO_DEEP
    return f"flowjit failed while {stage} it ({type(error).__name__}: {error})"
