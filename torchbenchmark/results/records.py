"""Run records and the summary view: what an output folder holds, read strictly and rebuilt losslessly.

Each sweep writes one record (its environment, command and a row per case), never changed once the run
ends. The summary is a view of the records: the latest row of each case key. Reading a record or a
summary checks every row against the schema (``results.codec``), so a figure that is not a finite number
in its range is an error naming the file, the row and the field, not a traceback later.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.results.codec import SchemaError, decode, encode, json_field
from torchbenchmark.results.files import StorageError, load_json
from torchbenchmark.results.frames import case_record, dataframe
from torchbenchmark.results.schema import CaseResult, Status, sort_rows, tally

SCHEMA_VERSION = 3  # every change is in CHANGELOG.md; 1 was the summary.json before run records


class RunState(enum.StrEnum):
    RUNNING = "running"  # still running, as far as the reader can tell
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    DIED = "died"  # read so: left running by a sweep that no longer exists (``run.outdir.settled``)


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One invocation of the sweep: where and how it ran, and a row per case it ran."""

    run_id: str
    environment: dict[str, Any]
    command: str | None = None
    rows: tuple[CaseResult, ...] = json_field(key="results", default=())
    state: RunState = RunState.RUNNING
    ended_at: str | None = None
    not_run: tuple[tuple[str, ...], ...] = ()  # keys of the cases it never started
    pid: int | None = json_field(default=None, omit_none=True)  # the sweep's process, on the environment's host
    extra: dict[str, Any] = json_field(extra=True, default_factory=dict)  # flags, shard, interrupted_by, ...

    @property
    def fingerprint(self) -> str:
        return machine_fingerprint(self.environment)

    def to_dict(self) -> dict[str, Any]:
        data = encode(self)
        data["environment"] = {**self.environment, "fingerprint": self.fingerprint}
        return {"schema_version": SCHEMA_VERSION, **data}

    @classmethod
    def from_dict(cls, data: Any, source: str) -> RunRecord:
        check_version(data, source)
        for name, kind in (("run_id", str), ("environment", dict), ("results", list)):
            if not isinstance(data.get(name), kind):
                raise StorageError(f"{source}: not a run record: '{name}' is missing or not a {kind.__name__}")
        rows = read_rows(data["results"], source, run_id=data["run_id"])
        try:
            record = decode(cls, {**data, "results": []}, "")
        except SchemaError as error:
            raise StorageError(f"{source}: {error}") from None
        extra = {key: value for key, value in record.extra.items() if key != "schema_version"}
        return dataclasses.replace(record, rows=tuple(rows), extra=extra)


@dataclasses.dataclass(frozen=True)
class Summary:
    """What a results folder, summary.json or run record holds: rows, and the runs they came from."""

    source: str
    environment: dict[str, Any]  # the latest run's
    rows: tuple[CaseResult, ...]
    runs: dict[str, dict[str, Any]]  # run id -> that run's environment

    def environment_of(self, row: CaseResult) -> dict[str, Any]:
        return self.runs.get(row.run_id or "", self.environment)

    def __repr__(self) -> str:
        return f"Summary({self.source}: {len(self.rows)} case{'' if len(self.rows) == 1 else 's'}, {tally(self.rows)})"

    def to_dataframe(self) -> Any:
        """One row per case, a column per figure (pandas, which is not a requirement, must be installed)."""
        return dataframe(case_record(row) for row in sort_rows(self.rows))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "environment": self.environment,
            "runs": self.runs,
            "results": [row.to_dict() for row in sort_rows(self.rows)],
        }


def machine_fingerprint(environment: Mapping[str, Any]) -> str:
    """A short hash of what makes figures comparable: the host, its processor and the device used."""
    parts = [str(environment.get(name)) for name in ("host", "cpu", "cpu_count", "device_name", "platform")]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:10]


