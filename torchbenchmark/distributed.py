"""DistributedDataParallel cases: a train case run by N ranks through ``torch.distributed.run``.

``run_case`` (in the case's process) starts ``python -m torch.distributed.run --standalone
--nproc-per-node N -m torchbenchmark.distributed --request ...`` and waits. Each rank builds the model,
wraps its module in DDP, characterises its steps with the single-process harness (every rank runs the
same number of steps: a DDP step is a collective, so each decision the harness takes from a clock is
agreed between ranks), profiles them into a trace of its own, and rank 0 gathers every rank's figures
into the case's row. Under a multi-node ``torchrun`` the same module runs without ``--request`` (see
``main``), and rank 0 writes a run record of its own.

A rank that raises writes why to ``rank<R>.error.json``, and torchrun stops the others. A rank that
hangs stalls the others at their next collective; the launcher stops waiting at the case's deadline,
names the rank that got least far (from each rank's ``rank<R>.status.json``), and kills each rank's
session: torchrun starts every rank in a session of its own, out of reach of a kill of the case's.
A rank also asks the kernel to kill it when torchrun dies.
"""

from __future__ import annotations

import os

PARENT_PID = os.getppid()  # before the heavy imports: a rank checks its launcher is still this one

import argparse  # noqa: E402
import contextlib  # noqa: E402
import ctypes  # noqa: E402
import dataclasses  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import shlex  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from torchbenchmark import dispatch, storage  # noqa: E402
from torchbenchmark.diagnose import describe_failure  # noqa: E402
from torchbenchmark.harness import characterise  # noqa: E402
from torchbenchmark.profiling import run_profile  # noqa: E402
from torchbenchmark.registry import meta_of, model_class  # noqa: E402
from torchbenchmark.results import CaseResult, Dispatch, Distributed, RankFigures, Samples, StepTime  # noqa: E402
from torchbenchmark.spec import Budget, CaseSpec  # noqa: E402
from torchbenchmark.stats import relative_change_pct  # noqa: E402
from torchbenchmark.trace_analysis import load_events, overhead_events_of_trace, summarize_comm, summarize_trace  # noqa: E402

log = logging.getLogger(__name__)

BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
# Each rank's progress, in order: a hung case is blamed on the rank that got least far.
PHASES = ("start", "init", "build", "wrap", "characterise", "profile", "analyse", "gather", "done")
OVERLAP_THRESHOLD_PCT = 10.0  # comm_overlaps_backward: at least this share of collective time hidden by compute
STOP_GRACE_S = 5.0  # after SIGTERM, how long torchrun gets to stop its ranks before everything is killed
# The case's process is killed at spec.timeout_s from its start: the launcher stops waiting this much
# earlier, so it can still say which rank hung and kill the ranks itself.
DEADLINE_MARGIN_FRACTION = 0.15
MIN_DEADLINE_MARGIN_S = 5.0


# The case's process: launch, wait, turn whatever happened into a row ---------------------------------


def run_case(spec: CaseSpec, out_dir: Path) -> CaseResult:
    """Run ``spec`` as DistributedDataParallel with ``spec.world_size`` ranks on this machine."""
    name = _model_name(spec.model)
    base: dict[str, Any] = {"model": name, "mode": spec.mode, "device": spec.device_type, "variant": spec.variant}
    started = time.perf_counter()
    margin = max(MIN_DEADLINE_MARGIN_S, DEADLINE_MARGIN_FRACTION * spec.timeout_s)
    deadline_s = max(1.0, spec.timeout_s - margin)
    with tempfile.TemporaryDirectory(prefix="torchbenchmark-ddp-") as folder:
        scratch = Path(folder)
        request = {"spec": spec.to_json(), "out_dir": str(Path(out_dir).resolve()), "scratch": folder}
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={spec.world_size}",
            "--max-restarts=0", "-m", "torchbenchmark.distributed", "--request", json.dumps(request),
        ]  # fmt: skip
        log.info("launching: %s", shlex.join(command[:6] + ["-m", "torchbenchmark.distributed", "--request", "..."]))
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=_launch_environment(spec))
        try:
            returncode: int | None = process.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            stop_ranks(process, scratch)
        timings = {"total": round(time.perf_counter() - started, 3)}
        if returncode is None:
            reason = f"no result after {deadline_s:g} s: {_laggard(scratch, spec.world_size)}; every rank killed"
            return CaseResult(**base, status="timeout", error=reason, timings_s=timings)
        row = _read_json(scratch / "result.json")
        if returncode == 0 and row is not None:
            row["timings_s"] = {**row.get("timings_s", {}), "launch": timings["total"]}
            return CaseResult.from_dict(row)
        status, reason = _rank_failure(scratch, spec.world_size, returncode)
        return CaseResult(**base, status=status, error=reason, timings_s=timings)


