"""The report page: written after a sweep, self-contained, every case and its plots, the comparison page,
the notebook view, the page's structure pinned, and the page loaded in a real browser."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.helpers import stand_ins
from tests.helpers.sweeps import PRICED
from torchbenchmark import api
from torchbenchmark.api import compare, load_summary
from torchbenchmark.report import page as report
from torchbenchmark.results.records import RunRecord, Summary, summary_of_records
from torchbenchmark.results.schema import (
    CaseResult,
    CompileReport,
    Costs,
    Dispatch,
    Distortion,
    GraphBreak,
    Measurement,
    Samples,
    StepTime,
    TimeSplit,
    TopOp,
    Traces,
    Warmup,
)
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import outdir, sweep

pytestmark = pytest.mark.xdist_group("report_page")  # one worker runs the module's sweep once, for all its tests

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "helpers"
MODELS = ",".join(
    [
        f"{TESTS / 'tiny_models.py'}:TinyMLP",
        f"{TESTS / 'faulty_models.py'}:RaisesInTrain",
    ]
)
REFERENCE = ROOT / "benchmarks" / "reference" / "summary.json"
MAX_PAGE_BYTES = 3_000_000


def diagnostics(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("out")
    done = diagnostics(
        "--models",
        MODELS,
        "--out",
        str(out),
        "--device",
        "cpu",
        "--steps",
        "3",
        "--no-detailed",
        "--no-progress",
        "--timeout",
        "300",
        *PRICED,
    )
    return done, out


class Page(HTMLParser):
    """What a test needs of a page: its tags with their attributes, its outline and its text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.outline: list[str] = []  # "section#id", "h2 text", "article#id": the page's skeleton in order
        self.styles: list[str] = []
        self._heading: str | None = None
        self._in_style = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.tags.append((tag, attributes))
        if tag in ("section", "article"):
            self.outline.append(f"{tag}#{attributes.get('id', '')}")
        elif tag in ("h1", "h2"):
            self._heading = ""
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2") and self._heading is not None:
            self.outline.append(f"{tag} {self._heading.strip()}")
            self._heading = None
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading += data
        if self._in_style:
            self.styles.append(data)

    def ids(self) -> set[str]:
        return {attributes["id"] for _, attributes in self.tags if "id" in attributes}

    def svgs(self) -> int:
        return sum(tag == "svg" for tag, _ in self.tags)

    def bar_charts(self) -> int:
        return sum(tag == "table" and "bars" in attributes.get("class", "").split() for tag, attributes in self.tags)


def network_references(text: str) -> list[str]:
    """Everything in a page a browser would fetch from elsewhere: links, sources, imports, fonts, urls."""
    page = Page(text)
    found = []
    for tag, attributes in page.tags:
        if tag == "link" or (tag == "script" and "src" in attributes):
            found.append(f"<{tag} {attributes}>")
        for name in ("src", "href", "xlink:href", "srcset", "data", "poster", "action", "formaction"):
            value = attributes.get(name, "")
            if re.match(r"^\s*([a-z][a-z0-9+.-]*:|//)", value, re.I):
                found.append(f"{tag} {name}={value}")
        if "url(" in attributes.get("style", "") and not re.fullmatch(r".*url\(#[^)]*\).*", attributes["style"]):
            found.append(f"{tag} style={attributes['style']}")
    for style in page.styles:
        found += re.findall(r"@import[^;]*|@font-face|url\((?!#)[^)]*\)", style)
    for attribute in re.findall(r'(?:clip-path|fill|mask|filter)="url\(([^)]*)\)"', text):
        if not attribute.startswith("#"):
            found.append(f"url({attribute})")
    return found


# After a sweep ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_sweep_writes_its_report(swept) -> None:
    done, out = swept
    assert done.returncode == 1, done.stderr  # raises_in_train failed: the sweep says so, and still reports
    assert (out / "report.html").is_file()
    assert f"report: {out / 'report.html'}" in done.stderr


@pytest.mark.slow
def test_the_page_is_self_contained(swept) -> None:
    _, out = swept
    text = (out / "report.html").read_text(encoding="utf-8")
    assert network_references(text) == []
    assert "<script>" in text and "<style>" in text  # inline, not fetched


