"""Layer 2 of the one model: every rank's calls aligned to its program (``docs/one-model.md``).

A rank's call at (group, seq) is compared with the program's call at (the group's role,
seq). Where every call matches, the rank is in step and nothing more is done (array
operations over every cell). From a rank's first call that does not match, its next calls
in that group are aligned to the program by the cheapest edits of ``model/costs``
(substitute, skip, extra; the program's positions past the rank's last call are free: a
history may end anywhere), and the first edit of that alignment is where the rank
departed, with what it did there. Positions where the program itself is tied (as many
cells, here and in the history, for two calls) are not the rank's departure: they are
kept as ties, to be shown as possible causes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import schema as s
from ..model import costs
from ..model.families import call_codes
from ..model.program import TOKEN, Program
from ..opnames import is_exchange
from ..tables.rowkeys import pair_ids
from .edit_distance import FUNCTION, MATCH, Calls, Departure, differs, first_departure
from .edits import Edit
from .pairs import Counts, pair_counts, settle_pairs


@dataclass(frozen=True, slots=True)
class Alignment:
    edits: list[Edit]
    ties: list[tuple[str, int]]
    """(group, seq) of the first position of each group where the program is tied and the
    group's cells differ."""


class _Calls:
    """The program's call at any position of a family: the consensus where at least half as
    many cells were seen as at its best-seen position; else (past the frontier most ranks
    reached, where a departing rank may be the only witness, and no witness of itself) the
    call of that phase of the step where the family has a period, else unknown."""

    def __init__(self, program: Program, description_of_role: dict[str, str]) -> None:
        c = program.calls
        weak = c["weak"].to_numpy(dtype=bool)
        self.description_of_role = description_of_role
        self.issued: dict[str, Counter[int]] = {}
        held = ~weak & (c["support"].to_numpy() * 2 > c["seen"].to_numpy())  # a majority's call
        for f, t in zip(c["family"][held], c["token"][held]):
            self.issued.setdefault(description_of_role.get(str(f), str(f)), Counter())[int(t)] += 1
        self.known = {
            (str(f), int(q)): (int(t), int(r), bool(tied), bool(w))
            for f, q, t, r, tied, w in zip(c["family"], c[s.SEQ], c["token"], c["row"], c["tied"], weak)
        }
        self.majority = {(str(f), int(q)) for f, q in zip(c["family"][held], c[s.SEQ][held])}
        self.even = {(str(f), int(q)) for f, q in zip(c["family"][c["even"]], c[s.SEQ][c["even"]])}
        self.period = program.period
        by_phase = c.sort_values("phase_support", ascending=False, kind="stable").drop_duplicates(["family", "phase"])
        self.phase = {
            (str(f), int(p)): (int(t), int(r))
            for f, p, t, r in by_phase[["family", "phase", "token", "row"]].itertuples(index=False)
        }

    def at(self, family: str, seq: int) -> tuple[int, int] | None:
        """(token, row) of the program's call at (family, seq), or None if unknown or tied."""
        hit = self.known.get((family, seq))
        p = self.period.get(family)
        if hit is not None and not hit[3]:
            return None if hit[2] else hit[:2]
        return self.phase.get((family, seq % p)) if p else None

    def basis(self, family: str, seq: int) -> str:
        """What chose the program's call at (family, seq): ``program`` (most of the cells seen
        there), ``usual`` (only the weaker weights of ``call_support``), else ``history``
        (the same point of the other steps)."""
        if (family, seq) in self.majority:
            return "program"
        return "usual" if (family, seq) in self.even else "history"

    def issued_elsewhere(self, family: str, token: int, besides: int = 0) -> bool:
        """Whether the program issues this very call at more than ``besides`` well-seen
        positions held by a majority, in the roles of ``family``'s description."""
        return self.issued.get(self.description_of_role.get(family, family), Counter())[token] > besides


