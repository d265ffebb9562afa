"""Packs of variable-length sequences: a token budget filled with lengths from a distribution.

A *pack* is what a model trained on documents of many lengths is handed: sequences one after
another up to a fixed number of tokens. It is described by where its lengths come from and
its budget, and drawn once, when the sweep is planned, so every impl at every point sees the
same lengths (and a run records them in its meta.json):

    uniform:min=128,max=4k      whole lengths equally likely in [min, max] (min defaults to 1)
    lognormal:mean=2k           round(exp(N(μ, σ²))): ``mean`` makes the lengths average it
                                (μ = ln mean − σ²/2), ``median`` sets μ = ln median instead;
                                ``sigma`` (σ, default 1) is the spread of log length
    lognormal:median=1k,sigma=1.5
    file:PATH                   the lengths a file lists (whitespace- or comma-separated,
                                ``#`` starts a comment), taken in order, from the top again
                                when the file runs out

Every named distribution takes ``seed=N`` (default 0). Sizes take the sweep's grammar
(``2k`` is 2048). Lengths are drawn until the budget is full; the last sequence is cut to fill
it exactly, as a packer cuts the document that overflows. A budget too small to hold one
sequence of the distribution's mean length (a file's longest) is refused.

Pure Python: the random draws are the Mersenne Twister's ``random()`` (which Python keeps the
same across versions) turned normal by Box-Muller here, so a seed draws the same lengths on
every machine.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from linbench.units import SizeError, parse_size

__all__ = ["DISTRIBUTIONS", "Pack", "PackError", "draw_lengths", "draw_pack", "file_pack", "read_lengths"]

# Name → (its parameters and their defaults (None: required, "size": a size, "number": a
# float), in the order the canonical text writes them).
DISTRIBUTIONS: Mapping[str, Mapping[str, tuple[str, float | None]]] = {
    "uniform": {"min": ("size", 1), "max": ("size", None), "seed": ("seed", 0)},
    "lognormal": {"mean": ("size", None), "median": ("size", None), "sigma": ("number", 1.0), "seed": ("seed", 0)},
}
CHOICES = "uniform:max=N[,min=N], lognormal:mean=N|median=N[,sigma=S], file:PATH (each named one takes seed=N)"


class PackError(ValueError):
    """A pack that cannot be drawn; the message names what is wrong and what is valid."""


@dataclass(frozen=True)
class Pack:
    """One pack: where its lengths come from, its token budget, and the lengths drawn."""

    source: str  # the canonical distribution text ("lognormal:mean=2048,sigma=1,seed=0") or file:NAME#digest
    lengths: tuple[int, ...]

    @property
    def tokens(self) -> int:
        """The real tokens: the budget, which the lengths fill exactly."""
        return sum(self.lengths)

    @property
    def sequences(self) -> int:
        return len(self.lengths)

    @property
    def longest(self) -> int:
        return max(self.lengths)

    @property
    def padded_tokens(self) -> int:
        """The tokens of the padded batch: every sequence padded to the longest."""
        return self.sequences * self.longest

    @property
    def padding_waste(self) -> float:
        """The share of a padded batch that is padding: 1 − tokens / (sequences · longest)."""
        return 1.0 - self.tokens / self.padded_tokens

    @property
    def label(self) -> str:
        """The pack's name in results (its ``pack`` column): the source and the budget."""
        return f"{self.source}@{self.tokens}"

    @property
    def offsets(self) -> tuple[int, ...]:
        """cu_seqlens: 0, then where each sequence ends."""
        ends = [0]
        for length in self.lengths:
            ends.append(ends[-1] + length)
        return tuple(ends)


def _parameters(name: str, text: str) -> dict[str, float]:
    """``mean=2k,sigma=1`` checked against the distribution's parameters; defaults filled in."""
    known = DISTRIBUTIONS[name]
    given: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or key not in known:
            raise PackError(f"{name}: {item!r} is not one of its parameters ({', '.join(f'{k}=' for k in known)})")
        given[key] = _value(name, key, known[key][0], value.strip())
    defaults = {key: float(default) for key, (_, default) in known.items() if default is not None}
    return {key: given.get(key, defaults.get(key, 0.0)) for key in known if key in given or key in defaults}


def _value(name: str, key: str, kind: str, text: str) -> float:
    try:
        if kind == "size":
            return parse_size(text)
        if kind == "seed":
            if not text.isdigit():
                raise ValueError
            return int(text)
        number = float(text)
    except (SizeError, ValueError):
        wanted = {"size": "a positive size (512, 2k)", "seed": "a whole number", "number": "a positive number"}
        raise PackError(f"{name}: {key}={text!r} is not {wanted[kind]}") from None
    if not (number > 0 and math.isfinite(number)):
        raise PackError(f"{name}: {key}={text!r} must be a positive number")
    return number


# The widest lognormal spread a pack takes: 95% of its lengths within a factor e^±2σ of its median.
MAX_SIGMA = 4.0


def _normal(rng: random.Random) -> float:
    """One standard normal draw (Box-Muller on random(), the part of ``random`` that is stable)."""
    return math.sqrt(-2.0 * math.log(1.0 - rng.random())) * math.cos(2.0 * math.pi * rng.random())


