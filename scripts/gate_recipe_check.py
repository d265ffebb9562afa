"""Does the CI recipe of docs/ci.md hold on this machine? Its false alarms on unchanged code and
its detection of a planted +30% on single points, measured, not simulated.

The recipe (docs/ci.md, "The CI recipe"): ``linbench ab --baseline REV --suite SUITE``, both
revisions measured in alternating rounds in one job. ``--recipe runs`` checks the other way to
gate instead: two back-to-back ``linbench run --suite SUITE`` (the suite's processes) and
``linbench compare`` of the two, as a committed baseline is compared.

Each rerun runs the recipe on unchanged code (REV is HEAD by default: commit your work first, or
the two sides differ by it), back to back, optionally beside a busy neighbour (``--busy``: a
second torch process with its own thread pool, working in bursts, as other jobs on a shared
runner do; a plain busy loop leaves torch's thread pools alone and shows far less). A rerun that
exits 1 is a false alarm; 4 (inconclusive) is no alarm but no pass either.

Then, for each rerun and each point, a copy of the rerun's current side gets every time of that
one point multiplied by ``--plant`` (1.3: +30%; results.csv, processes.csv and samples.csv) and
``linbench compare`` judges it against the rerun's baseline side: caught when that point is a
regression. This plants the change in the numbers, not in the code: it measures the rule on the
noise this machine made, not a slower impl's own noise.

``--rejudge`` measures nothing: it judges again, and plants again in, the reruns already in
``--out`` (each rerun-N holding the baseline/ and current/ run folders of one rerun; work on a
copy: the planted copies and rejudged.json are written beside them), so a change to the rule
can be tried on the noise a machine made before. The linbench it judges with is the one this
script's checkout imports.

Prints markdown tables for docs/ci.md and writes every number to OUT/summary.json.

    python scripts/gate_recipe_check.py --reruns 20 --busy --out /tmp/recipe-check
    python scripts/gate_recipe_check.py --reruns 3 --busy --out /tmp/recipe-check   # a small check
    python scripts/gate_recipe_check.py --rejudge --out /tmp/copy-of-recipe-check
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEY = ("variant", "impl", "mode", "causal", "dtype", "device", "batch", "heads", "seq", "dim_k", "dim_v")
TIME_COLUMNS = {
    "results.csv": (
        "time_ms",
        "time_ms_p20",
        "time_ms_p80",
        "time_ms_proc_lo",
        "time_ms_proc_hi",
        "device_ms",
        "cpu_ms_p20",
    ),
    "processes.csv": ("time_ms", "time_ms_p20", "time_ms_p80", "device_ms", "cpu_ms_p20"),
    "samples.csv": ("time_ms",),
}
# A neighbour that keeps torch's thread pool busy in bursts of 0.5-5 s with pauses of up to 2 s:
# the contention of another job's worker threads, which comes and goes. It ends with the
# script, however the script ends (a kill skips the ``finally`` that terminates it).
BUSY = """
import os, random, sys, time, torch
parent = int(sys.argv[1])  # the script's pid, read before torch's slow import could outlast it
torch.set_num_threads(2)
a = torch.randn(384, 384)
rng = random.Random(0)
while os.getppid() == parent:
    end = time.monotonic() + rng.uniform(0.5, 5.0)
    while time.monotonic() < end:
        a = torch.tanh(a @ a / 384.0)
    time.sleep(rng.uniform(0.0, 2.0))
"""


@dataclass
class Rerun:
    index: int
    exit_status: int
    verdict: str
    seconds: float
    load: str  # /proc/loadavg when the rerun began
    rounds: int | None = None  # linbench ab: the rounds it ran
    points: int = 0
    unjudged: int = 0
    planted: dict[str, bool] = field(default_factory=dict)  # point label -> caught
    planted_exits: dict[str, int] = field(default_factory=dict)  # point label -> compare's exit with it planted


def linbench(*args: object, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "linbench", *map(str, args)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def start_neighbour() -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", BUSY, str(os.getpid())]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_folder(out: Path) -> Path:
    """The one run folder ``linbench run --out OUT`` made."""
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def measure(args: argparse.Namespace, where: Path) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One rerun of the recipe into ``where``: the two sides' run folders and the judgement."""
    if args.recipe == "ab":
        extra = [
            *(["--rounds", args.rounds] if args.rounds else []),
            *(["--max-rounds", args.max_rounds] if args.max_rounds else []),
        ]
        judged = linbench("ab", "--baseline", args.baseline, "--suite", args.suite, "--out", where, *extra, "--json")
        return where / "baseline", where / "current", judged
    for side in ("baseline", "current"):
        made = linbench("run", "--suite", args.suite, "--out", where / side, "--quiet", "--yes")
        if made.returncode not in (0, 1):
            raise SystemExit(f"linbench run failed (exit {made.returncode}): {made.stderr.strip()[-500:]}")
    base, cur = run_folder(where / "baseline"), run_folder(where / "current")
    return base, cur, linbench("compare", base, cur, "--json")


