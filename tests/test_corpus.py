"""The corpus generator's output is what it claims (benchmarks/corpus).

Fast tests check the layout, the simulation and NCCL-shaped cases without torch;
the slow ones run real gloo jobs and check their dumps against their truth.json.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
from pathlib import Path

import pytest

from benchmarks.accuracy import case_list, grade_report
from benchmarks.corpus import FAMILIES, TRUTH_FILE, generate_case
from benchmarks.corpus.job import JobConfig
from benchmarks.corpus.plan import draw
from benchmarks.corpus.program import record
from benchmarks.corpus.sim import simulate
from benchmarks.corpus.topology import Layout, Topology

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch (a dev dependency) is not installed"
)

TRUTH_KEYS = {
    "schema",
    "kind",
    "family",
    "seed",
    "variants",
    "layout",
    "injected",
    "injected_ranks",
    "culprit_ranks",
    "accepted_classes",
    "grading",
    "diverged_at",
    "observed",
    "dumps_show",
    "dumps_cannot_show",
    "file_prefix",
}


def _dumps(folder: Path, prefix: str) -> dict[int, dict]:
    out = {}
    for f in folder.iterdir():
        if f.name.startswith(prefix) and f.name[len(prefix) :].split(".")[0].isdigit():
            rank = int(f.name[len(prefix) :].split(".")[0])
            out[rank] = json.loads(f.read_text()) if f.name.endswith(".json") else pickle.loads(f.read_bytes())
    return out


def _pending(dump: dict) -> list[dict]:
    return [e for e in dump["entries"] if not e["retired"]]


def test_layout_rank_order_and_megatron_group_order() -> None:
    lay = Layout(tp=2, pp=2, dp=2)
    topo = Topology(lay)
    assert lay.coords(5) == (1, 0, 1)  # rank = stage*tp*dp + dp_index*tp + tp_index
    assert lay.rank_of(1, 0, 1) == 5
    descs = [g.desc for g in topo.groups]
    assert descs[0] == "default_pg" and [g.name for g in topo.groups] == [str(i) for i in range(len(topo.groups))]
    order = [
        "DATA_PARALLEL_GROUP",
        "MODEL_PARALLEL_GROUP",
        "TENSOR_MODEL_PARALLEL_GROUP",
        "PIPELINE_MODEL_PARALLEL_GROUP",
    ]
    first = [descs.index(d) for d in order]
    assert first == sorted(first)
    assert descs[descs.index("PIPELINE_MODEL_PARALLEL_GROUP") + 1] == "EMBEDDING_GROUP"
    assert topo.group("tp", 5).ranks == (4, 5)
    assert topo.group("pp", 5).ranks == (1, 5)
    assert topo.group("dp", 5).ranks == (5, 7)
    assert topo.group("emb", 5).ranks == (1, 5)


@pytest.mark.parametrize("mode", ["gloo", "nccl"])
@pytest.mark.parametrize(("tp", "pp", "dp", "ep"), [(2, 2, 2, 1), (1, 4, 2, 2), (4, 2, 1, 4), (2, 4, 4, 2)])
def test_healthy_job_completes_in_simulation(mode: str, tp: int, pp: int, dp: int, ep: int) -> None:
    cfg = JobConfig(
        steps=2,
        microbatches=3,
        layers=2,
        seq=32,
        hidden=32,
        act_dtype="bfloat16",
        vocab=128,
        buckets=((1024, "float32"), (512, "bfloat16")),
        checkpoint_every=2,
        routing_seed=3,
    )
    out = simulate(record(Topology(Layout(tp, pp, dp, ep)), cfg), mode)
    assert set(out.final.values()) == {"done"}
    assert all(e.state == "completed" for entries in out.entries.values() for e in entries)


def test_draw_is_deterministic() -> None:
    a, b = draw("nccl", "skip_collective", 11), draw("nccl", "skip_collective", 11)
    assert (a.layout, a.cfg, a.faults, a.variants) == (b.layout, b.cfg, b.faults, b.variants)


def test_case_list_is_balanced_and_reproducible() -> None:
    cases = case_list(42, 5, list(FAMILIES), ["gloo", "nccl"])
    assert cases == case_list(42, 5, list(FAMILIES), ["gloo", "nccl"])
    pairs = [(k, f) for k, f, _ in cases]
    assert len(set(pairs)) == 25 and max(pairs.count(p) for p in pairs) == 2


def test_grading() -> None:
    truth = {
        "family": "stuck_compute",
        "culprit_ranks": [3],
        "accepted_classes": ["missing_participant"],
        "grading": "exact_ranks",
        "diverged_at": [],
    }
    assert grade_report(truth, {"suspect_ranks": [3], "failure_class": "missing_participant"}) == (True, True)
    assert grade_report(truth, {"suspect_ranks": [3, 4], "failure_class": "desync"}) == (False, False)
    a2a = {
        "family": "alltoall_splits",
        "culprit_ranks": [1],
        "accepted_classes": ["size_mismatch"],
        "grading": "class_and_group",
        "diverged_at": [{"pg_name": "15", "seq": 22}],
    }
    at = {"pg_name": "15", "collective_seq_id": 22}
    assert grade_report(a2a, {"suspect_ranks": [], "failure_class": "size_mismatch", "wavefront": at}) == (True, True)
    assert grade_report(a2a, {"suspect_ranks": [0], "failure_class": "size_mismatch", "wavefront": at}) == (
        False,
        True,
    )


def test_nccl_stuck_compute_case(tmp_path: Path) -> None:
    truth = generate_case("nccl", "stuck_compute", 4, tmp_path)
    assert TRUTH_KEYS <= set(truth) and json.loads((tmp_path / TRUTH_FILE).read_text()) == truth
    assert truth["accepted_classes"] == ["missing_participant"] and truth["grading"] == "exact_ranks"
    (culprit,) = truth["culprit_ranks"]
    assert truth["injected_ranks"] == [culprit]
    dumps = _dumps(tmp_path, "nccl_trace_rank_")
    assert sorted(dumps) == list(range(truth["layout"]["world_size"]))
    assert not _pending(dumps[culprit])  # its device work all completed; its CPU never issued more
    where = truth["diverged_at"][0]
    waiting = [
        r
        for r, d in dumps.items()
        for e in _pending(d)
        if e["process_group"][0] == where["pg_name"] and e["collective_seq_id"] == where["seq"]
    ]
    assert waiting and culprit not in waiting
    states = {e["state"] for d in dumps.values() for e in d["entries"]}
    assert states <= {"scheduled", "started", "completed"} and "started" in states
    assert any(e["is_p2p"] for d in dumps.values() for e in d["entries"]) == (truth["layout"]["pp"] > 1)


def test_nccl_crash_case_has_no_dump_for_the_culprit(tmp_path: Path) -> None:
    truth = generate_case("nccl", "crash_no_dump", 2, tmp_path)
    (culprit,) = truth["culprit_ranks"]
    assert truth["observed"]["dumps_missing"] == [culprit]
    assert not (tmp_path / f"nccl_trace_rank_{culprit}").exists()
    assert truth["accepted_classes"] == ["missing_dump"]


@pytest.mark.slow
@needs_torch
def test_gloo_stuck_compute_case(tmp_path: Path) -> None:
    truth = generate_case("gloo", "stuck_compute", 101, tmp_path)
    assert truth["kind"] == "gloo" and truth["torch_version"] and truth["simulation"]["agrees"]
    (culprit,) = truth["culprit_ranks"]
    assert truth["observed"]["states"][str(culprit)] == "stuck"
    dumps = _dumps(tmp_path, "rank_")
    assert culprit in dumps and not _pending(dumps[culprit])
    where = truth["diverged_at"][0]
    issued = truth["observed"]["last_issued_seq"][str(culprit)].get(where["pg_name"], 0)
    assert issued == where["seq"] - 1
    members = {g["name"]: g["ranks"] for g in truth["groups"]}
    last = truth["observed"]["last_issued_seq"][str(culprit)]
    peer_waits = [
        r
        for r, d in dumps.items()
        if r != culprit
        for e in _pending(d)
        if culprit in members[e["process_group"][0]] and e["collective_seq_id"] > last.get(e["process_group"][0], 0)
    ]
    assert peer_waits, "a peer waits in a collective the culprit never issued"
    for d in dumps.values():  # frame paths are neutral
        for e in d["entries"]:
            assert all(f["filename"].startswith(("/workspace/", "/usr/lib/python3/", "<")) for f in e["frames"])


@pytest.mark.slow
@needs_torch
def test_gloo_alltoall_splits_case(tmp_path: Path) -> None:
    """gloo completes an all_to_all whose receiver expects one row more than is sent."""
    truth = generate_case("gloo", "alltoall_splits", 1, tmp_path)
    assert truth["grading"] == "class_and_group" and truth["accepted_classes"] == ["size_mismatch"]
    assert set(truth["observed"]["states"].values()) == {"done"}  # nothing hangs
    where = truth["diverged_at"][0]
    group = next(g for g in truth["groups"] if g["name"] == where["pg_name"])
    dumps = _dumps(tmp_path, "rank_")
    at = {
        r: next(
            e
            for e in dumps[r]["entries"]
            if e["process_group"][0] == where["pg_name"] and e["collective_seq_id"] == where["seq"]
        )
        for r in group["ranks"]
    }
    assert all(e["profiling_name"] == "gloo:all_to_all" and e["retired"] for e in at.values())
    rows_in = sum(e["input_sizes"][0][0] for e in at.values())
    rows_out = sum(e["output_sizes"][0][0] for e in at.values())
    assert rows_out == rows_in + 1  # one rank expects one row more than it is sent


@pytest.mark.slow
@needs_torch
def test_gloo_crash_case_writes_no_dump_for_the_culprit(tmp_path: Path) -> None:
    truth = generate_case("gloo", "crash_no_dump", 1, tmp_path)
    (culprit,) = truth["culprit_ranks"]
    assert truth["observed"]["dumps_missing"] == [culprit]
    names = {p.name for p in tmp_path.iterdir()}
    assert not any(n.startswith(f"rank_{culprit}") and n[len(f"rank_{culprit}") :] in ("", ".json") for n in names)
