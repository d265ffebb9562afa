"""linbench history: many runs of one suite read at once, one series per point, and the changes
across them found by Apache Otava's E-divisive change-point detection (docs/history.md).

``observations`` turns run folders into one row per point per run (the figure the gate judges,
with the run's commit, time and environment), ``store`` keeps those rows in a history file that
grows, ``series`` orders them and splits them where the environment changed, ``detect`` finds the
changes, ``verdict`` says what they mean for the newest run, and ``render``/``page`` show them."""
