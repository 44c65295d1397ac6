"""One rank's departure from its program: where, and by which edit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Edit:
    """Where one rank's calls in one group first depart from the program, and how."""

    rank: int
    pg_key: str
    seq: int
    """The seq of the rank's call where it departs (for a skip: the call it issued instead)."""
    kind: str
    """``substitute``, ``skip`` or ``extra`` (see ``model/costs``)."""
    differs: tuple[str, ...]
    """The attributes (op, sizes, dtypes, call site) where the rank's call at ``seq`` differs
    from the program's call there."""
    cost: float
    """Of the cheapest alignment of the rank's calls from ``seq`` on."""
    row: int
    """The rank's cell at ``seq``."""
    expected_row: int | None
    """A cell that issued the program's call at ``seq`` (None where nobody was seen there)."""
    elsewhere: bool = False
    shown: bool = False
    """A later call of the rank lines up with the program past this edit."""
    decided_by: str = "program"
    """What chose the program's call the rank departs from (``Mismatch.decided_by``)."""
    """The rank's call at ``seq`` is one the program issues at another point."""