def stop_ranks(process: subprocess.Popen[Any], scratch: Path) -> None:
    """Stop torchrun (it stops its ranks), then kill the session of every rank still there."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for path in scratch.glob("rank*.status.json"):
        status = _read_json(path) or {}
        pid = status.get("pid")
        # Only a process whose command line holds this case's scratch folder: a pid can be reused.
        if isinstance(pid, int) and _command_line(pid).find(str(scratch)) >= 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def _launch_environment(spec: CaseSpec) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(spec.threads or 1))  # torchrun's own default, without its warning
    return env


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


PEER_FAILURE_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "remote worker")


def _peer_failure(reason: str) -> bool:
    """True when a rank's error says another rank went away, not what went wrong in it."""
    return any(marker in reason for marker in PEER_FAILURE_MARKERS)


def _rank_failure(scratch: Path, world_size: int, returncode: int) -> tuple[str, str]:
    """The status and reason of a case whose torchrun failed: the first rank that failed of its own accord.

    A rank whose peer died sees its collective fail ("Connection closed by peer"): that is a consequence,
    so a rank that failed for another reason is named first, whatever the order their reports were written.
    """
    errors = [error for rank in range(world_size) if (error := _read_json(scratch / f"rank{rank}.error.json"))]
    if errors:
        first = min(errors, key=lambda error: (_peer_failure(str(error.get("reason", ""))), error.get("at", 0.0)))
        return first.get("status", "failed"), f"rank {first['rank']}: {first['reason']}"
    # No rank said why: it died (killed by a signal, or exited without raising); torchrun's log names it.
    return "failed", f"torchrun exited with status {returncode} and no rank reported why; {_laggard(scratch, world_size)} (see the log)"


def _laggard(scratch: Path, world_size: int) -> str:
    """Which rank got least far, by the phases their status files reached."""
    reached = {}
    for rank in range(world_size):
        status = _read_json(scratch / f"rank{rank}.status.json") or {}
        reached[rank] = status.get("phase", "not started")
    order = {phase: index for index, phase in enumerate(("not started", *PHASES))}
    last = min(reached, key=lambda rank: order.get(reached[rank], 0))
    others = ", ".join(f"rank {rank} {phase}" for rank, phase in reached.items() if rank != last)
    return f"rank {last} got least far ({reached[last]}; {others})"


def _model_name(spec: str) -> str:
    try:
        return meta_of(model_class(spec)).name
    except Exception:  # noqa: BLE001 - the ranks report why it cannot load
        return spec.rpartition(":")[2] or spec


# A rank ------------------------------------------------------------------------------------------------


class _Status:
    """This rank's pid and phase, in ``scratch/rank<R>.status.json`` (nowhere without a scratch folder)."""

    def __init__(self, scratch: Path | None, rank: int) -> None:
        self.path = None if scratch is None else scratch / f"rank{rank}.status.json"

    def __call__(self, phase: str) -> None:
        if self.path is not None:
            storage.write_atomic(self.path, json.dumps({"pid": os.getpid(), "phase": phase}))


def _die_with_launcher() -> None:
    """Ask Linux to SIGKILL this rank when torchrun dies (killed with the case), and exit if it already has."""
    if sys.platform != "linux":
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != PARENT_PID:
        os._exit(1)


def _agree(device: torch.device) -> Any:
    """The harness's ``Agree`` across the process group: the element-wise max over every rank."""

    def agree(values: Sequence[float]) -> list[float]:
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    return agree


def wrap(model: Any, device: torch.device) -> None:
    """Replace the model's module by its DistributedDataParallel wrapper (its optimizers keep their parameters)."""
    from torch.nn.parallel import DistributedDataParallel

    if isinstance(model.module, (torch.nn.ModuleDict, torch.nn.ModuleList)):
        raise NotImplementedError("DistributedDataParallel wraps a module called whole; this model drives several networks itself")
    model.module = DistributedDataParallel(model.module, device_ids=[device.index] if device.type == "cuda" else None)


def trace_path(spec: CaseSpec, device: torch.device, name: str, rank: int) -> str:
    """``<model>/train-cpu-ddp2-rank<R>.pt.trace.json.gz``, relative to the output folder."""
    return f"{name}/{spec.file_stem}-rank{rank}.pt.trace.json.gz"


