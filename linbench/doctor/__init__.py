"""``linbench doctor``: whether this machine's numbers can be trusted, and its ceilings.

``diagnose`` runs the checks (the CPU half there, the GPU half in gpu_checks.py, what both share
in common.py), ``checks`` holds the verdict rules, ``nominal``
the datasheet figures of known GPUs, ``probes`` the copy and matmul measurements that
``ceilings`` also records at the start of every ``linbench run``.
"""
