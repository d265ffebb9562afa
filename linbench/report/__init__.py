"""Reading run folders and turning them into fits, figures and verdicts.

Nothing here imports a variant or touches a device: reports read results files only.
"""
