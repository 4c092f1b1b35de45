"""TensorFlow's runtime exception classes (`flowjit.errors`).

Owns `OpError` and its subclasses, raised while a graph runs, and `describe_op`, the one
function that formats "which op, created where" for every error message in flowjit.  Every
error names the op and its type and the file:line of the user code that created it, so a
newcomer can find the line to fix.  Errors found while *building* a graph are ordinary
`ValueError`/`TypeError`s (as in TensorFlow) carrying the same description.
"""

from __future__ import annotations

import enum


class Code(enum.IntEnum):
    """Canonical error codes (the same numbers as TensorFlow's)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15


def describe_op(op) -> str:
    """"'name' (op: 'Type'), created at file.py:12 in fn" for an Operation, or '' for None."""
    if op is None:
        return ""
    text = f"'{op.name}' (op: '{op.type}')"
    site = op.creation_site
    if site:
        text += f", created at {site}"
    return text


class OpError(Exception):
    """An error raised while running an op; `op` is the Operation at fault (or None)."""

    error_code = Code.UNKNOWN

    def __init__(self, node_def, op, message, error_code=None):
        self.node_def = node_def
        self.op = op
        self.message = message
        if error_code is not None:
            self.error_code = Code(error_code)
        where = describe_op(op)
        super().__init__(f"{message}\n\t [[node {where}]]" if where else message)


def _make(name: str, code: Code, doc: str):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc, "error_code": code})


CancelledError = _make("CancelledError", Code.CANCELLED, "An operation or step was cancelled.")
UnknownError = _make("UnknownError", Code.UNKNOWN, "An error of unknown cause.")
InvalidArgumentError = _make("InvalidArgumentError", Code.INVALID_ARGUMENT,
                             "An op received an invalid argument (value, shape or dtype).")
DeadlineExceededError = _make("DeadlineExceededError", Code.DEADLINE_EXCEEDED,
                              "A deadline (e.g. RunOptions.timeout_in_ms) expired.")
NotFoundError = _make("NotFoundError", Code.NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", Code.ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", Code.PERMISSION_DENIED,
                              "The caller may not run this operation.")
ResourceExhaustedError = _make("ResourceExhaustedError", Code.RESOURCE_EXHAUSTED,
                               "A resource (memory, queue capacity) was exhausted.")
FailedPreconditionError = _make("FailedPreconditionError", Code.FAILED_PRECONDITION,
                                "The system is not in a state to run the op, e.g. an "
                                "uninitialized variable was read.")
AbortedError = _make("AbortedError", Code.ABORTED, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", Code.OUT_OF_RANGE,
                        "Iteration past the valid range, e.g. a closed, empty queue.")
UnimplementedError = _make("UnimplementedError", Code.UNIMPLEMENTED,
                           "The operation is not implemented or supported.")
InternalError = _make("InternalError", Code.INTERNAL, "An internal invariant broke.")
UnavailableError = _make("UnavailableError", Code.UNAVAILABLE, "The service is unavailable.")
DataLossError = _make("DataLossError", Code.DATA_LOSS,
                      "Unrecoverable data loss or corruption, e.g. a malformed file.")

# TensorFlow's module-level code constants: `errors.INVALID_ARGUMENT == 3`, ...
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, \
    PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, \
    UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS = tuple(Code)

__all__ = [
    *(c.name for c in Code),
    "Code", "OpError", "describe_op", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
]
