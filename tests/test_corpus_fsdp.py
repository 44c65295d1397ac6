"""The corpus's second program shape: sharded data parallel (FSDP2 / ZeRO-3) with expert all_to_alls.

Fast tests check the groups, the ops of a step, the shape draw and an NCCL-shaped
case without torch; the slow one runs a real gloo job of the shape.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
from pathlib import Path

import pytest

from benchmarks.corpus import FAMILIES, generate_case
from benchmarks.corpus.fsdp import FsdpConfig
from benchmarks.corpus.plan import draw
from benchmarks.corpus.program import Coll, record
from benchmarks.corpus.shapes import FSDP_SHARE, draw_shape
from benchmarks.corpus.sim import simulate
from benchmarks.corpus.topology import Layout, Topology

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch (a dev dependency) is not installed"
)

CFG = FsdpConfig(
    steps=2,
    microbatches=2,
    layers=3,
    dense_layers=1,
    seq=32,
    hidden=32,
    vocab=128,
    param_dtype="bfloat16",
    reduce_dtype="float32",
    experts_per_rank=2,
    reshard_after_forward=True,
    checkpoint_every=2,
    routing_seed=7,
)


def _fsdp(world: int, ep: int, replicate: int = 1, on_world: bool = False) -> Layout:
    return Layout(1, 1, world, ep, shape="fsdp", replicate=replicate, shard_on_world=on_world)


def _dumps(folder: Path, prefix: str) -> dict[int, dict]:
    out = {}
    for f in folder.iterdir():
        if f.name.startswith(prefix) and f.name[len(prefix) :].split(".")[0].isdigit():
            rank = int(f.name[len(prefix) :].split(".")[0])
            out[rank] = json.loads(f.read_text()) if f.name.endswith(".json") else pickle.loads(f.read_bytes())
    return out


def test_hybrid_groups_in_device_mesh_order() -> None:
    topo = Topology(_fsdp(8, 2, replicate=2))
    assert [g.name for g in topo.groups] == [str(i) for i in range(len(topo.groups))]
    descs = [g.desc for g in topo.groups]
    assert (
        descs
        == ["default_pg"] + ["FSDP_REPLICATE_GROUP"] * 4 + ["FSDP_SHARD_GROUP"] * 2 + ["EXPERT_PARALLEL_GROUP"] * 4
    )
    assert topo.group("shard", 5).ranks == (4, 5, 6, 7)
    assert topo.group("replicate", 5).ranks == (1, 5)
    assert topo.group("ep", 5).ranks == (4, 5)
    assert topo.group("tp", 5) is None and topo.group("pp", 5) is None
    assert _fsdp(8, 2, replicate=2).to_dict()["shard"] == 4


def test_sharding_over_the_default_group() -> None:
    topo = Topology(_fsdp(4, 4, on_world=True))
    assert [g.desc for g in topo.groups] == ["default_pg", "EXPERT_PARALLEL_GROUP"]
    assert topo.group("shard", 3) is topo.default
    assert Layout.from_dict(_fsdp(4, 4, on_world=True).to_dict()) == _fsdp(4, 4, on_world=True)
    assert "shape" not in Layout(2, 2, 2).to_dict()  # a Megatron layout's dict is unchanged
    with pytest.raises(ValueError):
        _fsdp(8, 2, replicate=2, on_world=True)


@pytest.mark.parametrize("mode", ["gloo", "nccl"])
@pytest.mark.parametrize(
    ("world", "ep", "replicate", "on_world"), [(2, 2, 1, False), (4, 4, 1, True), (8, 2, 2, False)]
)
def test_healthy_fsdp_job_completes_in_simulation(
    mode: str, world: int, ep: int, replicate: int, on_world: bool
) -> None:
    out = simulate(record(Topology(_fsdp(world, ep, replicate, on_world)), CFG), mode)
    assert set(out.final.values()) == {"done"}
    assert all(e.state == "completed" for entries in out.entries.values() for e in entries)


def test_a_step_gathers_routes_and_reduce_scatters() -> None:
    topo = Topology(_fsdp(8, 2, replicate=2))
    step1 = [i for i in record(topo, CFG).items[5] if isinstance(i, Coll) and i.step == 1]
    ops = [(c.site, c.op, c.group.desc) for c in step1]
    mb0 = ops[: (len(ops) - 4) // 2]  # the first micro-batch (the tail: norms, loss, checkpoint barrier)
    assert mb0[0] == ("pre_forward", "all_gather", "FSDP_SHARD_GROUP")  # the root module first
    assert ("_token_dispatch", "all_to_all", "EXPERT_PARALLEL_GROUP") in mb0
    assert ("pre_backward", "all_gather", "FSDP_SHARD_GROUP") in mb0
    assert ("foreach_reduce", "reduce_scatter", "FSDP_SHARD_GROUP") in mb0
    assert ("foreach_reduce", "all_reduce", "FSDP_REPLICATE_GROUP") in mb0
    assert ops[-4:] == [
        ("clip_grad_norm_", "all_reduce", "FSDP_SHARD_GROUP"),
        ("clip_grad_norm_", "all_reduce", "EXPERT_PARALLEL_GROUP"),
        ("dist_mean", "all_reduce", "default_pg"),
        ("save_checkpoint", "barrier", "default_pg"),
    ]
    # 3 blocks, 2 MoE: per micro-batch 1 + 3 gathers forward, 3 backward; 4 reduce_scatters
    assert sum(1 for c in step1 if c.op == "all_gather") == 2 * 7
    assert sum(1 for c in step1 if c.op == "reduce_scatter") == 2 * 4
    tokens = [c for c in step1 if c.site == "_token_dispatch" and len(c.in_spec.shape) == 2]
    assert tokens and any(len(set(c.in_splits or [])) > 1 for c in tokens)  # routed: uneven splits
    rs = next(c for c in step1 if c.op == "reduce_scatter")
    assert rs.in_spec.numel == 4 * rs.out_spec.numel and rs.in_spec.dtype == "float32"
    names = [f[0] for f in rs.stack]
    assert names[:2] == ["reduce_scatter_tensor", "wrapper"]
    assert {"foreach_reduce", "post_backward", "transformer_block_backward", "train"} <= set(names)
    gather = next(c for c in step1 if c.op == "all_gather")
    assert [f[0] for f in gather.stack][4:7] == ["foreach_all_gather", "unshard", "pre_forward"]


def test_shape_draw() -> None:
    drawn = [draw_shape("nccl", "stuck_compute", s) for s in range(2000)]
    assert abs(drawn.count("fsdp") / len(drawn) - FSDP_SHARE) < 0.04
    assert drawn == [draw_shape("nccl", "stuck_compute", s) for s in range(2000)]
    assert {draw_shape("gloo", "p2p_unposted", s) for s in range(200)} == {"megatron"}
    megatron = next(s for s in range(100) if draw_shape("nccl", "skip_collective", s) == "megatron")
    a, b = draw("nccl", "skip_collective", megatron), draw("nccl", "skip_collective", megatron, shape="megatron")
    assert (a.layout, a.cfg, a.faults, a.variants) == (b.layout, b.cfg, b.faults, b.variants)


@pytest.mark.parametrize("family", [f for f in FAMILIES if "fsdp" in FAMILIES[f].shapes])
def test_every_family_draws_an_fsdp_case(family: str) -> None:
    kind = "nccl" if "nccl" in FAMILIES[family].kinds else "gloo"
    plan = draw(kind, family, 1, shape="fsdp")
    assert plan.shape == "fsdp" and plan.topo.group("pp", 0) is None
    if family == "healthy":
        assert set(plan.outcome.final.values()) == {"done"}
        return
    where = plan.diverged[0]
    assert where["group_desc"] in ("FSDP_SHARD_GROUP", "FSDP_REPLICATE_GROUP", "EXPERT_PARALLEL_GROUP", "default_pg")
    if family.endswith("_branch"):
        assert (where["op"], where["site"]) == ("reduce_scatter", "foreach_reduce")
    if family == "alltoall_splits":
        assert (where["op"], where["site"]) == ("all_to_all", "_token_dispatch")


def test_p2p_unposted_has_no_fsdp_case() -> None:
    from benchmarks.corpus.plan import PlanError

    with pytest.raises(PlanError):
        draw("nccl", "p2p_unposted", 1, shape="fsdp")


def test_nccl_fsdp_case(tmp_path: Path) -> None:
    truth = generate_case("nccl", "size_mismatch_branch", 2, tmp_path, shape="fsdp")
    assert truth["shape"] == "fsdp" and truth["layout"]["shape"] == "fsdp"
    (culprit,) = truth["culprit_ranks"]
    dumps = _dumps(tmp_path, "nccl_trace_rank_")
    names = {e["profiling_name"] for d in dumps.values() for e in d["entries"]}
    assert {"nccl:_all_gather_base", "nccl:_reduce_scatter_base", "nccl:all_to_all"} <= names
    assert not any(e["is_p2p"] for d in dumps.values() for e in d["entries"])
    where = truth["diverged_at"][0]
    at = {
        r: e
        for r, d in dumps.items()
        for e in d["entries"]
        if e["process_group"][0] == where["pg_name"] and e["collective_seq_id"] == where["seq"]
    }
    assert at[culprit]["profiling_name"] == "nccl:_reduce_scatter_base"
    peers = [e for r, e in at.items() if r != culprit]
    assert peers and all(e["input_sizes"] != at[culprit]["input_sizes"] for e in peers)
    line = next(f["line"] for f in at[culprit]["frames"] if f["name"] == "foreach_reduce")
    assert all(next(f["line"] for f in e["frames"] if f["name"] == "foreach_reduce") == line + 2 for e in peers)


@pytest.mark.slow
@needs_torch
def test_gloo_fsdp_case(tmp_path: Path) -> None:
    truth = generate_case("gloo", "stuck_compute", 3, tmp_path, shape="fsdp")
    assert truth["shape"] == "fsdp" and truth["simulation"]["agrees"]
    (culprit,) = truth["culprit_ranks"]
    assert truth["observed"]["states"][str(culprit)] == "stuck"
    dumps = _dumps(tmp_path, "rank_")
    assert sorted(dumps) == list(range(truth["layout"]["world_size"]))
    names = {e["profiling_name"] for d in dumps.values() for e in d["entries"]}
    assert {"gloo:all_gather", "gloo:all_to_all", "gloo:all_reduce"} <= names  # gloo records reduce_scatter so
    where = truth["diverged_at"][0]
    waiting = [
        r
        for r, d in dumps.items()
        for e in d["entries"]
        if not e["retired"] and e["process_group"][0] == where["pg_name"] and e["collective_seq_id"] == where["seq"]
    ]
    assert waiting and culprit not in waiting
    for d in dumps.values():  # Python frame paths are neutral (this case also has C++ frames)
        for e in d["entries"]:
            py = [f["filename"] for f in e["frames"] if f["filename"].endswith(".py")]
            assert py and all(f.startswith(("/workspace/", "/usr/lib/python3/")) for f in py)
