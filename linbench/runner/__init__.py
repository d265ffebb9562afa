"""Running a sweep: a supervisor that hands each point to a fresh worker process.

The supervisor never runs attention itself; the worker never decides what to run next.
"""
