"""The warm replay (``measure.replay``): a step's own Python, run with no kernel, and how the estimate takes it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.helpers.plain_plugins import PlainModel
from tests.helpers.sweeps import PRICED
from torchbenchmark.analyze.overhead import overhead_events_of_trace
from torchbenchmark.analyze.trace import is_complete, load_events, parents
from torchbenchmark.measure import replay
from torchbenchmark.measure.calibration import calibrate
from torchbenchmark.measure.profiling import run_profile
from torchbenchmark.run.prices import keep

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "helpers" / "replay_models.py"


def test_a_replayed_op_returns_what_it_returned_without_computing() -> None:
    a, b = torch.ones(64, 64), torch.ones(64, 64)
    with replay.Replay() as mode:
        first = a @ b
        a.add_(1.0)  # recorded: it wrote a
        a.add_(1.0)  # replayed: it hands back a and writes nothing
        again = a @ b  # replayed: the product of the ones
        other = a[:8] @ b  # another layout: computed
    assert torch.equal(a, torch.full((64, 64), 2.0))
    assert torch.equal(again, first) and again is not first and again[0, 0] == 64
    assert other[0, 0] == 2 * 64
    assert mode.held_bytes >= 2 * 64 * 64 * 4


def test_an_op_first_computed_on_two_replayed_results_that_share_memory_reads_a_copy() -> None:
    """Two calls of one op and layout get one tensor back; an op that writes one and reads the other (a mixture of
    experts' ``index_add_``) would refuse the overlap, so what it only reads is cloned, and it writes in place."""
    x = torch.zeros(4, 2)
    with replay.Replay():
        for _ in range(2):
            a, b = x + 1, x + 1  # replayed: one storage
            written = a.index_add_(0, torch.tensor([0]), b[:1])
            assert written is a
    assert a.data_ptr() == b.data_ptr() and a[0].tolist() == [2.0, 2.0]  # computed once, on a copy of b


def test_an_index_is_computed_on_every_call_from_the_replayed_values_it_is_given() -> None:
    """A mixture of experts' routing at decode: a permutation sorted from the router's choice, inverted into a fresh
    buffer and indexed by. Replayed, the buffer (one tensor for every call of its op and layout) held what another
    call site wrote, and indexed past the tensor; an integer written in place, or viewed, is computed each call, so
    it holds the inverse of the permutation it is given, while the arithmetic is replayed."""
    weights = torch.randn(2, 8)
    with replay.Replay() as mode:
        for choice in ([1, 0], [0, 1], [1, 0]):
            scratch = torch.empty_like(torch.tensor([5, 7]))  # the same op and layout as the buffer below
            scratch.fill_(10**9)
            perm = torch.sort(torch.tensor(choice))[1]
            inverse = torch.empty_like(perm)
            inverse[perm] = torch.arange(perm.size(0))
            order, inverted = perm.tolist(), inverse.tolist()  # read from memory, past the mode
            assert [inverted[i] for i in order] == [0, 1]  # the inverse of the (replayed) permutation
            gathered = (weights * 2.0)[inverse]
    assert gathered.shape == (2, 8)
    count = torch.zeros((), dtype=torch.int64)
    with replay.Replay():
        seen = [int(count.add_(1)) for _ in range(3)]  # a count read back into Python
    assert seen == [1, 2, 3]
    products = [key for key in mode.recorded if key[0] is torch.ops.aten.mul.Tensor]
    assert products and all(mode.recorded[key][0] is not replay.COMPUTED for key in products)  # floats: replayed


def test_a_replayed_train_step_runs_backward_and_the_optimizer_in_place() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    with replay.Replay():
        for _ in range(3):
            optimizer.zero_grad()
            net(x).sum().backward()
            optimizer.step()
    assert all(p.grad is not None for p in net.parameters())


def test_record_function_ranges_pass_every_dispatch_mode_while_asked_and_only_then() -> None:
    """A range's enter and exit are ops: under a replay each reached the mode's Python, which the profiler timed
    in the step's gaps. While ``ranges_past_modes`` holds they pass the mode; after it, even after an error,
    they reach it again."""
    seen: list[str] = []

    class Recording(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with pytest.raises(RuntimeError, match="inside"), Recording(), replay.ranges_past_modes():
        with torch.profiler.record_function("## phase ##"):
            torch.ones(1) + 1
        raise RuntimeError("inside")
    assert seen and not any(name.startswith("profiler.") for name in seen)
    with Recording(), torch.profiler.record_function("## phase ##"):
        pass
    assert any(name.startswith("profiler.") for name in seen)


def test_a_replay_that_would_hold_too_much_or_run_too_long_is_abandoned() -> None:
    with pytest.raises(replay.Abandoned, match="hold more than"), replay.Replay(max_bytes=1 << 20):
        torch.ones(1 << 19) + 1  # 2 MB
    with pytest.raises(replay.Abandoned, match="deadline"), replay.Replay(deadline_s=0.0):
        torch.ones(4) + 1


def test_replayed_steps_are_traced_as_real_steps_their_annotations_and_all(tmp_path: Path) -> None:
    """The replay's trace holds its profiler steps and the step's own ``record_function`` ranges: the
    profiler's ops run under the replay, and only the model's are handed back."""

    class Annotated(PlainModel):
        def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
            with torch.no_grad():
                for _ in range(niter):
                    with torch.profiler.record_function("## forward ##"):
                        self.net(self.x)
                    if step_fn is not None:
                        step_fn()

    path = tmp_path / "replay.pt.trace.json.gz"
    run = replay.replayed_profile(Annotated(), "eval", path, replay.Replay())
    assert run.trace_path == path
    names = [event.get("name", "") for event in load_events(run.trace_path)]
    assert replay.LEAST_STEPS <= run.steps.n <= replay.MOST_STEPS
    assert sum(name.startswith("ProfilerStep#") for name in names) == run.steps.n
    assert names.count("## forward ##") == run.steps.n
    assert "aten::linear" in names  # the op's own event is there; its kernel did not run
    # The profiler's ranges opened and closed past the mode: no range of the mode's own at the top level.
    events = [event for event in load_events(run.trace_path) if is_complete(event) and event.get("cat") == "cpu_op"]
    tops = [event["name"] for event, parent in zip(events, parents(events)) if parent is None]
    assert "aten::linear" in tops and "PythonDispatchMode" not in tops
    # The replayed step made the real step's op calls.
    real = run_profile(Annotated(), "eval", torch.device("cpu"), "light", 3, tmp_path / "real.pt.trace.json.gz")
    calls = overhead_events_of_trace(real.trace_path).mean_events("call")
    assert calls > 0 and overhead_events_of_trace(run.trace_path).mean_events("call") == calls


@pytest.mark.slow
def test_a_sweep_replays_an_eager_cpu_step_and_keeps_a_row_for_one_that_refuses(tmp_path: Path) -> None:
    """A plain-contract step replays; one that checks its values (which a replay does not keep) is still a row,
    priced with the real step's gap; one whose replay ran other ops than its real step is not taken; and one
    blocked inside an op keeps its glue in the real steps' gap."""
    names = ("GlueAfterLargeOps", "ChecksItsValues", "GlueCountedInATensor", "GlueCountedInAnInt", "NapsInsideAnOp")
    specs = ",".join(f"{PLUGINS}:{name}" for name in names)
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", specs, "--modes", "eval", "--device", "cpu", "--threads", "1",
         "--steps", "5", "--no-detailed", "--no-progress", "--out", str(tmp_path), *PRICED],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["model"]: r for r in json.loads((tmp_path / "summary.json").read_text())["results"]}
    glue, checks = rows["glue_after_large_ops"], rows["checks_its_values"]
    assert glue["status"] == "ok" and checks["status"] == "ok", (glue["error"], checks["error"])
    assert glue["dispatch"]["warm_gap_us"] > 0
    assert checks["dispatch"]["warm_gap_us"] is None
    assert "no warm replay, the real step's gap stands: RuntimeError: counted" in (tmp_path / checks["log"]).read_text()
    assert not list(tmp_path.rglob(".*replay*"))  # the replayed steps' trace is not left behind
    # Twins but for where they count their rounds: replayed, the tensor's count stands still and runs no glue.
    in_tensor, in_int = rows["glue_counted_in_a_tensor"]["dispatch"], rows["glue_counted_in_an_int"]["dispatch"]
    assert in_int["warm_gap_us"] > 0 and "the step replayed made" not in (in_int["interval_note"] or "")
    assert in_tensor["warm_gap_us"] is None
    assert re.search(r"the step replayed made \d op calls against the real step's 302 ", in_tensor["interval_note"]), in_tensor
    # Blocked 2 ms inside an op, as a thread at a join is: the replay, which runs no kernel, is not, so nothing of
    # the real steps' 3 ms of glue is taken for a sleep (taken out, the replay read 200% above them). Whether the
    # row is marked is left to the load: a spell over the replay alone may lift it 30% above and mark it, rightly.
    napping = rows["naps_inside_an_op"]
    assert napping["dispatch"]["real_gap_us"] >= 0.5 * napping["dispatch"]["warm_gap_us"] > 1000, napping["dispatch"]


