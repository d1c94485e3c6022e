"""One rank of a DistributedDataParallel train case: ``python -m torchbenchmark.run.rank`` under torchrun.

Each rank builds the model, wraps its module in DDP, characterises its steps with the single-process
harness (every decision the harness takes from a clock is agreed between ranks, since a DDP step is a
collective), profiles them into a trace of its own, and rank 0 gathers every rank's figures into the
case's row. Launched by ``run.ddp`` it reports to the case's scratch folder; under a multi-node
``torchrun`` of the user's (``python -m torchbenchmark.distributed MODEL``) rank 0 writes a run record.
A rank asks the kernel to kill it when torchrun dies.
"""

from __future__ import annotations

import os

PARENT_PID = os.getppid()  # before the heavy imports: a rank checks its launcher is still this one

import argparse  # noqa: E402
import ctypes  # noqa: E402
import dataclasses  # noqa: E402
import datetime  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import shlex  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from torchbenchmark.analyze import verdict  # noqa: E402
from torchbenchmark.analyze.comm import summarize_comm  # noqa: E402
from torchbenchmark.analyze.pricing import Calibration  # noqa: E402
from torchbenchmark.analyze.stats import relative_change_pct  # noqa: E402
from torchbenchmark.analyze.trace import load_events  # noqa: E402
from torchbenchmark.measure.environment import collect_environment  # noqa: E402
from torchbenchmark.measure.harness import Characterisation, Pace, characterise  # noqa: E402
from torchbenchmark.measure.profiling import run_profile  # noqa: E402
from torchbenchmark.measure.schedstat import cpu_share  # noqa: E402
from torchbenchmark.measure.steady import steady_process  # noqa: E402
from torchbenchmark.registry import meta_of, model_class  # noqa: E402
from torchbenchmark.results.files import write_atomic  # noqa: E402
from torchbenchmark.results.records import RunRecord, RunState, new_run_id, timestamp  # noqa: E402
from torchbenchmark.results.schema import CaseResult, Distributed, RankFigures, Status  # noqa: E402
from torchbenchmark.results.spec import DEFAULT_OUT, DEFAULT_TIMEOUT_S, Budget, CaseRequest, CaseSpec  # noqa: E402
from torchbenchmark.run import ddp, engine, outdir  # noqa: E402
from torchbenchmark.run.failures import describe_failure  # noqa: E402
from torchbenchmark.run.prices import CasePrices  # noqa: E402

log = logging.getLogger(__name__)
BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
OVERLAP_THRESHOLD_PCT = 10.0  # comm_overlaps_backward: at least this share of collective time hidden by compute


class _Status:
    """This rank's pid, phase (and the harness's step within it) and collectives entered, in
    ``rank<R>.status.json`` (nowhere without a scratch folder)."""

    def __init__(self, scratch: Path | None, rank: int) -> None:
        self.path = None if scratch is None else ddp.status_path(scratch, rank)
        self.phase = "start"
        self.detail = ""
        self.collectives = 0

    def __call__(self, phase: str | None = None) -> None:
        if phase and phase != self.phase:
            self.phase, self.detail = phase, ""
        if self.path is not None:
            status = {"pid": os.getpid(), "phase": self.phase, "detail": self.detail, "collectives": self.collectives}
            write_atomic(self.path, json.dumps(status))

    def announce(self, detail: str) -> None:
        """The harness's own phase within this one (warming up, measuring window k): the launcher shows it."""
        self.detail = detail
        self()


def _die_with_launcher() -> None:
    """Ask Linux to SIGKILL this rank when torchrun dies (killed with the case), and exit if it already has."""
    if sys.platform != "linux":
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != PARENT_PID:
        os._exit(1)


def _agree(device: torch.device, status: _Status) -> Any:
    """The harness's ``Agree`` across the process group: the element-wise max over every rank."""

    def agree(values: Sequence[float]) -> list[float]:
        status.collectives += 1
        status()
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return list(tensor.tolist())

    return agree


def wrap(model: Any, device: torch.device) -> None:
    """Replace the model's module by its DistributedDataParallel wrapper (its optimizers keep their parameters)."""
    from torch.nn.parallel import DistributedDataParallel

    if not isinstance(getattr(model, "module", None), torch.nn.Module):
        raise NotImplementedError("DistributedDataParallel wraps the model's `module`, and this model exposes none")
    if isinstance(model.module, (torch.nn.ModuleDict, torch.nn.ModuleList)):
        raise NotImplementedError("DistributedDataParallel wraps a module called whole; this model drives several networks itself")
    model.module = DistributedDataParallel(model.module, device_ids=[device.index] if device.type == "cuda" else None)


@dataclasses.dataclass(frozen=True)
class RankRun:
    """What one rank measured, gathered on rank 0."""

    figures: RankFigures
    overlap_pct: float
    measured: Characterisation


