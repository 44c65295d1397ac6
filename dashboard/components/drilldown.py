"""One rank at one sequence number: its entry, its call stack, how it differs from the majority."""

from __future__ import annotations

import streamlit as st

from analysis import schema as s
from analysis.views import drilldown as views
from analysis.views import stacks
from analysis.views.grid import STATE_NAMES, shown_state

from .. import data, tables
from . import health
from .text import md_escape


def render(loaded: data.Loaded, pg_key: str, cell: tuple[int, int] | None) -> None:
    report = loaded.report
    a = report.analysis
    group = a.groups.groups[pg_key]
    if cell is None:
        st.caption("Select a cell in the heatmap to see that rank's entry, call stack and recent history.")
        return
    rank, seq = cell
    if rank not in group.ranks:
        st.caption(f"Rank {rank} is not a member of this group; select a cell in the heatmap.")
        return
    host = report.host_map.host(rank) if report.host_map else None
    st.subheader(f"rank {rank} · seq {seq}" + (f" · {host}" if host else ""), anchor=False)
    health.badge(report.health.get(rank))
    found = views.cell_entry(a, pg_key, rank, seq)
    entry, exact, frames = found.entry, found.exact, found.frames
    if not exact:
        where = "it recorded no entry in this group"
        if entry:
            state = shown_state(entry.get(s.STATE), entry.get(s.RETIRED))
            where = f"its newest entry in this group is seq {entry.get(s.SEQ)} {entry.get(s.OP)} ({state})"
        st.warning(
            md_escape(f"Rank {rank} has no entry at seq {seq} ({_state_name(loaded, pg_key, rank, seq)}): {where}.")
        )

    left, right = st.columns([1, 1.4])
    with left:
        st.markdown("**Entry at this seq**" if exact else "**Newest entry of this rank in the group**")
        if entry is not None:
            shown = views.readable_entry(entry, data.dump_ns(loaded))
            st.dataframe(tables.entry_table(shown), hide_index=True, width="stretch", height=360)
        else:
            st.text("(no entry)")
    with right:
        st.markdown(f"**Call stack of rank {rank}** (innermost frame first)")
        st.code(tables.frames_text(frames), language=None, wrap_lines=True)
        _diff_against_majority(a, pg_key, seq, found)

    st.markdown(f"**Newest entries of rank {rank}** (all groups, newest first)")
    st.dataframe(views.last_entries(a, rank, 20), hide_index=True, width="stretch", height=280)


def _diff_against_majority(a, pg_key: str, seq: int, found: views.CellEntry) -> None:
    if not found.frames:
        st.caption("No call stack recorded for this entry (NCCL dumps may omit them).")
        return
    majority = stacks.majority_stack(a, pg_key, seq)
    if majority is None:
        return
    if found.stack_id == majority.stack_id:
        st.caption(f"Same call stack as the majority at seq {seq} ({majority.num_ranks} ranks).")
        return
    st.markdown(
        f"**How it differs from the majority's stack at seq {seq}** ({majority.num_ranks} ranks; "
        "`+` this rank, `-` majority, outermost frame first)"
    )
    diff = stacks.stack_diff(found.frames, stacks.stack_frames(a, majority.stack_id))
    st.code(tables.diff_text(diff), language="diff")


def _state_name(loaded: data.Loaded, pg_key: str, rank: int, seq: int) -> str:
    g = data.grid(loaded, pg_key)
    rows = (g.ranks == rank).nonzero()[0]
    if not rows.size or not len(g.seqs) or not (g.seqs[0] <= seq <= g.seqs[-1]):
        return "outside the recorded window"
    return STATE_NAMES[int(g.codes[rows[0], seq - int(g.seqs[0])])]