def test_the_network_check_finds_what_it_should() -> None:
    for bad in (
        '<link rel="stylesheet" href="x.css">',
        '<script src="https://cdn.example/x.js"></script>',
        '<img src="http://example.com/a.png">',
        "<style>@import 'x.css';</style>",
        "<style>p { background: url(http://example.com/a.png) }</style>",
        '<svg><image xlink:href="https://example.com/a.png"/></svg>',
    ):
        assert network_references(f"<html><body>{bad}</body></html>"), bad
    assert network_references('<a href="#case-x">x</a><a href="m/train-cpu.log">log</a>') == []


@pytest.mark.slow
def test_every_case_is_on_the_page_with_its_plots(swept) -> None:
    _, out = swept
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    rows = [CaseResult.from_dict(row) for row in json.loads((out / "summary.json").read_text())["results"]]
    assert {(row.model, row.mode) for row in rows} == {
        (model, mode) for model in ("tiny_mlp", "raises_in_train") for mode in ("train", "eval")
    }
    for row in rows:
        assert report.case_id(row) in page.ids()  # its section
        assert "row-" + report.case_id(row)[5:] in page.ids()  # its row in the table
    assert page.svgs() >= 1 and page.bar_charts() == 3  # suite map; step time, phases, distortion
    assert {"map", "step-time", "phases", "distortion", "table", "attention"} <= page.ids()


@pytest.mark.slow
def test_rows_to_read_with_care_come_first_and_name_the_failure(swept) -> None:
    _, out = swept
    text = (out / "report.html").read_text(encoding="utf-8")
    attention = text[text.index('<section id="attention">') :]
    attention = attention[: attention.index("</section>")]
    assert "raises_in_train train" in attention and "injected fault in train" in attention
    assert text.index('id="attention"') < text.index('id="map"')


@pytest.mark.slow
def test_links_to_traces_and_logs_are_relative_and_exist(swept) -> None:
    _, out = swept
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    files = [attributes["href"] for tag, attributes in page.tags if tag == "a" and not attributes.get("href", "#").startswith("#")]
    assert any(name.endswith(".pt.trace.json.gz") for name in files) and any(name.endswith(".log") for name in files)
    for name in files:
        assert not Path(name).is_absolute() and (out / name).is_file(), name


def test_a_report_that_cannot_be_drawn_is_a_warning_not_a_lost_sweep(tmp_path, monkeypatch, caplog) -> None:
    def broken(summary: Summary) -> str:
        raise RuntimeError("no plots today")

    def case(spec: CaseSpec, name: str, out_dir: Path, on_phase: object = None) -> CaseResult:
        return CaseResult(model=name, mode=spec.mode, device="cpu", status="ok", batch_size=2, step_time=StepTime(1.0, 0.1, 1.0, 10))

    monkeypatch.setattr(outdir, "render_report", broken)
    options = sweep.SweepOptions(out_dir=tmp_path, progress=False)
    with caplog.at_level(logging.WARNING, logger="torchbenchmark.run.outdir"):
        outcome = sweep.run_sweep(["alexnet"], ["eval"], options, stand_ins.machinery(case))
    assert outcome.exit_status == 0 and outcome.report is None
    assert (tmp_path / "summary.json").is_file() and not (tmp_path / "report.html").exists()
    assert "report.html not written: RuntimeError: no plots today" in caplog.text


# The full suite ---------------------------------------------------------------------------------------


def test_the_full_suite_fits_in_three_megabytes() -> None:
    summary = load_summary(REFERENCE)
    text = report.render_report(summary)
    assert len(text.encode("utf-8")) <= MAX_PAGE_BYTES
    page = Page(text)
    assert len(summary.rows) == 74 and all(report.case_id(row) in page.ids() for row in summary.rows)
    assert network_references(text) == []


# The page's structure, pinned -------------------------------------------------------------------------

ENV = {
    "host": "box",
    "cpu": "Test CPU",
    "cpu_count": 2,
    "device_name": "Test CPU",
    "torch": "2.14.1",
    "started_at": "2026-11-30T03:00:00+00:00",
    "command": "diagnostics.py --models all",
}


def ok_row(model: str, mode: str, ms: float, overhead: float, verdict: str, **fields: object) -> CaseResult:
    figures = dict(
        batch_size=4,
        family="test",
        step_time=StepTime(ms, ms / 20, ms * 0.9, 30),
        distortion=Distortion(2.0, 40.0),
        edge_distortion_pct=0.5,
        phases_pct={"forward": 30.0, "backward": 50.0, "optimizer": 15.0} if mode == "train" else None,
        dispatch=Dispatch(verdict, overhead, 120, 3.0, 1.1),
        top_ops=(TopOp("aten::mm", ms / 2, 3, 50.0),),
        traces=Traces(f"{model}/{mode}-cpu.pt.trace.json.gz"),
        log=f"{model}/{mode}-cpu.log",
        warmup=Warmup(steady=True),
        measurement=Measurement(2, 1.0, True),
        samples=Samples((ms,), ((ms,),)),
    )
    return CaseResult(model=model, mode=mode, device="cpu", status="ok", **{**figures, **fields})


