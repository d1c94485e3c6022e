"""Costs: resnet50's FLOPs against the published figure, pct_of_peak for a sweep, peak memory against RSS.

    python benchmarks/costs.py flops                                  # resnet50 eval FLOPs per 224x224 image
    python benchmarks/costs.py table --summary OUT/summary.json       # every case of a sweep
    python benchmarks/costs.py memory [--cases resnet50:train,...]    # ours against an independent reading
    python benchmarks/costs.py suite [--models all]                   # every model: FLOPs and a short timing

``suite`` is for a machine too busy for a full sweep: each model in a fresh process, its FLOPs counted as
a sweep counts them, then one warm-up step and the median of three timed steps (a sweep warms up until
steady and measures windows that must agree, so its figures are the ones to trust). The machine's peak is
measured before every model and the best of those readings is the peak the table divides by.

``table`` reads a sweep's rows as the tool recorded them and measures the machine's peak again at the
end, so a row's share of the peak can be read against both. ``memory`` runs each case in a fresh
process with glibc's malloc as it comes: the independent reading is the peak RSS (``VmHWM``, reset after
warm-up) during two steps, above the RSS before the model was built (its libraries imported), against the
tool's ``peak_memory_mb``. It also holds what the allocator keeps of freed memory, Python objects and
libraries' own buffers, so it should read somewhat above the tool's figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark import load_model
from torchbenchmark.analyze.verdict import KERNEL_LIMITED_BELOW_PCT, compute_limit
from torchbenchmark.contract import iter_tensors
from torchbenchmark.measure.flops import count_flops
from torchbenchmark.measure.memory import MB, measure_memory, peak_rss_mb
from torchbenchmark.measure.peak import measure_peak

PUBLISHED_RESNET50_GFLOPS = 8.2  # 4.1 GMACs per 224x224 image (torchvision's model card: 4.09 GFLOPS as MACs)
MEMORY_CASES = "resnet50:train,hf_Bert:train,mobilenet_v2:eval"


def flops() -> None:
    model = load_model("resnet50", batch_size=1)
    count = count_flops(model, "eval")
    image = tuple(next(iter_tensors(model.inputs("eval"))).shape)
    rows = [("resnet50 eval, one image " + "x".join(map(str, image[1:])), count.total / 1e9, PUBLISHED_RESNET50_GFLOPS,
             count.total / 1e9 / PUBLISHED_RESNET50_GFLOPS,
             ", ".join(f"{kind} {n / 1e9:.3f}" for kind, n in count.by_kind.items()))]  # fmt: skip
    table = tabulate(rows, headers=["case", "GFLOP counted", "published GFLOP", "ratio", "by kind (GFLOP)"], floatfmt=".3f")
    record("Costs", table, part="FLOPs per image")


def table(summary: Path) -> None:
    document = json.loads(summary.read_text(encoding="utf-8"))
    environment = document["environment"]
    again = measure_peak(environment.get("device", "cpu"), environment.get("threads"), seconds=10.0)
    # Each row's pct_of_peak is against the peak its own run measured: every run's reading counts.
    runs = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))["environment"] for path in sorted((summary.parent / "runs").glob("*.json"))
    }
    readings = {run: env["peak_gflops"] for run, env in runs.items() if env.get("peak_gflops")} or {"summary": environment["peak_gflops"]}
    best = max(again.gflops, *readings.values())
    rows = []
    for row in document["results"]:
        if row["status"] != "ok":
            rows.append((row["model"], row["mode"], row.get("batch_size"), row["status"], "", "", "", "", "", "", row.get("error") or ""))
            continue
        verdict = row["dispatch"]["verdict"] if row.get("dispatch") else ""
        achieved = row["achieved_gflops"]
        flop = row["flops_per_step"]
        rows.append((
            row["model"], row["mode"], row["batch_size"], verdict,
            "" if flop is None else f"{flop / 1e9 / row['batch_size']:.3g}",
            "" if achieved is None else f"{achieved:.1f}",
            "" if row["pct_of_peak"] is None else f"{row['pct_of_peak']:.1f}",
            "" if achieved is None else f"{100 * achieved / best:.1f}",
            "" if achieved is None else compute_limit(verdict, 100 * achieved / best) or "",
            f"{row['peak_memory_mb']:.0f}",
            row.get("flops_note") or "",
        ))  # fmt: skip
    headers = ["model", "mode", "batch", "verdict", "GFLOP/sample", "GFLOP/s", "% of sweep's peak", "% of best peak",
               "compute limit", "peak MB", "FLOPs note"]  # fmt: skip
    peaks = "; ".join(f"{run}: {runs[run]['peak_gflops']} GFLOP/s ({runs[run]['peak_method']})" if run in runs else f"{gflops} GFLOP/s"
                      for run, gflops in readings.items())  # fmt: skip
    notes = (f"% of sweep's peak: each row's own pct_of_peak, against the peak its run measured ({peaks}). "
             f"Measured again after it: {again.gflops} GFLOP/s ({again.method}). Best peak: {best} GFLOP/s. "
             f"Compute limit from the best peak (KERNEL_LIMITED_BELOW_PCT = {KERNEL_LIMITED_BELOW_PCT:g}).")  # fmt: skip
    record("Costs", tabulate(rows, headers=headers, disable_numparse=True), notes, part="pct_of_peak for every case")


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def one_memory_case(case: str) -> dict[str, float]:
    """In this (fresh) process: the tool's peak memory and the RSS readings for ``model:mode``."""
    name, mode = case.split(":")
    import torchvision  # noqa: F401 - imported before the baseline: their code is no model's memory
    import transformers  # noqa: F401

    torch.ones(1) + 1
    before_build_kb = _rss_kb("VmRSS")
    model = load_model(name)
    getattr(model, mode)(niter=3)  # warm: lazy state allocated, as before the tool's measured steps
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    getattr(model, mode)(niter=2)
    peak_kb = _rss_kb("VmHWM")
    memory = measure_memory(model, mode, torch.device("cpu"))
    return {
        "ours_mb": memory.peak_mb, "state_mb": memory.state_mb,
        "rss_rise_mb": (peak_kb - before_build_kb) * 1024 / MB,
        "peak_rss_mb": peak_rss_mb(),
    }  # fmt: skip


