"""Reading run folders and turning them into fits, figures and tables.

Nothing here imports a variant or touches a device: reports read results files only. The
regression gate that judges two runs is linbench/gate.
"""