def golden_summary() -> Summary:
    rows = (
        ok_row("convnet", "train", 300.0, 0.01, "compute-bound"),
        ok_row("convnet", "eval", 100.0, 0.02, "compute-bound", measurement=Measurement(2, 12.0, False)),
        ok_row(
            "convnet",
            "train",
            150.0,
            0.01,
            "compute-bound",
            variant="inductor",
            speedup_vs_eager=2.0,
            compile=CompileReport("inductor", "default", 12.5, 2, 1, (GraphBreak("data-dependent branch", "net.py:12", 3),), 0),
            costs=Costs(3_000_000_000, {"matmul": 3_000_000_000}, None, 20.0, 12.5, "kernels", 512.0, 100.0, "profiler", None, 26.7),
        ),
        ok_row("tiny_rl", "eval", 0.2, 0.7, "dispatch-bound"),
        CaseResult(model="broken", mode="train", device="cpu", status="failed", error="RuntimeError: boom", log="broken/train-cpu.log"),
    )
    return summary_of_records([RunRecord("20261130T030000.000000Z-abcd", ENV, ENV["command"], rows)], "golden")


GOLDEN_OUTLINE = [
    "h1 torchbenchmark report",
    "section#environment",
    "h2 Environment and runs",
    "section#attention",
    "h2 Rows to read with care",
    "section#map",
    "h2 Suite map",
    "section#step-time",
    "h2 Step time and its spread",
    "section#phases",
    "h2 Forward, backward and optimizer",
    "section#distortion",
    "h2 Profiler distortion",
    "section#speedup",
    "h2 Speedup over eager",
    "section#table",
    "h2 Every row",
    "section#cases",
    "h2 Cases",
    "article#case-broken-train-cpu-eager",
    "article#case-convnet-eval-cpu-eager",
    "article#case-convnet-train-cpu-eager",
    "article#case-convnet-train-cpu-inductor",
    "article#case-tiny_rl-eval-cpu-eager",
]


def test_the_page_structure_is_pinned() -> None:
    page = Page(report.render_report(golden_summary()))
    assert page.outline == GOLDEN_OUTLINE
    assert page.svgs() == 2 and page.bar_charts() == 3  # map, speedup; step time, phases, distortion


def test_the_golden_page_flags_what_it_should_and_shows_extra_figures() -> None:
    text = report.render_report(golden_summary())
    attention = text[text.index('id="attention"') : text.index('id="map"')]
    assert "broken train" in attention and "RuntimeError: boom" in attention
    assert "convnet eval" in attention and "noisy: windows 12% apart" in attention
    assert "tiny_rl" not in attention and "convnet train cpu</a>" not in attention
    assert "speedup vs eager (x)" in text and "2.00" in text  # figures only some rows have, shown when present
    assert "12.5 s to compile, 2 graphs, 1 graph breaks" in text and "data-dependent branch at net.py:12" in text
    assert "peak memory MB</dt><dd>512" in text and "GFLOP/step</dt><dd>3.00" in text and "compute limit</dt><dd>kernels" in text


def test_a_case_section_shows_the_estimates_terms_each_with_what_it_counts() -> None:
    terms = {"call": 100.0, "nested": 40.0, "python": 70.0}
    dispatch = Dispatch("dispatch-bound", 0.7, 120, 3.0, 1.1, terms_us=terms, warm_gap_us=130.0, real_gap_us=250.0)
    row = ok_row("tiny_rl", "eval", 0.3, 0.7, "dispatch-bound", dispatch=dispatch)
    text = report.render_report(summary_of_records([RunRecord("r", ENV, None, (row,))], "terms"))
    assert "overhead terms" in text and "overhead 210 µs a step = call 100 + nested 40 + python 70" in text
    assert "python 70 µs: Python between ops that made no op event" in text
    assert "(replayed gap 130 µs, the real steps&#x27; 250 µs)" in text  # the replay's mark's evidence
    assert "overhead terms" not in report.render_report(golden_summary())  # rows without terms: no such line
    assert repr(row).endswith("; overhead 210 µs a step = call 100 + nested 40 + python 70)")


