"""What a test of a timed figure accepts: the right figure, or a measurement the tool itself marked."""

from __future__ import annotations

from typing import Any

from torchbenchmark.analyze import timesplit


def contended(result: Any) -> bool:
    """The tool's promise on a loaded machine: the right verdict, or a row that says other work distorted it."""
    return any(reason.startswith("contended") for reason in result.untrustworthy_reasons)


def marked(result: Any) -> bool:
    """A row whose figures the tool says not to trust, for whatever reason."""
    return bool(result.untrustworthy_reasons)


def steps_marked(steps: Any) -> bool:
    """What a row made of these characterised steps would carry: windows that never agreed, or contention."""
    machine = steps.machine
    figures = (machine.pressure_pct, machine.other_work_pct, machine.load_average, machine.cpus) if machine else (None,) * 4
    split = timesplit.time_split(steps.samples, steps.clock_method, figures)
    return not steps.windows_agree or bool(split is not None and split.contended)
