"""Samples for ops/sort_ops.py and ops/linalg_ops.py: Sort, ArgSort and the matrix ops.

Sort/ArgSort rows include ties (small integers), NaNs and empty axes; the oracle is
`np.sort` / `np.argsort(kind='stable')`.  Matrices are kept well conditioned (a random
part plus a multiple of the identity; Cholesky inputs symmetric positive definite), sizes
include 0 and 1 and a batch axis, and the oracles are NumPy's `np.linalg` routines.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops.sort_ops import sort_positions

from . import OpCase
from .strategies import arrays, shapes

_SORTABLE = (np.float32, np.float64, np.int32, np.int64)


@st.composite
def _sorted(draw, positions: bool):
    dtype = draw(st.sampled_from(_SORTABLE))
    shape = draw(shapes(min_dims=1, max_dims=3))
    elements = st.integers(-3, 3) if np.dtype(dtype).kind == "i" else st.sampled_from(
        [-1.5, 0.0, 0.5, 2.0, np.nan, 3.25])
    x = draw(arrays(dtype, shape, elements))
    fn = sort_positions if positions else tf.sort   # the ArgSort op's own int64 output

    def build():
        return [fn(tf.placeholder(tf.as_dtype(dtype), [None] * len(shape), name="x"))]

    def expected(f):
        if positions:
            return [np.argsort(f["x"], axis=-1, kind="stable").astype(np.int64)]
        return [np.sort(f["x"], axis=-1)]

    return OpCase(build, {"x": x}, expected)


@st.composite
def _matrices(draw, op: str):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    n = draw(st.integers(0, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    a = draw(arrays(dtype, batch + (n, n), st.floats(-1, 1, width=32)))
    a = (a + (n + 1) * np.eye(n, dtype=dtype)).astype(dtype)
    if op == "Cholesky":
        a = (a @ np.swapaxes(a, -1, -2)).astype(dtype)
    rhs = draw(arrays(dtype, batch + (n, draw(st.integers(0, 3))), st.floats(-1, 1,
                                                                             width=32)))
    tol = 1e-3 if dtype == np.float32 else 1e-9
    ph = tf.as_dtype(dtype)

    def build():
        x = tf.placeholder(ph, [None] * a.ndim, name="a")
        if op == "MatrixSolve":
            return [tf.linalg.solve(x, tf.placeholder(ph, [None] * rhs.ndim, name="rhs"))]
        return [{"MatrixInverse": tf.linalg.inv, "MatrixDeterminant": tf.linalg.det,
                 "Cholesky": tf.linalg.cholesky}[op](x)]

    def expected(f):
        fn = {"MatrixInverse": np.linalg.inv, "MatrixDeterminant": np.linalg.det,
              "Cholesky": np.linalg.cholesky}.get(op)
        out = np.linalg.solve(f["a"], f["rhs"]) if fn is None else fn(f["a"])
        return [np.asarray(out, dtype)]

    feeds = {"a": a, "rhs": rhs} if op == "MatrixSolve" else {"a": a}
    return OpCase(build, feeds, expected, rtol=tol, atol=tol)


SAMPLES = {
    "Sort": _sorted(False),
    "ArgSort": _sorted(True),
    **{op: _matrices(op) for op in ("MatrixInverse", "MatrixDeterminant", "MatrixSolve",
                                    "Cholesky")},
}
