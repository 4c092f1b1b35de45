"""Tests that run CUDA kernels on numba-cuda's simulator.

numba-cuda reads NUMBA_ENABLE_CUDASIM once, when it is imported, so these tests need a
process started with it set: tests/test_cuda_target.py runs this folder in one such
process (`python -m pytest tests/cuda_sim` with the variable set).  In any other process
the folder is not collected, so the main run neither simulates nor skips them one by one.
"""

import os

collect_ignore_glob = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["test_*.py"]
