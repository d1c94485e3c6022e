"""Every text table beside the summary: a comparison, a case's top ops, ``--list``, ``check``, a merge's sources."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from torchbenchmark.analyze.compare import CaseComparison, Comparison
from torchbenchmark.analyze.opdiff import OpDiff
from torchbenchmark.analyze.steps import TraceSummary
from torchbenchmark.analyze.walltime import shown_pct
from torchbenchmark.report.format import Column, console_width, escape_controls, fit, plural, render_columns, significant, wrap
from torchbenchmark.results.schema import EAGER, Attribution, Call, OverheadShare


def _ratio(value: float) -> str:
    """A ratio as read: beyond 1000x either way a figure says nothing more than that."""
    if value > 1000:
        return "> 1000"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _interval(case: CaseComparison) -> str:
    estimate = case.estimate
    return "" if estimate is None else f"{_ratio(estimate.low)} to {_ratio(estimate.high)}"


def _verdicts(case: CaseComparison) -> str:
    if case.base_verdict == case.new_verdict or case.call in (Call.ONLY_IN_BASE, Call.ONLY_IN_NEW):
        return case.new_verdict or case.base_verdict or ""
    return f"{case.base_verdict or '-'} -> {case.new_verdict or '-'}"


def _notes(case: CaseComparison) -> str:
    """A case's notes, led by its verdict's change where that is its call (the notes say it otherwise)."""
    changed = [f"verdict {_verdicts(case)}"] if case.call == Call.VERDICT_CHANGED else []
    return "; ".join([*changed, *case.notes])


COMPARISON_COLUMNS: tuple[Column, ...] = (
    Column("call", lambda c: str(c.call), numeric=False),
    Column("model", lambda c: c.model, numeric=False),
    Column("mode", lambda c: c.mode, numeric=False),
    Column("device", lambda c: c.device, numeric=False),
    Column("base ms", lambda c: significant(c.base_ms)),
    Column("new ms", lambda c: significant(c.new_ms)),
    Column("new/base", lambda c: "" if c.estimate is None else _ratio(c.estimate.ratio)),
    Column("95% interval", _interval),
    Column("n", lambda c: "" if c.estimate is None else f"{c.estimate.n_base}/{c.estimate.n_new}"),
    Column("catches", lambda c: "" if c.detectable_pct is None else shown_pct(c.detectable_pct)),
    Column("verdict", _verdicts, numeric=False),
    Column("note", lambda c: "; ".join(c.notes), numeric=False),
)
COMPARISON_VARIANT = Column("variant", lambda c: c.variant, numeric=False)


def _by_instructions(case: CaseComparison) -> str:
    """The counts' call and the change it rests on: ``slower +1.35%``."""
    counted = case.instructions
    return "" if counted is None else f"{case.counts_call} {counted.change_pct:+.2f}%"


# Where a case has counts, the two tiers' calls beside the case's own: which of them decided it.
COMPARISON_TIERS = (
    Column("by time", lambda c: "" if c.wall_call is None else str(c.wall_call), numeric=False),
    Column("by instructions", _by_instructions, numeric=False),
)


def comparison_columns(comparison: Comparison) -> list[Column]:
    """Every column of the comparison's table (the page's, and the text's with ``--columns all``)."""
    columns = list(COMPARISON_COLUMNS)
    if any(case.variant != EAGER for case in comparison.cases):
        columns.insert(4, COMPARISON_VARIANT)
    if any(case.instructions is not None for case in comparison.cases):
        columns[1:1] = COMPARISON_TIERS
    return columns


# The text table's columns by the names --columns takes, and those it shows unless told: the rest (the
# verdict, each case's notes) is listed under the table, so that the terminal view fits its width.
COLUMN_NAMES = {
    "call": "call", "by-time": "by time", "by-instructions": "by instructions", "model": "model", "mode": "mode",
    "device": "device", "variant": "variant", "base": "base ms", "new": "new ms", "ratio": "new/base",
    "interval": "95% interval", "n": "n", "catches": "catches", "verdict": "verdict", "note": "note",
}  # fmt: skip
TERMINAL_COLUMNS = (
    "call",
    "by-time",
    "by-instructions",
    "model",
    "mode",
    "device",
    "variant",
    "base",
    "new",
    "ratio",
    "interval",
    "n",
    "catches",
)


def text_columns(comparison: Comparison, names: Sequence[str] | None = None) -> list[Column]:
    """The columns named (``all``: every one), in the table's order; by default ``TERMINAL_COLUMNS``, the device
    only where the cases ran on more than one, and the tiers and the variant only where some case has them."""
    every = comparison_columns(comparison)
    if names is not None and list(names) != ["all"]:
        wanted = {COLUMN_NAMES[name] for name in names}
        return [column for column in every if column.header in wanted]
    if names is not None:
        return every
    wanted = {COLUMN_NAMES[name] for name in TERMINAL_COLUMNS}
    if len({case.device for case in comparison.cases}) < 2:
        wanted.discard("device")
    return [column for column in every if column.header in wanted]


