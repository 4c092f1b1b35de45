"""Code generators that turn compiler IR into kernels (reference, cpu, cuda): later issues."""
