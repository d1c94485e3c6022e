"""Where results live on disk: immutable run records, the summary view rebuilt from them, atomic writes.

Every sweep writes one record, ``OUT/runs/<run-id>.json``: the run's environment, its command and a row
per case it ran. The record is rewritten (atomically) as cases finish and never touched once the run
has ended. ``OUT/summary.json`` and ``summary.txt`` are a *view*: the latest row of each case key over
all records, so deleting or corrupting them costs nothing, and a case this run did not reach keeps
its earlier row. A *pooled* view (``load_summary(folder, pool=True)``, ``compare --pool``) keeps those
rows but times each case with the processes of every run that measured it alike. Readers are strict: a
file that is not what it claims to be is an error naming the file and the problem, never a silent drop.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math
import os
import statistics
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.costs import with_step_time
from torchbenchmark.results import CaseResult, InvalidRow, Samples, StepTime

SCHEMA_VERSION = 2  # 1 was the summary.json of earlier versions: no records, no schema_version
RUNS_DIR = "runs"
SUMMARY_JSON = "summary.json"
SUMMARY_TXT = "summary.txt"
REPORT_HTML = "report.html"  # a page drawn from the summary view: see torchbenchmark.report
RUN_STATES = ("running", "complete", "interrupted")  # a "running" record whose sweep died stays so


class StorageError(Exception):
    """A results file that cannot be read as what it claims to be; the message names the file and why."""


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One invocation of the sweep: where and how it ran, and a row per case it ran."""

    run_id: str
    environment: dict[str, Any]
    command: str | None
    rows: tuple[CaseResult, ...] = ()
    state: str = "running"
    ended_at: str | None = None
    not_run: tuple[tuple[str, ...], ...] = ()  # keys of cases the run meant to run and never started
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return machine_fingerprint(self.environment)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.extra,
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "state": self.state,
            "ended_at": self.ended_at,
            "command": self.command,
            "environment": {**self.environment, "fingerprint": self.fingerprint},
            "not_run": [list(key) for key in self.not_run],
            "results": [row.to_dict() for row in self.rows],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> RunRecord:
        _check_version(data, source)
        for name, kind in (("run_id", str), ("environment", dict), ("results", list)):
            if not isinstance(data.get(name), kind):
                raise StorageError(f"{source}: not a run record: '{name}' is missing or not a {kind.__name__}")
        if data.get("state", "running") not in RUN_STATES:
            raise StorageError(f"{source}: unknown run state {data.get('state')!r}")
        known = {"schema_version", "run_id", "state", "ended_at", "command", "environment", "not_run", "results"}
        return cls(
            run_id=data["run_id"],
            environment=data["environment"],
            command=data.get("command"),
            rows=tuple(_rows(data["results"], source, run_id=data["run_id"])),
            state=data.get("state", "running"),
            ended_at=data.get("ended_at"),
            not_run=tuple(tuple(key) for key in data.get("not_run") or ()),
            extra={key: value for key, value in data.items() if key not in known},
        )


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
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.status] = counts.get(row.status, 0) + 1
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no rows"
        return f"Summary({self.source}: {len(self.rows)} {'case' if len(self.rows) == 1 else 'cases'}, {tally})"

    def _repr_html_(self) -> str:
        """The report's content in a notebook: the same sections and plots as OUT/report.html."""
        from torchbenchmark import report  # the renderer sits above storage: imported on use

        return report.notebook_html(report.summary_body(self))

    def to_dataframe(self) -> Any:
        """One row per case, a column per figure (pandas, which is not a requirement, must be installed)."""
        from torchbenchmark.frames import case_record, dataframe

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


def differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two environments' figures are not like for like: another machine or torch version."""
    return machine_fingerprint(a) != machine_fingerprint(b) or a.get("torch") != b.get("torch")


