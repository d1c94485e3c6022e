"""The diagnostics command line: parse and check every input before any work, then run the sweep.

Exit status: 0 every case ok or skipped; 1 a case failed or timed out, or the summary could not be
written; 2 a usage error (nothing was run or written); 128 + the signal when interrupted: 130 by Ctrl-C
(SIGINT), 143 by SIGTERM, 129 by SIGHUP. Plug-ins are imported only in child processes. Subcommands
(``compare``, ``check``, ``merge``) are named first: ``diagnostics.py compare BASE NEW``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from torchbenchmark.compare import DEFAULT_THRESHOLD_PCT
from torchbenchmark.contract import MODES, contract_problems
from torchbenchmark.plugins import IMPORT_TIMEOUT_S, PluginProbe, probe_plugins
from torchbenchmark.process import LOG_HEAD_BYTES, LOG_TAIL_BYTES
from torchbenchmark.registry import is_plugin_spec, list_models, meta_of, model_class, unknown_model_message
from torchbenchmark.safe_paths import MAX_NAME_BYTES
from torchbenchmark.spec import COMPILE_MODES, DEFAULT_BACKEND, Budget, Compile

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
FAMILY_PREFIX = "family:"


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1 << 20):g} MiB"


EPILOG = f"""\
models: registered names (see --list), 'all', family:NAME for every model of a family (see --list), or
plug-ins that follow the model contract, given as package.module:ClassName or path/to/file.py:ClassName.
A plug-in is imported only in a child process,
given at most {IMPORT_TIMEOUT_S:g} s (or --timeout, if shorter): one that hangs, crashes or exits while
being imported is a failed row with its traceback in the log, never the end of the run. A model's
name (its declared name, else its class name) must be one folder name: no '/', no '..', no NUL, at
most {MAX_NAME_BYTES} bytes; anything else is a usage error here and a failed row from Python.

subcommands: 'diagnostics.py compare BASE NEW' compares two runs (see 'compare --help');
'diagnostics.py check SPEC [SPEC ...]' checks models or plug-ins against the contract (see 'check --help');
'diagnostics.py merge OUT1 OUT2 ... --out MERGED' joins the outputs of --shard runs (see 'merge --help').

outputs, under --out: runs/<run-id>.json (this run's record: environment, command, a row per case;
never changed once the run ends), summary.txt and summary.json (the latest row of every case over
all records, rebuilt after every case: cases not in this run keep their rows), report.html (the same as
a self-contained page with plots, written when the run ends), and per model
<model>/<mode>-<device>.pt.trace.json.gz (light profile), ...-detailed.pt.trace.json.gz, .top_ops.txt
and .log. Every path written is checked to lie under --out once links are resolved; nothing is
written elsewhere. A case's .log is capped at {_mib(LOG_HEAD_BYTES + LOG_TAIL_BYTES)}: its first and last {_mib(LOG_HEAD_BYTES)} are kept, with a
line saying how many bytes were cut between them. A case that cannot write its outputs (a full disk,
a read-only folder) is a failed row with the reason, and the run goes on. An ok row whose figure is
not to be trusted (noisy windows, warmup not steady, a wide IQR, too few steps) is marked UNTRUSTWORTHY
on its progress line and in summary.txt, and the sweep ends by listing such rows with what to do.

processes: each case runs in its own process tree, which ends with the case (on success, failure or
--timeout), detached descendants included, and dies with this run, even if it is killed by SIGKILL.

exit status: 0 every case ok or skipped; 1 a case failed or timed out, or the summary could not be
written; 2 usage error, in one line, nothing run or written; 130 interrupted by Ctrl-C;
143 interrupted by SIGTERM; 129 interrupted by SIGHUP (the running case is stopped, the summary
written and the cases not run marked interrupted).
"""


class UsageError(Exception):
    """Bad input: reported in one line, exit status 2, before anything runs or is written."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1000, got {text}")
    return value


