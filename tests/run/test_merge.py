"""Merging shards (run/merge.py) writes under --out only and copies the regular files of a shard only: a link
out of the merged folder, a view or records folder that is a link, an --out that is or lies in an input, a
row path that leaves its shard, and shards that disagree are refused or dropped, with nothing written.

Each test checks the md5 of every file around the shards, the user's included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s, record_of
from tests.helpers.local_sweeps import Sweeps
from tests.helpers.pages import assert_links_stay_inside
from torchbenchmark.results.spec import CaseSpec


def shards(sweeps: Sweeps) -> tuple[Path, Path]:
    return sweeps.run(sweeps.root / "s1", ["alpha"]), sweeps.run(sweeps.root / "s2", ["beta"])


def edit_rows(record: Path, **fields: Any) -> None:
    data = json.loads(record.read_text())
    for row in data["results"]:
        row.update(fields)
    record.write_text(json.dumps(data))


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


def test_merge_refuses_an_out_that_is_or_lies_in_an_input(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    before = md5s(sweeps.root)
    for out, sources in ((s1, (s1, s2)), (s1 / "sub", (s1, s2)), (s1, (record_of(s1), s2)), (s2 / "runs", (s1, s2))):
        assert sweeps.cli("merge", *map(str, sources), "--out", str(out)) == 2
        one_line_error(capsys.readouterr().err, f"--out {out}", "the inputs", "merge into a folder of its own")
        assert md5s(sweeps.root) == before


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


def test_merge_refuses_shards_of_another_torch_or_torchbenchmark(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = shards(sweeps)
    (record,) = (s2 / "runs").glob("*.json")
    data = json.loads(record.read_text())
    data["environment"]["torch"] = "2.0.0"
    record.write_text(json.dumps(data))
    merged = sweeps.root / "merged"
    before = md5s(sweeps.root)
    for extra in ([], ["--keep-latest"]):
        assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged), *extra) == 2
        one_line_error(capsys.readouterr().err, "torch 2.0.0", "merge shards of one version")
    assert md5s(sweeps.root) == before and not merged.exists()


def test_merge_copies_every_file_of_a_case_each_under_a_temporary_name_first(sweeps: Sweeps, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchbenchmark.run import merge

    s1, s2 = shards(sweeps)
    case = s2 / "beta"
    (case / "train-cpu.overhead_by_module.txt").write_text("by module\n")
    (case / "train-cpu.repeat1.log").write_text("repeat 1\n")
    (case / "train-cpu.repeat2.log").write_text("repeat 2\n")
    merged = sweeps.root / "merged"
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(merged)) == 0
    for name in ("train-cpu.overhead_by_module.txt", "train-cpu.repeat1.log", "train-cpu.repeat2.log"):
        assert (merged / "beta" / name).read_text() == (case / name).read_text(), name
    sweeps.capsys.readouterr()

    copied = []
    real_replace = merge.os.replace

    def interrupted(origin: Path, target: Path) -> None:  # the disk fills on the third copy's rename
        copied.append(Path(target))
        if len(copied) == 3:
            raise OSError(28, "No space left on device")
        real_replace(origin, target)

    again = sweeps.root / "again"
    monkeypatch.setattr(merge.os, "replace", interrupted)
    assert sweeps.cli("merge", str(s1), str(s2), "--out", str(again)) == 1
    one_line_error(sweeps.capsys.readouterr().err, "cannot write", "No space left on device")
    assert not copied[2].exists(), "a copy the rename never finished is under its final name"
    assert not [path for path in again.rglob("*") if path.name.endswith(".partial")]