def rewrite(path: Path, point: tuple[str, ...], columns: tuple[str, ...], factor: float) -> None:
    """Multiply ``columns`` of the rows of ``point`` in the CSV ``path`` by ``factor``."""
    if not path.is_file():
        return
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames or []), list(reader)
    for row in rows:
        if tuple(row[c] for c in KEY) == point:
            for column in columns:
                if row.get(column):
                    row[column] = repr(float(row[column]) * factor)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def points_of(folder: Path) -> list[tuple[str, ...]]:
    with (folder / "results.csv").open(newline="") as handle:
        return [tuple(row[c] for c in KEY) for row in csv.DictReader(handle) if row["status"] == "ok"]


def label(point: tuple[str, ...]) -> str:
    values = dict(zip(KEY, point, strict=True))
    return f"{values['variant']}:{values['impl']} {values['mode']} S={values['seq']}"


def plant_each(base: Path, cur: Path, where: Path, factor: float) -> tuple[dict[str, bool], dict[str, int]]:
    """Each point of ``cur`` made ``factor`` times slower on its own: caught or not, and the exit
    status ``compare`` gave (so a miss says whether it was inconclusive or a pass)."""
    caught, exits = {}, {}
    for index, point in enumerate(points_of(cur)):
        planted = where / f"planted-{index}"
        shutil.copytree(cur, planted)
        for name, columns in TIME_COLUMNS.items():
            rewrite(planted / name, point, columns, factor)
        judged = linbench("compare", base, planted, "--json")
        report = json.loads(judged.stdout) if judged.stdout.strip() else {"points": []}
        mine = ident(dict(zip(KEY, point, strict=True)))
        verdicts = [p["time_verdict"] for p in report["points"] if ident(p) == mine]
        caught[label(point)] = judged.returncode == 1 and verdicts == ["regression"]
        exits[label(point)] = judged.returncode
        shutil.rmtree(planted)
    return caught, exits


def ident(point: dict[str, Any]) -> tuple[str, ...]:
    """A point's identity in a CSV row and in compare's JSON alike (the device aside: JSON gives its type)."""
    return tuple(str(point[c]).lower() for c in KEY if c != "device")


def one_rerun(args: argparse.Namespace, index: int) -> Rerun:
    where = Path(args.out) / f"rerun-{index}"
    load, started = load_average(), time.monotonic()
    base, cur, judged = measure(args, where)
    seconds = time.monotonic() - started
    (where / "judgement.json").write_text(judged.stdout)  # to look into a false alarm afterwards
    return judged_rerun(args, index, where, (base, cur), judged, seconds, load)


def rejudged_rerun(args: argparse.Namespace, where: Path) -> Rerun:
    """A rerun already in ``where`` judged again (``--rejudge``): nothing is measured."""
    # ab's sides are the run folders; --recipe runs' sides hold them (each side's `run --out`).
    sides = (where / "baseline", where / "current")
    base, cur = (side if (side / "meta.json").is_file() else run_folder(side) for side in sides)
    started = time.monotonic()
    judged = linbench("compare", base, cur, "--json")
    (where / "rejudged.json").write_text(judged.stdout)
    index = int(where.name.removeprefix("rerun-"))
    return judged_rerun(args, index, where, (base, cur), judged, time.monotonic() - started, recorded_load(cur))


def recorded_load(run: Path) -> str:
    """The range of the 1-minute load average a run recorded in its meta.json ("?" without one)."""
    try:
        samples = json.loads((run / "meta.json").read_text()).get("load", {}).get("samples", [])
        loads = [float(sample["load_avg"][0]) for sample in samples]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "?"
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"


def judged_rerun(
    args: argparse.Namespace,
    index: int,
    where: Path,
    sides: tuple[Path, Path],
    judged: subprocess.CompletedProcess[str],
    seconds: float,
    load: str,
) -> Rerun:
    """The rerun's verdict and, for each point, whether a planted change was caught."""
    base, cur = sides
    report = json.loads(judged.stdout) if judged.stdout.strip() else {}
    if judged.returncode == 2 or not report:
        raise SystemExit(f"rerun {index}: the recipe did not reach a verdict: {judged.stderr.strip()[-500:]}")
    rerun = Rerun(index, judged.returncode, report["verdict"], seconds, load)
    rerun.points, rerun.unjudged = len(report["points"]), len(report.get("unjudged", []))
    meta = json.loads((cur / "meta.json").read_text())
    rerun.rounds = meta.get("ab", {}).get("rounds")
    rerun.planted, rerun.planted_exits = plant_each(base, cur, where, args.plant)
    caught = f"{sum(rerun.planted.values())}/{len(rerun.planted)}"
    print(f"rerun {index}: exit {rerun.exit_status} ({rerun.verdict}) in {seconds / 60:.1f} min, load {load}; "
          f"planted caught {caught}", file=sys.stderr, flush=True)  # fmt: skip
    return rerun


