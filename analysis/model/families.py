"""Which sibling groups are at the same point of the program.

Sibling groups share a description (every tensor-parallel group is one), not a place in
the program: tensor-parallel groups of different pipeline stages run different layers,
so at one seq their ops differ. Groups of one description whose agreed history (op,
input sizes and dtypes at each seq where all their members agree) is the same on the
seqs they all recorded form a family: a seq of one is the same program point in all.
Where the dumps hold no common history (only-active dumps), a description is one family
whose history is unknown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import schema as s
from ..opnames import is_exchange
from ..types import Membership
from .cells import COLLECTIVE
from .groups import DEFAULT_PG_DESC, DEFAULT_PG_ID, ProcessGroup

SIGNATURE_SEQS = 64
"""The newest common seqs compared: enough to tell pipeline stages apart."""


@dataclass(frozen=True, slots=True)
class Families:
    """group key -> family name, and whether the family was told apart by its history."""

    family_of: dict[str, str]
    known: frozenset[str]
    """Families whose members' histories were compared (not just sharing a description)."""
    description_of: dict[str, str] = field(default_factory=dict)
    """group key -> its description (every tensor-parallel group shares one)."""

    def siblings(self, key: str) -> list[str]:
        """The other groups of ``key``'s family, if its history was compared."""
        family = self.family_of.get(key)
        if family is None or family not in self.known:
            return []
        return [k for k, f in self.family_of.items() if f == family and k != key]

    def same_description(self, key: str) -> list[str]:
        """The other groups of ``key``'s description, wherever in the program they are."""
        desc = self.description_of.get(key)
        if not desc:
            return []
        return [k for k, d in self.description_of.items() if d == desc and k != key]


Agreed = tuple[np.ndarray, np.ndarray, np.ndarray, pd.Index]
"""Per collective where the members agree: its group's key code, its seq, the agreed value;
and the group keys the codes stand for."""


