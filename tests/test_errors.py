"""The errors module (errors.py) and the error contract of graph building and running.

Every OpError raised while running names the op, its type and the file:line of the user
code that created it; build-time ValueError/TypeErrors carry the same description.
"""

import numpy as np
import pytest

import flowjit as tf
from source_lines import line_of
from flowjit import errors
from flowjit.ops import registry
from flowjit.ops.registry import OpDef

# TensorFlow's classes and canonical codes (tensorflow/core/protobuf/error_codes.proto).
TF_ERRORS = [
    ("CancelledError", 1, "CANCELLED"), ("UnknownError", 2, "UNKNOWN"),
    ("InvalidArgumentError", 3, "INVALID_ARGUMENT"),
    ("DeadlineExceededError", 4, "DEADLINE_EXCEEDED"), ("NotFoundError", 5, "NOT_FOUND"),
    ("AlreadyExistsError", 6, "ALREADY_EXISTS"),
    ("PermissionDeniedError", 7, "PERMISSION_DENIED"),
    ("ResourceExhaustedError", 8, "RESOURCE_EXHAUSTED"),
    ("FailedPreconditionError", 9, "FAILED_PRECONDITION"), ("AbortedError", 10, "ABORTED"),
    ("OutOfRangeError", 11, "OUT_OF_RANGE"), ("UnimplementedError", 12, "UNIMPLEMENTED"),
    ("InternalError", 13, "INTERNAL"), ("UnavailableError", 14, "UNAVAILABLE"),
    ("DataLossError", 15, "DATA_LOSS"),
]


def _line_of(marker: str) -> int:
    return line_of(__file__, marker)


def _site(marker: str) -> str:
    return f"{__file__}:{_line_of(marker)}"


def _kernel_def(kernel):
    """A test-only op (never registered) that passes its input's dtype/shape through."""
    return OpDef("TestKernel", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], kernel)


def _kernel_op(kernel, x, name):
    return tf.get_default_graph().create_op(_kernel_def(kernel), [x], {}, name).outputs[0]


# --- the classes ------------------------------------------------------------------------------


@pytest.mark.parametrize("name,code,const", TF_ERRORS)
def test_error_classes_and_codes(name, code, const):
    cls = getattr(tf.errors, name)
    assert cls.__name__ == name and issubclass(cls, tf.errors.OpError)
    assert issubclass(cls, Exception)
    assert cls.error_code == code and getattr(tf.errors, const) == code
    assert tf.errors.Code(code).name == const
    err = cls(None, None, "the message")
    assert err.error_code == code and err.message == "the message"
    assert err.op is None and err.node_def is None
    assert str(err) == "the message"
    assert name in tf.errors.__all__ and const in tf.errors.__all__


def test_ok_code_and_opError_base():
    assert tf.errors.OK == 0 and tf.errors.Code.OK == 0
    err = tf.errors.OpError(None, None, "base", tf.errors.Code.ABORTED)
    assert err.error_code == tf.errors.ABORTED
    assert tf.errors.OpError(None, None, "x").error_code == tf.errors.UNKNOWN


def test_error_with_op_names_op_type_and_site():
    t = tf.constant(1.0, name="the_const")  # DESCRIBE-MARKER
    err = tf.errors.InternalError(None, t.op, "broken")
    text = str(err)
    assert text.startswith("broken")
    assert "'the_const' (op: 'Const')" in text and _site("DESCRIBE-MARKER") in text
    assert err.op is t.op
    assert errors.describe_op(None) == ""
    assert errors.describe_op(t.op) == (f"'the_const' (op: 'Const'), created at "
                                        f"{_site('DESCRIBE-MARKER')} in "
                                        "test_error_with_op_names_op_type_and_site")


def test_errors_can_be_caught_as_op_error():
    p = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.OpError):
        tf.Session().run(p)


# --- run-time errors name op, type and line -------------------------------------------------


def test_unfed_placeholder_error():
    p = tf.placeholder(tf.int32, [2], name="labels")  # PLACEHOLDER-MARKER
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.Session().run(tf.identity(p))
    text = str(info.value)
    assert "'labels' (op: 'Placeholder')" in text and _site("PLACEHOLDER-MARKER") in text
    assert "int32" in text and "[2]" in text