@pytest.mark.slow
def test_an_rnn_step_at_two_threads_has_its_time_steps_priced_at_two(tmp_path: Path) -> None:
    """An eval step through an LSTM at two threads: its trace names the RNN layer, so the layer is priced at the
    case's two threads, its time steps from the inputs the replay saw; the row says how long that took.

    Its prices are of one repeat, so the RNN loops are timed in one turn, not the shared prices' nine: beside the
    other test worker each of a loop's parallel regions waits for a core, and nine turns took a minute."""
    cpu = torch.device("cpu")
    prices = tmp_path / "prices.json"
    keep(cpu, calibrate(cpu, repeats=1), str(prices), None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", f"{PLUGINS}:SmallLSTM", "--modes", "eval", "--device", "cpu",
         "--threads", "2", "--steps", "5", "--no-detailed", "--no-progress", "--out", str(tmp_path / "run"),
         "--calibration", str(prices), "--peak-gflops", "100"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads((tmp_path / "run" / "summary.json").read_text())["results"]
    assert row["status"] == "ok", row["error"]
    assert row["dispatch"]["warm_gap_us"] > 0 and row["timings_s"]["rnn prices"] > 0
    events, prices = row["dispatch"]["events_per_step"], row["dispatch"]["prices_us"]
    assert events["rnn_step"] > events["rnn"] > 0
    # Timed prices: right, or a row the tool marked (beside other work each fork waits for a core).
    marked = any(reason.startswith("RNN prices read under load") for reason in row["untrustworthy_reasons"])
    assert (prices["rnn_us"] > 0 and prices["rnn_step_us"] > 0) or marked, (prices, row["untrustworthy_reasons"])


def test_the_watchdog_stops_a_loop_that_reaches_no_op_and_leaves_nothing_pending() -> None:
    from torchbenchmark.measure.replay import Abandoned
    from torchbenchmark.measure.watchdog import watchdog

    with pytest.raises(Abandoned), watchdog(0.2, Abandoned):
        while True:  # a step waiting for a value no replayed op writes
            pass
    with watchdog(0.05, Abandoned):
        pass
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # a shot left pending by the block above would be raised here
        pass
