"""The package from Python: what dir() shows, collect_diagnostics' process setup and its refusals (each a
failed row, or a TypeError for what is not a model), and run_sweep's classes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import torchbenchmark
from tests.helpers import faulty_models
from tests.helpers.places import placed
from tests.helpers.processes import TOKEN_ENV
from tests.helpers.tiny_models import TinyMLP
from torchbenchmark.registry import model_class
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.results.spec import Compile
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


def test_collect_diagnostics_refuses_an_unusable_name_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with placed(tmp_path) as place:
        monkeypatch.setenv(TOKEN_ENV, place.token)
        result = torchbenchmark.collect_diagnostics(faulty_models.EscapingName, out_dir=place.out)
        assert result.status == "failed" and "UnsafeNameError" in result.error and "path separator" in result.error
        views = [".torchbenchmark.lock", "report.html", "runs", "summary.json", "summary.txt"]
        assert sorted(p.name for p in place.out.iterdir()) == views
        place.check_contained()


BAD_OPTIONS = [
    {"device": "tpu"},
    {"device": "cuda:99"},
    {"device": ""},
    {"device": None},
    {"device": 3},
    {"batch_size": 0},
    {"batch_size": 1.5},
    {"batch_size": True},
    {"threads": 0},
    {"top_ops": -1},
    {"world_size": 0},
    {"world_size": "2"},
    {"compile": "inductor"},
    {"budget": {"steps": 3}},
    {"detailed": "no"},
    {"timeout_s": float("nan")},
    {"mode": "both"},
    {"out_dir": ""},
]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda options: ",".join(f"{k}={v!r}" for k, v in options.items()))
def test_collect_diagnostics_makes_a_failed_row_of_every_bad_argument(tmp_path: Path, monkeypatch, options: dict[str, Any]) -> None:
    monkeypatch.chdir(tmp_path)  # out_dir="" would be the working folder
    options = {"out_dir": tmp_path / "out", **options}
    row = torchbenchmark.collect_diagnostics(f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP", **options)
    assert isinstance(row, CaseResult) and row.status == Status.FAILED and row.error, row
    assert files_under(tmp_path) == [], "a refused case wrote something"


def test_collect_diagnostics_makes_a_failed_row_of_an_output_folder_it_cannot_use(tmp_path: Path) -> None:
    users = tmp_path / "users-file"
    users.write_text("the user's\n")
    row = torchbenchmark.collect_diagnostics(f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP", out_dir=users)
    assert row.status == Status.FAILED and "exists and is not a folder" in (row.error or "")
    assert users.read_text() == "the user's\n"
    compiled = torchbenchmark.collect_diagnostics(
        f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP", out_dir=users, compile=Compile("aot_eager")
    )
    assert compiled.status == Status.FAILED and compiled.variant == "aot_eager"  # keyed as the case it refused


def test_collect_diagnostics_refuses_by_type_what_is_not_a_model() -> None:
    with pytest.raises(TypeError, match="takes a model name, plug-in spec, model class or CaseSpec"):
        torchbenchmark.collect_diagnostics(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown options"):
        torchbenchmark.collect_diagnostics("resnet18", colour="red")


def filled(value: Any, prefix: str = "") -> set[str]:
    """The dotted paths of every figure in a row's JSON that holds something."""
    if isinstance(value, dict):
        return {path for key, item in value.items() for path in filled(item, f"{prefix}{key}.")}
    return set() if value in (None, [], {}) else {prefix.rstrip(".")}


@pytest.mark.slow
def test_collect_diagnostics_and_a_sweep_of_one_spec_fill_the_same_figures(tmp_path: Path) -> None:
    """pct_of_peak included; only what a process of its own adds differs: its log and the
    seconds spent starting it and importing."""
    spec = f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP"
    row = torchbenchmark.collect_diagnostics(spec, "eval", out_dir=tmp_path / "api", detailed=False, steady=False).to_dict()
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", spec, "--modes", "eval", "--device", "cpu", "--no-detailed"]
    subprocess.run([*command, "--no-progress", "--out", str(tmp_path / "sweep")], check=True, capture_output=True, timeout=600)
    (swept,) = torchbenchmark.load_summary(tmp_path / "sweep").rows
    assert "pct_of_peak" in filled(row)
    # Notes and marks come and go with what was measured (a borderline interval, a contended step), not with the entry point.
    api, sweep = ({path for path in filled(side) if not path.endswith(("note", "notes", "reasons"))} for side in (row, swept.to_dict()))
    assert sweep - api == {"log", "timings_s.start", "timings_s.import", "timings_s.total"}
    assert api - sweep == set()
