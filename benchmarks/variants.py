"""Reduced precision and channels_last beside eager: did compute-bound models gain, and dispatch-bound ones not?

    python benchmarks/variants.py --out /tmp/variants [--modes eval] [--models a,b,...] [--precision amp-bf16] [--batch-size 4]

One sweep with ``--precision P --channels-last``: each model's eager case, then each variant's case, whose
speedup over eager is measured in its own process from eager and variant windows taken in turn. The table
puts the eager verdict beside each variant's speedup, accuracy check and share of its type's peak.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.api import load_summary

ROOT = Path(__file__).resolve().parents[1]
# Convolution nets (compute-bound on a CPU), two transformers, and a dispatch-bound model for contrast.
MODELS = "resnet18,mobilenet_v2,hf_DistilBert,hf_Bert,pyhpc_equation_of_state"


def _accuracy(row: object) -> str:
    remedy = getattr(row, "remedy", None)
    if remedy is None:
        return ""
    accuracy = remedy.accuracy
    if accuracy.not_checked:
        return "not checked"
    if accuracy.max_rel_error is None:
        return "inf/NaN"
    return f"{accuracy.max_rel_error:.1e}" + (" DIFFERS" if accuracy.differs else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--modes", default="eval")
    parser.add_argument("--precision", default="amp-bf16")
    parser.add_argument("--batch-size", default="4", help="one batch for every case, so the run fits a few minutes")
    parser.add_argument("--analyse", action="store_true", help="only analyse a sweep already in --out")
    args = parser.parse_args()
    if not args.analyse:
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", args.models, "--modes", args.modes, "--device", "cpu",
                   "--precision", args.precision, "--channels-last", "--batch-size", args.batch_size, "--steps", "5", "--no-detailed", "--no-progress",
                   "--out", str(args.out)]  # fmt: skip
        subprocess.run(command, check=False)
    summary = load_summary(args.out)
    rows = {row.key: row for row in summary.rows}
    table = []
    for (model, mode, device, variant), row in sorted(rows.items()):
        if variant == "eager":
            continue
        eager = rows.get((model, mode, device, "eager"))
        verdict = eager.dispatch if eager and eager.dispatch else None
        rounds = row.remedy.speedup_rounds if row.remedy else ()
        table.append((
            model, mode, variant,
            verdict.verdict if verdict else "", f"{100 * verdict.overhead_fraction:.0f}" if verdict else "",
            f"{eager.step_time.median_ms:.3g}" if eager and eager.step_time else "",
            f"{row.step_time.median_ms:.3g}" if row.step_time else row.status,
            f"{row.speedup_vs_eager:.2f}" if row.speedup_vs_eager else "",
            f"{min(rounds):.2f}-{max(rounds):.2f}" if rounds else "",
            _accuracy(row),
            f"{row.costs.pct_of_peak:.1f}" if row.costs and row.costs.pct_of_peak is not None else "",
            row.dispatch.verdict if row.dispatch else (row.error or "")[:70],
        ))  # fmt: skip
    text = tabulate(table, headers=["model", "mode", "variant", "eager verdict", "overhead %", "eager ms", "variant ms", "speedup",
                                    "rounds", "max rel err", "% peak", "variant verdict"])  # fmt: skip
    environment = summary.environment
    types = {"peak_gflops": "float32", "peak_gflops_bfloat16": "bfloat16", "peak_gflops_float16": "float16"}
    peaks = ", ".join(f"{name} {environment[key]} GFLOP/s" for key, name in types.items() if key in environment)
    record(
        "Precision and layout variants",
        text,
        f"speedup = eager / variant median step time from 3 window pairs taken in turn in the variant case's process "
        f"(rounds: the lowest and highest pair); max rel err: the variant's first eval outputs against eager's, on the "
        f"same weights and inputs; % peak: of the peak of the type the variant computes in (peaks: {peaks}). "
        f"--batch-size {args.batch_size} --steps 5 --no-detailed.",
    )


if __name__ == "__main__":
    main()
