"""Hypothesis strategies shared by the op samples: shapes with empty/size-1/odd dims, arrays."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOAT_DTYPES = (np.float32, np.float64)
INT_DTYPES = (np.int32, np.int64)


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    """Shapes including empty (0) and size-1 dimensions."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcast_pair(max_dims=4, max_side=5):
    """Two shapes that broadcast together (NumPy rules)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=max_dims, min_side=0,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def arrays(dtype, shape, elements=None):
    """Arrays of `dtype`/`shape` with finite, moderate values unless `elements` is given."""
    dtype = np.dtype(dtype)
    if elements is None:
        if dtype.kind == "f":
            elements = st.floats(-10, 10, width=dtype.itemsize * 8)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            elements = st.integers(max(info.min, -100), min(info.max, 100))
        elif dtype.kind == "b":
            elements = st.booleans()
    return hnp.arrays(dtype, shape, elements=elements)
