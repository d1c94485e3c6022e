"""A plug-in file whose import never finishes."""

import time

from tests.helpers.faulty_models import Healthy as HangsAtImport  # noqa: F401

while True:
    time.sleep(60)