MEANING = "0 pass, 1 a regression elsewhere, 4 inconclusive; None: not recorded"
HEADER = (
    "| reruns | false alarms (exit 1) | inconclusive (exit 4) | pass (exit 0) | other exits "
    "| points judged | minutes per rerun (median) | rounds per rerun (median) |"
)


def table(args: argparse.Namespace, reruns: list[Rerun]) -> str:
    """The results as markdown: the reruns' verdicts, then detection by point."""
    exits = [r.exit_status for r in reruns]
    counts = [exits.count(1), exits.count(4), exits.count(0)]
    rounds = [r.rounds for r in reruns if r.rounds]
    minutes = statistics.median(r.seconds for r in reruns) / 60
    if args.recipe == "ab":
        flags = [f" --rounds {args.rounds}"] if args.rounds else []
        flags += [f" --max-rounds {args.max_rounds}"] if args.max_rounds else []
        recipe = f"linbench ab --baseline {args.baseline} --suite {args.suite}{''.join(flags)}"
    else:
        recipe = f"linbench run --suite {args.suite} twice, then linbench compare"
    beside = " beside a busy torch neighbour" if args.busy else ""
    loads = ", ".join(r.load.split()[0] for r in reruns)
    cells = [
        len(reruns),
        *counts,
        len(exits) - sum(counts),
        f"{sum(r.points - r.unjudged for r in reruns)} / {sum(r.points for r in reruns)}",
        f"{minutes:.1f}",
        statistics.median(rounds) if rounds else "-",
    ]
    lines = [
        f"Recipe: `{recipe}`; {len(reruns)} back-to-back reruns of unchanged code{beside}; "
        f"load average (1 min) at the start of each rerun: {loads}.",
        "",
        HEADER,
        "|---|---|---|---|---|---|---|---|",
        "| " + " | ".join(map(str, cells)) + " |",
        "",
        f"| +{(args.plant - 1) * 100:.0f}% planted on one point (in the current side's results) | caught |",
        "|---|---|",
    ]
    for name in sorted({name for r in reruns for name in r.planted}):
        hits = [r.planted[name] for r in reruns if name in r.planted]
        lines.append(f"| {name} | {sum(hits)} / {len(hits)} |")
    total = [hit for r in reruns for hit in r.planted.values()]
    lines.append(f"| **every point** | **{sum(total)} / {len(total)}** |")
    missed = [r.planted_exits.get(name) for r in reruns for name, hit in r.planted.items() if not hit]
    if missed:
        by_exit = ", ".join(f"exit {code}: {missed.count(code)}" for code in sorted(set(missed), key=str))
        lines += ["", f"The missed plants by the exit `compare` gave them ({MEANING}): {by_exit}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=20)
    parser.add_argument("--recipe", choices=("ab", "runs"), default="ab")
    parser.add_argument("--suite", default="suites/gate-cpu.toml")
    parser.add_argument("--baseline", default="HEAD", help="the revision ab measures against (ab only)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--max-rounds", type=int, default=None)
    parser.add_argument("--plant", type=float, default=1.3)
    parser.add_argument("--busy", action="store_true", help="run beside a busy torch neighbour")
    parser.add_argument("--out", required=True, help="a folder for the reruns (made; must not hold reruns)")
    parser.add_argument("--rejudge", action="store_true", help="judge the reruns already in --out again")
    args = parser.parse_args()
    out = Path(args.out)
    if args.rejudge:
        rejudge(args, out)
        return
    if out.exists() and any(out.glob("rerun-*")):
        raise SystemExit(f"{out} already holds reruns; give another --out")
    out.mkdir(parents=True, exist_ok=True)
    neighbour = start_neighbour() if args.busy else None
    reruns: list[Rerun] = []
    try:
        for index in range(1, args.reruns + 1):
            reruns.append(one_rerun(args, index))
            # Written after every rerun: a check cut short keeps the reruns it finished.
            write_summary(args, reruns, out)
    finally:
        if neighbour is not None:
            neighbour.terminate()
            neighbour.wait(timeout=30)
    print(table(args, reruns))


def rejudge(args: argparse.Namespace, out: Path) -> None:
    """``--rejudge``: every rerun-N in ``out`` judged again, in order of N."""
    folders = sorted(out.glob("rerun-*"), key=lambda p: int(p.name.removeprefix("rerun-")))
    if not folders:
        raise SystemExit(f"{out} holds no rerun-N folder to judge again")
    reruns = [rejudged_rerun(args, where) for where in folders]
    write_summary(args, reruns, out)
    print(table(args, reruns))


def write_summary(args: argparse.Namespace, reruns: list[Rerun], out: Path) -> None:
    (out / "summary.json").write_text(json.dumps({"args": vars(args), "reruns": [asdict(r) for r in reruns]}, indent=2))
    (out / "summary.md").write_text(table(args, reruns) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
