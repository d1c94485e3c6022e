"""Every model a user can name, built and stepped: the libraries' models swept in shards, merged, and tabled
in docs/models.md (between its ``catalogue`` marks), the counts in RESULTS.md.

    python benchmarks/catalogue.py --out DIR              # sweep (hours on two cores), merge, write the table
    python benchmarks/catalogue.py --out DIR --table-only # the table and counts from a sweep already in DIR

What it sweeps: every torchvision builder (``torchvision:*``); the classes of PyTorch's dynamo benchmark
harness's offline Hugging Face list and every ``hf:*ForCausalLM``; and a sample of timm: of every
``timm.list_models()`` name whose model has at most ``--timm-max-params`` parameters (counted on the meta
device: nothing allocated), ``--timm`` of them evenly spaced by name. Each case runs as a sweep runs it,
in ``--modes`` (train and eval unless told), ``--steps 3 --no-detailed --threads 1 --batch-size 2`` (the step kept small: a catalogue
asks whether each model builds and steps, not how fast at its full batch), in ``--shards`` shards side by
side, joined with ``diagnostics.py merge``. ``--parts`` chooses which of the four lists to sweep. A step time the tool marked (``untrustworthy_reasons``) is shown with its mark.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "models.md"
BEGIN, END = "<!-- catalogue:begin -->", "<!-- catalogue:end -->"
SWEEP_FLAGS = ["--device", "cpu", "--steps", "3", "--no-detailed", "--threads", "1", "--no-progress"]


def timm_sample(count: int, max_params: int, cache: Path) -> list[str]:
    """``count`` timm names, evenly spaced by name among those with at most ``max_params`` parameters."""
    if cache.exists():
        sizes = json.loads(cache.read_text())
    else:
        import timm
        import torch

        sizes = {}
        for name in timm.list_models():
            try:
                with torch.device("meta"):
                    model = timm.create_model(name, pretrained=False)
                sizes[name] = sum(parameter.numel() for parameter in model.parameters())
            except Exception as error:  # a builder that cannot run on the meta device: left out, and said so
                sizes[name] = f"{type(error).__name__}: {str(error)[:200]}"
        cache.write_text(json.dumps(sizes, indent=1))
    small = sorted(name for name, size in sizes.items() if isinstance(size, int) and size <= max_params)
    step = max(1, len(small) / count)
    return [f"timm:{small[int(i * step)]}" for i in range(min(count, len(small)))]


def specs(parts: list[str], timm_count: int, max_params: int, folder: Path) -> list[str]:
    from torchbenchmark.models.source_hf import DYNAMO_OFFLINE
    from torchbenchmark.registry import expand_source

    chosen = {
        "torchvision": lambda: expand_source("torchvision:*"),
        "hf": lambda: [f"hf:{name}" for name in DYNAMO_OFFLINE],
        "timm": lambda: timm_sample(timm_count, max_params, folder / "timm-parameters.json"),
        "causal": lambda: expand_source("hf:*ForCausalLM"),  # most default to billions of parameters: skipped as too large
    }
    return list(dict.fromkeys(spec for part in parts for spec in chosen[part]()))


def sweep(chosen: list[str], folder: Path, shards: int, timeout_s: int, batch_size: int | None, modes: str) -> Path:
    """The shards side by side, then merged; the merged folder."""
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", ",".join(chosen), "--modes", modes, *SWEEP_FLAGS]
    command += ["--timeout", str(timeout_s)]
    command += ["--batch-size", str(batch_size)] if batch_size else []
    running = []
    for shard in range(1, shards + 1):
        log = (folder / f"shard-{shard}.log").open("w")
        out = folder / f"shard-{shard}"
        running.append(subprocess.Popen([*command, "--shard", f"{shard}/{shards}", "--out", str(out)], cwd=ROOT, stdout=log, stderr=log))
    for process in running:
        process.wait()
    merged = folder / "merged"
    parts = [str(folder / f"shard-{shard}") for shard in range(1, shards + 1)]
    subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), "merge", *parts, "--out", str(merged)], cwd=ROOT, check=True)
    return merged


def cell(row: dict | None) -> str:
    if row is None:
        return "not run"
    if row["status"] != "ok":
        return row["status"]
    step = f"{row['step_time_ms']['median']:.4g} ms"
    return f"{step} (marked)" if row.get("untrustworthy_reasons") else step


def table(merged: Path) -> tuple[str, str]:
    """The page's table (a row per model) and the counts by library, status and mode."""
    rows = json.loads((merged / "summary.json").read_text())["results"]
    by_model: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    for row in rows:
        by_model[row["model"]][row["mode"]] = row
    counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
    ran = [mode for mode in ("train", "eval") if any(mode in modes for modes in by_model.values())]  # the modes swept
    lines = [
        "| model | " + " | ".join(f"{mode} step" for mode in ran) + " | eval verdict | GFLOP per eval step | why not ok |",
        "|---|" + "--:|" * len(ran) + "---|--:|---|",
    ]
    for model in sorted(by_model, key=lambda name: (name.partition(":")[0], name.lower())):
        modes = by_model[model]
        for mode, row in modes.items():
            counts[(model.partition(":")[0], mode, row["status"])] += 1
        evaluated = modes.get("eval") or {}
        verdict = (evaluated.get("dispatch") or {}).get("verdict", "") if evaluated.get("status") == "ok" else ""
        flops = evaluated.get("flops_per_step")
        reasons = "; ".join(
            sorted({f"{mode}: {row['error']}" for mode, row in modes.items() if row["status"] != "ok" and row.get("error")})
        )
        reasons = re.sub(r"\s+", " ", reasons).replace("|", "\\|")
        gflops = f"{flops / 1e9:.4g}" if flops else ""
        steps = " | ".join(cell(modes.get(mode)) for mode in ran)
        lines.append(f"| `{model}` | {steps} | {verdict} | {gflops} | {reasons} |")
    summary = ["| library | mode | ok | skipped | failed | timeout |", "|---|---|--:|--:|--:|--:|"]
    for source in sorted({key[0] for key in counts}):
        for mode in ran:
            found = [counts[(source, mode, status)] for status in ("ok", "skipped", "failed", "timeout")]
            summary.append(f"| {source} | {mode} | " + " | ".join(map(str, found)) + " |")
    return "\n".join(lines), "\n".join(summary)


