"""Build the optional compiled speed-ups (beirx/_speedups.c); everything else is in pyproject.toml.

The extension is ``optional``: without a C compiler ``pip install`` still succeeds and beirx runs
the pure-Python twins of the same functions (see beirx/speedups.py), with identical output.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("beirx._speedups", ["beirx/_speedups.c"], optional=True)])
