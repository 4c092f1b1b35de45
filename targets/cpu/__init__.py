"""CPU target: numba code generation helpers (vectorizable math in vecmath)."""