def memory(cases: str) -> None:
    rows = []
    for case in cases.split(","):
        out = subprocess.run([sys.executable, __file__, "one-memory", case], capture_output=True, text=True, check=True).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        rows.append((case, figures["ours_mb"], figures["state_mb"], figures["rss_rise_mb"],
                     figures["ours_mb"] / figures["rss_rise_mb"], figures["peak_rss_mb"]))  # fmt: skip
    headers = ["case", "peak_memory_mb (tool)", "of which state", "peak RSS rise from build", "tool / RSS rise",
               "process peak RSS MB"]  # fmt: skip
    record("Costs", tabulate(rows, headers=headers, floatfmt=".1f"), part="Peak memory against the process's RSS")


def one_suite_case(name: str) -> list[dict[str, object]]:
    """In this (fresh) process: each mode's FLOPs and median step time over three steps, for model ``name``."""
    from torchbenchmark.measure.harness import StepTimer, timed_call
    from torchbenchmark.measure.steady import steady_process

    steady_process()
    model = load_model(name)
    rows: list[dict[str, object]] = []
    for mode in ("train", "eval"):
        try:
            count = count_flops(model, mode)
            getattr(model, mode)(niter=1)
            timer = StepTimer()
            timed_call(model, mode, 4, timer)  # the first step of a call holds its edge: three inner steps
        except NotImplementedError as error:
            rows.append({"model": name, "mode": mode, "skipped": str(error)})
            continue
        median_ms = statistics.median(timer.inner_ns()) / 1e6
        rows.append({"model": name, "mode": mode, "batch": model.batch_size(mode), "flops": count.total,
                     "note": count.note, "ms": median_ms})  # fmt: skip
    return rows


def suite(models: str) -> None:
    from torchbenchmark.registry import list_models

    names = list_models() if models == "all" else models.split(",")
    peaks, rows = [], []
    for name in names:
        peaks.append(measure_peak("cpu", seconds=0.5, size=1024).gflops)
        try:
            out = subprocess.run([sys.executable, __file__, "one-suite", name], capture_output=True, text=True,
                                 check=True, timeout=300).stdout  # fmt: skip
            rows.extend(json.loads(out.strip().splitlines()[-1]))
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            rows.append({"model": name, "mode": "both", "skipped": type(error).__name__})
        print(rows[-1], flush=True)
    best = max(peaks)
    lines = []
    for row in rows:
        if "skipped" in row:
            lines.append((row["model"], row["mode"], "", "", "", "", "", str(row["skipped"])[:60]))
            continue
        achieved = None if row["flops"] is None else row["flops"] / (row["ms"] * 1e6)
        lines.append((row["model"], row["mode"], row["batch"], "" if row["flops"] is None else f"{row['flops'] / 1e9:.3g}",
                      f"{row['ms']:.4g}", "" if achieved is None else f"{achieved:.1f}",
                      "" if achieved is None else f"{100 * achieved / best:.1f}", (row["note"] or "")[:70]))  # fmt: skip
    headers = ["model", "mode", "batch", "GFLOP/step", "ms/step (median of 3)", "GFLOP/s", "% of peak", "FLOPs note"]
    notes = (f"Peak: {best} GFLOP/s, the best of {len(peaks)} readings (one before each model, each the best of "
             f"float32 torch.mm 1024x1024x1024 for 0.5 s on {torch.get_num_threads()} threads); the readings ranged "
             f"{min(peaks)} to {best} GFLOP/s.")  # fmt: skip
    record("Costs", tabulate(lines, headers=headers, disable_numparse=True), notes, part="Every suite model, short timing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["flops", "table", "memory", "suite", "one-memory", "one-suite"])
    parser.add_argument("case", nargs="?", help="model:mode for one-memory, a model for one-suite")
    parser.add_argument("--models", default="all", help="comma-separated names or all, for suite")
    parser.add_argument("--summary", type=Path, help="a sweep's summary.json, for table")
    parser.add_argument("--cases", default=MEMORY_CASES, help="model:mode, comma-separated, for memory")
    args = parser.parse_args()
    if args.what == "flops":
        flops()
    elif args.what == "table":
        table(args.summary)
    elif args.what == "memory":
        memory(args.cases)
    elif args.what == "suite":
        suite(args.models)
    elif args.what == "one-suite":
        print(json.dumps(one_suite_case(args.case)))
    else:
        print(json.dumps(one_memory_case(args.case)))


if __name__ == "__main__":
    main()
