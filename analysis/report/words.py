"""How ranks and groups are named in every sentence and table Flight Deck writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Group(Protocol):
    name: str
    desc: str
    ranks: tuple[int, ...]


def group_label(g: _Group | None) -> str:
    """``group 3 (tensor_parallel, ranks [4, 5])``: a group as sentences name it."""
    if g is None:
        return "an unknown group"
    ranks = list(g.ranks)
    shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    return f"group {g.name} ({g.desc or 'no description'}, ranks [{shown}])"


def ranks_text(ranks: Sequence[int], limit: int = 8) -> str:
    """``ranks 0, 1 and 3 more``: ranks as a sentence names them."""
    ranks = list(ranks)
    if not ranks:
        return "no rank"
    word = "rank" if len(ranks) == 1 else "ranks"
    shown = ", ".join(map(str, ranks[:limit]))
    more = f" and {len(ranks) - limit} more" if len(ranks) > limit else ""
    return f"{word} {shown}{more}"


def rank_list(ranks: Sequence[int], limit: int = 16) -> str:
    """``0, 1, 2, ... (40 ranks)``: ranks as a table cell shows them."""
    ranks = list(ranks)
    if len(ranks) <= limit:
        return ", ".join(map(str, ranks))
    return ", ".join(map(str, ranks[:limit])) + f", ... ({len(ranks)} ranks)"
