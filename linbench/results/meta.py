"""meta.json's sections, each with its one writer and its one reader.

Nothing here imports torch or another layer: a report reads these records on any machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from linbench.results.protocol import ProcessProtocol


@dataclass(frozen=True)
class SweepRecord:
    """meta.json's ``sweep`` section: the sweep a run folder holds, as merged settings and
    tables (enough to plan it again for --resume), with its impls, baselines and point count.
    This is its one writer (``section``) and its one reader (``read``)."""

    command: str  # "run" or "decode"
    name: str
    suite: str | None
    settings: dict[str, Any]  # every key but the [[sweep]] tables, defaults filled in
    tables: list[dict[str, Any]]  # the suite's [[sweep]] tables, as given
    impls: list[str]  # "variant:impl", baselines included
    baselines: list[str]
    points: int

    def section(self) -> dict[str, Any]:
        """The section as meta.json holds it."""
        return asdict(self)

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> SweepRecord | None:
        """The sweep ``meta`` records; None when it records none that could be planned again (a
        folder not made by run or decode, or a damaged meta.json). A run from before
        ``command`` was recorded is a ``run``."""
        recorded = meta.get("sweep")
        if not isinstance(recorded, Mapping):
            return None
        try:
            record = cls(
                command=str(recorded.get("command", "run")),
                name=str(recorded["name"]),
                suite=recorded.get("suite"),
                settings=recorded["settings"],
                tables=recorded["tables"],
                impls=list(recorded.get("impls", [])),
                baselines=list(recorded.get("baselines", [])),
                points=int(recorded.get("points", 0)),
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return record if isinstance(record.settings, dict) and isinstance(record.tables, list) else None


# The seconds and counts of meta.json's ``overhead``.
OVERHEAD_SECONDS = ("wall_s", "timed_s", "processes_s", "gates_s", "startup_s", "retried_s", "command_s")
OVERHEAD_COUNTS = ("processes", "gates", "retried")


@dataclass(frozen=True)
class Overhead:
    """meta.json's ``overhead``: where a run's wall time went (linbench/runner/ledger.py keeps
    the books), summed over the sessions of a resumed run and over the rounds of an A/B side.
    ``section`` writes it, ``read`` reads it back."""

    wall_s: float = 0.0
    timed_s: float = 0.0  # inside timed repetitions
    processes_s: float = 0.0  # inside measuring worker processes, hand-over to result
    gates_s: float = 0.0  # inside correctness-gate worker processes
    processes: int = 0
    gates: int = 0
    startup_s: float = 0.0  # measuring the machine at a session's start: idle cores, ceilings
    retried_s: float = 0.0  # processes measured again because they were oversubscribed
    retried: int = 0
    # The command's whole wall time, from its process's start (Python, imports, planning) to the
    # run's last record; 0 for a run its caller made in a longer-lived process (the Python API).
    command_s: float = 0.0

    def __add__(self, other: Overhead) -> Overhead:
        return Overhead(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def rounded(self) -> Overhead:
        """The seconds as the section writes them (to the millisecond)."""
        return replace(self, **{name: round(getattr(self, name), 3) for name in OVERHEAD_SECONDS})

    @property
    def timed_fraction(self) -> float | None:
        return self.timed_s / self.wall_s if self.wall_s > 0 else None

    @property
    def command_timed_fraction(self) -> float | None:
        """The timed share of the whole command's wall time (None where none was recorded)."""
        return self.timed_s / self.command_s if self.command_s > 0 else None

    def section(self) -> dict[str, Any]:
        """The section as meta.json holds it: the seconds to the millisecond, the counts, and
        the timed share of the run's and of the whole command's wall time (of the seconds
        before rounding)."""
        shares = {"timed_fraction": self.timed_fraction, "command_timed_fraction": self.command_timed_fraction}
        return asdict(self.rounded()) | shares

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> Overhead | None:
        """The overhead ``meta`` records (a figure it lacks is 0); None when it records none."""
        section = meta.get("overhead")
        if not isinstance(section, Mapping) or not section:
            return None
        values: dict[str, Any] = {name: float(section.get(name) or 0.0) for name in OVERHEAD_SECONDS}
        values |= {name: int(float(section.get(name) or 0)) for name in OVERHEAD_COUNTS}
        return cls(**values)

    @classmethod
    def summed(cls, metas: Sequence[Mapping[str, Any]]) -> Overhead | None:
        """The overheads of several runs (an A/B side's rounds) added up, each figure rounded as
        written; None when none records one."""
        found = [overhead for meta in metas if (overhead := cls.read(meta)) is not None]
        return sum(found[1:], found[0]).rounded() if found else None