def _shard(text: str) -> Any:
    from torchbenchmark.shard import Shard

    try:
        return Shard.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="diagnostics.py",
        description="Profile models and say where each step's time goes and whether it is dispatch-bound.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--models", help="comma-separated model names, 'all', family:NAME (e.g. family:nlp), or plug-in specs")
    parser.add_argument("--exclude", help="comma-separated models to leave out of --models (names, family:NAME or specs)")
    parser.add_argument("--modes", help="comma-separated: train, eval (default: both; train with --ddp)")
    parser.add_argument("--device", default="auto", help="auto (cuda when available, else cpu), cpu, cuda or cuda:N")
    parser.add_argument("--out", default="traces", help="output folder (default: traces)")
    parser.add_argument("--batch-size", type=_positive_int, help="batch size for every case (default: each model's)")
    parser.add_argument(
        "--steps", type=_positive_int, help="measure one window of exactly this many steps (default: ~2 s windows until two agree)"
    )
    parser.add_argument("--timeout", type=_positive_float, default=600.0, help="seconds per case before it is killed (default: 600)")
    parser.add_argument("--threads", type=_positive_int, help="torch intra-op threads per case (default: torch's)")
    parser.add_argument("--no-detailed", action="store_true", help="skip the detailed profile")
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="also bound the overhead by batch-size scaling (times each case at 1/2, 1/4 and 1/8 of its batch)",
    )
    parser.add_argument(
        "--repeat", type=_positive_int, default=1,
        help="run each case in this many processes, in rounds over all cases (default: 1); "
        "compare treats processes as its samples, so 3 makes the regression gate far more sensitive",
    )  # fmt: skip
    parser.add_argument("--compile", action="store_true",
                        help="also run each case with the model's module under torch.compile, beside the eager case")  # fmt: skip
    parser.add_argument("--backend", default=DEFAULT_BACKEND, help=f"with --compile: a torch.compile backend (default: {DEFAULT_BACKEND})")
    parser.add_argument("--compile-mode", default="default", choices=COMPILE_MODES, help="with --compile: the inductor mode (default: default)")
    parser.add_argument("--shard", type=_shard, metavar="I/N",
                        help="run only shard I of N (from 1): the same split on every machine, balanced by the "
                        "reference run's case times; join the shards' outputs with 'diagnostics.py merge'")  # fmt: skip
    parser.add_argument("--ddp", type=_positive_int, metavar="N",
                        help="run each train case as DistributedDataParallel with N ranks on this machine, through "
                        "torch.distributed.run (gloo on CPU, one intra-op thread per rank unless --threads)")  # fmt: skip
    parser.add_argument("--baseline", metavar="BASE", help="after the sweep, compare it against BASE (see 'compare --help')")
    parser.add_argument("--threshold", type=_percent, default=DEFAULT_THRESHOLD_PCT,
                        help=f"with --baseline: the smallest change in %% called faster or slower (default: {DEFAULT_THRESHOLD_PCT:g})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, only a line per case")
    parser.add_argument("--list", action="store_true", help="list the registered models (or those --models names) and exit")
    return parser


def resolve_models(text: str, import_timeout_s: float = IMPORT_TIMEOUT_S) -> list[str]:
    """Registered names and plug-in specs, checked: each one must name a model that exists, by a usable name.

    Plug-ins are imported in a child process; one whose import fails, hangs or crashes is kept (its
    cases become failed rows with the reason), one that names nothing is a usage error.
    """
    specs = [part.strip() for part in text.split(",") if part.strip()]
    if not specs:
        raise UsageError("--models is empty")
    plugins = [spec for spec in specs if not spec.startswith(FAMILY_PREFIX) and is_plugin_spec(spec)]
    for spec in specs:
        if spec != "all" and not spec.startswith(FAMILY_PREFIX) and spec not in plugins and spec not in list_models():
            raise UsageError(unknown_model_message(spec))
    for probe in probe_plugins(plugins, import_timeout_s).values():
        if probe.status == "unknown":
            raise UsageError(probe.error)
        if probe.name_error:
            raise UsageError(probe.name_error)
    resolved = [name for spec in specs for name in _expand(spec)]
    return list(dict.fromkeys(resolved))  # each case once, first mention first


def _expand(spec: str) -> list[str]:
    """``all`` and ``family:NAME`` as the names they stand for; any other spec as itself."""
    if spec == "all":
        return list_models()
    if spec.startswith(FAMILY_PREFIX):
        return family_models(spec[len(FAMILY_PREFIX) :])
    return [spec]


