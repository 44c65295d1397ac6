"""Which side of a tie issued a call the program issues elsewhere.

A rank that calls the wrong op, or the right op with the wrong sizes, issues a call the
program never makes anywhere else; its peer issues the program's call, which ranks
issue together at other seqs of the same group or of groups of the same description
(the other tensor-parallel pairs, say, at any point of the program). Only calls two or
more ranks issued together count: a lone rank's entry may be the deviation itself.
This needs no earlier step in the dumps, so it decides ties in only-active dumps and
small ring buffers, where the history is gone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from .history import call_text

_CALL = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)


def _call_text(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's whole call, call site included, as text (see :func:`.history.call_text`)."""
    return call_text(rows, _CALL)


def calls_issued_together(
    cells: pd.DataFrame, keys: list[str], leave_out: tuple[str, int], ahead_alone: bool = False
) -> set[tuple[str, ...]]:
    """Calls that two or more members of one of ``keys`` issued together at one seq, all
    members there agreeing, other than at ``leave_out`` (the disputed group and seq).

    With ``ahead_alone``, also calls that ranks of sibling groups issued at one seq, each
    alone there because it went ahead of the rest of its group (an only-active dump holds
    the entries a host issued ahead). A lone entry at a seq its group's other members went
    past (the rest of the record lost to the ring buffer) never counts: it may be the
    deviation itself."""
    rows = cells.loc[cells[s.PG_KEY].isin(keys).to_numpy()]
    rows = rows.loc[~((rows[s.PG_KEY] == leave_out[0]) & (rows[s.SEQ] == leave_out[1])).to_numpy()]
    if rows.empty:
        return set()
    text = _call_text(rows)
    text["_key"] = rows[s.PG_KEY].astype(str).to_numpy()
    text["_seq"] = rows[s.SEQ].to_numpy()
    text["_rank"] = rows[s.RANK].to_numpy()
    at = ["_key", "_seq"]
    calls = text.drop_duplicates(subset=[*_CALL, *at])
    calls = calls.loc[~calls.duplicated(subset=at, keep=False)]  # the members there agreeing
    issued = calls.merge(text.groupby(at).size().rename("_count").reset_index(), on=at)
    alone = (issued["_count"] == 1).to_numpy()
    if ahead_alone:  # only those alone at a seq the rest of their group went past are left out
        alone = alone & _behind_others(text, issued)
    issued = issued.loc[~alone]
    counts = issued.groupby(["_seq", *_CALL], dropna=False)["_count"].sum()
    return {tuple(call[1:]) for call in counts.index[counts.to_numpy() >= 2]}


def _behind_others(text: pd.DataFrame, lone: pd.DataFrame) -> np.ndarray:
    """For each row of ``lone`` (one rank alone at a seq of its group), whether another rank
    of that group holds an entry at that seq or later."""
    newest = text.groupby(["_key", "_rank"])["_seq"].max().reset_index()
    newest = newest.sort_values(["_key", "_seq"], ascending=[True, False])
    first = newest.drop_duplicates("_key").set_index("_key")
    second = newest.loc[newest.duplicated("_key")].drop_duplicates("_key").set_index("_key")["_seq"]
    top_rank = first["_rank"].reindex(lone["_key"]).to_numpy()
    top = first["_seq"].reindex(lone["_key"]).to_numpy(dtype=float)
    runner_up = second.reindex(lone["_key"]).to_numpy(dtype=float)
    others = np.where(top_rank == lone["_rank"].to_numpy(), runner_up, top)
    return ~np.isnan(others) & (others >= lone["_seq"].to_numpy())


def usual_call_vote(
    cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str], relatives: list[str]
) -> str | None:
    """The one ``tied`` value whose ranks' calls at (``key``, ``seq``) the program issues
    elsewhere, where the other side's calls are issued nowhere else; None otherwise."""
    here = cells.loc[((cells[s.PG_KEY] == key) & (cells[s.SEQ] == seq)).to_numpy()]
    if here.empty:
        return None
    seen = calls_issued_together(cells, [key, *relatives], (key, seq))
    if not seen:
        return None
    values = here[attribute].astype(str).tolist()
    calls = list(_call_text(here).itertuples(index=False, name=None))
    usual = {v for v in tied if all(c in seen for value, c in zip(values, calls) if value == v)}
    if len(usual) != 1:
        return None
    return next(iter(usual))


def issued_elsewhere(cells: pd.DataFrame, key: str, seq: int, ranks: tuple[int, ...], relatives: list[str]) -> bool:
    """Whether every one of ``ranks`` issued at (``key``, ``seq``) a whole call that ranks issue
    together elsewhere (the group's other seqs, groups of its description): a call of the
    program at another point, not a wrong size or dtype for this one."""
    here = cells.loc[
        ((cells[s.PG_KEY] == key) & (cells[s.SEQ] == seq)).to_numpy() & cells[s.RANK].isin(ranks).to_numpy()
    ]
    if here.empty:
        return False
    seen = calls_issued_together(cells, [key, *relatives], (key, seq), ahead_alone=True)
    return all(call in seen for call in _call_text(here).itertuples(index=False, name=None))
