"""The command line as a test runs it: ``diagnostics.py`` in a process of its own, and the one line a refusal is."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers.processes import ROOT


def diagnostics(*args: str, env: dict[str, str] | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """``python diagnostics.py args`` from the repository's root, with ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def one_line_error(err: str, *fragments: str) -> None:
    """``err`` is one usage error, ``diagnostics.py: error: ...`` on one line, holding every fragment."""
    assert err.startswith("diagnostics.py: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