def test_a_case_section_says_which_steps_make_the_step_time_and_how_every_step_spread() -> None:
    """The mark for steps left out that spread once their waits are taken off has its evidence on the case's line."""
    split = TimeSplit("schedstat", 90.0, 9.0, 1.0, 0.0, steps_measured=12, steps_kept=3, unwaited_iqr_pct=3100.0)
    lean = ok_row("jittery", "train", 0.16, 0.1, "compute-bound", time_split=split)
    text = report.render_report(summary_of_records([RunRecord("r", ENV, None, (lean,))], "lean"))
    assert "3 of 12 steps ran with no wait and make the step time" in text
    assert "every step less its wait spreads 3100% of their median (IQR)" in text
    assert "IQR 3100% of the median counting the 9 steps left out, their waits taken off" in text
    contended = dataclasses.replace(lean, time_split=dataclasses.replace(split, steps_kept=2, unwaited_iqr_pct=None))
    text = report.render_report(summary_of_records([RunRecord("r", ENV, None, (contended,))], "contended"))
    assert "only 2 of 12 steps ran with no wait: every step makes the step time" in text and "spreads" not in text


def test_the_table_shows_each_figure_once_beside_a_variant_row() -> None:
    rows = golden_summary().rows
    columns = report.table_columns(rows)
    headers = [column.header for column in columns]
    figures = [column.figure for column in columns if column.figure]
    assert len(set(headers)) == len(headers) and len(set(figures)) == len(figures), headers
    assert {"speedup x", "eager bound x"} <= set(headers)  # summary.txt's, for the variant row
    assert not {"speedup vs eager (x)", "speedup bound (x)"} & set(headers)  # and not the page's again
    costs = next(row.costs for row in rows if row.costs is not None)
    cache = dataclasses.replace(rows[0], costs=dataclasses.replace(costs, cache_memory_mb=3.5))
    assert "cache MB" in [column.header for column in report.table_columns([cache, *rows[1:]])]  # a figure summary.txt lacks


def test_a_run_where_nothing_ran_ok_still_gets_its_page() -> None:
    failed = CaseResult(model="broken", mode="train", device="cpu", status="failed", error="RuntimeError: boom")
    page = Page(report.render_report(summary_of_records([RunRecord("r", ENV, None, (failed,))], "failed")))
    assert page.svgs() == 0 and report.case_id(failed) in page.ids()
    assert [entry for entry in page.outline if entry.startswith("section")] == [
        entry for entry in GOLDEN_OUTLINE if entry.startswith("section") and entry != "section#speedup"
    ]


# The comparison page ----------------------------------------------------------------------------------


def write_side(path: Path, *rows: CaseResult) -> Path:
    path.write_text(json.dumps(RunRecord(path.stem, ENV, None, rows).to_dict()))
    return path


@pytest.mark.slow
def test_compare_html_writes_the_comparison_page_regressions_first(tmp_path) -> None:
    slow = [
        ok_row("convnet", "train", 300.0, 0.01, "compute-bound", samples=Samples((300.0,) * 3, ())),
        ok_row("tiny_rl", "eval", 0.2, 0.7, "dispatch-bound", samples=Samples((0.2,) * 3, ())),
    ]
    fast = [
        ok_row("convnet", "train", 300.0, 0.01, "compute-bound", samples=Samples((300.0,) * 3, ())),
        ok_row("tiny_rl", "eval", 0.26, 0.7, "dispatch-bound", samples=Samples((0.26,) * 3, ())),
    ]
    base, new = write_side(tmp_path / "base.json", *slow), write_side(tmp_path / "new.json", *fast)
    done = diagnostics("compare", str(base), str(new), "--html", str(tmp_path / "cmp.html"))
    assert done.returncode == 1, done.stderr
    text = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert network_references(text) == []
    page = Page(text)
    assert [entry for entry in page.outline if entry.startswith("section")] == [
        "section#verdict",
        "section#ratios",
        "section#cases",
        "section#ops",  # the slower case's traces are not there, and its section says so
        "section#environments",
    ]
    assert "light trace is missing" in text
    assert page.svgs() == 1
    body = text[text.index("<tbody>") :]
    assert body.index("tiny_rl") < body.index("convnet")  # the regression first
    assert "1.300" in body and ">slower<" in body
    assert "This comparison catches slowdowns of 7.2% or more, 9 times in 10, in the median case" in text  # 3 a side, at the floor


