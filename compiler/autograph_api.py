"""The names converted code calls (`_ag__.for_range(...)`, compiler/autograph.py): the
runtime helpers of converted control flow, gathered in one namespace (docs/architecture.md
"Python control flow in @jit")."""

from .autograph_branches import and_, builtin_minmax, if_exp, if_stmt, not_, or_
from .autograph_loops import for_iter, for_range, while_stmt
from .autograph_state import Undefined, ld

__all__ = ["and_", "builtin_minmax", "or_", "not_", "if_exp", "if_stmt", "for_range", "for_iter", "while_stmt",
           "Undefined", "ld"]