def _device(spec: CaseSpec) -> torch.device:
    return torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}") if spec.device_type == "cuda" else torch.device("cpu")


# The seconds between the calibration's moments on rank 0 (``_calibration``).
MOMENT_SPACING_S = 0.5


def _calibration(device: torch.device, path: str | None) -> Calibration:
    """The prices, at three moments as a single case's are (``run.engine``), ``MOMENT_SPACING_S`` apart, before the
    group forms: on rank 0 alone, the others waiting at the rendezvous, idle, where in the case every rank runs."""
    prices = CasePrices(device, path)
    if prices.calibrating is not None:  # prices read from a file are taken as they are
        for _ in range(2):
            time.sleep(MOMENT_SPACING_S)
            prices.moment()
    return prices.taken()[0]


def run_rank(spec: CaseSpec, out_dir: Path, status: _Status) -> CaseResult | None:
    """This rank's part of the case; rank 0 returns the case's row, the others None."""
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = _device(spec)
    status("init")
    started = time.perf_counter()
    calibration = _calibration(device, spec.calibration) if rank == 0 else None
    dist.init_process_group(
        BACKENDS[device.type], timeout=datetime.timedelta(seconds=spec.timeout_s), device_id=device if device.type == "cuda" else None
    )
    try:
        pace = Pace.on(device, _agree(device, status), announce=status.announce)
        status("build")
        meta = meta_of(model_class(spec.model))
        model = model_class(spec.model)(device=str(device), batch_size=spec.batch_size)
        status("wrap")
        wrap(model, device)
        timings = {"build": round(time.perf_counter() - started, 3)}
        status("characterise")
        measured = characterise(model, spec.mode, spec.budget, pace)
        status("profile")
        active = int(pace.agree([spec.budget.profiled_steps("light", measured.steps.median_ms)])[0])
        relative = f"{meta.name}/{outdir.rank_trace_name(outdir.spec_stem(spec), rank)}"
        profiled = run_profile(model, spec.mode, device, "light", active, out_dir / relative)
        status("analyse")
        comm = summarize_comm(load_events(profiled.trace_path))
        figures = RankFigures(rank, socket.gethostname(), measured.steps.median_ms, comm.comm_pct, comm.exposed_comm_pct, relative)
        status("gather")
        gathered: list[Any] = [None] * world_size if rank == 0 else []
        dist.gather_object(RankRun(figures, comm.overlap_pct, measured), gathered if rank == 0 else None, dst=0)
        # Every rank past the gather before any tears the group down: a rank that left while another still
        # held its connections died in gloo's teardown.
        dist.barrier()
    finally:
        dist.destroy_process_group()
    timings["total"] = round(time.perf_counter() - started, 3)
    status("done")
    if rank != 0 or calibration is None:
        return None
    batch = model.batch_size(spec.mode) if callable(getattr(model, "batch_size", None)) else spec.batch_size
    row = CaseResult(model=meta.name, mode=spec.mode, device=spec.device_type, status=Status.OK, variant=spec.variant)
    row = dataclasses.replace(row, batch_size=batch, family=meta.family)
    zero = engine.Measured(batch, measured, calibration, profiles={"light": profiled})
    return _row(spec, row, meta, zero, gathered, out_dir, timings)


def _distributed(backend: str, gathered: Sequence[RankRun]) -> Distributed:
    ranks = tuple(run.figures for run in gathered)
    medians = [figures.step_median_ms for figures in ranks]
    overlap = statistics.fmean(run.overlap_pct for run in gathered)
    exposed = statistics.fmean(figures.exposed_comm_pct for figures in ranks)
    return Distributed(
        world_size=len(ranks),
        backend=backend,
        nodes=len({figures.host for figures in ranks}),
        ranks=ranks,
        skew_pct=relative_change_pct(max(medians), min(medians)),
        comm_pct=statistics.fmean(figures.comm_pct for figures in ranks),
        exposed_comm_pct=exposed,
        overlap_pct=overlap,
        comm_overlaps_backward=overlap >= OVERLAP_THRESHOLD_PCT,
        reading=verdict.comm_reading(exposed),
        step_time_ms_per_rank=tuple(medians),
    )


