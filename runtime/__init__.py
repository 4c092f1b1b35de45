"""Sessions, the executor, per-session state. Runs plans; does not know how kernels were made."""
