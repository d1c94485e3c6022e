"""A case's section of the report: every figure of its row, its top ops, and why to read it with care."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchbenchmark.analyze.pricing import TERMS
from torchbenchmark.report.explain import attribution_html, bound_text, case_against
from torchbenchmark.report.format import Column, number, render_columns_html, significant
from torchbenchmark.report.html import badge, escape, key_values, link
from torchbenchmark.report.plots import case_id, label
from torchbenchmark.report.summary import flop_figure
from torchbenchmark.results.kinds import summed
from torchbenchmark.results.records import Summary, differs
from torchbenchmark.results.schema import PHASES, CaseResult, Status, enough_clean, terms_text

TOP_OPS_SHOWN = 8


@dataclasses.dataclass(frozen=True)
class Extra:
    """A figure some rows carry (compiled variants, FLOPs, memory): shown where present, absent otherwise."""

    name: str  # the row's field, or its JSON key while this version keeps it in ``extra``
    label: str
    digits: int | None  # None: three significant figures, for figures that span many powers of ten
    scale: float = 1.0  # shown as value x scale


EXTRAS = (
    Extra("speedup_vs_eager", "speedup vs eager (x)", 2),
    Extra("speedup_bound", "speedup bound (x)", 2),
    Extra("flops_per_step", "GFLOP/step", None, scale=1e-9),
    Extra("achieved_gflops", "achieved GFLOP/s", None),
    Extra("pct_of_peak", "% of peak", 1),
    Extra("peak_memory_mb", "peak memory MB", 0),
    Extra("cache_memory_mb", "cache MB", 2),
    Extra("samples_per_s", "samples/s", None),
    Extra("gpu_busy_pct", "GPU busy %", 1),
)


def field(row: CaseResult, name: str) -> Any:
    """A row's figure by name: a field of the row or of its costs, or a key this version does not know."""
    for holder in (row, row.costs, row.bound):
        value = getattr(holder, name, None) if holder is not None else None
        if value is not None:
            return value
    return row.extra.get(name)


FROM_FLOPS = ("flops_per_step", "achieved_gflops", "pct_of_peak")  # marked partial with the count


