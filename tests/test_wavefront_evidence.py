"""At the wavefront the evidence names every attribute on which the suspect's call differs
from its peers' (op, call site, sizes, dtypes), whatever attribute decided the class: a
wrong tensor passed from a neighbouring line shows its call site and its sizes or dtype."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from cellmaker import make_cells

import analysis
from analysis.diagnosis.mismatch import attributes_that_differ
from analysis.diagnosis.model_mismatches import model_mismatches
from analysis.model.families import program_families
from benchmarks.corpus import generate_case

_real = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch (a dev dependency) is not installed"),
]


def test_every_attribute_that_differs_is_kept_with_both_values() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": 5, "sizes": "[[4]]", "call_site": "t.py:21 in f"} for r in range(3)]
    rows.append({"pg_key": "1", "rank": 3, "seq": 5, "sizes": "[[0]]", "call_site": "t.py:19 in f"})
    cells = make_cells(rows)
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))
    assert attributes_that_differ(cells, m) == {
        "call_site": {"odd": {3: "t.py:19 in f"}, "others": "t.py:21 in f"},
        "input_sizes": {"odd": {3: "[[0]]"}, "others": "[[4]]"},
    }


@pytest.mark.parametrize(
    ("kind", "family", "seed", "attribute"),
    [
        pytest.param("nccl", "size_mismatch_branch", 0, "input sizes", id="nccl-size"),
        pytest.param("nccl", "dtype_mismatch_branch", 1, "dtypes", id="nccl-dtype"),
        pytest.param("gloo", "size_mismatch_branch", 1, "input sizes", id="gloo-size", marks=_real),
        pytest.param("gloo", "dtype_mismatch_branch", 1, "dtypes", id="gloo-dtype", marks=_real),
    ],
)
def test_a_wrong_tensor_from_a_neighbouring_line_shows_both(tmp_path: Path, kind, family, seed, attribute) -> None:
    truth = generate_case(kind, family, seed, tmp_path)
    report = analysis.analyze(tmp_path, use_cache=False)
    (culprit,) = truth["culprit_ranks"]
    assert report.suspect_ranks == [culprit]
    assert report.failure_class == truth["accepted_classes"][0]
    first = report.evidence[0]
    # the class's attribute first, with both values; the call sites that differ too, with both
    shown = re.search(
        rf"the {attribute} differ: rank {culprit}: (?P<theirs>.+?), while .+? issued (?P<usual>.+?)\.", first
    )
    assert shown and shown["theirs"] != shown["usual"], first
    sites = re.search(
        rf"call sites \(rank {culprit}: (?P<theirs>[^;]+); the others: (?P<usual>[^)]+)\) differ too", first
    )
    assert sites and sites["theirs"] != sites["usual"], first