def family_models(family: str) -> list[str]:
    """The registered models of one family (``--models family:nlp``)."""
    by_family: dict[str, list[str]] = {}
    for name in list_models():
        by_family.setdefault(meta_of(model_class(name)).family, []).append(name)
    if family not in by_family:
        raise UsageError(f"unknown family {family!r}; families: {', '.join(sorted(by_family))}")
    return by_family[family]


def exclude_models(models: list[str], text: str) -> list[str]:
    """``models`` less those ``--exclude`` names (registered names, plug-in specs or family:NAME)."""
    excluded = set(resolve_models(text))
    unknown = excluded - set(models)
    if unknown:
        raise UsageError(f"--exclude {', '.join(sorted(unknown))}: not among the models chosen")
    remaining = [model for model in models if model not in excluded]
    if not remaining:
        raise UsageError("--exclude leaves no model to run")
    return remaining


def resolve_modes(text: str) -> list[str]:
    modes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise UsageError(f"unknown mode {unknown[0]!r}; expected train, eval or both" if unknown else "--modes is empty")
    return list(dict.fromkeys(modes))


def resolve_device(text: str) -> str:
    """The device a sweep runs on, checked here and named as torch names it (``auto`` picks one)."""
    import torch

    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    unknown = f"unknown device {text!r}; expected auto, cpu, cuda or cuda:N"
    try:
        device = torch.device(text)  # refuses what torch would refuse later ("cuda:00", "cuda:-1")
    except (RuntimeError, ValueError):
        raise UsageError(unknown) from None
    if device.type == "cpu":
        return "cpu"
    if device.type != "cuda":
        raise UsageError(unknown)
    if not torch.cuda.is_available():
        raise UsageError(f"--device {text}: no CUDA GPU is available here; use --device cpu")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise UsageError(f"--device {text}: there are {torch.cuda.device_count()} CUDA devices")
    return str(device)


def check_out_dir(path: Path) -> None:
    """The output folder must be a folder we can write, or a path where one can be made."""
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"--out {path}: exists and is not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"--out {path}: folder is not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {path}: cannot create it, {parent} is not a writable folder")


def list_table(models: Sequence[str] | None = None, import_timeout_s: float = IMPORT_TIMEOUT_S) -> str:
    """The registered models (or the given names and plug-in specs), with whether each can run here."""
    specs = list_models() if models is None else list(models)
    probes = probe_plugins([spec for spec in specs if is_plugin_spec(spec)], import_timeout_s)
    rows = []
    for spec in specs:
        rows.append(_plugin_row(probes[spec]) if spec in probes else _registered_row(spec))
    headers = ["model", "family", "annotated", "cpu train", "cpu eval", "cuda train", "cuda eval", "available"]
    return tabulate(rows, headers=headers)


def _registered_row(name: str) -> tuple[object, ...]:
    try:
        cls = model_class(name)
        meta = meta_of(cls)
    except Exception as error:  # noqa: BLE001 - a model that cannot import is listed with the reason
        return (name, "", "", "", "", "", "", f"unavailable: {error}")
    if contract_problems(cls):
        return (name, meta.family, "", "", "", "", "", _cannot_run(contract_problems(cls)))
    missing = [dep for dep in meta.requires if not _importable(dep)]
    sizes = meta.batch_sizes
    availability = f"unavailable: needs {', '.join(missing)}" if missing else "yes"
    return (name, meta.family, "yes" if meta.annotated else "no", sizes.cpu_train, sizes.cpu_eval,
            sizes.cuda_train, sizes.cuda_eval, availability)  # fmt: skip


def _plugin_row(probe: PluginProbe) -> tuple[object, ...]:
    """A plug-in's row from its probe; an import that failed shows its own error, first line."""
    if probe.status != "ok":
        return (probe.spec, "", "", "", "", "", "", f"unavailable: {probe.error}")
    if probe.name_error:
        return (probe.spec, "", "", "", "", "", "", f"unusable: {probe.name_error}")
    if probe.problems:
        return (probe.row_name, probe.family, "", "", "", "", "", _cannot_run(probe.problems))
    availability = f"unavailable: needs {', '.join(probe.missing)}" if probe.missing else "yes"
    return (probe.row_name, probe.family, "yes" if probe.annotated else "no", *(probe.batch_sizes or ("",) * 4), availability)


