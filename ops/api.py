"""The op functions under their TensorFlow 1.x names, in one flat namespace.

This is the vocabulary `import flowjit as tf` exposes (the package root re-exports it with
`from .ops.api import *`), gathered here so that layers below the root — the NumPy front
end in compiler/ — call op functions directly instead of reaching up to the package root
(docs/architecture.md, "Layers").  It defines nothing: every name comes from the module
that defines the op.  Sub-namespaces (`tf.math`, `tf.linalg`, ...) are built by the root.
"""

from ..dtypes import (complex64, complex128, float16, float32, float64, int8,  # noqa: F401
                      int16, int32, int64, uint8, uint16, uint32, uint64)
from .arg_ops import *  # noqa: F401,F403
from .array_ops import *  # noqa: F401,F403
from .basic_ops import (constant, group, identity, no_op, placeholder,  # noqa: F401
                        placeholder_with_default, stop_gradient)
from .segment_ops import unsorted_segment_sum  # noqa: F401
from .scatter_ops import tensor_scatter_nd_update  # noqa: F401
from .slice_update_ops import tensor_strided_slice_update  # noqa: F401
from .linalg_ops import cholesky, matrix_determinant, matrix_inverse, matrix_solve  # noqa: F401
from .sort_ops import argsort, sort  # noqa: F401
from .control_flow import case, cond, while_loop  # noqa: F401
from .queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue  # noqa: F401
from .accumulators import ConditionalAccumulator  # noqa: F401
from .reader_ops import (FixedLengthRecordReader, ReaderBase, TextLineReader,  # noqa: F401
                         TFRecordReader)
from .parsing_ops import (FixedLenFeature, VarLenFeature, decode_csv, decode_raw,  # noqa: F401
                          parse_example, parse_single_example)
from .conversion import convert_to_tensor  # noqa: F401
from .init_ops import *  # noqa: F401,F403
from .math_ops import *  # noqa: F401,F403
from .composite_ops import (atan, clip_by_global_norm, clip_by_norm, cumsum,  # noqa: F401
                            div_no_nan, global_norm, norm, reduce_euclidean_norm)
from .composite_ops import clip_by_average_norm  # noqa: F401
from .matmul_ops import *  # noqa: F401,F403
from .random_ops import *  # noqa: F401,F403
from .reduction_ops import *  # noqa: F401,F403
from .shape_ops import *  # noqa: F401,F403
from .slicing_ops import *  # noqa: F401,F403
from .getitem_ops import tensor_getitem  # noqa: F401
from .gather_ops import boolean_mask, gather, gather_nd  # noqa: F401
from .variable_scatter_ops import *  # noqa: F401,F403
from .unique_ops import unique, unique_with_counts  # noqa: F401
from .indexed_slices import (IndexedSlices, IndexedSlicesValue,  # noqa: F401
                             convert_to_tensor_or_indexed_slices)
from .math_composites import *  # noqa: F401,F403
from .matrix_composites import *  # noqa: F401,F403
from .tf1_helpers import *  # noqa: F401,F403
from .sequence_ops import reverse_sequence, sequence_mask  # noqa: F401
