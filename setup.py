"""What ``pyproject.toml`` cannot say: the optional native scanner, and the sample dumps
shipped inside the dashboard.

- ``analysis.ingest._frscan`` (C) reads pickle dumps several times faster. It is optional:
  without a C compiler the install goes on and Flight Deck reads on the pure-Python path,
  which gives the same tables.
- ``sample_dumps/`` (real dumps of small hung jobs) is copied into a built package as
  ``dashboard/sample_dumps``, so an installed dashboard opens on them as the checkout's
  does. An editable install reads them where they are.
"""

import shutil
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

SAMPLES = Path(__file__).resolve().parent / "sample_dumps"


class BuildWithSamples(build_py):
    """build_py, plus the sample dumps (data, not a package) under ``dashboard/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode or not SAMPLES.is_dir():
            return
        target = Path(self.build_lib) / "dashboard" / "sample_dumps"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SAMPLES, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))


setup(
    packages=find_packages(include=["analysis", "analysis.*", "dashboard", "dashboard.*"]),
    package_data={"dashboard": [".streamlit/config.toml"]},
    ext_modules=[
        Extension(
            "analysis.ingest._frscan",
            ["analysis/ingest/_frscan.c"],
            extra_compile_args=["-O2", "-Wall"],
            optional=True,  # no compiler: a warning, and the pure-Python reader
        )
    ],
    cmdclass={"build_py": BuildWithSamples},
)
