"""``diagnostics.py --list`` (cli/listing.py) on plug-ins: one that cannot be imported shows its own error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.places import placed
from tests.helpers.processes import HELPERS, TOKEN_ENV
from tests.helpers.specs import IMPORT_FAULTS
from tests.helpers.sweeps import TINY
from torchbenchmark import cli


@pytest.mark.slow
def test_list_shows_a_plugins_own_import_error(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = f"{HELPERS / 'broken_plugin.py'}:BrokenModel"
    exits = f"{IMPORT_FAULTS / 'exits_quietly.py'}:ExitsAtImport"
    with placed(tmp_path) as place:
        monkeypatch.setenv(TOKEN_ENV, place.token)  # the imports' children carry it
        assert cli.main(["--list", "--models", f"{TINY},{broken},{exits}"]) == 0
        lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
        assert lines["tiny_mlp"].endswith("yes")
        assert "unavailable: RuntimeError: injected fault while importing the plug-in" in lines[broken]
        assert "has no class" not in lines[broken]
        assert "ended the process with status 0" in lines[exits]
        place.check_contained()
