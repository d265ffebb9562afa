"""What this machine is and how busy it is.

``facts`` names the machine and the checkout (CPU, device, memory, commit); ``probes`` measures
its two ceilings (copy bandwidth and matmul rate), which ``ceilings`` records at the start of
every ``linbench run`` and ``nominal`` compares with the datasheets of known GPUs; ``load``
samples what else runs on it; ``limits`` reads its free memory and holds the guards a worker
process puts on itself. ``linbench doctor`` judges these figures; the runner records them.
"""