def _cannot_run(problems: Sequence[str]) -> str:
    return f"cannot run: not a model of the contract: {'; '.join(problems)}"


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:  # a dotted name whose parent package is missing
        return False


COMPARE_EPILOG = """\
BASE and NEW: each an output folder (its run records), a summary.json, or one run record
(OUT/runs/<run-id>.json). Each case on either side gets a call: slower, faster, same (within the
threshold or within noise), new failure, fixed, verdict changed, not compared, only in base, only in new.
Each timed case also shows what it "catches": the smallest slowdown that a comparison measured alike
calls slower 9 times in 10, from its spread and its processes a side.

On a shared machine, let the base and the change take turns (base, change, base, change, ..., each
side's runs into its own folder, each with --threads 1) and compare with --pool: the machine's drift
during the session then weighs on both sides alike. At one thread a case, processes on a shared
2-core machine agreed within 0.9 to 3.8%; at two, some cases' fell into two modes 1.2x apart.

exit status: 0 nothing slower or newly failing; 1 a case regressed; 2 usage error (unreadable input,
nothing in common).
"""


def build_compare_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="diagnostics.py compare",
        description="Compare two runs: each case's step-time ratio with a 95% interval, and a regression gate.",
        epilog=COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("base", metavar="BASE")
    parser.add_argument("new", metavar="NEW")
    parser.add_argument("--threshold", type=_percent, default=DEFAULT_THRESHOLD_PCT,
                        help=f"smallest change in %% called faster or slower (default: {DEFAULT_THRESHOLD_PCT:g})")  # fmt: skip
    parser.add_argument("--pool", action="store_true",
                        help="BASE and NEW are output folders of several runs each (runs that took turns on one machine): "
                             "time each case with the processes of every run that measured it alike, not only the latest run")  # fmt: skip
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the comparison as JSON")
    parser.add_argument("--html", metavar="FILE", type=Path, help="also write the comparison as a self-contained HTML page")
    return parser


def run_compare(
    base: str | Path, new: str | Path, threshold_pct: float, json_path: Path | None, html_path: Path | None = None,
    pool: bool = False,
) -> int:
    """Compare, print the table, write --json and --html; a usage error for unreadable input or nothing in common."""
    from torchbenchmark.compare import compare
    from torchbenchmark.storage import StorageError, dumps, load_summary, write_atomic
    from torchbenchmark.summary import render_comparison

    for path, flag in ((json_path, "--json"), (html_path, "--html")):
        if path is not None:
            check_new_file(path, flag)
    try:
        sides = load_summary(base, pool), load_summary(new, pool)
        comparison = compare(*sides, threshold_pct)
    except (StorageError, ValueError) as error:
        raise UsageError(str(error)) from None
    print(render_comparison(comparison), end="")
    if json_path is not None:
        write_atomic(json_path, dumps(comparison.to_dict()))
    if html_path is not None:
        from torchbenchmark.report import render_comparison_report

        write_atomic(html_path, render_comparison_report(comparison, *sides))
        print(f"page: {html_path}", file=sys.stderr)
    return comparison.exit_status


