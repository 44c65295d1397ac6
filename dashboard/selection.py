"""Turning a chart selection event into a page action. Pure: no Streamlit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from analysis.views.heatmap import HeatmapView


@dataclass(frozen=True, slots=True)
class Action:
    """What a selection asks for: open a cell (rank, seq), or open a region of the grid."""

    cell: tuple[int, int] | None = None
    region: tuple[int, int, int, int] | None = None
    """(row0, row1, seq0, seq1): grid rows [row0, row1), seqs [seq0, seq1]."""


def signature(event: Any) -> str | None:
    """A stable text form of a selection event, or None when nothing is selected."""
    sel = _selection(event)
    if not sel or not (sel.get("points") or sel.get("box")):
        return None
    points = [{"x": p.get("x"), "y": p.get("y")} for p in sel.get("points") or []]
    return json.dumps({"points": points, "box": sel.get("box") or []}, sort_keys=True, default=str)


def _selection(event: Any) -> dict | None:
    if event is None:
        return None
    sel = event.get("selection") if isinstance(event, dict) else getattr(event, "selection", None)
    if sel is None:
        return None
    return dict(sel) if not isinstance(sel, dict) else sel


def action_for(view: HeatmapView, event: Any) -> Action | None:
    """A click on a cell opens it; a click on an aggregated block, or a dragged box, opens that region."""
    sel = _selection(event)
    if not sel:
        return None
    boxes = sel.get("box") or []
    if boxes:
        b = boxes[0]
        xs, ys = b.get("x") or [], b.get("y") or []
        if len(xs) >= 2 and len(ys) >= 2:
            region = view.box(xs, ys)
            r0, r1, s0, s1 = region
            if (r1 - r0) * (s1 - s0 + 1) == 1:
                return Action(cell=(int(view.ranks[r0 - view.row_offset]), s0))
            return Action(region=region)
    points = sel.get("points") or []
    for p in points:
        if p.get("x") is None or p.get("y") is None:
            continue
        x, y = float(p["x"]), float(p["y"])
        if view.aggregated:
            return Action(region=view.block_at(x, y))
        return Action(cell=view.cell_at(x, y))
    return None
