"""The regression gate (``linbench compare``): two runs judged point by point.

statistic.py is which time of each process is judged (a CPU process's p20, a GPU's median),
rule.py the time rule on each side's process times, points.py one point's time, memory
and kernel-launch verdicts (point_diff.py the record of them), between.py what two runs measured
apart moved as a whole, drift.py whether the machine rather than the code changed,
compare.py two runs matched and judged, render.py the verdict as tables and lines. How many
processes a point needs and when they are trusted is the repeated-process protocol
(linbench/results/protocol.py), which each run records in meta.json. Why the gate decides as
it does: docs/gate.md.
"""
