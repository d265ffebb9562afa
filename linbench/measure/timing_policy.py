"""How long one point is warmed up and timed: the warm-up, the repetition budget and its bounds,
per device and for decoding; the timers (timer.py, cuda_timer.py) follow it, and the sweep's
estimate and skip policy predict a point's wall time from it."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TimingPolicy:
    """Warm-up and repetition budget of one measured point."""

    warmup_s: float
    budget_s: float
    min_reps: int
    max_reps: int
    warmup_calls: int = 0  # untimed calls after the measured first one, whatever the warm-up time
    # GPU: overwrite L2 before each timed call, so no call reads the last one's data from cache.
    flush_l2: bool = True
    # CPU: a measured first call at least as long as the warm-up time is timed as a repetition
    # too, kept unless it was slower than every later one by more than FIRST_CALL_SLACK (then one
    # more repetition is timed in its place). Such a call is its own warm-up (the warm-up time
    # is over when it returns), and lazy start-up ran in the tiny call before it. So is the
    # first call of a point whose worker is warm from its curve (``warm``: it measured another
    # point of the curve, or checked its impl), whatever its length: there is no warm-up left
    # to do, and the same rule drops it where it was not yet steady.
    long_first_call_timed: bool = False

    @classmethod
    def for_device(cls, device_type: str, budget_s: float | None = None) -> TimingPolicy:
        """The defaults for ``device_type``; ``budget_s`` replaces the repetition budget."""
        if device_type == "cuda":
            policy = cls(warmup_s=0.1, budget_s=0.5, min_reps=10, max_reps=1000)
        else:
            # CPU points are long and noisy at once: three repetitions at least, a second of budget.
            policy = cls(warmup_s=0.2, budget_s=1.0, min_reps=3, max_reps=100, long_first_call_timed=True)
        if budget_s is None:
            return policy
        return replace(policy, warmup_s=min(policy.warmup_s, budget_s), budget_s=budget_s)

    @classmethod
    def for_decode(cls, tokens: int) -> TimingPolicy:
        """Decoding times each generated token: exactly ``tokens`` steps, whatever they take
        (each step consumes a token, so there is no budget to repeat it against), after the
        step whose memory is read and one more untimed. On a GPU the steps run back to back,
        as they do in generation: L2 is not flushed between them (the state a step reads is
        the one the step before wrote, and a flush between steps would give the host a head
        start that hides its launch time in a launch-bound step)."""
        return cls(warmup_s=0.0, budget_s=0.0, min_reps=tokens, max_reps=tokens, warmup_calls=1, flush_l2=False)

    @property
    def calls(self) -> int:
        """The most calls a point makes: the measured first, the warm-up calls, the repetitions."""
        return 1 + self.warmup_calls + self.max_reps

    def first_is_timed(self, first_s: float, warm: bool = False) -> bool:
        """Whether a measured first call of ``first_s`` seconds counts as a repetition
        (``warm``: its worker is warm from the point's curve)."""
        return self.long_first_call_timed and (warm or first_s >= self.warmup_s) and self.max_reps > 1

    def predicted_s(self, call_s: float) -> float:
        """Wall time of a point whose single call takes ``call_s``: the measured first call,
        the rest of the warm-up, then the timed repetitions (one fewer where the first counts)."""
        warmup = max(self.warmup_s - call_s, 0.0) + self.warmup_calls * call_s
        reps = max(self.min_reps * call_s, min(self.budget_s, self.max_reps * call_s))
        if self.first_is_timed(call_s):
            reps = max(reps - call_s, call_s)
        return call_s + warmup + reps
