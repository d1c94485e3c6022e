"""The report page for the full suite: its size, how long it takes to draw, and the README's screenshot of it.

    python benchmarks/report_page.py [--rounds 3] [--screenshot benchmarks/report.png]

Draws ``report.html`` from the reference run's summary (benchmarks/reference/) ``--rounds`` times in
this process and quotes the median; then loads the page in headless Chromium, which must log
nothing to its console, and saves a screenshot of its top.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.api import load_summary
from torchbenchmark.report.page import render_report

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "benchmarks" / "reference" / "summary.json"
LIMIT_MB = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--screenshot", type=Path, default=ROOT / "benchmarks" / "report.png")
    args = parser.parse_args()
    os.chdir(ROOT)  # the page names its source as given: a path relative to the repository
    summary = load_summary(REFERENCE.relative_to(ROOT))
    seconds, page = [], ""
    for _ in range(args.rounds):
        started = time.perf_counter()
        page = render_report(summary)
        seconds.append(time.perf_counter() - started)
    notebook = summary._repr_html_()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(page, encoding="utf-8")
        chromium = shutil.which("chromium")
        if chromium is None:
            raise SystemExit("chromium is needed for the screenshot: apt-get install chromium")
        done = subprocess.run(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={folder}/profile",
             "--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--window-size=1280,2000",
             f"--screenshot={args.screenshot.resolve()}", path.as_uri()],
            capture_output=True, text=True, timeout=180, check=True,
        )  # fmt: skip
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    rows = [
        ("cases", len(summary.rows)),
        ("page, MB", f"{len(page.encode()) / 1e6:.2f} (limit {LIMIT_MB:g})"),
        ("notebook view, MB", f"{len(notebook.encode()) / 1e6:.2f}"),
        ("plots (inline SVG)", len(re.findall(r"<svg\b", page))),
        ("draw, s: median (min, max)", f"{statistics.median(seconds):.2f} ({min(seconds):.2f}, {max(seconds):.2f})"),
        ("Chromium console messages", len(console)),
    ]
    table = tabulate(rows, headers=["report.html of the reference run", ""], disable_numparse=True)
    record("Report page", table, f"Screenshot: {args.screenshot.resolve().relative_to(ROOT)}, 1280 x 2000 px.")
    if console:
        raise SystemExit("console messages:\n" + "\n".join(console))


if __name__ == "__main__":
    main()