def changed(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> tuple[Any, Any] | None:
    """The two environments' ``key`` when both recorded it and they differ; None otherwise."""
    pair = a.get(key), b.get(key)
    return pair if None not in pair and pair[0] != pair[1] else None


def differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two environments' figures are not like for like: another machine or torch version."""
    return machine_fingerprint(a) != machine_fingerprint(b) or a.get("torch") != b.get("torch")


def timestamp() -> str:
    """Now, in UTC, to the second: when a run started or ended."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def new_run_id(now: datetime.datetime | None = None) -> str:
    """``20261130T031502.123456Z-1a2b``: sorts by start time; the suffix tells apart runs started together."""
    now = now or datetime.datetime.now(datetime.UTC)
    return f"{now:%Y%m%dT%H%M%S.%f}Z-{uuid.uuid4().hex[:4]}"


def check_version(data: Any, source: str) -> None:
    if not isinstance(data, dict):
        raise StorageError(f"{source}: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise StorageError(
            f"{source}: schema_version {version!r} is not one this torchbenchmark reads (1 to {SCHEMA_VERSION}); "
            "written by a newer version?"
        )


def read_rows(items: Any, source: str, run_id: str | None = None) -> list[CaseResult]:
    """The rows of a record or summary, each checked against the schema; StorageError naming the bad one."""
    if not isinstance(items, list):
        raise StorageError(f"{source}: 'results' is not a list")
    rows = []
    for index, item in enumerate(items):
        shown = " ".join(str(item.get(name, "?"))[:60] for name in ("model", "mode", "device")) if isinstance(item, dict) else ""
        try:
            row = CaseResult.from_dict(item, f"results[{index}]" + (f" ({shown})" if shown else ""))
        except SchemaError as error:
            raise StorageError(f"{source}: {error}") from None
        rows.append(row if row.run_id or run_id is None else dataclasses.replace(row, run_id=run_id))
    return rows


def read_record(path: Path) -> RunRecord:
    return RunRecord.from_dict(load_json(path), str(path))


def latest_rows(records: Sequence[RunRecord]) -> list[CaseResult]:
    """The view: the latest row of each case key; a case a run never started keeps its earlier row."""
    latest: dict[tuple[str, ...], CaseResult] = {}
    for record in records:
        for row in record.rows:
            latest[row.key] = row if row.run_id == record.run_id else dataclasses.replace(row, run_id=record.run_id)
        for key in record.not_run:
            if tuple(key) not in latest:  # nothing earlier to show: say it was never run
                model, mode, device, variant = key
                latest[tuple(key)] = CaseResult(
                    model=model,
                    mode=mode,
                    device=device,
                    variant=variant,
                    status=Status.INTERRUPTED,
                    error=f"not started: {record.extra.get('interrupted_by') or 'the run was interrupted'}",
                    run_id=record.run_id,
                )
    return sort_rows(latest.values())


def runs_of(records: Iterable[RunRecord]) -> dict[str, dict[str, Any]]:
    """Each record's environment, with its fingerprint, by run id."""
    return {record.run_id: {**record.environment, "fingerprint": record.fingerprint} for record in records}


def summary_of_records(records: Sequence[RunRecord], source: str, rows: Sequence[CaseResult] | None = None) -> Summary:
    """The view of ``records``: the latest row per case (or ``rows``, a view of them made elsewhere)."""
    if not records:
        raise StorageError(f"{source}: no run records")
    runs = runs_of(records)
    return Summary(source, runs[records[-1].run_id], tuple(latest_rows(records) if rows is None else rows), runs)


def read_summary_file(path: Path) -> Summary:
    """A summary.json, or one run record read as the summary of its run."""
    data = load_json(path)
    check_version(data, str(path))
    if "run_id" in data:
        return summary_of_records([RunRecord.from_dict(data, str(path))], str(path))
    if not isinstance(data.get("environment"), dict):
        raise StorageError(f"{path}: neither a summary nor a run record: 'environment' is missing")
    rows = read_rows(data.get("results"), str(path))
    runs = data.get("runs") if isinstance(data.get("runs"), dict) else {}
    return Summary(str(path), data["environment"], tuple(rows), runs)


def legacy_record(path: Path) -> RunRecord | None:
    """A summary.json written before run records, as one record, so its rows are carried, not lost.

    None when there is no such file, or when it is a view of records (the records are the truth). A
    legacy summary that cannot be read is an error: it is the only copy of its rows.
    """
    if not path.exists():
        return None
    data = load_json(path)
    check_version(data, str(path))
    if data.get("schema_version", 1) != 1:
        return None
    if not isinstance(data.get("environment"), dict):
        raise StorageError(f"{path}: not a summary: 'environment' is missing or not an object")
    environment = data["environment"]
    run_id = "00000000T000000.000000Z-" + hashlib.sha1(path.read_bytes()).hexdigest()[:4]  # sorts first
    rows = read_rows(data.get("results"), str(path), run_id=run_id)
    return RunRecord(
        run_id, environment, environment.get("command"), tuple(rows), state=RunState.COMPLETE, extra={"imported_from": path.name}
    )