def run_rank(spec: CaseSpec, out_dir: Path, scratch: Path | None) -> CaseResult | None:
    """This rank's part of the case; rank 0 returns the case's row, the others None."""
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    status = _Status(scratch, rank)
    status("init")
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}") if spec.device_type == "cuda" else torch.device("cpu")
    backend = BACKENDS[device.type]
    timings: dict[str, float] = {}
    started = time.perf_counter()
    # Calibrated before the group forms, on rank 0 alone: the others wait at the rendezvous, idle.
    calibration = dispatch.calibrate(device) if rank == 0 else None
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=spec.timeout_s),
                            device_id=device if device.type == "cuda" else None)  # fmt: skip
    try:
        agree = _agree(device)
        status("build")
        cls = model_class(spec.model)
        meta = meta_of(cls)
        model = cls(device=str(device), batch_size=spec.batch_size)
        status("wrap")
        wrap(model, device)
        timings["build"] = round(time.perf_counter() - started, 3)
        status("characterise")
        measured = characterise(model, spec.mode, spec.budget, device, agree)
        status("profile")
        active = int(agree([spec.budget.profiled_steps("light", measured.steps.median_ms)])[0])
        relative = trace_path(spec, device, meta.name, rank)
        profiled = run_profile(model, spec.mode, device, "light", active, out_dir / relative)
        status("analyse")
        comm = summarize_comm(load_events(profiled.trace_path))
        figures = RankFigures(rank, socket.gethostname(), measured.steps.median_ms, comm.comm_pct, comm.exposed_comm_pct, relative)
        mine = (figures, comm.overlap_pct, measured, profiled.steps.median_ms)
        status("gather")
        gathered: list[Any] = [None] * world_size if rank == 0 else []
        dist.gather_object(mine, gathered if rank == 0 else None, dst=0)
        # Every rank past the gather before any tears the group down: a rank that left while another still
        # held its connections died in gloo's teardown ("terminate called without an active exception").
        dist.barrier()
    finally:
        dist.destroy_process_group()
    timings["total"] = round(time.perf_counter() - started, 3)
    status("done")
    if rank != 0:
        return None
    light = summarize_trace(profiled.trace_path, top=spec.top_ops)
    priced = dispatch.estimate(overhead_events_of_trace(profiled.trace_path), calibration, measured.steps.median_ms,
                               measured.steps.iqr_ms)  # fmt: skip
    return _row(spec, meta, model, device, backend, calibration, priced, light, gathered, timings)


def _row(
    spec: CaseSpec, meta: Any, model: Any, device: torch.device, backend: str, calibration: Any, priced: Any,
    light: Any, gathered: list[Any], timings: dict[str, float],
) -> CaseResult:  # fmt: skip
    """The case's row, on rank 0: the slowest rank's step time, rank 0's profile, every rank's figures."""
    ranks = [figures for figures, *_ in gathered]
    slowest = max(gathered, key=lambda item: item[0].step_median_ms)
    measured = slowest[2]
    steps = measured.steps
    medians = [figures.step_median_ms for figures in ranks]
    overlap = statistics.fmean(item[1] for item in gathered)
    distributed = Distributed(
        world_size=len(ranks),
        backend=backend,
        nodes=len({figures.host for figures in ranks}),
        ranks=tuple(ranks),
        skew_pct=relative_change_pct(max(medians), min(medians)),
        comm_pct=statistics.fmean(figures.comm_pct for figures in ranks),
        exposed_comm_pct=statistics.fmean(figures.exposed_comm_pct for figures in ranks),
        overlap_pct=overlap,
        comm_overlaps_backward=overlap >= OVERLAP_THRESHOLD_PCT,
    )
    fraction = priced.fraction  # rank 0's profile, priced per event (torchbenchmark.dispatch)
    if light.gpu_busy_fraction is not None:
        fraction = 1.0 - light.gpu_busy_fraction
    batch = model.batch_size(spec.mode) if callable(getattr(model, "batch_size", None)) else spec.batch_size
    return CaseResult(
        model=meta.name, mode=spec.mode, device=device.type, variant=spec.variant, status="ok", batch_size=batch,
        family=meta.family,
        step_time=StepTime(steps.median_ms, steps.iqr_ms, steps.min_ms, steps.n),
        light_distortion_pct=relative_change_pct(gathered[0][3], gathered[0][2].steps.median_ms),
        edge_distortion_pct=measured.edge_distortion_pct,
        phases_pct=light.phases_pct if meta.annotated else None,
        dispatch=Dispatch(dispatch.verdict(fraction), min(1.0, fraction), light.ops_per_step, light.median_op_us,
                          calibration.prices.call_us, overhead_fraction_uncapped=fraction),  # fmt: skip
        gpu_busy_pct=None if light.gpu_busy_fraction is None else 100.0 * light.gpu_busy_fraction,
        top_ops=light.top_ops,
        traces={"light": ranks[0].trace, "detailed": None},
        warmup_steps=measured.warmup_steps, steady=measured.steady, windows=measured.windows,
        window_diff_pct=measured.window_diff_pct, windows_agree=measured.windows_agree,
        samples=Samples((steps.median_ms,), (measured.window_medians_ms,)),
        timings_s=timings,
        distributed=distributed,
    )  # fmt: skip


