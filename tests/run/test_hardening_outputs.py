"""Hardening of what the tool writes and reads: outputs that cannot destroy inputs, merge that stays in its
folder, one name per case, strict records, escaped text, a full disk, refusals that write nothing, a cap
on repeats, and Ctrl-C as one line.

Most tests run sweeps with a stand-in for the case's process (a row made in this process), so they are
fast; those that need real processes are marked slow. Every test checks the md5 of the inputs and of the
user's files around them, and that nothing was written outside the output folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import html
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from tests.helpers import hostile_models, stand_ins
from tests.helpers.processes import ROOT, TOKEN_ENV, processes_with, wait_until_gone
from torchbenchmark import cli
from torchbenchmark.report.page import render_report
from torchbenchmark.results import files
from torchbenchmark.results.records import RunState
from torchbenchmark.results.schema import CaseResult, Distributed, RankFigures, Status, StepTime, Traces
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import case as case_process
from torchbenchmark.run import outdir
from torchbenchmark.run.guard import CappedLog
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.sweep import GIVE_UP_AFTER, Machinery, SweepArgumentError, SweepOptions, run_sweep

MODELS = ["alpha", "beta"]
NAMES = [*MODELS, "gamma", "escapes"]  # the stand-ins' names count as registered
HOSTILE = ROOT / "tests" / "helpers" / "hostile_models.py"
FAST = ["--device", "cpu", "--steps", "3", "--no-detailed", "--no-progress"]


def hostile(name: str) -> str:
    return f"{HOSTILE}:{name}"


# --- what every test checks ------------------------------------------------------------------------------


def md5s(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``root`` (``skip``'s subtree aside): a file's md5, a link's target, a folder, a device."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode):
            found[str(path.relative_to(root))] = hashlib.md5(path.read_bytes()).hexdigest()
        elif stat.S_ISLNK(mode):
            found[str(path.relative_to(root))] = f"link to {os.readlink(path)}"
        else:
            found[str(path.relative_to(root))] = stat.filemode(mode)[0]
    return found


def temporary_files(root: Path) -> list[str]:
    """This tool's temporary names left anywhere under ``root``."""
    return [str(p) for p in root.rglob("*") if p.name.endswith(files.PARTIAL_SUFFIX) or outdir._TEMPORARY.fullmatch(p.name)]


