"""``diagnostics.py compare`` (cli/compare.py) never writes onto its inputs, a device, a folder, or where it
cannot: each such output is a one-line refusal with every file around it as it was; a full disk is one line
and leaves nothing; a plain new file is still written."""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
from pathlib import Path

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s, record_of, temporary_files
from tests.helpers.local_sweeps import Sweeps
from torchbenchmark.results import files


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
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
