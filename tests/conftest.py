"""Shared pytest setup: quiet the profiler's native logging before torch is imported."""

import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
