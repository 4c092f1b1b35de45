"""The graph model and its front ends; later the IR, passes and pipeline. Knows nothing of numba."""