def call_codes(cells: pd.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
    """One int64 per cell, equal for cells whose ``columns`` all agree (missing values
    match). An exchange's sizes are left out: its splits differ by rank and by step."""
    ops = cells[s.OP].array
    exchange = np.array([is_exchange(str(c)) for c in ops.categories] + [False])[np.where(ops.codes < 0, -1, ops.codes)]
    value = np.zeros(len(cells), dtype=np.int64)
    for col in columns:  # in place, and codes in 32 bits: two 8-byte temporaries a cell fewer
        codes = cells[col].cat.codes.to_numpy().astype(np.int32)
        codes += 1
        if col == s.INPUT_SIZES:
            codes[exchange] = 0
        value *= int(codes.max(initial=0)) + 1
        value += codes
    return value


def description_codes(cells: pd.DataFrame, description_of: dict[str, str]) -> np.ndarray:
    """One int per cell, equal for cells of groups of one description (a group without one
    is its own); -1 for a cell without a group key."""
    keys = cells[s.PG_KEY].astype("category").array
    names = pd.Categorical([description_of.get(str(k)) or str(k) for k in keys.categories])
    return np.append(names.codes.astype(np.int64), -1)[np.where(keys.codes < 0, -1, keys.codes)]


def value_range(gid: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per collective id 0..n-1 of ``gid``: the lowest and highest ``value`` of its cells, and
    its first cell (-1 for an id no cell has); low == high where all its cells agree."""
    n = int(gid.max()) + 1 if len(gid) else 0
    low = np.full(n, np.iinfo(np.int64).max)
    high = np.full(n, -1, dtype=np.int64)
    np.minimum.at(low, gid, value)
    np.maximum.at(high, gid, value)
    first = np.full(n, -1, dtype=np.int64)
    first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
    return low, high, first


def _agreed(cells: pd.DataFrame) -> Agreed:
    """The collectives where every member issued the same op, sizes and dtypes (every member
    that recorded the group's fullest seq), with that agreed value."""
    value = call_codes(cells, (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES))
    gid = cells[COLLECTIVE].to_numpy()
    low, high, first = value_range(gid, value)
    n = len(low)
    # every member recorded it: as many rows as the group's fullest seq (one member's row alone
    # agrees with nothing; after a skip, the rank that went on issues seqs its peers have not)
    rows_per_seq = np.bincount(gid, minlength=n)
    keys = cells[s.PG_KEY].astype("category").array
    key_codes = keys.codes[first] if n else np.zeros(0, dtype=np.int64)
    fullest = np.zeros(int(key_codes.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(fullest, key_codes, rows_per_seq)
    ok = np.flatnonzero((low == high) & (rows_per_seq == fullest[key_codes]))
    seqs = cells[s.SEQ].to_numpy()[first[ok]]
    return key_codes[ok], seqs, low[ok], keys.categories


def _history_by_key(agreed: Agreed) -> dict[str, dict[int, int]]:
    """key -> {seq: agreed value}, from :func:`_agreed`'s collectives (in their order within a key)."""
    codes, seqs, values, keys = agreed
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.diff(codes[order])) + 1
    seq_parts = np.split(seqs[order], starts)
    value_parts = np.split(values[order], starts)
    first = codes[order][np.concatenate(([0], starts))] if len(order) else []
    return {str(keys[c]): dict(zip(q.tolist(), v.tolist())) for c, q, v in zip(first, seq_parts, value_parts)}


def program_families(cells: pd.DataFrame, desc_of: dict[str, str]) -> Families:
    """Split each description's groups into families by their agreed history."""
    family_of = {k: d or k for k, d in desc_of.items()}
    known: set[str] = set()
    by_desc: dict[str, list[str]] = defaultdict(list)
    for k, d in desc_of.items():
        by_desc[d or k].append(k)
    several = {d: keys for d, keys in by_desc.items() if len(keys) > 1}
    if cells.empty or not several:
        return Families(family_of, frozenset(known), dict(desc_of))
    history = _history_by_key(_agreed(cells))
    for desc, keys in several.items():
        common = set.intersection(*(set(history.get(k, {})) for k in keys))
        window = sorted(common)[-SIGNATURE_SEQS:]
        if not window:
            continue
        signatures: dict[tuple[int, ...], str] = {}
        for k in sorted(keys):
            sig = tuple(history[k][q] for q in window)
            family_of[k] = signatures.setdefault(sig, f"{desc}#{len(signatures)}")
            known.add(family_of[k])
    return Families(family_of, frozenset(known), dict(desc_of))


def rank_programs(
    groups: Iterable[ProcessGroup], world: int, family_of: dict[str, str], carries: Callable[[ProcessGroup], bool]
) -> dict[int, frozenset[str]]:
    """Each rank's program: the families of its groups smaller than the world that carry
    recorded collectives (``carries``). Ranks that run the same program share them; a group
    with none, such as a pipeline group gloo records nothing in, says nothing about it."""
    program: dict[int, set[str]] = defaultdict(set)
    for g in groups:
        if 2 <= len(g.ranks) < world and not g.has_p2p:
            busy = carries(g)
            for r in g.ranks:
                program[r] |= {family_of.get(g.key, g.key)} if busy else set()
    return {r: frozenset(f) for r, f in program.items()}


Stage = frozenset[tuple[str, int, int]]
"""A rank's place in the pipeline: (group description, group size, its position in the
group) per pipeline group."""


def rank_stages(
    groups: Iterable[ProcessGroup], carries: Callable[[ProcessGroup], bool], quiet: bool = True
) -> dict[int, Stage]:
    """Each rank's stage: its position in each group (but the default one) of a description
    send/recvs run in (NCCL records them), or, where no group records any and ``quiet``, in
    each group pg_config lists that carries no recorded collective at all (the pipeline
    groups, where gloo records nothing; a reading of the configuration, not of recorded
    traffic). Ranks at two stages run two programs, however alike their groups look: the
    first and last stages issue more collectives per step than the others."""
    groups = [g for g in groups if len(g.ranks) >= 2 and g.name != DEFAULT_PG_ID and g.desc != DEFAULT_PG_DESC]
    piped = {(g.desc, len(g.ranks)) for g in groups if g.has_p2p}
    if piped:
        chosen = [g for g in groups if (g.desc, len(g.ranks)) in piped]
    elif quiet:
        chosen = [g for g in groups if g.membership_source == Membership.PG_CONFIG and not carries(g)]
    else:
        chosen = []
    stage: dict[int, set[tuple[str, int, int]]] = defaultdict(set)
    for g in chosen:  # a group without a description is known by its size (its siblings share it)
        for position, r in enumerate(g.ranks):
            stage[r].add((g.desc, len(g.ranks), position))
    return {r: frozenset(p) for r, p in stage.items()}