def one_line_error(err: str, *fragments: str) -> None:
    assert err.startswith("diagnostics.py: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


def ok_row(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
    """A case's process stand-in: a row with a log and a light trace, written where a real case writes them."""
    folder = outdir.make_case_dir(out_dir, name)
    stem = outdir.spec_stem(spec)
    (folder / f"{stem}.log").write_text(f"{name} {spec.mode}: log\n")
    (folder / outdir.trace_name(stem, "light")).write_bytes(b"trace of " + name.encode())
    ms = 1.0 + len(name) + (0.5 if spec.mode == "eval" else 0.0)
    return CaseResult(
        model=name,
        mode=spec.mode,
        device="cpu",
        status=Status.OK,
        batch_size=4,
        step_time=StepTime(ms, 0.1, ms, 10),
        log=f"{name}/{stem}.log",
        traces=Traces(f"{name}/{outdir.trace_name(stem, 'light')}"),
    )


@dataclasses.dataclass
class Sweeps:
    """Sweeps whose cases are stand-ins (``case``), into folders under ``root``, beside a user's file."""

    root: Path
    capsys: pytest.CaptureFixture[str]
    case: Any = ok_row  # what each case's process would have made
    probes: dict[str, PluginProbe] | None = None  # stand-ins for importing plug-ins; None: import them
    calls: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)

    def machinery(self) -> Machinery:
        def counted(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
            self.calls.append((name, spec.mode, spec.repeat))
            return self.case(spec, name, out_dir, on_phase)

        # The machine reads busy: that line is said only once every check has passed.
        return stand_ins.machinery(counted, names=NAMES, busy="load average 9 on 2 CPUs", probes=self.probes)

    def run_case(self, case: Any) -> None:
        self.case = case

    def run(self, out: Path, models: list[str] = MODELS, modes: tuple[str, ...] = ("train", "eval"), **options: Any) -> Path:
        run_sweep(models, list(modes), SweepOptions(out_dir=out, progress=False, **options), self.machinery())
        self.capsys.readouterr()  # its lines are not the test's
        return out

    def cli(self, *args: str) -> int:
        return cli.main(list(args), self.machinery())

    def user_file(self) -> Path:
        return self.root / "users-file.txt"


@pytest.fixture
def sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Sweeps:
    root = tmp_path / "root"
    root.mkdir()
    (root / "users-file.txt").write_text("the user's\n")
    return Sweeps(root, capsys)


def record_of(out: Path) -> Path:
    (path,) = (out / "runs").glob("*.json")
    return path


# --- 1: compare never writes onto its inputs, a device, a folder, or where it cannot -------------------------


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


OUTPUTS = {
    "own-record": lambda a, b, root: ("--json", record_of(a)),
    "own-record-html": lambda a, b, root: ("--html", record_of(a)),
    "own-summary": lambda a, b, root: ("--json", a / "summary.json"),
    "new-file-in-input": lambda a, b, root: ("--html", b / "compare.html"),
    "input-folder": lambda a, b, root: ("--html", b),
    "link-to-a-record": lambda a, b, root: ("--json", _link(root / "innocent.json", record_of(b))),
    "device": lambda a, b, root: ("--html", Path("/dev/full")),
    "fifo": lambda a, b, root: ("--html", _fifo(root / "pipe.html")),
    "socket": lambda a, b, root: ("--json", _socket(root / "sock.json")),
    "dangling-link": lambda a, b, root: ("--json", _link(root / "dangling.json", root / "nowhere")),
    "proc": lambda a, b, root: ("--html", Path("/proc/x.html")),
    "no-folder": lambda a, b, root: ("--html", root / "no" / "such" / "x.html"),
}
MESSAGES = {
    "own-record": "an input of this command",
    "own-record-html": "an input of this command",
    "own-summary": "an input of this command",
    "new-file-in-input": "an input of this command",
    "input-folder": "an input of this command",
    "link-to-a-record": "an input of this command",
    "device": "exists and is not a regular file",
    "fifo": "exists and is not a regular file",
    "socket": "exists and is not a regular file",
    "dangling-link": "exists and is not a regular file",
    "proc": "is not a writable folder",
    "no-folder": "is not a writable folder",
}


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


@pytest.mark.parametrize("case", sorted(OUTPUTS))
def test_compare_refuses_an_output_it_must_not_write(sweeps: Sweeps, capsys: pytest.CaptureFixture[str], case: str) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    flag, path = OUTPUTS[case](a, b, sweeps.root)
    before, device = md5s(sweeps.root), os.stat("/dev/full").st_mode
    assert sweeps.cli("compare", str(a), str(b), flag, str(path)) == 2
    one_line_error(capsys.readouterr().err, f"{flag} {path}", MESSAGES[case])
    assert md5s(sweeps.root) == before  # inputs, the user's file, the fifo and socket: all as they were
    assert os.stat("/dev/full").st_mode == device and stat.S_ISCHR(device)


def test_compare_refuses_a_record_inputs_folder_and_two_outputs_in_one_file(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    before = md5s(sweeps.root)
    assert sweeps.cli("compare", str(record_of(a)), str(b), "--json", str(a / "runs" / "new.json")) == 2
    one_line_error(capsys.readouterr().err, "an input of this command")
    same = sweeps.root / "cmp.out"
    assert sweeps.cli("compare", str(a), str(b), "--json", str(same), "--html", str(same)) == 2
    one_line_error(capsys.readouterr().err, "names the same file")
    assert md5s(sweeps.root) == before


def test_compare_on_a_full_disk_is_one_line_and_leaves_nothing(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk simulated: every fsync raises ENOSPC, as the kernel's would once the blocks are gone."""
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    before = md5s(sweeps.root)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    page = sweeps.root / "cmp.html"
    assert sweeps.cli("compare", str(a), str(b), "--html", str(page)) == 2
    one_line_error(capsys.readouterr().err, f"--html {page}: cannot be written: No space left on device")
    assert md5s(sweeps.root) == before and temporary_files(sweeps.root) == []


def test_compare_still_writes_a_plain_new_file(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    (sweeps.root / "old.json").write_text("replace me")
    assert sweeps.cli("compare", str(a), str(b), "--json", str(sweeps.root / "old.json"), "--html", str(sweeps.root / "c.html")) == 0
    assert json.loads((sweeps.root / "old.json").read_text())["base"] == str(a)
    assert (sweeps.root / "c.html").read_text().startswith("<!DOCTYPE html>")


def test_a_sweep_into_its_own_baseline_is_refused(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a = sweeps.run(sweeps.root / "a")
    before, calls = md5s(sweeps.root), len(sweeps.calls)
    for out, baseline in ((a, a), (a / "next", a), (a, record_of(a))):
        assert sweeps.cli("--models", "alpha", "--out", str(out), "--baseline", str(baseline), *FAST) == 2
        one_line_error(capsys.readouterr().err, f"--out {out}", "an input of this command")
    assert md5s(sweeps.root) == before and len(sweeps.calls) == calls


# --- 2 and 3: merge writes under --out only, copies regular files of the shard only --------------------------


def shards(sweeps: Sweeps) -> tuple[Path, Path]:
    return sweeps.run(sweeps.root / "s1", ["alpha"]), sweeps.run(sweeps.root / "s2", ["beta"])


def test_merge_refuses_a_link_out_of_merged_and_writes_nothing(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    elsewhere, merged = sweeps.root / "elsewhere", sweeps.root / "merged"
    elsewhere.mkdir()
    merged.mkdir()
    (merged / "beta").symlink_to(elsewhere)
    before = md5s(sweeps.root)
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged)) == 2
    one_line_error(capsys.readouterr().err, "refusing to write outside --out", "elsewhere")
    assert md5s(sweeps.root) == before  # nothing in elsewhere, no lock or record in merged


@pytest.mark.parametrize("name", ["runs", "summary.json", "report.html", ".torchbenchmark.lock"])
def test_merge_refuses_a_view_or_records_folder_that_is_a_link(sweeps: Sweeps, capsys: pytest.CaptureFixture[str], name: str) -> None:
    s1, s2 = shards(sweeps)
    merged = sweeps.root / "merged"
    merged.mkdir()
    (merged / name).symlink_to(sweeps.user_file() if "." in name else sweeps.root)
    before = md5s(sweeps.root)
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged)) == 2
    one_line_error(capsys.readouterr().err, name)
    assert md5s(sweeps.root) == before


def test_merge_copies_regular_files_of_the_shard_only_and_says_what_it_left(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    secret = sweeps.root / "secret"
    secret.mkdir()
    (secret / "train-cpu.pt.trace.json.gz").write_bytes(b"not the shard's")
    (s2 / "beta" / "eval-cpu.log").unlink()
    (s2 / "beta" / "eval-cpu.log").symlink_to(sweeps.user_file())  # a link to a readable file out of the shard
    for item in (s1 / "alpha").iterdir():  # and a model folder that is a link out of the shard
        item.unlink()
    (s1 / "alpha").rmdir()
    (s1 / "alpha").symlink_to(secret)
    merged = sweeps.root / "merged"
    before = md5s(sweeps.root)
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged)) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"warning: {s2 / 'beta' / 'eval-cpu.log'}: not copied: not a regular file inside its shard" in err
    assert f"warning: {s1 / 'alpha' / 'train-cpu.pt.trace.json.gz'}: not copied" in err
    assert not (merged / "beta" / "eval-cpu.log").exists() and not (merged / "alpha").exists()
    assert (merged / "beta" / "train-cpu.log").read_text() == "beta train: log\n"  # the regular ones are copied
    assert md5s(sweeps.root, skip=merged) == before


def edit_rows(record: Path, **fields: Any) -> None:
    data = json.loads(record.read_text())
    for row in data["results"]:
        row.update(fields)
    record.write_text(json.dumps(data))


@pytest.mark.parametrize("bad", ["../../etc/passwd", "/etc/passwd", "beta/../../../etc/passwd", "..\\..\\x"])
def test_merge_drops_a_row_path_that_leaves_its_shard_and_no_page_links_it(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    s1, s2 = shards(sweeps)
    edit_rows(record_of(s2), log=bad, traces={"light": bad, "detailed": None})
    merged = sweeps.root / "merged"
    before = md5s(sweeps.root)
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged)) == 0
    err = capsys.readouterr().err
    assert f"dropped the path {bad!r}: it leaves the shard's folder" in err and "Traceback" not in err
    rows = {row["model"]: row for row in json.loads((merged / "summary.json").read_text())["results"]}
    assert rows["beta"]["log"] is None and rows["beta"]["traces"]["light"] is None
    assert rows["alpha"]["log"].startswith("alpha/") and (merged / rows["alpha"]["log"]).is_file()
    assert_links_stay_inside((merged / "report.html").read_text())
    assert md5s(sweeps.root, skip=merged) == before


def test_no_page_links_a_row_path_that_leaves_the_folder(tmp_path: Path) -> None:
    """The sweep's own page too: a record put in the folder by hand cannot make it link out."""
    from torchbenchmark.results.records import RunRecord, summary_of_records

    rank = RankFigures(rank=1, host="h", step_median_ms=2.0, comm_pct=1.0, exposed_comm_pct=0.5, trace="../../../etc/shadow")
    distributed = Distributed(2, "gloo", 1, (rank,), 0.0, 1.0, 0.5, 50.0, True)
    row = CaseResult(
        model="m", mode="train", device="cpu", status=Status.OK, step_time=StepTime(2.0, 0.1, 2.0, 10),
        log="../../etc/passwd", traces=Traces("/etc/passwd", "javascript:alert(1)"), distributed=distributed,
    )  # fmt: skip
    page = render_report(summary_of_records([RunRecord("r", {"host": "h"}, rows=(row,))], str(tmp_path)))
    assert "not linked: its path leaves the output folder" in page
    assert_links_stay_inside(page)


def assert_links_stay_inside(page: str) -> None:
    for href in re.findall(r'href="([^"]*)"', page):
        target = unquote(html.unescape(href))
        assert href.startswith("#") or (files.relative_inside(target) and ":" not in href), href


def test_merge_refuses_an_out_that_is_or_lies_in_an_input(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    before = md5s(sweeps.root)
    for out, sources in ((s1, (s1, s2)), (s1 / "sub", (s1, s2)), (s1, (record_of(s1), s2)), (s2 / "runs", (s1, s2))):
        assert sweeps.cli("merge", *map(str, sources), "--out", str(out)) == 2
        one_line_error(capsys.readouterr().err, f"--out {out}", "the inputs", "merge into a folder of its own")
        assert md5s(sweeps.root) == before


# --- 4: one name, one case ---------------------------------------------------------------------------------


def test_two_specs_of_one_name_are_a_usage_error_naming_both(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = "/x/a.py:Mini", "/x/b.py:Mini"
    sweeps.probes = {a: PluginProbe(a, "ok", name="mini"), b: PluginProbe(b, "ok", name="mini")}
    out = sweeps.root / "out"
    before = md5s(sweeps.root)
    assert sweeps.cli("--models", f"{a},{b}", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, f"{a} and {b} both name the model 'mini'", "one name, one case")
    assert md5s(sweeps.root) == before and not out.exists() and sweeps.calls == []
    # a plug-in that declares the name of a registered model, and two that cannot be imported, alike
    sweeps.probes = {a: PluginProbe(a, "ok", name="alpha")}
    assert sweeps.cli("--models", f"alpha,{a}", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, f"alpha and {a} both name the model 'alpha'")
    failed = {spec: PluginProbe(spec, "failed", error=f"importing {spec} crashed") for spec in (a, b)}
    sweeps.probes = failed
    with pytest.raises(SweepArgumentError, match="a plug-in that cannot be imported goes by its class name"):
        run_sweep([a, b], "train", SweepOptions(out_dir=out, progress=False), sweeps.machinery())
    assert md5s(sweeps.root) == before and not out.exists()


def test_a_failed_imports_row_carries_its_own_spec_and_log(sweeps: Sweeps) -> None:
    spec = "/x/first.py:Mini"
    sweeps.probes = {spec: PluginProbe(spec, "failed", error="RuntimeError: the first file's", output="first's stack")}
    out = sweeps.run(sweeps.root / "out", [spec, "alpha"], ("eval",))
    rows = {row["model"]: row for row in json.loads((out / "summary.json").read_text())["results"]}
    assert rows["Mini"]["status"] == "failed" and rows["Mini"]["error"].startswith(f"plug-in {spec}: RuntimeError: the first file's")
    log = (out / rows["Mini"]["log"]).read_text()
    assert f"importing {spec}" in log and "first's stack" in log


@pytest.mark.slow
def test_real_twin_plugins_and_twin_failed_imports_are_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first, second = (f"{ROOT / 'tests' / 'helpers' / 'hostile_imports' / name}.py:Mini" for name in ("first", "second"))
    for models, message in (
        (f"{hostile('TwinA')},{hostile('TwinB')}", "both name the model 'twin'"),
        (f"{first},{second}", "both name the model 'Mini' (a plug-in that cannot be imported goes by its class name)"),
    ):
        done = subprocess.run(
            [sys.executable, str(ROOT / "diagnostics.py"), "--models", models, "--out", str(out), *FAST],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        one_line_error(done.stderr, message)
        assert not out.exists()


# --- 5: strict records --------------------------------------------------------------------------------------

BAD_FIGURES = {
    "nan": ("NaN", "is NaN, not a number JSON allows"),
    "infinity": ("Infinity", "is Infinity, not a number JSON allows"),
    "minus-infinity": ("-Infinity", "is -Infinity, not a number JSON allows"),
    "overflowing": ("1e999", "must be a finite number"),
    "huge": ("1e308", "must be a finite number of magnitude at most"),
    "huge-int": ("1" + "0" * 400, "must be a finite number of magnitude at most"),
    "string": ('"12"', "must be a number, got str"),
    "bool": ("true", "must be a number, got bool"),
    "zero": ("0", "must be at least 1e-06"),
    "negative": ("-3", "must be at least 1e-06"),
    "denormal": ("1e-320", "must be at least 1e-06"),
    "too-long": ("2e9", "at most 1e+09"),
}


def poison(record: Path, value: str, field: str = '"median": ') -> None:
    """Put ``value`` (raw JSON text) for the first value after ``field``, as an editor or a corrupt copy would."""
    text, count = re.subn(
        re.escape(field) + r'(\s*)(-?[0-9][0-9.eE+-]*|true|false|null|"[^"]*")', lambda m: field + m[1] + value, record.read_text(), count=1
    )
    assert count == 1, field
    record.write_text(text)


@pytest.mark.parametrize("case", sorted(BAD_FIGURES))
def test_a_figure_out_of_range_is_one_line_naming_file_row_and_field(sweeps: Sweeps, capsys: pytest.CaptureFixture[str], case: str) -> None:
    value, message = BAD_FIGURES[case]
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    record = record_of(a)
    poison(record, value)
    before = md5s(sweeps.root)
    assert sweeps.cli("compare", str(a), str(b)) == 2
    one_line_error(capsys.readouterr().err, str(record), "results[0] (alpha train cpu)", "step_time_ms.median", message)
    assert sweeps.cli("compare", str(b), str(record)) == 2  # the record file itself, as NEW
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    assert sweeps.cli("merge", str(a), str(b), "--out", str(sweeps.root / "merged")) == 2
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    calls = len(sweeps.calls)
    assert sweeps.cli("--models", "alpha", "--out", str(a), *FAST) == 2  # a sweep into the folder: before any case
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    assert len(sweeps.calls) == calls and md5s(sweeps.root) == before  # nothing run, nothing written, no lock


@pytest.mark.parametrize(
    "field, value, message",
    [
        ('"overhead_fraction": ', "1.5", "dispatch.overhead_fraction must be at least 0 and at most 1"),
        ('"process_medians_ms": [', "NaN", "samples.process_medians_ms[0] is NaN"),
        ('"iqr": ', "-1", "step_time_ms.iqr must be at least 0"),
        ('"n": ', "0.5", "step_time_ms.n must be a whole number"),
    ],
    ids=["share-above-one", "nan-sample", "negative-iqr", "fractional-count"],
)
def test_other_figures_are_held_to_their_ranges(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], field: str, value: str, message: str
) -> None:
    def with_verdict(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        from torchbenchmark.results.schema import Dispatch, Samples

        row = ok_row(spec, name, out_dir)
        return dataclasses.replace(row, dispatch=Dispatch("mixed", 0.3, 10.0, 5.0, 2.0), samples=Samples((2.0,), ((2.0, 2.1),)))

    sweeps.run_case(with_verdict)
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    poison(record_of(a), value, field)
    assert sweeps.cli("compare", str(a), str(b)) == 2
    one_line_error(capsys.readouterr().err, "results[0] (alpha train cpu)", message)


def test_a_summary_json_with_nan_is_refused_naming_the_row(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    poison(a / "summary.json", "NaN")
    assert sweeps.cli("compare", str(a / "summary.json"), str(b)) == 2
    one_line_error(capsys.readouterr().err, "summary.json: results[0] (alpha eval cpu).step_time_ms.median is NaN")


def running_record(out: Path, **fields: Any) -> Path:
    """The folder's record, rewritten as a sweep leaves it while it runs (or when it was killed)."""
    path = record_of(out)
    data = json.loads(path.read_text())
    data.update(state="running", ended_at=None, **fields)
    path.write_text(json.dumps(data))
    return path


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_running_record_whose_sweep_is_gone_reads_as_died(sweeps: Sweeps, tmp_path: Path) -> None:
    out = sweeps.run(sweeps.root / "out")
    path = running_record(out, pid=dead_pid())
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]
    running_record(out, pid=os.getpid())  # this process: alive
    assert [r.state for r in outdir.read_records(out)] == [RunState.RUNNING]
    data = json.loads(path.read_text())
    data["environment"]["host"] = "another-host"
    path.write_text(json.dumps(data))
    assert [r.state for r in outdir.read_records(out)] == [RunState.RUNNING]  # written just now: may be running
    old = time.time() - (data["flags"]["timeout_s"] + outdir.STALE_MARGIN_S + 60)
    os.utime(path, (old, old))
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]
    merged = tmp_path / "merged"
    sweeps.cli("merge", str(out), "--out", str(merged))
    assert json.loads(record_of(merged).read_text())["state"] == "died"


def test_the_next_sweep_removes_what_a_killed_one_left(sweeps: Sweeps) -> None:
    out = sweeps.run(sweeps.root / "out", ["alpha"])
    gone, alive = dead_pid(), os.getpid()
    left = [
        out / "alpha" / f".train-cpu.log.{gone}.partial",  # a killed sweep's log, never renamed
        out / "alpha" / f".train-cpu.result.{gone}.json",  # a case's row, never read
        out / "alpha" / f".train-cpu.result.{gone}.json.{dead_pid()}.partial",
        out / "alpha" / f".train-cpu.pt.trace.json.gz.{gone}.json",  # a trace's raw export
        out / "runs" / f".x.json.{gone}.partial",
        out / f".summary.json.{gone}.partial",
    ]
    for path in left:
        path.write_bytes(b"")
    kept = [out / "alpha" / f".train-cpu.log.{alive}.partial", out / "alpha" / "notes.partial", out / "users.tmp"]
    for path in kept:
        path.write_bytes(b"the user's")
    sweeps.run(out, ["beta"])
    assert [p for p in left if p.exists()] == []
    assert all(p.read_bytes() == b"the user's" for p in kept)


@pytest.mark.slow
def test_a_sweep_killed_by_sigkill_leaves_what_the_next_sweep_clears(sweeps: Sweeps, tmp_path: Path) -> None:
    out = sweeps.root / "out"
    token = uuid.uuid4().hex
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    from tests.helpers import faulty_models

    env = {**os.environ, TOKEN_ENV: token, faulty_models.PID_DIR_ENV: str(pid_dir)}
    killed = subprocess.Popen(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", f"{ROOT / 'tests' / 'helpers' / 'faulty_models.py'}:Hangs",
         "--modes", "eval", "--timeout", "300", "--out", str(out), *FAST],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not (pid_dir / "hangs.pids").exists():
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        killed.kill()
        killed.wait()
    assert wait_until_gone(token) == []
    partial = [p for p in (out / "hangs").iterdir() if p.name.endswith(".partial")]
    assert partial and all(p.stat().st_size >= 0 for p in partial)  # the log it was writing, never renamed
    assert json.loads(record_of(out).read_text())["state"] == "running"  # as it was left...
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]  # ...and read as what it is
    sweeps.run(out, ["alpha"], ("eval",))
    assert temporary_files(out) == []


# --- 7: names and text from a model never drive the terminal ------------------------------------------------


@pytest.mark.parametrize("name", ["a\x1b[2Jb", "a\x07", "tab\there", "del\x7f", "csi\x9b", "nel\x85", "a\nb"])
def test_a_name_with_a_control_character_is_refused(name: str) -> None:
    with pytest.raises(outdir.UnsafeNameError, match="contains a control character"):
        outdir.check_model_name(name)


def test_text_from_a_model_is_printed_with_its_control_characters_escaped(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    def raises(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        if on_phase is not None:
            on_phase(f"phase {hostile_models.ESCAPES}", 1.0)
        row = ok_row(spec, name, out_dir)
        if name == "escapes":
            return dataclasses.replace(row, status=Status.FAILED, step_time=None, error=f"RuntimeError: boom {hostile_models.ESCAPES}")
        return row

    sweeps.run_case(raises)
    a = sweeps.root / "a"
    for progress in ([], ["--no-progress"]):
        assert sweeps.cli("--models", "alpha,escapes", "--out", str(a), "--device", "cpu", *progress) == 1
        shown = capsys.readouterr()
        assert "\x1b" not in shown.err + shown.out and "\x07" not in shown.err + shown.out
        assert "\\x1b[2J\\x1b]0;owned\\x07" in shown.err
    assert sweeps.cli("compare", str(a), str(a)) in (0, 3)
    shown = capsys.readouterr()
    assert "\x1b" not in shown.out + shown.err
    assert "\x1b" not in (a / "summary.txt").read_text()
    rows = {row["model"]: row for row in json.loads((a / "summary.json").read_text())["results"]}
    assert rows["escapes"]["error"] == f"RuntimeError: boom {hostile_models.ESCAPES}"  # kept as it was, in JSON


@pytest.mark.slow
def test_a_plugin_named_with_escapes_is_refused_in_one_escaped_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", hostile("ControlName"), "--out", str(out), *FAST],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    one_line_error(done.stderr, "contains a control character", "\\x1b[2J")
    assert "\x1b" not in done.stderr and not out.exists()


# --- 9: a full disk -----------------------------------------------------------------------------------------


def test_a_case_that_died_on_a_full_disk_names_the_file() -> None:
    with open(os.devnull, "wb") as sink:
        log = CappedLog(sink)
        log.write(
            "Traceback (most recent call last):\n  ...\nOSError: [Errno 28] No space left on device: '/out/m/.eval-cpu.result.12.json'\n"
        )
        reason = case_process.death_reason(1, log)
    assert reason == "cannot write its outputs: No space left on device (/out/m/.eval-cpu.result.12.json)"


def test_write_atomic_names_the_file_a_full_disk_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(OSError) as error:
        files.write_atomic(tmp_path / "row.json", "{}")
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(tmp_path / "row.json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_full_disk_when_the_row_is_written_is_a_row_naming_the_file(tmp_path: Path) -> None:
    """Simulated in the case's process: its fsync fails with ENOSPC, as on a disk with no block left."""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", hostile("FullDiskAtResult"), "--modes", "eval", "--out", str(out), *FAST],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (row,) = json.loads((out / "summary.json").read_text())["results"]
    assert row["status"] == "failed"
    assert row["error"].startswith("cannot write its outputs: No space left on device (") and ".eval-cpu.result." in row["error"]
    assert temporary_files(out) == []


# --- 10: a refusal writes nothing, the lock included -------------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [("{}", "not a summary"), ('{"mine": [1, 2]}', "not a summary"), ("my notes", "not valid JSON")],
    ids=["empty-object", "users-json", "not-json"],
)
def test_a_folder_holding_only_the_users_summary_json_is_refused_without_a_lock(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    out = sweeps.root / "out"
    out.mkdir()
    (out / "summary.json").write_text(content)
    before = md5s(sweeps.root)
    assert sweeps.cli("--models", "alpha", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, "summary.json", message)
    assert md5s(sweeps.root) == before and sorted(p.name for p in out.iterdir()) == ["summary.json"]


def test_merge_refusals_take_no_lock(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    s3 = sweeps.run(sweeps.root / "s3", ["alpha"], case=CaseSpec(threads=2))  # other flags: a conflict
    merged = sweeps.root / "merged"
    merged.mkdir()
    before = md5s(sweeps.root)
    assert sweeps.cli("merge", str(s1), str(s3), "--out", str(merged)) == 2
    one_line_error(capsys.readouterr().err, "different flags")
    assert sweeps.cli("merge", str(s1), str(sweeps.root / "nothing"), "--out", str(merged)) == 2
    one_line_error(capsys.readouterr().err, "no such file or folder")
    assert md5s(sweeps.root) == before and list(merged.iterdir()) == []


# --- 11: --repeat gives up on a case after three failures in a row ----------------------------------------


@pytest.mark.parametrize("status", [Status.TIMEOUT, Status.FAILED])
def test_repeats_of_a_case_stop_after_three_failures_in_a_row(sweeps: Sweeps, status: Status) -> None:
    def failing(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        row = ok_row(spec, name, out_dir)
        return row if name == "beta" else dataclasses.replace(row, status=status, step_time=None, error="no result after 5 s")

    sweeps.run_case(failing)
    out = sweeps.run(sweeps.root / "out", ["alpha", "beta"], ("train",), repeat=20)
    assert sum(1 for name, _, _ in sweeps.calls if name == "alpha") == GIVE_UP_AFTER
    assert sum(1 for name, _, _ in sweeps.calls if name == "beta") == 20
    rows = {row["model"]: row for row in json.loads((out / "summary.json").read_text())["results"]}
    assert rows["alpha"]["status"] == status
    assert rows["alpha"]["error"] == f"no result after 5 s; {GIVE_UP_AFTER} processes in a row failed, so its last 17 repeats were not run"


def test_failures_that_are_not_in_a_row_do_not_stop_the_repeats(sweeps: Sweeps) -> None:
    def flaky(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        row = ok_row(spec, name, out_dir)
        return row if spec.repeat % 3 == 2 else dataclasses.replace(row, status=Status.TIMEOUT, step_time=None, error="slow")

    sweeps.run_case(flaky)
    sweeps.run(sweeps.root / "out", ["alpha"], ("train",), repeat=8)
    assert len(sweeps.calls) == 8


# --- 12: Ctrl-C anywhere is one line and 130 ---------------------------------------------------------------


@contextlib.contextmanager
def started(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``diagnostics.py args`` in a process group of its own, as a terminal's foreground job is: with SIGINT
    at its default even where these tests were started in the background, which leaves it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler is reset to the default by exec
    try:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "diagnostics.py"), *args],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def ctrl_c(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What the terminal does on Ctrl-C: SIGINT to the whole foreground process group."""
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return out, err


def assert_interrupted(process: subprocess.Popen[str], err: str) -> None:
    assert process.returncode == 130, err
    assert err == "diagnostics.py: interrupted\n", err


def fed_slowly(fifo: Path, text: str) -> threading.Thread:
    """A writer that opens ``fifo``, writes the start of ``text`` and keeps it open: the reader blocks there."""
    opened = threading.Event()

    def write() -> None:
        with open(fifo, "w") as stream:
            stream.write(text[: len(text) // 2])
            stream.flush()
            opened.set()
            time.sleep(30)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert opened.wait(120), "the command never opened its input"
    return writer


@pytest.mark.slow
def test_ctrl_c_while_plugins_are_imported(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    out = tmp_path / "out"
    spec = f"{ROOT / 'tests' / 'helpers' / 'faulty_imports' / 'hangs.py'}:HangsAtImport"
    with started("--models", spec, "--timeout", "120", "--out", str(out), *FAST, env={**os.environ, TOKEN_ENV: token}) as sweep_process:
        deadline = time.monotonic() + 120
        while not any("torchbenchmark.run.probe" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace") for pid in _alive(token)):
            assert sweep_process.poll() is None and time.monotonic() < deadline, "the import never started"
            time.sleep(0.1)
        time.sleep(0.5)
        _, err = ctrl_c(sweep_process)
    assert_interrupted(sweep_process, err)
    assert wait_until_gone(token) == [] and not out.exists()


def _alive(token: str) -> list[int]:
    found = []
    for pid in processes_with(token):
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/cmdline").read_text()
            found.append(pid)
    return found


@pytest.mark.slow
def test_ctrl_c_during_compare_and_merge(sweeps: Sweeps) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    text = record_of(a).read_text()
    fifo = _fifo(sweeps.root / "record.json")  # an input that arrives slowly, as from a network share
    merged = sweeps.root / "merged"
    for args in (("compare", str(b), str(fifo)), ("merge", str(b), str(fifo), "--out", str(merged))):
        with started(*args) as command:
            fed_slowly(fifo, text)
            time.sleep(0.5)
            out, err = ctrl_c(command)
        assert_interrupted(command, err)
        assert out == "" and not merged.exists()


def test_ctrl_c_while_the_package_loads(tmp_path: Path) -> None:
    """A module the command line loads (tabulate, shadowed here) that blocks on a fifo: Ctrl-C lands in the imports."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    fifo = _fifo(tmp_path / "slow-import")
    (shadow / "tabulate.py").write_text(f"open({str(fifo)!r}).read()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(ROOT)])}
    with started("compare", "a", "b", env=env) as command:
        fed_slowly(fifo, "x" * 64)
        time.sleep(0.3)
        _, err = ctrl_c(command)
    assert_interrupted(command, err)


@pytest.mark.slow
def test_what_an_ended_case_process_was_writing_is_removed_with_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    folder = out / "raises_in_build"
    folder.mkdir(parents=True)
    gone = dead_pid()
    left = [folder / f".eval-cpu.pt.trace.json.gz.{gone}.partial", folder / f".eval-cpu.pt.trace.json.gz.{gone}.json"]
    for path in left:
        path.write_bytes(b"half a trace")
    spec = CaseSpec(model=f"{ROOT / 'tests' / 'helpers' / 'faulty_models.py'}:RaisesInBuild", mode="eval", device="cpu", timeout_s=120)
    row = case_process.run_case(spec, "raises_in_build", out)
    assert row.status == "failed" and "injected fault in build" in (row.error or "")
    assert temporary_files(out) == [] and (folder / "eval-cpu.log").is_file()
