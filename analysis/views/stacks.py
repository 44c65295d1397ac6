"""Call stacks behind the dashboard: a stack's frames, who shared which stack at a
collective, the majority's stack, and how one stack differs from it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..diagnosis.analysis import Analysis


def stack_frames(a: Analysis, stack_id: int | None) -> list[str]:
    """The frames of a stack, innermost first, as ``file:line in function`` lines."""
    if stack_id is None:
        return []
    st = a.dumps.stacks
    hit = st.loc[st[s.STACK_ID] == stack_id, s.FRAMES]
    return hit.iloc[0].split("\n") if not hit.empty and hit.iloc[0] else []


def stacks_at(a: Analysis, pg_key: str, seq: int) -> list[tuple[int | None, list[int]]]:
    """Ranks grouped by identical stack at (group, seq), the largest group first."""
    c = a.cells
    hit = c.loc[(c[s.PG_KEY] == pg_key) & (c[s.SEQ] == seq), [s.RANK, s.STACK_ID]]
    groups: dict[int | None, list[int]] = {}
    for rank, sid in hit.itertuples(index=False):
        groups.setdefault(None if pd.isna(sid) else int(sid), []).append(int(rank))
    return sorted(((sid, sorted(r)) for sid, r in groups.items()), key=lambda kv: -len(kv[1]))


@dataclass(frozen=True, slots=True)
class Majority:
    """The stack most ranks had at one collective."""

    stack_id: int
    num_ranks: int
    op: str | None = None
    """The collective the majority recorded it at (``all_reduce``), when known."""


def majority_stack(a: Analysis, pg_key: str, seq: int) -> Majority | None:
    """The stack shared by the most ranks at (group, seq); None when no rank recorded one."""
    groups = [(sid, ranks) for sid, ranks in stacks_at(a, pg_key, seq) if sid is not None]
    if not groups:
        return None
    sid, ranks = groups[0]
    c = a.cells
    ops = c.loc[(c[s.PG_KEY] == pg_key) & (c[s.SEQ] == seq) & (c[s.RANK] == ranks[0]), s.OP]
    op = None if ops.empty or pd.isna(ops.iloc[0]) else str(ops.iloc[0])
    return Majority(sid, len(ranks), op)


def stack_diff(mine: list[str], majority: list[str]) -> list[tuple[str, str]]:
    """Line-by-line comparison, outermost frame first: ('same'|'mine'|'majority', line)."""
    a, b = list(reversed(majority)), list(reversed(mine))
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [("same", x) for x in a[i1:i2]]
        else:
            out += [("majority", x) for x in a[i1:i2]]
            out += [("mine", x) for x in b[j1:j2]]
    return out
