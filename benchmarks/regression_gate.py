"""How far the compare gate can be trusted on this machine: its A/A false-alarm rate and its detection rate.

    python benchmarks/regression_gate.py --out /tmp/gate            # two sweeps, then the analysis
    python benchmarks/regression_gate.py --out /tmp/gate --analyse  # the analysis of sweeps already run
    python benchmarks/regression_gate.py --out /tmp/gate2 --models a,b --also /tmp/gate  # more cases, pooled
    python benchmarks/regression_gate.py --out /tmp/turns --turns 3 --repeat 1  # A and B taking turns
    python benchmarks/regression_gate.py --out /tmp/one --turns 5 --repeat 1 --threads 1  # one thread a case

Two sweeps of the same cases, A then B, each with ``--repeat N`` (default 3: N processes per case, in
rounds over the cases); or, with ``--turns K``, K sweeps a side taking turns (A, B, A, B, ...), each
side read as ``compare --pool`` reads it. A against B is an A/A comparison: every case called
``slower`` is a false alarm. The same data give every setting up to a side's P processes: process i of
A against process i of B is a comparison at the default ``--repeat 1`` (P per case), all P against all
P one with every process (``--repeat P``, or K turns and ``--pool``), and with P over 3, processes 1-3
against 1-3 (then 4-6, ...) one of three a side. Slowdowns of 3 to 20% (``FACTORS``) are injected
by scaling B's measured samples, so the noise they are detected through is the machine's own; the
smallest detected in at least 90% of comparisons is the change the gate catches reliably. The bare
7% threshold on medians that TorchBench's gate uses is scored on the same data for comparison.

Each setting also checks compare's own ``catches``: the slowdown it reckons each case calls 9 times in
10, set beside the rates measured, and injected into each case at its own size, where about 90% should
be called.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.analyze.compare import Comparison, compare, compare_rows
from torchbenchmark.analyze.walltime import Between
from torchbenchmark.api import load_summary
from torchbenchmark.results.records import RunRecord, summary_of_records
from torchbenchmark.results.schema import Call, CaseResult, Samples, Status

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("squeezenet1_1,mobilenet_v2,shufflenet_v2_x1_0,resnet18,lstm_lm,dlrm,soft_actor_critic,"
          "pyhpc_equation_of_state,dcgan")  # fmt: skip
Pair = tuple[CaseResult, CaseResult, dict, dict]  # a case in sweeps A and B, and each sweep's environment
BARE_THRESHOLD = 1.07  # TorchBench's gate: a median more than 7% slower, no statistics
FACTORS = (1.0, 1.03, 1.05, 1.07, 1.10, 1.15, 1.20)  # slowdowns injected into side B
RELIABLE_PCT = 90  # a slowdown is detected reliably when at least this share of comparisons call it


def sweep(out: Path, models: str, repeat: int, threads: int | None) -> None:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", models, "--device", "cpu",
               "--no-detailed", "--repeat", str(repeat), "--no-progress", "--out", str(out)]  # fmt: skip
    if threads:
        command += ["--threads", str(threads)]
    subprocess.run(command, check=False)


def scaled(row: CaseResult, factor: float, processes: slice) -> CaseResult:
    samples = Samples(tuple(m * factor for m in row.samples.process_medians_ms[processes]),
                      tuple(tuple(m * factor for m in windows) for windows in row.samples.window_medians_ms[processes]))  # fmt: skip
    return dataclasses.replace(row, samples=samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--analyse", action="store_true", help="only analyse sweeps already in --out")
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--repeat", type=int, default=3, help="processes per case in each sweep (default: 3)")
    parser.add_argument(
        "--also", type=Path, action="append", default=[], help="pool the sweeps of another --out folder (same --repeat) into the analysis"
    )
    parser.add_argument(
        "--turns", type=int, default=1, help="sweeps a side, A and B taking turns (A, B, A, B, ...), compared with --pool (default: 1)"
    )
    parser.add_argument("--threads", type=int, help="torch intra-op threads per case (default: torch's)")
    args = parser.parse_args()
    if not args.analyse:
        for _ in range(args.turns):
            sweep(args.out / "a", args.models, args.repeat, args.threads)
            sweep(args.out / "b", args.models, args.repeat, args.threads)
    processes = args.repeat * args.turns  # a side's processes per case, oldest first
    runs = [gate_pairs(folder, processes, pool=args.turns > 1) for folder in (args.out, *args.also)]  # each folder's own A/A pairs
    settings = {setting_label(n, args.repeat): [slice(i, i + n) for i in range(0, processes - n + 1, n)]
                for n in sorted({1, min(3, processes), processes})}  # fmt: skip
    rows, reliable = [], []
    for setting, slices in settings.items():
        smallest = {"gate": None, "bare": None}
        for factor in FACTORS:
            gate, bare, catches = rates(runs, slices, factor)
            label = "A/A: false alarms" if factor == 1.0 else f"+{100 * (factor - 1):.0f}% injected: detected"
            said = f"{catches:.1f}%" if factor == 1.0 else ""
            rows.append((setting, label, gate.total, f"{gate.percent:.1f}%", said, f"{bare.percent:.1f}%"))
            for name, rate in (("gate", gate), ("bare", bare)):
                if factor > 1.0 and smallest[name] is None and rate.percent >= RELIABLE_PCT:
                    smallest[name] = f"+{100 * (factor - 1):.0f}%"
        own = calibration(runs, slices)
        rows.append((setting, "each case its own 'catches': detected", own.total, f"{own.percent:.1f}%", "90% said", ""))
        none = f"none up to +{100 * (FACTORS[-1] - 1):.0f}%"
        reliable.append(f"{setting}: gate {smallest['gate'] or none}, bare 7% {smallest['bare'] or none}")
    table = tabulate(rows, headers=["setting", "comparison", "n", "gate (5% + 95% interval)", "gate says it catches",
                                    "bare 7% threshold"])  # fmt: skip
    models = ",".join(sorted({pair[0].model for pairs in runs for pair in pairs}))
    threads = f"--threads {args.threads}" if args.threads else "torch's default threads"
    notes = (f"{sum(map(len, runs))} cases ok on both sides ({models}, train and eval, --no-detailed, {threads}). "
             "A slowdown is injected by scaling side B's measured per-process and per-window medians. "
             f"Smallest injected slowdown detected in at least {RELIABLE_PCT}% of comparisons: " + "; ".join(reliable) + ". "
             "'gate says it catches': the median case's slowdown that compare reckons it calls 9 times in 10 "
             "(its 'catches' column), to set against the rates measured below it.")  # fmt: skip
    record("Regression gate", table, notes)


@dataclasses.dataclass
class Rate:
    called: int = 0
    total: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.called / self.total if self.total else 0.0


def setting_label(processes: int, repeat: int) -> str:
    """How a user gets ``processes`` a side from sweeps of ``--repeat repeat``: in one run, or taking turns."""
    if processes <= repeat:
        return f"--repeat {processes}"
    return f"{processes // repeat} turns a side, --pool" + (f", --repeat {repeat}" if repeat > 1 else "")


def gate_pairs(folder: Path, processes: int, pool: bool = False) -> list[Pair]:
    """Each case ok in both sides of ``folder``, with ``processes`` a side (with ``pool``, over all their runs)."""
    a, b = load_summary(folder / "a", pool), load_summary(folder / "b", pool)
    return [(ra, rb, a.environment, b.environment) for ra in a.rows for rb in b.rows
            if ra.key == rb.key and ra.status == rb.status == Status.OK
            and len(ra.samples.process_medians_ms) == len(rb.samples.process_medians_ms) == processes]  # fmt: skip


def calibration(runs: list[list[Pair]], slices: list[slice]) -> Rate:
    """How often the gate calls a case slower with B scaled by that case's own 'catches': 90% if it is right.

    Each case is called as in its A/A comparison, against that comparison's run noise: the noise is
    the machine's, and one slowdown per case of many sizes at once is not noise between the runs."""
    called = Rate()
    for pairs in runs:
        for part in slices:
            same = a_b(pairs, part, {})
            catches = {case.key: case.detectable_pct for case in same.cases}
            for ra, rb, env_a, env_b in pairs:
                if catches.get(rb.key) is not None:
                    slower = scaled(rb, 1 + catches[rb.key] / 100, part)
                    case = compare_rows(scaled(ra, 1.0, part), slower, same.threshold_pct, env_a, env_b, Between(same.run_noise or 0.0))
                    called.called += case.call == Call.SLOWER
                    called.total += 1
    return called


