"""TensorFlow's elementwise math vocabulary, gathered in one module (it defines nothing).

The ops live in six files, each owning its OpDefs (with their gradients and lowerings) and
functions:
- `math_unary.py`: Neg, Abs, Sqrt, Exp, Sigmoid, Round, IsNan, ...;
- `math_cast.py`: Cast;
- `math_binary.py`: Add, Sub, Mul, Pow, Maximum, Minimum, ..., AddN;
- `math_division.py`: RealDiv, FloorDiv, FloorMod, TruncateDiv, TruncateMod;
- `math_compare.py`: Equal, Less, ..., LogicalAnd, LogicalOr;
- `select_ops.py`: Select, SelectV2 and Where (`where`, `where_v2`), ClipByValue
  (`clip_by_value`).
`OP_DEFS` and `__all__` here combine all six, so registration (`ops/__init__.py`), the
package root and the Tensor operators (`ops/operators.py`) see one `math_ops`.  Like every
gathering module it is imported by no op module (see ops/__init__.py): op modules import the
defining modules.
"""

from . import math_binary, math_cast, math_compare, math_division, math_unary, select_ops
from .math_binary import *  # noqa: F401,F403 - re-exported TensorFlow names
from .math_cast import *  # noqa: F401,F403
from .math_compare import *  # noqa: F401,F403
from .math_division import *  # noqa: F401,F403
from .math_unary import *  # noqa: F401,F403
from .select_ops import *  # noqa: F401,F403

__all__ = [*math_unary.__all__, *math_cast.__all__, *math_binary.__all__,
           *math_division.__all__, *math_compare.__all__, *select_ops.__all__]

OP_DEFS = (*math_unary.OP_DEFS, *math_cast.OP_DEFS, *math_binary.OP_DEFS,
           *math_division.OP_DEFS, *math_compare.OP_DEFS, *select_ops.OP_DEFS)
