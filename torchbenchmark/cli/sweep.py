"""The sweep, the default command: ``diagnostics.py --models SPEC [options]``."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from torchbenchmark.cli import compare as compare_command
from torchbenchmark.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    Parser,
    UsageError,
    check_apart,
    check_out_dir,
    percent,
    positive_float,
    positive_int,
    thread_count,
)
from torchbenchmark.cli.models import exclude_models, resolve_device, resolve_models, resolve_modes
from torchbenchmark.measure.environment import check_ranks
from torchbenchmark.measure.instructions import valgrind_missing
from torchbenchmark.registry import is_plugin_spec
from torchbenchmark.report.format import console, program
from torchbenchmark.report.summary import render_untrustworthy
from torchbenchmark.results.files import StorageError
from torchbenchmark.results.schema import EAGER, CaseResult
from torchbenchmark.results.spec import (
    COMPILE_MODES,
    DEFAULT_BACKEND,
    DEFAULT_INSTRUCTIONS_CAP_S,
    DEFAULT_OUT,
    DEFAULT_TIMEOUT_S,
    PRECISIONS,
    Budget,
    CaseSpec,
    Compile,
)
from torchbenchmark.run import outdir
from torchbenchmark.run.plugins import IMPORT_TIMEOUT_S
from torchbenchmark.run.shard import Shard
from torchbenchmark.run.sweep import Interrupted, Machinery, SweepArgumentError, SweepOptions, run_sweep

EPILOG = """\
subcommands: compare BASE NEW, check SPEC..., merge OUT... --out MERGED, list [SPEC...]; each has --help.
exit status: 0 every case ok or skipped; 1 a case failed or timed out, or the summary could not be written;
2 usage error (one line; nothing run or written); 3 (--baseline) nothing slower but something inconclusive;
128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). docs/: every output and flag."""


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _precisions(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(word.strip() for word in text.split(",") if word.strip()))
    unknown = [word for word in chosen if word not in PRECISIONS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown precision {(unknown or [text])[0]!r}; expected {', '.join(PRECISIONS)}, comma-separated")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=program(),
        usage=f"{program()} --models SPEC[,SPEC...] [options] | {program()} SUBCOMMAND ...",
        description="Profile models; say where each step's time goes and whether it is dispatch-bound.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--models", help="names, all, family:F, hf:/timm:/torchvision:NAME or a pattern, plug-ins (file.py:Class); comma-separated")
    add("--exclude", help="models to leave out of --models")
    add("--modes", help="train, eval or both (default: both; train with --ddp)")
    add("--device", default="auto", help="auto (cuda when available), cpu, cuda or cuda:N (default: auto)")
    add("--out", default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    add("--batch-size", type=positive_int, help="batch size for every case (default: each model's)")
    add("--steps", type=positive_int, help="measure one window of exactly this many steps (default: ~2 s windows)")
    add("--timeout", type=positive_float, default=DEFAULT_TIMEOUT_S, help=f"seconds per case (default: {DEFAULT_TIMEOUT_S:g})")
    add("--threads", type=thread_count, help="torch intra-op threads per case (default: torch's)")
    add("--no-detailed", action="store_true", help="skip the detailed profile")
    add("--scaling", action="store_true", help="also bound the overhead by batch-size scaling")
    add(
        "--instructions",
        type=positive_float,
        nargs="?",
        const=DEFAULT_INSTRUCTIONS_CAP_S,
        metavar="S",
        help=f"count each eager CPU step's instructions (callgrind); a count over S s is skipped (default: {DEFAULT_INSTRUCTIONS_CAP_S:g})",
    )
    add(
        "--calibration",
        metavar="FILE",
        help="per-event prices kept in FILE (read, else measured)",
    )
    add("--peak-gflops", type=positive_float, metavar="N", help="peak float32 GFLOP/s, not measured (2 s)")
    add("--repeat", type=positive_int, default=1, help="processes per case, in rounds over cases (default: 1)")
    add("--compile", action="store_true", help="also run each case with its module under torch.compile")
    add("--backend", default=DEFAULT_BACKEND, help=f"with --compile: a torch.compile backend (default: {DEFAULT_BACKEND})")
    add("--compile-mode", default="default", choices=COMPILE_MODES, help="with --compile: the inductor mode (default: default)")
    add("--precision", type=_precisions, default=(), metavar="P[,P]", help="also run each case in amp-bf16, amp-fp16 and/or bf16")
    add("--channels-last", action="store_true", help="also run each case in channels_last (4-D inputs)")
    add("--shard", type=_shard, metavar="I/N", help="run only shard I of N; join the shards with 'merge'")
    add("--ddp", type=positive_int, metavar="N", help="run each train case as DistributedDataParallel with N ranks")
    add("--baseline", metavar="BASE", help="after the sweep, compare it against BASE (see 'compare --help')")
    add(
        "--threshold",
        type=percent,
        metavar="PCT",
        help=f"with --baseline: the smallest change in %% called slower (default: {compare_command.DEFAULT_THRESHOLD_PCT:g})",
    )
    add("--allow-inconclusive", action="store_true", help="with --baseline: exit 0, not 3, when something is inconclusive")
    add("--no-progress", action="store_true", help="no progress bar: a line per case and per phase")
    add("--list", action="store_true", help="list the registered models (or those --models names) and exit")
    return parser


def _check_flags(args: argparse.Namespace, device: str, modes: list[str]) -> None:
    if not args.baseline and (args.threshold is not None or args.allow_inconclusive):
        raise UsageError("--threshold and --allow-inconclusive apply to the comparison --baseline BASE makes: give --baseline too")
    if args.calibration is not None:
        calibration = Path(args.calibration)
        if not args.calibration.strip() or calibration.is_dir() or (calibration.exists() and not calibration.is_file()):
            raise UsageError(f"--calibration {args.calibration!r}: name a file (one this tool writes, or wrote before)")
    if args.ddp and args.compile:
        raise UsageError("--ddp and --compile do not combine: DDP cases run the eager module")
    if args.ddp and (args.precision or args.channels_last):
        raise UsageError("--ddp does not combine with --precision or --channels-last: DDP cases run the eager module")
    if args.ddp and args.instructions is not None:
        raise UsageError("--ddp and --instructions do not combine: instructions are counted for single-process eager cases")
    if args.ddp and modes != ["train"]:
        raise UsageError("--ddp runs train cases only: use --modes train")
    if args.ddp:
        try:
            warning = check_ranks(device, args.ddp, args.threads)
        except ValueError as error:
            raise UsageError(f"--ddp {args.ddp}: {error}") from None
        if warning:
            print(console(f"{program()}: warning: --ddp {args.ddp}: {warning}"), file=sys.stderr)
    if (args.backend != DEFAULT_BACKEND or args.compile_mode != "default") and not args.compile:
        raise UsageError("--backend and --compile-mode go with --compile")
    if args.compile:
        from torchbenchmark.measure.compile import check_backend

        try:
            check_backend(args.backend)
        except ValueError as error:
            raise UsageError(f"--backend: {error}") from None


def options_of(args: argparse.Namespace, device: str, argv: Sequence[str]) -> SweepOptions:
    case = CaseSpec(
        device=device,
        batch_size=args.batch_size,
        budget=Budget(steps=args.steps),
        threads=args.threads,
        detailed=not args.no_detailed,
        scaling=args.scaling,
        instructions=args.instructions is not None,
        instructions_cap_s=args.instructions or DEFAULT_INSTRUCTIONS_CAP_S,
        calibration=str(Path(args.calibration).absolute()) if args.calibration else None,  # the case's process has its own cwd
        timeout_s=args.timeout,
        world_size=args.ddp or 1,
    )
    return SweepOptions(
        case=case,
        out_dir=Path(args.out),
        compile=Compile(args.backend, args.compile_mode) if args.compile else None,
        precisions=args.precision,
        channels_last=args.channels_last,
        repeat=args.repeat,
        shard=args.shard,
        peak_gflops=args.peak_gflops,
        command=shlex.join([*shlex.split(program()), *argv]),
        progress=not args.no_progress,
    )


def rerun_command(args: argparse.Namespace, spec: str, row: CaseResult) -> str:
    """The command line that runs one row's case again with the sweep's own flags."""
    run = ["python", "diagnostics.py"] if program() == "diagnostics.py" else shlex.split(program())
    words = [*run, "--models", spec, "--modes", row.mode, "--out", args.out, "--device", row.device]
    counts = (("--batch-size", args.batch_size), ("--steps", args.steps), ("--threads", args.threads), ("--ddp", args.ddp))
    for flag, value in (*counts, ("--repeat", args.repeat if args.repeat > 1 else None)):
        if value:
            words += [flag, str(value)]
    words += ["--no-detailed"] * args.no_detailed + ["--scaling"] * args.scaling
    if args.instructions is not None:
        words += ["--instructions"] if args.instructions == DEFAULT_INSTRUCTIONS_CAP_S else ["--instructions", f"{args.instructions:g}"]
    if args.timeout != DEFAULT_TIMEOUT_S:
        words += ["--timeout", f"{args.timeout:g}"]
    if row.variant != EAGER and args.compile:
        words += ["--compile", "--backend", args.backend, "--compile-mode", args.compile_mode]
    if row.variant != EAGER and args.precision:
        words += ["--precision", ",".join(args.precision)]
    words += ["--channels-last"] * (row.variant != EAGER and args.channels_last)
    return shlex.join(words)


def main(args: argparse.Namespace, argv: Sequence[str], machinery: Machinery = Machinery()) -> int:
    if not args.models:
        raise UsageError("--models is required (a name, a comma-separated list, 'all' or a plug-in spec)")
    modes = resolve_modes(args.modes or ("train" if args.ddp else "train,eval"))
    device = resolve_device(args.device)
    _check_flags(args, device, modes)
    if not args.out.strip():
        raise UsageError(f"--out is empty; name the output folder (default: {DEFAULT_OUT})")
    check_out_dir(Path(args.out))
    if args.baseline:
        check_apart(Path(args.out), "--out", [Path(args.baseline)])  # a sweep into its baseline would change it
        compare_command.load_side(args.baseline, "--baseline")  # read before the sweep: a bad one costs nothing
    # Last: it imports plug-ins, in a child each.
    models = resolve_models(args.models, min(IMPORT_TIMEOUT_S, args.timeout), machinery.probe_plugins, machinery.registered)
    if args.exclude:
        models = exclude_models(models, args.exclude)
    missing = valgrind_missing() if args.instructions is not None else None
    if missing:  # said once here; each row's instructions carry the reason too
        print(console(f"{program()}: --instructions: {missing}; the cases run without counts"), file=sys.stderr)
    return _run(args, models, modes, options_of(args, device, argv), machinery)


def _run(args: argparse.Namespace, models: list[str], modes: list[str], options: SweepOptions, machinery: Machinery) -> int:
    def stop(signum: int, _frame: object) -> None:
        # Only the first signal counts: a second Ctrl-C must not cut short the summary being written.
        for handled in previous:
            signal.signal(handled, signal.SIG_IGN)
        raise Interrupted(signum)

    # SIGINT too, explicitly: a sweep started in the background inherits SIGINT ignored. SIGHUP (the
    # terminal or CI session closing) is handled as SIGTERM is.
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        outcome = run_sweep(models, modes, options, machinery)
    except (outdir.OutputBusy, outdir.OutputUnusable, SweepArgumentError, StorageError) as error:
        raise UsageError(str(error)) from None
    except Interrupted as interrupted:  # before the first case began: there is nothing to summarise
        print(f"{program()}: interrupted", file=sys.stderr)
        return 128 + interrupted.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    probes = machinery.probe_plugins([spec for spec in models if is_plugin_spec(spec)], min(IMPORT_TIMEOUT_S, args.timeout))  # cached
    specs = {(probes[spec].row_name if spec in probes else spec): spec for spec in models}
    untrustworthy = render_untrustworthy(outcome.results, lambda row: rerun_command(args, specs.get(row.model, row.model), row))
    if untrustworthy:
        print(untrustworthy, file=sys.stderr)
    out = Path(args.out)
    print(
        console(f"summary: {out / outdir.SUMMARY_TXT} and {out / outdir.SUMMARY_JSON}; this run's record: {outcome.record}"),
        file=sys.stderr,
    )
    if outcome.report is not None:
        print(console(f"report: {outcome.report} (one self-contained page: open it in a browser)"), file=sys.stderr)
    if args.baseline and outcome.interrupted_by is None:
        print(f"\ncompared with {args.baseline}:", file=sys.stderr)
        threshold = compare_command.DEFAULT_THRESHOLD_PCT if args.threshold is None else args.threshold
        gate = compare_command.run(args.baseline, out, threshold, allow_inconclusive=args.allow_inconclusive)
        return EXIT_FAILED if EXIT_FAILED in (outcome.exit_status, gate) else max(outcome.exit_status, gate)
    return outcome.exit_status if outcome.results or outcome.interrupted_by else EXIT_OK
