"""Placeholder: filled in by its owner."""

__all__ = []
OP_DEFS = ()
