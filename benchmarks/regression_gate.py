"""How far the compare gate can be trusted on this machine: its A/A false-alarm rate and its detection rate.

    python benchmarks/regression_gate.py --out /tmp/gate            # two sweeps, then the analysis
    python benchmarks/regression_gate.py --out /tmp/gate --analyse  # the analysis of sweeps already run

Two sweeps of the same cases, A then B, each with ``--repeat N`` (default 3: N processes per case, in
rounds over the cases). A against B is an A/A comparison: every case called ``slower`` is a false alarm. The same data
give both settings: process i of A against process i of B is a comparison at the default ``--repeat 1``
(N per case), all N against all N one at ``--repeat N``. Slowdowns of 5% and 10% are injected
by scaling B's measured samples, so the noise they are detected through is the machine's own. The bare
7% threshold on medians that TorchBench's gate uses is scored on the same data for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import append  # noqa: E402
from torchbenchmark.compare import compare_rows  # noqa: E402
from torchbenchmark.results import CaseResult, Samples  # noqa: E402
from torchbenchmark.storage import load_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("squeezenet1_1,mobilenet_v2,shufflenet_v2_x1_0,resnet18,lstm_lm,dlrm,soft_actor_critic,"
          "pyhpc_equation_of_state,dcgan")  # fmt: skip
BARE_THRESHOLD = 1.07  # TorchBench's gate: a median more than 7% slower, no statistics


def sweep(out: Path, models: str, repeat: int) -> None:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", models, "--device", "cpu",
               "--no-detailed", "--repeat", str(repeat), "--no-progress", "--out", str(out)]  # fmt: skip
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
    args = parser.parse_args()
    if not args.analyse:
        sweep(args.out / "a", args.models, args.repeat)
        sweep(args.out / "b", args.models, args.repeat)
    a, b = load_summary(args.out / "a"), load_summary(args.out / "b")
    pairs = [(ra, rb) for ra in a.rows for rb in b.rows if ra.key == rb.key and ra.status == rb.status == "ok"
             and len(ra.samples.process_medians_ms) == len(rb.samples.process_medians_ms) == args.repeat]  # fmt: skip
    settings = {"--repeat 1": [slice(i, i + 1) for i in range(args.repeat)], f"--repeat {args.repeat}": [slice(0, args.repeat)]}
    rows = []
    for setting, slices in settings.items():
        for factor in (1.0, 1.05, 1.10):
            called = bare = total = 0
            for ra, rb in pairs:
                for part in slices:
                    base, new = scaled(ra, 1.0, part), scaled(rb, factor, part)
                    total += 1
                    called += compare_rows(base, new, 5.0, a.environment, b.environment).call == "slower"
                    ratio = sum(new.samples.process_medians_ms) / sum(base.samples.process_medians_ms)
                    bare += ratio > BARE_THRESHOLD
            label = "A/A: false alarms" if factor == 1.0 else f"+{factor - 1:.0%} injected: detected"
            rows.append((setting, label, total, f"{100 * called / total:.1f}%", f"{100 * bare / total:.1f}%"))
    table = tabulate(rows, headers=["setting", "comparison", "n", "gate (5% + 95% interval)", "bare 7% threshold"])
    notes = (f"{len(pairs)} cases ok on both sides ({args.models}, train and eval, --no-detailed). "
             "A slowdown is injected by scaling side B's measured per-process and per-window medians.")  # fmt: skip
    append("Comparing runs: the regression gate's false alarms and detection", table, notes)


if __name__ == "__main__":
    main()
