"""`tf.contrib.layers`: the TensorFlow 1.x contrib layer functions TF1 programs still use.

Regularizers (`l1_regularizer`, `l2_regularizer` = scale * sum(w^2) / 2, `l1_l2_regularizer`,
`apply_regularization`), initializers (`xavier_initializer`, contrib's
`variance_scaling_initializer`) and the layer functions `fully_connected`, `conv2d`,
`max_pool2d`, `avg_pool2d`, `flatten`, `dropout` and `batch_norm`, built on the `tf.layers`
classes with contrib's defaults (relu activations, xavier weights) and variable names
(`fully_connected/weights:0`, `Conv/biases:0`, `BatchNorm/moving_mean:0`).
"""

from __future__ import annotations

import math
import numbers

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, get_default_graph
from ..ops import api as ops
from ..ops import init_ops, loss_ops, nn_ops, random_ops
from ..ops.variable_scope import variable_scope
from . import layers_conv, layers_core, layers_norm

__all__ = ["l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization", "xavier_initializer", "xavier_initializer_conv2d",
           "variance_scaling_initializer", "fully_connected", "conv2d", "max_pool2d",
           "avg_pool2d", "flatten", "dropout", "batch_norm"]


# --- regularizers ------------------------------------------------------------------------

def _scaled_regularizer(scale, scope, default_name, penalty):
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")
        if scale == 0.0:
            return lambda _: None

    def regularizer(weights):
        with get_default_graph().name_scope(scope or default_name) as name:
            my_scale = ops.convert_to_tensor(scale, dtype=weights.dtype.base_dtype,
                                             name="scale")
            return ops.multiply(my_scale, penalty(weights), name=name)

    return regularizer


def l1_regularizer(scale, scope=None):
    """A function w -> scale * sum(|w|) (None for scale 0)."""
    return _scaled_regularizer(scale, scope, "l1_regularizer",
                               lambda w: ops.reduce_sum(ops.abs(w)))


def l2_regularizer(scale, scope=None):
    """A function w -> scale * sum(w^2) / 2 (`tf.nn.l2_loss`; None for scale 0)."""
    return _scaled_regularizer(scale, scope, "l2_regularizer", loss_ops.l2_loss)


def sum_regularizer(regularizer_list, scope=None):
    """A function w -> the sum of the regularizers' penalties that are not None."""
    regularizers = [r for r in regularizer_list if r is not None]

    def regularizer(weights):
        penalties = [p for p in (r(weights) for r in regularizers) if p is not None]
        if not penalties:
            return None
        return ops.add_n(penalties, name=scope or "sum_regularizer")

    return regularizer


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of l1_regularizer(scale_l1) and l2_regularizer(scale_l2)."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)],
                           scope=scope or "l1_l2_regularizer")


def apply_regularization(regularizer, weights_list=None):
    """The sum of `regularizer` over `weights_list` (default: the "weights" collection),
    also added to REGULARIZATION_LOSSES."""
    graph = get_default_graph()
    if weights_list is None:
        weights_list = graph.get_collection("weights")
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with graph.name_scope("get_regularization_penalty") as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else ops.constant(0.0) for p in penalties]
        total = ops.add_n(penalties, name=scope)
    graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


# --- initializers -------------------------------------------------------------------------

