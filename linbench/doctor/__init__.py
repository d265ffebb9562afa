"""``linbench doctor``: whether this machine's numbers can be trusted, and its ceilings.

``diagnose`` runs the checks (diagnose.py), ``checks`` holds the verdict rules, ``nominal``
the datasheet figures of known GPUs, ``probes`` the copy and matmul measurements that
``ceilings`` also records at the start of every ``linbench run``.
"""
