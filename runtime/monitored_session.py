"""`tf.train.MonitoredTrainingSession`, `MonitoredSession`, `SingularMonitoredSession`,
`Scaffold` and the session creators: a training loop's Session with hooks, checkpoints
and recovery on restart (TensorFlow 1.x's monitored_session, OSDI 2016 paper §4.3).

`Scaffold.finalize()` completes what the session needs (an init op of the global
variables, a local init op, a `Saver`) and finalizes the graph.  The chief's creator
(`ChiefSessionCreator`) restores the latest checkpoint of `checkpoint_dir` when there is
one (a restarted training job goes on from its last checkpoint) and otherwise runs the init
op; a worker's creator (`WorkerSessionCreator`) runs neither: it waits until every global
variable has a value (the chief of its cluster initializes or restores them: variables of
an in-process cluster are shared, runtime/local_cluster.py), then runs the local init op.

A MonitoredSession starts the graph's queue runners (with a `Coordinator` it hands to the
hooks, stopped and joined on close).  `MonitoredSession.run` runs the caller's fetches and
every hook's `before_run` request as one step (runtime/session_hooks.py); a feed given by
both the caller and a hook is an error.  Leaving its `with` block closes it, calling the
hooks' `end` unless an error is passing; `OutOfRangeError` (an input queue ran dry) ends the
block quietly, as it ends a TF 1.x input loop.

Recovery (OSDI 2016 §4.3): a step that fails with `UnavailableError` or `AbortedError` (a
task of the cluster died or was restarted: runtime/master.py) is not the caller's error.
The MonitoredSession stops its queue runners, makes a new session with its creator (the
chief restores the latest checkpoint on every task, a consistent cut; a worker waits for
the chief), tells the hooks (`after_create_session`), and runs the step again.  Every
recovery is logged with the global step it went back to and kept in `recoveries`, so the
steps run again after the checkpoint are never silent.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from .. import errors
from ..compiler.core.graph import GraphKeys, get_default_graph
from ..ops import basic_ops, tf1_helpers, variable_collections
from .checkpoint import Saver, latest_checkpoint
from .global_step import get_global_step
from .queue_runner import Coordinator, start_queue_runners
from .session import Session
from .session_hooks import (CheckpointSaverHook, SessionRunArgs, SessionRunContext,
                            SessionRunValues)

USE_DEFAULT = object()   # MonitoredTrainingSession's "not given" for its checkpoint options
_LOG = logging.getLogger("flowjit.train")
_RECOVERABLE = (errors.AbortedError, errors.UnavailableError)
_RECOVERY_TRIES = 5        # new sessions tried in a row before the error is the caller's


@dataclasses.dataclass(frozen=True)
class Recovery:
    """One recovery of a MonitoredSession: the error that ended the step, the checkpoint
    the new session restored (None: the chief initialized, or a worker waited for its
    chief) and the global step it went back to (None without a global step)."""

    error: BaseException
    checkpoint: str | None
    global_step: int | None


class Scaffold:
    """The ops a monitored session needs, made by `finalize()` when not given."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        del ready_op, ready_for_local_init_op, summary_op, copy_from_scaffold
        self.init_op, self.init_feed_dict, self.init_fn = init_op, init_feed_dict, init_fn
        self.local_init_op, self.saver = local_init_op, saver
        self._finalized = False

    def finalize(self) -> "Scaffold":
        """Make the missing ops, then finalize the default graph (no op can be added)."""
        if self._finalized:
            return self
        graph = get_default_graph()
        if self.init_op is None:
            self.init_op = variable_collections.global_variables_initializer()
        if self.local_init_op is None:
            self.local_init_op = basic_ops.group(
                variable_collections.local_variables_initializer(),
                tf1_helpers.tables_initializer())
        if self.saver is None:
            savers = graph.get_collection(GraphKeys.SAVERS)
            self.saver = savers[0] if savers else Saver(allow_empty=True)
        graph.finalize()
        self._finalized = True
        return self


class ChiefSessionCreator:
    """Creates the chief's session: restore the latest checkpoint, else initialize."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._dir, self._file = checkpoint_dir, checkpoint_filename_with_path

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        session = Session(self._master, graph=get_default_graph(), config=self._config)
        checkpoint = self._file or (latest_checkpoint(self._dir) if self._dir else None)
        self.restored_from = checkpoint
        if checkpoint:
            scaffold.saver.restore(session, checkpoint)
        else:
            session.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
            if scaffold.init_fn is not None:
                scaffold.init_fn(scaffold, session)
        session.run(scaffold.local_init_op)
        return session


class WorkerSessionCreator:
    """Creates a worker's session: wait until the chief has set every global variable."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config, self._max_wait = master, config, max_wait_secs

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        session = Session(self._master, graph=get_default_graph(), config=self._config)
        names = [v.op.name for v in variable_collections.global_variables()]
        deadline = time.monotonic() + self._max_wait
        while True:
            missing = session._missing_variables(names)
            if not missing:
                break
            if time.monotonic() > deadline:
                session.close()
                raise errors.DeadlineExceededError(
                    None, None, f"WorkerSessionCreator: the variables {missing[:5]} were "
                    f"not initialized by the chief within {self._max_wait} s.")
            time.sleep(0.01)
        session.run(scaffold.local_init_op)
        return session


