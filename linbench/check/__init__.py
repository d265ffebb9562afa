"""Is an impl right: each impl and decoder against its variant's fp64 reference (correctness.py,
the gate of every point, and matrix.py, ``linbench check``'s cells), a pack's against each of
its sequences alone (packed.py), the error against length (accuracy.py, ``check --seq``), all
judged by how close a tensor is to its reference for its dtype (closeness.py)."""