@pytest.mark.slow
def test_compare_html_to_an_unwritable_place_is_a_usage_error(tmp_path) -> None:
    side = write_side(tmp_path / "side.json", ok_row("convnet", "train", 300.0, 0.01, "compute-bound"))
    done = diagnostics("compare", str(side), str(side), "--html", str(tmp_path / "no" / "such" / "page.html"))
    assert done.returncode == 2 and "--html" in done.stderr


# The notebook view -------------------------------------------------------------------------------------


def test_a_summary_renders_in_a_notebook_with_the_same_plots() -> None:
    summary = api.Summary(**vars(golden_summary()))
    fragment = summary._repr_html_()
    page = Page(fragment)
    assert "<html" not in fragment and "<style>" in fragment
    assert page.svgs() == Page(report.render_report(summary)).svgs()
    assert all(report.case_id(row) in page.ids() for row in summary.rows)


def test_a_comparison_renders_in_a_notebook() -> None:
    base = summary_of_records(
        [RunRecord("a", ENV, None, (ok_row("m", "train", 10.0, 0.1, "compute-bound", samples=Samples((10.0,) * 3, ())),))], "a"
    )
    new = summary_of_records(
        [RunRecord("b", ENV, None, (ok_row("m", "train", 13.0, 0.1, "compute-bound", samples=Samples((13.0,) * 3, ())),))], "b"
    )
    fragment = compare(base, new)._repr_html_()
    assert Page(fragment).svgs() == 1 and "1 regression" in fragment and 'href="#case-m-train-cpu-eager"' in fragment


def test_to_dataframe_has_a_row_per_case_and_a_column_per_figure() -> None:
    import pandas  # in requirements.txt, though not a requirement of the package

    frame = golden_summary().to_dataframe()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 5
    assert {
        "model",
        "mode",
        "variant",
        "median_ms",
        "verdict",
        "overhead_fraction",
        "speedup_vs_eager",
        "peak_memory_mb",
        "flops_per_step",
    } <= set(frame.columns)
    assert frame.set_index(["model", "mode", "variant"]).loc[("tiny_rl", "eval", "eager"), "median_ms"] == 0.2
    base = golden_summary()
    comparison = compare(base, base).to_dataframe()
    assert len(comparison) == 5 and {"call", "ratio", "low", "high"} <= set(comparison.columns)


def test_to_dataframe_without_pandas_says_how_to_get_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        golden_summary().to_dataframe()


# In a real browser --------------------------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium; .ci/run installs it, so on CI its absence is a failure, not a skip."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return path


