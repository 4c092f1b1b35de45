"""The compiled-op groups of the pooling and of the normalization ops (compiled_op_groups.py
adds them to its GROUPS): one graph, one cluster each, compiled once; hypothesis varies the
sizes and values.  Each op appears in one or two configurations only (a numba compile grows
faster than the kernel: one 53-nest kernel took minutes); every padding, stride and layout
is checked against the reference by the reference target (tests/test_targets.py).

Inputs: `img` [N, H, W, C] with NaN, +-inf and small integers (ties in most windows) for
max pooling, `act` of the same shape with finite values for everything else, and the
channel vectors `scale`, `offset`, `mean`, `var` [C].  Sizes are never 1 (a size-1 dim is
another signature); H and W are at least 3, so every VALID window fits.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf
from flowjit.ops import lrn_ops, norm_grad_ops, pool_grad_ops
from flowjit.ops.builder import make_op

_EXPLICIT_NCHW = [[0, 0], [0, 0], [1, 1], [0, 1]]


def _attrs(ksize, strides, padding, data_format="NHWC", explicit=None):
    full = (lambda v: [1, *v, 1]) if data_format == "NHWC" else (lambda v: [1, 1, *v])
    out = {"ksize": full(ksize), "strides": full(strides), "padding": padding,
           "data_format": data_format}
    if explicit:
        out["explicit_paddings"] = [v for p in explicit for v in p]
    return out


def _nchw(t):
    return tf.transpose(t, [0, 3, 1, 2])


def _max_pools(P):
    """(input, MaxPool, attrs) of the max pools the group's ops differentiate."""
    out = []
    for x, ksize, strides, padding, fmt, explicit in [
            (P.img, [2, 2], [2, 2], "VALID", "NHWC", None),
            (_nchw(P.img), [3, 2], [1, 2], "EXPLICIT", "NCHW", _EXPLICIT_NCHW)]:
        pad_arg = explicit if explicit else padding
        y = tf.nn.max_pool(x, ksize, strides, pad_arg, data_format=fmt)
        out.append((x, y, _attrs(ksize, strides, padding, fmt, explicit)))
    return out


def _bn(P):
    """FusedBatchNormV3 ops: training blended with running statistics, and inference."""
    blended = tf.nn.fused_batch_norm(P.act, P.scale, P.offset, P.mean, P.var,
                                     epsilon=0.001, exponential_avg_factor=0.25)
    infer = tf.nn.fused_batch_norm(P.act, P.scale, P.offset, P.mean, P.var, epsilon=0.01,
                                   is_training=False)
    return [(outs, fmt, training) for outs, fmt, training in
            ((blended, "NHWC", True), (infer, "NHWC", False))]


def _bn_grads(P):
    out = []
    for outs, fmt, training in _bn(P):
        x = outs[0].op.inputs[0]
        out += list(norm_grad_ops.fused_batch_norm_grad_v3(
            x * 0.5 - 1.0, x, P.scale, *outs[0].op.outputs[3:6],
            epsilon=outs[0].op.get_attr("epsilon"), data_format=fmt,
            is_training=training)[:3])
    return out


def _lrn_grad(P):
    attrs = {"depth_radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75}
    y = tf.nn.lrn(P.act, **attrs)
    return make_op(lrn_ops.LRN_GRAD, [P.act * 0.5, P.act, y], attrs).outputs[0]


def pool_ops():
    """(op type, build(P)) of the pooling group."""
    return [
        ("Identity", lambda P: P.img),
        ("MaxPool", lambda P: [y for _, y, _ in _max_pools(P)]),
        ("AvgPool", lambda P: [tf.nn.avg_pool(P.act, 3, 2, "SAME"),
                               tf.nn.avg_pool(_nchw(P.act), [3, 2], 2, "VALID", "NCHW")]),
        ("MaxPoolGrad", lambda P: [pool_grad_ops.max_pool_grad(x, y, y * 0.5 + 1.0, a)
                                   for x, y, a in _max_pools(P)]),
        ("MaxPoolGradGrad", lambda P: [pool_grad_ops.max_pool_grad_grad(
            x, y, P.act if a["data_format"] == "NHWC" else _nchw(P.act), a)
            for x, y, a in _max_pools(P) if a["padding"] != "EXPLICIT"]),
        ("AvgPoolGrad", lambda P: [
            pool_grad_ops.avg_pool_grad(tf.shape(P.act), tf.nn.avg_pool(P.act, 3, 2, "SAME"),
                                        _attrs([3, 3], [2, 2], "SAME"))]),
        ("MaxPoolWithArgmax", lambda P: [*tf.nn.max_pool_with_argmax(
            P.img, [2, 3], [1, 2], "SAME", Targmax=tf.int32, include_batch_in_index=True)]),
    ]


def norm_ops():
    """(op type, build(P)) of the normalization group."""
    return [
        ("Identity", lambda P: P.act),
        ("FusedBatchNormV3", lambda P: [t for outs, _, _ in _bn(P) for t in outs]),
        ("FusedBatchNormGradV3", _bn_grads),
        ("LRN", lambda P: [tf.nn.lrn(P.act, 2, 2.0, 0.25, 0.5)]),
        ("LRNGrad", _lrn_grad),
    ]


INPUTS = {"img": (tf.float32, [None] * 4), "act": (tf.float32, [None] * 4),
          "scale": (tf.float32, [None]), "offset": (tf.float32, [None]),
          "mean": (tf.float32, [None]), "var": (tf.float32, [None])}

_SPECIALS = st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 0.5])


@st.composite
def feeds(draw):
    """The group's inputs: empty batches, odd and prime sizes, NaN and infinities."""
    n, h, w, c = (draw(st.sampled_from([0, 2, 3])), draw(st.sampled_from([3, 4, 5, 7])),
                  draw(st.sampled_from([3, 4, 6])), draw(st.sampled_from([2, 3, 5])))
    f32 = {"width": 32}
    img = draw(hnp.arrays(np.float32, (n, h, w, c), elements=st.one_of(
        st.integers(-3, 3).map(float), _SPECIALS)))
    act = draw(hnp.arrays(np.float32, (n, h, w, c), elements=st.floats(-3, 3, **f32)))

    def vector(lo, hi):
        return draw(hnp.arrays(np.float32, (c,), elements=st.floats(lo, hi, **f32)))

    return {"img": img, "act": act, "scale": vector(0.5, 2), "offset": vector(-2, 2),
            "mean": vector(-2, 2), "var": vector(0.25, 2)}


def groups(Group) -> list:
    """The two groups (compiled_op_groups.Group)."""
    return [Group("float32_pool", INPUTS, pool_ops(), feeds),
            Group("float32_norm", INPUTS, norm_ops(), feeds)]
