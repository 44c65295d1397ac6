"""Rank classes: every rank in exactly one class, the culprit in a class of its own, and
each class's situation as the dump files show it."""

from __future__ import annotations

import json

import pytest
import raw_dumps
from layout_checks import check_layered_picture
from locations import SAMPLE_DUMPS

import analysis

SCENARIOS = sorted(p.parent for p in SAMPLE_DUMPS.glob("*/scenario.json"))


def _classes(folder):
    report = analysis.analyze(folder)
    return report, report.rank_classes


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_rank_in_one_class_largest_first(folder) -> None:
    scenario = json.loads((folder / "scenario.json").read_text())
    report, classes = _classes(folder)
    ranks = [r for c in classes for r in c["ranks"]]
    assert sorted(ranks) == list(range(scenario["world_size"])), "each rank exactly once"
    assert [c["size"] for c in classes] == sorted((c["size"] for c in classes), reverse=True)
    assert [c["id"] for c in classes] == list(range(len(classes)))
    for c in classes:
        assert all(0 <= w["class"] < len(classes) for w in c["waits_on"])
        assert c["suspect"] == any(r in report.suspect_ranks for r in c["ranks"])


@pytest.mark.parametrize(
    "name", ["stuck_compute", "large_32_stuck", "skip_collective", "extra_collective", "size_mismatch", "slow_rank"]
)
def test_the_culprit_is_in_a_class_of_its_own(name) -> None:
    folder = SAMPLE_DUMPS / name
    (culprit,) = json.loads((folder / "scenario.json").read_text())["injected_ranks"]
    _, classes = _classes(folder)
    (mine,) = [c for c in classes if culprit in c["ranks"]]
    assert mine["ranks"] == [culprit] and mine["suspect"]


def test_situations_match_the_files() -> None:
    """Blocked ranks are those with an unfinished entry in their file; the others wait in nothing."""
    folder = SAMPLE_DUMPS / "stuck_compute"
    _, classes = _classes(folder)
    pending = {r for r in range(8) if any(not e["retired"] for e in raw_dumps.raw_dump(folder, r)["entries"])}
    for c in classes:
        for r in c["ranks"]:
            assert (c["situation"] == "blocked") == (r in pending), r
    (peer,) = [c for c in classes if 4 in c["ranks"]]
    assert peer["blocked_at"] == {
        "pg_desc": "tensor_parallel",
        "pg_name": "3",
        "num_groups": 1,
        "seq": 11,
        "op": "all_reduce",
        "state": "scheduled",
        "p2p": False,
    }
    (culprit,) = [c for c in classes if 5 in c["ranks"]]
    assert {"class": culprit["id"], "reason": "not_issued"} in peer["waits_on"]
    newest = raw_dumps.newest_in_group(folder, 5, "3")
    assert culprit["last_entry"]["seq"] == newest["collective_seq_id"] == 10
    assert culprit["last_entry"]["state"] == "completed", "gloo leaves finished work 'scheduled', retired"


def test_a_rank_without_a_dump_is_its_own_class() -> None:
    _, classes = _classes(SAMPLE_DUMPS / "missing_dump")
    (lost,) = [c for c in classes if 4 in c["ranks"]]
    assert lost["ranks"] == [4] and lost["situation"] == "no_dump" and lost["blocked_at"] is None


def test_sibling_groups_fold_into_one_class() -> None:
    """32 ranks: the DP members of the other stage wait at one seq of four sibling DP groups."""
    _, classes = _classes(SAMPLE_DUMPS / "large_32_stuck")
    biggest = classes[0]
    assert biggest["size"] > 8 and biggest["blocked_at"]["num_groups"] > 1
    assert biggest["blocked_at"]["pg_name"] is None and biggest["blocked_at"]["pg_desc"] == "data_parallel"


def test_the_folded_graph_puts_roots_on_top() -> None:
    from analysis.views.classes import fold
    from analysis.views.figures.classes import class_graph

    _, classes = _classes(SAMPLE_DUMPS / "stuck_compute")
    of = {r: c["id"] for c in classes for r in c["ranks"]}
    graph = fold(classes)
    depth = {i: d for i, (_, d) in graph.nodes.items()}
    assert depth[of[5]] == 0, "the culprit waits on nobody"
    assert depth[of[4]] == 1 and depth[of[6]] == 2, "rank 4 waits on 5, rank 6 on 4"
    assert all(depth[b] < depth[w] for b, w, _ in graph.edges)
    fig = class_graph(classes, selected=of[5])
    assert sorted(fig.data[0].customdata) == sorted(graph.nodes)
    assert len(fig.layout.annotations) == len(graph.edges)
    k = list(fig.data[0].customdata).index(of[5])
    assert fig.data[0].marker.line.color[k] != fig.data[0].marker.line.color[(k + 1) % len(graph.nodes)]


def test_a_wait_cycle_between_classes_still_folds() -> None:
    from analysis.views.classes import fold

    def cls(i: int, waits: list[int]) -> dict:
        return {"id": i, "size": 1, "suspect": False, "waits_on": [{"class": w, "reason": "not_issued"} for w in waits]}

    graph = fold([cls(0, [1]), cls(1, [2]), cls(2, [0]), cls(3, [3])])
    assert set(graph.nodes) == {0, 1, 2, 3} and graph.self_waiting == {3}
    assert all(0 <= d <= 4 for _, d in graph.nodes.values())


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_root_says_why_it_is_one(folder) -> None:
    from analysis.report import roots

    words = {roots.SUSPECT, roots.HIDDEN_RECEIVE, roots.FINISHED, roots.NO_DUMP, roots.UNREADABLE, roots.HELD_BY_NONE}
    _, classes = _classes(folder)
    for c in classes:
        if c["waits_on"]:
            assert c["root"] is None, c
        else:
            assert c["root"] in words, c
            assert (c["root"] == roots.SUSPECT) == c["suspect"], c


def test_the_silent_pipeline_ranks_are_a_root_blocked_in_a_hidden_receive() -> None:
    """large_32_stuck: ranks 0-3 completed everything and stopped with their group (gloo records no send/recv)."""
    from analysis.report import roots

    _, classes = _classes(SAMPLE_DUMPS / "large_32_stuck")
    quiet = next(c for c in classes if 0 in c["ranks"] and not c["waits_on"])
    assert quiet["root"] == roots.HIDDEN_RECEIVE and set(quiet["ranks"]) == {0, 1, 2, 3}
    (suspect,) = [c for c in classes if c["suspect"]]
    assert suspect["root"] == roots.SUSPECT and suspect["ranks"] == [19]


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_the_layered_picture_has_roots_on_top_and_no_arrow_through_a_label(folder) -> None:
    """From the layout's own coordinates: every class box and arrow label is clear of the
    arrows that do not end at it, no two boxes overlap, and each arrow runs downwards."""
    _, classes = _classes(folder)
    check_layered_picture(classes)
