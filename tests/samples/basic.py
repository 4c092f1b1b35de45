"""Samples for ops/basic_ops.py and ops/variables.py."""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import FLOAT_DTYPES, arrays, shapes


@st.composite
def _const(draw):
    dtype = draw(st.sampled_from(FLOAT_DTYPES + (np.int32, np.bool_)))
    value = draw(arrays(dtype, draw(shapes())))
    return OpCase(lambda: [tf.constant(value)], {}, lambda f: [value])


@st.composite
def _placeholder(draw):
    value = draw(arrays(np.float32, draw(shapes())))
    return OpCase(lambda: [tf.placeholder(tf.float32, None, name="x")], {"x": value},
                  lambda f: [f["x"]])


@st.composite
def _placeholder_with_default(draw):
    value = draw(arrays(np.float64, draw(shapes())))
    return OpCase(lambda: [tf.placeholder_with_default(value, value.shape)], {},
                  lambda f: [value])


@st.composite
def _identity(draw):
    value = draw(arrays(np.float32, draw(shapes())))
    return OpCase(lambda: [tf.identity(tf.placeholder(tf.float32, name="x"))], {"x": value},
                  lambda f: [f["x"]])


@st.composite
def _ensure_non_empty(draw):
    value = draw(arrays(np.float32, draw(shapes())))
    axes = [a for a in range(value.ndim) if value.shape[a] > 0 and draw(st.booleans())]

    def build():
        from flowjit.ops.check_ops import ensure_non_empty

        return [ensure_non_empty(tf.placeholder(tf.float32, name="x"), axes, "empty")]
    return OpCase(build, {"x": value}, lambda f: [f["x"]])


@st.composite
def _stop_gradient(draw):
    value = draw(arrays(draw(st.sampled_from(FLOAT_DTYPES + (np.int32,))), draw(shapes())))
    dtype = tf.as_dtype(value.dtype)
    return OpCase(lambda: [tf.stop_gradient(tf.placeholder(dtype, name="x"))], {"x": value},
                  lambda f: [f["x"]])


def _noop_build():
    tf.no_op()
    return []


@st.composite
def _variable_case(draw, kind):
    init = draw(arrays(np.float64, draw(shapes(max_dims=3))))
    delta = draw(arrays(np.float64, init.shape))

    def build():
        v = tf.Variable(init, name="v")
        if kind == "VariableV2":
            return [v.initialized_value()]
        if kind == "Assign":
            return [tf.assign(v, delta)]
        if kind == "AssignAdd":
            with tf.control_dependencies([v.initializer]):
                return [tf.assign_add(v, delta)]
        if kind == "AssignSub":
            with tf.control_dependencies([v.initializer]):
                return [tf.assign_sub(v, delta)]
        return [tf.is_variable_initialized(v)]

    expected = {"VariableV2": lambda f: [init], "Assign": lambda f: [delta],
                "AssignAdd": lambda f: [init + delta], "AssignSub": lambda f: [init - delta],
                "IsVariableInitialized": lambda f: [np.bool_(False)]}[kind]
    return OpCase(build, {}, expected)


SAMPLES = {
    "Const": _const(),
    "Placeholder": _placeholder(),
    "PlaceholderWithDefault": _placeholder_with_default(),
    "Identity": _identity(),
    "StopGradient": _stop_gradient(),
    "EnsureNonEmpty": _ensure_non_empty(),
    "NoOp": st.just(OpCase(_noop_build, {}, lambda f: [])),
    **{k: _variable_case(k) for k in ("VariableV2", "Assign", "AssignAdd", "AssignSub",
                                       "IsVariableInitialized")},
}
