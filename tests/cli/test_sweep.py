"""The diagnostics command line end to end: a real sweep of a small model into a temporary folder."""

from __future__ import annotations

import gzip
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s, record_of
from tests.helpers.local_sweeps import Sweeps
from tests.helpers.places import placed
from tests.helpers.processes import TOKEN_ENV
from tests.helpers.summaries import table
from tests.helpers.sweeps import FAST, SWEEP_ARGS, TINY
from torchbenchmark import cli, list_models
from torchbenchmark.analyze import verdict as dispatch
from torchbenchmark.cli import sweep as sweep_cli
from torchbenchmark.results.schema import CaseResult, Status, enough_clean
from torchbenchmark.results.spec import Budget

pytestmark = pytest.mark.xdist_group("cli_sweep")  # one worker runs the module's sweep once, for all its tests

ROOT = Path(__file__).resolve().parents[2]


def diagnostics(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("out")
    return diagnostics("--models", TINY, "--out", str(out), *SWEEP_ARGS), out


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_top_ops_and_logs_sit_beside_the_traces(sweep) -> None:
    _, out = sweep
    for mode in ("train", "eval"):
        assert "self ms/step" in (out / "tiny_mlp" / f"{mode}-cpu.top_ops.txt").read_text()
        assert (out / "tiny_mlp" / f"{mode}-cpu.log").exists()
    leftovers = [p.name for p in out.rglob("*") if "partial" in p.name or ".result." in p.name]
    assert leftovers == []


@pytest.mark.slow
def test_profiles_record_as_many_steps_as_the_budget_gives_the_measured_step(sweep) -> None:
    _, out = sweep
    for row in json.loads((out / "summary.json").read_text())["results"]:
        for kind, suffix in (("light", ""), ("detailed", "-detailed")):
            with gzip.open(out / "tiny_mlp" / f"{row['mode']}-cpu{suffix}.pt.trace.json.gz", "rt") as stream:
                events = json.load(stream)["traceEvents"]
            steps = {e["name"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
            assert len(steps) == Budget(steps=5).profiled_steps(kind, row["step_time_ms"]["median"]), (row["mode"], kind)


@pytest.mark.slow
def test_list_names_every_model() -> None:
    done = diagnostics("--list")
    assert done.returncode == 0
    listed = {line.split()[0] for line in done.stdout.splitlines()[2:] if line.strip()}
    assert listed == set(list_models())
    assert done.stdout.split()[0] == "model" and "family" in done.stdout.splitlines()[0]


@pytest.mark.slow
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


@pytest.mark.slow
def test_collect_diagnostics_loads_the_engine_on_first_use() -> None:
    code = (
        "import sys, torchbenchmark\n"
        "assert 'torchbenchmark.run.engine' not in sys.modules and 'torch' not in sys.modules\n"
        "from torchbenchmark.api import collect_diagnostics\n"
        "assert torchbenchmark.collect_diagnostics is collect_diagnostics\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300)


@pytest.mark.slow
def test_no_progress_prints_a_line_per_case(sweep) -> None:
    done, _ = sweep
    lines = [line for line in done.stderr.splitlines() if line.startswith("[") and "/2]" in line]
    assert [line.split()[0] for line in lines] == ["[1/2]", "[2/2]"], done.stderr
    assert all("tiny_mlp" in line and "ms/step" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["", "-detailed"])
def test_traces_carry_distributed_info_for_hta(sweep, kind: str) -> None:
    _, out = sweep
    with gzip.open(out / "tiny_mlp" / f"train-cpu{kind}.pt.trace.json.gz", "rt") as stream:
        trace = json.load(stream)
    assert trace["distributedInfo"] == {"rank": 0, "world_size": 1, "backend": "none"}
    assert trace["traceEvents"]


@pytest.mark.slow
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


# --- flags refused before anything runs, and the rerun hint --------------------------------------------------


@pytest.fixture
def local_sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Sweeps:
    return Sweeps.beside_a_users_file(tmp_path / "root", capsys)


@pytest.mark.parametrize(
    "out, message",
    [("", "--out is empty"), ("/proc/torchbenchmark-x", "cannot create the output folder")],
    ids=["empty", "in-proc"],
)
def test_out_that_cannot_be_used_is_one_line_and_exit_2(tmp_path: Path, monkeypatch, capsys, out: str, message: str) -> None:
    with placed(tmp_path) as place:
        monkeypatch.setenv(TOKEN_ENV, place.token)
        assert cli.main(["--models", TINY, "--out", out, *FAST]) == 2
        one_line_error(capsys.readouterr().err, message)
        assert not Path("summary.json").exists() and not Path(out or ".").joinpath(".torchbenchmark.lock").exists()
        place.check_contained()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--threads", "2147483648"], "--threads: must be from 1 to 1024, got 2147483648"),
        (["--threshold", "3"], "--threshold and --allow-inconclusive apply to the comparison --baseline BASE makes"),
        (["--allow-inconclusive"], "--threshold and --allow-inconclusive apply to the comparison --baseline BASE makes"),
        (["--instructions", "0"], "--instructions: must be more than 0"),
    ],
    ids=["threads-past-an-int", "threshold-alone", "allow-inconclusive-alone", "instructions-cap-0"],
)
def test_a_flag_out_of_range_or_without_its_partner_is_one_line_and_exit_2(
    local_sweeps: Sweeps, capsys, flags: list[str], message: str
) -> None:
    out = local_sweeps.root / "out"
    assert local_sweeps.cli("--models", "alpha", "--out", str(out), *flags, *FAST) == 2
    one_line_error(capsys.readouterr().err, message)
    assert not out.exists() and not local_sweeps.calls


def test_a_sweep_into_its_own_baseline_is_refused(local_sweeps: Sweeps, capsys) -> None:
    a = local_sweeps.run(local_sweeps.root / "a")
    before, calls = md5s(local_sweeps.root), len(local_sweeps.calls)
    for out, baseline in ((a, a), (a / "next", a), (a, record_of(a))):
        assert local_sweeps.cli("--models", "alpha", "--out", str(out), "--baseline", str(baseline), *FAST) == 2
        one_line_error(capsys.readouterr().err, f"--out {out}", "an input of this command")
    assert md5s(local_sweeps.root) == before and len(local_sweeps.calls) == calls


SWEEP_FLAGS = [
    "--out", "elsewhere/out dir", "--device", "cpu", "--batch-size", "3", "--steps", "40", "--threads", "1",
    "--no-detailed", "--scaling", "--timeout", "120", "--repeat", "3",
]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "variant"),
    [
        ([], "eager"),
        (["--compile", "--backend", "aot_eager", "--compile-mode", "default"], "aot_eager"),
        (["--compile"], "eager"),
        (["--instructions"], "eager"),
        (["--instructions", "900"], "eager"),
    ],
)
def test_the_rerun_hint_runs_the_same_case_with_the_same_flags(extra: list[str], variant: str) -> None:
    argv = ["--models", "resnet18,dlrm", "--modes", "train,eval", *SWEEP_FLAGS, *extra]
    args = sweep_cli.build_parser().parse_args(argv)
    row = CaseResult(model="resnet18", mode="eval", device="cpu", status=Status.OK, variant=variant)
    hint = sweep_cli.rerun_command(args, "resnet18", row)
    words = hint.split(" ", 2)
    assert words[:2] == ["python", "diagnostics.py"]
    again = sweep_cli.build_parser().parse_args(shlex.split(words[2]))
    assert (again.models, again.modes, again.out) == ("resnet18", "eval", "elsewhere/out dir")
    first = sweep_cli.options_of(args, "cpu", argv)
    second = sweep_cli.options_of(again, "cpu", shlex.split(words[2]))
    assert second.case == first.case and second.repeat == first.repeat
    wanted = next(spec for spec in first.cases("resnet18", "eval") if spec.variant == variant)
    assert second.cases("resnet18", "eval")[-1] == wanted, "the hint runs another case than the row's"