def check_new_file(path: Path, flag: str) -> None:
    """A file we will write: its folder must exist and be writable, and it must not be a folder."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder")
    parent = path.absolute().parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {parent} is not a writable folder")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["merge"]:
            from torchbenchmark import merge

            return merge.main(argv[1:])
        if argv[:1] == ["check"]:
            from torchbenchmark import check_cli

            return check_cli.main(argv[1:])
        if argv[:1] == ["compare"]:
            compare_args = build_compare_parser().parse_args(argv[1:])
            return run_compare(compare_args.base, compare_args.new, compare_args.threshold, compare_args.json, compare_args.html,
                               compare_args.pool)  # fmt: skip
        args = build_parser().parse_args(argv)
        import_timeout_s = min(IMPORT_TIMEOUT_S, args.timeout)
        if args.list:
            listed = resolve_models(args.models, import_timeout_s) if args.models else None
            if listed is not None and args.exclude:
                listed = exclude_models(listed, args.exclude)
            print(list_table(listed, import_timeout_s))
            return EXIT_OK
        if not args.models:
            raise UsageError("--models is required (a name, a comma-separated list, 'all' or a plug-in spec)")
        modes = resolve_modes(args.modes or ("train" if args.ddp else "train,eval"))
        if args.ddp and args.compile:
            raise UsageError("--ddp and --compile do not combine: DDP cases run the eager module")
        if args.ddp and modes != ["train"]:
            raise UsageError("--ddp runs train cases only: use --modes train")
        device = resolve_device(args.device)
        if not args.out.strip():
            raise UsageError("--out is empty; name the output folder (default: traces)")
        out_dir = Path(args.out)
        check_out_dir(out_dir)
        if args.baseline:
            _check_baseline(args.baseline)
        if (args.backend != DEFAULT_BACKEND or args.compile_mode != "default") and not args.compile:
            raise UsageError("--backend and --compile-mode go with --compile")
        if args.compile:
            _check_backend(args.backend)
        models = resolve_models(args.models, import_timeout_s)  # last: it imports plug-ins, in a child each
        if args.exclude:
            models = exclude_models(models, args.exclude)
        return _sweep(args, models, modes, device, out_dir, argv)
    except UsageError as error:
        print(f"diagnostics.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _check_baseline(path: str) -> None:
    """--baseline is read before the sweep, so a bad one costs nothing."""
    from torchbenchmark.storage import StorageError, load_summary

    try:
        load_summary(path)
    except StorageError as error:
        raise UsageError(f"--baseline: {error}") from None


def _check_backend(backend: str) -> None:
    from torchbenchmark.variants import check_backend

    try:
        check_backend(backend)
    except ValueError as error:
        raise UsageError(f"--backend: {error}") from None


def _sweep(args: argparse.Namespace, models: list[str], modes: list[str], device: str, out_dir: Path, argv: list[str]) -> int:
    from torchbenchmark.storage import StorageError
    from torchbenchmark.summary import render_untrustworthy
    from torchbenchmark.sweep import Interrupted, OutputBusy, OutputUnusable, SweepArgumentError, SweepOptions, run_sweep

    options = SweepOptions(
        out_dir=out_dir,
        device=device,
        batch_size=args.batch_size,
        budget=Budget(steps=args.steps),
        timeout_s=args.timeout,
        detailed=not args.no_detailed,
        scaling=args.scaling,
        threads=args.threads,
        command=shlex.join(["diagnostics.py", *argv]),
        progress=not args.no_progress,
        repeat=args.repeat,
        compile=Compile(args.backend, args.compile_mode) if args.compile else None,
        world_size=args.ddp or 1,
        shard=args.shard,
    )

    def stop(signum: int, _frame: object) -> None:
        # Only the first signal counts: a second Ctrl-C must not cut short the summary being written.
        for handled in previous:
            signal.signal(handled, signal.SIG_IGN)
        raise Interrupted(signum)

    # SIGINT too, explicitly: a sweep started in the background inherits SIGINT ignored. SIGHUP (the
    # terminal or CI session closing) is handled as SIGTERM is.
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        outcome = run_sweep(models, modes, options)
    except (OutputBusy, OutputUnusable, SweepArgumentError, StorageError) as error:
        raise UsageError(str(error)) from None
    except Interrupted as interrupted:  # before the first case began: there is nothing to summarise
        return 128 + interrupted.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    probes = probe_plugins([spec for spec in models if is_plugin_spec(spec)], min(IMPORT_TIMEOUT_S, args.timeout))  # cached
    names = {(probes[spec].row_name if spec in probes else spec): spec for spec in models}
    untrustworthy = render_untrustworthy(outcome.results, names)
    if untrustworthy:
        print(untrustworthy, file=sys.stderr)
    print(f"summary: {out_dir / 'summary.txt'} and {out_dir / 'summary.json'}; this run's record: {outcome.record}",
          file=sys.stderr)  # fmt: skip
    if outcome.report is not None:
        print(f"report: {outcome.report} (one self-contained page: open it in a browser)", file=sys.stderr)
    if args.baseline and outcome.interrupted_by is None:
        print(f"\ncompared with {args.baseline}:", file=sys.stderr)
        gate = run_compare(args.baseline, out_dir, args.threshold, None)
        return max(outcome.exit_status, gate)
    return outcome.exit_status
