"""One case timed by several processes: a run's ``--repeat`` processes, or the runs that took turns (``--pool``).

The unit of replication is the process: a pooled row's step time is the median of its processes'
medians, its IQR the median of theirs, its least step the least of all. The profile and the overhead it
priced (µs a step) stay the profiling process's; what is drawn from the step time, the overhead's share and
verdict, the bound and the per-second costs, is redrawn at the pooled median (``analyze.costs.with_step_time``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Sequence

from torchbenchmark.analyze.costs import with_step_time
from torchbenchmark.results.records import RunRecord, Summary, differs, latest_rows, summary_of_records
from torchbenchmark.results.schema import CaseResult, Samples, Status, StepTime


def pool_processes(profiled: CaseResult, rows: Sequence[CaseResult]) -> CaseResult:
    """``profiled`` timed by every process of ``rows``: ok rows of its case, measured alike."""
    steps = [row.step_time for row in rows if row.step_time is not None]
    if profiled.step_time is None or not steps:
        raise ValueError(f"{' '.join(profiled.key)}: pooling needs rows with a step time")
    samples = sum((row.samples for row in rows), Samples())
    step = StepTime(
        median_ms=statistics.median(samples.process_medians_ms or [s.median_ms for s in steps]),
        iqr_ms=statistics.median(s.iqr_ms for s in steps),
        min_ms=min(s.min_ms for s in steps),
        n=sum(s.n for s in steps),
    )
    agree = False if any(row.measurement.agree is False for row in rows) else profiled.measurement.agree
    pooled = dataclasses.replace(
        profiled, step_time=step, samples=samples, measurement=dataclasses.replace(profiled.measurement, agree=agree)
    )
    return with_step_time(pooled, profiled.step_time.median_ms)


def combine_repeats(processes: Sequence[CaseResult]) -> CaseResult:
    """One row for a case run in several processes, in the order they ran: the first's profile and verdict,
    every process's timing. A process that did not end ok ends the case: the row is that process's row,
    with the samples of the processes before it kept."""
    first = processes[0]
    if first.status != Status.OK:
        return first
    for index, later in enumerate(processes[1:], start=1):
        if later.status != Status.OK or later.step_time is None:
            return dataclasses.replace(later, samples=sum((p.samples for p in processes[: index + 1]), Samples()))
    return pool_processes(first, processes) if len(processes) > 1 else first


def pooled_rows(records: Sequence[RunRecord]) -> list[CaseResult]:
    """The view, each ok row timed by every run that measured its case alike, for comparing step times.

    Runs of a base and of a change that took turns on one machine (base, change, base, change, ...) leave
    two folders of several runs each; pooled, each side holds every process it ran, so a load that drifted
    during the session weighs on both sides alike. An earlier row joins when it is ok and measured alike:
    the same batch size, machine, torch and intra-op threads.
    """
    environments = {record.run_id: record.environment for record in records}
    rows_of: dict[tuple[str, ...], list[CaseResult]] = defaultdict(list)  # each case's rows, oldest run first
    for record in records:
        for row in record.rows:
            rows_of[row.key].append(dataclasses.replace(row, run_id=record.run_id))

    def alike(row: CaseResult, latest: CaseResult) -> bool:
        a, b = environments[row.run_id or ""], environments[latest.run_id or ""]
        return (
            row.status == Status.OK
            and row.batch_size == latest.batch_size
            and bool(row.samples.process_medians_ms)
            and not differs(a, b)
            and a.get("threads") == b.get("threads")
        )

    def pooled(latest: CaseResult) -> CaseResult:
        alike_rows = [row for row in rows_of[latest.key] if alike(row, latest)]
        if latest.status != Status.OK or latest.step_time is None or len(alike_rows) < 2:
            return latest
        return pool_processes(latest, alike_rows)

    return [pooled(latest) for latest in latest_rows(records)]


def pooled_summary(records: Sequence[RunRecord], source: str) -> Summary:
    """The summary of ``records`` with every case pooled over the runs that measured it alike."""
    return summary_of_records(records, source, pooled_rows(records))
