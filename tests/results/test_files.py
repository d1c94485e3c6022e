"""Writing and reading the tool's files (results/files.py): an atomic write that a full disk stops names its
file and leaves nothing; a case that finds the disk full, or its folder read-only, is a failed row naming why
while the sweep goes on; a figure that is NaN in a JSON file is refused naming its row."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.commands import diagnostics, one_line_error
from tests.helpers.folders import poison, temporary_files
from tests.helpers.local_sweeps import Sweeps
from tests.helpers.places import Place
from tests.helpers.specs import faulty, hostile
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark.results import files
from torchbenchmark.run import case as case_process
from torchbenchmark.run.guard import CappedLog


def full(fd: int) -> None:
    """``os.fsync`` on a disk with no block left."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# --- a full disk ----------------------------------------------------------------------------------------


def test_write_atomic_names_the_file_a_full_disk_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(OSError) as error:
        files.write_atomic(tmp_path / "row.json", "{}")
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(tmp_path / "row.json")
    assert list(tmp_path.iterdir()) == []


def test_a_case_that_died_on_a_full_disk_names_the_file() -> None:
    with open(os.devnull, "wb") as sink:
        log = CappedLog(sink)
        log.write(
            "Traceback (most recent call last):\n  ...\nOSError: [Errno 28] No space left on device: '/out/m/.eval-cpu.result.12.json'\n"
        )
        reason = case_process.death_reason(1, log)
    assert reason == "cannot write its outputs: No space left on device (/out/m/.eval-cpu.result.12.json)"


@pytest.mark.slow
def test_a_full_disk_when_the_row_is_written_is_a_row_naming_the_file(tmp_path: Path) -> None:
    """Simulated in the case's process: its fsync fails with ENOSPC, as on a disk with no block left."""
    out = tmp_path / "out"
    done = diagnostics("--models", hostile("FullDiskAtResult"), "--modes", "eval", "--out", str(out), *FAST, timeout_s=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (row,) = json.loads((out / "summary.json").read_text())["results"]
    assert row["status"] == "failed"
    assert row["error"].startswith("cannot write its outputs: No space left on device (") and ".eval-cpu.result." in row["error"]
    assert temporary_files(out) == []


@contextlib.contextmanager
def mounted_tmpfs(path: Path, options: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.slow
def test_full_disk_and_read_only_model_folder_are_failed_rows_and_the_sweep_goes_on(place: Place) -> None:
    """--out on an 8 MiB tmpfs holding 6.5 MiB of the user's, and a read-only folder where one model's goes."""
    with mounted_tmpfs(place.out, "size=8m"):
        ballast = place.out / "users-ballast.bin"
        ballast.write_bytes(b"\1" * (13 << 19))
        with mounted_tmpfs(place.out / "healthy", "ro,size=1m"):
            models = ",".join([faulty("Floods"), faulty("Healthy"), TINY])
            done = diagnostics("--models", models, "--modes", "eval", "--out", str(place.out), *FAST, env=place.env(), timeout_s=300)
            assert done.returncode == 1, done.stderr
            assert "Traceback" not in done.stderr
            rows = place.rows()
            assert rows[("floods", "eval")]["status"] == "failed"
            assert "No space left on device" in rows[("floods", "eval")]["error"]
            assert rows[("healthy", "eval")]["status"] == "failed"
            assert "Read-only file system" in rows[("healthy", "eval")]["error"]
            assert rows[("tiny_mlp", "eval")]["status"] == "ok"  # after the full disk, the sweep went on
            assert place.temporary_files() == []
            assert ballast.read_bytes() == b"\1" * (13 << 19)
        assert not place.out.joinpath("floods", "eval-cpu.log").exists()  # removed, to give its space back
    place.check_contained()


# --- a figure that is not a number JSON allows ------------------------------------------------------------


def test_a_summary_json_with_nan_is_refused_naming_the_row(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    poison(a / "summary.json", "NaN")
    assert sweeps.cli("compare", str(a / "summary.json"), str(b)) == 2
    one_line_error(capsys.readouterr().err, "summary.json: results[0] (alpha eval cpu).step_time_ms.median is NaN")


# --- files of another run, read as data from elsewhere -----------------------------------------------------


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda path: os.mkfifo(path), "not a regular file"),
        (lambda path: path.symlink_to("/dev/zero"), "not a regular file"),
        (lambda path: path.mkdir(), "is a folder"),
        (lambda path: path.write_text("[" * 100_000 + "]" * 100_000), "nested deeper than any file of this tool's"),
        (lambda path: path.write_bytes(b"{" + b" " * (2 * 2**20) + b"}"), "holds more than 1 MB"),
        (lambda path: path.write_bytes(b"\xff\xfe not utf-8"), "cannot be read"),
    ],
    ids=["fifo", "dev-zero", "folder", "deep", "too-large", "not-utf8"],
)
def test_a_hostile_run_record_is_a_storage_error_naming_it_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], object], why: str
) -> None:
    from torchbenchmark import api

    monkeypatch.setattr(files, "MOST_READ_BYTES", 2**20)
    record = tmp_path / "runs" / "20261201T000000.000000Z-abcd.json"
    record.parent.mkdir()
    make(record)
    with pytest.raises(files.StorageError, match=why) as raised:
        api.load_summary(tmp_path)
    assert str(record) in str(raised.value) and "\n" not in str(raised.value)
