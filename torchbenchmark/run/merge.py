"""Merging the outputs of a sweep's shards into one output folder: their records, the files their rows name,
and the views rebuilt from all the records.

Shards that disagree are refused: records run with different flags or on different versions of torch or
this package, or the same case in two shards, since one of two figures would silently win (``keep_latest``
takes the latest row of each case instead). Every file of a case is copied, the logs of its ``--repeat``
processes included, each under a temporary name first. Merging
follows the sweep's rules for what it writes: every path is checked to resolve under the output folder
before anything is written, only regular files inside a shard are copied (a link is never followed out of
one), and a row's path that leaves its shard is dropped, with a warning, so no page links to it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.report.format import Column
from torchbenchmark.report.summary import render_text
from torchbenchmark.results.files import StorageError, partial_path, relative_inside
from torchbenchmark.results.records import RunRecord, Summary, latest_rows, summary_of_records
from torchbenchmark.results.schema import CaseResult, Traces
from torchbenchmark.run import outdir


class MergeConflict(Exception):
    """Shards that cannot be joined as they are, or an output that would harm them; the message says why."""


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
    left_out: tuple[str, ...] = ()  # files a row names that were not copied, and why

    @property
    def machines(self) -> dict[str, str]:
        """Fingerprint -> host of every machine the merged records ran on."""
        return {record.fingerprint: str(record.environment.get("host", "?")) for source in self.sources for record in source.records}


def read_source(path: Path) -> Source:
    """An output folder's records, or one run record file."""
    path = Path(path)
    if path.is_dir():
        records = outdir.read_records(path)
        if not records:
            raise StorageError(f"{path}: no run records ({outdir.RUNS_DIR}/*.json): not a sweep's output folder")
        return Source(path, tuple(records))
    if not path.exists():
        raise StorageError(f"{path}: no such file or folder")
    return Source(_folder_of(path), (outdir.read_record_file(path),))


def _folder_of(path: Path) -> Path:
    """The output folder an input stands for: itself, or the folder a run record file lies in."""
    if path.is_dir():
        return path
    return path.parent.parent if path.parent.name == outdir.RUNS_DIR else path.parent


class VersionsDiffer(MergeConflict):
    """Shards run on different versions of torch or this package: no flag joins them."""


VERSIONS = ("torch", "torchbenchmark")  # a record's environment's: rows of two versions are not one sweep


def check_versions(sources: Sequence[Source]) -> None:
    """Raise MergeConflict if the sources ran on different versions of torch or of this package, which no
    row would show: the merged header names one version for every row."""
    seen: dict[tuple[str, ...], Path] = {}
    for source in sources:
        for record in source.records:
            if all(record.environment.get(name) for name in VERSIONS):
                seen.setdefault(tuple(str(record.environment[name]) for name in VERSIONS), source.path)
    if len(seen) > 1:
        (first, where), (other, there) = list(seen.items())[:2]
        shown = [" ".join(f"{name} {version}" for name, version in zip(VERSIONS, versions)) for versions in (first, other)]
        raise VersionsDiffer(f"{where} ran on {shown[0]} and {there} on {shown[1]}: merge shards of one version")


def check(sources: Sequence[Source]) -> None:
    """Raise MergeConflict if the sources disagree: different flags, or a case in more than one of them."""
    flagged = [(source, record) for source in sources for record in source.records if "flags" in record.extra]
    for source, record in flagged[1:]:
        first_source, first = flagged[0]
        if record.extra["flags"] != first.extra["flags"]:
            keys = {**first.extra["flags"], **record.extra["flags"]}
            differ = sorted(key for key in keys if first.extra["flags"].get(key) != record.extra["flags"].get(key))
            detail = "; ".join(f"{key}: {first.extra['flags'].get(key)!r} vs {record.extra['flags'].get(key)!r}" for key in differ)
            raise MergeConflict(f"{first_source.path} and {source.path} ran with different flags ({detail})")
    overlaps = _overlaps(sources)
    if overlaps:
        key, paths = next(iter(overlaps.items()))
        raise MergeConflict(f"{len(overlaps)} case(s) are in more than one shard, e.g. {' '.join(key)} in {' and '.join(map(str, paths))}")


def _overlaps(sources: Sequence[Source]) -> dict[tuple[str, ...], list[Path]]:
    holders: dict[tuple[str, ...], list[Path]] = {}
    for source in sources:
        for row in latest_rows(source.records):
            holders.setdefault(row.key, []).append(source.path)
    return {key: paths for key, paths in holders.items() if len(paths) > 1}


