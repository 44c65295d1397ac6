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

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import schema as s
from ..opnames import is_exchange
from ..tables.rowkeys import counts_of
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


class CallCodes:
    """The cells' :func:`call_codes`, a slice of cells at a time: the same values, with no
    cell-long temporary (8 bytes a cell each at once: 0.2 GB at 16k ranks)."""

    def __init__(self, cells: pd.DataFrame, columns: tuple[str, ...]) -> None:
        ops = cells[s.OP].array
        self.length = len(cells)
        self._exchange = np.array([is_exchange(str(c)) for c in ops.categories] + [False])
        self._ops = ops.codes
        # the columns' own codes (``.cat.codes`` copies them: 4 bytes a cell for three columns)
        self._codes = [(cells[col].array.codes, col == s.INPUT_SIZES) for col in columns]
        self._radix = [self._highest(i) + 1 for i in range(len(self._codes))]

    def slices(self) -> list[tuple[int, int]]:
        """(start, stop) of each slice of cells, in order."""
        return [(a, min(a + VALUE_CHUNK, self.length)) for a in range(0, self.length, VALUE_CHUNK)]

    def _highest(self, i: int) -> int:
        """The highest code of column ``i`` as :meth:`_part` gives them (0 where none)."""
        codes, sizes = self._codes[i]
        if not sizes:
            return int(codes.max(initial=-1)) + 1
        return max((int(self._part(i, a, b).max(initial=0)) for a, b in self.slices()), default=0)

    def _part(self, i: int, start: int, stop: int) -> np.ndarray:
        codes, sizes = self._codes[i]
        part = codes[start:stop].astype(np.int32)
        part += 1
        if sizes:  # an exchange's sizes are left out: its splits differ by rank and by step
            ops = self._ops[start:stop]
            part[self._exchange[np.where(ops < 0, -1, ops)]] = 0
        return part

    def of(self, start: int, stop: int) -> np.ndarray:
        """The codes of cells ``start:stop`` (int64), made a slice at a time: each column's
        codes in 32 bits are a slice long, not as long as the cells asked for."""
        value = np.zeros(stop - start, dtype=np.int64)
        for a in range(start, stop, VALUE_CHUNK):
            b = min(a + VALUE_CHUNK, stop)
            part = value[a - start : b - start]
            for i, radix in enumerate(self._radix):  # in place
                part *= radix
                part += self._part(i, a, b)
        return value


def call_codes(cells: pd.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
    """One int64 per cell, equal for cells whose ``columns`` all agree (missing values
    match). An exchange's sizes are left out: its splits differ by rank and by step."""
    return CallCodes(cells, columns).of(0, len(cells))


def description_codes(cells: pd.DataFrame, description_of: dict[str, str]) -> np.ndarray:
    """One int per cell, equal for cells of groups of one description (a group without one
    is its own); -1 for a cell without a group key."""
    keys = cells[s.PG_KEY].astype("category").array
    names = pd.Categorical([description_of.get(str(k)) or str(k) for k in keys.categories])
    return np.append(names.codes.astype(np.int64), -1)[np.where(keys.codes < 0, -1, keys.codes)]


VALUE_CHUNK = 1 << 20
"""Cells taken at a time by :class:`CallCodes` and :func:`value_range`."""


def value_range(gid: np.ndarray, value: np.ndarray | CallCodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per collective id 0..n-1 of ``gid``: the lowest and highest ``value`` of its cells, and
    its first cell (-1 for an id no cell has); low == high where all its cells agree.

    A slice of cells at a time: the ids are taken as 64-bit by the ufuncs and ``value``
    (codes made as they are needed, from a :class:`CallCodes`) only a slice long."""
    n = int(gid.max()) + 1 if len(gid) else 0
    low = np.full(n, np.iinfo(np.int64).max)
    high = np.full(n, -1, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    index = np.int32 if len(gid) < 2**31 else np.int64
    for start in reversed(range(0, len(gid), VALUE_CHUNK)):  # the last slice first: the first cell is set last
        stop = min(start + VALUE_CHUNK, len(gid))
        ids = gid[start:stop].astype(np.intp)
        part = value.of(start, stop) if isinstance(value, CallCodes) else value[start:stop]
        np.minimum.at(low, ids, part)
        np.maximum.at(high, ids, part)
        first[ids[::-1]] = np.arange(stop - 1, start - 1, -1, dtype=index)
    return low, high, first


def _agreed(cells: pd.DataFrame) -> Agreed:
    """The collectives where every member issued the same op, sizes and dtypes (every member
    that recorded the group's fullest seq), with that agreed value."""
    gid = cells[COLLECTIVE].to_numpy()
    low, high, first = value_range(gid, CallCodes(cells, (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)))
    n = len(low)
    # every member recorded it: as many rows as the group's fullest seq (one member's row alone
    # agrees with nothing; after a skip, the rank that went on issues seqs its peers have not)
    rows_per_seq = counts_of(gid, n)  # a slice at a time
    keys = cells[s.PG_KEY].astype("category").array
    key_codes = keys.codes[first] if n else np.zeros(0, dtype=np.int64)
    fullest = np.zeros(int(key_codes.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(fullest, key_codes, rows_per_seq)
    ok = np.flatnonzero((low == high) & (rows_per_seq == fullest[key_codes]))
    seqs = cells[s.SEQ].to_numpy()[first[ok]]
    return key_codes[ok], seqs, low[ok], keys.categories


def _history_by_key(agreed: Agreed) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """key -> (its agreed collectives' seqs, ascending; their agreed values), from
    :func:`_agreed`. Arrays, not a dict of Python ints per key (4,096 ranks: 44 MB)."""
    codes, seqs, values, keys = agreed
    order = np.lexsort((seqs, codes))  # a (key, seq) is one collective: each key's seqs are distinct
    starts = np.flatnonzero(np.diff(codes[order])) + 1
    seq_parts = np.split(seqs[order], starts)
    value_parts = np.split(values[order], starts)
    first = codes[order][np.concatenate(([0], starts))] if len(order) else []
    return {str(keys[c]): (q, v) for c, q, v in zip(first, seq_parts, value_parts)}


def _common_seqs(history: dict[str, tuple[np.ndarray, np.ndarray]], keys: list[str]) -> np.ndarray:
    """The seqs every one of ``keys`` has an agreed value for, ascending."""
    none = np.zeros(0, dtype=np.int64)
    return functools.reduce(np.intersect1d, (history.get(k, (none, none))[0] for k in keys))


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
        window = _common_seqs(history, keys)[-SIGNATURE_SEQS:]
        if not len(window):
            continue
        signatures: dict[tuple[int, ...], str] = {}
        for k in sorted(keys):
            seqs, values = history[k]
            sig = tuple(values[np.searchsorted(seqs, window)].tolist())
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
