"""The package from Python: what dir() shows, collect_diagnostics' process setup, and run_sweep's classes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import torchbenchmark
from tests.helpers.tiny_models import TinyMLP
from torchbenchmark.registry import model_class
from torchbenchmark.run.sweep import spec_of

ROOT = Path(__file__).resolve().parent.parent


def test_dir_lists_the_lazy_names() -> None:
    assert {"collect_diagnostics", "run_sweep", "CaseResult", "list_models", "load_model"} <= set(dir(torchbenchmark))


def test_run_sweep_imports_classes_by_module_or_file() -> None:
    assert spec_of("resnet18") == "resnet18"
    assert spec_of(TinyMLP) == "tests.helpers.tiny_models:TinyMLP"
    from_file = model_class(f"{ROOT / 'tests' / 'helpers' / 'plain_plugins.py'}:PlainModel")
    assert spec_of(from_file) == f"{ROOT / 'tests' / 'helpers' / 'plain_plugins.py'}:PlainModel"


def test_a_notebook_class_is_a_clear_error() -> None:
    notebook_class = type("MyNet", (TinyMLP,), {"__module__": "__main__"})
    with pytest.raises(TypeError, match=r"fresh process.*'path/to/file.py:MyNet'.*collect_diagnostics\(MyNet\)"):
        spec_of(notebook_class)
    with pytest.raises(TypeError, match="cannot import"):
        torchbenchmark.run_sweep([notebook_class], ["eval"])


def test_dir_and_the_lazy_names_need_no_torch() -> None:
    assert {"load_summary", "compare", "MODES", "__version__"} <= set(dir(torchbenchmark))


# A denormal float survives arithmetic unless the process flushes denormals to zero.
DENORMAL_AFTER = """
import sys, torch, torchbenchmark as tb
from torchbenchmark.results.spec import Budget
tb.collect_diagnostics("{spec}", mode="eval", out_dir=sys.argv[1], budget=Budget(steps=3), detailed=False{extra})
print((torch.tensor([1e-39]) * 1.0).item() == 0.0)
"""


@pytest.mark.parametrize(("extra", "flushed"), [("", "True"), (", steady=False", "False")])
@pytest.mark.slow
def test_collect_diagnostics_sets_the_process_up_as_a_sweep_unless_told_not_to(tmp_path: Path, extra: str, flushed: str) -> None:
    script = DENORMAL_AFTER.format(spec=f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP", extra=extra)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == flushed
