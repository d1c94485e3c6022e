"""The regression gate on a shared runner: counted instructions beside wall time, false alarms and catches.

    python benchmarks/counted_gate.py                 # both parts below
    python benchmarks/counted_gate.py --part counts   # counts quiet and beside two CPU hogs, A-A, +1% ops, a slower kernel
    python benchmarks/counted_gate.py --part counts --no-long   # the same without soft_actor_critic train and dlrm eval
    python benchmarks/counted_gate.py --part wall     # wall time alone at one thread beside one hog: A-A, +10% ops

Sweeps with ``--instructions`` of the same cases: the short ones (pyhpc_equation_of_state and
soft_actor_critic eval, and a chain of tiny ops, ``benchmarks/gate_models.py``) and the long ones
(soft_actor_critic train, dlrm eval: minutes a count, so counted once a machine state, with the cap and
timeout raised). All of them on a quiet machine, then beside ``--hogs`` busy processes; the short ones twice
there (an A-A pair), and then the tiny-op plug-in twice more, once with 1% more ops a step and once with the
same ops each on a larger tensor (a slower kernel of the same op count). ``compare`` of the A-A pair counts
false alarms; of A against each change, whether the gate caught it and by which tier. The table gives every
counted row's instructions per step and spread, and how far its quiet and loaded counts lie apart.

The wall-time part asks what the gate sees without counts: the plug-in at ``--threads 1`` beside one hog (a
core to spare), A against A and against 10% more ops, three processes a side: once as one ``--repeat 3``
sweep a side, the sides one after another, and once as the CI recipe runs it, the sides taking turns, a
process a turn, compared with ``--pool``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import hogs, record

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = f"{ROOT / 'benchmarks' / 'gate_models.py'}:GateTinyOps"
SHORT = {"eval": ["pyhpc_equation_of_state", "soft_actor_critic", PLUGIN]}  # mode -> models
LONG = {"eval": ["dlrm"], "train": ["soft_actor_critic"]}
LONG_FLAGS = ["--instructions", "3600", "--timeout", "5400"]  # dlrm eval's count took 800 s quiet
BASE_OPS, BASE_ELEMS = 200, 64
CHANGES = {"+1% ops": {"GATE_OPS": str(BASE_OPS * 101 // 100)}, "slower kernel": {"GATE_ELEMS": str(BASE_ELEMS * 16)}}


def sweep(out: Path, models: dict[str, list[str]], env: dict[str, str], flags: tuple[str, ...] = ("--instructions",)) -> None:
    """Every mode's models into ``out``, counted."""
    for mode, names in models.items():
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", ",".join(names), "--modes", mode, "--device", "cpu"]
        command += [*flags, "--no-detailed", "--no-progress", "--out", str(out)]
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"the sweep into {out} failed ({done.returncode}): {done.stderr[-2000:]}")


def rows(out: Path) -> dict[tuple[str, str], dict]:
    return {(row["model"], row["mode"]): row for row in json.loads((out / "summary.json").read_text())["results"]}


def count_s(row: dict) -> float:
    """The seconds the case spent counting (its ``timings_s``)."""
    return (row.get("timings_s") or {}).get("instructions", 0.0)


