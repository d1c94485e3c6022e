"""Sweeps whose cases are stand-ins: rows made in the test's own process, a fixed peak, no probe processes.

A test passes ``machinery(...)`` to ``run_sweep`` or ``cli.main``, so a sweep's storage, views and refusals
run for real in milliseconds while no model is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from torchbenchmark.measure.peak import MachinePeak
from torchbenchmark.registry import list_models
from torchbenchmark.results.schema import CaseResult
from torchbenchmark.run.plugins import PluginProbe, probe_plugins
from torchbenchmark.run.sweep import Machinery

PEAK = MachinePeak(100.0, "test")


def machinery(
    run_case: Callable[..., CaseResult],
    names: Iterable[str] = (),
    costs: dict[tuple[str, str], float] | None = None,
    busy: str | None = None,
    probes: dict[str, PluginProbe] | None = None,
) -> Machinery:
    """A sweep's collaborators: ``run_case`` for every case, ``names`` counted as registered, a fixed peak,
    ``busy`` as the machine's state, ``costs`` for --shard, and ``probes`` in place of importing plug-ins."""
    known = sorted(names)

    def probe(specs: list[str], timeout_s: float = 0.0) -> dict[str, PluginProbe]:
        if probes is None:
            return probe_plugins(specs, timeout_s) if specs else {}
        return {spec: probes[spec] for spec in specs if spec in probes}

    return Machinery(
        run_case=run_case,
        measure_peak=lambda *args, **kwargs: PEAK,
        busy_machine=lambda threads: busy,
        case_costs=lambda: dict(costs or {}),
        probe_plugins=probe,
        registered=(lambda: known) if known else list_models,
    )


def unused(*args: Any, **kwargs: Any) -> CaseResult:
    raise AssertionError("the sweep ran a case it should have refused before any")
