"""CPU target: numba code generation helpers (vectorizable math in vecmath).

Before anything here imports numba: numba highlights its error and warning messages with
colorama, whose init/deinit replace and restore `sys.stdout`/`sys.stderr` globally. Kernel
cache entries are compiled on a background thread (build.py), so that swap raced with the
user's own redirection (a captured or redirected stdout silently lost the main thread's
prints). Highlighting is turned off unless the user asked for it explicitly.
"""

import os

os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
