"""`tf.train.SessionRunHook` and the hooks TensorFlow 1.x training loops use with a
`MonitoredSession` (runtime/monitored_session.py runs them).

A hook sees the session's life: `begin()` before the graph is finalized,
`after_create_session(session, coord)` once variables are initialized or restored,
`before_run(run_context)` before each `run` (it may return `SessionRunArgs`: more fetches,
feeds, options, run with the caller's in the same step), `after_run(run_context,
run_values)` with the results of its own fetches, and `end(session)` when the session
closes normally.  `run_context.request_stop()` makes `should_stop()` true.

The hooks: `StopAtStepHook` (stop at a global step), `CheckpointSaverHook` (a checkpoint
every N steps or seconds, at the start and at the end, with `Saver.save`: atomic files),
`NanTensorHook` (a NaN loss raises `NanLossDuringTrainingError` or stops), and
`LoggingTensorHook` (logs tensors every N steps or seconds on the `flowjit.train` logger).
Each needs the global step (`tf.train.get_or_create_global_step()`) where TensorFlow's does.
"""

from __future__ import annotations

import collections
import logging
import os
import time

import numpy as np

from ..compiler.core.graph import get_default_graph
from .global_step import get_global_step

log = logging.getLogger("flowjit.train")


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a `run`: fetches, feeds and options."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """The results of a hook's fetches, with the step's options and metadata."""


class SessionRunContext:
    """A `run` as hooks see it: the caller's arguments and the session; a hook may ask the
    monitored session to stop."""

    def __init__(self, original_args, session):
        self.original_args = original_args
        self.session = session
        self.stop_requested = False

    def request_stop(self) -> None:
        """Make the monitored session's `should_stop()` true after this step."""
        self.stop_requested = True


class SessionRunHook:
    """A hook of a monitored session's life (module docstring); every method does
    nothing unless overridden."""

    def begin(self):
        """Called before the graph is finalized: the hook may add ops."""

    def after_create_session(self, session, coord):
        """Called once the session exists, its variables initialized or restored."""

    def before_run(self, run_context):
        """Called before each run; returns SessionRunArgs or None."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each run with the results of this hook's fetches."""

    def end(self, session):
        """Called when the session closes without an error."""


class NanLossDuringTrainingError(RuntimeError):
    """The loss a NanTensorHook watches became NaN."""

    def __str__(self):
        return "NaN loss during training."


def _global_step(hook_name: str):
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}: call "
                           "tf.train.get_or_create_global_step() before the session.")
    return step


class StopAtStepHook(SessionRunHook):
    """Request a stop once the global step reaches `last_step` (or `num_steps` past the
    step at which the session started)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._step_tensor = _global_step("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._step_tensor)

    def after_run(self, run_context, run_values):
        # the fetched step is read before the step's update may have run: read it again
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._step_tensor)) >= self._last_step:
                run_context.request_stop()


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one)."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self._last_step, self._last_time = None, None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> None:
        self._last_step, self._last_time = step, time.time()

    def last_triggered_step(self):
        return self._last_step


class CheckpointSaverHook(SessionRunHook):
    """Save a checkpoint (`<checkpoint_dir>/model.ckpt-<step>`) when the session starts,
    every `save_steps` steps or `save_secs` seconds, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._dir, self._saver, self._scaffold = checkpoint_dir, saver, scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        self._step_tensor = _global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        step = int(session.run(self._step_tensor))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step: int) -> bool:
        """Save at `step`; True when a listener asks to stop training."""
        for listener in self._listeners:
            listener.before_save(session, step)
        saver = self._saver or (self._scaffold.saver if self._scaffold is not None
                                else _default_saver())
        saver.save(session, self._path, global_step=step)
        log.info("flowjit: saved checkpoint for step %d into %s", step, self._path)
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop


def _default_saver():
    graph = get_default_graph()
    savers = graph.get_collection("savers")
    if savers:
        return savers[0]
    raise RuntimeError("CheckpointSaverHook needs a saver: pass saver= or scaffold=, or "
                       "add one to the 'savers' collection.")


class NanTensorHook(SessionRunHook):
    """Raise NanLossDuringTrainingError (or, with fail_on_nan_loss=False, request a stop)
    when `loss_tensor` is NaN after a step."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            if self._fail:
                raise NanLossDuringTrainingError
            log.warning("flowjit: model diverged with loss = NaN; stopping.")
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Log `tensors` (a list, or a dict of tag to tensor) every `every_n_iter` steps or
    `every_n_secs` seconds (or only at the end with `at_end=True`) on `flowjit.train`."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        if not at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            tensors = {getattr(t, "name", str(t)): t for t in tensors}
        self._tensors, self._formatter, self._at_end = tensors, formatter, at_end
        self._timer = None if (every_n_iter is None and every_n_secs is None) else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._iter = 0
        self.logged = []   # the dicts logged, in order (what the log lines show)

    def before_run(self, run_context):
        self._due = self._timer is not None and self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._tensors) if self._due else None

    def after_run(self, run_context, run_values):
        if self._due:
            self._log(run_values.results)
            self._timer.update_last_triggered_step(self._iter)
        self._iter += 1

    def end(self, session):
        if self._at_end:
            self._log(session.run(self._tensors))

    def _log(self, values: dict) -> None:
        self.logged.append(values)
        text = self._formatter(values) if self._formatter else ", ".join(
            f"{tag} = {values[tag]}" for tag in self._tensors)
        log.info("%s", text)
