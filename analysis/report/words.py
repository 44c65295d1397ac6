"""How ranks and groups are named in every sentence and table Flight Deck writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Group(Protocol):
    name: str
    desc: str
    ranks: tuple[int, ...]


def compact_ranks(ranks: Sequence[int], limit: int = 12) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``0-3, 7``; past ``limit`` runs the list is cut with a count."""
    ranks = sorted(int(r) for r in ranks)
    runs: list[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        runs.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    if len(runs) > limit:
        return ", ".join(runs[:limit]) + f", … ({len(ranks)} ranks)"
    return ", ".join(runs)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 rank``, ``3 ranks``, ``2 classes``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def ranks_text(ranks: Sequence[int], limit: int = 12) -> str:
    """``rank 5``, ``ranks 0-3, 7``: ranks as a sentence names them."""
    if not len(ranks):
        return "no rank"
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {compact_ranks(ranks, limit)}"


def group_label(g: _Group | None) -> str:
    """``group 3 (tensor_parallel, ranks 4-5)``: a group as sentences and pickers name it."""
    if g is None:
        return "an unknown group"
    return f"group {g.name} ({g.desc or 'no description'}, {ranks_text(g.ranks, 8)})"


def called_from(site: str | None) -> str:
    """``, called from train.py:88``: where a collective was issued, when the dumps record it."""
    return f", called from {site}" if site else ""
