"""Sweeps run in the test's own process, their cases stand-ins (a row made here), into folders beside a
user's file: a sweep's storage, views, refusals and the commands that read its folder, in milliseconds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import stand_ins
from torchbenchmark import cli
from torchbenchmark.results.schema import CaseResult, Status, StepTime, Traces
from torchbenchmark.run import outdir
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.sweep import Machinery, SweepOptions, run_sweep

MODELS = ["alpha", "beta"]
NAMES = [*MODELS, "gamma", "escapes"]  # the stand-ins' names count as registered


def ok_row(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
    """A case's process stand-in: a row with a log and a light trace, written where a real case writes them."""
    folder = outdir.make_case_dir(out_dir, name)
    stem = outdir.spec_stem(spec)
    (folder / f"{stem}.log").write_text(f"{name} {spec.mode}: log\n")
    (folder / outdir.trace_name(stem, "light")).write_bytes(b"trace of " + name.encode())
    ms = 1.0 + len(name) + (0.5 if spec.mode == "eval" else 0.0)
    return CaseResult(
        model=name,
        mode=spec.mode,
        device="cpu",
        status=Status.OK,
        batch_size=4,
        step_time=StepTime(ms, 0.1, ms, 10),
        log=f"{name}/{stem}.log",
        traces=Traces(f"{name}/{outdir.trace_name(stem, 'light')}"),
    )


@dataclasses.dataclass
class Sweeps:
    """Sweeps whose cases are stand-ins (``case``), into folders under ``root``, beside a user's file."""

    root: Path
    capsys: pytest.CaptureFixture[str]
    case: Any = ok_row  # what each case's process would have made
    probes: dict[str, PluginProbe] | None = None  # stand-ins for importing plug-ins; None: import them
    calls: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)

    @classmethod
    def beside_a_users_file(cls, root: Path, capsys: pytest.CaptureFixture[str]) -> Sweeps:
        root.mkdir()
        (root / "users-file.txt").write_text("the user's\n")
        return cls(root, capsys)

    def machinery(self) -> Machinery:
        def counted(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
            self.calls.append((name, spec.mode, spec.repeat))
            return self.case(spec, name, out_dir, on_phase)

        # The machine reads busy: that line is said only once every check has passed.
        return stand_ins.machinery(counted, names=NAMES, busy="load average 9 on 2 CPUs", probes=self.probes)

    def run_case(self, case: Any) -> None:
        self.case = case

    def run(self, out: Path, models: list[str] = MODELS, modes: tuple[str, ...] = ("train", "eval"), **options: Any) -> Path:
        run_sweep(models, list(modes), SweepOptions(out_dir=out, progress=False, **options), self.machinery())
        self.capsys.readouterr()  # its lines are not the test's
        return out

    def cli(self, *args: str) -> int:
        return cli.main(list(args), self.machinery())

    def user_file(self) -> Path:
        return self.root / "users-file.txt"