def _row(
    spec: CaseSpec,
    row: CaseResult,
    meta: Any,
    zero: engine.Measured,
    gathered: Sequence[RankRun],
    out_dir: Path,
    timings: dict[str, float],
) -> CaseResult:
    """The case's row, on rank 0, made by the single-process engine: rank 0's profile and prices (``zero``) against
    the slowest rank's steps (a DDP step is as slow as its slowest rank), with every rank's figures beside.

    What a rank cannot take is absent, as in a single process without it: the warm replay and the costs (each
    runs steps of one rank alone, which would leave the others waiting in DDP's all-reduce), and the detailed
    profile, so the interval's low end counts the ops alone and the overhead is not placed in modules.
    """
    slowest = max(gathered, key=lambda run: run.figures.step_median_ms).measured
    measured = dataclasses.replace(zero, characterisation=slowest)
    analysed = engine.analyse(spec, measured, out_dir, meta)
    analysed = engine.attributed(spec, measured, analysed, meta.name)
    row = engine.assemble(row, measured, analysed, out_dir, timings)
    return dataclasses.replace(row, distributed=_distributed(BACKENDS[_device(spec).type], gathered))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torchbenchmark.distributed",
        description="One rank of a DistributedDataParallel train case; run it under torchrun on every node.",
    )
    parser.add_argument("model", nargs="?", help="a registered name or plug-in spec")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output folder on each node (default: {DEFAULT_OUT})")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch-size", type=int, help="per rank (default: the model's)")
    parser.add_argument("--steps", type=int, help="measure one window of exactly this many steps")
    parser.add_argument(
        "--threads", type=int, help="intra-op threads per rank (default: its share of the node's CPUs, CPUs / ranks a node)"
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help=f"seconds a collective may wait (default: {DEFAULT_TIMEOUT_S:g})"
    )
    parser.add_argument("--request", help=argparse.SUPPRESS)  # from run.ddp: the spec and where to report
    return parser


def _request(argv: Sequence[str] | None) -> CaseRequest:
    args = build_parser().parse_args(argv)
    if args.request:
        return CaseRequest.from_json(args.request)
    if not args.model:
        build_parser().error("name a model (or run through diagnostics.py --ddp N)")
    spec = CaseSpec(
        model=args.model,
        mode="train",
        device=args.device,
        batch_size=args.batch_size,
        budget=Budget(steps=args.steps),
        threads=args.threads,
        timeout_s=args.timeout,
        world_size=int(os.environ.get("WORLD_SIZE", "1")),
    )
    return CaseRequest(spec, args.out)


def main(argv: Sequence[str] | None = None) -> int:
    """A rank: run the case, report an error as this rank's; rank 0 writes the row."""
    _die_with_launcher()
    request = _request(argv)
    spec, out_dir, scratch = request.spec, Path(request.out_dir), Path(request.scratch) if request.scratch else None
    rank = int(os.environ["RANK"])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"[rank {rank}] %(levelname)s %(message)s")
    if scratch is not None:  # a crash leaves this rank's fault for the launcher, not only in the log
        faulthandler.enable(open(ddp.fault_path(scratch, rank), "w", encoding="utf-8"))  # noqa: SIM115 - open for the process's life
        # Where this rank is, when the launcher asks on a timeout: which rank hung, which waited for it.
        faulthandler.register(ddp.STACK_SIGNAL, open(ddp.stack_path(scratch, rank), "w", encoding="utf-8"), all_threads=False)  # noqa: SIM115
    status = _Status(scratch, rank)
    status("start")
    # Unless told, the rank's share of the node's CPUs, as a single process takes all of them (torch's default).
    torch.set_num_threads(spec.threads or cpu_share(int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    steady_process()
    try:
        row = run_rank(spec, out_dir, status)
    except Exception as error:
        failed_at = time.time()  # before the traceback is logged: the order of failures is what is kept
        code, reason = describe_failure(error, spec.mode)
        log.error("%s", reason, exc_info=code == Status.FAILED)
        if scratch is not None:
            write_atomic(ddp.error_path(scratch, rank), json.dumps({"rank": rank, "status": code, "reason": reason, "at": failed_at}))
        return 1
    if row is not None and scratch is not None:
        write_atomic(ddp.result_path(scratch), json.dumps(row.to_dict()))
    elif row is not None:
        print(f"[torchbenchmark] {row!r}; record: {write_record(out_dir, spec, row)}", file=sys.stderr)
    return 0


def write_record(out_dir: Path, spec: CaseSpec, row: CaseResult) -> Path:
    """A multi-node run's record, written by rank 0 as a sweep would, and the summary view rebuilt."""
    command = shlex.join(["torchrun", "...", "-m", "torchbenchmark.distributed", *sys.argv[1:]])
    environment = collect_environment(spec.device, spec.threads, command)
    record = RunRecord(new_run_id(), environment, command, state=RunState.COMPLETE, ended_at=timestamp())
    record = dataclasses.replace(record, rows=(dataclasses.replace(row, run_id=record.run_id),))
    out_dir.mkdir(parents=True, exist_ok=True)
    with outdir.locked(out_dir):
        path = outdir.write_record(out_dir, record)
        outdir.rewrite_views(out_dir, outdir.read_records(out_dir), record.run_id, report=False)
    return path


if __name__ == "__main__":
    sys.exit(main())