class variance_scaling_initializer:  # noqa: N801 - TensorFlow's name
    """contrib's initializer: variance factor / n for n = FAN_IN, FAN_OUT or FAN_AVG; a
    uniform draw, or a normal truncated at 2 stddev with stddev sqrt(1.3 factor / n)."""

    def __init__(self, factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                 dtype=_dtypes.float32):
        if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
            raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
        dtype = _dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        self.factor, self.mode, self.uniform = float(factor), mode, bool(uniform)
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        dims = [int(d) for d in shape]
        fan_in = float(dims[-2]) if len(dims) > 1 else float(dims[-1]) if dims else 1.0
        fan_out = float(dims[-1]) if dims else 1.0
        for d in dims[:-2]:
            fan_in, fan_out = fan_in * d, fan_out * d
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[
            self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return random_ops.random_uniform(dims, -limit, limit, dtype=dtype, seed=self.seed)
        stddev = math.sqrt(1.3 * self.factor / n)
        return random_ops.truncated_normal(dims, 0.0, stddev, dtype=dtype, seed=self.seed)


def xavier_initializer(uniform=True, seed=None, dtype=_dtypes.float32):
    """Glorot/Xavier: variance 2 / (fan_in + fan_out), uniform or truncated normal."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


# --- layer functions ----------------------------------------------------------------------

class _ContribDense(layers_core.Dense):
    weight_names = ("weights", "biases")


class _ContribConv2D(layers_conv.Conv2D):
    weight_names = ("weights", "biases")


def _collect(layer, variables_collections):
    """contrib's variable collections: MODEL_VARIABLES, plus those the caller names (a list,
    or a dict by "weights"/"biases")."""
    graph = get_default_graph()
    for variable, key in ((layer.kernel, "weights"), (layer.bias, "biases")):
        if variable is None:
            continue
        names = [GraphKeys.MODEL_VARIABLES]
        if isinstance(variables_collections, dict):
            names += list(variables_collections.get(key) or [])
        elif variables_collections:
            names += list(variables_collections)
        for name in names:
            if not any(variable is v for v in graph.get_collection(name)):
                graph.add_to_collection(name, variable)


def _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections):
    """Apply the normalizer, then the activation; add the result to `outputs_collections`."""
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    if outputs_collections:
        get_default_graph().add_to_collections(list(outputs_collections), outputs)
    return outputs


def fully_connected(inputs, num_outputs, activation_fn=nn_ops.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None,
                    biases_initializer=init_ops.zeros_initializer(), biases_regularizer=None,
                    reuse=None, variables_collections=None, outputs_collections=None,
                    trainable=True, scope=None):
    """A dense layer (variables `fully_connected/weights`, `fully_connected/biases`), then
    `normalizer_fn` (which replaces the bias) and `activation_fn` (relu by default)."""
    weights_initializer = weights_initializer or xavier_initializer()
    with variable_scope(scope, "fully_connected", reuse=reuse) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = _ContribDense(num_outputs, use_bias=normalizer_fn is None
                              and biases_initializer is not None,
                              kernel_initializer=weights_initializer,
                              bias_initializer=biases_initializer,
                              kernel_regularizer=weights_regularizer,
                              bias_regularizer=biases_regularizer, trainable=trainable,
                              name=sc.name, dtype=inputs.dtype, _scope=sc, _reuse=reuse)
        outputs = layer(inputs)
        _collect(layer, variables_collections)
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections)


def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=nn_ops.relu, normalizer_fn=None, normalizer_params=None,
           weights_initializer=None, weights_regularizer=None,
           biases_initializer=init_ops.zeros_initializer(), biases_regularizer=None,
           reuse=None, variables_collections=None, outputs_collections=None, trainable=True,
           scope=None):
    """A 2-D convolution (variables `Conv/weights`, `Conv/biases`), then `normalizer_fn`
    and `activation_fn` (relu by default); `padding` "SAME" by default."""
    if data_format not in (None, "NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format!r}.")
    weights_initializer = weights_initializer or xavier_initializer()
    with variable_scope(scope, "Conv", reuse=reuse) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = _ContribConv2D(num_outputs, kernel_size, strides=stride, padding=padding,
                               data_format="channels_first" if data_format == "NCHW"
                               else "channels_last", dilation_rate=rate,
                               use_bias=normalizer_fn is None
                               and biases_initializer is not None,
                               kernel_initializer=weights_initializer,
                               bias_initializer=biases_initializer,
                               kernel_regularizer=weights_regularizer,
                               bias_regularizer=biases_regularizer, trainable=trainable,
                               name=sc.name, dtype=inputs.dtype, _scope=sc, _reuse=reuse)
        outputs = layer(inputs)
        _collect(layer, variables_collections)
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections)


def _pool2d(layer_class, default_name, inputs, kernel_size, stride, padding, data_format,
            outputs_collections, scope):
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format!r}.")
    with get_default_graph().name_scope(scope or default_name):
        layer = layer_class(kernel_size, stride, padding=padding,
                            data_format="channels_first" if data_format == "NCHW"
                            else "channels_last")
        return _finish(layer(inputs), None, None, None, outputs_collections)


def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D max pooling with contrib's defaults (stride 2, "VALID")."""
    return _pool2d(layers_conv.MaxPooling2D, "MaxPool2D", inputs, kernel_size, stride,
                   padding, data_format, outputs_collections, scope)


