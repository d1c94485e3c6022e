"""``diagnostics.py merge OUT1 OUT2 ... --out MERGED``: the run records of shards joined into one output folder.

Each shard of a sweep (``--shard I/N`` on a machine of its own) leaves an output folder. Merging copies
their run records, and the traces, logs and top-ops tables their rows name, into one folder, and
rebuilds the summary from all the records. Shards that disagree are refused: records run with
different flags, or the same case in two shards, since one of two figures would silently win.
``keep_latest`` takes the latest row of each case instead. Records from different machines are kept
apart in the summary by a ``machine`` column.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchbenchmark import storage
from torchbenchmark.results import CaseResult
from torchbenchmark.storage import RunRecord, Summary
from torchbenchmark.summary import Column, render_summary_json, render_table
from torchbenchmark.summary import render_text as render_summary_text
from torchbenchmark.sweep import OutputBusy, locked, write_report

EXIT_OK, EXIT_USAGE = 0, 2


class MergeConflict(Exception):
    """Shards that cannot be joined as they are; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Source:
    path: Path
    records: tuple[RunRecord, ...]


@dataclasses.dataclass(frozen=True)
class MergeOutcome:
    out_dir: Path
    summary: Summary
    sources: tuple[Source, ...]
    superseded: tuple[tuple[str, ...], ...]  # case keys found in several shards, with keep_latest: the latest kept
    missing_shards: tuple[str, ...]  # "I/N" of shards the records name but no source held

    @property
    def machines(self) -> dict[str, str]:
        """Fingerprint -> host of every machine the merged records ran on."""
        return {record.fingerprint: str(record.environment.get("host", "?")) for source in self.sources for record in source.records}


def read_source(path: Path) -> Source:
    """An output folder's records, or one run record file."""
    path = Path(path)
    if path.is_dir():
        records = storage.read_records(path)
        if not records:
            raise storage.StorageError(f"{path}: no run records ({storage.RUNS_DIR}/*.json): not a sweep's output folder")
        return Source(path, tuple(records))
    if not path.exists():
        raise storage.StorageError(f"{path}: no such file or folder")
    return Source(path.parent.parent if path.parent.name == storage.RUNS_DIR else path.parent, (storage.read_record(path),))


def check(sources: Sequence[Source]) -> None:
    """Raise MergeConflict if the sources disagree: different flags, or a case in more than one of them."""
    flagged = [(source, record) for source in sources for record in source.records if "flags" in record.extra]
    for source, record in flagged[1:]:
        first_source, first = flagged[0]
        if record.extra["flags"] != first.extra["flags"]:
            differ = sorted(key for key in {**first.extra["flags"], **record.extra["flags"]}
                            if first.extra["flags"].get(key) != record.extra["flags"].get(key))  # fmt: skip
            detail = "; ".join(f"{key}: {first.extra['flags'].get(key)!r} vs {record.extra['flags'].get(key)!r}" for key in differ)
            raise MergeConflict(f"{first_source.path} and {source.path} ran with different flags ({detail})")
    overlaps = _overlaps(sources)
    if overlaps:
        key, paths = next(iter(overlaps.items()))
        raise MergeConflict(
            f"{len(overlaps)} case(s) are in more than one shard, e.g. {' '.join(key)} in {' and '.join(map(str, paths))}"
        )


def _overlaps(sources: Sequence[Source]) -> dict[tuple[str, ...], list[Path]]:
    holders: dict[tuple[str, ...], list[Path]] = {}
    for source in sources:
        for row in storage.latest_rows(source.records):
            holders.setdefault(row.key, []).append(source.path)
    return {key: paths for key, paths in holders.items() if len(paths) > 1}


def _missing_shards(records: Sequence[RunRecord]) -> tuple[str, ...]:
    shards = [record.extra["shard"] for record in records if isinstance(record.extra.get("shard"), dict)]
    if not shards:
        return ()
    count = max(shard["count"] for shard in shards)
    present = {shard["index"] for shard in shards if shard["count"] == count}
    return tuple(f"{index}/{count}" for index in range(1, count + 1) if index not in present)