def a_b(pairs: list[Pair], part: slice, factors: dict[tuple[str, str, str, str], float]) -> Comparison:
    """A against B over processes ``part``, each case of B scaled by its factor in ``factors`` (default 1)."""
    base_rows = [scaled(ra, 1.0, part) for ra, _, _, _ in pairs]
    new_rows = [scaled(rb, factors.get(rb.key, 1.0), part) for _, rb, _, _ in pairs]
    return compare(summary_of_records([RunRecord("a", pairs[0][2], None, tuple(base_rows))], "a"),
                   summary_of_records([RunRecord("b", pairs[0][3], None, tuple(new_rows))], "b"))  # fmt: skip


def rates(runs: list[list[Pair]], slices: list[slice], factor: float) -> tuple[Rate, Rate, float]:
    """How often the gate, and the bare 7% rule on medians, call B slower than A with B scaled by ``factor``;
    and the median over comparisons of the slowdown compare says it catches (``Comparison.detectable_pct``).

    Each slice of each run is one comparison made by ``compare`` itself, run noise included."""
    gate, bare, catches = Rate(), Rate(), []
    for pairs in runs:
        for part in slices:
            comparison = a_b(pairs, part, {rb.key: factor for _, rb, _, _ in pairs})
            gate.called += len([case for case in comparison.cases if case.call == Call.SLOWER])
            gate.total += len(comparison.cases)
            catches.append(comparison.detectable_pct)
            for ra, rb, _, _ in pairs:
                base, new = (statistics.median(row.samples.process_medians_ms[part]) for row in (ra, rb))
                bare.called += factor * new / base > BARE_THRESHOLD
                bare.total += 1
    return gate, bare, statistics.median(catches)


if __name__ == "__main__":
    main()
