"""A plug-in file whose import crashes the interpreter with a real SIGSEGV."""

import ctypes

from tests.helpers.faulty_models import Healthy as SegfaultsAtImport  # noqa: F401

ctypes.string_at(0)
