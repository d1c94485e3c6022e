"""--shard I/N and merge: shards partition a sweep's cases, and merging them gives back the unsharded set."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stand_ins import machinery
from torchbenchmark import cli
from torchbenchmark.api import load_summary
from torchbenchmark.cli import merge as merge_cli
from torchbenchmark.report.plots import case_id
from torchbenchmark.results.schema import CaseResult, StepTime, Traces, sort_rows
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import merge, shard, sweep
from torchbenchmark.run.shard import Shard
from torchbenchmark.run.sweep import SweepOptions, run_sweep

MODELS = ["a", "b", "c", "d", "e", "f", "g"]
COSTS = {("a", "train"): 30.0, ("b", "train"): 10.0, ("c", "train"): 10.0, ("d", "train"): 5.0, ("e", "train"): 5.0, ("a", "eval"): 8.0}


def fake_case(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
    """A case's process stand-in: a row whose step time is a function of the case alone."""
    ms = 1.0 + MODELS.index(name) + (0.5 if spec.mode == "eval" else 0.0)
    return CaseResult(model=name, mode=spec.mode, device="cpu", status="ok", batch_size=4, step_time=StepTime(ms, 0.1, ms, 10))


@pytest.fixture
def fake_sweep() -> Any:
    def run(out: Path, shard: Shard | None = None, case: Any = fake_case, **spec: Any) -> sweep.SweepOutcome:
        options = SweepOptions(case=CaseSpec(**spec), out_dir=out, shard=shard, progress=False)
        return run_sweep(MODELS, ["train", "eval"], options, machinery(case, names=MODELS, costs=COSTS))

    return run


def comparable(rows: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.to_dict().items() if k != "run_id"} for row in sort_rows(rows)]


def test_shards_partition_the_cases_the_same_way_every_time() -> None:
    cases = [(model, mode) for model in MODELS for mode in ("train", "eval")]
    for count in (1, 2, 3, 5, 14, 20):
        shards = shard.partition(cases, count, COSTS)
        assert len(shards) == count
        assert sorted(case for part in shards for case in part) == sorted(cases), "a case lost or run twice"
        for part in shards:
            assert part == [case for case in cases if case in part], "a shard reordered its cases"
        assert shard.partition(list(cases), count, dict(COSTS)) == shards
    # Balanced by cost, most expensive first to the lightest shard: loads 6+3 and 5+4.
    costs = {("a", "train"): 6.0, ("b", "train"): 5.0, ("c", "train"): 4.0, ("d", "train"): 3.0}
    assert shard.partition(list(costs), 2, costs) == [[("a", "train"), ("d", "train")], [("b", "train"), ("c", "train")]]
    # A case without a cost costs the median of the known ones (4.5 here): it goes where a 4.5 s case would.
    assert shard.partition([*costs, ("new", "train")], 2, costs) == [
        [("a", "train"), ("c", "train")],
        [("b", "train"), ("d", "train"), ("new", "train")],
    ]
    # No cost table: balanced by count.
    by_count = shard.partition(cases, 3, {})
    assert sorted(len(part) for part in by_count) == [4, 5, 5]


def test_shard_parses_i_of_n_from_one() -> None:
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(ValueError):
            Shard.parse(bad)
    assert cli.main(["--models", "resnet18", "--shard", "3/2"]) == cli.EXIT_USAGE


def test_shards_merge_back_into_the_unsharded_set(fake_sweep: Any, tmp_path: Path) -> None:
    whole = fake_sweep(tmp_path / "whole")
    shards = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for index, out in enumerate(shards, start=1):
        fake_sweep(out, shard=Shard(index, 3))
        record = json.loads(next((out / "runs").glob("*.json")).read_text())
        assert record["shard"] == {"index": index, "count": 3, "of_cases": 14} and record["flags"]["world_size"] == 1
    per_shard = [{row.key for row in load_summary(out).rows} for out in shards]
    assert all(per_shard) and sum(len(keys) for keys in per_shard) == 14 and len(set().union(*per_shard)) == 14

    outcome = merge.merge(shards, tmp_path / "merged")
    merged = load_summary(tmp_path / "merged")
    assert comparable(merged.rows) == comparable(load_summary(tmp_path / "whole").rows) and len(whole.results) == 14
    assert outcome.missing_shards == () and len(list((tmp_path / "merged" / "runs").glob("*.json"))) == 3
    text = (tmp_path / "merged" / "summary.txt").read_text()
    assert "merged from 3 source(s) on 1 machine(s)" in text and "shard 2/3" in text
    page = (tmp_path / "merged" / "report.html").read_text()
    assert all(f'id="{case_id(row)}"' in page for row in merged.rows)
    # Merging the same shards again changes nothing: the same runs, not a conflict.
    assert merge_cli.main([str(out) for out in shards] + ["--out", str(tmp_path / "merged")]) == 0
    assert comparable(load_summary(tmp_path / "merged").rows) == comparable(merged.rows)


