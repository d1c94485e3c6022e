"""A shim for tools that look for setup.py: every setting lives in pyproject.toml."""

from setuptools import setup

setup()
