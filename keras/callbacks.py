"""`tf.keras.callbacks`: hooks `fit` calls around epochs and batches, and `History`.

`fit` calls, on each callback in order: `set_model`, `on_train_begin(logs)`, per epoch
`on_epoch_begin(epoch, logs)`, per batch `on_train_batch_begin/end(batch, logs)` (also
reachable under the old names `on_batch_begin/end`), `on_epoch_end(epoch, logs)` with the
epoch's mean loss and metrics (and `val_*`), and `on_train_end(logs)`.  A callback stops
training by setting `model.stop_training = True`.  `fit` returns its `History`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Callback", "History", "EarlyStopping", "LearningRateScheduler", "LambdaCallback",
           "CallbackList"]


class Callback:
    """Base class: every hook does nothing."""

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        """Called once before training with the model being trained."""
        self.model = model

    def set_params(self, params: dict) -> None:
        """Called once before training with fit's settings (epochs, steps, verbose)."""
        self.params = params

    def on_train_begin(self, logs=None):
        """Before the first epoch."""

    def on_train_end(self, logs=None):
        """After the last epoch (or when training stops)."""

    def on_epoch_begin(self, epoch, logs=None):
        """Before epoch `epoch` (from 0)."""

    def on_epoch_end(self, epoch, logs=None):
        """After epoch `epoch`, with its mean loss and metrics in `logs`."""

    def on_train_batch_begin(self, batch, logs=None):
        """Before training step `batch` of the epoch."""
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        """After training step `batch`, with the batch's loss and metrics in `logs`."""
        self.on_batch_end(batch, logs)

    def on_batch_begin(self, batch, logs=None):
        """Keras' old name of `on_train_batch_begin`."""

    def on_batch_end(self, batch, logs=None):
        """Keras' old name of `on_train_batch_end`."""


class History(Callback):
    """Records each epoch's logs: `history[key]` is the list of per-epoch values of `key`
    ("loss", metric names, "val_loss", ...); `epoch` the epoch numbers."""

    def __init__(self):
        super().__init__()
        self.history: dict = {}
        self.epoch: list = []

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by `min_delta` for `patience` epochs;
    `restore_best_weights` puts back the weights of the best epoch."""

    def __init__(self, monitor="val_loss", min_delta=0.0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got "
                             f"{mode!r}.")
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.sign = 1.0 if mode == "min" else -1.0
        self.min_delta = abs(float(min_delta))
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch = 0, 0
        self.best = self.sign * np.inf if self.baseline is None else self.baseline
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise KeyError(f"EarlyStopping monitors {self.monitor!r}, which fit's logs do not "
                           f"have (they have {sorted(logs or {})}).")
        if self.sign * (value - self.best) < -self.min_delta:
            self.best, self.wait = value, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait > self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)
            if self.verbose:
                print(f"Epoch {epoch + 1}: early stopping")


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate before each epoch to `schedule(epoch, lr)` (or
    `schedule(epoch)`); the rate of each epoch is logged as "lr"."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not getattr(optimizer, "feeds_learning_rate", False):
            raise ValueError("LearningRateScheduler needs a keras.optimizers optimizer (a "
                             "tf.train.Optimizer keeps its own learning rate).")
        try:
            rate = self.schedule(epoch, optimizer.learning_rate)
        except TypeError:   # a schedule of the epoch only (Keras' older form)
            rate = self.schedule(epoch)
        optimizer.learning_rate = float(rate)
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{rate}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = self.model.optimizer.learning_rate


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin/end(epoch, logs), on_batch_begin/end(batch,
    logs), on_train_begin/end(logs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None):
        super().__init__()
        for hook, fn in [("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)]:
            if fn is not None:
                setattr(self, hook, fn)


class CallbackList:
    """Calls a hook on every callback of a list, in order."""

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)
        self.wants_batches = any(_overrides(cb, name) for cb in self.callbacks for name in
                                 ("on_train_batch_begin", "on_train_batch_end",
                                  "on_batch_begin", "on_batch_end"))

    def call(self, hook: str, *args) -> None:
        """`cb.<hook>(*args)` for each callback."""
        for cb in self.callbacks:
            getattr(cb, hook)(*args)


def _overrides(callback, name) -> bool:
    """Whether `callback` does something in hook `name` (batch hooks cost per step)."""
    if name in vars(callback):
        return True
    return getattr(type(callback), name, None) is not getattr(Callback, name)
