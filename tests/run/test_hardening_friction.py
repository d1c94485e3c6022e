"""What a newcomer meets on the documented paths, and DDP failures named by the rank that caused them.

Each test reproduces one way a documented path went wrong: a DDP row blaming the peer that saw a rank go,
``--ddp N`` past the machine, a bad argument of ``collect_diagnostics``, ``check`` on a plug-in that
cannot be imported, a CPU-only model file, the rerun hint, the Python recipe, a long case with no sign of
life, and claims and layout of the report and compare pages.
"""

from __future__ import annotations

import dataclasses
import fcntl
import html
import json
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import torchbenchmark as tb
from tests.helpers.friction_models import BUILD_ENV
from tests.helpers.processes import TOKEN_ENV, processes_with
from torchbenchmark import cli
from torchbenchmark.cli import sweep as sweep_cli
from torchbenchmark.contract import BatchSizes
from torchbenchmark.report import page, plots
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.run import ddp, outdir
from torchbenchmark.run.sweep import SweepArgumentError, SweepOptions

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "helpers" / "tiny_models.py"
FRICTION = ROOT / "tests" / "helpers" / "friction_models.py"
REFERENCE = ROOT / "benchmarks" / "reference"


def diagnostics(*args: str, env: dict[str, str] | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


# --- DDP: the rank that failed of its own accord, the rank that got least far -----------------------------


@pytest.mark.slow
def test_a_sweep_names_the_rank_that_crashed_and_the_rank_that_hung(tmp_path: Path) -> None:
    """Through the whole sweep (guard, worker, torchrun), where the worker's own start-up eats into the timeout."""
    marker = uuid.uuid4().hex
    out = tmp_path / "out"

    def sweep(models: str, timeout_s: int) -> subprocess.CompletedProcess[str]:
        return diagnostics(
            "--models", models, "--ddp", "2", "--steps", "10", "--no-detailed", "--timeout", str(timeout_s), "--out", str(out),
            "--no-progress", env={TOKEN_ENV: marker},
        )  # fmt: skip

    # The failing ranks end their cases by themselves; the stalled one waits out its timeout, so it gets a shorter
    # one of its own, still room for both ranks to start and build on a busy runner (about 20 s beside two hogs).
    done = sweep(f"{FRICTION}:RankOneCrashes,{FRICTION}:RankOneKilled", 90)
    assert done.returncode == 1, done.stderr[-3000:]
    stalled = sweep(f"{FRICTION}:RankOneStalls", 50)
    assert stalled.returncode == 1, stalled.stderr[-3000:]
    rows = {row["model"]: row for row in json.loads((out / "summary.json").read_text())["results"]}
    crashed, hung = rows["rank_one_crashes"], rows["rank_one_stalls"]
    assert crashed["status"] == "failed"
    assert crashed["error"].startswith("rank 1 crashed: Fatal Python error: Segmentation fault"), crashed["error"]
    killed = rows["rank_one_killed"]
    assert killed["status"] == "failed"
    assert killed["error"].startswith("rank 1 was killed by SIGKILL: the system may have run out of memory"), killed["error"]
    assert hung["status"] == "timeout"
    assert "rank 1 got least far (build" in hung["error"], hung["error"]
    assert "2 ranks: " in done.stderr + stalled.stderr, "the progress lines never said where the ranks were"
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(marker) == [], "a rank or torchrun outlived its case"


def test_where_the_ranks_are_is_one_short_line(tmp_path: Path) -> None:
    assert ddp.whereabouts(tmp_path, 2) == "2 ranks: not started"
    (tmp_path / "rank0.status.json").write_text(json.dumps({"pid": 1, "phase": "characterise", "detail": "measuring window 2"}))
    for rank in (1, 2):
        (tmp_path / f"rank{rank}.status.json").write_text(json.dumps({"pid": 2 + rank, "phase": "build", "detail": ""}))
    assert ddp.whereabouts(tmp_path, 3) == "rank 0 characterise (measuring window 2); ranks 1,2 build"
    (tmp_path / "rank1.status.json").write_text(json.dumps({"pid": 2, "phase": "characterise", "detail": "measuring window 2"}))
    assert ddp.whereabouts(tmp_path, 2) == "2 ranks: characterise (measuring window 2)"
    assert ddp.laggard(tmp_path, 2).startswith("ranks 0 and 1 got least far (characterise, 0 collectives")


TORCHRUN_REPORT = """\
Failures:
[1]:
  time      : 2026-12-02_02:07:47
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 876)  (SIGTERM)
  traceback : Signal 15 (SIGTERM) received by PID 876
-----------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 877)  (SIGKILL)
  traceback : Signal 9 (SIGKILL) received by PID 877
"""


def test_a_rank_that_left_no_word_is_named_with_the_signal_torchrun_saw(tmp_path: Path) -> None:
    lines = [line for line in TORCHRUN_REPORT.splitlines(keepends=True) if ddp.REPORT_LINE.search(line)]
    exits = ddp.exits_of(lines)
    assert exits == ddp.Exits({0: -15, 1: -9}, 1)
    # Neither rank reported: the one torchrun saw fail first, with its signal.
    assert ddp.rank_failure(tmp_path, 2, 1, exits)[1].startswith("rank 1 was killed by SIGKILL: the system may have run out")
    # Rank 0 saw its peer go: rank 1, silent, is named with its signal, not rank 0's connection error.
    peer = {"rank": 0, "status": "failed", "reason": "RuntimeError: [pair.cc:545] Read error: Connection reset by peer", "at": 1.0}
    (tmp_path / "rank0.error.json").write_text(json.dumps(peer))
    assert ddp.rank_failure(tmp_path, 2, 1, exits)[1].startswith("rank 1 was killed by SIGKILL")
    assert ddp.rank_failure(tmp_path, 2, 1)[1].startswith("rank 1 died without a report")


def test_more_ranks_than_cores_warns_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    users = tmp_path / "users-file"
    users.write_text("the user's\n")
    # The warning comes with the flags' checks, before the output folder's (refused here: nothing runs).
    assert cli.main(["--models", "resnet18", "--ddp", "64", "--device", "cpu", "--out", str(users)]) == 2
    err = capsys.readouterr().err
    assert "warning: --ddp 64: 64 ranks x 1 thread is more than this machine's 2 cores" in err, err
    assert users.read_text() == "the user's\n"
    assert cli.main(["--models", "resnet18", "--ddp", "2", "--threads", "1", "--device", "cpu", "--out", str(users)]) == 2
    assert "warning" not in capsys.readouterr().err
    options = SweepOptions(case=tb.CaseSpec(world_size=4), out_dir=users)
    crowded = pytest.warns(UserWarning, match="4 ranks x 1 thread is more than this machine's 2 cores")
    with crowded, pytest.raises(outdir.OutputUnusable):  # the folder is refused: nothing runs
        tb.run_sweep(["resnet18"], ["train"], options)
    assert users.read_text() == "the user's\n"


def test_more_cuda_ranks_than_gpus_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    out = tmp_path / "out"
    assert cli.main(["--models", "resnet18", "--ddp", "2", "--device", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == "diagnostics.py: error: --ddp 2: 2 ranks on CUDA take one GPU each; this machine has 1 CUDA device\n"
    with pytest.raises(SweepArgumentError, match="this machine has 1 CUDA device"):
        tb.run_sweep(["resnet18"], ["train"], SweepOptions(case=tb.CaseSpec(device="cuda", world_size=2), out_dir=out))
    row = tb.collect_diagnostics("resnet18", device="cuda", world_size=2, out_dir=out)
    assert row.status == Status.FAILED and "take one GPU each" in (row.error or "")
    assert not out.exists(), "a refusal wrote something"


# --- collect_diagnostics: a bad argument is a failed row --------------------------------------------------

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


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda options: ",".join(f"{k}={v!r}" for k, v in options.items()))
def test_collect_diagnostics_makes_a_failed_row_of_every_bad_argument(tmp_path: Path, monkeypatch, options: dict[str, Any]) -> None:
    monkeypatch.chdir(tmp_path)  # out_dir="" would be the working folder
    options = {"out_dir": tmp_path / "out", **options}
    row = tb.collect_diagnostics(f"{TINY}:TinyMLP", **options)
    assert isinstance(row, CaseResult) and row.status == Status.FAILED and row.error, row
    assert files_under(tmp_path) == [], "a refused case wrote something"


def test_collect_diagnostics_makes_a_failed_row_of_an_output_folder_it_cannot_use(tmp_path: Path) -> None:
    users = tmp_path / "users-file"
    users.write_text("the user's\n")
    row = tb.collect_diagnostics(f"{TINY}:TinyMLP", out_dir=users)
    assert row.status == Status.FAILED and "exists and is not a folder" in (row.error or "")
    assert users.read_text() == "the user's\n"


def test_collect_diagnostics_refuses_by_type_what_is_not_a_model() -> None:
    with pytest.raises(TypeError, match="takes a model name, plug-in spec, model class or CaseSpec"):
        tb.collect_diagnostics(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown options"):
        tb.collect_diagnostics("resnet18", colour="red")


# --- check, and a model file written on a CPU-only machine -----------------------------------------------


@pytest.mark.slow
def test_check_on_a_plugin_that_raises_at_import_is_a_few_lines_and_exit_1() -> None:
    done = diagnostics("check", f"{ROOT / 'tests' / 'helpers' / 'broken_plugin.py'}:Model")
    output = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert 1 <= len(output) <= 5, output
    assert "Traceback" not in done.stdout + done.stderr
    line = next(line for line in output if "cannot be imported" in line)
    assert "RuntimeError: injected fault while importing the plug-in" in line
    log = Path(re.search(r"\(traceback: (\S+)\)", line)[1])  # type: ignore[index]
    assert "Traceback" in log.read_text()
    log.unlink()


@pytest.mark.slow
def test_check_on_a_plugin_that_cannot_be_built_names_the_rule_and_the_log() -> None:
    done = diagnostics("check", f"{ROOT / 'tests' / 'helpers' / 'faulty_models.py'}:RaisesInBuild", "--modes", "train")
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("  raises_in_build train: built as Model("))
    assert "RuntimeError: injected fault in build (traceback: " in line, line
    log = Path(re.search(r"\(traceback: (\S+)\)", line)[1])  # type: ignore[index]
    assert "injected fault in build" in log.read_text() and "Traceback" in log.read_text()
    log.unlink()


def test_batch_sizes_on_cuda_default_to_the_cpu_ones() -> None:
    sizes = BatchSizes(cpu_train=4, cpu_eval=8)
    assert (sizes.get("cuda", "train"), sizes.get("cuda:0", "eval")) == (4, 8)
    assert BatchSizes.same(cpu=2).sizes() == (2, 2, 2, 2)
    assert BatchSizes(cpu_train=4, cpu_eval=8, cuda_train=64).sizes() == (4, 8, 64, 8)


@pytest.mark.slow
def test_a_cpu_only_model_file_passes_check() -> None:
    done = diagnostics("check", f"{FRICTION}:CpuOnly")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("every rule holds")


# --- the rerun hint repeats the sweep's own flags ---------------------------------------------------------

SWEEP_FLAGS = [
    "--out", "elsewhere/out dir", "--device", "cpu", "--batch-size", "3", "--steps", "40", "--threads", "1",
    "--no-detailed", "--scaling", "--timeout", "120", "--repeat", "3",
]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "variant"),
    [([], "eager"), (["--compile", "--backend", "aot_eager", "--compile-mode", "default"], "aot_eager"), (["--compile"], "eager")],
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


# --- the documented Python recipe -------------------------------------------------------------------------


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.slow
@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "docs" / "python-api.md"], ids=lambda p: p.name)
def test_the_documented_python_recipe_runs_as_written(tmp_path: Path, path: Path) -> None:
    """The page's first Python block, run in a folder of its own (benchmarks/ linked in for the reference)."""
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    recipe = python_blocks(path)[0]
    assert 'out_dir="traces"' in recipe and 'load_summary("traces")' in recipe
    check = "\nassert summary.rows and summary.rows[0].model == 'resnet18', summary\nprint('recipe ok')\n"
    done = subprocess.run(
        [sys.executable, "-c", recipe + check], cwd=tmp_path, capture_output=True, text=True, timeout=900, env={**os.environ}
    )
    assert done.returncode == 0 and "recipe ok" in done.stdout, done.stderr[-3000:]
    assert (tmp_path / "traces" / "runs").is_dir() and (tmp_path / "traces" / "summary.json").is_file()


