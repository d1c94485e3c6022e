"""The summary: the rendered table is pinned by a golden file, JSON round-trips, non-finite figures are null."""

from __future__ import annotations

import json
from pathlib import Path

from torchbenchmark.results import CaseResult, Costs, Dispatch, StepTime, TopOp
from torchbenchmark.summary import render_json, render_table

GOLDEN = Path(__file__).parent / "data" / "summary_golden.txt"

ROWS = [
    CaseResult(
        model="resnet50", mode="train", device="cpu", status="ok", batch_size=8, family="vision-classification",
        step_time=StepTime(median_ms=812.345, iqr_ms=12.5, min_ms=799.0, n=5),
        light_distortion_pct=1.234, detailed_distortion_pct=48.7, edge_distortion_pct=0.42,
        phases_pct={"forward": 33.3, "backward": 62.1, "optimizer": 4.2},
        dispatch=Dispatch("compute-bound", 0.0071, 4315.0, 28.6, 1.3),
        top_ops=(TopOp("aten::convolution_backward", 380.0, 53.0, 46.8),),
        traces={"light": "resnet50/train-cpu.pt.trace.json.gz", "detailed": "resnet50/train-cpu-detailed.pt.trace.json.gz"},
        warmup_steps=7, steady=True, windows=2, window_diff_pct=0.8, windows_agree=True,
        costs=Costs(
            flops_per_step=194392621056, flops_by_kind={"matmul": 98304000, "convolution": 194294317056}, flops_note=None,
            achieved_gflops=239.3, pct_of_peak=79.8, compute_limit="arithmetic", peak_memory_mb=947.3,
            state_memory_mb=209.5, memory_method="test", peak_rss_mb=1650.2, samples_per_s=9.848,
        ),
    ),
    CaseResult(
        model="pyhpc_equation_of_state", mode="eval", device="cpu", status="ok", batch_size=1024, family="scientific",
        step_time=StepTime(median_ms=0.0567, iqr_ms=0.0031, min_ms=0.0512, n=500),
        light_distortion_pct=85.0, detailed_distortion_pct=903.0, edge_distortion_pct=37.5,
        phases_pct={"forward": 97.0, "backward": 0.0, "optimizer": 0.0},
        dispatch=Dispatch("dispatch-bound", 1.0, 150.0, 1.9, 1.3), warmup_steps=60, steady=False,
        costs=Costs(
            flops_per_step=None, flops_by_kind={}, flops_note="no matrix product, convolution or attention op",
            achieved_gflops=None, pct_of_peak=None, compute_limit=None, peak_memory_mb=1.15, state_memory_mb=0.9,
            memory_method="test", peak_rss_mb=402.0, samples_per_s=18059964.7,
        ),
    ),
    CaseResult(
        model="dcgan", mode="train", device="cpu", status="ok", batch_size=32, family="gan",
        step_time=StepTime(median_ms=95.25, iqr_ms=3.1, min_ms=90.0, n=32),
        light_distortion_pct=-0.4, detailed_distortion_pct=20.1, edge_distortion_pct=0.1,
        dispatch=Dispatch("mixed", 0.31, 385.0, 28.1, 1.3), warmup_steps=9, steady=True,
        windows=3, window_diff_pct=7.4, windows_agree=False,
    ),
    CaseResult(model="dlrm", mode="train", device="cpu", status="failed", error="out of memory; try a smaller --batch-size (MemoryError: )"),
    CaseResult(model="hang", mode="eval", device="cpu", status="timeout", error="no result after 5 s; process tree killed"),
    CaseResult(model="eos", mode="train", device="cpu", status="skipped", error="train not supported: no parameters"),
    CaseResult(model="vgg16", mode="eval", device="cpu", status="interrupted", error="interrupted by SIGINT"),
]
ENVIRONMENT = {"started_at": "2026-01-01T00:00:00+00:00", "torch": "2.14.1", "device_name": "Test CPU", "threads": 2}


def test_table_matches_golden() -> None:
    assert render_table(ROWS) + "\n" == GOLDEN.read_text(encoding="utf-8")


def test_json_has_the_pinned_fields_and_round_trips() -> None:
    document = json.loads(render_json(ROWS, ENVIRONMENT))
    assert document["environment"] == ENVIRONMENT
    row = next(r for r in document["results"] if r["model"] == "resnet50")
    assert row["step_time_ms"] == {"median": 812.345, "iqr": 12.5, "min": 799.0, "n": 5}
    assert row["profiler_distortion_pct"] == {"light": 1.234, "detailed": 48.7}
    assert row["phases_pct"] == {"forward": 33.3, "backward": 62.1, "optimizer": 4.2}
    assert set(row["dispatch"]) >= {"verdict", "overhead_fraction", "ops_per_step", "median_op_us"}
    assert row["traces"] == {"light": "resnet50/train-cpu.pt.trace.json.gz", "detailed": "resnet50/train-cpu-detailed.pt.trace.json.gz"}
    assert row["measurement"] == {"windows": 2, "diff_pct": 0.8, "agree": True}
    assert (row["flops_per_step"], row["achieved_gflops"], row["pct_of_peak"], row["peak_memory_mb"], row["samples_per_s"]) == (
        194392621056, 239.3, 79.8, 947.3, 9.848,
    )
    assert row["flops_by_kind"] == {"matmul": 98304000, "convolution": 194294317056}
    failed = next(r for r in document["results"] if r["status"] == "failed")
    for key in ("model", "mode", "device", "batch_size", "status", "error", "step_time_ms", "edge_distortion_pct", "dispatch", "traces",
                "flops_per_step", "achieved_gflops", "pct_of_peak", "peak_memory_mb", "samples_per_s"):
        assert key in failed
    assert [CaseResult.from_dict(r) for r in document["results"]] == sorted(ROWS, key=lambda r: (r.model.lower(), r.mode))


def test_non_finite_figures_become_null() -> None:
    row = CaseResult(model="m", mode="eval", device="cpu", status="ok", edge_distortion_pct=float("inf"))
    assert json.loads(render_json([row], {}))["results"][0]["edge_distortion_pct"] is None


def test_repr_reads_as_a_sentence() -> None:
    assert repr(ROWS[0]) == "CaseResult(resnet50 train cpu bs=8: 812 ms/step (IQR 12.5 ms), compute-bound (overhead 1%))"
    assert repr(ROWS[3]).startswith("CaseResult(dlrm train cpu: failed (out of memory")
