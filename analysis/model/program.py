"""The consensus program: layer 1 of the one model (``docs/one-model.md``).

A position of the program is (family, seq): the groups of one family (``model/families``:
one description, one agreed history) are at the same point of the program at the same
seq, so every cell of every group of the family at that seq is a witness of the call the
program issues there. The call is the token (op, input sizes, input dtypes, call site)
most of those cells carry:

- ``support``: the cells that carry it; ``seen``: the cells at the position at all. A
  position every rank reached and agreed on has ``support == seen``; a wrong tensor on one
  rank leaves ``support == seen - 1`` with the call the others issued.
- ``period``: where a family's calls repeat every ``p`` seqs (a training step), the
  smallest such ``p``; positions are then also compared by their ``phase`` (seq mod p), so
  a call only a few ranks reached in the hung step is weighed with what every rank issued
  at that phase of the earlier steps (``phase_support`` of ``phase_seen``).

A pure function of the cells table, with array operations only (tens of millions of
cells at scale).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowkeys import first_rows, group_ids
from .call_support import WEIGHED, contested, weigh_contested
from .families import call_codes

TOKEN = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)
"""What a call is: two cells carry the same call when all four agree."""
MAX_PERIOD = 512
"""The longest step (in seqs of one family) looked for: a step issues tens to hundreds of
collectives of one group."""
PERIOD_AGREEMENT = 0.95
"""The share of positions one period apart whose calls must agree for the history to
repeat with that period (a wrong call or two in a long history do not break it)."""
MIN_REPEATS = 3
"""A period must be seen at least this many times over in the family's history: two calls
alike in a row (the only pending entries of a pair, say) are no step."""


@dataclass(frozen=True, slots=True)
class Program:
    """The consensus program of every family: one row per position."""

    calls: pd.DataFrame
    """family, seq, op, input sizes, input dtypes, call site (the consensus call), token,
    row, support, seen, weak (fewer than half as many cells seen as at the family's
    best-seen position, and after it: past the frontier most ranks reached; behind it, in
    dumps of only the pending entries, the ranks that completed a call show nothing there),
    phase (seq mod the family's period; the seq where it has none),
    phase_support, phase_seen (the same counts over every position of that phase), tied
    (another call has as much support on every weight of ``call_support``), even (as much
    here and in the history: only the weaker weights chose)."""
    period: dict[str, int]
    """family -> its step period in seqs, where its history repeats."""

    def at(self, family: str, seq: int) -> pd.Series | None:
        """The program's call at one position (None where no cell was ever seen there)."""
        hit = self.calls.loc[(self.calls["family"] == family).to_numpy() & (self.calls[s.SEQ] == seq).to_numpy()]
        return None if hit.empty else hit.iloc[0]


def consensus_program(
    cells: pd.DataFrame,
    role_of: dict[str, str],
    description_of: dict[str, str] | None = None,
    tokens: np.ndarray | None = None,
) -> Program:
    """The call most cells issue at each (family, seq), with its support; folded by period.

    Where ranks split evenly, the calls are weighed as ``call_support`` says (the same phase
    of other steps, what follows the previous call in groups of the same description, ...);
    a tie all leave is kept as ``tied``: the program is not known there. ``tokens``: the
    cells' ``call_codes`` over ``TOKEN``, where the caller has them."""
    if cells.empty:
        return Program(pd.DataFrame(columns=["family", s.SEQ, *TOKEN, *_COUNTS]), {})
    keys = cells[s.PG_KEY].astype("category").array  # one lookup per group, not per cell
    names = [role_of.get(str(k), str(k)) for k in keys.categories]
    fam = pd.Categorical(names)
    of_key = np.append(fam.codes.astype(np.int64), -1)
    tokens = call_codes(cells, TOKEN) if tokens is None else tokens
    frame = pd.DataFrame(
        {
            "f": of_key[keys.codes],
            "q": cells[s.SEQ].to_numpy(np.int64),
            "t": tokens,
            "r": cells[s.RANK].to_numpy(np.int64),
            "k": keys.codes,
        }
    )
    votes = _votes(frame)
    _mark_weak(votes)
    period = _rank_periods(frame, fam.categories, _periods(*_first_guess(votes), fam.categories))
    p_of = np.array([period.get(str(n), 0) for n in fam.categories], dtype=np.int64)
    votes["ph"] = _phase(votes["q"].to_numpy(), p_of[votes["f"].to_numpy()])
    votes["phase_n"] = votes.groupby(["f", "ph", "t"])["n"].transform("sum")
    votes["phase_seen"] = votes.groupby(["f", "ph"])["n"].transform("sum")
    weigh_contested(votes, cells, tokens, description_of or {}, frame["f"].to_numpy())
    votes["tied"] = contested(votes, WEIGHED)
    votes["even"] = contested(votes, WEIGHED[:2])
    order = ["f", "q", *WEIGHED, "t"]
    ranked = votes.sort_values(order, ascending=[True, True] + [False] * len(WEIGHED) + [True], kind="stable")
    best = ranked.drop_duplicates(["f", "q"]).reset_index(drop=True)
    return Program(_positions(best, fam.categories, cells), period)


def _mark_weak(votes: pd.DataFrame) -> None:
    """How many cells were seen at each position (``seen``), and which positions are weak:
    seen by fewer than half as many as the most seen position of the family, past the
    frontier most ranks reached (behind it, the ranks that completed a call show nothing)."""
    votes["seen"] = votes.groupby(["f", "q"])["n"].transform("sum")
    most = votes.groupby("f")["seen"].transform("max").to_numpy()
    frontier = votes["q"].where(votes["seen"].to_numpy() == most).groupby(votes["f"]).transform("min").to_numpy()
    votes["weak"] = (votes["seen"].to_numpy() * 2 < most) & (votes["q"].to_numpy() > frontier)


def _positions(best: pd.DataFrame, families: pd.Index, cells: pd.DataFrame) -> pd.DataFrame:
    """The program's table: each position's winning call, its counts, and the call's
    attributes read from the one row that issued it."""
    tied = best["tied"].to_numpy()
    out = pd.DataFrame(
        {
            "family": pd.Categorical.from_codes(best["f"].to_numpy(), families),
            s.SEQ: best["q"].to_numpy(),
            "token": best["t"].to_numpy(),
            "row": best["row"].to_numpy(),
            "support": best["n"].to_numpy(),
            "seen": best["seen"].to_numpy(),
            "weak": best["weak"].to_numpy(dtype=bool),
            "phase": best["ph"].to_numpy(),
            "phase_support": best["phase_n"].to_numpy(),
            "phase_seen": best["phase_seen"].to_numpy(),
            "tied": tied,
            "even": best["even"].to_numpy(dtype=bool),
        }
    )
    for col in TOKEN:
        out[col] = cells[col].iloc[out["row"].to_numpy()].astype(object).to_numpy()  # the positions' rows only
    return out


_COUNTS = ("token", "row", "support", "seen", "weak", "phase", "phase_support", "phase_seen", "tied", "even")
"""The columns beside the call: its token (equal for equal calls of one cells table), the
row of one cell that issued it, and the counts."""


def _votes(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (f, q, t) of ``frame``'s cells, sorted: n (how many cells) and row (the
    first of them)."""
    ids = group_ids(frame, ["f", "q", "t"], first_seen=False)
    n = np.bincount(ids)
    rows = first_rows(ids, len(n))
    votes = pd.DataFrame({"f": frame["f"].to_numpy()[rows], "q": frame["q"].to_numpy()[rows]})
    votes["t"] = frame["t"].to_numpy()[rows]
    votes["n"] = n
    votes["row"] = rows
    return votes.sort_values(["f", "q", "t"], kind="stable").reset_index(drop=True)


def _first_guess(votes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Family code, seq and the commonest token of every position (ties to the lowest), to
    find the period by; only positions at least half as many cells reached as the family's
    best-seen one (a call only a rank off the program issued says nothing of the step)."""
    best = votes.sort_values(["f", "q", "n", "t"], ascending=[True, True, False, True], kind="stable")
    best = best.drop_duplicates(["f", "q"])
    most = best.groupby("f")["n"].transform("max").to_numpy()
    best = best.loc[best["n"].to_numpy() * 2 >= most]
    return best["f"].to_numpy(), best["q"].to_numpy(), best["t"].to_numpy()


def _periods(fcodes: np.ndarray, seqs: np.ndarray, tokens: np.ndarray, names: pd.Index) -> dict[str, int]:
    """Each family's smallest period p: calls p seqs apart agree at ``PERIOD_AGREEMENT`` of
    the positions where both are known, over at least ``MIN_REPEATS`` periods."""
    found: dict[str, int] = {}
    starts = np.flatnonzero(np.diff(fcodes, prepend=-1))
    ends = np.append(starts[1:], len(fcodes))
    for lo, hi in zip(starts, ends):
        p = _period_of(seqs[lo:hi], tokens[lo:hi])
        if p is not None:
            found[str(names[fcodes[lo]])] = p
    return found


def _period_of(q: np.ndarray, t: np.ndarray) -> int | None:
    """The smallest period of one history (seqs ``q`` ascending, calls ``t``), if any."""
    span = int(q[-1]) - int(q[0]) + 1 if len(q) else 0
    if span < 2 or span > 4 * len(q) + 2 * MAX_PERIOD:
        return None  # seqs this sparse are no repeating history (and a dense copy would not fit)
    dense = np.full(span, -1, dtype=np.int64)
    dense[q - q[0]] = t
    for p in range(1, min(MAX_PERIOD, span // MIN_REPEATS) + 1):
        a, b = dense[:-p], dense[p:]
        both = (a >= 0) & (b >= 0)
        if both.sum() >= p and (a[both] == b[both]).mean() >= PERIOD_AGREEMENT:
            return p
    return None


RANKS_FOR_PERIOD = 4
"""Where a family's consensus shows no period (its ranks split evenly at every position, one
a call off the other), the histories of this many of its ranks are tried one by one."""


def _rank_periods(frame: pd.DataFrame, names: pd.Index, found: dict[str, int]) -> dict[str, int]:
    """``found``, and for each family without a period there, the smallest period most of its
    longest rank histories (``RANKS_FOR_PERIOD``) repeat with."""
    out = dict(found)
    missing = [i for i, n in enumerate(names) if str(n) not in found]
    if not missing:
        return out
    part = frame.loc[frame["f"].isin(missing).to_numpy()]
    ids = group_ids(part, ["f", "r", "k"], first_seen=False)  # one id per rank history
    n = np.bincount(ids)
    first = first_rows(ids, len(n))
    ranked = pd.DataFrame({c: part[c].to_numpy()[first] for c in ("f", "r", "k")}).assign(n=n, id=np.arange(len(n)))
    ranked = ranked.sort_values(["n", "f", "r", "k"], ascending=[False, True, True, True], kind="stable")
    longest = ranked.groupby("f").head(RANKS_FOR_PERIOD)["id"].to_numpy()
    chosen = part.assign(id=ids).loc[np.isin(ids, longest)].sort_values("q", kind="stable")
    periods: dict[int, list[int | None]] = defaultdict(list)
    for (f, _), history in chosen.groupby(["f", "id"]):
        periods[int(f)].append(_period_of(history["q"].to_numpy(), history["t"].to_numpy()))
    for f, found_f in periods.items():
        known = [p for p in found_f if p is not None]
        if known and len(known) * 2 >= len(found_f):
            out[str(names[f])] = min(known)
    return out


def _phase(seqs: np.ndarray, period: np.ndarray) -> np.ndarray:
    """seq mod period where there is one, else the seq itself."""
    return np.where(period > 0, seqs % np.maximum(period, 1), seqs)