class MonitoredSession:
    """A Session with hooks (module docstring)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._should_stop = False
        self._grace = stop_grace_period_secs
        self.recoveries: list = []
        self._start()

    def _start(self) -> None:
        """Create the session, start the queue runners, tell the hooks."""
        self._sess = self._creator.create_session()
        self._coord = Coordinator(clean_stop_exception_types=[])
        self._threads = start_queue_runners(sess=self._sess, coord=self._coord)
        for hook in self._hooks:
            hook.after_create_session(self._sess, self._coord)

    def _recover(self, error: BaseException) -> None:
        """A new session after `error` (module docstring, "Recovery")."""
        self._coord.request_stop()
        self._sess.close()
        self._sess = None
        try:
            self._coord.join(self._threads, stop_grace_period_secs=self._grace)
        except Exception:  # noqa: BLE001 - the runners failed with the same lost task
            pass
        for attempt in range(_RECOVERY_TRIES):
            try:
                self._start()
                break
            except _RECOVERABLE as again:
                if attempt == _RECOVERY_TRIES - 1:
                    raise again from error
                time.sleep(0.5 * (attempt + 1))
        checkpoint = getattr(self._creator, "restored_from", None)
        step_tensor = get_global_step(self._sess.graph)
        step = None if step_tensor is None else int(self._sess.run(step_tensor))
        self.recoveries.append(Recovery(error, checkpoint, step))
        _LOG.warning("A step failed (%s: %s). Recovered with a new session%s; the global "
                     "step is back at %s, so the steps after it run again.",
                     type(error).__name__, getattr(error, "message", error),
                     f" from checkpoint {checkpoint}" if checkpoint else "", step)

    @property
    def graph(self):
        return self._sess.graph

    def should_stop(self) -> bool:
        """Whether a hook or the queue runners' coordinator asked to stop (or the session
        is closed)."""
        return self._should_stop or self._sess is None or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run `fetches` and the hooks' requests in one step; returns the caller's values.
        A lost task is recovered from and the step run again (module docstring)."""
        if self._sess is None:
            raise RuntimeError("Run called on a closed MonitoredSession.")
        while True:
            try:
                return self._run_once(fetches, feed_dict, options, run_metadata)
            except _RECOVERABLE as error:
                self._recover(error)

    def _run_once(self, fetches, feed_dict, options, run_metadata):
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        requests = [hook.before_run(context) for hook in self._hooks]
        feeds = dict(feed_dict or {})
        for request in requests:
            for key, value in ((request.feed_dict or {}).items() if request else ()):
                if key in feeds:
                    raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user: "
                                       f"{getattr(key, 'name', key)}.")
                feeds[key] = value
        asked = [i for i, r in enumerate(requests) if r is not None and r.fetches is not None]
        values = self._sess.run([fetches] + [requests[i].fetches for i in asked],
                                feed_dict=feeds, options=options, run_metadata=run_metadata)
        results = dict(zip(asked, values[1:]))
        for i, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(results.get(i), options, run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return values[0]

    def close(self) -> None:
        """Call the hooks' `end`, then close the session."""
        self._close(None)

    def _close(self, exception_type) -> None:
        if self._sess is None:
            return
        try:
            if exception_type is None:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            # closing the session first cancels the steps of runner threads blocked in it
            # (a dequeue, a SyncReplicasOptimizer's wait for gradients), so they can end
            self._coord.request_stop()
            self._sess.close()
            self._sess = None
            self._coord.join(self._threads, stop_grace_period_secs=self._grace)

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession of a chief, with `raw_session()` giving the Session itself."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir,
                                      checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self) -> Session:
        return self._sess


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """A MonitoredSession for training (module docstring): the chief restores or
    initializes and, with a `checkpoint_dir`, saves checkpoints every
    `save_checkpoint_steps` steps or `save_checkpoint_secs` seconds (600 s when neither is
    given); a worker waits for the chief.  Summaries and step-rate logging are not written
    (`save_summaries_*`, `log_step_count_steps` and `summary_dir` are accepted)."""
    del save_summaries_steps, save_summaries_secs, log_step_count_steps, summary_dir
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    hooks = list(hooks or [])
    if not is_chief:
        creator = WorkerSessionCreator(scaffold, master, config, max_wait_secs)
        return MonitoredSession(creator, hooks, stop_grace_period_secs)
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir)
    all_hooks = list(chief_only_hooks or []) + hooks
    if checkpoint_dir and ((save_checkpoint_secs or 0) > 0 or (save_checkpoint_steps or 0) > 0):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=save_checkpoint_secs,
                                             save_steps=save_checkpoint_steps,
                                             scaffold=scaffold))
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)
