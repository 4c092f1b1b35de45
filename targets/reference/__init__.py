"""The reference target: a NumPy interpreter of the kernel IR (interpreter.py), the oracle
every other target is tested against and the fallback for what they cannot render.  It
imports no numba (docs/architecture.md, "Layers"); `TARGET` (target.py) is its instance
of the target protocol (targets/target.py)."""