def test_uninitialized_variable_error():
    v = tf.Variable(1.0, name="counter")  # VARIABLE-MARKER
    with pytest.raises(tf.errors.FailedPreconditionError) as info:
        tf.Session().run(tf.identity(v, name="use"))
    text = str(info.value)
    assert "uninitialized value counter" in text and "'use'" in text
    assert "'counter' (op: 'VariableV2')" in text and _site("VARIABLE-MARKER") in text


def test_generic_kernel_exception_becomes_invalid_argument():
    def kernel(ctx, inputs, attrs):
        raise IndexError("index 7 is out of bounds")

    x = tf.placeholder(tf.float64, [None, 3], name="x")
    graph = tf.get_default_graph()
    y = graph.create_op(_kernel_def(kernel), [x], {}, "explode").outputs[0]  # KERNEL-MARKER
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.Session().run(y, {x: np.zeros((2, 3))})
    err = info.value
    text = str(err)
    assert err.op is y.op and isinstance(err.__cause__, IndexError)
    assert "TestKernel failed: index 7 is out of bounds" in text
    assert "x:0: shape (2, 3) dtype float64" in text  # the inputs the kernel saw
    assert "'explode' (op: 'TestKernel')" in text and _site("KERNEL-MARKER") in text


def test_kernel_op_error_without_op_gets_the_op():
    def kernel(ctx, inputs, attrs):
        raise tf.errors.OutOfRangeError(None, None, "ran off the end")

    x = tf.constant(1.0)
    y = x.graph.create_op(_kernel_def(kernel), [x], {}, "reader").outputs[0]  # OUT-OF-RANGE-MARKER
    with pytest.raises(tf.errors.OutOfRangeError) as info:
        tf.Session().run(y)
    assert info.value.op is y.op and info.value.message == "ran off the end"
    assert _site("OUT-OF-RANGE-MARKER") in str(info.value)


def test_memory_error_becomes_resource_exhausted():
    def kernel(ctx, inputs, attrs):
        raise MemoryError("cannot allocate 1 PiB")

    y = _kernel_op(kernel, tf.constant(1.0), "hungry")
    with pytest.raises(tf.errors.ResourceExhaustedError, match="hungry") as info:
        tf.Session().run(y)
    assert info.value.error_code == tf.errors.RESOURCE_EXHAUSTED


def test_wrong_number_of_kernel_outputs_is_reported():
    y = _kernel_op(lambda ctx, inputs, attrs: [], tf.constant(1.0), "silent")
    with pytest.raises(tf.errors.InvalidArgumentError, match="returned 0 outputs"):
        tf.Session().run(y)


def test_unknown_op_type_is_not_found():
    with pytest.raises(tf.errors.NotFoundError, match="NoSuchOp"):
        registry.lookup("NoSuchOp")


# --- build-time errors ------------------------------------------------------------------------


def test_inference_value_error_names_op_shapes_and_line():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError) as info:
        tf.assign(v, [1.0, 2.0, 3.0], name="bad_assign")  # BUILD-VALUE-MARKER
    text = str(info.value)
    assert "'bad_assign' (op: 'Assign')" in text and _site("BUILD-VALUE-MARKER") in text
    assert "input shapes [(2,), (3,)]" in text and "dtypes [float32, float32]" in text


def test_inference_type_error_names_op_and_line():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(TypeError) as info:
        tf.assign(v, tf.constant([1, 2]), name="typed")  # BUILD-TYPE-MARKER
    text = str(info.value)
    assert "'typed' (op: 'Assign')" in text and _site("BUILD-TYPE-MARKER") in text
    assert "int32" in text and "float32" in text


def test_failed_inference_adds_no_op():
    before = len(tf.get_default_graph().get_operations())
    with pytest.raises(ValueError):
        tf.placeholder_with_default([1.0, 2.0], [3])
    names = [op.name for op in tf.get_default_graph().get_operations()[before:]]
    assert names == ["Const"]  # only the default value; the failed op was never added
