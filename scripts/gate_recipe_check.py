"""Does the CI recipe of docs/ci.md hold on this machine? Its false alarms on unchanged code, its
wall time, and its detection of a planted +30% on single points, measured, not simulated.

The recipe (docs/ci.md, "The CI recipe"): ``linbench ab --baseline REV --suite SUITE --max-job-s
270``, both revisions measured in alternating rounds in one job, each point until its verdict is
decided (gate/sequential.py). ``--widen`` runs it as a change to the gated family's shared code
would: in a scratch worktree of HEAD whose linbench/variants/gated/impls.py, the module that
builds and dispatches every gated form, has its start-state function (``_start``, which the
recurrent and chunked forms call) rewritten to do the same work, so the A/B adds the 10
recurrent forms (at the suite's shapes) and counts the 10 chunked ones as changed, while the
time it measures is unchanged. (A comment is no change: ab/code_diff.py.)
``--recipe runs`` checks the other way to gate instead: two back-to-back ``linbench run --suite
SUITE`` and ``linbench compare`` of the two, as a committed baseline is compared.

Each rerun runs the recipe on unchanged code (REV is HEAD by default: commit your work first, or
the two sides differ by it), back to back, optionally beside a busy neighbour (``--busy``). A
rerun that exits 1 is a false alarm; 4 (inconclusive) is no alarm but no pass either. The load
average at each rerun's start and the range the rounds recorded are kept.

Then, for each rerun and each point, +30% (``--plant``) is planted in the numbers of that one
point of the current side: for the A/B, its decisions are replayed round by round on the rounds it
measured (scripts/gate_recipe_replay.py): caught (a regression), cleared (a miss) or open (the
rounds measured, stopped when the unchanged point was decided, were too few: the A/B would have
gone on); ``--rounds K`` gives every point K rounds, so plants have them too. For ``--recipe
runs``, ``linbench compare`` judges the planted copy. This plants the change in the numbers, not
in the code: it measures the rule on the noise this machine made.

``--rejudge`` measures nothing: it judges again the reruns already in ``--out``.

A plant's replay has only the rounds the unchanged point got: a recipe rerun stops a point once
it is cleared, sooner than a +30% change is caught (gate/sequential.py), so its plants are mostly
open. Detection is measured on reruns that give every point enough rounds first (``--rounds 16
--max-job-s 0``), replayed round by round from the third, as the A/B would decide them.

Prints markdown tables for docs/ci.md and writes every number to OUT/summary.json. The final
figures, on a quiet machine (about 3 minutes a rerun for the first, 4 for the second, 9 for the
third; about 5 hours in all):

    python scripts/gate_recipe_check.py --reruns 20 --out /tmp/recipe-check                    # false alarms, time
    python scripts/gate_recipe_check.py --reruns 20 --widen --out /tmp/recipe-check-widened    # the same, widened
    python scripts/gate_recipe_check.py --reruns 20 --rounds 16 --max-job-s 0 --out /tmp/recipe-detect  # +30% caught
    python scripts/gate_recipe_check.py --reruns 3 --out /tmp/recipe-check   # a small check
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, astuple
from pathlib import Path
from typing import Any

from gate_recipe_tables import WIDENED_FILE, Rerun, table

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
    "processes.csv": ("time_ms", "time_ms_p20", "time_ms_p80", "device_ms", "cpu_ms_p20", "paced_p20"),
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


def linbench(*args: object, timeout: float | None = None, tree: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``linbench ARGS`` run from ``tree`` (its code first on PYTHONPATH)."""
    argv = [sys.executable, "-m", "linbench", *map(str, args)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p))
    return subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)


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
            *(["--max-job-s", args.max_job_s] if args.max_job_s else []),
        ]
        suite = (ROOT / args.suite).absolute()
        with changed_tree(args.widen) as tree:
            ab = ("ab", "--baseline", args.baseline, "--suite", suite, "--out", where.absolute(), *extra, "--json")
            judged = linbench(*ab, tree=tree)
        where.mkdir(parents=True, exist_ok=True)
        (where / "ab.log").write_text(judged.stderr)
        if judged.returncode == 2:
            raise SystemExit(f"the recipe refused to run: {judged.stderr.strip()[-800:]}")
        return where / "baseline", where / "current", judged
    for side in ("baseline", "current"):
        made = linbench("run", "--suite", args.suite, "--out", where / side, "--quiet", "--yes")
        if made.returncode not in (0, 1):
            raise SystemExit(f"linbench run failed (exit {made.returncode}): {made.stderr.strip()[-500:]}")
    base, cur = run_folder(where / "baseline"), run_folder(where / "current")
    return base, cur, linbench("compare", base, cur, "--json")


