"""`compile`, `fit`, `evaluate`, `predict` of Keras models (mixed into keras/models.py's
Model).

`compile` records the optimizer, loss and metrics; the first fit/evaluate (or compile of a
built model) adds to the model's graph (`Steps`): a label placeholder, the training forward
pass (the layers called with `training=True`; the inference outputs themselves when no
layer trains differently), the loss (the mean per-example loss plus weight penalties), the
metrics, and one train op (the optimizer's updates and the layers' own, such as batch
normalization's moving averages).  A training step is ONE `Session.run` of [train op, loss,
metrics] with the batch fed, which flowjit clusters and compiles like any graph; evaluate
runs [loss, metrics] of the inference outputs, predict the outputs.  Every batch but the
last has `batch_size` rows; the last may be smaller, and one compiled kernel serves every
batch size (sizes are not part of a kernel's signature), so no epoch compiles anything new.

`fit` reports each epoch's mean loss and metrics (each batch weighted by its size) to its
callbacks and returns the `History`; with `verbose=1` each epoch draws a progress bar
through flowjit/progress.py (on a terminal or in a notebook only) and prints a line per
epoch, with `verbose=2` only the line.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops.basic_ops import group, placeholder, placeholder_with_default
from ..progress import progress
from . import callbacks as _callbacks
from . import losses as _losses
from . import metrics as _metrics
from . import optimizers as _optimizers

__all__ = ["TrainingMixin", "Steps"]


class Steps:
    """The ops of a compiled model: the label placeholder, the training step's fetches
    [train op, loss, *metrics], the evaluation fetches [loss, *metrics] and their names."""

    def __init__(self, labels, train_fetches, eval_fetches, names, sparse, learning_rate):
        self.labels, self.train_fetches, self.eval_fetches = labels, train_fetches, eval_fetches
        self.names, self.sparse = names, sparse
        self.learning_rate = learning_rate   # the placeholder fed the optimizer's rate
        self._rate = (None, None)            # (rate, its 0-d float32 array): fed as is

    def train_feeds(self, model, x, y) -> dict:
        """The feed_dict of one training step."""
        feeds = {model._x: x, self.labels: y}
        if self.learning_rate is not None:
            rate = model.optimizer.learning_rate
            if self._rate[0] != rate:
                self._rate = (rate, np.array(rate, dtype=np.float32))
            feeds[self.learning_rate] = self._rate[1]
        return feeds


class TrainingMixin:
    """compile/fit/evaluate/predict over the model's graph and session (module docstring)."""

    # --- compile ------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, **kwargs):
        """Set the optimizer (name, keras.optimizers object or tf.train.Optimizer), the loss
        (name, keras.losses object or function) and metrics (names such as "accuracy",
        "mae", "mse", or functions).  Unknown names are a ValueError naming the known ones."""
        if kwargs:
            raise TypeError(f"compile: unknown keyword argument(s) {sorted(kwargs)}.")
        if loss is None:
            raise ValueError("compile needs a loss (a name such as 'mse' or "
                             "'sparse_categorical_crossentropy', or a function).")
        if loss_weights is not None or weighted_metrics:
            raise NotImplementedError("compile: loss_weights and weighted_metrics are not "
                                      "supported (one output per model).")
        self.optimizer = _optimizers.get(optimizer)
        self.loss = _losses.get(loss)
        metric_list = [metrics] if isinstance(metrics, str) else list(metrics or [])
        if isinstance(metrics, dict):
            raise NotImplementedError("compile: metrics per output (a dict) are not supported.")
        for m in metric_list:   # unknown names fail here, not at the first fit
            _metrics.resolve(m, TensorShape(None), TensorShape(None))
        self._compiled = (self.optimizer, self.loss, metric_list)
        self._steps = None
        if self.built:
            self._ensure_steps()

    def _ensure_steps(self) -> Steps:
        if self._compiled is None:
            raise RuntimeError(f"You must compile model {self.name} before training or "
                               "evaluating it: model.compile(optimizer, loss, metrics).")
        self._build_graph()
        if self._steps is None:
            self._steps = _build_steps(self)
        return self._steps

    # --- fit ----------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, **kwargs):
        """Train for `epochs` passes over (x, y) in shuffled batches; returns the History."""
        if kwargs:
            raise TypeError(f"fit: unknown keyword argument(s) {sorted(kwargs)}.")
        if class_weight is not None or sample_weight is not None or steps_per_epoch:
            raise NotImplementedError("fit: class_weight, sample_weight and steps_per_epoch "
                                      "are not supported.")
        if x is None or y is None:
            raise ValueError("fit needs x and y (NumPy arrays).")
        self._known_input(x)
        steps = self._ensure_steps()
        x, y = self._inputs(x), self._labels(y)
        _same_length(x, y)
        if validation_data is not None:
            if len(validation_data) != 2:
                raise NotImplementedError("fit: validation_data must be (x_val, y_val).")
            val = (self._inputs(validation_data[0]), self._labels(validation_data[1]))
            _same_length(*val)
        elif validation_split:
            if not 0.0 < validation_split < 1.0:
                raise ValueError(f"validation_split must be in (0, 1), got "
                                 f"{validation_split}.")
            split = int(math.floor(len(x) * (1.0 - validation_split)))
            x, y, val = x[:split], y[:split], (x[split:], y[split:])
        else:
            val = None
        batch_size = int(batch_size or 32)
        count = len(x)
        if count == 0:
            raise ValueError("fit: no training examples.")
        history = _callbacks.History()
        hooks = _callbacks.CallbackList([*(callbacks or []), history], self, {
            "epochs": epochs, "steps": math.ceil(count / batch_size), "verbose": verbose})
        session = self.session
        fetches, names = steps.train_fetches, steps.names
        self.stop_training = False
        hooks.call("on_train_begin", None)
        logs = {}
        for epoch in range(initial_epoch, epochs):
            began = time.perf_counter()
            hooks.call("on_epoch_begin", epoch, None)
            # one gather per epoch; the batches are then contiguous views
            xs, ys = (x, y) if not shuffle else _shuffled(x, y, np.random.permutation(count))
            total = np.zeros(len(names))
            seen = 0
            bar = progress(total=math.ceil(count / batch_size), desc=f"Epoch {epoch + 1}/"
                           f"{epochs}", enabled=None if verbose == 1 else False, unit="step")
            for batch, lo in enumerate(range(0, count, batch_size)):
                xb, yb = xs[lo:lo + batch_size], ys[lo:lo + batch_size]
                if hooks.wants_batches:
                    hooks.call("on_train_batch_begin", batch, None)
                values = session.run(fetches, steps.train_feeds(self, xb, yb))
                size = len(xb)
                total += np.asarray(values[1:], dtype=np.float64) * size
                seen += size
                if hooks.wants_batches:
                    hooks.call("on_train_batch_end", batch, _logs(names, values[1:]))
                if bar.enabled:
                    bar.update(1)
                    bar.set_postfix(loss=f"{total[0] / seen:.4f}", refresh=False)
                if self.stop_training:
                    break
            bar.close()
            logs = _logs(names, total / max(seen, 1))
            if val is not None:
                logs.update(("val_" + k, v) for k, v in
                            _logs(names, self._evaluate_arrays(*val, batch_size)).items())
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs} - {time.perf_counter() - began:.1f}s - "
                      + " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()), flush=True)
            hooks.call("on_epoch_end", epoch, logs)
            if self.stop_training:
                break
        hooks.call("on_train_end", logs)
        self.history = history
        return history

    # --- evaluate and predict -----------------------------------------------------------------
    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, return_dict=False, **kwargs):
        """The mean loss (and metrics) over (x, y): a scalar without metrics, else
        [loss, *metrics] (a dict with `return_dict=True`).  `verbose=1` draws a progress bar
        (on a terminal or in a notebook)."""
        if kwargs:
            raise TypeError(f"evaluate: unknown keyword argument(s) {sorted(kwargs)}.")
        if sample_weight is not None:
            raise NotImplementedError("evaluate: sample_weight is not supported.")
        self._known_input(x)
        names = self._ensure_steps().names
        x, y = self._inputs(x), self._labels(y)
        _same_length(x, y)
        values = self._evaluate_arrays(x, y, int(batch_size or 32), verbose == 1)
        if return_dict:
            return _logs(names, values)
        return float(values[0]) if len(values) == 1 else [float(v) for v in values]

    def _evaluate_arrays(self, x, y, batch_size, show=False) -> np.ndarray:
        steps = self._ensure_steps()
        session, total = self.session, np.zeros(len(steps.names))
        if len(x) == 0:
            raise ValueError("evaluate: no examples.")
        bar = progress(total=math.ceil(len(x) / batch_size), desc="evaluate",
                       enabled=None if show else False, unit="step")
        for lo in range(0, len(x), batch_size):
            xb, yb = x[lo:lo + batch_size], y[lo:lo + batch_size]
            values = session.run(steps.eval_fetches, {self._x: xb, steps.labels: yb})
            total += np.asarray(values, dtype=np.float64) * len(xb)
            bar.update(1)
        bar.close()
        return total / len(x)

    def predict(self, x, batch_size=None, verbose=1, steps=None, **kwargs):
        """The model's outputs for `x`, computed `batch_size` (32) rows at a time (with a
        progress bar on a terminal for `verbose=1`)."""
        if kwargs:
            raise TypeError(f"predict: unknown keyword argument(s) {sorted(kwargs)}.")
        self._known_input(x)
        self._build_graph()
        x = self._inputs(x)
        batch_size = int(batch_size or 32)
        session, out = self.session, self._y_pred
        bar = progress(total=math.ceil(len(x) / batch_size), desc="predict",
                       enabled=None if verbose == 1 else False, unit="step")
        parts = []
        for lo in range(0, len(x), batch_size):
            parts.append(session.run(out, {self._x: x[lo:lo + batch_size]}))
            bar.update(1)
        bar.close()
        if not parts:
            return np.zeros((0, *out.shape.as_list()[1:]), out.dtype.as_numpy_dtype)
        return np.concatenate(parts, axis=0)

    def train_on_batch(self, x, y):
        """One training step on (x, y); returns the loss (and metrics) of that batch."""
        self._known_input(x)
        steps = self._ensure_steps()
        values = self.session.run(steps.train_fetches, steps.train_feeds(
            self, self._inputs(x), self._labels(y)))[1:]
        return float(values[0]) if len(values) == 1 else [float(v) for v in values]

    def test_on_batch(self, x, y):
        """The loss (and metrics) on one batch, without training."""
        values = self._evaluate_arrays(self._inputs(x), self._labels(y), max(len(x), 1))
        return float(values[0]) if len(values) == 1 else [float(v) for v in values]

    def predict_on_batch(self, x):
        """The outputs for one batch."""
        return self.predict(x, batch_size=max(len(x), 1), verbose=0)

    # --- data ---------------------------------------------------------------------------------
    def _inputs(self, x) -> np.ndarray:
        want = self._x.shape.as_list()[1:]
        x = np.ascontiguousarray(x, dtype=self._x.dtype.as_numpy_dtype)
        if x.ndim != len(want) + 1 or any(w is not None and w != g
                                          for w, g in zip(want, x.shape[1:])):
            raise ValueError(f"Model {self.name} expects inputs of shape (batch, "
                             f"{', '.join(map(str, want))}), got {x.shape}.")
        return x

    def _labels(self, y) -> np.ndarray:
        steps = self._ensure_steps()
        want = steps.labels.shape.as_list()[1:]
        y = np.asarray(y)
        if steps.sparse and y.ndim == len(want) + 2 and y.shape[-1] == 1:
            y = y[..., 0]
        elif not steps.sparse and y.ndim == len(want) and want and want[-1] == 1:
            y = y[..., None]
        if y.ndim != len(want) + 1 or any(w is not None and w != g
                                          for w, g in zip(want, y.shape[1:])):
            hint = ""
            if _losses.kind(self.loss) == "categorical" and y.ndim == 1:
                hint = (" Integer class labels need loss='sparse_categorical_crossentropy' "
                        "(or one-hot labels: keras.utils.to_categorical).")
            raise ValueError(f"Model {self.name}: labels of shape {y.shape} do not fit the "
                             f"output shape {self._y_pred.shape} for loss {self.loss.name} "
                             f"(expected (batch, {', '.join(map(str, want))})).{hint}")
        return np.ascontiguousarray(y, dtype=steps.labels.dtype.as_numpy_dtype)