def new_run_id(now: datetime.datetime | None = None) -> str:
    """``20261130T031502.123456Z-1a2b``: sorts by start time; the suffix tells apart runs started together."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return f"{now:%Y%m%dT%H%M%S.%f}Z-{uuid.uuid4().hex[:4]}"


def sort_rows(rows: Iterable[CaseResult]) -> list[CaseResult]:
    return sorted(rows, key=lambda r: (r.model.lower(), r.mode, r.device, r.variant != "eager", r.variant))


# Writing --------------------------------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the new one, never half of one.

    The temporary file is removed on every failure path (a full disk included), and the error raised.
    """
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)  # a link left there is removed, not written through
    try:
        with open(partial, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def dumps(document: Any) -> str:
    """JSON without NaN or infinity: a figure that is not finite is written as null."""
    return json.dumps(_finite(document), indent=2, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def write_record(out_dir: Path, record: RunRecord) -> Path:
    path = out_dir / RUNS_DIR / f"{record.run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dumps(record.to_dict()))
    return path


# Reading --------------------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise StorageError(f"{path}: is a folder, not a JSON file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise StorageError(f"{path}: cannot be read ({error})") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise StorageError(f"{path}: not valid JSON ({error}); truncated or corrupt?") from None


def _check_version(data: Any, source: str) -> None:
    if not isinstance(data, dict):
        raise StorageError(f"{source}: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise StorageError(
            f"{source}: schema_version {version!r} is not one this torchbenchmark reads (1 to {SCHEMA_VERSION}); "
            "written by a newer version?"
        )


def _rows(items: Any, source: str, run_id: str | None = None) -> list[CaseResult]:
    if not isinstance(items, list):
        raise StorageError(f"{source}: 'results' is not a list")
    rows = []
    for index, item in enumerate(items):
        try:
            row = CaseResult.from_dict(item)
        except InvalidRow as error:
            raise StorageError(f"{source}: results[{index}]: {error}") from None
        rows.append(row if row.run_id or run_id is None else dataclasses.replace(row, run_id=run_id))
    return rows


def read_record(path: Path) -> RunRecord:
    return RunRecord.from_dict(_load_json(path), str(path))


def read_records(out_dir: Path) -> list[RunRecord]:
    """Every run record in ``out_dir``, oldest first; any unreadable one is an error naming it."""
    folder = out_dir / RUNS_DIR
    if not folder.is_dir():
        return []
    return sorted((read_record(path) for path in folder.glob("*.json")), key=lambda record: record.run_id)


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
                    model=model, mode=mode, device=device, variant=variant, status="interrupted",
                    error=f"not started: {record.extra.get('interrupted_by') or 'the run was interrupted'}",
                    run_id=record.run_id,
                )  # fmt: skip
    return sort_rows(latest.values())


def pooled_rows(records: Sequence[RunRecord]) -> list[CaseResult]:
    """The view, each ok row timed by every run that measured its case alike, for comparing step times.

    Runs of a base and of a change that took turns on one machine (base, change, base, change, ...)
    leave two folders of several runs each; pooled, each side holds every process it ran, so a load
    that drifted during the session weighs on both sides alike. An earlier row joins when it is ok and
    measured alike: the same batch size, machine fingerprint, torch and intra-op threads. Its timing is
    pooled as ``--repeat`` pools a run's processes (``pool_processes``); the profile and verdict stay the
    latest run's.
    """
    environments = {record.run_id: record.environment for record in records}
    runs_of: dict[tuple[str, ...], list[CaseResult]] = defaultdict(list)  # each case's rows, oldest run first
    for record in records:
        for row in record.rows:
            runs_of[row.key].append(dataclasses.replace(row, run_id=record.run_id))

    def alike(row: CaseResult, latest: CaseResult) -> bool:
        a, b = environments[row.run_id or ""], environments[latest.run_id or ""]
        return (row.status == "ok" and row.batch_size == latest.batch_size and bool(row.samples.process_medians_ms)
                and not differs(a, b) and a.get("threads") == b.get("threads"))  # fmt: skip

    def pooled(latest: CaseResult) -> CaseResult:
        alike_rows = [row for row in runs_of[latest.key] if alike(row, latest)]
        if latest.status != "ok" or latest.step_time is None or len(alike_rows) < 2:
            return latest
        return pool_processes(latest, alike_rows)

    return [pooled(latest) for latest in latest_rows(records)]


def pool_processes(profiled: CaseResult, rows: Sequence[CaseResult]) -> CaseResult:
    """``profiled`` timed by every process of ``rows``: ok rows of its case, measured alike.

    The step time becomes the median of the processes' medians, its IQR the median of theirs, its least
    step the least of all; the profile, verdict and costs stay ``profiled``'s, its per-second costs moved
    to the pooled median (``costs.with_step_time``). ``--repeat`` and ``--pool`` both time a case so.
    """
    steps = [row.step_time for row in rows if row.step_time is not None]
    if profiled.step_time is None or not steps:
        raise ValueError(f"{' '.join(profiled.key)}: pooling needs rows with a step time")
    samples = sum((row.samples for row in rows), Samples())
    step = StepTime(median_ms=statistics.median(samples.process_medians_ms or [s.median_ms for s in steps]),
                    iqr_ms=statistics.median(s.iqr_ms for s in steps), min_ms=min(s.min_ms for s in steps),
                    n=sum(s.n for s in steps))  # fmt: skip
    agree = False if any(row.windows_agree is False for row in rows) else profiled.windows_agree
    pooled = dataclasses.replace(profiled, step_time=step, samples=samples, windows_agree=agree)
    return with_step_time(pooled, profiled.step_time.median_ms)


def summary_of_records(records: Sequence[RunRecord], source: str, pool: bool = False) -> Summary:
    """The view of ``records``: the latest row per case, or with ``pool`` the pooled rows (``pooled_rows``)."""
    if not records:
        raise StorageError(f"{source}: no run records")
    runs = {record.run_id: {**record.environment, "fingerprint": record.fingerprint} for record in records}
    rows = pooled_rows(records) if pool else latest_rows(records)
    return Summary(source, runs[records[-1].run_id], tuple(rows), runs)


def legacy_record(path: Path) -> RunRecord | None:
    """A summary.json written before run records, as one record, so its rows are carried, not lost.

    None when there is no such file. A legacy summary that cannot be read is an error: it is the only
    copy of its rows.
    """
    if not path.exists():
        return None
    data = _load_json(path)
    _check_version(data, str(path))
    if data.get("schema_version", 1) != 1:
        return None  # a view of records: the records are the truth
    if not isinstance(data.get("environment"), dict):
        raise StorageError(f"{path}: not a summary: 'environment' is missing or not an object")
    environment = data["environment"]
    run_id = "00000000T000000.000000Z-" + hashlib.sha1(path.read_bytes()).hexdigest()[:4]  # sorts first
    rows = _rows(data.get("results"), str(path), run_id=run_id)
    return RunRecord(run_id, environment, environment.get("command"), tuple(rows), state="complete",
                     extra={"imported_from": SUMMARY_JSON})  # fmt: skip


def load_summary(path: str | Path, pool: bool = False) -> Summary:
    """Rows from an output folder (its records), a summary.json, or one run record.

    ``pool`` times each case of a folder with every run that measured it alike (``pooled_rows``); only a
    folder holds several runs. Raises StorageError naming the file and the problem when it cannot be read
    as any of these.
    """
    path = Path(path)
    records = read_records(path) if path.is_dir() else []
    if records:
        return summary_of_records(records, str(path), pool)
    if pool:
        raise StorageError(f"{path}: pooling needs an output folder with run records ({RUNS_DIR}/*.json)")
    if path.is_dir():
        if (path / SUMMARY_JSON).is_file():
            return load_summary(path / SUMMARY_JSON)
        raise StorageError(f"{path}: no run records ({RUNS_DIR}/*.json) and no {SUMMARY_JSON}: not an output folder")
    if not path.exists():
        raise StorageError(f"{path}: no such file or folder")
    data = _load_json(path)
    _check_version(data, str(path))
    if "run_id" in data:
        return summary_of_records([RunRecord.from_dict(data, str(path))], str(path))
    if not isinstance(data.get("environment"), dict):
        raise StorageError(f"{path}: neither a summary nor a run record: 'environment' is missing")
    rows = _rows(data.get("results"), str(path))
    runs = data.get("runs") if isinstance(data.get("runs"), dict) else {}
    return Summary(str(path), data["environment"], tuple(rows), runs)
