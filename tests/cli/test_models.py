"""What the command line runs (cli/models.py): a plug-in whose declared name cannot name a folder, or a
spec that names no class, is a usage error of one line, before anything is written.

The plug-ins are imported once, for real, in children (one per file, side by side); each refusal then runs
the real command line with those imports handed in as its probes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.places import Place
from tests.helpers.processes import ROOT
from tests.helpers.specs import BAD_NAMES, faulty, hostile
from tests.helpers.stand_ins import machinery, unused
from tests.helpers.sweeps import FAST
from torchbenchmark import cli
from torchbenchmark.run.plugins import PluginProbe, probe_plugins

# Every test reads the plug-ins imported once for the file: one worker runs them all.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_models")]

NO_CLASS = {
    "class-part-is-a-path": (faulty("../../../x"), "'../../../x' is not a class name"),
    "file-without-.py": (f"{ROOT / 'README.md'}:Model", "a plug-in file must be a Python file ending in .py"),
}
CONTROL_NAME = hostile("ControlName")


@pytest.fixture(scope="module")
def probes() -> dict[str, PluginProbe]:
    """Each plug-in of this file's tests, imported as a sweep imports it."""
    return probe_plugins([*(faulty(model) for model in BAD_NAMES), *(spec for spec, _ in NO_CLASS.values()), CONTROL_NAME])


@pytest.mark.parametrize("model", sorted(BAD_NAMES))
def test_cli_refuses_a_plugin_whose_name_is_not_a_folder_name(place: Place, capsys, probes, model: str) -> None:
    status = cli.main(["--models", faulty(model), "--out", str(place.out), *FAST], machinery(unused, probes=probes))
    one_line_error(capsys.readouterr().err, BAD_NAMES[model])
    assert status == 2
    assert not place.out.exists()
    place.check_contained()


@pytest.mark.parametrize("case", sorted(NO_CLASS))
def test_cli_refuses_a_spec_that_names_no_class(place: Place, capsys, probes, case: str) -> None:
    spec, message = NO_CLASS[case]
    assert cli.main(["--models", spec, "--out", str(place.out), *FAST], machinery(unused, probes=probes)) == 2
    one_line_error(capsys.readouterr().err, message)
    assert not place.out.exists()
    place.check_contained()


def test_a_plugin_named_with_escapes_is_refused_in_one_escaped_line(tmp_path: Path, capsys, probes) -> None:
    out = tmp_path / "out"
    assert cli.main(["--models", CONTROL_NAME, "--out", str(out), *FAST], machinery(unused, probes=probes)) == 2
    err = capsys.readouterr().err
    one_line_error(err, "contains a control, format or separator character", "\\x1b[2J")
    assert "\x1b" not in err and not out.exists()