def _missing_shards(records: Sequence[RunRecord]) -> tuple[str, ...]:
    shards = [record.extra["shard"] for record in records if isinstance(record.extra.get("shard"), dict)]
    if not shards:
        return ()
    count = max(shard["count"] for shard in shards)
    present = {shard["index"] for shard in shards if shard["count"] == count}
    return tuple(f"{index}/{count}" for index in range(1, count + 1) if index not in present)


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


def _named(row: CaseResult) -> list[str]:
    """The files a row names (traces, log, rank traces), and its top-ops table, relative to its folder."""
    named = [path for path in (row.traces.light, row.traces.detailed, row.log) if path]
    if row.distributed is not None:
        named += [rank.trace for rank in row.distributed.ranks if rank.trace]
    if row.traces.light and row.traces.light.endswith(outdir.TRACE_SUFFIX):  # named as the light trace
        case_stem = row.traces.light.removesuffix(outdir.TRACE_SUFFIX)
        named += [outdir.top_ops_name(case_stem), outdir.attribution_name(case_stem)]
    return named


def _repeat_logs(folder: Path, row: CaseResult) -> list[str]:
    """The logs of a row's processes past the first (``--repeat``), which the row does not name, relative to ``folder``."""
    if not row.log or not row.log.endswith(".log") or not relative_inside(row.log):
        return []
    log = Path(row.log)
    return [str(log.with_name(path.name)) for path in sorted((folder / log.parent).glob(f"{log.stem}.repeat*.log"))]


def _clean_row(row: CaseResult) -> tuple[CaseResult, list[str]]:
    """``row`` with every path that leaves its folder dropped, and a warning for each."""
    bad = [path for path in _named(row) if not relative_inside(path)]
    if not bad:
        return row, []

    def kept(path: str | None) -> str | None:
        return path if path is None or relative_inside(path) else None

    cleaned = dataclasses.replace(row, traces=Traces(kept(row.traces.light), kept(row.traces.detailed)), log=kept(row.log))
    if row.distributed is not None:
        ranks = tuple(dataclasses.replace(rank, trace=kept(rank.trace) or "") for rank in row.distributed.ranks)
        cleaned = dataclasses.replace(cleaned, distributed=dataclasses.replace(row.distributed, ranks=ranks))
    return cleaned, [f"{' '.join(row.key)}: dropped the path {path!r}: it leaves the shard's folder" for path in bad]


def _plan(sources: Sequence[Source], out_dir: Path) -> tuple[list[RunRecord], list[tuple[Path, Path]], list[str]]:
    """The records to write (their bad paths dropped), the files to copy, and what is left out and why."""
    records, copies, left_out = [], [], []
    for source in sources:
        root = source.path.resolve()
        for record in source.records:
            rows = []
            for row in record.rows:
                row, warnings = _clean_row(row)
                left_out += warnings
                rows.append(row)
                for relative in [*_named(row), *_repeat_logs(source.path, row)]:
                    origin = source.path / relative
                    try:
                        mode = os.lstat(origin).st_mode
                    except OSError:
                        continue  # a file the case never wrote (a failed case's trace)
                    if not stat.S_ISREG(mode) or root not in origin.resolve().parents:
                        left_out.append(f"{origin}: not copied: not a regular file inside its shard")
                        continue
                    copies.append((origin, out_dir / relative))
            records.append(dataclasses.replace(record, rows=tuple(rows)))
    return records, copies, left_out


def _check_targets(out_dir: Path, targets: Sequence[Path], inputs: Sequence[Path]) -> None:
    """Every path merge writes resolves under ``out_dir`` and under none of the inputs; else nothing is written."""
    folders = [folder.resolve() for folder in inputs]
    for target in targets:
        try:
            outdir.inside(out_dir, target)
        except outdir.OutsideOutputError as error:
            raise outdir.OutputUnusable(f"refusing to write outside --out: {error}") from None
        resolved = target.resolve()
        for folder in folders:
            if resolved == folder or folder in resolved.parents:
                raise outdir.OutputUnusable(f"refusing to write {target}: it lies in {folder}, an input of this merge")


def _protected(path: Path) -> Path:
    """What merging must not write into: an input folder, or the output folder a run record lies in; a
    record file elsewhere, only itself."""
    return _folder_of(path) if path.is_dir() or path.parent.name == outdir.RUNS_DIR else path


