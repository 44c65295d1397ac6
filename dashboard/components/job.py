"""The whole job in one view: the wait-for graph folded by rank class, one row per class,
and a class opened: its ranks (with hosts), where they are, their stack, a way into the heatmap."""

from __future__ import annotations

from typing import Any

import streamlit as st

from analysis.report.words import counted
from analysis.views import stacks
from analysis.views.classes import class_table, rank_place, where_text
from analysis.views.figures.classes import class_graph

from .. import data, selection, state, tables
from . import table
from .text import md_escape

MAX_OPEN_BUTTONS = 8
MAX_RANK_ROWS = 512


def render(loaded: data.Loaded) -> None:
    report = loaded.report
    classes = report.rank_classes
    if not classes:
        st.info("No rank was loaded.")
        return
    ss = st.session_state
    chosen = _clicked_class(classes)
    if chosen is not None:
        ss[state.CLASS] = chosen
    selected = ss.get(state.CLASS)
    st.markdown(
        f"**{counted(report.ranks_loaded + len(report.missing_dumps), 'rank')} in "
        f"{counted(len(classes), 'class', 'classes')}** "
        "(ranks in the same place, state, call stack and waiting on the same classes). "
        "Click a class in the picture or a row to open it."
    )
    if any(c["waits_on"] for c in classes):
        st.plotly_chart(
            class_graph(classes, selected),
            width="content",
            key=state.CLASS_GRAPH,
            on_select="rerun",
            selection_mode="points",
            config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d", "toImage"]},
        )
    table.show(
        class_table(report),
        {"suspect": "suspect class"},
        key=state.CLASS_TABLE,
        on_select="rerun",
        selection_mode="single-row",
    )
    if isinstance(selected, int) and 0 <= selected < len(classes):
        _detail(loaded, classes[selected])


def _clicked_class(classes: list[dict[str, Any]]) -> int | None:
    """A new click on a node of the picture, or a new row picked in the table: its class id."""
    ss = st.session_state
    seen = ss.setdefault(state.LAST_EVENT, {})
    picked = None
    for key in (state.CLASS_GRAPH, state.CLASS_TABLE):
        event = ss.get(key)
        sig = selection.signature(event) if key == state.CLASS_GRAPH else str(_rows(event))
        if sig is None or sig == "[]" or seen.get(key) == sig:
            continue
        seen[key] = sig
        if key == state.CLASS_GRAPH:
            points = event["selection"]["points"]
            ids = [p.get("customdata") for p in points if p.get("curve_number", 0) == 0]
            picked = int(ids[0]) if ids and ids[0] is not None else picked
        else:
            picked = classes[_rows(event)[0]]["id"]
    return picked


def _rows(event: Any) -> list[int]:
    if not event:
        return []
    sel = event.get("selection") if isinstance(event, dict) else getattr(event, "selection", None)
    rows = (sel.get("rows") if isinstance(sel, dict) else getattr(sel, "rows", None)) if sel else None
    return list(rows or [])


def _detail(loaded: data.Loaded, c: dict[str, Any]) -> None:
    report = loaded.report
    who = f"{c['size']} rank{'s' if c['size'] != 1 else ''}" + (" · suspect" if c["suspect"] else "")
    st.subheader(f"Class {c['id']}: {who}", anchor=False)
    st.markdown(md_escape(where_text(c)))
    hosts = report.host_map
    on = sorted({h for r in c["ranks"] if (h := hosts.host(r) if hosts else None)})
    if on:
        st.caption(md_escape(f"On {len(on)} host{'s' if len(on) != 1 else ''}: {', '.join(on[:24])}"))
    if c["waits_on"]:
        waits = ", ".join(f"class {w['class']} ({w['reason'].replace('_', ' ')})" for w in c["waits_on"])
        st.caption(md_escape(f"Waits on {waits}."))
    left, right = st.columns([1, 1.4])
    with left:
        rows = [{"rank": r, "host": (hosts.host(r) if hosts else None) or ""} for r in c["ranks"][:MAX_RANK_ROWS]]
        table.show(rows, height=240)
        if c["size"] > MAX_RANK_ROWS:
            st.caption(f"… and {c['size'] - MAX_RANK_ROWS} more ranks.")
        for rank in c["ranks"][:MAX_OPEN_BUTTONS]:
            place = rank_place(report, c["id"], rank)
            if place is not None:
                st.button(
                    f"Open rank {rank} in the heatmap (group {report.analysis.groups.groups[place[0]].name}, seq {place[1]})",
                    key=f"{state.OPEN_RANK_PREFIX}{c['id']}:{rank}",
                    on_click=state.open_in_heatmap,
                    args=(st.session_state, place[0], rank, place[1]),
                )
    with right:
        st.markdown("**Call stack of the class** (innermost frame first)")
        frames = stacks.stack_frames(report.analysis, c["stack_id"])
        st.code(tables.frames_text(frames), language=None, wrap_lines=True)