def test_a_missing_shard_is_named(fake_sweep: Any, tmp_path: Path) -> None:
    fake_sweep(tmp_path / "s1", shard=Shard(1, 3))
    fake_sweep(tmp_path / "s3", shard=Shard(3, 3))
    assert merge.merge([tmp_path / "s1", tmp_path / "s3"], tmp_path / "m").missing_shards == ("2/3",)
    assert "missing shards: 2/3" in (tmp_path / "m" / "summary.txt").read_text()


def test_merge_refuses_shards_with_different_flags(fake_sweep: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_sweep(tmp_path / "s1", shard=Shard(1, 2))
    fake_sweep(tmp_path / "s2", shard=Shard(2, 2), batch_size=8)
    status = cli.main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")])
    assert status == 2
    error = capsys.readouterr().err
    assert "different flags" in error and "batch_size: None vs 8" in error and "--keep-latest" in error
    assert not (tmp_path / "m" / "summary.json").exists(), "a refused merge wrote something"


def test_merge_refuses_overlapping_shards_unless_told_to_keep_the_latest(
    fake_sweep: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_sweep(tmp_path / "s1", shard=Shard(1, 2))
    fake_sweep(tmp_path / "again", shard=Shard(1, 2))  # the same shard run twice: every case in both
    args = ["merge", str(tmp_path / "s1"), str(tmp_path / "again"), "--out", str(tmp_path / "m")]
    assert cli.main(args) == 2
    assert "in more than one shard" in capsys.readouterr().err
    assert cli.main([*args, "--keep-latest"]) == 0
    later = load_summary(tmp_path / "again")
    merged = load_summary(tmp_path / "m")
    assert [row.run_id for row in merged.rows] == [row.run_id for row in later.rows], "the latest row was not kept"
    assert "the latest row kept" in (tmp_path / "m" / "summary.txt").read_text()


def test_shards_from_other_machines_are_marked(fake_sweep: Any, tmp_path: Path) -> None:
    fake_sweep(tmp_path / "s1", shard=Shard(1, 2))
    fake_sweep(tmp_path / "s2", shard=Shard(2, 2))
    path = next((tmp_path / "s2" / "runs").glob("*.json"))
    record = json.loads(path.read_text())
    record["environment"]["host"] = "other-box"
    path.write_text(json.dumps(record))
    outcome = merge.merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    assert len(outcome.machines) == 2 and "other-box" in outcome.machines.values()
    text = (tmp_path / "m" / "summary.txt").read_text()
    assert "on 2 machine(s)" in text
    assert any(line.startswith("model") and "machine" in line for line in text.splitlines()), "no machine column"
    hosts = {load_summary(tmp_path / "m").environment_of(row)["host"] for row in load_summary(tmp_path / "m").rows}
    assert len(hosts) == 2


def test_merge_copies_the_files_rows_name(fake_sweep: Any, tmp_path: Path) -> None:
    def with_trace(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        (out_dir / name).mkdir(parents=True, exist_ok=True)
        (out_dir / name / f"{spec.mode}-cpu.pt.trace.json.gz").write_bytes(b"trace")
        row = fake_case(spec, name, out_dir)
        return dataclasses.replace(row, traces=Traces(f"{name}/{spec.mode}-cpu.pt.trace.json.gz"))

    fake_sweep(tmp_path / "s1", shard=Shard(1, 2), case=with_trace)
    fake_sweep(tmp_path / "s2", shard=Shard(2, 2), case=with_trace)
    merge.merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    for row in load_summary(tmp_path / "m").rows:
        assert (tmp_path / "m" / row.traces.light).read_bytes() == b"trace"
