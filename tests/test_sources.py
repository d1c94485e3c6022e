"""Models named by their library (``hf:``, ``timm:``, ``torchvision:``): names and patterns resolved the same way
by every path a user takes (``--models``, ``list``, ``check``, the Python API), and a missing library said in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.commands import diagnostics, one_line_error
from tests.helpers.processes import ROOT
from torchbenchmark import UnknownModelError
from torchbenchmark.cli import UsageError
from torchbenchmark.cli.listing import library
from torchbenchmark.cli.models import resolve_models
from torchbenchmark.registry import expand_source, is_plugin_spec, model_class, source_names, source_of
from torchbenchmark.run.sweep import SweepArgumentError, checked_arguments

BLOCK_TIMM = "import sys; sys.modules['timm'] = None; from torchbenchmark.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_library_prefix_is_no_plugin_spec_and_family_stays_a_selection() -> None:
    assert [source_of(spec) for spec in ("hf:BertModel", "timm:resnet18", "torchvision:alexnet", "pkg.mod:Cls", "resnet18")] == [
        "hf",
        "timm",
        "torchvision",
        None,
        None,
    ]
    assert not is_plugin_spec("torchvision:alexnet") and is_plugin_spec("pkg.mod:Cls") and is_plugin_spec("file.py:make_model")


def test_a_pattern_selects_every_match_sorted_and_a_name_stands_for_itself() -> None:
    resnets = expand_source("torchvision:resnet*")
    assert resnets == sorted(resnets) and "torchvision:resnet18" in resnets and "torchvision:resnet152" in resnets
    assert all(spec.startswith("torchvision:resnet") for spec in resnets)
    assert expand_source("torchvision:alexnet") == ["torchvision:alexnet"]
    assert set(expand_source("torchvision:*")) == {f"torchvision:{name}" for name in source_names("torchvision")}


def test_a_name_the_library_lacks_names_the_closest_ones() -> None:
    with pytest.raises(UnknownModelError, match=r"torchvision has no model 'resnet19'; did you mean torchvision:resnet18"):
        expand_source("torchvision:resnet19")
    with pytest.raises(UnknownModelError, match=r"no torchvision model matches 'nothing\*'"):
        expand_source("torchvision:nothing*")
    with pytest.raises(UnknownModelError, match="torchvision:resnet19"):
        model_class("torchvision:resnet19")


def test_the_command_line_and_the_python_sweep_expand_alike() -> None:
    from_cli = resolve_models("torchvision:resnet1*,resnet18")
    from_api, _ = checked_arguments(["torchvision:resnet1*", "resnet18"], ["eval"])
    assert from_cli == from_api and from_cli[-1] == "resnet18" and "torchvision:resnet101" in from_cli
    with pytest.raises(UsageError, match="no torchvision model matches"):
        resolve_models("torchvision:nothing*")
    with pytest.raises(SweepArgumentError, match="no torchvision model matches"):
        checked_arguments(["torchvision:nothing*"], ["eval"])


def test_list_of_a_library_names_each_model_and_how_many() -> None:
    text = library("torchvision", width=100)
    head, *lines = text.splitlines()
    names = source_names("torchvision")
    assert head.startswith(f"torchvision: {len(names):,} models (torchvision ") and len(head) <= 120
    assert "'torchvision:resnet*'" in head
    assert sorted(" ".join(lines).split()) == sorted(names) and max(map(len, lines)) <= 100


@pytest.mark.slow
def test_without_timm_a_timm_model_is_one_line_saying_how_to_install_it_and_exit_2() -> None:
    for command in (["--models", "timm:resnet18", "--modes", "eval"], ["list", "timm"], ["check", "timm:resnet18"]):
        done = subprocess.run([sys.executable, "-c", BLOCK_TIMM, *command], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, (command, done.stderr)
        one_line_error(done.stderr, "timm", "pip install timm")


@pytest.mark.slow
def test_list_hf_counts_the_transformers_classes() -> None:
    done = diagnostics("list", "hf")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith("hf: ") and "models (transformers " in head
    assert "AlbertForMaskedLM" in done.stdout.split() and "GPT2ForSequenceClassification" in done.stdout.split()
