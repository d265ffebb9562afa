"""Same-job A/B: a baseline revision and the current code measured on one machine in
alternating rounds (``linbench ab``).

worktree.py checks the baseline revision out beside the current one, rounds.py runs
``linbench run`` in each tree round after round, and merge.py turns each side's rounds into one
run folder whose processes are the rounds, which ``linbench compare`` then judges.
"""
