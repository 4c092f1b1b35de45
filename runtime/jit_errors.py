"""The errors a jitted function raises for bad input, with the classes NumPy raises.

`InvalidValueError` (sizes that do not broadcast, ...) is an InvalidArgumentError and a
ValueError; `InvalidIndexError` (an index out of range) is an InvalidArgumentError and an
IndexError, so NumPy code's own `except ValueError` / `except IndexError` catch them.
`TOO_DEEP` is the reason logged when a traced chain is too deep for the compiler's passes
(the function then runs as plain Python).
"""

from __future__ import annotations

from ..errors import InvalidArgumentError


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
