"""How sure the verdict is: each caveat found from the data, and the confidence it leaves.

The unreadable-versus-missing and ring-buffer cases use real torch dumps; the others
(FR versions, JSON, onlyActive, timing, clocks) use NCCL-shaped sets that gloo cannot
produce.
"""

from __future__ import annotations

import pickle
import shutil

import raw_dumps
from fr_versions import make_dump, write_dump
from locations import SAMPLE_DUMPS
from nccl_sets import coll, tp_job, write_set

import analysis
from analysis.diagnosis.caveats import Caveat, CaveatKind, Confidence, confidence
from analysis.report.words import compact_ranks

STUCK = SAMPLE_DUMPS / "stuck_compute"
SHORT = SAMPLE_DUMPS / "short_buffer"


def test_confidence_grades() -> None:
    mild = Caveat(CaveatKind.MIXED_VERSIONS, (0, 1), False)
    severe = Caveat(CaveatKind.UNREADABLE, (5,), True)
    assert confidence([]) == Confidence.HIGH
    assert confidence([mild]) == Confidence.MEDIUM
    assert confidence([mild, severe]) == Confidence.LOW


def test_clean_real_dumps_are_high_confidence() -> None:
    report = analysis.analyze(STUCK)
    assert report.confidence == "high" and report.caveats == []


# -- unreadable is not missing (real dumps) ---------------------------------------------------


