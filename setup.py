"""Builds the optional native scanner: ``python setup.py build_ext --inplace``.

Flight Deck works without it (the pure-Python path gives the same tables, slower);
``scripts/setup.sh`` builds it when a C compiler is there.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("analysis.ingest._frscan", ["analysis/ingest/_frscan.c"], extra_compile_args=["-O2", "-Wall"])
    ],
    packages=[],
)