def merge(paths: Sequence[str | Path], out_dir: Path, keep_latest: bool = False) -> MergeOutcome:
    """Join the records of ``paths`` into ``out_dir`` (its own records included), and rebuild its summary."""
    out_dir = Path(out_dir)
    sources = [read_source(Path(path)) for path in paths]
    if out_dir.is_dir() and storage.read_records(out_dir):  # merging into a folder adds to what it holds
        sources.append(read_source(out_dir))
    sources = _distinct_records(sources)
    superseded: tuple[tuple[str, ...], ...] = ()
    if keep_latest:
        superseded = tuple(sorted(_overlaps(sources)))
    else:
        check(sources)
    records = sorted({record.run_id: record for source in sources for record in source.records}.values(), key=lambda r: r.run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    with locked(out_dir):
        for source in sources:
            for record in source.records:
                if source.path.resolve() != out_dir.resolve():
                    storage.write_record(out_dir, record)
                    _copy_case_files(source.path, out_dir, record.rows)
        summary = storage.summary_of_records(records, str(out_dir))
        outcome = MergeOutcome(out_dir, summary, tuple(sources), superseded, _missing_shards(records))
        storage.write_atomic(out_dir / storage.SUMMARY_JSON, render_summary_json(summary))
        storage.write_atomic(out_dir / storage.SUMMARY_TXT, render_text(outcome))
        write_report(out_dir, summary)  # the merged run's page, as after a sweep
    return outcome


def _distinct_records(sources: list[Source]) -> list[Source]:
    """Each record once: the same run found twice (a merged folder merged again) is one run, not a conflict."""
    seen: set[str] = set()
    distinct = []
    for source in sources:
        fresh = tuple(record for record in source.records if record.run_id not in seen)
        seen.update(record.run_id for record in fresh)
        if fresh:
            distinct.append(Source(source.path, fresh))
    return distinct


def _copy_case_files(source: Path, out_dir: Path, rows: Sequence[CaseResult]) -> None:
    """The files a row names (traces, log), and its top-ops table, at the same relative paths."""
    for row in rows:
        named = [path for path in (*row.traces.values(), row.log) if path]
        if row.distributed is not None:
            named += [rank.trace for rank in row.distributed.ranks]
        light = row.traces.get("light")
        if light and light.endswith(".pt.trace.json.gz"):  # the top-ops table is named as the light trace
            named.append(light.removesuffix(".pt.trace.json.gz") + ".top_ops.txt")
        for relative in named:
            origin, target = source / relative, out_dir / relative
            if origin.is_file() and origin.resolve() != target.resolve():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)


def render_text(outcome: MergeOutcome) -> str:
    """The merged summary.txt: where each shard came from, then the summary with a machine column when several."""
    summary = outcome.summary
    lines = [f"merged from {len(outcome.sources)} source(s) on {len(outcome.machines)} machine(s)"]
    for source in outcome.sources:
        for record in source.records:
            shard = record.extra.get("shard")
            where = f"shard {shard['index']}/{shard['count']}" if isinstance(shard, dict) else "unsharded"
            lines.append(f"  {source.path}: run {record.run_id}, {where}, {len(record.rows)} case(s), "
                         f"host {record.environment.get('host', '?')} ({record.fingerprint})")  # fmt: skip
    if outcome.missing_shards:
        lines.append(f"missing shards: {', '.join(outcome.missing_shards)}")
    if outcome.superseded:
        lines.append(f"{len(outcome.superseded)} case(s) in several shards: the latest row kept (--keep-latest)")
    text = render_summary_text(summary)
    if len(outcome.machines) > 1:
        column = Column("machine", lambda row: _machine(summary, row), numeric=False)
        header, _, rest = text.partition("\n\n")
        legend = rest.partition("\n\n")[2]
        text = f"{header}\n\n{render_table(summary.rows, column)}\n\n{legend}"
    return "\n".join(lines) + "\n\n" + text


def _machine(summary: Summary, row: CaseResult) -> str:
    environment: dict[str, Any] = summary.environment_of(row)
    return f"{environment.get('host', '?')} ({environment.get('fingerprint', '?')})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diagnostics.py merge",
        description="Join the outputs of a sweep's shards (--shard I/N) into one output folder and summary.",
        epilog="exit status: 0 merged; 2 usage error or shards that disagree (nothing written).",
    )
    parser.add_argument("sources", nargs="+", metavar="OUT", help="output folders (or run records) of the shards")
    parser.add_argument("--out", required=True, type=Path, metavar="MERGED", help="the folder to merge into")
    parser.add_argument("--keep-latest", action="store_true",
                        help="where shards disagree, keep the latest row of each case instead of refusing")  # fmt: skip
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        outcome = merge(args.sources, args.out, keep_latest=args.keep_latest)
    except (MergeConflict, storage.StorageError, OutputBusy) as error:
        hint = "; --keep-latest keeps the latest row of each case" if isinstance(error, MergeConflict) else ""
        print(f"diagnostics.py merge: error: {error}{hint}", file=sys.stderr)
        return EXIT_USAGE
    note = f"; missing shards {', '.join(outcome.missing_shards)}" if outcome.missing_shards else ""
    print(f"merged {len(outcome.summary.rows)} case(s) from {len(outcome.sources)} source(s) on "
          f"{len(outcome.machines)} machine(s) into {args.out}{note}", file=sys.stderr)  # fmt: skip
    return EXIT_OK
