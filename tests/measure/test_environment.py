"""What the machine allows (measure/environment.py): DDP ranks that outnumber its cores are warned about
before anything runs; CUDA ranks that outnumber its GPUs are a usage error, a SweepArgumentError or a failed row."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import torchbenchmark as tb
from torchbenchmark import cli
from torchbenchmark.results.schema import Status
from torchbenchmark.run import outdir
from torchbenchmark.run.sweep import SweepArgumentError, SweepOptions


def test_more_ranks_than_cores_warns_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    users = tmp_path / "users-file"
    users.write_text("the user's\n")
    # The warning comes with the flags' checks, before the output folder's (refused here: nothing runs).
    assert cli.main(["--models", "resnet18", "--ddp", "64", "--device", "cpu", "--out", str(users)]) == 2
    err = " ".join(capsys.readouterr().err.split())  # wrapped at the terminal's width
    assert "warning: --ddp 64: 64 ranks x 1 thread is more than this machine's 2 cores" in err, err
    assert users.read_text() == "the user's\n"
    assert cli.main(["--models", "resnet18", "--ddp", "2", "--threads", "1", "--device", "cpu", "--out", str(users)]) == 2
    assert "warning" not in capsys.readouterr().err
    options = SweepOptions(case=tb.CaseSpec(world_size=4), out_dir=users)
    crowded = pytest.warns(UserWarning, match="4 ranks x 1 thread is more than this machine's 2 cores")
    with crowded, pytest.raises(outdir.OutputUnusable):  # the folder is refused: nothing runs
        tb.run_sweep(["resnet18"], ["train"], options)
    assert users.read_text() == "the user's\n"


def test_more_cuda_ranks_than_gpus_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    out = tmp_path / "out"
    assert cli.main(["--models", "resnet18", "--ddp", "2", "--device", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == "diagnostics.py: error: --ddp 2: 2 ranks on CUDA take one GPU each; this machine has 1 CUDA device\n"
    with pytest.raises(SweepArgumentError, match="this machine has 1 CUDA device"):
        tb.run_sweep(["resnet18"], ["train"], SweepOptions(case=tb.CaseSpec(device="cuda", world_size=2), out_dir=out))
    row = tb.collect_diagnostics("resnet18", device="cuda", world_size=2, out_dir=out)
    assert row.status == Status.FAILED and "take one GPU each" in (row.error or "")
    assert not out.exists(), "a refusal wrote something"
