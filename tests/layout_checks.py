"""The Job picture's layered layout checked from its own coordinates: every class box and arrow
label clear of the arrows that do not end at it, no two boxes overlapping, each arrow running
downwards, and every root labelled with why it is one. Used on the samples and at scale."""

from __future__ import annotations

import itertools
from typing import Any


def check_layered_picture(classes: list[dict[str, Any]]) -> int:
    """Asserts the layout of ``classes`` (a report's ``rank_classes``) is readable; returns how
    many roots carry their reason."""
    from analysis.views.classes import fold
    from analysis.views.figures.classes import class_graph, place

    by_id = {c["id"]: c for c in classes}
    graph = fold(classes)
    placed = place(graph, by_id)
    boxes = {("class", i): b for i, b in placed.nodes.items()} | {("label", *k): b for k, b in placed.labels.items()}
    for key, pts in [*placed.into_label.items(), *placed.out_of_label.items()]:
        own = {("class", key[0]), ("class", key[1]), ("label", *key)}
        for p, q in itertools.pairwise(pts):
            crossed = [name for name, box in boxes.items() if name not in own and box.crossed_by(p, q)]
            assert not crossed, f"arrow {key} runs through {crossed}"
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p, q = boxes[a], boxes[b]
            apart = abs(p.x - q.x) >= (p.w + q.w) / 2 or abs(p.y - q.y) >= (p.h + q.h) / 2
            assert apart, f"{a} overlaps {b}"
    for b, w, _ in graph.edges:
        if not {b, w} & graph.self_waiting and not _in_cycle(graph, b, w):
            assert placed.nodes[b].y < placed.labels[(b, w)].y < placed.nodes[w].y, "blocker above its waiter"
    labels = " ".join(t for tr in class_graph(classes).data if tr.mode == "text" for t in tr.text)
    for i in graph.nodes:
        if by_id[i]["root"]:
            assert f"root: {by_id[i]['root'].split()[0]}" in labels, "every root says why it is one"
    return sum(1 for i in graph.nodes if by_id[i]["root"])


def _in_cycle(graph, b: int, w: int) -> bool:
    """Whether ``b`` is reachable from ``w`` (the arrow b -> w closes a cycle)."""
    seen, todo = set(), [w]
    while todo:
        n = todo.pop()
        if n == b:
            return True
        seen.add(n)
        todo += [v for u, v, _ in graph.edges if u == n and v not in seen]
    return False