# --widen's change: the same work, another body (a comment would be no change of code).
START = "def _start(given: object, x: Inputs) -> GatedState | None:\n    return initial_state(given, x)\n"
RETURN = "    return initial_state(given, x)\n"
START_REWRITTEN = START.replace(RETURN, "    state = initial_state(given, x)\n    return state\n")


@contextmanager
def changed_tree(widen: bool) -> Iterator[Path]:
    """This checkout, or with ``widen`` a scratch worktree of its HEAD whose WIDENED_FILE has
    its start-state function rewritten to do the same work (a change to the gated family's
    shared code that changes no time), removed afterwards."""
    if not widen:
        yield ROOT
        return
    parent = Path(tempfile.mkdtemp(prefix="recipe-widen-"))
    tree = parent / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), "HEAD"], check=True)
    try:
        path = tree / WIDENED_FILE
        text = path.read_text()
        if START not in text:
            raise SystemExit(f"{WIDENED_FILE} has no {START.splitlines()[0]!r} to rewrite any more: update --widen")
        path.write_text(text.replace(START, START_REWRITTEN))
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(parent, ignore_errors=True)


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


def replay_each(base: Path, cur: Path, factor: float) -> dict[str, str]:
    """Each point of an A/B's current side made ``factor`` times slower on its own, its
    decisions replayed on the rounds measured: "caught at round N", "cleared at round N" or
    "open at round N"."""
    from gate_recipe_replay import replay, rounds_by_point, times

    base_rounds, cur_rounds = rounds_by_point(base), rounds_by_point(cur)
    fates = {}
    for key in sorted(base_rounds.keys() & cur_rounds.keys()):
        b, c = base_rounds[key], cur_rounds[key]
        if any(p.status != "ok" for p in (*b, *c)):
            continue
        cpu = key[KEY.index("device")].startswith("cpu")
        found = replay(*times(b, c, cpu), factor)
        fates[label(tuple(key[: len(KEY)]))] = f"{found.outcome} at round {found.rounds}"
    return fates


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
    # A point whose code is the same on both sides, left open, does not hold the verdict, but
    # it is not decided: counted with the points not judged.
    open_points = len(report.get("unjudged", [])) + len(report.get("unjudged_same_code", []))
    rerun.points, rerun.unjudged = len(report["points"]), open_points
    meta = json.loads((cur / "meta.json").read_text())
    rerun.rounds = meta.get("ab", {}).get("rounds")
    if args.recipe == "ab":
        from gate_recipe_replay import point_figures, rounds_spread

        rerun.planted_fate = replay_each(base, cur, args.plant)
        rerun.planted = {name: fate.startswith("caught") for name, fate in rerun.planted_fate.items()}
        rerun.point_rounds = rounds_spread(cur)
        rerun.figures = {label(tuple(k[: len(KEY)])): astuple(f) for k, f in point_figures(base, cur).items()}
    else:
        rerun.planted, rerun.planted_exits = plant_each(base, cur, where, args.plant)
    rerun.recorded_load = recorded_load(cur)
    caught = f"{sum(rerun.planted.values())}/{len(rerun.planted)}"
    print(f"rerun {index}: exit {rerun.exit_status} ({rerun.verdict}) in {seconds / 60:.1f} min, load {load} "
          f"(rounds: {rerun.recorded_load}); rounds a point {rerun.point_rounds}; planted caught {caught}",
          file=sys.stderr, flush=True)  # fmt: skip
    return rerun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=20)
    parser.add_argument("--recipe", choices=("ab", "runs"), default="ab")
    parser.add_argument("--suite", default="suites/gate-cpu.toml")
    parser.add_argument("--baseline", default="HEAD", help="the revision ab measures against (ab only)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--max-rounds", type=int, default=None)
    parser.add_argument("--max-job-s", type=float, default=270.0, help="the recipe's budget (ab only; 0: none)")
    parser.add_argument("--widen", action="store_true", help="a change to the gated family's shared code (ab only)")
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