def extra_text(row: CaseResult, extra: Extra) -> str:
    value = field(row, extra.name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    text = significant(value * extra.scale) if extra.digits is None else number(value * extra.scale, extra.digits)
    return flop_figure(row, text) if extra.name in FROM_FLOPS else text


def doubts(summary: Summary, row: CaseResult) -> list[str]:
    """Why a row's figures deserve less trust than the others', or should not be read at all."""
    reasons = []
    if row.status != "ok":
        reasons.append(f"{row.status}: {row.error or 'no reason recorded'}")
    elif row.untrustworthy_reasons:
        reasons.append("untrustworthy: " + "; ".join(row.untrustworthy_reasons))
    if row.costs is not None and row.costs.flops_partial:
        reasons.append(f"FLOPs partial (GFLOP figures are lower bounds), not counted: {', '.join(row.costs.flops_uncounted)}")
    if row.costs is not None and (row.costs.pct_of_peak or 0) > 100:
        reasons.append(f"{row.costs.pct_of_peak:.0f}% of peak, above the peak: the peak was measured under load")
    if row.status == "ok" and row.remedy is not None:
        reasons.extend(row.remedy.marks)
    if differs(summary.environment, summary.environment_of(row)):
        environment = summary.environment_of(row)
        reasons.append(
            f"measured on another machine or torch version ({environment.get('host')}, torch {environment.get('torch')}, run {row.run_id})"
        )
    return reasons


def links(row: CaseResult) -> str:
    links = [link(row.traces.light, "light"), link(row.traces.detailed, "detailed"), link(row.log, "log")]
    return " ".join(link for link in links if link)


def _compile_text(row: CaseResult) -> str:
    """A compiled variant's cost and what dynamo made of the module, with each graph break's reason."""
    report = row.compile
    if report is None:
        return ""
    text = escape(
        f"{report.backend} ({report.mode}): {report.compile_time_s:.1f} s to compile, {report.graphs} graphs, "
        f"{report.graph_breaks} graph breaks, {report.recompiles} recompiles"
    )
    reasons = "".join(f"<li>{escape(item.reason)} at {escape(item.where)} ({item.count}x)</li>" for item in report.break_reasons)
    return text + (f"<ul>{reasons}</ul>" if reasons else "")


def remedy_text(row: CaseResult) -> str:
    """A precision or layout variant: what ran, how natively, and how its outputs compare with eager's."""
    remedy = row.remedy
    if remedy is None:
        return ""
    ran = [f"{remedy.precision} ({remedy.dtype}, {remedy.support})" if remedy.precision else "", "channels_last" * remedy.channels_last]
    accuracy = remedy.accuracy
    if accuracy.not_checked:
        checked = f"accuracy not checked: {accuracy.not_checked}"
    elif accuracy.max_rel_error is None:
        checked = f"{accuracy.compared} differ from eager's: the variant's hold inf or NaN"
    else:
        close = "differ from" if accuracy.differs else "close to"
        checked = f"{accuracy.compared} {close} eager's: max relative error {accuracy.max_rel_error:.2g} (tolerance {accuracy.tolerance:g})"
    rounds = ", ".join(f"{r:.2f}" for r in remedy.speedup_rounds)
    return "; ".join(
        part
        for part in (", ".join(p for p in ran if p), checked, "grad scaler" * remedy.grad_scaler, rounds and f"speedup rounds {rounds}")
        if part
    )


TOP_OP_COLUMNS = (
    Column("top ops by self time", lambda op: op.name, numeric=False),
    Column("self ms/step", lambda op: significant(op.self_ms_per_step)),
    Column("calls/step", lambda op: f"{op.calls_per_step:g}"),
    Column("% of step", lambda op: number(op.pct_of_step, 1)),
    Column(
        "",
        lambda op: "",
        numeric=False,
        html=lambda op: f'<meter min="0" max="100" value="{op.pct_of_step:.1f}">{op.pct_of_step:.0f}%</meter>',
    ),
)


def top_ops_table(row: CaseResult) -> str:
    """A case's top ops by self time (their own time, not their children's) in the light profile."""
    if not row.top_ops:
        return ""
    return render_columns_html(TOP_OP_COLUMNS, row.top_ops[:TOP_OPS_SHOWN], kind="ops")


def _joined(parts: tuple[str, ...], separator: str = ", ") -> str:
    return separator.join(part for part in parts if part)


def _step_text(row: CaseResult) -> str:
    step = row.step_time
    if step is None:
        return ""
    return f"{significant(step.median_ms)} ms median, IQR {significant(step.iqr_ms)} ms, min {significant(step.min_ms)} ms, {step.n} steps"


def _phases_text(row: CaseResult) -> str:
    if row.phases_pct:
        return ", ".join(f"{p} {row.phases_pct[p]:.0f}%" for p in PHASES)
    return "no annotations" if row.status == Status.OK else ""


def _distortion_text(row: CaseResult) -> str:
    light, detailed, edge = row.distortion.light_pct, row.distortion.detailed_pct, row.edge_distortion_pct
    return _joined((
        f"light {number(light, 1)}%" if light is not None else "",
        f"detailed {number(detailed, 0)}%" if detailed is not None else "",
        f"edge {number(edge, 1)}%" if edge is not None else "",
    ), " ")  # fmt: skip


def _dispatch_text(row: CaseResult) -> str:
    dispatch = row.dispatch
    if dispatch is None:
        return ""
    return (f"{dispatch.ops_per_step:.0f} ops/step, median op {dispatch.median_op_us:.1f} µs, overhead "
            f"{100 * dispatch.overhead_fraction:.1f}% at {dispatch.per_op_overhead_us:.2f} µs/op")  # fmt: skip


def terms_html(row: CaseResult) -> str:
    """The estimate's terms, each with what it counts (``analyze.pricing.TERMS``); blank without terms."""
    if not terms_text(row):
        return ""
    assert row.dispatch is not None
    dispatch = row.dispatch
    said = {name: f"{name} {us:.3g} µs: {TERMS.get(name, name)}" for name, us in (dispatch.terms_us or {}).items()}
    if "python" in said and dispatch.warm_gap_us is not None and dispatch.real_gap_us is not None:  # the term's is the lesser
        said["python"] += f" (replayed gap {dispatch.warm_gap_us:.3g} µs, the real steps' {dispatch.real_gap_us:.3g} µs)"
    return f"{escape(terms_text(row))}<ul>{''.join(f'<li>{escape(text)}</li>' for text in said.values())}</ul>"


def time_split_text(row: CaseResult) -> str:
    """Where the measured steps' wall time went, by what the kernel saw."""
    split = row.time_split
    if split is None:
        return ""
    text = f"on a CPU {split.on_cpu_pct:.0f}%, waiting for a CPU {split.waiting_pct:.0f}%{summed(split.waiting_pct)}, blocked {split.blocked_pct:.0f}%"
    if split.steps_kept < split.steps_measured:
        kept = f"{split.steps_kept} of {split.steps_measured} steps ran with no wait"
        text += (
            f"; {kept} and make the step time"
            if enough_clean(split.steps_kept, split.steps_measured)
            else f"; only {kept}: every step makes the step time"
        )
    if split.unwaited_iqr_pct is not None:
        text += f"; every step less its wait spreads {split.unwaited_iqr_pct:.0f}% of their median (IQR)"
    machine = [f"CPU pressure {split.pressure_pct:.0f}%"] if split.pressure_pct is not None else []
    machine += [f"other work {split.other_work_pct:.0f}% of its CPUs"] if split.other_work_pct is not None else []
    return text + (f" (the machine: {', '.join(machine)})" if machine else "") + f"; by {split.method}"


def instructions_text(row: CaseResult) -> str:
    """The step's instructions as counted (``--instructions``), with how, or why they were not counted."""
    counted = row.instructions
    if counted is None:
        return ""
    if counted.per_step is None:
        return counted.reason or "not counted"
    return (f"{counted.per_step:,.0f} per step, from {counted.steps} steps counted under {counted.method} on one thread; "
            f"counts {counted.spread_pct or 0:.2f}% apart")  # fmt: skip


def _measurement_text(row: CaseResult) -> str:
    warmup, measurement = row.warmup, row.measurement
    return _joined((
        f"warmup {warmup.steps} steps" if warmup.steps is not None else "",
        {True: "steady", False: "not steady"}.get(warmup.steady, ""),
        f"{measurement.windows} windows" if measurement.windows else "",
        f"{measurement.diff_pct:.1f}% apart" if measurement.diff_pct is not None else "",
    ))  # fmt: skip


def case_article(summary: Summary, row: CaseResult) -> str:
    """One case's section: every figure its row has, its top ops, and links to its traces and log."""
    pairs = [
        ("status", badge(row.status) + (f" {escape(row.error)}" if row.error else "")),
        ("verdict", badge(row.dispatch.verdict) if row.dispatch else ""),
        ("family", escape(row.family or "")),
        ("batch size", escape(row.batch_size) if row.batch_size is not None else ""),
        ("step time", _step_text(row)),
        ("phases", _phases_text(row)),
        ("profiler distortion", _distortion_text(row)),
        ("dispatch", _dispatch_text(row)),
        ("overhead terms", terms_html(row)),
        ("removing the overhead", escape(bound_text(row))),
        ("against the eager bound", escape(case_against(summary, row))),
        ("measurement", escape(_measurement_text(row))),
        ("time split", escape(time_split_text(row))),
        ("instructions", escape(instructions_text(row))),
        *((extra.label, extra_text(row, extra)) for extra in EXTRAS),
        ("compute limit", escape(field(row, "compute_limit") or "")),
        ("FLOPs note", escape(field(row, "flops_note") or "")),
        ("compile", _compile_text(row)),
        ("variant", escape(remedy_text(row))),
        ("to read with care", escape("; ".join(doubts(summary, row)))),
        ("traces and log", links(row)),
        ("run", escape(row.run_id or "")),
    ]
    return (
        f'<article id="{case_id(row)}">\n<h3>{escape(label(row, 2))}</h3>\n{key_values(pairs)}\n{top_ops_table(row)}\n{attribution_html(row)}\n'
        f'<p><a href="#table">back to the table</a></p>\n</article>'
    )
