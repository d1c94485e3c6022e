"""Verdict accuracy: the tool's overhead fraction against two measured ground truths, case by case.

    python benchmarks/verdict_accuracy.py [--cases "dlrm eval,..."] [--rounds 5] [--threads 1] [--out DIR]
    python benchmarks/verdict_accuracy.py --decode [--rounds 5]     # the decode steps, a part of their own
    python benchmarks/verdict_accuracy.py --reprice DIR/results.json
    python benchmarks/verdict_accuracy.py --explain DIR/results.json [--threads 2]

``--reprice`` prices the events a run kept again (as the tool read them from its light trace), with a
fresh calibration and the current pricing, against the truth that run measured: a change to the pricing
is checked in seconds. ``--explain`` breaks each estimate of a run down (events by kind, the Python gap
real and replayed) beside the twin's own Python gap, read from the twin's kept trace: where an estimate's
error comes from. Both take ``--threads`` as the run did: an RNN layer is priced at them.

For each case the tool's estimate comes from ``collect_diagnostics`` (both profiles, as the command line
takes them: the detailed one's shapes give an LSTM call's time steps), then the truth is measured on the
same warm machine, every variant taking turns in each round (``_report.interleaved``):
- twin: the same graph of ops with every width shrunk (a config per case below), run at batch 1, so
  it calls nearly the same ops with next to no arithmetic. Its step time, scaled by the ratio of op
  events (real over twin, from one light profile of each), over the real step time is the best estimate
  of the overhead share: the truth the tool is held to.
- scaling: step times at the case's batch and at 1/2, 1/4 and 1/8 of it (2, 4 and 8 times it for a
  decode step, as ``--scaling`` takes them); the intercept of the
  least-squares line over its step time is an upper bound on the share (the intercept also holds
  arithmetic that does not grow with the batch).
Each variant's figure in a round is its fastest step (preemption on a shared machine only adds time),
then the median over rounds; each round's twin and real steps are taken back to back.
The tool's overhead (µs per step) is divided by the same real step time the truth is, so the
comparison is of the overhead estimate alone, not of two step times taken minutes apart on a loaded
machine; the tool's own fraction is shown too. A case passes when the estimate is within a factor of
1.5 of the twin's share. The row's interval claims the share of its own median step, so it is held, the
same way, to the twin's overhead over that step ("truth, tool's step"), as is its borderline flag.
The truth is a measurement too: beside it, the least and the most of its rounds ("truth's rounds"), how far
it moved while it was measured, and whether the tool marked the row (its ``untrustworthy_reasons``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks import estimate_ablation
from benchmarks._report import interleaved, record
from torchbenchmark.analyze import pricing
from torchbenchmark.analyze.overhead import EVENT_KINDS, PRICED_KINDS, SETUP_OPS, OverheadEvents, overhead_events_of_trace
from torchbenchmark.analyze.rnn import with_time_steps
from torchbenchmark.analyze.scaling import batch_at_share, scaling_batch_sizes
from torchbenchmark.analyze.steps import summarize_trace
from torchbenchmark.analyze.verdict import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT, borderline, verdict
from torchbenchmark.api import collect_diagnostics
from torchbenchmark.measure.calibration import calibrate, with_rnn_prices
from torchbenchmark.measure.harness import StepTimer, timed_call
from torchbenchmark.measure.profiling import run_profile
from torchbenchmark.measure.steady import steady_process
from torchbenchmark.models.recommendation import DLRM, DLRMNet
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.results.spec import Budget

FACTOR = 1.5
RNN_KINDS = tuple(kind for kind in SETUP_OPS.values() if kind.startswith("rnn"))
ROUND_S = 0.3  # time each variant runs per round
BUDGET = Budget(warmup_s=2.0, measure_s=1.0)


class NarrowDLRM(DLRM):
    """DLRM with every MLP width and the embedding dimension at 2: the same ops, no arithmetic."""

    def build(self) -> torch.nn.Module:
        return DLRMNet(self.num_dense, [self.rows_per_table] * self.num_tables, self.embedding_dim, bottom=[2, 2], top=[2, 2])


@dataclasses.dataclass(frozen=True)
class Case:
    model: str
    mode: str
    batch_size: int | None = None  # None: the model's default
    twin: dict[str, Any] = dataclasses.field(default_factory=dict)  # constructor arguments of the twin
    twin_class: type | None = None  # a narrower class, when widths are not constructor arguments

    @property
    def label(self) -> str:
        return f"{self.model} {self.mode}" + (f" bs={self.batch_size}" if self.batch_size else "")


_DLRM_TWIN = {"embedding_dim": 2, "rows_per_table": 100, "lookups_per_bag": 1}
CASES = {
    c.label: c
    for c in [
        Case("dlrm", "train", twin=_DLRM_TWIN, twin_class=NarrowDLRM),
        Case("dlrm", "eval", twin=_DLRM_TWIN, twin_class=NarrowDLRM),
        Case("soft_actor_critic", "train", twin={"hidden": 2}),
        Case("soft_actor_critic", "eval", twin={"hidden": 2}),
        Case("lstm_lm", "train", twin={"dim": 2, "vocab_size": 4}),
        Case("lstm_lm", "eval", twin={"dim": 2, "vocab_size": 4}),
        Case("hf_DistilBert", "eval", twin={"seq_len": 4, "config": {"dim": 12, "hidden_dim": 12}}),
        # gsw_dHdT's ~370 ops a step span the verdicts over these sizes: dispatch-bound, mixed, compute-bound.
        Case("pyhpc_equation_of_state", "eval", batch_size=1024),
        Case("pyhpc_equation_of_state", "eval", batch_size=4096),
        Case("pyhpc_equation_of_state", "eval", batch_size=16384),
    ]
}

# Decode steps (--decode): the twin keeps every layer, head group and expert, so the same ops run, at widths
# of 2 to 8, a context of 4 and a vocabulary of 16. Each runs at batch 1, then at its crossover batch: where
# the batch-1 run's scaling line puts the tool's overhead share at 50% (at 20% when it is under 50% at
# batch 1), so the estimate is held to the truth where the verdict changes.
_ATTENTION_TWIN = {"seq_len": 4, "config": {"hidden_size": 8, "intermediate_size": 8, "head_dim": 2, "vocab_size": 16}}
DECODE_TWINS = {
    "llama_decode": _ATTENTION_TWIN,
    "mixtral_decode": _ATTENTION_TWIN,
    "mamba_decode": {"seq_len": 4, "config": {"hidden_size": 8, "state_size": 2, "vocab_size": 16}},
}


def step_ms(model: Any, mode: str, steps: int) -> float:
    """The fastest of ``steps`` steps: on a shared machine preemption only adds time."""
    timer = StepTimer()
    timed_call(model, mode, steps + 1, timer)  # +1: the first step holds the call's edge
    return min(timer.inner_ns()) / 1e6


def ops_per_step(model: Any, mode: str, trace_path: Path) -> tuple[float, tuple[float, ...]]:
    """A light profile's ops per step, and its steps as their timer read them (where each step's gaps end)."""
    run = run_profile(model, mode, torch.device("cpu"), "light", 5, trace_path)
    return summarize_trace(run.trace_path).ops_per_step, run.steps.times_ms


def timer_for(model: Any, mode: str) -> Callable[[], float]:
    estimate = step_ms(model, mode, 3)  # also warms the model
    steps = max(3, int(ROUND_S * 1e3 / max(estimate, 1e-3)))
    return lambda: step_ms(model, mode, steps)


def measure(case: Case, rounds: int, out_dir: Path, detailed: bool = True) -> dict[str, Any]:
    # The detailed profile too, as the command line takes it: its shapes give an RNN call's time steps.
    inputs: dict[str, Any] = {}
    with estimate_ablation.capture(inputs):  # what the estimate was made from, for benchmarks/estimate_ablation.py
        tool = collect_diagnostics(case.model, case.mode, batch_size=case.batch_size, budget=BUDGET, out_dir=out_dir, detailed=detailed)
    if inputs.get("result") is not None:
        with (out_dir / estimate_ablation.INPUTS).open("wb") as file:
            pickle.dump(inputs, file)
    if tool.status != "ok":
        raise RuntimeError(f"{case.label}: {tool.status} ({tool.error})")
    cls = model_class(case.model)
    batch = tool.batch_size
    real = cls(device="cpu", batch_size=batch)
    twin = (case.twin_class or cls)(device="cpu", batch_size=1, **case.twin)
    others = scaling_batch_sizes(batch, up=meta_of(cls).scale_batch_up)
    variants = {"real": timer_for(real, case.mode), "twin": timer_for(twin, case.mode)}
    for b in others:
        variants[f"bs{b}"] = timer_for(cls(device="cpu", batch_size=b), case.mode)
    figures = interleaved(variants, rounds)
    real_ms = statistics.median(figures["real"])
    twin_trace = out_dir / tool.model / f"{case.mode}-twin-bs1.pt.trace.json.gz"
    twin_ops, twin_steps_ms = ops_per_step(twin, case.mode, twin_trace)
    ops_ratio = tool.dispatch.ops_per_step / twin_ops
    twin_rounds = [t * ops_ratio / r for t, r in zip(figures["twin"], figures["real"])]
    twin_share = statistics.median(twin_rounds)
    d = tool.dispatch
    overhead_us = d.overhead_fraction_uncapped * tool.step_time.median_ms * 1e3
    same_step = overhead_us / (real_ms * 1e3)
    scaling, crossovers = None, (None, None)
    if len(others) >= 2:
        batches = [*others, batch]
        slope, intercept = statistics.linear_regression(batches, [statistics.median(figures[f"bs{b}"]) for b in others] + [real_ms])
        scaling = max(0.0, intercept) / real_ms
        crossovers = tuple(batch_at_share(overhead_us / 1e3, intercept, slope, share) for share in (0.5, 0.2))
    return {
        "case": case.label, "batch": batch, "real ms": real_ms, "tool": d.overhead_fraction_uncapped,
        "interval": d.overhead_interval, "borderline": d.borderline, "verdict": str(d.verdict),
        "twin ops ratio": ops_ratio, "twin": twin_share, "twin rounds": twin_rounds, "scaling upper": scaling,
        "marks": list(tool.untrustworthy_reasons),
        "tool / twin": same_step / twin_share, "tool same step": same_step,
        "real iqr ms": tool.step_time.iqr_ms, "tool ms": tool.step_time.median_ms,
        "trace": str(out_dir / tool.traces.light),
        "detailed trace": str(out_dir / tool.traces.detailed) if tool.traces.detailed else None,
        "twin trace": str(twin_trace), "twin ms": statistics.median(figures["twin"]), "twin trace steps ms": twin_steps_ms,
        "warm gap": d.warm_gap_us, "batch at 50%": crossovers[0], "batch at 20%": crossovers[1],
    }  # fmt: skip


def within(row: dict[str, Any]) -> bool:
    return 1 / FACTOR <= row["tool / twin"] <= FACTOR


def truth_of_tool_step(row: dict[str, Any]) -> float:
    """The twin's overhead over the tool's own median step: the share the row's interval claims to hold. (The
    twin's share is of the fastest steps of each round; the row's, of its median step.)"""
    return row["twin"] * row["real ms"] / row["tool ms"]


def holds_truth(row: dict[str, Any]) -> bool:
    low, high = row["interval"]
    return low <= truth_of_tool_step(row) <= high


def truth_band(row: dict[str, Any]) -> tuple[float, float] | None:
    """The least and the most of the twin's share over its rounds, over the tool's own median step: how far the
    truth itself moved while it was measured (None for a run that kept only the median)."""
    rounds = row.get("twin rounds")
    if not rounds:
        return None
    scale = row["real ms"] / row["tool ms"]
    return min(rounds) * scale, max(rounds) * scale


def meets_band(row: dict[str, Any]) -> bool:
    """Whether a row's interval misses its truth by less than the truth's own spread over its rounds."""
    band, (low, high) = truth_band(row), row["interval"]
    return band is not None and low <= band[1] and band[0] <= high


def misses(rows: list[dict[str, Any]]) -> str:
    """Of the intervals that miss their truth, how many by less than the truth's own spread, and the marks of each."""
    missed = [r for r in rows if not holds_truth(r)]
    if not missed:
        return ""
    each = "; ".join(f"{r['case']}: {', '.join(r.get('marks') or ['unmarked'])}" for r in missed)
    return f" (of the {len(missed)} others, {sum(map(meets_band, missed))} within the truth's own spread over its rounds; {each})"


