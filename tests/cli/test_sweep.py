"""The diagnostics command line end to end: a real sweep of a small model into a temporary folder."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.summaries import table
from tests.helpers.sweeps import SWEEP_ARGS, TINY
from torchbenchmark import list_models
from torchbenchmark.analyze import verdict as dispatch
from torchbenchmark.results.schema import enough_clean
from torchbenchmark.results.spec import Budget

pytestmark = pytest.mark.slow  # every test here runs the command line in processes of its own

ROOT = Path(__file__).resolve().parents[2]


def diagnostics(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("out")
    return diagnostics("--models", TINY, "--out", str(out), *SWEEP_ARGS), out


def test_sweep_exits_zero_and_writes_both_summaries(sweep) -> None:
    done, out = sweep
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "summary.json").read_text())
    assert {"torch", "device_name", "threads", "cpu", "python", "command", "started_at"} <= set(document["environment"])
    rows = {row["mode"]: row for row in document["results"]}
    assert set(rows) == {"train", "eval"}
    for row in rows.values():
        assert row["status"] == "ok" and row["model"] == "tiny_mlp" and row["device"] == "cpu"
        # Five steps measured; the step time holds those no other work stretched, or all five where too few ran clean.
        split = row["time_split"]
        assert split["steps_measured"] == 5 and row["step_time_ms"]["median"] > 0
        kept = split["steps_kept"] if enough_clean(split["steps_kept"], 5) else 5
        assert row["step_time_ms"]["n"] == kept, split
        # The verdict follows from the row's own overhead share. Which verdict a five-step sweep of a tiny
        # model gets depends on the machine's load; tests/analyze/test_pricing.py pins verdicts on models built for it.
        fraction = row["dispatch"]["overhead_fraction_uncapped"]
        assert fraction > 0 and row["dispatch"]["verdict"] == dispatch.verdict(fraction), row["dispatch"]
    text = (out / "summary.txt").read_text()
    header, rows = table(text)
    assert "ms/step" in header.split() and [line.split()[0] for line in rows] == ["tiny_mlp", "tiny_mlp"]


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("kind", ["", "-detailed"])
def test_traces_are_gzip_chrome_traces_with_steps_and_phases(sweep, mode: str, kind: str) -> None:
    _, out = sweep
    path = out / "tiny_mlp" / f"{mode}-cpu{kind}.pt.trace.json.gz"
    with gzip.open(path, "rt") as stream:
        names = {event.get("name", "") for event in json.load(stream)["traceEvents"]}
    assert any(name.startswith("ProfilerStep#") for name in names)
    expected = {"forward", "backward", "optimizer"} if mode == "train" else {"forward"}
    assert expected <= names


def test_top_ops_and_logs_sit_beside_the_traces(sweep) -> None:
    _, out = sweep
    for mode in ("train", "eval"):
        assert "self ms/step" in (out / "tiny_mlp" / f"{mode}-cpu.top_ops.txt").read_text()
        assert (out / "tiny_mlp" / f"{mode}-cpu.log").exists()
    leftovers = [p.name for p in out.rglob("*") if "partial" in p.name or ".result." in p.name]
    assert leftovers == []


def test_profiles_record_as_many_steps_as_the_budget_gives_the_measured_step(sweep) -> None:
    _, out = sweep
    for row in json.loads((out / "summary.json").read_text())["results"]:
        for kind, suffix in (("light", ""), ("detailed", "-detailed")):
            with gzip.open(out / "tiny_mlp" / f"{row['mode']}-cpu{suffix}.pt.trace.json.gz", "rt") as stream:
                events = json.load(stream)["traceEvents"]
            steps = {e["name"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
            assert len(steps) == Budget(steps=5).profiled_steps(kind, row["step_time_ms"]["median"]), (row["mode"], kind)


def test_list_names_every_model() -> None:
    done = diagnostics("--list")
    assert done.returncode == 0
    listed = {line.split()[0] for line in done.stdout.splitlines()[2:] if line.strip()}
    assert listed == set(list_models())
    assert done.stdout.split()[0] == "model" and "family" in done.stdout.splitlines()[0]


def test_batch_size_threads_device_and_no_detailed_take_effect(tmp_path: Path) -> None:
    out = tmp_path / "out"
    probe = f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:ReportsSettings"
    done = diagnostics(
        "--models",
        probe,
        "--modes",
        "eval",
        "--out",
        str(out),
        "--steps",
        "3",
        "--no-progress",
        "--batch-size",
        "3",
        "--threads",
        "2",
        "--device",
        "cpu",
        "--no-detailed",
    )
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "summary.json").read_text())
    (row,) = document["results"]
    assert (row["status"], row["batch_size"], row["device"]) == ("ok", 3, "cpu"), row
    assert document["environment"]["threads"] == 2
    assert "settings: threads=2 device=cpu eval inputs (3, 8)" in (out / row["log"]).read_text()
    assert row["traces"]["detailed"] is None and row["profiler_distortion_pct"]["detailed"] is None
    assert sorted(p.name for p in (out / "reports_settings").glob("*.json.gz")) == ["eval-cpu.pt.trace.json.gz"]


def test_collect_diagnostics_loads_the_engine_on_first_use() -> None:
    code = (
        "import sys, torchbenchmark\n"
        "assert 'torchbenchmark.run.engine' not in sys.modules and 'torch' not in sys.modules\n"
        "from torchbenchmark.api import collect_diagnostics\n"
        "assert torchbenchmark.collect_diagnostics is collect_diagnostics\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300)


def test_no_progress_prints_a_line_per_case(sweep) -> None:
    done, _ = sweep
    lines = [line for line in done.stderr.splitlines() if line.startswith("[") and "/2]" in line]
    assert [line.split()[0] for line in lines] == ["[1/2]", "[2/2]"], done.stderr
    assert all("tiny_mlp" in line and "ms/step" in line for line in lines)


@pytest.mark.parametrize("kind", ["", "-detailed"])
def test_traces_carry_distributed_info_for_hta(sweep, kind: str) -> None:
    _, out = sweep
    with gzip.open(out / "tiny_mlp" / f"train-cpu{kind}.pt.trace.json.gz", "rt") as stream:
        trace = json.load(stream)
    assert trace["distributedInfo"] == {"rank": 0, "world_size": 1, "backend": "none"}
    assert trace["traceEvents"]


def test_models_by_family_and_exclude() -> None:
    from torchbenchmark.cli import models as cli
    from torchbenchmark.cli.args import UsageError

    nlp = cli.resolve_models("family:nlp")
    assert "hf_Bert" in nlp and "resnet50" not in nlp
    assert cli.exclude_models(nlp, "hf_Bert,hf_T5") == [name for name in nlp if name not in ("hf_Bert", "hf_T5")]
    with pytest.raises(UsageError, match="unknown family 'nope'; families: "):
        cli.resolve_models("family:nope")
    with pytest.raises(UsageError, match="not among the models chosen"):
        cli.exclude_models(nlp, "resnet50")
    done = diagnostics("--models", "family:nope")
    assert done.returncode == 2 and "unknown family" in done.stderr
