"""The HTA example in docs/traces-and-hta.md runs as written on a trace the suite wrote, and keeps every step.

Skipped where Holistic Trace Analysis is not installed (it is not a dependency: ``pip install
HolisticTraceAnalysis psutil``).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from tests.helpers.sweeps import diagnose
from tests.helpers.tiny_models import TinyMLP
from torchbenchmark.results.spec import Budget

PAGE = Path(__file__).resolve().parents[2] / "docs" / "traces-and-hta.md"


def first_python_block(path: Path) -> str:
    block = re.search(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    assert block, f"{path.name} has no python block"
    return block.group(1)


@pytest.mark.slow
def test_the_documented_hta_example_reads_every_profiled_step(tmp_path: Path) -> None:
    pytest.importorskip("hta.trace_analysis")
    result = diagnose(TinyMLP, "train", out_dir=tmp_path, budget=Budget(steps=3), detailed=False)
    assert result.status == "ok", result.error
    trace = tmp_path / result.traces.light
    code = first_python_block(PAGE)
    assert 'trace_dir="traces/resnet50"' in code and "include_last_profiler_step=True" in code
    code = code.replace('"traces/resnet50"', repr(str(trace.parent))).replace('"train-cpu.pt.trace.json.gz"', repr(trace.name))
    scope: dict = {}
    exec(compile(code, str(PAGE), "exec"), scope)  # the page's example, on this trace
    top = scope["events"].assign(name=scope["events"]["name"].map(scope["names"].__getitem__)).groupby("name")["dur"].sum()
    with gzip.open(trace, "rt") as file:
        recorded = {e["name"] for e in json.load(file)["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")}
    read = {name for name in top.index if str(name).startswith("ProfilerStep#")}
    assert read == recorded and len(read) >= 2  # the last step too


def test_module_paths_read_as_the_model_names_them() -> None:
    """A root Sequential's children under its class, not as bare numbers; torch.compile's wrapper left out."""
    import torch
    from torch import nn

    from torchbenchmark.measure.profiling import ModuleNames

    class Holder:  # a model of the contract, its network in `module`
        def __init__(self, module: nn.Module) -> None:
            self.module = module

    chain = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    paths = set(ModuleNames(Holder(chain)).paths.values())
    assert paths == {"Sequential", "Sequential.0", "Sequential.1", "Sequential.1.0", "Sequential.1.1"}
    compiled = torch.compile(chain)  # an OptimizedModule holding the network as _orig_mod; nothing compiles until called
    assert set(ModuleNames(Holder(compiled)).paths.values()) == paths
    named = nn.Module()
    named.encoder = nn.Linear(2, 2)
    assert set(ModuleNames(Holder(named)).paths.values()) == {"Module", "encoder"}


def test_a_module_class_the_profiler_cannot_name_keeps_its_events(tmp_path: Path) -> None:
    """torch.profiler drops the call of a module whose class name holds a control character or any non-ASCII
    character, and its events fall to its parent's; under a stand-in name for the profile they stay its own."""
    import torch
    from torch import nn

    from tests.helpers.faulty_models import Healthy
    from torchbenchmark.analyze.attribution import attribute_trace
    from torchbenchmark.measure.profiling import profiler_writes, run_profile

    hostile = "Ev\x1b[31mil\nBlock\u200b模型"
    Block = type(hostile, (nn.Module,), {"forward": lambda self, x: (x * 1.5 + 1.0).relu()})

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block, self.head = Block(), nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.block(x))

    class Hostile(Healthy):
        def build(self) -> nn.Module:
            return Outer()

    assert not profiler_writes(hostile) and profiler_writes("Linear")
    model = Hostile(device="cpu", batch_size=2)
    run = run_profile(model, "eval", torch.device("cpu"), "detailed", 2, tmp_path / "detailed.pt.trace.json.gz")
    assert Block.__name__ == hostile  # the stand-in name lasts the profile only
    found = attribute_trace(run.trace_path, {"op": 1.0}, 10.0, *run.names)
    block = {share.name: share for share in found.overhead_by_module}["block"]
    assert block.module_class == hostile and block.events_per_step > 0
    assert "Outer" not in {share.name for share in found.overhead_by_module}  # none of the block's events fell to it
    assert hostile in {share.name for share in found.overhead_by_class}


def test_a_compiled_module_under_the_tools_own_module_hook_warns_its_user_of_nothing() -> None:
    """torch warns that global hooks fire once more for a compiled module: the hook is the tool's, not the user's."""
    import warnings

    import torch
    from torch import nn

    from torchbenchmark.measure.profiling import ModuleNames

    class Holder:
        def __init__(self, module: nn.Module) -> None:
            self.module = module

    compiled = torch.compile(nn.Linear(2, 2), backend="eager")
    compiled(torch.ones(1, 2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with ModuleNames(Holder(compiled)) as naming:
            compiled(torch.ones(1, 2))
        handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda *_: None)  # the user's own: warned
        try:
            compiled(torch.ones(1, 2))
        finally:
            handle.remove()
    about_hooks = [w for w in seen if "global hooks" in str(w.message)]
    assert len(about_hooks) == 1 and naming.names() == {"OptimizedModule_0": "Linear"}  # the user's hook's warning only
