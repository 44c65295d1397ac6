"""One rank at one sequence number: its entry, its call stack, how it differs from the majority."""

from __future__ import annotations

import streamlit as st

from analysis import schema as s
from analysis import views
from analysis.grid import STATE_NAMES

from .. import data, tables


def render(loaded: data.Loaded, pg_key: str, cell: tuple[int, int] | None) -> None:
    a = loaded.report.analysis
    group = a.groups.groups[pg_key]
    if cell is None:
        st.caption("Select a cell in the heatmap to see that rank's entry, call stack and recent history.")
        return
    rank, seq = cell
    if rank not in group.ranks:
        st.caption(f"Rank {rank} is not a member of this group; select a cell in the heatmap.")
        return
    st.subheader(f"rank {rank} · seq {seq}")
    entry = views.entry_at(a, pg_key, rank, seq)
    majority = views.majority_stack(a, pg_key, seq)
    peers = dict(views.stacks_at(a, pg_key, seq))
    if entry is not None:
        where = f"state {entry.get(s.STATE)}"
        stack_id = entry.get(s.STACK_ID)
    else:
        state_name = _state_name(loaded, pg_key, rank, seq)
        where, stack_id = _newest_stack(a, pg_key, rank)
        st.warning(
            f"Rank {rank} has no entry at seq {seq} of this group ({state_name}). "
            f"Its call stack below is from its newest entry in this group: {where}."
        )
    frames = views.stack_frames(a, None if stack_id is None else int(stack_id))

    left, right = st.columns([1, 1.4])
    with left:
        st.markdown("**Entry at this seq**")
        if entry is not None:
            st.dataframe(tables.entry_table(entry), hide_index=True, width="stretch", height=360)
        else:
            st.text("(no entry)")
    with right:
        st.markdown(f"**Call stack of rank {rank}** (innermost frame first)")
        st.code(tables.frames_text(frames), language=None, wrap_lines=False)
        if majority is not None and stack_id is not None and int(stack_id) != majority:
            n_major = len(peers.get(majority, []))
            st.markdown(
                f"**Differs from the majority's stack at seq {seq}** ({n_major} ranks; + this rank, - majority, outermost first)"
            )
            diff = views.stack_diff(frames, views.stack_frames(a, majority))
            st.code(tables.diff_text(diff), language="diff")
        elif majority is not None and stack_id is not None:
            st.caption(f"Same call stack as the majority at this seq ({len(peers.get(majority, []))} ranks).")
        elif stack_id is None and frames == []:
            st.caption("This dump recorded no call stacks (NCCL builds may omit them).")

    st.markdown(f"**Newest entries of rank {rank}** (all groups, newest first)")
    st.dataframe(views.last_entries(a, rank, 20), hide_index=True, width="stretch", height=280)


def _state_name(loaded: data.Loaded, pg_key: str, rank: int, seq: int) -> str:
    g = data.grid(loaded, pg_key)
    rows = (g.ranks == rank).nonzero()[0]
    if not rows.size or not len(g.seqs) or not (g.seqs[0] <= seq <= g.seqs[-1]):
        return "outside the recorded window"
    return STATE_NAMES[int(g.codes[rows[0], seq - int(g.seqs[0])])]


def _newest_stack(a, pg_key: str, rank: int) -> tuple[str, int | None]:
    e = a.dumps.entries
    name = a.groups.groups[pg_key].name
    mine = e.loc[(e[s.RANK] == rank) & (e[s.PG_NAME].astype(str) == name)]
    if mine.empty:
        mine = e.loc[e[s.RANK] == rank]
        if mine.empty:
            return "no entries recorded", None
    with_stack = mine.loc[mine[s.STACK_ID].notna()]
    row = (with_stack if not with_stack.empty else mine).sort_values(s.RECORD_ID).iloc[-1]
    sid = row[s.STACK_ID]
    where = f"seq {row[s.SEQ]} {row[s.OP]} ({row[s.STATE]})"
    return where, (None if sid is None or str(sid) in ("<NA>", "nan") else int(sid))
