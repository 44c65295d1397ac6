"""One rank at one sequence number: its entry, its call stack, how it differs from the majority."""

from __future__ import annotations

import streamlit as st

from analysis import schema as s
from analysis.report.words import counted
from analysis.views import drilldown as views
from analysis.views import stacks
from analysis.views.grid import STATE_NAMES, shown_state

from .. import data, tables
from . import health, table
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
            table.show(tables.entry_table(shown), height=360)
        else:
            st.text("(no entry)")
    with right:
        newest = "" if exact or entry is None else ", its newest entry in this group"
        st.markdown(f"**Call stack of rank {rank}{md_escape(_at(entry))}**{newest} (innermost frame first)")
        st.code(tables.frames_text(frames), language=None, wrap_lines=True)
        _diff_against_majority(a, pg_key, rank, seq, found)

    st.markdown(f"**Newest entries of rank {rank}** (all groups, newest first)")
    table.show(views.last_entries(a, rank, 20))


def _at(entry: dict | None) -> str:
    """`` at seq 10 (all_gather)``: where an entry was recorded, as the headings name it."""
    if entry is None or entry.get(s.SEQ) is None:
        return ""
    op = entry.get(s.OP)
    return f" at seq {entry.get(s.SEQ)}" + (f" ({op})" if op else "")


def _diff_against_majority(a, pg_key: str, rank: int, seq: int, found: views.CellEntry) -> None:
    """The rank's stack against the stack most members recorded at ``seq``, each named by its seq and op."""
    if not found.frames:
        st.caption("No call stack recorded for this entry (NCCL dumps may omit them).")
        return
    majority = stacks.majority_stack(a, pg_key, seq)
    if majority is None:
        return
    mine = md_escape(f"rank {rank}'s stack{_at(found.entry)}")
    theirs = md_escape(
        f"the majority's at seq {seq}"
        + (f" ({majority.op})" if majority.op else "")
        + f", {counted(majority.num_ranks, 'rank')}"
    )
    if found.stack_id == majority.stack_id:
        st.caption(f"The same call stack: {mine} is {theirs}.")
        return
    st.markdown(f"**How {mine} differs from {theirs}**")
    caption = f"+ marks lines only in rank {rank}'s stack, - lines only in the majority's; unmarked lines are in both. "
    caption += "Outermost frame first."
    if not found.exact:
        caption += (
            f" Rank {rank} recorded nothing at seq {seq}: the diff compares its newest entry with the majority's."
        )
    st.caption(md_escape(caption))
    diff = stacks.stack_diff(found.frames, stacks.stack_frames(a, majority.stack_id))
    st.code(tables.diff_text(diff), language="diff", wrap_lines=True)


def _state_name(loaded: data.Loaded, pg_key: str, rank: int, seq: int) -> str:
    g = data.grid(loaded, pg_key)
    rows = (g.ranks == rank).nonzero()[0]
    if not rows.size or not len(g.seqs) or not (g.seqs[0] <= seq <= g.seqs[-1]):
        return "outside the recorded window"
    return STATE_NAMES[int(g.codes[rows[0], seq - int(g.seqs[0])])]
