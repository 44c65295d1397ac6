"""What each edit of a rank's history against its program costs (``docs/one-model.md``).

One table, each cost with the sentence that says why. The alignment (``diagnosis/alignment``)
finds, for every rank, the cheapest way its calls line up with the program; the class of a
fault follows from the edit that way needs. The values are weighed against each other, never
tuned to one case: a case the model gets wrong is fixed here, in the open, for every case.
"""

from __future__ import annotations

from .. import schema as s

SUBSTITUTE: dict[str, float] = {
    s.OP: 2.0,
    s.INPUT_SIZES: 1.0,
    s.INPUT_DTYPES: 1.0,
    s.CALL_SITE: 0.5,
}
"""Substituting a call: the sum over the attributes that differ. Another collective (op) puts
the rank at another point of the program; a wrong size or dtype is one wrong tensor, the
rank still at the right point; another call site alone is another line of the same
function, cheaper than either, so a branch passing a wrong tensor (sizes or dtypes, and the
call site: 1.5) stays cheaper than a shift (2), while a call that shares nothing but the op
with the program's (sizes, dtypes and call site: 2.5) is a call of its own (an extra)."""

OTHER_FUNCTION = 1.5
"""A call site in another function (file and function name) instead of another line of the
same one: the call site says where in the program the rank is, so a call from another
function with other sizes (2.5) is dearer than the shift that explains it, while a branch of
the same function passing a wrong tensor (1.5) is not."""

SKIP = 2.0
"""The program's call was not issued; every later call of the rank lines up one position on,
so one skip explains them all."""

EXTRA = 2.0
"""A call the program does not have; every later call lines up one position back."""

EXTRA_PROGRAM = 2.5
"""Adding a call the program issues at some point: a piece of the program run twice is less
likely than another rank skipping it, so where two sides are one call off each other, the
side without the program's call skipped it."""

SKIP_OWN = 2.5
"""Skipping a call the program issues nowhere else (a call of its own, as a debug metric
only some ranks log): less likely than the other side adding it, so where two sides are one
call off each other, the side with a call of its own added it. Only where the dumps show
more than one step of the program (its period): in dumps of a step or less (only the
pending entries, say) every call is seen once, and that says nothing."""

ELSEWHERE = 2.5
"""Substituting a call the program issues, exactly, one position away or at another point of
the same description's program: that call issued early or late, not a wrong tensor (which
seldom matches another call in op, sizes, dtypes and call site at once), so it costs more
than a shift (2) that explains it, and is a desync where nothing cheaper does."""

UNKNOWN = 0.0
"""A position of the program nobody was seen at (past every rank's history, with no step
period to tell it): nothing to compare, nothing to explain."""

ONE_EDIT = ELSEWHERE
"""The dearest alignment that is one edit: a rank whose records need more against those of
the ranks it was grouped with runs another program than they do, and they cannot judge it."""

HORIZON = 16
"""The rank's calls weighed after its first departure from the program: the first edit is
what the class rests on, and a shift shows within a few calls."""

BAND = 4
"""The largest shift weighed (calls skipped or added in a row)."""
