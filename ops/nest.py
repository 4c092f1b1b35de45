"""Nested structures of tensors (lists, tuples, namedtuples, dicts), as `cond` branches
and `while_loop` variables come: flattened to leaves in a fixed order and packed back.
"""

from __future__ import annotations


def flatten(structure) -> list:
    """The leaves of a nest of lists, tuples, namedtuples and dicts (sorted keys)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack(structure, leaves):
    """`leaves` (flatten's order) rebuilt into the shape of `structure`."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            return type(s)((k, build(s[k])) for k in sorted(s))
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(x) for x in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(x) for x in s)
        return next(it)

    return build(structure)


def same_structure(a, b) -> bool:
    """Whether two nests have the same lists, tuples and dict keys (leaves may differ)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and
                len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b)))
    return True