def comparison_tally(comparison: Comparison) -> str:
    counts = ", ".join(f"{n} {call}" for call, n in comparison.counts().items())
    return f"{plural(len(comparison.cases), 'case')}: {counts}"


def render_comparison(comparison: Comparison, columns: Sequence[str] | None = None, width: int | None = None) -> str:
    """The comparison of two runs as text: regressions first, each case's notes, then how to read it.

    ``columns``: the table's, by ``COLUMN_NAMES`` (``all``: every one, the notes among them); by default a
    table that fits a terminal, its notes listed under it. Prose is wrapped at ``width`` (the terminal's).
    """
    width = width or console_width()
    lines = [f"base: {comparison.base}", f"new:  {comparison.new}", comparison_tally(comparison)]
    if comparison.detectable_pct is not None:
        lines.append(f"catches: slowdowns of {shown_pct(comparison.detectable_pct)} or more, 9 times in 10, in the median case")
    lines = [escape_controls(line, one_line=True) for line in lines]  # paths are not broken
    lines += [wrap(escape_controls(f"note: {note}", one_line=True), width, hang="      ") for note in comparison.notes]
    shown = text_columns(comparison, columns)
    table = render_columns(shown, comparison.cases, tight=True)
    if not any(column.header == "note" for column in shown):
        noted = [
            wrap(escape_controls(f"{_case_name(case)}: {text}", one_line=True), width, "  ", "    ")
            for case in comparison.cases
            if (text := _notes(case))
        ]
        table += "\n\nnotes:\n" + "\n".join(noted) if noted else ""
    legend = [
        "new/base: ratio of median step times (per-process medians, geometric mean), with its 95% interval; "
        "n: processes per side; catches: the smallest slowdown a comparison measured alike calls slower 9 times in 10.",
        f"slower/faster: past the {comparison.threshold_pct:g}% threshold and outside noise "
        "(the interval excludes 1); same: within the threshold or within noise; inconclusive: the case cannot see "
        "a slowdown of 4x the threshold, or the machine's own drift could explain it (a side's marks are noted beside the call).",
        *([legend] if (legend := _counts_legend(comparison)) else []),
    ]
    return (
        "\n".join(lines) + "\n\n" + table + "\n\n" + "\n".join(wrap(line, width) for line in legend) + "\n"
        + ("\n" + ops if (ops := render_op_diffs(comparison, width)) else "")
    )  # fmt: skip


def _case_name(case: CaseComparison) -> str:
    return f"{case.model} {case.mode} {case.device}" + ("" if case.variant == EAGER else f" {case.variant}")


def _counts_legend(comparison: Comparison) -> str:
    """How the two tiers make a call, where some case has counts on both sides."""
    if not any(case.instructions is not None for case in comparison.cases):
        return ""
    return (
        "by time: the step times' call; by instructions: the counts' call and new over base instructions per step, "
        f"slower/faster past the {comparison.instructions_threshold_pct:g}% instructions threshold and both sides' spread. "
        "A slowdown either sees stands; counts that see no change decide a case time could not."
    )


OP_NAME_WIDTH = 50  # an op's name as its table shows it, cut beyond: the whole name is in --json
OP_DIFF_COLUMNS = (
    Column("op", lambda o: fit(o.name, OP_NAME_WIDTH), numeric=False),
    Column("base self µs", lambda o: f"{o.base_us_per_step:.1f}"),
    Column("new self µs", lambda o: f"{o.new_us_per_step:.1f}"),
    Column("change µs", lambda o: f"{o.change_us_per_step:+.1f}"),
    Column("total µs", lambda o: f"{o.change_total_us_per_step:+.1f}"),
    Column("base calls", lambda o: f"{o.base_calls_per_step:g}"),
    Column("new calls", lambda o: f"{o.new_calls_per_step:g}"),
)
OP_DIFF_LEGEND = "per step: self µs (the op's own time), change and total change in µs (its children's too), calls"


def events_change(diff: OpDiff) -> str:
    """``call 120 -> 220, nested 40 -> 40, autograd 0 -> 0``: each kind's op events per step, base then new."""
    return ", ".join(f"{kind} {base:.0f} -> {new:.0f}" for kind, (base, new) in diff.events_per_step.items())


def render_op_diffs(comparison: Comparison, width: int | None = None) -> str:
    """Under each case whose ops were read: the ops that moved most, those on one side only, the events by kind."""
    width = width or console_width()
    blocks = []
    for case in comparison.cases:
        head = escape_controls(f"ops that moved: {_case_name(case)} ({case.call})", one_line=True)
        if case.ops_note:
            blocks.append(wrap(f"{head}: {escape_controls(case.ops_note, one_line=True)}", width))
        if case.ops is None:
            continue
        lines = [head, render_columns(OP_DIFF_COLUMNS, case.ops.ops, tight=True)]
        for side, names in (("base", case.ops.only_in_base), ("new", case.ops.only_in_new)):
            if names:
                lines.append(wrap(escape_controls(f"only in {side}: {', '.join(names)}", one_line=True), width))
        lines.append(wrap(f"op events per step: {events_change(case.ops)}", width))
        blocks.append("\n".join(lines))
    legend = wrap(OP_DIFF_LEGEND, width) + "\n" if any(case.ops is not None for case in comparison.cases) else ""
    return "\n\n".join(blocks) + "\n" + legend if blocks else ""