def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D average pooling with contrib's defaults (stride 2, "VALID")."""
    return _pool2d(layers_conv.AveragePooling2D, "AvgPool2D", inputs, kernel_size, stride,
                   padding, data_format, outputs_collections, scope)


def flatten(inputs, outputs_collections=None, scope=None):
    """[batch, ...] -> [batch, k] (ops under `Flatten/`)."""
    with get_default_graph().name_scope(scope or "Flatten"):
        return _finish(layers_core.flatten(inputs), None, None, None, outputs_collections)


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """Dropout keeping each value with probability `keep_prob` while `is_training`."""
    with variable_scope(scope, "Dropout"):
        layer = layers_core.Dropout(rate=1 - keep_prob, noise_shape=noise_shape, seed=seed)
        return _finish(layer(inputs, training=is_training), None, None, None,
                       outputs_collections)


def _route_updates(updates, updates_collections) -> None:
    """Move a layer's update ops from UPDATE_OPS to `updates_collections` (None: to no
    collection, the caller makes the output wait for them)."""
    if not updates or updates_collections == GraphKeys.UPDATE_OPS:
        return
    present = get_default_graph().get_collection_ref(GraphKeys.UPDATE_OPS)
    present[:] = [op for op in present if not any(op is u for u in updates)]
    if updates_collections is not None:
        names = [updates_collections] if isinstance(updates_collections, str) \
            else list(updates_collections)
        get_default_graph().add_to_collections(names, updates)


def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               fused=None, data_format="NHWC", scope=None):
    """Batch normalization with contrib's defaults (no gamma, decay 0.999, variables under
    `BatchNorm/`); with `updates_collections=None` the moving averages update in place
    (the output waits for them)."""
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format!r}.")
    initializers = dict(param_initializers or {})
    regularizers = dict(param_regularizers or {})
    graph = get_default_graph()
    with variable_scope(scope, "BatchNorm", reuse=reuse) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = layers_norm.BatchNormalization(
            axis=1 if data_format == "NCHW" and inputs.shape.ndims != 2 else -1,
            momentum=decay, epsilon=epsilon, center=center, scale=scale,
            beta_initializer=initializers.get("beta", init_ops.zeros_initializer()),
            gamma_initializer=initializers.get("gamma", init_ops.ones_initializer()),
            moving_mean_initializer=initializers.get("moving_mean",
                                                     init_ops.zeros_initializer()),
            moving_variance_initializer=initializers.get("moving_variance",
                                                         init_ops.ones_initializer()),
            beta_regularizer=regularizers.get("beta"),
            gamma_regularizer=regularizers.get("gamma"), trainable=trainable,
            fused=fused, name=sc.name, dtype=inputs.dtype, _scope=sc, _reuse=reuse)
        outputs = layer(inputs, training=is_training)
        _route_updates(layer.updates, updates_collections)
        if layer.updates and updates_collections is None:
            with graph.control_dependencies(layer.updates):
                outputs = ops.identity(outputs)
        for variable in layer.variables:
            short = variable.op.name.rsplit("/", 1)[-1]
            names = [GraphKeys.MODEL_VARIABLES]
            if isinstance(variables_collections, dict):
                names += list(variables_collections.get(short) or [])
            elif variables_collections:
                names += list(variables_collections)
            for name in names:
                if not any(variable is v for v in graph.get_collection(name)):
                    graph.add_to_collection(name, variable)
        return _finish(outputs, None, None, activation_fn, outputs_collections)
