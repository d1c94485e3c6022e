"""Reading, comparing, merging and rendering runs where torch cannot be imported.

Each check runs in a fresh interpreter whose ``sys.modules["torch"]`` is None before anything else runs,
so any import of torch, however indirect, raises: a CI job that gates on two sweeps' records, or merges
shards uploaded as artifacts, needs only the pure-Python layers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run.shard import Shard
from torchbenchmark.run.sweep import SweepOptions, run_sweep

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "benchmarks" / "reference"
NO_TORCH = "import sys\nsys.modules['torch'] = None\n"


def torch_free(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_TORCH + textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=300)


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python diagnostics.py ARGV`` with torch unimportable; exit status as the shell sees it."""
    code = (
        f"import runpy\nsys.argv = {['diagnostics.py', *argv]!r}\nrunpy.run_path({str(ROOT / 'diagnostics.py')!r}, run_name='__main__')\n"
    )
    return torch_free(code, cwd)


def check_reading(base: Path, new: Path, tmp_path: Path) -> None:
    """compare (text, --json, --html), load_summary, to_dataframe, _repr_html_ and compare() on two outputs."""
    page, document = tmp_path / "compare.html", tmp_path / "compare.json"
    done = cli("compare", str(base), str(new), "--json", str(document), "--html", str(page), "--allow-inconclusive", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "torch" not in done.stderr and "same" in done.stdout
    assert json.loads(document.read_text())["cases"] and "<html" in page.read_text().lower()
    done = torch_free(
        f"""
        import torchbenchmark
        summary = torchbenchmark.load_summary({str(new)!r})
        frame = summary.to_dataframe()
        assert len(frame) == len(summary.rows) > 0, frame
        assert "<table" in summary._repr_html_()
        comparison = torchbenchmark.compare({str(base)!r}, {str(new)!r})
        assert "<table" in comparison._repr_html_() and len(comparison.cases) == len(summary.rows)
        assert sys.modules["torch"] is None and not any(name.startswith("torch.") for name in sys.modules)
        print("read", len(summary.rows))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("read ")


@pytest.mark.slow
def test_the_reference_run_is_read_compared_and_rendered_without_torch(tmp_path: Path) -> None:
    check_reading(REFERENCE, REFERENCE, tmp_path)


@pytest.mark.slow
def test_a_fresh_sweeps_shards_merge_and_compare_without_torch(tmp_path: Path) -> None:
    from tests.helpers.stand_ins import machinery

    def case(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> Any:
        from torchbenchmark.results.schema import CaseResult, StepTime

        ms = 1.0 + len(name) + (0.5 if spec.mode == "eval" else 0.0)
        return CaseResult(model=name, mode=spec.mode, device="cpu", status="ok", batch_size=2, step_time=StepTime(ms, 0.1, ms, 10))

    models = ["dlrm", "squeezenet1_1"]  # registered names; the stand-in case above runs none of them
    shards = [tmp_path / "shard1", tmp_path / "shard2"]
    for index, out in enumerate(shards, start=1):
        run_sweep(
            models, ["train", "eval"], SweepOptions(case=CaseSpec(), out_dir=out, shard=Shard(index, 2), progress=False), machinery(case)
        )
    merged = tmp_path / "merged"
    done = cli("merge", *map(str, shards), "--out", str(merged), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (merged / "report.html").is_file() and "merged from 2 source(s)" in (merged / "summary.txt").read_text()
    assert len(json.loads((merged / "summary.json").read_text())["results"]) == 4
    check_reading(shards[0], merged, tmp_path)