def _check_out(out_dir: Path, inputs: Sequence[Path]) -> None:
    """``out_dir`` is none of the inputs and lies inside none of them."""
    out = out_dir.resolve()
    for path in inputs:
        folder = _protected(path).resolve()
        if out == folder or folder in out.parents:
            where = "one of" if out == folder else "inside one of"
            raise outdir.OutputUnusable(f"--out {out_dir} is {where} the inputs ({path}): merge into a folder of its own")


def _copy(origin: Path, target: Path) -> None:
    """Copy a shard's regular file under a temporary name, then rename it into place: an interrupted copy
    leaves no truncated file under the final name. A link put at ``origin`` since it was checked is not followed."""
    fd = os.open(origin, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    partial = partial_path(target)
    try:
        with os.fdopen(fd, "rb") as stream, outdir.create_new(partial) as sink:
            shutil.copyfileobj(stream, sink)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def merge(paths: Sequence[str | Path], out_dir: Path, keep_latest: bool = False) -> MergeOutcome:
    """Join the records of ``paths`` into ``out_dir`` (its own records included), and rebuild its views."""
    out_dir = Path(out_dir)
    inputs = [Path(path) for path in paths]
    _check_out(out_dir, inputs)
    sources = [read_source(path) for path in inputs]
    if out_dir.is_dir() and outdir.read_records(out_dir):  # merging into a folder adds to what it holds
        sources.append(read_source(out_dir))
    sources = _distinct_records(sources)
    check_versions(sources)
    superseded: tuple[tuple[str, ...], ...] = tuple(sorted(_overlaps(sources))) if keep_latest else ()
    if not keep_latest:
        check(sources)
    outside = [source for source in sources if source.path.resolve() != out_dir.resolve()]
    records, copies, left_out = _plan(outside, out_dir)
    views = [out_dir / name for name in (*outdir.VIEWS, outdir.LOCK_NAME, outdir.RUNS_DIR)]
    _check_targets(out_dir, [*views, *(target for _, target in copies)], [_protected(path) for path in inputs])
    outdir.check_usable(out_dir)
    outdir.make(out_dir)
    with outdir.locked(out_dir):
        for record in records:
            outdir.write_record(out_dir, record)
        for origin, target in copies:
            target.parent.mkdir(parents=True, exist_ok=True)
            outdir.inside(out_dir, target)  # a link put there meanwhile
            _copy(origin, target)
        own = [record for source in sources if source not in outside for record in source.records]
        merged = sorted({record.run_id: record for record in [*own, *records]}.values(), key=lambda record: record.run_id)
        outcome = MergeOutcome(
            out_dir, summary_of_records(merged, str(out_dir)), tuple(sources), superseded, _missing_shards(merged), tuple(left_out)
        )
        outdir.rewrite_views(out_dir, merged, text=lambda view: render_merged(dataclasses.replace(outcome, summary=view)))
    return outcome


def render_merged(outcome: MergeOutcome) -> str:
    """The merged summary.txt: where each shard came from, then the summary with a machine column when several."""
    summary = outcome.summary
    lines = [f"merged from {len(outcome.sources)} source(s) on {len(outcome.machines)} machine(s)"]
    for source in outcome.sources:
        for record in source.records:
            shard = record.extra.get("shard")
            where = f"shard {shard['index']}/{shard['count']}" if isinstance(shard, dict) else "unsharded"
            lines.append(
                f"  {source.path}: run {record.run_id}, {where}, {len(record.rows)} case(s), "
                f"host {record.environment.get('host', '?')} ({record.fingerprint})"
            )
    if outcome.missing_shards:
        lines.append(f"missing shards: {', '.join(outcome.missing_shards)}")
    if outcome.superseded:
        lines.append(f"{len(outcome.superseded)} case(s) in several shards: the latest row kept (--keep-latest)")
    lines += [f"left out: {item}" for item in outcome.left_out]
    machine = Column("machine", lambda row: _machine(summary, row), numeric=False) if len(outcome.machines) > 1 else None
    return render_text(summary, extra=machine, preamble=[*lines, ""])


def _machine(summary: Summary, row: CaseResult) -> str:
    environment: dict[str, Any] = summary.environment_of(row)
    return f"{environment.get('host', '?')} ({environment.get('fingerprint', '?')})"
