"""The wait-for graph when a whole job waits on one rank."""

from __future__ import annotations

import pandas as pd

from analysis.diagnosis.waitfor import WaitReason, build_wait_graph
from analysis.model.groups import GroupIndex, ProcessGroup
from analysis.model.progress import Progress


def test_every_rank_blocked_in_the_default_group_waits_on_the_one_that_never_issued() -> None:
    n = 4096
    index = GroupIndex()
    index.groups = {"0": ProcessGroup("0", "0", "default_pg", tuple(range(n)), "pg_config")}
    progress = {("0", r): Progress(10, 9, None, 10, 0) for r in range(n)}
    progress[("0", 5)] = Progress(9, 9, None, None, 0)  # rank 5 never issued seq 10
    graph = build_wait_graph(index, progress, set(range(n)), {}, pd.DataFrame())
    assert len(graph.blocked) == n - 1
    assert {(e.waiter, e.blocker, e.reason) for e in graph.edges} == {
        (r, 5, WaitReason.NOT_ISSUED) for r in range(n) if r != 5
    }
