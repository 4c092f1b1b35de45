"""The background compiler of the tiered jit policy (runtime/clustering.py, "auto").

One daemon thread, started on the first job, compiles queued cluster signatures one at a
time, always the job whose cluster has spent the most time in its reference kernels first
(`priority()` is read when the thread picks, so a loop that keeps running moves up).  A job
holds its cluster only weakly: when a graph and its sessions are gone, its queued jobs are
dropped unrun.  The result is handed back through `done(result)`; the cluster installs it
between two of its runs (never while it runs).  At interpreter exit the thread picks no
new job, and waits for a compile in progress in this process to finish (`_stop`); one in
the compile worker process (a job marked `isolated`) goes on there without the parent and
still reaches the disk cache.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
from typing import Callable

from .targets import flush_caches

log = logging.getLogger("flowjit.jit")


@dataclasses.dataclass
class Job:
    """One signature to compile: `work()` returns the result handed to `done`; `alive()`
    says whether anyone still wants it; `priority()` orders the queue (highest first)."""

    work: Callable
    done: Callable
    alive: Callable
    priority: Callable
    isolated: bool = False   # compiles in another process: exit need not wait for it


_jobs: list = []
_cond = threading.Condition()
_thread: threading.Thread | None = None
_stopping = False
_busy = 0
_busy_here = 0   # of them, compiles running in this process (not in the compile worker)


def submit(job: Job) -> None:
    """Queue `job` for the background compiler thread (started on first use)."""
    global _thread
    with _cond:
        if _stopping:
            return
        _jobs.append(job)
        if _thread is None:
            _thread = threading.Thread(target=_serve, name="flowjit-compiler", daemon=True)
            _thread.start()
        _cond.notify()


def _next() -> Job | None:
    """The live job of highest priority, removed from the queue (None when stopping)."""
    global _busy, _busy_here
    with _cond:
        while True:
            if _stopping:
                return None
            _jobs[:] = [j for j in _jobs if j.alive()]
            if _jobs:
                job = max(_jobs, key=lambda j: j.priority())
                _jobs.remove(job)
                _busy += 1
                _busy_here += not job.isolated
                return job
            _cond.wait()


def _serve() -> None:
    global _busy, _busy_here
    while True:
        job = _next()
        if job is None:
            return
        try:
            result = job.work()
        except Exception as e:  # noqa: BLE001 - a failed job must not stop the thread
            log.warning("flowjit: background compile failed: %r", e)
            result = None
        try:
            job.done(result)
        finally:
            with _cond:
                _busy -= 1
                _busy_here -= not job.isolated
                _cond.notify_all()


def wait_idle(timeout: float | None = None) -> bool:
    """Block until no job is queued or compiling (tests and benchmarks); False on timeout."""
    with _cond:
        return _cond.wait_for(lambda: not _busy and not any(j.alive() for j in _jobs),
                              timeout)


def pending() -> int:
    """Jobs queued or compiling now."""
    with _cond:
        return _busy + len(_jobs)


EXIT_WAIT_SECONDS = 120.0   # at exit, how long a compile in progress may take to finish


@atexit.register
def _stop() -> None:
    """At interpreter exit: drop queued jobs and let a compile in progress finish first (a
    daemon thread stopped inside numba/LLVM while the interpreter tears down can crash the
    process; the finished kernel also reaches the disk cache for the next run)."""
    global _stopping
    with _cond:
        _stopping = True
        _jobs.clear()
        _cond.notify_all()
        if _busy_here:
            log.info("flowjit: waiting for a background compile to finish before exit")
            _cond.wait_for(lambda: not _busy_here, EXIT_WAIT_SECONDS)
    # its cache entry is written by a thread started after the interpreter joined its
    # threads: wait for it here, or the next run would compile again
    flush_caches()