# Entry point of every rank -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torchbenchmark.distributed",
        description="One rank of a DistributedDataParallel train case; run it under torchrun on every node.",
    )
    parser.add_argument("model", nargs="?", help="a registered name or plug-in spec")
    parser.add_argument("--out", default="traces", help="output folder on each node (default: traces)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch-size", type=int, help="per rank (default: the model's)")
    parser.add_argument("--steps", type=int, help="measure one window of exactly this many steps")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank (default: 1)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a collective may wait (default: 1800)")
    parser.add_argument("--request", help=argparse.SUPPRESS)  # from run_case: the spec and where to report
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """A rank: run the case, report an error as this rank's; rank 0 writes the row."""
    _die_with_launcher()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"[rank {os.environ.get('RANK', '?')}] %(levelname)s %(message)s")
    if args.request:
        request = json.loads(args.request)
        spec, out_dir, scratch = CaseSpec.from_json(request["spec"]), Path(request["out_dir"]), Path(request["scratch"])
    elif args.model:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        spec = CaseSpec(model=args.model, mode="train", device=args.device, batch_size=args.batch_size,
                        budget=Budget(steps=args.steps), threads=args.threads, timeout_s=args.timeout,
                        world_size=world_size)  # fmt: skip
        out_dir, scratch = Path(args.out), None
    else:
        build_parser().error("name a model (or run through diagnostics.py --ddp N)")
    from torchbenchmark.steady import steady_process

    rank = int(os.environ["RANK"])
    _Status(scratch, rank)("start")
    torch.set_num_threads(spec.threads or 1)
    steady_process()
    try:
        row = run_rank(spec, out_dir, scratch)
    except Exception as error:  # noqa: BLE001 - reported as this rank's reason, then torchrun stops the others
        failed_at = time.time()  # before the traceback is logged: the order of failures is what is kept
        status, reason = describe_failure(error, spec.mode)
        log.error("%s", reason, exc_info=status == "failed")
        if scratch is not None:
            storage.write_atomic(scratch / f"rank{rank}.error.json",
                                 json.dumps({"rank": rank, "status": status, "reason": reason, "at": failed_at}))  # fmt: skip
        return 1
    if row is None:
        return 0
    if scratch is not None:
        storage.write_atomic(scratch / "result.json", json.dumps(row.to_dict()))
    else:
        path = write_record(out_dir, spec, row)
        print(f"[torchbenchmark] {row!r}; record: {path}", file=sys.stderr)
    return 0


def write_record(out_dir: Path, spec: CaseSpec, row: CaseResult) -> Path:
    """A multi-node run's record, written by rank 0 as a sweep would, and the summary view rebuilt."""
    from torchbenchmark.environment import collect_environment
    from torchbenchmark.summary import render_summary_json, render_text

    command = shlex.join(["torchrun", "...", "-m", "torchbenchmark.distributed", *sys.argv[1:]])
    environment = collect_environment(spec.device, spec.threads, command)
    record = storage.RunRecord(storage.new_run_id(), environment, command, state="complete",
                               ended_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))  # fmt: skip
    record = dataclasses.replace(record, rows=(dataclasses.replace(row, run_id=record.run_id),))
    path = storage.write_record(out_dir, record)
    view = storage.summary_of_records(storage.read_records(out_dir), str(out_dir))
    storage.write_atomic(out_dir / storage.SUMMARY_JSON, render_summary_json(view))
    storage.write_atomic(out_dir / storage.SUMMARY_TXT, render_text(view, record.run_id))
    return path


if __name__ == "__main__":
    sys.exit(main())
