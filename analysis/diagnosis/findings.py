"""What the diagnosis found, as data: each finding says what was seen, about which ranks,
where, and what it makes of them. The words are rendered from these in one place
(``analysis.report.evidence``), so the command line, the JSON, the dashboard and the
HTML export say the same thing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ..types import FailureClass

NEVER = 2**63
"""A time later than any: for findings whose start is unknown."""


class Kind(enum.StrEnum):
    """What was seen."""

    MISMATCH = "mismatch"
    """At one (group, seq) some ranks issued something different from what the others did."""
    UNDECIDED_MISMATCH = "undecided_mismatch"
    """Ranks differ at one (group, seq) and nothing decides which side is right."""
    SIZES_DO_NOT_ADD_UP = "sizes_do_not_add_up"
    """An all_to_all whose rows sent over the group differ from the rows received."""
    EXTRA = "extra"
    """A rank issued a collective no other rank issues; its peers moved on."""
    WENT_PAST = "went_past"
    """A rank in a wait-for cycle went past a collective its peers wait for it in."""
    STRAGGLER = "straggler"
    """A rank is stuck inside a collective its peers completed."""
    NOT_ISSUED = "not_issued"
    """A rank never issued a collective its peers issued and wait in."""
    LEFT_BEHIND = "left_behind"
    """A silent rank whose step-mates all went on to collectives it never issued."""
    NO_RECORD = "no_record"
    """A rank has no record of a group whose other members wait."""
    NO_DUMP = "no_dump"
    """A rank wrote no dump, and its peers wait for it."""
    P2P_UNMATCHED = "p2p_unmatched"
    """A rank never posted the send/recv matching a peer's pending one."""
    RECORD_EDIT = "record_edit"
    """A rank's newest records depart from those the ranks of its program hold at the same
    record numbers: it skipped a call of theirs, added one, or issued another in its place."""
    COUNT_EDIT = "count_edit"
    """A rank's counts of its groups' collectives depart from those of the ranks of its program
    at the same point: it issued one fewer of a family, one more, or one of another in place."""
    """A rank posted fewer (or more) send/recvs of a group than the ranks at its stage of
    sibling groups had at the same point: it skipped (or added) one."""
    STALLED = "stalled"
    """Every member issued a collective and none completed it."""
    ABSENT = "absent"
    """A member rank of the job's groups wrote no dump (nobody visibly waits on it)."""
    CYCLE = "cycle"
    """Ranks wait on each other in a cycle that program order does not break."""
    CONSEQUENCE = "consequence"
    """A rank stopped only after a mismatch began: a consequence, not a cause."""
    PIPELINE_BLOCKED = "pipeline_blocked"
    """Ranks that stopped together with their whole group, blocked on an unrecorded send/recv."""
    BEHIND_STUCK = "behind_stuck"
    """Silent ranks left behind whose pipeline peer is a stuck rank others wait on: possibly blocked on it."""
    BEHIND_NO_DUMP = "behind_no_dump"
    """Silent ranks that stopped with their pipeline chain, one of whose ranks wrote no dump."""
    P2P_INVISIBLE = "p2p_invisible"
    """A caution: the dumps record no send/recv, so silent ranks may be blocked in one."""
    WAITING = "waiting"
    """The ranks blocked waiting, directly or through others."""
    HEALTH_FAILED = "health_failed"
    """A node health check (``detail["device"]``: GPU or NIC) failed on these ranks."""
    HEALTH_TIE_BROKEN = "health_tie_broken"
    """The dumps could not single out a rank; a failed health check made these ranks the suspects."""
    HEALTH_TIE_KEPT = "health_tie_kept"
    """The dumps could not single out a rank, and the health checks do not either (all failed or all passed)."""
    HEALTH_SUPPORTS = "health_supports"
    """A suspect's health check failed too."""
    HEALTH_CLEARED = "health_cleared"
    """A rank's health check failed although the dumps clear it: stated, not blamed."""
    HEALTH_UNREADABLE = "health_unreadable"
    """The health checks of these ranks could not be read."""


class Role(enum.StrEnum):
    """What the finding makes of its ranks."""

    SUSPECT = "suspect"
    """A cause."""
    POSSIBLE = "possible"
    """One of several candidates the dumps cannot tell apart."""
    CLEARED = "cleared"
    """A rank that looked like a cause but is explained as a victim."""
    NOTE = "note"
    """Context, about no rank in particular or about victims."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the dumps show, and what it makes of the ranks it names."""

    kind: Kind
    role: Role
    ranks: tuple[int, ...]
    failure_class: FailureClass | None = None
    pg_key: str | None = None
    seq: int | None = None
    op: str | None = None
    waiters: tuple[int, ...] = ()
    """The ranks seen waiting because of this finding."""
    since: int = NEVER
    """When it began (ns; the earliest pending op waiting on it), for ordering."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Kind-specific facts (a call site, the value each rank issued, where a rank went on to)."""

    @property
    def rank(self) -> int:
        """The one rank of a single-rank finding."""
        return self.ranks[0]