def compare(base: Path, new: Path, *flags: str) -> tuple[int, dict[tuple[str, str], dict]]:
    """compare's exit status and each case's JSON."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "comparison.json"
        command = [sys.executable, str(ROOT / "diagnostics.py"), "compare", *flags, str(base), str(new), "--json", str(report)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        cases = json.loads(report.read_text())["cases"] if report.exists() else []
    return done.returncode, {(case["model"], case["mode"]): case for case in cases}


def counted(folder: Path, hog_count: int, long: bool) -> str:
    """The counts' part: every case counted quiet and beside the hogs (``long``: the long ones too), an A-A
    pair and two changes compared."""
    base_env = {"GATE_OPS": str(BASE_OPS), "GATE_ELEMS": str(BASE_ELEMS)}
    sweep(folder / "quiet", SHORT, base_env)
    if long:
        sweep(folder / "quiet-long", LONG, base_env, tuple(LONG_FLAGS))
    with hogs(hog_count):
        sweep(folder / "loaded-a", SHORT, base_env)
        sweep(folder / "loaded-a2", SHORT, base_env)
        for name, change in CHANGES.items():
            sweep(folder / name.replace(" ", "-").replace("%", "pct"), {"eval": [PLUGIN]}, {**base_env, **change})
        if long:
            sweep(folder / "loaded-long", LONG, base_env, tuple(LONG_FLAGS))
    quiet = {**rows(folder / "quiet"), **(rows(folder / "quiet-long") if long else {})}
    loaded = {**rows(folder / "loaded-a"), **(rows(folder / "loaded-long") if long else {})}
    counts = []
    for key, row in sorted(loaded.items()):
        mine, theirs = row.get("instructions") or {}, (quiet.get(key) or {}).get("instructions") or {}
        if not mine.get("per_step") or not theirs.get("per_step"):
            counts.append((*key, "-", "-", "-", "-", "-", mine.get("reason") or theirs.get("reason") or "not counted"))
            continue
        apart = 100 * abs(mine["per_step"] / theirs["per_step"] - 1)
        spreads = f"{theirs['spread_pct']:.3f} / {mine['spread_pct']:.3f}"
        counts.append(
            (
                *key,
                f"{theirs['per_step']:,.0f}",
                f"{mine['per_step']:,.0f}",
                f"{apart:.3f}",
                spreads,
                f"{count_s(quiet[key]):.0f} / {count_s(row):.0f}",
                "",
            )
        )
    counts_table = tabulate(
        counts,
        headers=["model", "mode", "quiet instr/step", "loaded instr/step", "apart %", "spread % quiet / loaded", "count s", "note"],
        tablefmt="simple",
        disable_numparse=True,
    )
    pairs = {"A-A beside the hogs": folder / "loaded-a2", **{name: folder / name.replace(" ", "-").replace("%", "pct") for name in CHANGES}}
    calls = calls_of(folder / "loaded-a", pairs)
    false_alarms = sum(1 for pair, _, _, call, *_ in calls if pair.startswith("A-A") and call == "slower")
    return f"{counts_table}\n\n{calls_table(calls)}\n\nfalse alarms in the A-A pair: {false_alarms}; sweeps kept in {folder}"


def wall_time(folder: Path, hog_count: int, turns: int) -> str:
    """The wall-time part: the plug-in at one thread beside the hogs (a core to spare with one): A, A again, and
    10% more ops, three processes a side each way: one sweep a side of ``--repeat 3``, run one after another,
    and ``turns`` turns of one process a side compared with ``--pool``."""
    sides = {"a": BASE_OPS, "a2": BASE_OPS, "more-ops": BASE_OPS * 110 // 100}
    base_env = {"GATE_ELEMS": str(BASE_ELEMS)}
    both_modes = {"eval": [PLUGIN], "train": [PLUGIN]}
    with hogs(hog_count):
        for name, ops in sides.items():
            sweep(folder / f"wall-{name}", both_modes, {**base_env, "GATE_OPS": str(ops)}, ("--threads", "1", "--repeat", "3"))
        for _ in range(turns):
            for name, ops in sides.items():
                sweep(folder / f"turns-{name}", both_modes, {**base_env, "GATE_OPS": str(ops)}, ("--threads", "1"))
    apart = calls_of(folder / "wall-a", {"A-A": folder / "wall-a2", "+10% ops": folder / "wall-more-ops"})
    taking_turns = calls_of(folder / "turns-a", {"A-A": folder / "turns-a2", "+10% ops": folder / "turns-more-ops"}, "--pool")
    return (
        f"One sweep of --repeat 3 a side, one after another:\n\n{calls_table(apart)}\n\n"
        f"{turns} turns of one process a side, compared with --pool:\n\n{calls_table(taking_turns)}\n\nsweeps kept in {folder}"
    )


def calls_of(base: Path, pairs: dict[str, Path], *flags: str) -> list[tuple]:
    """Each pair's cases compared with ``base``: the call, each tier's, what decided it, and compare's exit."""
    calls = []
    for name, new in pairs.items():
        status, cases = compare(base, new, *flags)
        for (model, mode), case in sorted(cases.items()):
            tiers = (case.get("wall_call") or "-", case.get("counts_call") or "-", case.get("reason") or "-")
            ratio = f"{case['estimate']['ratio']:.3f}" if case.get("estimate") else "-"
            calls.append((name, model, mode, case["call"], *tiers, ratio, "; ".join(case.get("notes") or []), status))
    return calls


def calls_table(calls: list[tuple]) -> str:
    headers = ["pair", "model", "mode", "call", "by time", "by instructions", "decided by", "new/base", "notes", "exit"]
    return tabulate(calls, headers=headers, tablefmt="simple", disable_numparse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("counts", "wall", "all"), default="all")
    parser.add_argument("--no-long", action="store_true", help="count only the short cases (the long ones take an hour)")
    parser.add_argument("--hogs", type=int, help="busy processes beside (default: 2 for counts, 1 for wall time)")
    parser.add_argument("--turns", type=int, default=3, help="wall time: turns a side taken with --pool (default: 3)")
    parser.add_argument("--out", type=Path, help="keep the sweeps here (default: a temporary folder)")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="counted-gate-"))
    if args.part in ("counts", "all"):
        hog_count = 2 if args.hogs is None else args.hogs
        which = "short cases" if args.no_long else "every case"
        text = counted(folder, hog_count, long=not args.no_long)
        record("Counted gate", text, part=f"counts of {which}, beside {hog_count} CPU hogs", dry_run=args.dry_run)
    if args.part in ("wall", "all"):
        hog_count = 1 if args.hogs is None else args.hogs
        record(
            "Counted gate",
            wall_time(folder, hog_count, args.turns),
            part=f"wall time alone, beside {hog_count} CPU hog(s)",
            dry_run=args.dry_run,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