def load_in_browser(page: Path, profile: Path, *flags: str) -> tuple[str, list[str]]:
    """The DOM after headless Chromium loaded ``page``, and every console message it logged."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
            *flags,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.slow
def test_the_console_check_catches_a_script_error(tmp_path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>noSuchFunction();</script></body></html>")
    _, console = load_in_browser(broken, tmp_path / "profile", "--dump-dom")
    assert any("noSuchFunction" in line for line in console)


@pytest.mark.slow
def test_chromium_loads_the_report_with_no_console_errors(swept, tmp_path) -> None:
    _, out = swept
    dom, console = load_in_browser(out / "report.html", tmp_path / "profile", "--dump-dom")
    assert console == []
    assert 'title="click to sort"' in dom  # the sorting script ran
    rows = json.loads((out / "summary.json").read_text())["results"]
    assert all(report.case_id(CaseResult.from_dict(row)) in dom for row in rows)
    assert dom.count("<svg") >= 1 and dom.count('<table class="bars') == 3
    shot = tmp_path / "report.png"
    _, console = load_in_browser(out / "report.html", tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1280,1600")
    assert console == [] and shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_chromium_loads_the_comparison_page_with_no_console_errors(swept, tmp_path) -> None:
    _, out = swept
    # --allow-inconclusive: on a loaded machine the rows are marked and the call says so; the page is the test.
    done = diagnostics("compare", str(out), str(out), "--html", str(tmp_path / "cmp.html"), "--allow-inconclusive")
    assert done.returncode == 0, done.stderr
    dom, console = load_in_browser(tmp_path / "cmp.html", tmp_path / "profile", "--dump-dom")
    assert console == [] and 'title="click to sort"' in dom


# The per-case bar charts ------------------------------------------------------------------------------


def marks(chart: str, css: str) -> dict[str, list[tuple[float, float]]]:
    """Each case's spans of class ``css``, as (left %, width %), by the case's anchor."""
    found = {}
    for anchor, track in re.findall(r'<tr><th><a href="#([^"]+)">.*?<div class="track">(.*?)</div>', chart):
        spans = re.findall(rf'<span class="{css}[^"]*" style="left:([\d.-]+)%;width:([\d.-]+)%"', track)
        found[anchor] = [(float(left), float(width)) for left, width in spans]
    return found


def test_the_bar_charts_place_every_case_on_one_scale() -> None:
    from torchbenchmark.report import bars

    rows = [row for row in golden_summary().rows if row.status == "ok"]
    steps = bars.step_times(rows)
    dots = {anchor: spans[0][0] for anchor, spans in marks(steps, "dot").items()}
    assert set(dots) == {report.case_id(row) for row in rows}
    by_time = sorted(rows, key=lambda row: row.step_time.median_ms)
    assert [dots[report.case_id(row)] for row in by_time] == sorted(dots.values())  # one log axis, in order
    assert all(0 <= left <= 100 for left in dots.values())
    fastest, slowest = by_time[0], by_time[-1]  # 0.2 ms and 300 ms: log spacing, not linear
    middle = next(row for row in rows if row.step_time.median_ms == 100.0)
    assert dots[report.case_id(middle)] > 50 + (dots[report.case_id(slowest)] - dots[report.case_id(fastest)]) / 4
    for anchor, spans in marks(bars.phase_split(rows), "part").items():
        assert abs(sum(width for _, width in spans) - 100) < 0.1, anchor  # forward, backward, optimizer, other
        assert [left for left, _ in spans] == sorted(left for left, _ in spans)
    detailed = marks(bars.distortion(rows), "bar profile-detailed")
    light = marks(bars.distortion(rows), "bar profile-light")
    assert all(detailed[a][0][1] > light[a][0][1] > 0 for a in detailed)  # +40% is longer than +2%
    assert bars.step_times([rows[0].__class__(model="x", mode="eval", device="cpu", status="failed")]) is None


# --- what the pages claim, and where their links lead ----------------------------------------------------


def test_the_pages_claim_nothing_of_the_detailed_trace_it_does_not_hold() -> None:
    from tests.helpers.pages import text_of

    summary = load_summary(REFERENCE)
    pages = [report.render_report(summary), report.render_comparison_report(compare(summary, summary), summary, summary)]
    for prose in (part for page_html in pages for _, part in re.findall(r"<(p|figcaption|li)\b[^>]*>(.*?)</\1>", page_html, re.S)):
        for sentence in re.split(r"(?<=[.:;])\s", text_of(prose)):
            if "detailed" in sentence.lower():
                assert "flop" not in sentence.lower(), sentence


def test_one_case_is_one_case_on_both_pages() -> None:
    from tests.helpers.pages import one_case, text_of

    summary = one_case(load_summary(REFERENCE))
    for text in (
        text_of(report.render_report(summary)),
        text_of(report.render_comparison_report(compare(summary, summary), summary, summary)),
    ):
        assert not re.search(r"\b1 (cases|rows|runs|regressions|ranks|collectives)\b", text), text[:500]
        assert "1 case" in text


def test_the_environment_tables_scroll_inside_their_box() -> None:
    summary = load_summary(REFERENCE)
    compared = report.render_comparison_report(compare(summary, summary), summary, summary)
    assert re.search(r'<div class="scroll"><table class="environments">', compared)
    assert ".tb-report .scroll { overflow-x: auto; }" in compared
    assert re.search(r'<div class="scroll"><table class="sortable">', report.render_report(summary))


def test_no_page_links_a_row_path_that_leaves_the_folder(tmp_path: Path) -> None:
    """The sweep's own page too: a record put in the folder by hand cannot make it link out."""
    from tests.helpers.pages import assert_links_stay_inside
    from torchbenchmark.results.schema import Distributed, RankFigures, Status

    rank = RankFigures(rank=1, host="h", step_median_ms=2.0, comm_pct=1.0, exposed_comm_pct=0.5, trace="../../../etc/shadow")
    distributed = Distributed(2, "gloo", 1, (rank,), 0.0, 1.0, 0.5, 50.0, True)
    row = CaseResult(
        model="m", mode="train", device="cpu", status=Status.OK, step_time=StepTime(2.0, 0.1, 2.0, 10),
        log="../../etc/passwd", traces=Traces("/etc/passwd", "javascript:alert(1)"), distributed=distributed,
    )  # fmt: skip
    page = report.render_report(summary_of_records([RunRecord("r", {"host": "h"}, rows=(row,))], str(tmp_path)))
    assert "not linked: its path leaves the output folder" in page
    assert_links_stay_inside(page)
