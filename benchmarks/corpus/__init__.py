"""A corpus of hung (or healthy) training-run dump sets with ground truth.

``generate_case(kind, family, seed, out_dir)`` makes one case: ``kind`` is
``gloo`` (a real torch run over gloo, forked ranks on this machine) or
``nccl`` (NCCL-shaped dumps written from a simulated run of the same job);
``family`` is one of ``FAMILIES``. The dumps go to ``out_dir`` with a
``truth.json`` (see ``benchmarks/README.md``). ``python -m benchmarks.accuracy``
grades an analyser on fresh cases.
"""

from benchmarks.corpus.case import TRUTH_FILE, CaseSkipped, generate_case
from benchmarks.corpus.families import FAMILIES, KINDS, cases_of

__all__ = ["FAMILIES", "KINDS", "TRUTH_FILE", "CaseSkipped", "cases_of", "generate_case"]
