"""DistributedDataParallel against one process: ``--ddp 2`` beside the single-process train step.

    python benchmarks/ddp_scaling.py [--models resnet18,mobilenet_v2,lstm_lm] [--out DIR]   # run the sweeps
    python benchmarks/ddp_scaling.py --single ONE_THREAD_OUT --ddp DDP_OUT --single2 TWO_THREAD_OUT

Three sweeps of the train cases: one process on 1 intra-op thread (what each DDP rank gets), DDP with
2 ranks of 1 thread each, and one process on 2 threads (the machine's cores, the fair rival on a
2-core box). Each DDP rank runs the model's default batch, so a DDP step trains twice the samples:
``samples/s vs 1p`` compares throughput, not step times.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.api import load_summary

ROOT = Path(__file__).resolve().parents[1]
MODELS = "resnet18,mobilenet_v2,lstm_lm,hf_DistilBert,dlrm"


def sweep(out: Path, models: str, *flags: str) -> None:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", models, "--modes", "train", "--no-detailed",
               "--no-progress", "--out", str(out), *flags]  # fmt: skip
    subprocess.run(command, check=False)


def rows(folder: Path, variant: str) -> dict[str, object]:
    return {row.model: row for row in load_summary(folder).rows if row.mode == "train" and row.variant == variant}


def table(single: Path, ddp: Path, single2: Path) -> str:
    one, two, ddp_rows = rows(single, "eager"), rows(single2, "eager"), rows(ddp, "ddp2")
    lines = []
    for model in sorted(set(one) | set(ddp_rows)):
        a, b, d = one.get(model), two.get(model), ddp_rows.get(model)
        ms = lambda row: row.step_time.median_ms if row is not None and row.status == "ok" else None
        if d is None or d.status != "ok" or ms(a) is None:
            lines.append((model, a and a.batch_size, ms(a), ms(b), None, None, None, None, None, None, None, None,
                          f"ddp2 {d.status if d else 'missing'}: {d.error if d else ''}"))  # fmt: skip
            continue
        dist = d.distributed
        best = min(x for x in (ms(a), ms(b)) if x is not None)
        lines.append((
            model, d.batch_size, ms(a), ms(b), ms(d), ms(d) / ms(a), 2 * best / ms(d),
            dist.comm_pct, dist.exposed_comm_pct, dist.overlap_pct, dist.skew_pct,
            "/".join(f"{rank.step_median_ms:.0f}" for rank in dist.ranks),
            f"{a.dispatch.verdict if a.dispatch else '?'} -> {d.dispatch.verdict if d.dispatch else '?'}; {dist.reading}",
        ))  # fmt: skip
    headers = ["model", "bs/rank", "1p 1t ms", "1p 2t ms", "ddp2 ms", "ddp2/1p1t", "samples/s vs best 1p",
               "comm %", "exposed %", "overlap %", "skew %", "rank ms", "verdict 1p -> ddp2; reading"]  # fmt: skip
    return tabulate(lines, headers=headers, floatfmt=("", "", ".0f", ".0f", ".0f", ".2f", ".2f", ".0f", ".0f", ".0f", ".1f"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--out", type=Path, help="where the sweeps go (default: a temporary folder)")
    parser.add_argument("--single", type=Path, help="an existing 1-thread single-process sweep")
    parser.add_argument("--ddp", type=Path, help="an existing --ddp 2 sweep")
    parser.add_argument("--single2", type=Path, help="an existing 2-thread single-process sweep")
    args = parser.parse_args()
    if args.single and args.ddp and args.single2:
        single, ddp, single2 = args.single, args.ddp, args.single2
    else:
        out = args.out or Path(tempfile.mkdtemp(prefix="ddp-scaling-"))
        single, ddp, single2 = out / "single-1t", out / "ddp2", out / "single-2t"
        sweep(single, args.models, "--threads", "1")
        sweep(ddp, args.models, "--ddp", "2")
        sweep(single2, args.models, "--threads", "2")
    record("DistributedDataParallel scaling", table(single, ddp, single2))


if __name__ == "__main__":
    main()