@dataclass(frozen=True)
class LoadSection:
    """meta.json's ``load``: samples of the machine's load before, between and after the
    points (linbench/machine/load.py takes them and words the section; results/machine_load.py
    says when they found the machine busy), and one record per session of the run (a run and
    each --resume of it: its threads, idle cores, load and points; linbench/runner/session.py
    writes them). ``read`` reads it back, ``section`` writes it."""

    samples: list[Mapping[str, Any]]
    busy: bool = False  # any sample found the machine busy
    rest: Mapping[str, Any] = field(default_factory=dict)  # the rule, the cores, linbench's threads
    sessions: list[Mapping[str, Any]] = field(default_factory=list)

    def section(self) -> dict[str, Any]:
        own = {"busy": self.busy, "samples": list(self.samples)}
        return dict(self.rest) | own | ({"sessions": list(self.sessions)} if self.sessions else {})

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> LoadSection | None:
        """The load ``meta`` records; None when it records none."""
        section = meta.get("load")
        if not isinstance(section, Mapping):
            return None
        samples = section.get("samples") or []
        sessions = section.get("sessions") or []
        rest = {key: value for key, value in section.items() if key not in ("busy", "samples", "sessions")}
        return cls(
            list(samples) if isinstance(samples, list) else [],
            bool(section.get("busy")),
            rest,
            [s for s in sessions if isinstance(s, Mapping)] if isinstance(sessions, list) else [],
        )

    @classmethod
    def merged(cls, metas: Sequence[Mapping[str, Any]]) -> LoadSection | None:
        """The loads of several runs (an A/B side's rounds) as one: the first's rule and cores,
        every sample, busy when any was; None when none records one. Sessions are each run's
        own and are not merged."""
        found = [load for meta in metas if (load := cls.read(meta)) is not None]
        if not found:
            return None
        samples = [sample for load in found for sample in load.samples]
        return cls(samples, any(load.busy for load in found), found[0].rest)


def timing_protocol(meta: Mapping[str, Any]) -> ProcessProtocol:
    """The repeated-process protocol ``meta`` records as ``timing_protocol`` (the defaults for
    what it lacks); ProtocolError for a number that cannot be read."""
    return ProcessProtocol.from_meta(meta.get("timing_protocol"))


def timing_protocol_section(protocol: ProcessProtocol, budget_s: float) -> dict[str, Any]:
    """meta.json's ``timing_protocol`` of a run: its protocol, and each process's repetition budget."""
    return protocol.meta() | {"budget_s": budget_s}


@dataclass(frozen=True)
class Provenance:
    """What a run was measured with, as far as --resume must match it: the device, torch and
    linbench commit (meta.json's top-level ``device_name``, ``torch`` and ``git_sha``, written
    with the rest of the machine by linbench/runner/provenance.py). ``read`` reads them."""

    device_name: str | None = None
    torch: str | None = None
    git_sha: str | None = None

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> Provenance:
        return cls(**{f.name: None if meta.get(f.name) is None else str(meta[f.name]) for f in fields(cls)})

    def differences(self, here: Provenance) -> list[str]:
        """What differs between this run (there) and ``here``, in words; what either lacks is
        not compared."""
        names = {"device_name": "device", "torch": "torch", "git_sha": "linbench commit"}
        return meta_differences(asdict(self), asdict(here), names, ("there", "here"))


# meta.json's top-level keys (runner/provenance.py) whose difference makes two runs measure other
# code than the change under test: torch, its CUDA, and each optional library's version (the
# distribution's name, "-" written "_"; fla's hand-off to other libraries beside fla-core's).
# A test checks LIBRARY_KEYS against the registry's libraries.
SOFTWARE_KEYS = {"torch": "torch", "cuda": "CUDA"}
LIBRARY_KEYS = (
    *("cuda_linear_attention", "fla_core", "fla_backend_dispatch", "flash_attn", "flash_attn_3", "flash_attn_4"),
    *("flash_kda", "flash_qla", "flashinfer_python", "mamba_ssm", "nvidia_cudnn_frontend"),
)
# Keys of the machine that may differ between two runners of one GPU model (a pool of hosts):
# named where they differ, as what the between-run term and the controls must then explain.
MACHINE_KEYS = {
    "driver_version": "driver",
    "cpu_model": "CPU",
    "cpu_count": "cores",
    "device_memory_bytes": "device memory",
    "python": "python",
}


def meta_differences(
    first: Mapping[str, Any],
    second: Mapping[str, Any],
    names: Mapping[str, str],
    sides: tuple[str, str] = ("in the baseline", "in current"),
) -> list[str]:
    """Each of ``names``' keys whose value differs between two runs' meta.json, in words, each
    side as ``sides`` says ("torch '2.11.0' in the baseline, '2.12.0' in current"); a key either
    lacks is not compared."""
    return [
        f"{word} {first[key]!r} {sides[0]}, {second[key]!r} {sides[1]}"
        for key, word in names.items()
        if first.get(key) is not None and second.get(key) is not None and first[key] != second[key]
    ]


def software_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What code besides linbench's measured the two runs differently: torch, CUDA, libraries."""
    return meta_differences(baseline, current, SOFTWARE_KEYS | {key: key for key in LIBRARY_KEYS})


def machine_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """How the two runs' machines differ beyond the device model (MACHINE_KEYS)."""
    return meta_differences(baseline, current, MACHINE_KEYS)