def align(
    cells: pd.DataFrame,
    role_of: dict[str, str],
    program: Program,
    description_of: dict[str, str] | None = None,
    tokens: np.ndarray | None = None,
    counts: Counts | None = None,
) -> Alignment:
    """Where each rank departs from its program (one :class:`Edit` per departing (rank,
    group)), and the positions where the program itself is tied; ``counts``: how many calls
    each rank issued in each group, where the dumps keep it."""
    if cells.empty or program.calls.empty:
        return Alignment([], [])
    tokens = call_codes(cells, TOKEN) if tokens is None else tokens
    keys = cells[s.PG_KEY].astype("category").array
    role_of_key = {str(k): role_of.get(str(k), str(k)) for k in keys.categories}
    expected, tied = _program_token(cells, keys, role_of_key, program)
    off = (tokens != expected) & ~tied
    codes = _attribute_codes(cells)
    described = {role_of.get(k, k): d for k, d in (description_of or {}).items() if d}
    calls = _Calls(program, described)
    found = (
        _first_edit(cells, rows, tokens, codes, calls, role_of_key[str(keys[rows[0]])])
        for rows in _departing_histories(cells, keys, off)
    )
    edits = [e for e in found if e is not None]

    def fit(mine: list[int], theirs: list[int]) -> tuple[Edit | None, float]:
        c = _calls_against(
            np.asarray(mine), theirs, tokens, codes, calls, role_of_key[str(cells[s.PG_KEY].iat[mine[0]])]
        )
        d = first_departure(c, codes)
        return edit_of(cells, c, d, codes), d.cost

    even = {(e.pg_key, e.seq) for e in edits if (role_of_key[e.pg_key], e.seq) in calls.even}
    ties = _ties(cells, keys, tokens, tied)
    edits, ties = settle_pairs(edits, ties, even, cells, fit, pair_counts(cells, role_of_key, counts))
    return Alignment(edits, ties)


def _program_token(
    cells: pd.DataFrame, keys: pd.Categorical, role_of_key: dict[str, str], program: Program
) -> tuple[np.ndarray, np.ndarray]:
    """The program's token at each cell's position (-1 where unknown), and whether it is tied."""
    c = program.calls
    names = pd.Index(c["family"].cat.categories.astype(str))
    per_key = names.get_indexer(pd.Index([role_of_key[str(k)] for k in keys.categories])).astype(np.int64)
    fcodes = np.append(per_key, -1)[np.where(keys.codes < 0, -1, keys.codes)]  # one lookup per group
    n = len(c)
    ids = pair_ids(
        np.concatenate([c["family"].cat.codes.to_numpy().astype(np.int64), fcodes]),
        np.concatenate([c[s.SEQ].to_numpy().astype(np.int64), cells[s.SEQ].to_numpy().astype(np.int64)]),
    )
    at = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int64)
    at[ids[:n]] = np.arange(n)
    hit = at[ids[n:]]
    found = (hit >= 0) & (fcodes >= 0)
    token = np.where(found, c["token"].to_numpy()[np.maximum(hit, 0)], -1)
    return token, found & c["tied"].to_numpy(dtype=bool)[np.maximum(hit, 0)]


