"""A corpus of hung (or healthy) training-run dump sets with ground truth.

``generate_case(kind, family, seed, out_dir)`` makes one case: ``kind`` is
``gloo`` (a real torch run over gloo, forked ranks on this machine) or
``nccl`` (NCCL-shaped dumps written from a simulated run of the same job);
``family`` is one of ``FAMILIES``; the program shape (``SHAPES``: ``megatron``
or ``fsdp``) is drawn from the seed unless ``shape=`` forces it. The dumps go to ``out_dir`` with a
``truth.json`` (see ``benchmarks/README.md``). ``python -m benchmarks.accuracy``
grades an analyser on fresh cases.
"""

from benchmarks.corpus.case import TRUTH_FILE, CaseSkipped, generate_case
from benchmarks.corpus.families import FAMILIES, KINDS, cases_of
from benchmarks.corpus.topology import SHAPES

__all__ = ["FAMILIES", "KINDS", "SHAPES", "TRUTH_FILE", "CaseSkipped", "cases_of", "generate_case"]