def render_top_ops(title: str, summary: TraceSummary) -> str:
    """A case's ``.top_ops.txt``: its top ops by self time (on a GPU, also the kernel time each launched)."""
    kernel = summary.gpu is not None
    table = tabulate(
        [
            (op.name, op.self_ms_per_step, *([op.kernel_ms_per_step] if kernel else []), op.calls_per_step, op.pct_of_step)
            for op in summary.top_ops
        ],
        headers=["op", "self ms/step", *(["kernel ms/step"] if kernel else []), "calls/step", "% of step"],
        floatfmt=(".0f", ".3f", *([".3f"] if kernel else []), ".1f", ".1f"),
    )
    by = "self time or launched kernel time" if kernel else "self time"
    return f"{title}: top ops by {by} in the light profile\n\n{table}\n"


def _share_name(share: OverheadShare) -> str:
    """A share's name as one line, whatever a model named its module class (a newline, an escape)."""
    return escape_controls(share.name, one_line=True) if share.part in ("module", "class", "line") else f"({share.name})"


SHARE_COLUMNS = (
    Column("events/step", lambda s: f"{s.events_per_step:.1f}" if s.part != "unattributed" else ""),
    Column("µs/step", lambda s: f"{s.overhead_us_per_step:.1f}"),
    Column("% of estimate", lambda s: f"{s.pct_of_estimate:.1f}"),
)
MODULE_COLUMNS = (
    Column("module", _share_name, numeric=False),
    Column("class", lambda s: escape_controls(s.module_class or "", one_line=True), numeric=False),
    *SHARE_COLUMNS,
)


def share_columns(part: str) -> tuple[Column, ...]:
    """The columns of one attribution list: a module's path and class, or a class, or a line."""
    return MODULE_COLUMNS if part == "module" else (Column(part, _share_name, numeric=False), *SHARE_COLUMNS)


def render_attribution(title: str, attribution: Attribution) -> str:
    """A case's ``.overhead_by_module.txt``: its estimated overhead by module, by module class and by line."""
    lines = [f"{title}: the estimated overhead by where it ran, from the detailed profile (docs/explain.md)"]
    if attribution.attribution_note:
        lines.append(f"note: {attribution.attribution_note}")
    for part, shares in (
        ("module", attribution.overhead_by_module),
        ("class", attribution.overhead_by_class),
        ("line", attribution.overhead_by_line),
    ):
        if shares:
            lines += ["", render_columns(share_columns(part), shares)]
    return escape_controls("\n".join(lines)) + "\n"


@dataclasses.dataclass(frozen=True)
class Listed:
    """One line of ``--list``: a model, what it declares, and whether it can run here."""

    model: str
    family: str = ""
    annotated: bool | None = None
    batch_sizes: tuple[int, int, int, int] | None = None  # cpu train, cpu eval, cuda train, cuda eval
    available: str = "yes"  # or why not


LIST_COLUMNS = (
    Column("model", lambda m: m.model, numeric=False),
    Column("family", lambda m: m.family, numeric=False),
    Column("annotated", lambda m: "" if m.annotated is None else "yes" if m.annotated else "no", numeric=False),
    *(
        Column(header, lambda m, i=i: "" if m.batch_sizes is None else str(m.batch_sizes[i]))
        for i, header in enumerate(("cpu train", "cpu eval", "cuda train", "cuda eval"))
    ),
    Column("available", lambda m: m.available, numeric=False),
)


def render_list(models: Sequence[Listed]) -> str:
    return render_columns(LIST_COLUMNS, models)


CHECK_COLUMNS = (
    Column("model", lambda o: o.model, numeric=False),
    Column("mode", lambda o: o.mode, numeric=False),
    Column("rule", lambda o: o.rule, numeric=False),
    Column("result", lambda o: o.result, numeric=False),
    Column("detail", lambda o: o.detail, numeric=False),
)


def render_check(outcomes: Sequence[Any], broken: str) -> str:
    """``check``'s table of every rule checked, then one line per broken rule and the verdict."""
    failed = [o for o in outcomes if o.result == broken]
    lines = [render_columns(CHECK_COLUMNS, outcomes), ""]
    if failed:
        lines.append(f"{plural(len(failed), 'rule')} broken:")
        lines.extend(f"  {' '.join(filter(None, (o.model, o.mode)))}: {o.rule}: {escape_controls(o.detail)}" for o in failed)
        lines.append("The contract: docs/adding-a-model.md.")
    else:
        lines.append("every rule holds")
    return "\n".join(lines)