def borderline_far(row: dict[str, Any]) -> bool:
    """A borderline row whose truth lies more than 10 points from both thresholds: a doubt it need not have."""
    truth = truth_of_tool_step(row)
    return bool(row["borderline"]) and min(abs(truth - COMPUTE_BOUND_BELOW), abs(truth - DISPATCH_BOUND_AT)) > 0.10


def met(row: dict[str, Any]) -> bool:
    """Within 1.5x of the twin, or an interval that holds the twin's share and claims no verdict the twin's
    share contradicts (borderline, or the twin's own verdict): an honest answer, not a confident wrong one."""
    honest = row["borderline"] or row["verdict"] == str(verdict(truth_of_tool_step(row)))
    return within(row) or (holds_truth(row) and honest)


def decode_rows(rounds: int, out_dir: Path) -> list[dict[str, Any]]:
    """Each decode case at batch 1, then at the crossover batch its own scaling line gives (see DECODE_TWINS)."""
    rows = []
    for model, twin in DECODE_TWINS.items():
        first = measure(Case(model, "eval", batch_size=1, twin=twin), rounds, out_dir / f"{model}_bs1")
        print(first, flush=True)
        rows.append(first)
        crossover = next((b for b in (first["batch at 50%"], first["batch at 20%"]) if b is not None and b > 1), None)
        if crossover is not None:
            rows.append(measure(Case(model, "eval", batch_size=crossover, twin=twin), rounds, out_dir / f"{model}_bs{crossover}"))
            print(rows[-1], flush=True)
        (out_dir / "results.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


def render(rows: list[dict[str, Any]], decode: bool = False) -> str:
    """The table of estimate against truth, one row per case (``decode``: with the crossover batches)."""
    if decode:
        return tabulate(
            [
                (r["case"], r["batch"], f"{r['real ms']:.3g}", f"{r['tool same step']:.4f}", r["verdict"], f"{r['twin']:.4f}",
                 f"{r['tool / twin']:.2f}", "yes" if 1 / FACTOR <= r["tool / twin"] <= FACTOR else "NO",
                 "" if r["scaling upper"] is None else f"{r['scaling upper']:.4f}", r["batch at 50%"] or "", r["batch at 20%"] or "")
                for r in rows
            ],
            headers=["case", "batch", "ms/step", "tool, same step", "verdict", "twin (truth)", "tool/truth", "within 1.5x",
                     "scaling bound", "50% at batch", "20% at batch"],
            disable_numparse=True,
        )  # fmt: skip
    return tabulate(
        [
            (r["case"], r["batch"], f"{r['real ms']:.3g}", f"{r['tool']:.4f}", f"{r['tool same step']:.4f}",
             f"{r['interval'][0]:.4f}-{r['interval'][1]:.4f}", "yes" if r["borderline"] else "", r["verdict"],
             f"{r['twin']:.4f}", f"{truth_of_tool_step(r):.4f}", f"{r['twin ops ratio']:.2f}",
             "" if r["scaling upper"] is None else f"{r['scaling upper']:.4f}", f"{r['tool / twin']:.2f}",
             "yes" if within(r) else "NO", "yes" if holds_truth(r) else "NO", _band(r), "yes" if r.get("marks") else "",
             "yes" if met(r) else "NO")
            for r in rows
        ],
        headers=["case", "batch", "ms/step", "tool", "tool, same step", "tool interval", "borderline", "verdict", "twin (truth)",
                 "truth, tool's step", "ops real/twin", "scaling bound", "tool/truth", "within 1.5x", "interval holds truth",
                 "truth's rounds, tool's step", "marked", "met"],
        disable_numparse=True,
    )  # fmt: skip


def _band(row: dict[str, Any]) -> str:
    band = truth_band(row)
    return "" if band is None else f"{band[0]:.4f}-{band[1]:.4f}"


def estimate_again(events: OverheadEvents, row: dict[str, Any], calibration: pricing.Calibration) -> pricing.Estimate:
    """A row's estimate from ``events`` of its kept trace, with the replayed gap its run measured."""
    replayed = None if row.get("warm gap") is None else OverheadEvents(({},), (row["warm gap"],))
    return pricing.estimate(events, calibration, row["tool ms"], replayed)


def kept_events(row: dict[str, Any]) -> OverheadEvents:
    """The events a row's estimate was made from, as the tool read them (each step's gaps ending where its
    clock did: ``estimate_ablation.INPUTS``); for a run that kept none, its light trace read again."""
    path = Path(row["trace"]).parent.parent / estimate_ablation.INPUTS
    if path.exists():
        with path.open("rb") as file:
            return pickle.load(file)["args"][0]
    return with_time_steps(overhead_events_of_trace(row["trace"]), row.get("detailed trace"))


def priced_for(row: dict[str, Any], events: OverheadEvents, calibration: pricing.Calibration) -> pricing.Calibration:
    """``calibration``, with an RNN layer priced where the row's step calls one, as the tool prices it."""
    if not any(events.mean_events(kind) for kind in RNN_KINDS):
        return calibration
    return with_rnn_prices(calibration, torch.device("cpu"), train=row["case"].split()[1] == "train")


def reprice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's estimate again from the events its run kept, priced with a calibration taken now."""
    calibration = calibrate(torch.device("cpu"))
    repriced = []
    for row in rows:
        events = kept_events(row)
        priced = estimate_again(events, row, priced_for(row, events, calibration))
        same_step = priced.overhead_us / (row["real ms"] * 1e3)
        repriced.append(dict(
            row, tool=priced.fraction, interval=priced.interval, borderline=borderline(priced.interval),
            verdict=verdict(priced.fraction), **{"tool same step": same_step, "tool / twin": same_step / row["twin"]},
        ))  # fmt: skip
    return repriced


def explain(rows: list[dict[str, Any]]) -> str:
    """Where each estimate's error comes from: the priced events and the Python gap, beside the twin's gap.

    The twin's trace is read as the real one is: its least Python gap per step is what the glue between
    the same ops costs with next to no data, beside the gap of the real step and of the step replayed.
    """
    calibration, table = calibrate(torch.device("cpu")), []
    for row in rows:
        real = kept_events(row)
        mode = row["case"].split()[1]  # results written before the twin's trace was recorded: it sits beside the real one
        twin_path = row.get("twin trace") or str(Path(row["trace"]).with_name(f"{mode}-twin-bs1.pt.trace.json.gz"))
        twin = overhead_events_of_trace(twin_path, timed_ms=row.get("twin trace steps ms", ()))
        row_calibration = priced_for(row, real, calibration)
        prices, priced = row_calibration.prices, estimate_again(real, row, row_calibration)
        events = {kind: priced.events_per_step[kind] * prices.of(kind) for kind in EVENT_KINDS}
        events["set-up"] = sum(priced.events_per_step[kind] * prices.of(kind) for kind in PRICED_KINDS if kind not in EVENT_KINDS)
        # The same events with the Python gap the twin shows: what the pricing gives with the gap read right.
        twin_python = max(0.0, twin.least_gap_us - priced.events_per_step["call"] * prices.call_gap_us)
        truth_us = row["twin"] * row["real ms"] * 1e3
        table.append((
            row["case"], f"{truth_us:.0f}", f"{priced.overhead_us:.0f}",
            *(f"{us:.0f}" for us in events.values()), f"{priced.python_us:.0f}", f"{real.least_gap_us:.0f}",
            f"{row.get('warm gap') or 0:.0f}", f"{twin.least_gap_us:.0f}",
            f"{real.least_gap_us / twin.least_gap_us:.2f}" if twin.least_gap_us else "",
            f"{priced.overhead_us / truth_us:.2f}", f"{(sum(events.values()) + twin_python) / truth_us:.2f}",
        ))  # fmt: skip
    return tabulate(table, headers=["case", "truth µs", "tool µs", "calls µs", "nested µs", "autograd µs", "set-up µs", "Python µs",
                                    "real gap µs", "replayed gap µs", "twin gap µs", "real gap / twin's", "tool/truth",
                                    "at twin's gap / truth"], disable_numparse=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="labels as listed in CASES, comma-separated")
    parser.add_argument("--decode", action="store_true", help="the decode cases (DECODE_TWINS), recorded under a part of their own")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the cores are shared)")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="verdict_accuracy_"), help="where the traces and results.json go")
    parser.add_argument("--reprice", metavar="RESULTS_JSON", help="price a run's kept traces again (see above)")
    parser.add_argument("--explain", metavar="RESULTS_JSON", help="break a run's estimates down against its twins' traces")
    parser.add_argument("--no-detailed", action="store_true", help="the tool's estimate without the detailed profile")
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    steady_process()
    torch.set_num_threads(args.threads)
    if args.explain:
        print(explain(json.loads(Path(args.explain).read_text(encoding="utf-8"))))
        return
    rows = []
    if args.reprice:
        rows = reprice(json.loads(Path(args.reprice).read_text(encoding="utf-8")))
    if args.decode:
        rows = decode_rows(args.rounds, Path(args.out))
    for label in [] if args.reprice or args.decode else args.cases.split(","):
        # A folder per case: two batch sizes of one model would write the same trace names.
        result = measure(CASES[label], args.rounds, Path(args.out) / label.replace(" ", "_").replace("=", ""), not args.no_detailed)
        print(result, flush=True)
        rows.append(result)
        (Path(args.out) / "results.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    table = render(rows, decode=args.decode)
    profiles = "the light profile only (--no-detailed)" if args.no_detailed else "both profiles"
    notes = (
        f"{sum(map(within, rows))} of {len(rows)} cases within {FACTOR}x of the twin's share, {sum(map(met, rows))} met "
        f"(within {FACTOR}x, or an interval that holds the twin's share with no verdict it contradicts); "
        f"{args.rounds} interleaved rounds, medians; torch threads {args.threads}; {profiles}."
    )
    if not args.decode:
        widest = max(rows, key=lambda r: r["interval"][1] - r["interval"][0])
        notes += (
            f" Intervals holding the truth at the tool's step: {sum(map(holds_truth, rows))} of {len(rows)}{misses(rows)}; the widest "
            f"{100 * (widest['interval'][1] - widest['interval'][0]):.1f} points ({widest['case']}); borderline rows whose "
            f"truth lies more than 10 points from a threshold: {sum(map(borderline_far, rows))} of {sum(bool(r['borderline']) for r in rows)}."
        )
    part = "Decode steps" if args.decode else None if args.threads == 1 else f"At {args.threads} threads"
    if args.no_detailed:
        part = f"{part or 'At 1 thread'}, light profile only"
    record("Verdict accuracy", table, notes, part=part, dry_run=args.dry_run)


if __name__ == "__main__":
    main()
