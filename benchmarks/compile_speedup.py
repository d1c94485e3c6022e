"""Eager against torch.compile for suite models: does the dispatch verdict predict where compiling helps?

    python benchmarks/compile_speedup.py --out /tmp/compiled [--modes eval] [--models a,b,...]

One sweep with ``--compile`` (inductor, default mode): each model's eager case, then its compiled case,
whose speedup over eager is measured in the compiled case's own process from eager and compiled windows
taken in turn. The table puts the eager verdict and overhead share beside the speedup and compile cost.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import append  # noqa: E402
from torchbenchmark.storage import load_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("pyhpc_equation_of_state,soft_actor_critic,dlrm,lstm_lm,dcgan,mobilenet_v2,resnet18,"
          "hf_DistilBert,squeezenet1_1")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--modes", default="eval")
    parser.add_argument("--analyse", action="store_true", help="only analyse a sweep already in --out")
    args = parser.parse_args()
    if not args.analyse:
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", args.models, "--modes", args.modes,
                   "--device", "cpu", "--compile", "--no-detailed", "--no-progress", "--out", str(args.out)]  # fmt: skip
        subprocess.run(command, check=False)
    rows = {row.key: row for row in load_summary(args.out).rows}
    table = []
    for (model, mode, device, variant), row in sorted(rows.items()):
        if variant == "eager":
            continue
        eager = rows.get((model, mode, device, "eager"))
        verdict = eager.dispatch if eager and eager.dispatch else None
        report = row.compile
        rounds = report.speedup_rounds if report else ()
        table.append((
            model, mode,
            verdict.verdict if verdict else "", f"{100 * verdict.overhead_fraction:.0f}" if verdict else "",
            f"{eager.step_time.median_ms:.3g}" if eager and eager.step_time else "",
            f"{row.step_time.median_ms:.3g}" if row.step_time else row.status,
            f"{row.speedup_vs_eager:.2f}" if row.speedup_vs_eager else "",
            f"{min(rounds):.2f}-{max(rounds):.2f}" if rounds else "",
            f"{report.compile_time_s:.1f}" if report else "",
            report.graphs if report else "", report.graph_breaks if report else "",
            row.dispatch.verdict if row.dispatch else (row.error or "")[:60],
        ))  # fmt: skip
    table.sort(key=lambda r: -float(r[3] or 0))
    text = tabulate(table, headers=["model", "mode", "eager verdict", "overhead %", "eager ms", "compiled ms", "speedup",
                                    "rounds", "compile s", "graphs", "breaks", "compiled verdict"])  # fmt: skip
    append("torch.compile beside eager: speedup, compile cost, graph breaks", text,
           "inductor, default mode; speedup = eager / compiled median step time from 3 window pairs taken in turn "
           "in the compiled case's process (rounds: the lowest and highest pair). Sorted by the eager overhead share.")


if __name__ == "__main__":
    main()
