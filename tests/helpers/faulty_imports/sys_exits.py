"""A plug-in file whose import calls sys.exit(3)."""

import sys

from tests.helpers.faulty_models import Healthy as SysExitsAtImport  # noqa: F401

sys.exit(3)
