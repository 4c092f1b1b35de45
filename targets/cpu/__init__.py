"""CPU target: the loop IR rendered as numba source, built, cached and called (see
docs/architecture.md, "Layers").  Importing it changes no process-wide setting."""
