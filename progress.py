"""Progress bars of flowjit's long loops: one `progress(...)` wrapper over tqdm.

Owns the decision whether a bar is shown and the object a loop talks to.  The benchmarks
(one step per case or kernel) and `python -m flowjit run --steps N` (one step per step) call
`progress`; it returns a tqdm bar, or a no-op stand-in with the same interface
(iteration, `update`, `set_postfix`, `set_description`, `close`, `printing`, context
manager) so callers never test whether a bar is shown.

When a bar is shown (`enabled=None`, the default, decides by itself):

- never when the environment sets `FLOWJIT_PROGRESS=0` (also "false", "no", "off"), even
  for `enabled=True`;
- inside a Jupyter kernel (`ipykernel` imported and an IPython kernel running): a
  `tqdm.auto` bar, a widget in the notebook;
- when the stream it writes to (`file`, default `sys.stderr`) is a terminal: a text bar;
- otherwise not, unless `FLOWJIT_PROGRESS=1` asks for bars anyway (a parent process that
  relays a child's stderr to a terminal sets it, and `COLUMNS` to the terminal's width,
  which sizes a bar written to anything but a terminal).

Nothing is imported from tqdm until a bar is shown, and this module imports nothing of
flowjit (it is one of the leaves of the package's layers).
"""

from __future__ import annotations

import contextlib
import os
import sys

ENV_VAR = "FLOWJIT_PROGRESS"
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def in_notebook() -> bool:
    """Whether this process is a Jupyter (IPython) kernel."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def should_show(enabled: bool | None = None, file=None) -> bool:
    """Whether `progress(..., enabled=enabled, file=file)` shows a bar (module docstring)."""
    setting = os.environ.get(ENV_VAR, "").strip().lower()
    if setting in _OFF:
        return False
    if enabled is not None:
        return bool(enabled)
    if setting in _ON:
        return True
    return in_notebook() or _isatty(sys.stderr if file is None else file)


class NullProgress:
    """The stand-in for a bar that is not shown: iterates over `iterable`, ignores the rest."""

    enabled = False

    def __init__(self, iterable=None, total=None):
        self.iterable = iterable
        self.total = total
        self.n = 0

    def __iter__(self):
        for item in self.iterable if self.iterable is not None else ():
            yield item
            self.n += 1

    def __len__(self) -> int:
        return self.total if self.total is not None else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        """Count `n` more steps done."""
        self.n += n

    def set_postfix(self, *args, **kwargs) -> None:
        """Nothing to show."""

    def set_description(self, desc=None, refresh: bool = True) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""

    @contextlib.contextmanager
    def printing(self, stream=None):
        """A block that prints lines (nothing to clear here)."""
        yield


class Progress:
    """A shown bar: a tqdm bar behind NullProgress's interface."""

    enabled = True

    def __init__(self, bar):
        self.bar = bar
        self.total = bar.total

    @property
    def n(self) -> int:
        """Steps done so far."""
        return self.bar.n

    def __len__(self) -> int:
        return len(self.bar)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self):
        return iter(self.bar)

    def update(self, n: int = 1) -> None:
        """Count `n` more steps done."""
        self.bar.update(n)

    def set_postfix(self, *args, **kwargs) -> None:
        """Show `key=value` pairs after the bar (tqdm's `set_postfix`)."""
        self.bar.set_postfix(*args, **kwargs)

    def set_description(self, desc=None, refresh: bool = True) -> None:
        """Change the text before the bar."""
        self.bar.set_description(desc, refresh)

    def close(self) -> None:
        """Take the bar off the screen (it is not left behind)."""
        self.bar.close()

    @contextlib.contextmanager
    def printing(self, stream=None):
        """A block that prints lines to the terminal: the bar is cleared first and drawn
        again below those lines afterwards, instead of being broken by them.  Nothing is
        done when `stream`, the stream printed to, is given and is not a terminal."""
        if stream is not None and not _isatty(stream):
            yield
            return
        self.bar.clear()
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            self.bar.refresh()


def progress(iterable=None, total: int | None = None, desc: str | None = None,
             enabled: bool | None = None, file=None, unit: str = "it", leave: bool = False):
    """A progress bar over `iterable` (or, without one, counting `update` calls up to
    `total`), or a no-op stand-in with the same interface when no bar is shown.

    `enabled` None decides by itself (module docstring); True or False forces it, except
    that `FLOWJIT_PROGRESS=0` always wins.  `file` is where the bar is written (sys.stderr);
    `leave=False` removes the finished bar from the screen.
    """
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    if not should_show(enabled, file):
        return NullProgress(iterable, total)
    if in_notebook() and file is None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    stream = sys.stderr if file is None else file
    width = {"dynamic_ncols": True}
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and not _isatty(stream):  # a pipe to a terminal: its parent's width
        width = {"ncols": max(int(columns) - 1, 20)}
    bar = tqdm(iterable, total=total, desc=desc, file=stream, unit=unit, leave=leave,
               mininterval=0.2, **width)
    return Progress(bar)