def _uniform(params: Mapping[str, float]) -> tuple[Callable[[random.Random], int], float]:
    low, high = int(params["min"]), int(params.get("max", 0))
    if not high:
        raise PackError("uniform: give max=N (the longest length), as in uniform:max=4k")
    if low > high:
        raise PackError(f"uniform: min={low} is larger than max={high}")
    return (lambda rng: low + int(rng.random() * (high - low + 1))), (low + high) / 2


def _lognormal(params: Mapping[str, float]) -> tuple[Callable[[random.Random], int], float]:
    if ("mean" in params) == ("median" in params):
        raise PackError("lognormal: give one of mean=N or median=N, as in lognormal:mean=2k")
    sigma = params["sigma"]
    if sigma > MAX_SIGMA:  # e^(sigma · a normal draw) overflows long before; no real mix spreads so
        raise PackError(f"lognormal: sigma={sigma:g} is above {MAX_SIGMA:g} (lengths spread over e^±{2 * MAX_SIGMA:g})")
    mu = math.log(params["median"]) if "median" in params else math.log(params["mean"]) - sigma * sigma / 2
    if math.exp(mu) < 1:  # half the draws would round to one token: a pack of nothing
        raise PackError(
            f"lognormal: with sigma={sigma:g} the mean {params.get('mean', 0):g} puts the median length at "
            f"{math.exp(mu):.3g} tokens, half the sequences under one; lower sigma, or give median=N"
        )
    return (lambda rng: max(1, round(math.exp(mu + sigma * _normal(rng))))), math.exp(mu + sigma * sigma / 2)


def canonical(name: str, params: Mapping[str, float]) -> str:
    """``lognormal:mean=2048,sigma=1,seed=0``: the same text for the same draws."""
    values = ",".join(f"{key}={value:g}" for key, value in params.items())
    return f"{name}:{values}"


def draw_pack(text: str, budget: int) -> Pack:
    """The pack of ``budget`` tokens the distribution ``text`` (``lognormal:mean=2k``) draws;
    PackError, one line naming the valid choices, for anything else."""
    name, _, rest = text.strip().partition(":")
    if name == "file":
        raise PackError("a file of lengths is given as --lengths-file FILE (lengths_file in a suite), not --pack")
    if name not in DISTRIBUTIONS:
        raise PackError(f"unknown length distribution {name!r}; choices: {CHOICES}")
    params = _parameters(name, rest)
    sample, mean = (_uniform if name == "uniform" else _lognormal)(params)
    _check_budget(budget, mean, f"{canonical(name, params)} draws sequences of {mean:.0f} tokens on average")
    rng = random.Random(int(params["seed"]))
    return Pack(canonical(name, params), _fill(lambda: sample(rng), budget))


def draw_lengths(text: str, count: int) -> tuple[str, tuple[int, ...]]:
    """``count`` lengths the distribution ``text`` draws (decode's requests' contexts), and its
    canonical text; PackError, one line, for a text that names no distribution."""
    name, _, rest = text.strip().partition(":")
    if name not in DISTRIBUTIONS:
        raise PackError(f"unknown length distribution {name!r}; choices: uniform:max=N[,min=N], lognormal:mean=N")
    params = _parameters(name, rest)
    sample, _ = (_uniform if name == "uniform" else _lognormal)(params)
    rng = random.Random(int(params["seed"]))
    return canonical(name, params), tuple(sample(rng) for _ in range(count))


def _fill(next_length: Callable[[], int], budget: int) -> tuple[int, ...]:
    """Lengths until ``budget`` is full, the last one cut to fill it exactly."""
    lengths: list[int] = []
    left = budget
    while left > 0:
        length = min(next_length(), left)
        lengths.append(length)
        left -= length
    return tuple(lengths)


def _check_budget(budget: int, length: float, what: str) -> None:
    if budget < length:
        raise PackError(f"the token budget {budget} is smaller than one sequence ({what}); raise --tokens")


def read_lengths(path: Path) -> tuple[int, ...]:
    """The positive lengths a file lists; PackError naming the file and line of a bad one."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"lengths file {str(path)!r} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    lengths: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        for item in line.split("#", 1)[0].replace(",", " ").split():
            try:
                lengths.append(parse_size(item))
            except SizeError:
                raise PackError(
                    f"lengths file {str(path)!r}, line {number}: {item!r} is not a positive length "
                    "(lengths are whole numbers of at least 1: 512, 2k)"
                ) from None
    if not lengths:
        raise PackError(f"lengths file {str(path)!r} lists no lengths (one or more whole numbers of at least 1)")
    return tuple(lengths)


def file_pack(path: Path, budget: int) -> Pack:
    """The pack of ``budget`` tokens a lengths file gives: its lengths in order, again from the
    top when they run out, the last cut to fill the budget."""
    lengths = read_lengths(path)
    _check_budget(budget, max(lengths), f"{str(path)!r} lists one of {max(lengths)} tokens")
    digest = hashlib.sha1(",".join(map(str, lengths)).encode()).hexdigest()[:8]
    cycle = iter(lengths * (budget // sum(lengths) + 1))
    return Pack(f"file:{path.name}#{digest}", _fill(lambda: next(cycle), budget))
