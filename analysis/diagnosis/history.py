"""What a group issued at the same point of earlier steps: the training loop repeats.

A tie between two values at one (group, seq) has no majority, and sibling groups may be
elsewhere in the program; but the group itself ran the same program point in earlier
steps. Those earlier seqs are the ones called from the same place with the same op,
or, where the dumps carry no stacks, the seqs one period back in the group's own
history (the smallest period its agreed history repeats with), or, where the history is
too short to repeat twice, the seqs that followed the longest earlier run of the ops just
before (what the loop issued after the same ops). What the group issued there, all
members agreeing, votes.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from .. import schema as s
from ..model.routine import CONTEXT, MIN_CONTEXT
from ..opnames import is_exchange

MAX_PERIOD = 256
"""Longest step, in seqs of one group, looked for."""


def _agreed_rows(group_cells: pd.DataFrame, before: int) -> pd.DataFrame:
    """The group's seqs before ``before`` where every member issued the same thing, one row each."""
    earlier = group_cells.loc[group_cells[s.SEQ] < before]
    cols = [s.SEQ, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE]
    text = earlier[cols].astype(str)
    text.loc[text[s.OP].map(is_exchange), s.INPUT_SIZES] = ""  # ranks of an exchange send uneven amounts
    distinct = text.drop_duplicates()
    single = distinct.groupby(s.SEQ).filter(lambda part: len(part) == 1)
    single = single.assign(**{s.SEQ: single[s.SEQ].astype(int)})
    return single.sort_values(s.SEQ).reset_index(drop=True)


def _period(values: list[tuple[str, ...]]) -> int | None:
    """The smallest period the whole sequence repeats with (at least twice over), if any."""
    n = len(values)
    for p in range(1, min(MAX_PERIOD, n // 2) + 1):
        if all(values[i] == values[i - p] for i in range(p, n)):
            return p
    return None


def known_site(site: object) -> bool:
    """Whether ``site`` names a call site (a dump without stacks leaves it empty: blank,
    "None", or a missing value)."""
    return isinstance(site, str) and site not in ("", "nan", "None")


def _same_point(agreed: pd.DataFrame, current: pd.Series, seq: int, attribute: str, by_site: bool = True) -> list[int]:
    """Earlier seqs at the same program point as ``seq`` (by call site, where ``by_site``)."""
    site = str(current[s.CALL_SITE])
    if by_site and attribute != s.CALL_SITE and known_site(site):
        same = agreed.loc[(agreed[s.CALL_SITE] == site) & (agreed[s.OP] == str(current[s.OP]))]
        if len(same):
            return [int(q) for q in same[s.SEQ]]
    seqs = agreed[s.SEQ].astype(int).tolist()
    contiguous = [q for q in seqs if q >= seq - 2 * MAX_PERIOD]
    if not contiguous or contiguous != list(range(contiguous[0], seq)):
        return []
    recent = agreed.loc[agreed[s.SEQ].astype(int) >= contiguous[0], [s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]]
    # an exchange's sizes change every step: only its op and dtypes repeat
    values = [(op, "" if is_exchange(op) else sz, dt) for op, sz, dt in recent.itertuples(index=False)]
    p = _period(values)
    if p is None:
        return [contiguous[0] + j for j in _after_same_context(values)]
    return [q for q in range(seq - p, contiguous[0] - 1, -p)]


def _after_same_context(values: list[tuple[str, ...]]) -> list[int]:
    """Positions that followed the longest earlier run of the ops that end ``values`` (at least
    MIN_CONTEXT of them), where they all issued the same: what the loop issued after the same ops.
    An earlier run ends before the ops it is matched with begin: inside a block of like ops
    (the all_reduces of a backward pass) every run is followed by another one, which says
    nothing about what follows the block."""
    n = len(values)
    for k in range(min(CONTEXT, n - 1), MIN_CONTEXT - 1, -1):
        context = values[n - k :]
        found = [j for j in range(k, n - k + 1) if values[j - k : j] == context]
        if found:
            return found if len({values[j] for j in found}) == 1 else []  # a loop repeats itself
    return []


def _site_issues_all(cells: pd.DataFrame, shared: pd.Series, attribute: str, tied: list[str]) -> bool:
    """Whether the call site the tied ranks share issues every one of the ``tied`` values
    somewhere in the dumps (a loop over gradient buckets calls one site once per bucket): then
    an earlier call from that site need not be the same program point."""
    site = str(shared[s.CALL_SITE])
    if attribute == s.CALL_SITE or not known_site(site):
        return False
    here = cells.loc[(cells[s.CALL_SITE].astype(str) == site).to_numpy() & (cells[s.OP] == shared[s.OP]).to_numpy()]
    return set(tied) <= {str(v) for v in here[attribute].unique()}


def history_vote(cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str]) -> str | None:
    """Which of the ``tied`` values the group issued at this program point in earlier steps."""
    group_cells = cells.loc[(cells[s.PG_KEY] == key).to_numpy()]
    here = group_cells.loc[group_cells[s.SEQ] == seq]
    if here.empty:
        return None
    agreed = _agreed_rows(group_cells, seq)
    if agreed.empty:
        return None
    # the attribute in dispute cannot locate the program point: use what the tied ranks share
    shared = here.iloc[0] if attribute == s.CALL_SITE else _common(here)
    points = _same_point(agreed, shared, seq, attribute, by_site=not _site_issues_all(cells, shared, attribute, tied))
    if not points:
        return None
    earlier = agreed.loc[agreed[s.SEQ].astype(int).isin(points), attribute]
    votes = Counter(v for v in earlier if v in tied)
    ranked = votes.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def call_text(rows: pd.DataFrame, columns: tuple[str, ...] = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)) -> pd.DataFrame:
    """Each row's whole call as text: op, input sizes (blank for an exchange: its ranks send
    uneven amounts) and dtypes, or the ``columns`` given."""
    text = rows[list(columns)].astype(str)
    text.loc[text[s.OP].map(is_exchange), s.INPUT_SIZES] = ""
    return text