def write_page(rows_table: str, summary: str) -> None:
    text = PAGE.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{summary}\n\n{rows_table}\n{END}"
    if BEGIN in text:
        text = re.sub(f"{re.escape(BEGIN)}.*?{re.escape(END)}", lambda _: block, text, flags=re.S)
    else:
        raise SystemExit(f"{PAGE} has no {BEGIN} ... {END} marks")
    PAGE.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the sweep's folder (kept)")
    parser.add_argument("--timm", type=int, default=340, help="timm models in the sample (default: 340)")
    parser.add_argument("--timm-max-params", type=int, default=30_000_000, help="the sample's largest model (default: 30M parameters)")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument(
        "--parts", default="torchvision,hf,timm,causal", help="of torchvision, hf (the dynamo list), timm, causal (hf:*ForCausalLM)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=2, help="every case's batch (default: 2, the least train's batch norm takes); 0: each model's own"
    )
    parser.add_argument("--timeout", type=int, default=600, help="seconds per case (default: 600)")
    parser.add_argument("--modes", default="train,eval", help="train, eval or both (default: both)")
    parser.add_argument("--table-only", action="store_true", help="merge the shards in --out and write the table; sweep nothing")
    parser.add_argument("--dry-run", action="store_true", help="print the table and counts; change no file")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        merged = args.out / "merged"
        if not merged.exists():
            parts = sorted(str(path) for path in args.out.glob("shard-*") if path.is_dir())
            subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), "merge", *parts, "--out", str(merged)], cwd=ROOT, check=True)
    else:
        chosen = specs(args.parts.split(","), args.timm, args.timm_max_params, args.out)
        (args.out / "specs.json").write_text(json.dumps(chosen, indent=1))
        print(f"{len(chosen)} models, {args.shards} shards", flush=True)
        merged = sweep(chosen, args.out, args.shards, args.timeout, args.batch_size, args.modes)
    rows_table, summary = table(merged)
    if not args.dry_run:
        write_page(rows_table, summary)
    record("Catalogue", summary, notes=f"every row: docs/models.md; the sweep kept in {args.out}", dry_run=args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