def _build_steps(model) -> Steps:
    optimizer, loss, metric_list = model._compiled
    graph, y_pred = model._graph, model._y_pred
    sparse = _losses.kind(loss) == "sparse"
    dims = y_pred.shape.as_list()
    layers = _all_layers(model)
    with graph.as_default():
        labels = placeholder("int32" if sparse else y_pred.dtype,
                             [None, *dims[1:-1]] if sparse else [None, *dims[1:]],
                             name="labels")
        differs = any(getattr(layer, "training_differs", False) for layer in layers)
        with graph.name_scope("training"):
            train_pred = model.call(model._x, training=True) if differs else y_pred
        updates = [op for layer in layers for op in layer.updates] if differs else []
        with graph.name_scope("penalties"):
            penalties = [p for layer in layers for p in layer.regularization_losses()]
        named = [_metrics.resolve(m, y_pred.shape, labels.shape)
                 for m in metric_list]
        # Keras gives metrics rank-1 labels of rank-2 outputs as a column
        metric_labels = ops.expand_dims(labels, -1) \
            if labels.shape.rank == 1 and len(dims) == 2 else labels
        fetches = []
        for scope, out in (("loss", train_pred), ("eval_loss", y_pred)):
            with graph.name_scope(scope):
                value = ops.reduce_mean(loss.per_example(labels, out))
                if penalties:
                    value = value + ops.add_n(penalties)
                fetches.append([value] + [ops.reduce_mean(fn(metric_labels, out))
                                          for _, fn in named])
        trainable = [w for layer in layers for w in layer.trainable_weights]
        if not trainable:
            raise ValueError(f"Model {model.name} has no trainable weights to fit.")
        learning_rate = placeholder_with_default(
            np.float32(optimizer.learning_rate), [], name="learning_rate") \
            if optimizer.feeds_learning_rate else None
        tf_optimizer = optimizer.tf_optimizer(learning_rate)
        minimize = tf_optimizer.minimize(fetches[0][0], var_list=_unique(trainable))
        train_op = group(minimize, *updates, name="train") if updates else minimize
    names = ["loss"] + [name for name, _ in named]
    return Steps(labels, [train_op, *fetches[0]], fetches[1], names, sparse, learning_rate)


def _all_layers(model) -> list:
    found = []
    for layer in model.layers:
        found += [inner for inner in getattr(layer, "sublayers", lambda: [layer])()
                  if inner not in found]
    return found


def _unique(variables) -> list:
    out = []
    for v in variables:
        if not any(v is w for w in out):
            out.append(v)
    return out


def _logs(names, values) -> dict:
    return {name: float(v) for name, v in zip(names, values)}


def _shuffled(x, y, order):
    return np.take(x, order, axis=0), np.take(y, order, axis=0)


def _same_length(x, y) -> None:
    if len(x) != len(y):
        raise ValueError(f"Inputs and labels have different numbers of examples: {len(x)} "
                         f"and {len(y)}.")
