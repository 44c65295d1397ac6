"""Fuzzing the loader and the analysis from real dumps: nothing may crash or hang.

A few hundred cases here; ``fuzz/run_fuzz.py`` runs ten thousand and more.
"""

from __future__ import annotations

import copy
import math
import pickle
import random
import time
from pathlib import Path

import pytest
from fuzzing import (
    ENTRY_FIELDS,
    FUZZ_LIMITS,
    Fuzzer,
    decode_sets,
    fuzz,
    make_gloo_dumps,
    mutate,
    seed_sets,
    serialize,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis import analyze, analyze_dumps
from analysis.ingest.parse import parse_dump
from analysis.tables.load import combine
from analysis.types import DumpFormatError, FileError


@pytest.fixture(scope="module")
def gloo_dir(tmp_path_factory) -> Path | None:
    """Real gloo dumps: only made when no committed sample set is there to seed from."""
    if decode_sets(seed_sets()):
        return None
    out = tmp_path_factory.mktemp("gloo")
    pytest.importorskip("torch")
    return out if make_gloo_dumps(out) else None


@pytest.fixture(scope="module")
def seeds(gloo_dir) -> dict[str, dict[int, dict]]:
    decoded = decode_sets(seed_sets((gloo_dir,) if gloo_dir else ()))
    if not decoded:
        pytest.skip("no real dumps to seed from")
    return decoded


def test_mutation_fuzzer_in_child_processes(gloo_dir) -> None:
    """300 cases through the watchdog: each bounded in time, in memory and in files."""
    summary = fuzz(300, seed=20251202, workers=2, timeout=30.0, file_share=0.25, gloo_dir=gloo_dir)
    details = "\n".join(f"case {i}: {d}" for i, d in summary.crashes[:5])
    assert not summary.crashes, f"{summary.line()}\n{details}"
    assert not summary.hangs, summary.line()
    assert summary.cases == 300


def _analyze_in_memory(raws: dict[int, object]) -> tuple[object, list[FileError]]:
    parts, errors = [], []
    for r, raw in raws.items():
        try:
            parts.append(parse_dump(raw, r, f"rank_{r}", "pickle", FUZZ_LIMITS))
        except (DumpFormatError, RecursionError) as exc:
            errors.append(FileError(f"rank_{r}", str(exc)))
    return analyze_dumps(combine(parts, errors)), errors


_hostile = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(min_value=-(2**65), max_value=2**65), max_size=4),
    st.lists(st.lists(st.integers(min_value=-5, max_value=2**64), max_size=3), max_size=3),
    st.tuples(st.text(max_size=5), st.text(max_size=5)),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_any_field_any_value(seeds, data) -> None:
    """Any entry field of any rank set to any value: a per-file error or a result, never a crash."""
    name = data.draw(st.sampled_from(sorted(seeds)))
    ranks = sorted(seeds[name])
    chosen = data.draw(st.lists(st.sampled_from(ranks), min_size=1, max_size=3, unique=True))
    bad = data.draw(st.sampled_from(chosen))
    raws = {r: copy.deepcopy(seeds[name][r]) for r in chosen}
    entries = raws[bad].get("entries") or []
    edits = data.draw(st.lists(st.tuples(st.sampled_from(ENTRY_FIELDS), _hostile), min_size=1, max_size=3))
    for field_name, value in edits:
        if entries:
            entries[data.draw(st.integers(0, len(entries) - 1))][field_name] = value
        else:
            raws[bad][field_name] = value
    t0 = time.monotonic()
    report, errors = _analyze_in_memory(raws)
    assert time.monotonic() - t0 < 20
    loaded = set(report.analysis.dumps.ranks)
    assert set(chosen) - {bad} <= loaded
    assert bad in loaded or [e.file for e in errors] == [f"rank_{bad}"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_property_structural_mutations(seeds, seed) -> None:
    """Random structural mutations (drops, retypes, nesting, DAGs, versions) of one rank."""
    rng = random.Random(seed)
    name = rng.choice(sorted(seeds))
    ranks = sorted(seeds[name])[:3]
    bad = rng.choice(ranks)
    raws = {r: pickle.loads(pickle.dumps(seeds[name][r])) for r in ranks}
    raws[bad], _ = mutate(rng, raws[bad])
    t0 = time.monotonic()
    report, _ = _analyze_in_memory(raws)
    assert time.monotonic() - t0 < 20
    assert set(ranks) - {bad} <= set(report.analysis.dumps.ranks)


def test_duplicate_rank_claims_and_mixed_formats(seeds, tmp_path: Path) -> None:
    """``rank_3`` and ``rank_3.json`` both claim rank 3; pickle and JSON side by side."""
    name = min(seeds)
    ranks = sorted(seeds[name])[:4]
    rng = random.Random(7)
    for i, r in enumerate(ranks):
        raw = seeds[name][r]
        data, suffix = serialize(rng, raw, pickle_only=i % 2 == 0)
        (tmp_path / f"rank_{r}{suffix}").write_bytes(data)
    dup = ranks[-1]
    (tmp_path / f"rank_{dup}.json").write_bytes(b'{"version": "2.10", "entries": "not a list"}')
    (tmp_path / f"rank_{dup}.pkl").write_bytes(pickle.dumps(seeds[name][dup], 2))
    report = analyze(tmp_path, workers=1)
    assert set(ranks) <= set(report.analysis.dumps.ranks)
    dup_errors = [e for e in report.file_errors if "duplicate rank" in e.error]
    assert len(dup_errors) >= 1


def test_nan_and_inf_times_and_none_seq(seeds) -> None:
    name = min(seeds)
    ranks = sorted(seeds[name])[:2]
    raws = {r: copy.deepcopy(seeds[name][r]) for r in ranks}
    bad = raws[ranks[0]]
    if not bad.get("entries"):
        pytest.skip("seed has no entries")
    bad["entries"][0]["time_created_ns"] = math.nan
    bad["entries"][-1]["time_discovered_started_ns"] = math.inf
    report, errors = _analyze_in_memory(raws)
    assert ranks[1] in report.analysis.dumps.ranks
    assert ranks[0] in report.analysis.dumps.ranks or errors
    bad["entries"][0]["collective_seq_id"] = None
    report, errors = _analyze_in_memory(raws)
    assert [e.file for e in errors] == [f"rank_{ranks[0]}"] and "collective_seq_id" in errors[0].error


def test_fuzzer_cases_are_reproducible(gloo_dir, tmp_path: Path) -> None:
    a = Fuzzer(5, tmp_path / "a", gloo_dir)
    b = Fuzzer(5, tmp_path / "b", gloo_dir)
    for i in range(10):
        ra, rb = a.run(i), b.run(i)
        assert (ra.ok, ra.mode) == (rb.ok, rb.mode), (i, ra.detail, rb.detail)