def _attribute_codes(cells: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per attribute of a call, one int per cell, equal where the values are (0: missing;
    an exchange's sizes all 0: its splits differ by rank and step, as in ``call_codes``)."""
    out = {col: cells[col].cat.codes.to_numpy().astype(np.int64) + 1 for col in TOKEN}
    ops = cells[s.OP].array
    exchange = np.array([is_exchange(str(c)) for c in ops.categories] + [False])
    out[s.INPUT_SIZES] = np.where(exchange[np.where(ops.codes < 0, -1, ops.codes)], 0, out[s.INPUT_SIZES])
    sites = cells[s.CALL_SITE].array
    functions = pd.Categorical([function_of(str(site)) for site in sites.categories])
    out[FUNCTION] = np.append(functions.codes.astype(np.int64), -1)[np.where(sites.codes < 0, -1, sites.codes)]
    return out


def function_of(site: str) -> str:
    """The file and function of a call site ``path:line in function`` (the site itself if
    it has no such form)."""
    where, _, function = site.rpartition(" in ")
    return f"{where.rpartition(':')[0]} {function}" if where else site


def _departing_histories(cells: pd.DataFrame, keys: pd.Categorical, off: np.ndarray) -> list[np.ndarray]:
    """For each (rank, group) with a call off the program: the rows of its calls in that
    group from the first such call on, in seq order, at most ``HORIZON`` of them."""
    if not off.any():
        return []
    rank = cells[s.RANK].to_numpy().astype(np.int64)
    seq = cells[s.SEQ].to_numpy().astype(np.int64)
    pair = pair_ids(rank, keys.codes.astype(np.int64))
    wanted = np.unique(pair[off])
    rows = np.flatnonzero(np.isin(pair, wanted))
    rows = rows[np.lexsort((seq[rows], pair[rows]))]
    first_off = {}
    for r in rows[off[rows]]:
        first_off.setdefault(int(pair[r]), int(seq[r]))
    starts = np.flatnonzero(np.diff(pair[rows], prepend=-1))
    out = []
    for part in np.split(rows, starts[1:]):
        q0 = first_off[int(pair[part[0]])]
        out.append(part[seq[part] >= q0][: costs.HORIZON])
    return out


def _ties(cells: pd.DataFrame, keys: pd.Categorical, tokens: np.ndarray, tied: np.ndarray) -> list[tuple[str, int]]:
    """The first tied position of each group where its cells issued more than one call."""
    if not tied.any():
        return []
    names = np.asarray(keys.categories.astype(str), dtype=object)
    here = pd.DataFrame({"k": names[keys.codes[tied]], "q": cells[s.SEQ].to_numpy()[tied]})
    here["t"] = tokens[tied]
    split = here.groupby(["k", "q"])["t"].nunique()
    split = split[split > 1].reset_index().sort_values("q").drop_duplicates("k")
    return [(str(k), int(q)) for k, q in zip(split["k"], split["q"])]


def _first_edit(
    cells: pd.DataFrame, rows: np.ndarray, tokens: np.ndarray, codes: dict[str, np.ndarray], calls: _Calls, family: str
) -> Edit | None:
    """The first edit of the cheapest alignment of one rank's calls ``rows`` (one group, in
    seq order, the first off the program) to the program from the first one's seq on."""
    q0 = int(cells[s.SEQ].iat[rows[0]])
    program = [calls.at(family, q0 + j) for j in range(len(rows) + costs.BAND + 1)]
    mine = [int(tokens[r]) for r in rows]
    c = Calls(
        mine,
        rows,
        program,
        [calls.issued_elsewhere(family, t) for t in mine],
        [p is not None and calls.issued_elsewhere(family, p[0], besides=1) for p in program],
        whole_steps=family in calls.period,
    )
    edit = edit_of(cells, c, first_departure(c, codes), codes)
    return edit if edit is None else replace(edit, decided_by=calls.basis(family, edit.seq))


def _calls_against(
    rows: np.ndarray,
    program_rows: list[int],
    tokens: np.ndarray,
    codes: dict[str, np.ndarray],
    calls: _Calls,
    family: str,
) -> Calls:
    """One rank's calls ``rows`` with another rank's calls ``program_rows`` as the program: a
    call either rank issues at another position is a call of the program too, and so is one
    from a line (op and call site, where known) either issues at another position."""
    mine = [int(tokens[r]) for r in rows]
    program: list[tuple[int, int] | None] = [(int(tokens[r]), r) for r in program_rows]
    both = Counter(mine) + Counter(p[0] for p in program if p is not None)
    lines = Counter(_line(codes, int(r)) for r in [*rows, *program_rows])
    mine_elsewhere = [calls.issued_elsewhere(family, t) or both[t] > 1 for t in mine]
    return Calls(
        mine,
        rows,
        program + [None] * (len(mine) + costs.BAND),
        mine_elsewhere,
        [calls.issued_elsewhere(family, t, besides=1) or both[t] > 1 or lines[_line(codes, r)] > 1 for t, r in program],
        [known or lines[_line(codes, int(r))] > 1 for known, r in zip(mine_elsewhere, rows)],
        whole_steps=family in calls.period,
    )


def _line(codes: dict[str, np.ndarray], row: int) -> tuple[int, int] | int:
    """The line of the program a call is issued from: (op, call site); where the site is not
    known, a value of its own (only the whole call is compared then)."""
    site = int(codes[s.CALL_SITE][row])
    return (int(codes[s.OP][row]), site) if site > 0 else -1 - row


def edit_of(cells: pd.DataFrame, c: Calls, d: Departure, codes: dict[str, np.ndarray]) -> Edit | None:
    """The :class:`Edit` a departure of the calls ``c`` makes (None for a match)."""
    if d.kind == MATCH:
        return None
    row = int(c.rows[d.mine])
    here = c.program[d.theirs] if d.theirs < len(c.program) else None
    return Edit(
        rank=int(cells[s.RANK].iat[row]),
        pg_key=str(cells[s.PG_KEY].iat[row]),
        seq=int(cells[s.SEQ].iat[row]),
        kind=d.kind,
        differs=() if here is None else differs(codes, row, here[1]),
        cost=d.cost,
        row=row,
        expected_row=None if here is None else here[1],
        elsewhere=c.mine_elsewhere[d.mine],
        shown=d.shown,
    )
