"""Level counts on a hand-made job: two data-parallel replicas of a 2-rank tensor-parallel pair.

Ranks 0-1 and 2-3 are tensor-parallel pairs (groups "tp0", "tp1"); ranks 0, 2 and 1, 3 are
data-parallel groups ("dp0", "dp1"). Each data-parallel group is level (both members issued
as many of its collectives), so a rank's count in its tensor-parallel pair should match what
its data-parallel peer issued in the other pair.
"""

from __future__ import annotations

from analysis.diagnosis.level_counts import ISSUED, LevelCounts
from analysis.model.families import Families, rank_stages
from analysis.model.groups import GroupIndex, ProcessGroup
from analysis.model.progress import Progress
from analysis.types import FailureClass, Membership

GROUPS = {
    "tp0": ("tp", (0, 1)),
    "tp1": ("tp", (2, 3)),
    "dp0": ("dp", (0, 2)),
    "dp1": ("dp", (1, 3)),
}


def _levels(tp_counts: dict[int, int], dp_count: int = 4, dp_counts: dict[int, int] | None = None) -> LevelCounts:
    index = GroupIndex(
        groups={k: ProcessGroup(k, k, desc, ranks, Membership.PG_CONFIG) for k, (desc, ranks) in GROUPS.items()}
    )
    progress = {}
    for key, (desc, ranks) in GROUPS.items():
        for r in ranks:
            n = tp_counts[r] if desc == "tp" else (dp_counts or {}).get(r, dp_count)
            progress[(key, r)] = Progress(n, n - 1, n, n, 0)
    families = Families({k: d for k, (d, _) in GROUPS.items()}, frozenset(), {k: d for k, (d, _) in GROUPS.items()})
    return LevelCounts(index, progress, families, world=4)


def test_a_rank_one_behind_its_level_peer_is_minus_one() -> None:
    levels = _levels({0: 10, 1: 9, 2: 10, 3: 10})
    assert levels.offset("tp0", 1) == -1  # its dp peer, rank 3, issued 10 in tp1
    assert levels.offset("tp0", 0) == 0


def test_peers_not_level_tell_nothing() -> None:
    index_levels = _levels({0: 10, 1: 9, 2: 10, 3: 10})
    index_levels.progress[("dp1", 3)] = Progress(5, 4, 5, 5, 0)  # dp1 no longer level
    index_levels._offsets.clear()
    index_levels._level.clear()
    assert index_levels.offset("tp0", 1) is None


def test_a_stalled_collective_names_the_member_one_off() -> None:
    levels = _levels({0: 10, 1: 9, 2: 10, 3: 10})
    (m,) = levels.stalled({("tp0", 9): [0, 1]})
    assert (m.odd_ranks, m.attribute, m.failure_class, m.shift) == ((1,), ISSUED, FailureClass.DESYNC, 1)


def test_a_stalled_collective_whose_members_match_their_peers_is_left_alone() -> None:
    assert _levels({0: 10, 1: 10, 2: 10, 3: 10}).stalled({("tp0", 10): [0, 1]}) == []


def test_a_group_every_member_got_through_is_no_witness() -> None:
    """Level in a data-parallel group whose last collective both completed, the two may be
    anywhere after it (a checkpoint barrier long ago): their counts elsewhere tell nothing."""
    levels = _levels({0: 10, 1: 9, 2: 10, 3: 10})
    for key, (_, ranks) in GROUPS.items():
        if key.startswith("dp"):
            for r in ranks:
                levels.progress[(key, r)] = Progress(4, 4, 4, None, 0)
    assert levels.offset("tp0", 1) is None


def _pipelines(has_p2p: bool) -> list[ProcessGroup]:
    """Two 2-stage pipelines (0->2, 1->3) listed without a description, tensor-parallel pairs."""
    config = Membership.PG_CONFIG
    return [
        ProcessGroup("0", "0", "default_pg", (0, 1, 2, 3), config),
        ProcessGroup("5", "5", "", (0, 2), config, has_p2p),
        ProcessGroup("6", "6", "", (1, 3), config, has_p2p),
        ProcessGroup("7", "7", "TENSOR_MODEL_PARALLEL_GROUP", (0, 1), config),
        ProcessGroup("8", "8", "TENSOR_MODEL_PARALLEL_GROUP", (2, 3), config),
    ]


def test_a_ranks_stage_is_its_place_in_the_groups_send_recvs_run_in() -> None:
    stages = rank_stages(_pipelines(has_p2p=True), carries=lambda g: g.key in ("0", "7", "8"))
    assert stages[0] == stages[1] != stages[2] == stages[3]


def test_without_recorded_send_recvs_the_quiet_listed_groups_place_a_rank() -> None:
    """gloo records no send/recv: the groups pg_config lists that carry no collective are the
    pipelines; only where asked (``quiet``), and never the default group."""
    groups = _pipelines(has_p2p=False)
    carries = lambda g: g.key in ("0", "7", "8")
    stages = rank_stages(groups, carries)
    assert stages[0] == stages[1] != stages[2] == stages[3]
    assert rank_stages(groups, carries, quiet=False) == {}