def calls_by_seq(
    rows: pd.DataFrame, columns: tuple[str, ...] = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)
) -> dict[int, set[tuple[str, ...]]]:
    """seq -> the distinct whole calls (see :func:`call_text`) ``rows`` hold there."""
    calls: dict[int, set[tuple[str, ...]]] = {}
    for q, call in zip(rows[s.SEQ].astype(int), call_text(rows, columns).itertuples(index=False, name=None)):
        calls.setdefault(q, set()).add(call)
    return calls


def seen_call_vote(cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str]) -> str | None:
    """The one ``tied`` value whose whole call (op, sizes, dtypes) the group's members all
    issued together at an earlier seq, where the other side's call never occurred there."""
    group_cells = cells.loc[(cells[s.PG_KEY] == key).to_numpy()]
    here = group_cells.loc[group_cells[s.SEQ] == seq]
    agreed = _agreed_rows(group_cells, seq)
    if here.empty or agreed.empty:
        return None
    seen = set(call_text(agreed).itertuples(index=False, name=None))
    values = here[attribute].astype(str).tolist()
    known = {v for v, call in zip(values, call_text(here).itertuples(index=False, name=None)) if call in seen}
    if len(known) != 1 or not set(values) - known:
        return None
    (value,) = known
    return value if value in tied else None


def predecessor_vote(cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str]) -> str | None:
    """The one ``tied`` value whose call fits after the group's previous seq: a side whose
    whole call (op, sizes, dtypes, call site) the group issued at two or more earlier seqs,
    each time right after one same call, is out of place after another (a call that
    always follows a broadcast of the batch, issued without it: the broadcast was skipped)."""
    group_cells = cells.loc[(cells[s.PG_KEY] == key).to_numpy()]
    here = group_cells.loc[group_cells[s.SEQ] == seq]
    agreed = _agreed_rows(group_cells, seq)
    if here.empty or agreed.empty or int(agreed[s.SEQ].iloc[-1]) != seq - 1:
        return None
    whole = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)
    by_seq = dict(zip(agreed[s.SEQ].astype(int), call_text(agreed, whole).itertuples(index=False, name=None)))
    previous = by_seq[seq - 1]
    calls = dict(zip(here[attribute].astype(str), call_text(here, whole).itertuples(index=False, name=None)))
    out_of_place = set()
    for value in tied:
        earlier = [q for q, call in by_seq.items() if call == calls.get(value)]
        before = {by_seq.get(q - 1) for q in earlier}
        if len(earlier) >= 2 and len(before) == 1 and None not in before and before != {previous}:
            out_of_place.add(value)
    fitting = [v for v in tied if v not in out_of_place]
    return fitting[0] if len(fitting) == 1 and out_of_place else None


def _common(here: pd.DataFrame) -> pd.Series:
    """The tied cells' op and call site where they agree (blank where they do not)."""
    row = here.iloc[0].copy()
    for col in (s.OP, s.CALL_SITE):
        if here[col].astype(str).nunique() != 1:
            row[col] = ""
    return row


def history_shift(cells: pd.DataFrame, key: str, seq: int, odd: set[int]) -> int:
    """+1 where the ``odd`` ranks issued at ``seq`` what the group, at the same point of its
    earlier steps, issued one seq later (they skipped one); -1 where they issued what it
    issued one seq earlier (they added one); 0 where the history does not show either.

    The live seqs show a shift only once the others have issued the next seq too; a rank
    that skipped the last collective before a host sync leaves them blocked before it.
    The same point of earlier steps is found as for :func:`history_vote`; where it is not,
    every earlier seq with the others' call stands in, and a skip must then show in the
    odd ranks' next call too (it follows on as the group's did).
    """
    group_cells = cells.loc[(cells[s.PG_KEY] == key).to_numpy()]
    here = group_cells.loc[group_cells[s.SEQ] == seq]
    is_odd = here[s.RANK].isin(odd).to_numpy()
    mine = set(call_text(here.loc[is_odd]).itertuples(index=False, name=None))
    theirs = Counter(call_text(here.loc[~is_odd]).itertuples(index=False, name=None)).most_common(1)
    agreed = _agreed_rows(group_cells, seq)
    if len(mine) != 1 or not theirs or agreed.empty:
        return 0
    (mine_call,), expected = mine, theirs[0][0]
    call_at = dict(zip(agreed[s.SEQ].astype(int), call_text(agreed).itertuples(index=False, name=None)))
    points = _same_point(agreed, _common(here.loc[~is_odd]), seq, s.INPUT_SIZES)
    next_call = None
    if not points:  # every earlier seq with the same call; the odd ranks' next call must follow on as well
        points = [q for q, call in call_at.items() if call == expected]
        after = group_cells.loc[(group_cells[s.SEQ] == seq + 1).to_numpy() & group_cells[s.RANK].isin(odd).to_numpy()]
        next_calls = set(call_text(after).itertuples(index=False, name=None))
        if len(next_calls) != 1:
            return 0
        (next_call,) = next_calls
    for shift in (1, -1):
        near = [q + shift for q in points if q + shift in call_at and q + shift < seq]
        if not near or not all(call_at[q] == mine_call != expected for q in near):
            continue
        if next_call and shift == 1 and not all(call_at.get(q + 1) == next_call for q in near if q + 1 < seq):
            continue
        if all(call_at.get(q) == expected for q in points):
            return shift
    return 0
