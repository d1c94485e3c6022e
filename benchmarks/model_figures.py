"""Each model's parameters and eval FLOPs per sample beside the published figures, and why any differ: the table
in docs/models.md, between its ``figures`` marks.

    python benchmarks/model_figures.py           # measure every model (a few minutes) and rewrite the table
    python benchmarks/model_figures.py --check   # exit 1 when the table is not what the models measure

The published figures and the reasons come from each model's metadata (``ModelMeta.published``) and, for
torchvision's models, from torchvision's weights metadata (its ``_ops`` counts a multiply-add once, so
the table doubles it). FLOPs are counted by the suite's own counter on batch 1, a multiply-add as 2.
tests/models/test_references.py holds the models to the same figures.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root

from torchbenchmark.contract import modules_of
from torchbenchmark.models._images import TORCHVISION_WEIGHTS
from torchbenchmark.registry import list_models, load_model, meta_of, model_class

PAGE = Path(__file__).resolve().parents[1] / "docs" / "models.md"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
HEADER = (
    "| model | parameters | published | eval GFLOP per sample | published | source, and why the figures differ |",
    "|---|--:|--:|--:|--:|---|",
)
Measured = tuple[str, str]  # the parameters and GFLOP cells, as shown


def measure(name: str) -> Measured:
    """A model's parameters and eval GFLOP per sample (batch 1), at its own size and, where the published
    figure is at another, at that one too."""
    from torchbenchmark.measure.flops import count_flops

    published = meta_of(model_class(name)).published
    model = load_model(name, batch_size=1)
    params = sum(p.numel() for module in modules_of(model) for p in module.parameters())
    gflops = _gflops(count_flops(model, "eval").total)
    if published is not None and published.input_size:
        at = count_flops(load_model(name, batch_size=1, image_size=published.input_size), "eval").total
        gflops += f" (at {published.input_size} px: {_gflops(at)})"
    return f"{params:,}", gflops


def _gflops(flops: int | None) -> str:
    return "none counted" if flops is None else f"{flops / 1e9:.4g}"


def published_cells(name: str) -> tuple[str, str, str]:
    """The published parameters, the published GFLOP per sample, and the source with the reason for any difference."""
    published = meta_of(model_class(name)).published
    if published is None:
        return "", "", "no published counterpart"
    if published.source == TORCHVISION_WEIGHTS:
        import torchvision

        weights = torchvision.models.get_model_weights(name).DEFAULT
        at = f" at {published.input_size} px" if published.input_size else ""
        source = f"torchvision `{type(weights).__name__}.{weights.name}`"
        return f"{weights.meta['num_params']:,}", f"{2 * weights.meta['_ops']:.4g}{at}", _joined(source, published.differs)
    return f"{published.params:,}", "", _joined(f"`{published.source}`", published.differs or "no published FLOP count")


def _joined(source: str, reason: str) -> str:
    return f"{source}: {reason}" if reason else source


def table(measured: Mapping[str, Measured]) -> str:
    lines = list(HEADER)
    for name in list_models():
        params, gflops = measured.get(name, ("?", "?"))
        published_params, published_gflops, why = published_cells(name)
        lines.append(f"| `{name}` | {params} | {published_params} | {gflops} | {published_gflops} | {why} |")
    return "\n".join(lines)


def on_page(text: str) -> tuple[str, dict[str, Measured]]:
    """The table the page holds, and the measured cells of each of its rows."""
    block = re.search(f"{BEGIN}\n(.*?)\n{END}", text, re.S)
    if block is None:
        raise SystemExit(f"{PAGE} lost its {BEGIN} ... {END} marks")
    measured = {}
    for line in block.group(1).splitlines()[len(HEADER) :]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        measured[cells[0].strip("`")] = (cells[1], cells[3])
    return block.group(1), measured


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is not what the models measure")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    current, _ = on_page(text)
    fresh = table({name: measure(name) for name in list_models()})
    if args.check:
        print("current" if fresh == current else f"not current; run python benchmarks/model_figures.py\n{fresh}")
        return 0 if fresh == current else 1
    PAGE.write_text(text.replace(current, fresh), encoding="utf-8")
    print(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
