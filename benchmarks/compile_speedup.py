"""Eager against torch.compile for suite models: does the dispatch verdict predict where compiling helps?

    python benchmarks/compile_speedup.py --out /tmp/compiled [--modes eval] [--models a,b,...]
    python benchmarks/compile_speedup.py --out /tmp/compiled_decode --decode   # the decode models alone

One sweep with ``--compile`` (inductor, default mode): each model's eager case, then its compiled case,
whose speedup over eager is measured in the compiled case's own process from eager and compiled windows
taken in turn. The table puts the eager verdict and overhead share beside the speedup and compile cost,
and the measured speedup beside the bound the eager row's overhead sets on removing it (``analyze.bound``):
past the bound, the compiler also made the arithmetic faster.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.analyze.bound import AgainstBound, against_eager
from torchbenchmark.api import load_summary

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("pyhpc_equation_of_state,soft_actor_critic,dlrm,lstm_lm,dcgan,mobilenet_v2,resnet18,"
          "hf_DistilBert,squeezenet1_1,llama_decode,mixtral_decode,mamba_decode")  # fmt: skip
DECODE_MODELS = "llama_decode,mixtral_decode,mamba_decode"


def _versus(versus: AgainstBound | None) -> str:
    """past (every window pair beat the bound's top), noise (the median did, not every pair), slower, or the
    share of the bound's saving the speedup bought."""
    if versus is None:
        return ""
    if versus.past:
        return "past"
    if versus.speedup > versus.bound.speedup_bound_range[1]:
        return "noise"
    return "slower" if versus.speedup < 1 else f"{100 * versus.share_of_bound:.0f}% of it"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--modes", default="eval")
    parser.add_argument("--analyse", action="store_true", help="only analyse a sweep already in --out")
    parser.add_argument("--decode", action="store_true", help=f"only {DECODE_MODELS}, recorded under a part of their own")
    args = parser.parse_args()
    if args.decode:
        args.models = DECODE_MODELS
    if not args.analyse:
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", args.models, "--modes", args.modes,
                   "--device", "cpu", "--compile", "--no-detailed", "--no-progress", "--out", str(args.out)]  # fmt: skip
        subprocess.run(command, check=False)
    rows = {row.key: row for row in load_summary(args.out).rows}
    against = against_eager(rows.values())
    table = []
    for (model, mode, device, variant), row in sorted(rows.items()):
        if variant == "eager":
            continue
        eager = rows.get((model, mode, device, "eager"))
        verdict = eager.dispatch if eager and eager.dispatch else None
        report = row.compile
        rounds = report.speedup_rounds if report else ()
        bound = eager.bound if eager else None
        versus = against.get(row.key)
        table.append((
            model, mode,
            verdict.verdict if verdict else "", f"{100 * verdict.overhead_fraction:.0f}" if verdict else "",
            f"{eager.step_time.median_ms:.3g}" if eager and eager.step_time else "",
            f"{row.step_time.median_ms:.3g}" if row.step_time else row.status,
            f"{row.speedup_vs_eager:.2f}" if row.speedup_vs_eager else "",
            f"{min(rounds):.2f}-{max(rounds):.2f}" if rounds else "",
            f"{bound.speedup_bound:.2f}" if bound else "",
            "{:.2f}-{:.2f}".format(*bound.speedup_bound_range) if bound else "",
            _versus(versus),
            f"{report.compile_time_s:.1f}" if report else "",
            report.graphs if report else "", report.graph_breaks if report else "",
            row.dispatch.verdict if row.dispatch else (row.error or "")[:60],
        ))  # fmt: skip
    table.sort(key=lambda r: -float(r[3] or 0))
    text = tabulate(table, headers=["model", "mode", "eager verdict", "overhead %", "eager ms", "compiled ms", "speedup",
                                    "rounds", "bound", "bound range", "vs bound", "compile s", "graphs", "breaks", "compiled verdict"])  # fmt: skip
    record(
        "Compiled speedup",
        text,
        "inductor, default mode; speedup = eager / compiled median step time from 3 window pairs taken in turn "
        "in the compiled case's process (rounds: the lowest and highest pair). bound: 1 / (1 - the eager overhead "
        "share), the most removing the eager row's estimated overhead could buy, with the range its overhead "
        "interval gives; vs bound: past (every window pair beat the top of that range: the compiler also made the "
        "arithmetic faster), noise (the median did, not every pair), slower, or the share of the bound's saving "
        "the speedup bought. Sorted by the eager overhead share.",
        part="Decode steps" if args.decode else None,
    )


if __name__ == "__main__":
    main()