def test_an_unreadable_dump_is_not_reported_as_missing(tmp_path) -> None:
    """Rank 5 (the stuck rank) has a truncated file; rank 6 has none at all."""
    folder = tmp_path / "dumps"
    shutil.copytree(STUCK, folder)
    data = (folder / "rank_5").read_bytes()
    (folder / "rank_5").write_bytes(data[: len(data) // 2])
    (folder / "rank_6").unlink()
    report = analysis.analyze(folder, use_cache=False)
    assert report.missing_dumps == [5, 6]
    text = "\n".join([report.summary, *report.evidence])
    assert (
        "Rank 6 " in text
        and "Rank 6 wrote no dump" in text
        or "Rank 6 is a member of the job's groups but wrote no dump" in text
    )
    assert "Rank 5 wrote no dump" not in text and "5 is a member of the job's groups but wrote no dump" not in text
    assert "rank_5 could not be read" in text
    unreadable = [c for c in report.caveats if c.startswith("The dump file of rank 5 is there but could not be read")]
    assert len(unreadable) == 1 and "rank_5:" in unreadable[0]
    assert report.confidence == "low", "the stuck rank's own dump is unreadable"


def test_summary_of_an_unreadable_suspect(tmp_path) -> None:
    folder = tmp_path / "dumps"
    shutil.copytree(STUCK, folder)
    (folder / "rank_4").write_bytes(b"not a pickle")
    report = analysis.analyze(folder, use_cache=False)
    assert 4 in report.suspect_ranks
    assert "wrote no dump" not in report.summary


def test_a_stray_unreadable_file_is_left_out(tmp_path) -> None:
    folder = tmp_path / "dumps"
    shutil.copytree(STUCK, folder)
    (folder / "rank_99").write_text("junk")
    report = analysis.analyze(folder, use_cache=False)
    assert report.suspect_ranks == [5] and report.confidence == "medium"
    stray = (
        "The dump file of rank 99 is there but could not be read (rank_99: neither a pickle nor a JSON "
        "document): it is left out of the analysis."
    )
    assert report.caveats == [stray]


# -- ring buffers that do not reach back (real dumps, a buffer of 2 entries) -----------------


def test_buffers_that_start_after_the_divergence() -> None:
    """Computed from the pickles: the divergence is the first creation of the wavefront
    collective (group 3, seq 11); a rank's buffer starts at its oldest entry."""
    ranks = range(8)
    wave = [raw_dumps.entry_at(SHORT, r, "3", 11) for r in ranks]
    t0 = min(e["time_created_ns"] for e in wave if e is not None)
    oldest = {r: min(e["time_created_ns"] for e in raw_dumps.raw_dump(SHORT, r)["entries"]) for r in ranks}
    late = sorted(r for r, t in oldest.items() if t > t0)
    assert late, "some ranks went on for more than two collectives after the divergence"
    report = analysis.analyze(SHORT)
    assert report.suspect_ranks == [5] and report.wavefront.collective_seq_id == 11
    (sentence,) = report.caveats
    assert sentence.startswith(f"The ring buffers of ranks {compact_ranks(late)} start after the divergence")
    assert report.confidence == "medium", "neither the suspect nor its group lost its record"


# -- what NCCL dumps can lack ------------------------------------------------------------


def _caveat_kinds(report) -> set[str]:
    words = {
        "different Flight Recorder versions": "versions",
        "JSON dumps": "json",
        "only active entries": "only_active",
        "'started' state": "no_started",
        "clocks of": "clocks",
    }
    return {kind for phrase, kind in words.items() for c in report.caveats if phrase in c}


def _aligned(per_rank: dict, offset: dict[int, int] | None = None) -> dict:
    """Every rank creates seq q at q ms (plus its clock offset): clocks that agree."""
    out = {}
    for r, entries in per_rank.items():
        out[r] = [
            dict(e, time_created_ns=(1 + e["collective_seq_id"]) * 1_000_000 + (offset or {}).get(r, 0))
            for e in entries
        ]
    return out


def test_agreeing_clocks_leave_no_caveat(tmp_path) -> None:
    report = analysis.analyze(write_set(tmp_path, _aligned(tp_job(4, 6, stuck_rank=2))), use_cache=False)
    assert report.caveats == [] and report.confidence == "high"


def test_mixed_versions_and_json_without_stacks(tmp_path) -> None:
    per_rank = _aligned(tp_job(4, 6, stuck_rank=2))
    write_set(tmp_path, {r: e for r, e in per_rank.items() if r < 2}, version="2.10")
    write_set(tmp_path, {r: e for r, e in per_rank.items() if r >= 2}, version="2.9", fmt="json")
    report = analysis.analyze(tmp_path, use_cache=False)
    assert report.suspect_ranks == [2]
    assert _caveat_kinds(report) == {"versions", "json"}
    assert any("2.9: ranks 2-3" in c and "2.10: ranks 0-1" in c for c in report.caveats)
    assert any(c.startswith("Ranks 2-3 wrote JSON dumps") for c in report.caveats)
    assert report.confidence == "medium"


def test_only_active_dumps(tmp_path) -> None:
    """torch's onlyActive leaves finished entries out; pg_status still counts them."""
    per_rank = _aligned(tp_job(4, 6, stuck_rank=1, stuck_state="scheduled"))
    for r, entries in per_rank.items():
        rendered = [dict(e, record_id=i, pg_id=1) for i, e in enumerate(entries)]
        dump = make_dump("2.10", entries=rendered)
        if r in (0, 2):
            dump["entries"] = [e for e in dump["entries"] if not e["retired"]]
        write_dump(tmp_path / f"nccl_trace_rank_{r}", dump)
    report = analysis.analyze(tmp_path, use_cache=False)
    assert report.suspect_ranks == [1]
    assert _caveat_kinds(report) == {"only_active"}
    assert any(c.startswith("Ranks 0, 2 dumped only active entries") for c in report.caveats)


def test_stuck_in_flight_without_a_started_state(tmp_path) -> None:
    """Rank 3 holds seq 5 that its peers completed; nothing records 'started' (timing off)."""
    ranks = [0, 1, 2, 3]
    per_rank = {
        r: [coll("1", "tp", ranks, q, op="all_reduce") for q in range(1, 5)]
        + [coll("1", "tp", ranks, 5, op="all_reduce", state="scheduled" if r == 3 else "completed")]
        for r in ranks
    }
    report = analysis.analyze(write_set(tmp_path, _aligned(per_rank)), use_cache=False)
    assert report.suspect_ranks == [3] and report.failure_class == "stalled_in_flight"
    assert _caveat_kinds(report) == {"no_started"} and report.confidence == "low"
    started = {
        r: [dict(e, state="started") if e["state"] == "scheduled" else e for e in es] for r, es in per_rank.items()
    }
    report = analysis.analyze(write_set(tmp_path / "timed", _aligned(started)), use_cache=False)
    assert report.suspect_ranks == [3] and report.caveats == []


def test_clocks_that_disagree_by_more_than_a_step(tmp_path) -> None:
    """Collectives come 1 ms apart; rank 3's clock is 50 ms ahead: 50 steps."""
    per_rank = _aligned(tp_job(4, 12, stuck_rank=2), offset={3: 50_000_000})
    report = analysis.analyze(write_set(tmp_path, per_rank), use_cache=False)
    assert report.suspect_ranks == [2]
    clocks = [c for c in report.caveats if "clocks of" in c]
    assert len(clocks) == 1 and clocks[0].startswith("The clocks of rank 3 are off from the others' by up to 0.050 s")
    assert "step time (0.001 s)" in clocks[0]
    assert report.confidence == "medium"


def test_a_slow_rank_is_not_a_clock(tmp_path) -> None:
    """Rank 3 arrives 0.4 ms late at every collective, within the 1 ms step: no caveat."""
    per_rank = _aligned(tp_job(4, 12, stuck_rank=2), offset={3: 400_000})
    report = analysis.analyze(write_set(tmp_path, per_rank), use_cache=False)
    assert not [c for c in report.caveats if "clocks of" in c]


def test_pickle_of_the_short_buffer_sample_is_tiny() -> None:
    """The committed set really has a 2-entry ring buffer (so the test above means something)."""
    for r in range(8):
        dump = pickle.loads((SHORT / f"rank_{r}").read_bytes())
        assert len(dump["entries"]) <= 2
