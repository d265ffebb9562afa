"""``linbench doctor``: whether this machine's numbers can be trusted, and its ceilings.

``diagnose`` runs the checks (the CPU half there, the GPU half in gpu_checks.py, what both share
in common.py) and ``checks`` holds the verdict rules. The figures they judge are measured in
``linbench.machine``: ``probes`` (copy and matmul), ``nominal`` (the datasheet figures of
known GPUs) and ``ceilings`` (the record ``linbench run`` also makes at its start).
"""