# --- a long case shows what it is doing -------------------------------------------------------------------

PHASES_SEEN = ("building", "warming up", "measuring window 1", "light profile", "costs")
CASE = "slow_case eval eager: "  # the progress line names the case by the name its class declares


def sweep_in_a_terminal(out: Path, build_s: str) -> str:
    """A sweep of the slow case with stderr on a pseudo-terminal (so the live bar is drawn); all it wrote."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # a terminal 200 columns wide
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", f"{FRICTION}:SlowCase", "--modes", "eval", "--out", str(out)]
    child = subprocess.Popen(command, cwd=ROOT, env={**os.environ, BUILD_ENV: build_s}, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the sweep is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif child.poll() is not None:
            break
    child.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_a_long_case_shows_its_phase_on_the_bar_every_few_seconds(tmp_path: Path) -> None:
    text = sweep_in_a_terminal(tmp_path / "out", "10")
    updates = [part for part in re.split(r"[\r\n]", text) if CASE in part]
    named = [update for update in updates if re.search(r": [a-z][a-z0-9 ]+ \(\d+ s\)", update)]
    assert len(named) >= 5, updates[-10:]
    assert len([update for update in named if "building (" in update]) >= 5, "no update while the case was building"
    for phase in PHASES_SEEN:
        assert any(f": {phase} (" in update for update in named), (phase, updates[-10:])


def test_a_phase_shorter_than_the_poll_is_still_shown_once() -> None:
    from torchbenchmark.run.progress import PHASE_MARKER, PhaseWatch

    watch = PhaseWatch()  # three phases announced between two polls
    watch.feed("".join(f"{PHASE_MARKER}{phase}\n" for phase in ("calibrating", "light profile", "costs")).encode())
    assert watch.passed() == ["starting", "calibrating", "light profile"] and watch.now()[0] == "costs"
    assert watch.passed() == []  # each once


@pytest.mark.slow
def test_a_long_case_prints_a_line_per_phase_with_no_progress(tmp_path: Path) -> None:
    done = diagnostics(
        "--models", f"{FRICTION}:SlowCase", "--modes", "eval", "--out", str(tmp_path / "out"), "--no-progress", env={BUILD_ENV: "2"}
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.strip() for line in done.stderr.splitlines() if line.startswith(f"  {CASE}")]
    assert len(lines) >= 5, done.stderr
    for phase in PHASES_SEEN:
        assert f"{CASE}{phase}" in lines, (phase, lines)


# --- the report and compare pages -------------------------------------------------------------------------


def text_of(page_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(svg|style|script)\b.*?</\1>", " ", page_html, flags=re.S)))


def one_case(summary: Any) -> Any:
    row = next(row for row in summary.rows if row.status == Status.OK)
    return dataclasses.replace(summary, rows=(row,))


def test_the_pages_claim_nothing_of_the_detailed_trace_it_does_not_hold() -> None:
    summary = tb.load_summary(REFERENCE)
    pages = [page.render_report(summary), page.render_comparison_report(tb.compare(summary, summary), summary, summary)]
    for prose in (part for page_html in pages for _, part in re.findall(r"<(p|figcaption|li)\b[^>]*>(.*?)</\1>", page_html, re.S)):
        for sentence in re.split(r"(?<=[.:;])\s", text_of(prose)):
            if "detailed" in sentence.lower():
                assert "flop" not in sentence.lower(), sentence


def test_one_case_is_one_case_on_both_pages() -> None:
    summary = one_case(tb.load_summary(REFERENCE))
    for text in (
        text_of(page.render_report(summary)),
        text_of(page.render_comparison_report(tb.compare(summary, summary), summary, summary)),
    ):
        assert not re.search(r"\b1 (cases|rows|runs|regressions|ranks|collectives)\b", text), text[:500]
        assert "1 case" in text


def test_the_environment_tables_scroll_inside_their_box() -> None:
    summary = tb.load_summary(REFERENCE)
    compared = page.render_comparison_report(tb.compare(summary, summary), summary, summary)
    assert re.search(r'<div class="scroll"><table class="environments">', compared)
    assert ".tb-report .scroll { overflow-x: auto; }" in compared
    assert re.search(r'<div class="scroll"><table class="sortable">', page.render_report(summary))


def drawn(monkeypatch: pytest.MonkeyPatch, draw: Any) -> Any:
    """The matplotlib figure a plot function drew (its SVG text is not needed)."""
    figures = []
    real = plots.svg

    def keep(figure: Any, prefix: str, titles: Any = None) -> str:
        figures.append(figure)
        return real(figure, prefix, titles)

    monkeypatch.setattr(plots, "svg", keep)
    assert draw() is not None
    (figure,) = figures
    return figure


@pytest.mark.parametrize("plot", ["suite map", "ratios"])
def test_legends_sit_outside_the_plotted_area(monkeypatch: pytest.MonkeyPatch, plot: str) -> None:
    summary = tb.load_summary(REFERENCE)
    draw = (lambda: plots.suite_map(summary.rows)) if plot == "suite map" else (lambda: plots.ratio_intervals(tb.compare(summary, summary)))
    figure = drawn(monkeypatch, draw)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    (axes,) = figure.axes
    legend = axes.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(axes.get_window_extent(renderer)), "the legend covers the plotted area"


def test_the_ratio_axis_of_a_narrow_comparison_has_a_scale_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    summary = one_case(tb.load_summary(REFERENCE))
    figure = drawn(monkeypatch, lambda: plots.ratio_intervals(tb.compare(summary, summary)))
    (axes,) = figure.axes
    low, high = axes.get_xlim()
    assert len([tick for tick in axes.get_xticks() if low <= tick <= high]) >= 3
